// The top-down game's own netcode test, written as a game developer would with backstep/testing:
// real clients and a real server over the conditioner at 150 ms round trip and 5% loss, on
// simulated time. Movement and dashes are predicted with no correction; every shot's verdict on
// the shooter's screen is the server's.

import type { GameClient } from 'backstep/client';
import { type NetworkProfile, parseProfile } from 'backstep/net';
import { type WireEvent, wireEventParam } from 'backstep/protocol';
import { combineHooks } from 'backstep/server';
import { Random } from 'backstep/sim';
import {
  aimAngles,
  type InputDriver,
  Match,
  nearestEntity,
  type RayVerdict,
  ShotLedger,
  wanderBot,
} from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { MESSAGE_HIT, TopdownRules } from '../server/rules.ts';
import {
  BUTTON_DASH,
  BUTTON_FIRE,
  EVENT_DASH,
  EVENT_HIT,
  EVENT_MISS,
  EVENT_WALL,
} from '../shared/constants.ts';
import { HIT_EVENT, PLAYER, topdownGame } from '../shared/game.ts';
import type { TopdownPlayer, TopdownWorld } from '../shared/player.ts';

type Client = GameClient<TopdownPlayer, TopdownWorld>;

/** 150 ms round trip (75 ms each way, from the client's profile alone), 5% loss each way, some jitter. */
const PROFILE: NetworkProfile = parseProfile({
  name: 'rtt150-loss5',
  latencyMs: 75,
  jitterMs: 8,
  loss: 0.05,
});

/** A ray's verdict from the gun's events: the entity hit, or -1 for a wall or nothing. */
function readRay(e: WireEvent, out: RayVerdict): boolean {
  out.ray = 0;
  if (e.type === EVENT_HIT) out.verdict = wireEventParam(e, HIT_EVENT.index.target);
  else if (e.type === EVENT_WALL || e.type === EVENT_MISS) out.verdict = -1;
  else return false;
  return true;
}

/** Runs, strafes and dashes at random, aims at the nearest player it drew, and holds the trigger. */
function duelist(seed: number): InputDriver<TopdownPlayer, TopdownWorld> {
  const wander = wanderBot<TopdownPlayer, TopdownWorld>(seed, {
    buttons: [{ bit: BUTTON_DASH, chance: 0.4 }],
  });
  const rng = new Random(seed ^ 0x5eed);
  const angles = { yaw: 0, pitch: 0 };
  return (client, nowMs, input) => {
    wander(client, nowMs, input);
    input.buttons &= ~BUTTON_FIRE;
    if (!client.isSpawned) return;
    const me = client.predictor.current;
    const target = nearestEntity(client.view, 0, PLAYER.index, me.x, me.y, 0);
    if (target < 0) return;
    const v = target * client.view.stride;
    // Aim at the target's centre, off by up to 20 units: some shots graze, some miss.
    const tx = client.view.values[v + PLAYER.index.x] + rng.range(-20, 20);
    const ty = client.view.values[v + PLAYER.index.y] + rng.range(-20, 20);
    aimAngles(tx - me.x, ty - me.y, 0, angles);
    input.yaw = angles.yaw;
    input.buttons |= BUTTON_FIRE;
  };
}

describe('topdown over 150 ms round trip and 5% loss', () => {
  it('predicts movement and dashes with zero corrections', () => {
    const seed = 21;
    const match = new Match(topdownGame, seed, {}, {}, { slotsInCreationOrder: true });
    const dashes: number[] = [];
    const clients: Client[] = [];
    for (let i = 0; i < 4; i++) {
      dashes.push(0);
      const c = match.addClient({
        profile: PROFILE,
        drive: wanderBot(seed * 100 + i, { buttons: [{ bit: BUTTON_DASH, chance: 0.5 }] }),
        frameJitterMs: 4,
        hooks: {
          onEvent: (e, predicted) => {
            if (predicted && e.type === EVENT_DASH) dashes[i]++;
          },
        },
      });
      clients.push(c.client);
    }
    match.run(30_000);
    const msg = `seed ${seed}: dashes ${dashes.join(', ')}; corrections ${clients.map((c) => c.predictor.stats.corrections).join(', ')}`;
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      expect(c.state, msg).toBe('connected');
      expect(c.slot, msg).toBe(i);
      expect(dashes[i], msg).toBeGreaterThan(10);
      expect(c.predictor.stats.corrections, msg).toBe(0);
      const server = match.server.clients[c.slot];
      expect(server?.commandStats.executed, msg).toBeGreaterThan(1000);
    }
    match.close();
  });

  it('agrees on every shot: 100.00% of hit verdicts, measured by the shot ledger', () => {
    const seed = 22;
    const rules = new TopdownRules();
    const ledger = new ShotLedger(topdownGame, readRay);
    const match = new Match(topdownGame, seed, {}, combineHooks(rules.hooks(), ledger.serverHooks()), {
      slotsInCreationOrder: true,
    });
    const confirmed: number[] = [];
    const clients: Client[] = [];
    for (let i = 0; i < 4; i++) {
      confirmed.push(0);
      let client: Client | null = null;
      const entry = match.addClient({
        profile: PROFILE,
        drive: duelist(seed * 100 + i),
        frameJitterMs: 4,
        hooks: {
          ...ledger.clientHooks(() => client as Client),
          onMessage: (m) => {
            if (m.length === 2 && m[0] === MESSAGE_HIT) confirmed[i]++;
          },
        },
      });
      client = entry.client;
      clients.push(entry.client);
    }
    match.run(30_000);
    // Hands off the controls, and let the last confirmations arrive.
    for (const c of match.clients) {
      c.drive = (_client, _nowMs, input) => {
        input.buttons = 0;
        input.forwardMove = 0;
        input.sideMove = 0;
      };
    }
    match.run(2000);
    const a = ledger.agreement();
    const corrections = clients.map((c) => c.predictor.stats.corrections);
    const msg = `seed ${seed}: ${a.compared} rays, ${a.agreed} agreed (${(a.share * 100).toFixed(2)}%), client hits ${a.clientHits}, server hits ${a.serverHits}, mispredicted ${ledger.mispredictedCommands}, corrections ${corrections.join(', ')}`;
    expect(ledger.deciding, msg).toBe('exact');
    expect(a.compared, msg).toBeGreaterThan(400);
    expect(a.clientHits, msg).toBeGreaterThan(100);
    expect(a.compared - a.clientHits, msg).toBeGreaterThan(50);
    expect(a.agreed, msg).toBe(a.compared);
    expect(ledger.mispredictedCommands, msg).toBe(0);
    expect(corrections, msg).toEqual([0, 0, 0, 0]);
    // The rules saw the same hits and confirmed each to its shooter by a reliable message.
    let hits = 0;
    for (let i = 0; i < clients.length; i++) {
      const server = match.server.clients[clients[i].slot];
      if (server === null) throw new Error(msg);
      const score = rules.score.of(server);
      hits += score.hits;
      expect(confirmed[i], msg).toBe(score.confirmed);
      expect(score.confirmed, msg).toBe(score.hits);
    }
    expect(hits, msg).toBe(a.serverHits);
    match.close();
  });
});
