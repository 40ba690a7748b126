// Tests of the arena's shared weapons: seeded spread, fire rate, reloads, switching, hit-scan rays and projectiles, the extended player state on the wire.

import { describe, expect, it } from 'vitest';
import {
  BUTTON_ATTACK,
  BUTTON_CROUCH,
  BUTTON_JUMP,
  BUTTON_RELOAD,
  CLIP_LIMIT,
  EVENT_DEPLOY,
  EVENT_HIT,
  EVENT_HOLSTER,
  EVENT_IMPACT_WORLD,
  EVENT_MISS,
  EVENT_PROJECTILE_FIRED,
  EVENT_RELOAD,
  EVENT_SHOT,
  EVENT_WEAPON_FIRE,
  HEALTH_LIMIT,
  IMPULSE_WEAPON_1,
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_STAND_EYE_HEIGHT,
  RESERVE_LIMIT,
  SPAWN_HEALTH,
  WEAPON_COUNT,
  WEAPON_DEPLOYING,
  WEAPON_FIRING,
  WEAPON_HOLSTERING,
  WEAPON_IDLE,
  WEAPON_LAUNCHER,
  WEAPON_RELOADING,
  WEAPON_RIFLE,
  WEAPON_SHOTGUN,
  WEAPON_STATE_COUNT,
  WEAPON_TIME_LIMIT,
} from '../../../games/arena/shared/constants.ts';
import { HITBOX_BODY, HITBOX_HEAD, viewHeight } from '../../../games/arena/shared/hitboxes.ts';
import { ARENA_LEVEL, boxBrush, createLevel } from '../../../games/arena/shared/level.ts';
import {
  ARENA_PLAYER_FIELDS,
  type ArenaPlayerState,
  type ArenaWorld,
  arenaPlayer,
  createLevelWorld,
  damageArenaPlayer,
  spawnArenaPlayer,
  writeHitTarget,
} from '../../../games/arena/shared/player.ts';
import {
  commandMsec,
  createShotResult,
  hitDamage,
  PELLET_SCALE,
  packUnitVector,
  pelletDirection,
  reserveOf,
  runWeapons,
  SHOT_MISS,
  SHOT_PLAYER,
  SHOT_WORLD,
  traceShot,
  unpackPelletDirection,
  unpackUnitVector,
  WEAPONS,
} from '../../../games/arena/shared/weapons.ts';
import { BitStream } from '../../../src/protocol/bitstream.ts';
import { createUserCommand, quantizeUserCommand, type UserCommand } from '../../../src/protocol/usercmd.ts';
import { type GameEventSink, NO_EVENTS } from '../../../src/sim/game.ts';
import { angleVectors, dot, vec3 } from '../../../src/sim/math.ts';
import { Random } from '../../../src/sim/random.ts';

interface Recorded {
  type: number;
  p0: number;
  p1: number;
  p2: number;
  p3: number;
  /** Index of the command that emitted it. */
  command: number;
}

class Recorder implements GameEventSink {
  readonly events: Recorded[] = [];
  command = 0;
  emit(type: number, p0: number, p1: number, p2: number, p3: number): void {
    this.events.push({ type, p0, p1, p2, p3, command: this.command });
  }
  of(type: number): Recorded[] {
    return this.events.filter((e) => e.type === type);
  }
}

function command(fields: Partial<UserCommand>): UserCommand {
  const c = createUserCommand();
  c.msec = 16;
  Object.assign(c, fields);
  quantizeUserCommand(c);
  return c;
}

/** A fresh arena world (its own targets). */
function arenaWorld(): ArenaWorld {
  return createLevelWorld(ARENA_LEVEL);
}

/** A player standing at spawn 0, (0, 0) on the floor, facing +x along open floor to the wall at x = 1008. */
function shooter(world: ArenaWorld): ArenaPlayerState {
  const p = arenaPlayer.create();
  spawnArenaPlayer(p, world, 0);
  return p;
}

/** Runs `cmd` (or each of `cmds`) through the full move, recording events with the command index. */
function runAll(p: ArenaPlayerState, cmds: readonly UserCommand[], world: ArenaWorld, rec: Recorder): void {
  for (let i = 0; i < cmds.length; i++) {
    rec.command = i;
    arenaPlayer.move(p, cmds[i], world, rec);
  }
}

function repeat(c: UserCommand, n: number): UserCommand[] {
  return Array.from({ length: n }, () => c);
}

/** Index of the first command whose end time (cumulative msec) reaches `t`. */
function commandReaching(msecs: readonly number[], t: number): number {
  let end = 0;
  for (let i = 0; i < msecs.length; i++) {
    end += msecs[i];
    if (end >= t) return i;
  }
  return -1;
}

function addTarget(world: ArenaWorld, slot: number, x: number, y: number, z: number, ducked = false): void {
  const t = world.targets[world.targetCount++];
  t.slot = slot;
  t.originX = x;
  t.originY = y;
  t.originZ = z;
  t.yaw = 180;
  t.pitch = 0;
  t.ducked = ducked;
  t.alive = true;
}

function expectWeaponFieldsOnGrid(p: ArenaPlayerState, msg: string): void {
  const ints: [number, number][] = [
    [p.health, HEALTH_LIMIT],
    [p.activeWeapon, WEAPON_COUNT - 1],
    [p.pendingWeapon, WEAPON_COUNT - 1],
    [p.weaponState, WEAPON_STATE_COUNT - 1],
    [p.weaponTimeMs, WEAPON_TIME_LIMIT],
    [p.rifleClip, CLIP_LIMIT],
    [p.shotgunClip, CLIP_LIMIT],
    [p.launcherClip, CLIP_LIMIT],
    [p.rifleReserve, RESERVE_LIMIT],
    [p.shotgunReserve, RESERVE_LIMIT],
    [p.launcherReserve, RESERVE_LIMIT],
  ];
  for (const [v, max] of ints) {
    expect(Number.isInteger(v) && v >= 0 && v <= max, `${msg}: ${v} in [0, ${max}]`).toBe(true);
  }
}

const stream = new BitStream(64);

function roundTrip(s: ArenaPlayerState): ArenaPlayerState {
  stream.beginWrite();
  expect(arenaPlayer.serialize(stream, s)).toBe(true);
  const out = arenaPlayer.create();
  expect(arenaPlayer.serialize(new BitStream(0).beginRead(stream.bytes.slice()), out)).toBe(true);
  return out;
}

describe('weapon definitions', () => {
  it('fit the state wire ranges, and the spawn loadout is full clips and the rifle, ready', () => {
    expect(WEAPONS.length).toBe(WEAPON_COUNT);
    for (const w of WEAPONS) {
      expect(w.clipSize, w.name).toBeLessThanOrEqual(CLIP_LIMIT);
      expect(w.spawnReserve, w.name).toBeLessThanOrEqual(RESERVE_LIMIT);
      for (const ms of [w.refireMs, w.reloadMs, w.deployMs, w.holsterMs]) {
        expect(Number.isInteger(ms) && ms >= 100 && ms <= WEAPON_TIME_LIMIT, w.name).toBe(true);
      }
    }
    expect(WEAPONS[WEAPON_SHOTGUN].pellets).toBe(8);
    expect(WEAPONS[WEAPON_RIFLE].pellets).toBe(1);
    expect(WEAPONS[WEAPON_LAUNCHER].pellets).toBe(0);
    const p = arenaPlayer.create();
    expect(p.health).toBe(SPAWN_HEALTH);
    expect(p.activeWeapon).toBe(WEAPON_RIFLE);
    expect(p.pendingWeapon).toBe(WEAPON_RIFLE);
    expect(p.weaponState).toBe(WEAPON_IDLE);
    expect([p.rifleClip, p.shotgunClip, p.launcherClip]).toEqual(WEAPONS.map((w) => w.clipSize));
    expect([p.rifleReserve, p.shotgunReserve, p.launcherReserve]).toEqual(WEAPONS.map((w) => w.spawnReserve));
    expect(hitDamage(WEAPON_RIFLE, HITBOX_HEAD)).toBe(40);
    expect(hitDamage(WEAPON_RIFLE, HITBOX_BODY)).toBe(20);
  });

  it('takes a command duration exactly as movement does', () => {
    for (const [msec, want] of [
      [16, 16],
      [0, 1],
      [-5, 1],
      [Number.NaN, 1],
      [250, 250],
      [999, 250],
      [16.4, 16],
    ]) {
      expect(commandMsec({ ...createUserCommand(), msec }), `msec ${msec}`).toBe(want);
    }
  });
});

describe('spread', () => {
  it('the same seed fires the same pellets; another seed fires others', () => {
    const fire = (seed: number): Recorded[] => {
      const world = arenaWorld();
      const p = shooter(world);
      p.activeWeapon = WEAPON_SHOTGUN;
      p.pendingWeapon = WEAPON_SHOTGUN;
      const rec = new Recorder();
      runAll(p, [command({ buttons: BUTTON_ATTACK, randomSeed: seed, yaw: 10, pitch: -5 })], world, rec);
      return rec.events;
    };
    for (const seed of [1, 2, 0xdeadbeef, 123456]) {
      const a = fire(seed);
      expect(a, `seed ${seed}`).toEqual(fire(seed));
      const shots = a.filter((e) => e.type === EVENT_SHOT).map((e) => e.p3);
      expect(shots.length, `seed ${seed}`).toBe(8);
      expect(new Set(shots).size, `seed ${seed}: pellets differ from each other`).toBe(8);
      const other = fire(seed + 1)
        .filter((e) => e.type === EVENT_SHOT)
        .map((e) => e.p3);
      expect(other, `seed ${seed}`).not.toEqual(shots);
    }
  });

  it('every pellet stays within the cone of its weapon and the pellets fill it', () => {
    const seed = 99;
    const rng = new Random(seed);
    const f = vec3();
    const r = vec3();
    const u = vec3();
    const d = vec3();
    for (const weapon of [WEAPON_RIFLE, WEAPON_SHOTGUN]) {
      const spread = WEAPONS[weapon].spread;
      const cosLimit = 1 / Math.sqrt(1 + spread * spread);
      let widest = 1;
      for (let i = 0; i < 2000; i++) {
        angleVectors(rng.range(-89, 89), rng.range(0, 360), 0, f, r, u);
        const s = rng.int(0, 0xffffffff);
        for (let pellet = 0; pellet < 8; pellet++) {
          pelletDirection(f, r, u, spread, s, pellet, d);
          const c = dot(d, f);
          if (Math.abs(dot(d, d) - 1) > 1e-12 || c < cosLimit - 1e-12) {
            expect.fail(
              `seed ${seed} case ${i} pellet ${pellet}: |d|^2 ${dot(d, d)}, cos ${c} < ${cosLimit}`,
            );
          }
          widest = Math.min(widest, c);
        }
      }
      // The widest pellet reaches close to the edge of the cone.
      expect(widest, `seed ${seed} weapon ${weapon}`).toBeLessThan(
        1 / Math.sqrt(1 + 0.9 * 0.9 * spread * spread),
      );
    }
  });

  it("the SHOT event's packed direction is the pellet's direction to within 0.3 degrees", () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.activeWeapon = WEAPON_SHOTGUN;
    p.pendingWeapon = WEAPON_SHOTGUN;
    const rec = new Recorder();
    const c = command({ buttons: BUTTON_ATTACK, randomSeed: 77, yaw: 33, pitch: 12 });
    runAll(p, [c], world, rec);
    const f = vec3();
    const r = vec3();
    const u = vec3();
    angleVectors(p.pitch, p.yaw, 0, f, r, u);
    const got = vec3();
    const want = vec3();
    rec.of(EVENT_SHOT).forEach((e, i) => {
      expect([e.p0, e.p1, e.p2]).toEqual([p.originX, p.originY, p.originZ + PLAYER_STAND_EYE_HEIGHT]);
      expect(unpackPelletDirection(e.p3, got)).toBe(i);
      pelletDirection(f, r, u, WEAPONS[WEAPON_SHOTGUN].spread, 77, i, want);
      expect(dot(got, want), `pellet ${i}`).toBeGreaterThan(Math.cos((0.3 * Math.PI) / 180));
    });
  });
});

describe('direction packing', () => {
  it('round-trips random unit vectors closely and survives hostile numbers', () => {
    const seed = 5150;
    const rng = new Random(seed);
    const v = vec3();
    const out = vec3();
    for (let i = 0; i < 5000; i++) {
      v.x = rng.range(-1, 1);
      v.y = rng.range(-1, 1);
      v.z = rng.range(-1, 1);
      const len = Math.sqrt(dot(v, v));
      v.x /= len;
      v.y /= len;
      v.z /= len;
      for (const [bits, degrees] of [
        [10, 0.25],
        [12, 0.07],
      ]) {
        const packed = packUnitVector(v, bits);
        expect(Number.isInteger(packed) && packed >= 0 && packed < 2 ** (2 * bits)).toBe(true);
        unpackUnitVector(packed, bits, out);
        expect(dot(out, v), `seed ${seed} case ${i} bits ${bits}`).toBeGreaterThan(
          Math.cos((degrees * Math.PI) / 180),
        );
      }
    }
    for (const junk of [Number.NaN, -1, 1e30, Number.POSITIVE_INFINITY, 3.7, -0]) {
      unpackUnitVector(junk, 10, out);
      expect(Math.abs(dot(out, out) - 1), `junk ${junk}`).toBeLessThan(1e-12);
      expect(unpackPelletDirection(junk * PELLET_SCALE, out), `junk ${junk}`).toBeGreaterThanOrEqual(0);
      expect(Math.abs(dot(out, out) - 1), `junk ${junk}`).toBeLessThan(1e-12);
    }
    expect(unpackUnitVector(packUnitVector(vec3(0, 0, 0), 10), 10, out).z).toBeGreaterThan(0.999);
    expect(() => packUnitVector(v, 13)).toThrow(/bits 13/);
    expect(() => unpackUnitVector(0, 0, out)).toThrow(/bits 0/);
  });
});

describe('fire rate, clip and reload timing', () => {
  it('a held trigger fires exactly every refireMs of command time, however commands split it', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rng = new Random(seed);
      const msecs: number[] = [];
      const cmds: UserCommand[] = [];
      for (let total = 0; total < 2000; ) {
        const msec = seed === 1 ? 16 : rng.int(1, 100);
        msecs.push(msec);
        cmds.push(command({ msec, buttons: BUTTON_ATTACK, randomSeed: rng.int(0, 1e9) }));
        total += msec;
      }
      const world = arenaWorld();
      const p = shooter(world);
      const rec = new Recorder();
      runAll(p, cmds, world, rec);
      const fired = rec.of(EVENT_WEAPON_FIRE).map((e) => e.command);
      const refire = WEAPONS[WEAPON_RIFLE].refireMs;
      const expected: number[] = [0];
      for (let k = 1; commandReaching(msecs, k * refire) >= 0; k++)
        expected.push(commandReaching(msecs, k * refire));
      expect(fired, `seed ${seed}`).toEqual(expected);
      expect(p.rifleClip, `seed ${seed}`).toBe(30 - expected.length);
    }
  });

  it('idle time is not saved up: a new press fires at once, then waits the full refire time', () => {
    const world = arenaWorld();
    const p = shooter(world);
    const rec = new Recorder();
    const cmds = [...repeat(command({}), 50), ...repeat(command({ msec: 10, buttons: BUTTON_ATTACK }), 25)];
    runAll(p, cmds, world, rec);
    // The press fires at the start of command 50 (time 800); the next shots at 900 and 1000, the
    // ends of commands 59 and 69.
    expect(rec.of(EVENT_WEAPON_FIRE).map((e) => e.command)).toEqual([50, 59, 69]);
    expect(p.weaponState).toBe(WEAPON_FIRING);
  });

  it('an empty clip reloads by itself, the reload takes its time, and no shot goes off meanwhile', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.rifleClip = 1;
    const msecs = Array.from({ length: 200 }, () => 16);
    const rec = new Recorder();
    runAll(p, repeat(command({ buttons: BUTTON_ATTACK }), 200), world, rec);
    const { refireMs, reloadMs } = WEAPONS[WEAPON_RIFLE];
    const fires = rec.of(EVENT_WEAPON_FIRE).map((e) => e.command);
    expect(fires[0]).toBe(0);
    const reloads = rec.of(EVENT_RELOAD);
    expect(reloads.map((e) => e.command)).toEqual([commandReaching(msecs, refireMs)]);
    expect([reloads[0].p0, reloads[0].p1]).toEqual([WEAPON_RIFLE, reloadMs]);
    expect(fires[1]).toBe(commandReaching(msecs, refireMs + reloadMs));
    // 90 in reserve: 30 into the clip.
    const after = rec.of(EVENT_WEAPON_FIRE)[1];
    expect(after.p1).toBe(29);
    expect(p.rifleReserve).toBe(60);
  });

  it('the reload button reloads a partial clip; a full clip or an empty reserve ignore it', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.rifleClip = 10;
    const rec = new Recorder();
    runAll(
      p,
      [command({ buttons: BUTTON_RELOAD }), ...repeat(command({ buttons: BUTTON_ATTACK }), 130)],
      world,
      rec,
    );
    expect(rec.of(EVENT_RELOAD).map((e) => e.command)).toEqual([0]);
    // 2000 ms of reload: the first shot goes off in the command that reaches it.
    expect(rec.of(EVENT_WEAPON_FIRE)[0].command).toBe(124);
    expect(p.rifleReserve).toBe(70);

    const full = shooter(world);
    const r2 = new Recorder();
    runAll(full, repeat(command({ buttons: BUTTON_RELOAD }), 5), world, r2);
    expect(r2.events).toEqual([]);
    expect(full.weaponState).toBe(WEAPON_IDLE);

    const dry = shooter(world);
    dry.rifleClip = 3;
    dry.rifleReserve = 0;
    const r3 = new Recorder();
    runAll(dry, repeat(command({ buttons: BUTTON_RELOAD }), 5), world, r3);
    expect(r3.events).toEqual([]);
  });

  it('the reserve runs out: every round is fired once, then the trigger does nothing', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.rifleClip = 5;
    p.rifleReserve = 3;
    const rec = new Recorder();
    runAll(p, repeat(command({ msec: 50, buttons: BUTTON_ATTACK }), 200), world, rec);
    expect(rec.of(EVENT_WEAPON_FIRE).map((e) => e.p1)).toEqual([4, 3, 2, 1, 0, 2, 1, 0]);
    expect(rec.of(EVENT_RELOAD).length).toBe(1);
    expect([p.rifleClip, p.rifleReserve, p.weaponState, p.weaponTimeMs]).toEqual([0, 0, WEAPON_IDLE, 0]);
  });

  it('a command longer than the refire time fires once, and banks nothing', () => {
    const world = arenaWorld();
    const p = shooter(world);
    const rec = new Recorder();
    runAll(p, repeat(command({ msec: 250, buttons: BUTTON_ATTACK }), 4), world, rec);
    expect(rec.of(EVENT_WEAPON_FIRE).map((e) => e.command)).toEqual([0, 1, 2, 3]);
    expect(p.weaponTimeMs).toBe(0);
  });
});

describe('switching', () => {
  it('holsters, then deploys the new weapon, and fires only once both times have passed', () => {
    for (const msec of [16, 7, 33]) {
      const world = arenaWorld();
      const p = shooter(world);
      const n = Math.ceil(1500 / msec);
      const msecs = Array.from({ length: n }, () => msec);
      const cmds = [
        command({ msec, impulse: IMPULSE_WEAPON_1 + WEAPON_SHOTGUN, buttons: BUTTON_ATTACK }),
        ...repeat(command({ msec, buttons: BUTTON_ATTACK }), n - 1),
      ];
      const rec = new Recorder();
      const states: [number, number][] = [];
      for (let i = 0; i < n; i++) {
        rec.command = i;
        arenaPlayer.move(p, cmds[i], world, rec);
        states.push([p.activeWeapon, p.weaponState]);
      }
      const { holsterMs } = WEAPONS[WEAPON_RIFLE];
      const { deployMs } = WEAPONS[WEAPON_SHOTGUN];
      const msg = `msec ${msec}`;
      expect(
        rec.of(EVENT_HOLSTER).map((e) => [e.command, e.p0, e.p1]),
        msg,
      ).toEqual([[0, WEAPON_RIFLE, WEAPON_SHOTGUN]]);
      const deployed = commandReaching(msecs, holsterMs);
      expect(
        rec.of(EVENT_DEPLOY).map((e) => [e.command, e.p0, e.p1]),
        msg,
      ).toEqual([[deployed, WEAPON_SHOTGUN, deployMs]]);
      const firstShot = commandReaching(msecs, holsterMs + deployMs);
      const fires = rec.of(EVENT_WEAPON_FIRE);
      expect(fires[0].command, msg).toBe(firstShot);
      expect(fires[0].p0, msg).toBe(WEAPON_SHOTGUN);
      expect(states[deployed - 1], msg).toEqual([WEAPON_RIFLE, WEAPON_HOLSTERING]);
      expect(states[deployed], msg).toEqual([WEAPON_SHOTGUN, WEAPON_DEPLOYING]);
      expect(states[firstShot], msg).toEqual([WEAPON_SHOTGUN, WEAPON_FIRING]);
      expect(p.rifleClip, msg).toBe(30);
    }
  });

  it('selecting the weapon in hand does nothing; a switch waits for the refire time to end', () => {
    const world = arenaWorld();
    const p = shooter(world);
    const rec = new Recorder();
    runAll(p, repeat(command({ impulse: IMPULSE_WEAPON_1 + WEAPON_RIFLE }), 5), world, rec);
    expect(rec.events).toEqual([]);
    const r2 = new Recorder();
    runAll(
      p,
      [
        command({ buttons: BUTTON_ATTACK }),
        ...repeat(command({ impulse: IMPULSE_WEAPON_1 + WEAPON_LAUNCHER }), 10),
      ],
      world,
      r2,
    );
    expect(r2.of(EVENT_HOLSTER).map((e) => e.command)).toEqual([6]);
  });

  it('a switch cancels a reload at once, keeping the clip as it was', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.rifleClip = 3;
    const rec = new Recorder();
    runAll(
      p,
      [
        command({ buttons: BUTTON_RELOAD }),
        ...repeat(command({}), 20),
        command({ impulse: IMPULSE_WEAPON_1 + WEAPON_SHOTGUN }),
        ...repeat(command({}), 100),
      ],
      world,
      rec,
    );
    expect(rec.of(EVENT_HOLSTER).map((e) => e.command)).toEqual([21]);
    expect([p.rifleClip, p.rifleReserve, p.activeWeapon]).toEqual([3, 90, WEAPON_SHOTGUN]);
  });

  it('changing the choice while holstering deploys the last one chosen; out-of-range impulses are ignored', () => {
    const world = arenaWorld();
    const p = shooter(world);
    const rec = new Recorder();
    runAll(
      p,
      [
        command({ impulse: IMPULSE_WEAPON_1 + WEAPON_SHOTGUN }),
        command({ impulse: IMPULSE_WEAPON_1 + WEAPON_LAUNCHER }),
        command({ impulse: IMPULSE_WEAPON_1 + WEAPON_COUNT }),
        command({ impulse: 200 }),
        ...repeat(command({}), 60),
      ],
      world,
      rec,
    );
    expect(rec.of(EVENT_DEPLOY).map((e) => e.p0)).toEqual([WEAPON_LAUNCHER]);
    expect([p.activeWeapon, p.pendingWeapon, p.weaponState]).toEqual([
      WEAPON_LAUNCHER,
      WEAPON_LAUNCHER,
      WEAPON_IDLE,
    ]);
  });
});

describe('hit-scan shots', () => {
  it('a level rifle shot from the crouch-aware eye meets the head of a player posed alike, and passes over a crouched one', () => {
    for (const ducked of [false, true]) {
      const world = arenaWorld();
      const p = shooter(world);
      addTarget(world, 5, 400, 0, p.originZ, ducked);
      const rec = new Recorder();
      runAll(
        p,
        [command({ buttons: BUTTON_ATTACK | (ducked ? BUTTON_CROUCH : 0), randomSeed: 4 })],
        world,
        rec,
      );
      const msg = `ducked ${ducked}`;
      const shot = rec.of(EVENT_SHOT)[0];
      expect(shot.p2, msg).toBe(p.originZ + (ducked ? PLAYER_DUCK_EYE_HEIGHT : PLAYER_STAND_EYE_HEIGHT));
      expect(rec.events.map((e) => e.type)).toEqual([EVENT_WEAPON_FIRE, EVENT_SHOT, EVENT_HIT]);
      const hit = rec.of(EVENT_HIT)[0];
      expect([hit.p0, hit.p1, hit.p2], msg).toEqual([5, HITBOX_HEAD, 0]);
      // The head's near face is 6 units before the target's origin; spread adds a hair.
      expect(hit.p3 - 394, msg).toBeGreaterThanOrEqual(0);
      expect(hit.p3 - 394, msg).toBeLessThan(0.1);
    }
    const world = arenaWorld();
    const p = shooter(world);
    addTarget(world, 5, 400, 0, p.originZ, true);
    const rec = new Recorder();
    runAll(p, [command({ buttons: BUTTON_ATTACK, randomSeed: 4 })], world, rec);
    expect(rec.of(EVENT_HIT)).toEqual([]);
    expect(rec.of(EVENT_IMPACT_WORLD).length).toBe(1);
  });

  it('a wall in front blocks the hit; without targets the shot hits the wall; out of range it misses', () => {
    const wall = createLevel(
      'wall',
      [boxBrush(vec3(-512, -512, -16), vec3(512, 512, 0)), boxBrush(vec3(200, -64, 0), vec3(216, 64, 128))],
      [{ origin: vec3(0, 0, 0), yaw: 0 }],
    );
    const world = createLevelWorld(wall);
    const p = shooter(world);
    addTarget(world, 1, 400, 0, p.originZ);
    const rec = new Recorder();
    runAll(p, [command({ buttons: BUTTON_ATTACK, randomSeed: 8 })], world, rec);
    expect(rec.of(EVENT_HIT)).toEqual([]);
    const impact = rec.of(EVENT_IMPACT_WORLD);
    expect(impact.length).toBe(1);
    expect(Math.abs(impact[0].p0 - 200)).toBeLessThan(0.25);
    const normal = vec3();
    expect(unpackPelletDirection(impact[0].p3, normal)).toBe(0);
    expect(normal.x).toBeLessThan(-0.999);

    // Aim up over the wall and the open level: nothing within range.
    const up = shooter(world);
    const r2 = new Recorder();
    runAll(up, [command({ buttons: BUTTON_ATTACK, pitch: -60 })], world, r2);
    expect(r2.of(EVENT_MISS).map((e) => [e.p0, e.p1])).toEqual([[0, WEAPONS[WEAPON_RIFLE].range]]);
  });

  it('a target in front of a wall is hit; dead targets and the shooter itself are not', () => {
    const world = arenaWorld();
    const p = shooter(world);
    const result = createShotResult();
    const start = vec3(p.originX, p.originY, p.originZ + viewHeight(false));
    const dir = vec3(1, 0, 0);
    addTarget(world, 3, 1008 - 17, 0, p.originZ);
    traceShot(world, start, dir, 8192, result);
    expect([result.kind, result.hit.slot, result.hit.box]).toEqual([SHOT_PLAYER, 3, HITBOX_HEAD]);
    world.targets[0].alive = false;
    traceShot(world, start, dir, 8192, result);
    expect(result.kind).toBe(SHOT_WORLD);
    world.targets[0].alive = true;
    world.ownerSlot = 3;
    traceShot(world, start, dir, 8192, result);
    expect(result.kind).toBe(SHOT_WORLD);
    world.ownerSlot = -1;
    traceShot(world, start, dir, 500, result);
    expect([result.kind, result.distance]).toEqual([SHOT_MISS, 500]);
  });

  it('the shotgun reports every pellet: one SHOT and one outcome each, in order', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.activeWeapon = WEAPON_SHOTGUN;
    p.pendingWeapon = WEAPON_SHOTGUN;
    addTarget(world, 2, 150, 0, p.originZ);
    const rec = new Recorder();
    runAll(p, [command({ buttons: BUTTON_ATTACK, randomSeed: 31 })], world, rec);
    const types = rec.events.map((e) => e.type);
    expect(types[0]).toBe(EVENT_WEAPON_FIRE);
    expect(rec.events[0].p1).toBe(7);
    const vec = vec3();
    for (let i = 0; i < 8; i++) {
      const s = rec.events[1 + 2 * i];
      const outcome = rec.events[2 + 2 * i];
      expect(s.type).toBe(EVENT_SHOT);
      expect(unpackPelletDirection(s.p3, vec)).toBe(i);
      expect([EVENT_HIT, EVENT_IMPACT_WORLD, EVENT_MISS]).toContain(outcome.type);
      if (outcome.type === EVENT_HIT) expect([outcome.p0, outcome.p2]).toEqual([2, i]);
    }
    // At 150 units the 8-degree-wide cone mostly lands on a 26-unit-wide player.
    expect(rec.of(EVENT_HIT).length).toBeGreaterThan(0);
  });

  it('the launcher emits PROJECTILE_FIRED from the eye along the view, and no rays', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.activeWeapon = WEAPON_LAUNCHER;
    p.pendingWeapon = WEAPON_LAUNCHER;
    addTarget(world, 2, 150, 0, p.originZ);
    const rec = new Recorder();
    runAll(p, [command({ buttons: BUTTON_ATTACK, yaw: 45, pitch: 20 })], world, rec);
    expect(rec.events.map((e) => e.type)).toEqual([EVENT_WEAPON_FIRE, EVENT_PROJECTILE_FIRED]);
    const e = rec.events[1];
    expect([e.p0, e.p1, e.p2]).toEqual([p.originX, p.originY, p.originZ + PLAYER_STAND_EYE_HEIGHT]);
    const f = vec3();
    angleVectors(p.pitch, p.yaw, 0, f, null, null);
    expect(dot(unpackUnitVector(e.p3, 12, vec3()), f)).toBeGreaterThan(Math.cos((0.07 * Math.PI) / 180));
    expect(p.launcherClip).toBe(3);
  });

  it('client and server emit identical HIT verdicts for the same command and targets', () => {
    const seed = 777;
    const rng = new Random(seed);
    const client = arenaWorld();
    const server = arenaWorld();
    let hits = 0;
    for (let i = 0; i < 300; i++) {
      client.targetCount = 0;
      const count = rng.int(1, 6);
      for (let t = 0; t < count; t++) {
        addTarget(client, t + 1, rng.range(60, 600), rng.range(-200, 200), 0.125, rng.chance(0.3));
      }
      server.targetCount = 0;
      // The server lists its targets in another order.
      for (let t = count - 1; t >= 0; t--) {
        const from = client.targets[t];
        addTarget(server, from.slot, from.originX, from.originY, from.originZ, from.ducked);
      }
      const c = command({
        buttons: BUTTON_ATTACK,
        randomSeed: rng.int(0, 0xffffffff),
        yaw: rng.range(-30, 30),
        pitch: rng.range(-10, 20),
      });
      const weapon = rng.int(0, 1);
      const a = shooter(client);
      const b = shooter(server);
      for (const s of [a, b]) {
        s.activeWeapon = weapon;
        s.pendingWeapon = weapon;
      }
      const ra = new Recorder();
      const rb = new Recorder();
      arenaPlayer.move(a, c, client, ra);
      arenaPlayer.move(b, c, server, rb);
      expect(ra.events, `seed ${seed} case ${i}`).toEqual(rb.events);
      hits += ra.of(EVENT_HIT).length;
    }
    expect(hits, `seed ${seed}`).toBeGreaterThan(40);
  });
});

describe('the extended player state', () => {
  it('a dead player neither moves nor shoots; damage keeps health on the wire grid', () => {
    const world = arenaWorld();
    const p = shooter(world);
    expect(damageArenaPlayer(p, 30.4)).toBe(false);
    expect(p.health).toBe(70);
    expect(damageArenaPlayer(p, 500)).toBe(true);
    expect(p.health).toBe(0);
    expect(damageArenaPlayer(p, 5)).toBe(false);
    expect(() => damageArenaPlayer(p, Number.NaN)).toThrow(/amount NaN/);
    const before = arenaPlayer.create();
    arenaPlayer.copy(before, p);
    const rec = new Recorder();
    runAll(
      p,
      repeat(command({ forwardMove: 127, yaw: 77, buttons: BUTTON_ATTACK | BUTTON_JUMP, impulse: 2 }), 20),
      world,
      rec,
    );
    expect(rec.events).toEqual([]);
    expect(arenaPlayer.equals(p, before)).toBe(true);
    expect(writeHitTarget(p, 4, world.targets[0]).alive).toBe(false);
    damageArenaPlayer(p, -1000);
    expect(p.health).toBe(HEALTH_LIMIT);
  });

  it('round-trips every field through serialize, and fails on truncated data', () => {
    const seed = 808;
    const rng = new Random(seed);
    for (let i = 0; i < 300; i++) {
      const s = arenaPlayer.create();
      s.health = rng.int(0, HEALTH_LIMIT);
      s.activeWeapon = rng.int(0, WEAPON_COUNT - 1);
      s.pendingWeapon = rng.int(0, WEAPON_COUNT - 1);
      s.weaponState = rng.int(0, WEAPON_STATE_COUNT - 1);
      s.weaponTimeMs = rng.int(0, WEAPON_TIME_LIMIT);
      s.rifleClip = rng.int(0, CLIP_LIMIT);
      s.rifleReserve = rng.int(0, RESERVE_LIMIT);
      s.shotgunClip = rng.int(0, CLIP_LIMIT);
      s.shotgunReserve = rng.int(0, RESERVE_LIMIT);
      s.launcherClip = rng.int(0, CLIP_LIMIT);
      s.launcherReserve = rng.int(0, RESERVE_LIMIT);
      s.originX = rng.int(-1000, 1000) / 32;
      expect(arenaPlayer.equals(roundTrip(s), s), `seed ${seed} case ${i}`).toBe(true);
    }
    const m = new BitStream().beginMeasure();
    arenaPlayer.serialize(m, arenaPlayer.create());
    expect(m.bitsProcessed).toBe(237);
    expect(ARENA_PLAYER_FIELDS.length).toBe(24);
    stream.beginWrite();
    arenaPlayer.serialize(stream, arenaPlayer.create());
    const bytes = stream.bytes.slice();
    for (let len = 0; len < bytes.length; len++) {
      expect(
        arenaPlayer.serialize(new BitStream(0).beginRead(bytes, len), arenaPlayer.create()),
        `length ${len}`,
      ).toBe(false);
    }
    // A weapon id of 3 does not exist: the read fails.
    const bad = arenaPlayer.create();
    bad.activeWeapon = 0;
    stream.beginWrite();
    arenaPlayer.serialize(stream, bad);
    const raw = stream.bytes.slice();
    const bit = 168 + 8;
    raw[bit >> 3] |= 3 << (bit & 7);
    const r = new BitStream(0).beginRead(raw);
    expect(arenaPlayer.serialize(r, arenaPlayer.create())).toBe(false);
    expect(r.error).toBe('integer out of range');
  });

  it('random play with weapons stays on the wire grid, replays identically, and predicts bit for bit', () => {
    const seed = 2718;
    const rng = new Random(seed);
    const world = arenaWorld();
    for (let t = 0; t < 4; t++) addTarget(world, t + 1, rng.range(-800, 800), rng.range(-800, 800), 0.125);
    const server = shooter(world);
    const c = createUserCommand();
    const cmds: UserCommand[] = [];
    const serverEvents = new Recorder();
    for (let i = 0; i < 3000; i++) {
      c.sequence++;
      c.msec = rng.int(1, 40);
      c.yaw = rng.range(0, 360);
      c.pitch = rng.range(-60, 60);
      c.forwardMove = rng.chance(0.7) ? 127 : 0;
      c.sideMove = rng.int(-127, 127);
      c.upMove = 0;
      c.buttons =
        (rng.chance(0.6) ? BUTTON_ATTACK : 0) |
        (rng.chance(0.02) ? BUTTON_RELOAD : 0) |
        (rng.chance(0.05) ? BUTTON_CROUCH : 0) |
        (rng.chance(0.02) ? BUTTON_JUMP : 0);
      c.impulse = rng.chance(0.01) ? rng.int(0, 5) : 0;
      c.randomSeed = rng.int(0, 0xffffffff);
      quantizeUserCommand(c);
      cmds.push({ ...c });
    }
    const snapshots: ArenaPlayerState[] = [];
    for (let i = 0; i < cmds.length; i++) {
      if (i % 40 === 0) snapshots.push(roundTrip(server));
      serverEvents.command = i;
      arenaPlayer.move(server, cmds[i], world, serverEvents);
      const msg = `seed ${seed} command ${i}`;
      expectWeaponFieldsOnGrid(server, msg);
      expect(arenaPlayer.equals(roundTrip(server), server), msg).toBe(true);
    }
    // Plenty of shots (the loadout holds 164 rounds in all).
    expect(serverEvents.of(EVENT_WEAPON_FIRE).length, `seed ${seed}`).toBeGreaterThan(50);
    expect(serverEvents.of(EVENT_RELOAD).length, `seed ${seed}`).toBeGreaterThan(3);
    // A client restarting from each snapshot and replaying reaches the same states and events.
    const client = arenaPlayer.create();
    const clientEvents = new Recorder();
    for (let i = 0; i < cmds.length; i++) {
      if (i % 40 === 0) arenaPlayer.copy(client, snapshots[i / 40]);
      clientEvents.command = i;
      arenaPlayer.move(client, cmds[i], world, clientEvents);
    }
    expect(arenaPlayer.equals(client, server), `seed ${seed}`).toBe(true);
    expect(clientEvents.events, `seed ${seed}`).toEqual(serverEvents.events);
  });

  it('runWeapons alone keeps a hand-made state within range and uses the world without moving', () => {
    const world = arenaWorld();
    const p = shooter(world);
    p.weaponState = WEAPON_RELOADING;
    p.weaponTimeMs = 5;
    p.rifleClip = 0;
    p.rifleReserve = 1;
    runWeapons(p, command({ msec: 100, buttons: BUTTON_ATTACK }), world, NO_EVENTS);
    expect([p.rifleClip, p.rifleReserve, p.weaponState]).toEqual([0, 0, WEAPON_FIRING]);
    expect(p.weaponTimeMs).toBe(5);
    expect(reserveOf(p, WEAPON_RIFLE)).toBe(0);
  });
});
