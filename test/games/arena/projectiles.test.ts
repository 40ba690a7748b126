// The launcher's projectiles on a real server: they fly as entities clients see, explode on
// players and the level, damage by distance, and can start advanced by the shooter's latency.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PROJECTILE_CONFIG } from '../../../games/arena/server/projectiles.ts';
import { arenaRules } from '../../../games/arena/server/rules.ts';
import {
  BUTTON_ATTACK,
  EVENT_PROJECTILE_FIRED,
  WEAPON_LAUNCHER,
} from '../../../games/arena/shared/constants.ts';
import { PROJECTILE_ENTITY, PROJECTILE_ENTITY_TYPE } from '../../../games/arena/shared/entities.ts';
import { PROJECTILE_FIRED_EVENT } from '../../../games/arena/shared/events.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../../games/arena/shared/game.ts';
import { eyeHeight } from '../../../games/arena/shared/player.ts';
import { createTraceResult } from '../../../games/arena/shared/trace.ts';
import { unpackUnitVector, WEAPONS } from '../../../games/arena/shared/weapons.ts';
import { aimBot } from '../../../games/arena/testing/shots.ts';
import type { GameClient } from '../../../src/client/client.ts';
import { parseProfile } from '../../../src/net/profile.ts';
import { wireEventParam } from '../../../src/protocol/frames.ts';
import { combineHooks, type ServerHooks } from '../../../src/server/hooks.ts';
import { vec3 } from '../../../src/sim/math.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

/**
 * How far ahead each projectile started, measured: after the tick that fired it, where its
 * entity is along the ray of its PROJECTILE_FIRED event gives its time in flight, of which one
 * tick is the tick's own step; the rest is the advance. Beside it, the owner's round trip then.
 */
interface Launch {
  advanceMs: number;
  rttMs: number;
}

/** Server hooks that measure launches, and count deaths and respawns. */
function watch(
  launches: Launch[],
  lives: { deaths: number; respawns: number },
): ServerHooks<ArenaPlayerState, ArenaWorld> {
  let cursor = 0;
  const dead: boolean[] = [];
  const dir = vec3();
  const speed = WEAPONS[WEAPON_LAUNCHER].projectileSpeed;
  const { x: X, y: Y, z: Z } = PROJECTILE_ENTITY.index;
  const AT = PROJECTILE_FIRED_EVENT.index;
  return {
    onTick: (server) => {
      const log = server.events;
      for (cursor = Math.max(cursor, log.tail); cursor < log.head; cursor++) {
        const e = log.at(cursor);
        const owner = server.clients[e.source];
        if (e.type !== EVENT_PROJECTILE_FIRED || owner === null || owner === undefined) continue;
        unpackUnitVector(wireEventParam(e, AT.direction), 12, dir);
        // The live projectile lying on this ray (within a unit of it), nearest its start.
        let best = Number.POSITIVE_INFINITY;
        for (let k = 0; k < server.entities.maxEntities; k++) {
          if (!server.entities.isAlive(k) || server.entities.typeIdAt(k) !== PROJECTILE_ENTITY_TYPE) continue;
          const dx = (server.entities.getField(k, X) as number) - wireEventParam(e, AT.x);
          const dy = (server.entities.getField(k, Y) as number) - wireEventParam(e, AT.y);
          const dz = (server.entities.getField(k, Z) as number) - wireEventParam(e, AT.z);
          const along = dx * dir.x + dy * dir.y + dz * dir.z;
          const off2 = dx * dx + dy * dy + dz * dz - along * along;
          if (along >= 0 && off2 < 1 && along < best) best = along;
        }
        if (best === Number.POSITIVE_INFINITY) continue; // exploded before its first tick ended
        launches.push({
          advanceMs: (best / speed) * 1000 - server.tickIntervalMs,
          rttMs: owner.channel.stats.rttMs,
        });
      }
      for (const c of server.clients) {
        if (c === null) continue;
        const isDead = c.state.health <= 0;
        if (isDead && dead[c.slot] !== true) lives.deaths++;
        if (!isDead && dead[c.slot] === true) lives.respawns++;
        dead[c.slot] = isDead;
      }
    },
  };
}

function launcherFight(seed: number, latencyAdvance: number) {
  const kills: { killer: number; victim: number; weapon: number }[] = [];
  const rules = arenaRules({
    respawnMs: 1000,
    projectiles: { latencyAdvance },
    onKill: (_server, killer, victim, weapon) =>
      kills.push({ killer: killer?.slot ?? -1, victim: victim.slot, weapon }),
  });
  const launches: Launch[] = [];
  const lives = { deaths: 0, respawns: 0 };
  const match = new Match(arenaGame, seed, {}, combineHooks(rules, watch(launches, lives)));
  const profile = parseProfile({ name: 'rtt200', latencyMs: 100, jitterMs: 10 });
  let seenProjectiles = 0;
  const clients: Client[] = [];
  for (let i = 0; i < 4; i++) {
    const aim = aimBot(seed + i, { aimErrorUnits: 10, switchPerSecond: 0, move: true });
    let client: Client | null = null;
    client = match.addClient({
      profile,
      drive: (c, now, input) => {
        aim(c, now, input);
        // Everyone takes the launcher.
        if (c.isSpawned && c.predictor.current.activeWeapon !== 2) input.impulse = 3;
      },
      hooks: {
        onSnapshot: () => {
          const reader = (client as Client).snapshots;
          for (let k = 0; k < reader.viewCount; k++) {
            if (reader.typeOf(reader.view[k]) === PROJECTILE_ENTITY_TYPE) seenProjectiles++;
          }
        },
      },
    }).client;
    clients.push(client);
  }
  match.run(30_000);
  return { match, rules, launches, lives, kills, seenProjectiles: () => seenProjectiles };
}

describe('launcher projectiles', () => {
  it('fly as entities, explode and damage, and players respawn', () => {
    const seed = 41;
    const msg = `seed ${seed}`;
    const { match, rules, lives, kills, seenProjectiles } = launcherFight(seed, 0);
    const p = rules.projectiles;
    expect(p.fired, msg).toBeGreaterThan(40);
    expect(p.exploded, msg).toBeGreaterThan(p.fired * 0.8);
    expect(p.blastHits, msg).toBeGreaterThan(5);
    expect(p.kills, msg).toBeGreaterThan(0);
    // Every blast's kill names the launcher and its shooter (nobody left): another player or, for
    // one's own blast, the victim.
    expect(kills.length, msg).toBe(p.kills + rules.kills);
    const blasts = kills.filter((k) => k.weapon === WEAPON_LAUNCHER);
    expect(blasts.length, msg).toBe(p.kills);
    for (const k of blasts) expect(k.killer, `${msg} ${JSON.stringify(k)}`).toBeGreaterThanOrEqual(0);
    expect(blasts.filter((k) => k.killer !== k.victim).length, msg).toBeGreaterThan(0);
    expect(seenProjectiles(), msg).toBeGreaterThan(100);
    // Nothing lingers: live projectiles are at most those of the last few seconds.
    let live = 0;
    for (let e = 0; e < match.server.entities.maxEntities; e++) {
      if (match.server.entities.isAlive(e) && match.server.entities.typeIdAt(e) === PROJECTILE_ENTITY_TYPE)
        live++;
    }
    expect(live, msg).toBeLessThan(20);
    // Every player who died came back within the respawn time, but those who died in the last second.
    expect(lives.deaths, msg).toBeGreaterThan(0);
    expect(lives.respawns, msg).toBeGreaterThanOrEqual(lives.deaths - 4);
    expect(lives.respawns, msg).toBeLessThanOrEqual(lives.deaths);
    match.close();
  });

  it('a projectile starts advanced by half its shooter round trip (capped), measured where it is', () => {
    const seed = 42;
    const msg = `seed ${seed}`;
    const plain = launcherFight(seed, 0);
    expect(plain.launches.length, msg).toBeGreaterThan(20);
    for (const l of plain.launches) expect(Math.abs(l.advanceMs), msg).toBeLessThan(0.5);
    const advanced = launcherFight(seed, 1);
    expect(advanced.launches.length, msg).toBeGreaterThan(20);
    const cap = DEFAULT_PROJECTILE_CONFIG.maxAdvanceMs;
    for (const l of advanced.launches) {
      // Positions travel at 1/32 unit: a fraction of a millisecond of flight.
      expect(Math.abs(l.advanceMs - Math.min(cap, l.rttMs / 2)), `${msg} rtt ${l.rttMs}`).toBeLessThan(0.5);
    }
    // 200 ms round trips: half of one is at the cap, and the cap is what they got.
    expect(Math.min(...advanced.launches.map((l) => l.advanceMs)), msg).toBeGreaterThan(cap - 0.5);
    plain.match.close();
    advanced.match.close();
  });

  it('strike a player in any slot: a 66-player server, the target in slot 64 or above', () => {
    // Two players alive, the rest killed: the rocket has one player to strike, in a slot past 64.
    const seed = 43;
    const msg = `seed ${seed}`;
    const rules = arenaRules({ respawnMs: 1e9 });
    const match = new Match(arenaGame, seed, { maxClients: 66 }, rules);
    let shooter: Client | null = null;
    let aimAt: ArenaPlayerState | null = null;
    const shooterState = () =>
      match.server.clients.find((c) => c !== null && c.slot === shooter?.slot)?.state;
    for (let i = 0; i < 66; i++) {
      match.addClient({
        drive: (c, _now, input) => {
          if (c !== shooter || aimAt === null) return;
          input.impulse = 0;
          input.buttons &= ~BUTTON_ATTACK;
          if (c.predictor.current.activeWeapon !== WEAPON_LAUNCHER) {
            input.impulse = 3;
            return;
          }
          const me = shooterState() as ArenaPlayerState;
          const dx = aimAt.originX - me.originX;
          const dy = aimAt.originY - me.originY;
          const dz = aimAt.originZ + 36 - (me.originZ + eyeHeight(me));
          input.yaw = (Math.atan2(dy, dx) * 180) / Math.PI;
          input.pitch = (-Math.atan2(dz, Math.hypot(dx, dy)) * 180) / Math.PI;
          input.buttons |= BUTTON_ATTACK;
        },
      });
    }
    match.run(3000);
    const server = match.server;
    expect(server.clientCount, msg).toBe(66);
    const target = server.clients.find((c) => c !== null && c.slot >= 64);
    expect(target, msg).toBeDefined();
    if (target === undefined || target === null) return;
    // A shooter in a slot below 64 that sees the target's middle from its eyes.
    const from = vec3();
    const to = vec3();
    const point = vec3();
    const trace = createTraceResult();
    const seen = server.clients.find((c) => {
      if (c === null || c.slot >= 64) return false;
      from.x = c.state.originX;
      from.y = c.state.originY;
      from.z = c.state.originZ + eyeHeight(c.state);
      to.x = target.state.originX;
      to.y = target.state.originY;
      to.z = target.state.originZ + 36;
      server.world.trace(from, to, point, point, trace);
      return trace.fraction === 1 && Math.hypot(to.x - from.x, to.y - from.y) > 200;
    });
    expect(seen, msg).toBeDefined();
    if (seen === undefined || seen === null) return;
    shooter = match.clients.find((m) => m.client.slot === seen.slot)?.client ?? null;
    expect(shooter, msg).not.toBeNull();
    for (const c of server.clients) if (c !== null && c !== seen && c !== target) c.state.health = 0;
    aimAt = target.state;
    match.run(3000);
    const p = rules.projectiles;
    expect(p.fired, msg).toBeGreaterThan(0);
    // The rocket struck the target itself (not the wall behind it), and its blast hurt it.
    expect(p.directHits, `${msg}: target in slot ${target.slot}`).toBeGreaterThan(0);
    expect(target.state.health, msg).toBeLessThan(100);
    match.close();
  });
});
