// Demos end to end: a server records a bot match over a lossy network on simulated time, and the
// demo replays exactly: the world decoded at every tick equals the server's, in order and after
// seeks; the events, shots and kills it holds are the server's.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { type ArenaRulesConfig, arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { DemoPlayer } from '../../src/client/demo-player.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { WireEvent } from '../../src/protocol/frames.ts';
import { combineHooks, type ServerHooks } from '../../src/server/hooks.ts';
import { DemoRecorder } from '../../src/server/recorder.ts';
import { Random } from '../../src/sim/random.ts';

type Hooks = ServerHooks<ArenaPlayerState, ArenaWorld>;

/** The server's committed world at one tick: live entities with type, parity and values. */
interface WorldAt {
  entities: number[];
  types: number[];
  parities: number[];
  values: Int32Array;
  events: WireEvent[];
}

/** Copies the server's world (and the events of the tick) after every commit. */
function worldTap(worlds: Map<number, WorldAt>): Hooks {
  let cursor = 0;
  return {
    afterTick(server, tick) {
      const slot = server.entities.history(tick);
      if (slot === undefined) throw new Error(`no history at ${tick}`);
      const stride = server.entities.stride;
      const w: WorldAt = { entities: [], types: [], parities: [], values: new Int32Array(0), events: [] };
      const vals: number[] = [];
      for (let e = 0; e < server.entities.maxEntities; e++) {
        if (slot.alive[e] === 0) continue;
        w.entities.push(e);
        w.types.push(slot.type[e]);
        w.parities.push(slot.parity[e]);
        const n = server.entities.schema.types[slot.type[e]].fieldCount;
        for (let f = 0; f < n; f++) vals.push(slot.values[e * stride + f]);
      }
      w.values = Int32Array.from(vals);
      for (let p = Math.max(cursor, server.events.tail); p < server.events.head; p++) {
        w.events.push({ ...server.events.at(p) });
      }
      cursor = server.events.head;
      worlds.set(tick, w);
    },
  };
}

/** The player's decoded world at its tick, in the tap's form (events aside). */
function decoded(player: DemoPlayer): Omit<WorldAt, 'events'> {
  const r = player.snapshots;
  const w = {
    entities: [] as number[],
    types: [] as number[],
    parities: [] as number[],
    values: [] as number[],
  };
  for (let k = 0; k < r.viewCount; k++) {
    const e = r.view[k];
    w.entities.push(e);
    w.types.push(r.typeOf(e));
    w.parities.push(r.parityOf(e));
    const n = player.schema.types[r.typeOf(e)].fieldCount;
    const v = r.values(e);
    for (let f = 0; f < n; f++) w.values.push(v[f]);
  }
  return { ...w, values: Int32Array.from(w.values) };
}

function lossyMatch(seed: number, bots: number, hooks: Hooks[], onKill?: ArenaRulesConfig['onKill']) {
  const rules = arenaRules({ respawnMs: 1500, onKill });
  const match = new Match(arenaGame, seed, {}, combineHooks(rules, ...hooks));
  const profile = parseProfile({ name: 'lossy', latencyMs: 40, jitterMs: 10, loss: 0.1, duplicate: 0.05 });
  for (let i = 0; i < bots; i++) {
    match.addClient({
      profile,
      drive: i % 4 === 3 ? runnerBot(seed * 17 + i) : aimBot(seed * 31 + i, { aimErrorUnits: 20 }),
      frameJitterMs: 3,
    });
  }
  return { match, rules };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('demo recording and playback', () => {
  it('a 60 s bot match with loss replays exactly: the world at every tick, its events, shots and kills', () => {
    const seed = 17;
    const msg = `seed ${seed}`;
    const worlds = new Map<number, WorldAt>();
    const recorder = new DemoRecorder(arenaGame);
    const { match, rules } = lossyMatch(
      seed,
      6,
      [recorder.hooks, worldTap(worlds)],
      (server, killer, victim, weapon) => {
        recorder.kill(killer, victim, weapon < 0 ? 255 : weapon);
        expect(server.tick).toBeGreaterThan(0);
      },
    );
    const parts: Uint8Array[] = [];
    recorder.start(match.server, (b) => parts.push(b.slice()));
    match.run(60_000);
    recorder.stop();
    match.close();
    const bytes = concat(parts);
    expect(recorder.stats.bytes, msg).toBe(bytes.length);

    const player = DemoPlayer.open(bytes, arenaGame);
    if (!(player instanceof DemoPlayer)) throw new Error(`${msg}: ${player.message}`);
    expect(player.ticks.length, msg).toBe(recorder.stats.ticks);
    expect(player.ticks.length, msg).toBeGreaterThanOrEqual(60 * 64 - 1);
    // Sequential playback: every tick equals the server's.
    let events = 0;
    let shots = 0;
    let kills = 0;
    for (const t of player.ticks) {
      player.seek(t.tick);
      const server = worlds.get(t.tick);
      if (server === undefined) throw new Error(`${msg}: the server has no tick ${t.tick}`);
      const got = decoded(player);
      expect(got.entities, `${msg} tick ${t.tick}`).toEqual(server.entities);
      expect(got.types, `${msg} tick ${t.tick}`).toEqual(server.types);
      expect(got.parities, `${msg} tick ${t.tick}`).toEqual(server.parities);
      expect(got.values, `${msg} tick ${t.tick}`).toEqual(server.values);
      expect(
        t.head.events.map((e) => e.type),
        `${msg} tick ${t.tick}`,
      ).toEqual(server.events.map((e) => e.type));
      events += t.head.events.length;
      shots += t.head.shots.length;
      kills += t.head.kills.length;
    }
    expect(events, msg).toBeGreaterThan(1000);
    expect(shots, msg).toBe(recorder.stats.shots);
    expect(shots, msg).toBeGreaterThan(100);
    expect(kills, msg).toBe(rules.kills + rules.projectiles.kills);
    expect(kills, msg).toBeGreaterThan(0);
    // Every shot names its shooter and its verdict's events; exact ones tested targets where drawn.
    const exact = player.ticks.flatMap((t) => t.head.shots).filter((s) => s.exact);
    expect(exact.length, msg).toBeGreaterThan(shots / 2);
    expect(
      exact.some((s) => s.tested.length > 0),
      msg,
    ).toBe(true);
    // A shot's verdict is the run of the tick's events its judgement emitted: the shooter's.
    for (const t of player.ticks) {
      for (const s of t.head.shots) {
        expect(s.eventCount, msg).toBeGreaterThan(0);
        const verdict = t.head.events.slice(s.firstEvent, s.firstEvent + s.eventCount);
        expect(verdict.length, msg).toBe(s.eventCount);
        expect(new Set(verdict.map((e) => e.source)), `${msg} tick ${t.tick}`).toEqual(
          new Set([s.shooterSlot]),
        );
      }
    }
    // Seeking anywhere, backwards and forwards, decodes the same world.
    const rng = new Random(seed);
    for (let i = 0; i < 40; i++) {
      const t = player.ticks[rng.int(0, player.ticks.length - 1)].tick;
      expect(player.seek(t), msg).toBe(t);
      const server = worlds.get(t) as WorldAt;
      const got = decoded(player);
      expect(got.entities, `${msg} seek ${t}`).toEqual(server.entities);
      expect(got.values, `${msg} seek ${t}`).toEqual(server.values);
    }
    // The roster names every player's entity.
    const last = player.ticks[player.ticks.length - 1];
    expect(last.roster.length, msg).toBe(6);
  }, 60_000);

  it('records from a live server between start and stop, the first tick a keyframe', () => {
    const seed = 5;
    const msg = `seed ${seed}`;
    const worlds = new Map<number, WorldAt>();
    const recorder = new DemoRecorder(arenaGame, { keyframeInterval: 32 });
    const { match } = lossyMatch(seed, 3, [recorder.hooks, worldTap(worlds)]);
    match.run(3000);
    const parts: Uint8Array[] = [];
    recorder.start(match.server, (b) => parts.push(b.slice()));
    expect(recorder.recording).toBe(true);
    match.run(2000);
    recorder.stop();
    expect(recorder.recording).toBe(false);
    match.run(1000);
    match.close();
    const player = DemoPlayer.open(concat(parts), arenaGame);
    if (!(player instanceof DemoPlayer)) throw new Error(`${msg}: ${player.message}`);
    expect(player.ticks[0].keyframe, msg).toBe(true);
    expect(player.ticks.filter((t) => t.keyframe).length, msg).toBe(Math.ceil(player.ticks.length / 32));
    expect(player.firstTick, msg).toBeGreaterThan(3000 / match.server.tickIntervalMs - 2);
    expect(player.lastTick - player.firstTick + 1, msg).toBe(player.ticks.length);
    for (const t of [...player.ticks].reverse()) {
      player.seek(t.tick);
      expect(decoded(player).values, `${msg} tick ${t.tick}`).toEqual((worlds.get(t.tick) as WorldAt).values);
    }
    // Drawing between ticks blends as a client's view does: at a whole tick it is that tick.
    const mid = player.ticks[40].tick;
    player.draw(mid);
    expect(player.view.count, msg).toBe(3);
    expect(player.tick, msg).toBe(mid);
  });
});
