// Tests of the arena player definition: state copy/equality, the wire form, spawning, determinism and fuzzing.

import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ANGLE_BITS,
  BUTTON_ATTACK,
  BUTTON_CROUCH,
  BUTTON_JUMP,
  BUTTON_RELOAD,
  EVENT_SHOT,
  FOOTSTEP_DISTANCE,
  ORIGIN_LIMIT,
  ORIGIN_PRECISION,
  STEP_DISTANCE_PRECISION,
  VELOCITY_LIMIT,
  VELOCITY_PRECISION,
} from '../../../games/arena/shared/constants.ts';
import { arenaHitscan } from '../../../games/arena/shared/entities.ts';
import { arenaGame } from '../../../games/arena/shared/game.ts';
import {
  ARENA_LEVEL,
  boxBrush,
  createLevel,
  type Level,
  type RampRise,
  rampBrush,
} from '../../../games/arena/shared/level.ts';
import { playerHull } from '../../../games/arena/shared/movement.ts';
import {
  ARENA_PLAYER_FIELDS,
  type ArenaPlayerState,
  type ArenaWorld,
  arenaPlayer,
  createLevelWorld,
  spawnArenaPlayer,
} from '../../../games/arena/shared/player.ts';
import { createTraceResult } from '../../../games/arena/shared/trace.ts';
import { pelletDirection, WEAPONS } from '../../../games/arena/shared/weapons.ts';
import { BitStream, quantize, quantizeAngle } from '../../../src/protocol/bitstream.ts';
import { createUserCommand, quantizeUserCommand, type UserCommand } from '../../../src/protocol/usercmd.ts';
import { NO_EVENTS } from '../../../src/sim/game.ts';
import { angleVectors, vec3 } from '../../../src/sim/math.ts';
import { Random } from '../../../src/sim/random.ts';

const arena = createLevelWorld(ARENA_LEVEL);

function randomState(rng: Random): ArenaPlayerState {
  const s = arenaPlayer.create();
  s.originX = quantize(rng.range(-5000, 5000), -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  s.originY = quantize(rng.range(-5000, 5000), -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  s.originZ = quantize(rng.range(-5000, 5000), -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  s.velocityX = quantize(rng.range(-3000, 3000), -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  s.velocityY = quantize(rng.range(-3000, 3000), -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  s.velocityZ = quantize(rng.range(-3000, 3000), -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  s.pitch = quantizeAngle(rng.range(-720, 720), ANGLE_BITS);
  s.yaw = quantizeAngle(rng.range(-720, 720), ANGLE_BITS);
  s.roll = quantizeAngle(rng.range(-720, 720), ANGLE_BITS);
  s.onGround = rng.chance(0.5);
  s.ducked = rng.chance(0.5);
  s.jumpHeld = rng.chance(0.5);
  s.stepDistance = quantize(rng.range(0, 100), 0, FOOTSTEP_DISTANCE, STEP_DISTANCE_PRECISION);
  return s;
}

/** A different value for one field, still on its wire grid. */
function nudge(s: ArenaPlayerState, field: (typeof ARENA_PLAYER_FIELDS)[number]): void {
  const v = s[field];
  if (typeof v === 'boolean') (s as unknown as Record<string, boolean>)[field] = !v;
  else
    (s as unknown as Record<string, number>)[field] =
      field === 'stepDistance' ? (v + 1) % 64 : v === 0 ? 1 : 0;
}

const stream = new BitStream(64);

function roundTrip(s: ArenaPlayerState): ArenaPlayerState {
  stream.beginWrite();
  expect(arenaPlayer.serialize(stream, s)).toBe(true);
  const bytes = stream.bytes.slice();
  const out = arenaPlayer.create();
  expect(arenaPlayer.serialize(new BitStream(0).beginRead(bytes), out)).toBe(true);
  return out;
}

/** Every field of the state is already on its wire grid. */
function expectQuantized(s: ArenaPlayerState, msg: string): void {
  expect(quantize(s.originX, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION), msg).toBe(s.originX);
  expect(quantize(s.originY, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION), msg).toBe(s.originY);
  expect(quantize(s.originZ, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION), msg).toBe(s.originZ);
  expect(quantize(s.velocityX, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION), msg).toBe(s.velocityX);
  expect(quantize(s.velocityY, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION), msg).toBe(s.velocityY);
  expect(quantize(s.velocityZ, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION), msg).toBe(s.velocityZ);
  expect(quantizeAngle(s.pitch, ANGLE_BITS), msg).toBe(s.pitch);
  expect(quantizeAngle(s.yaw, ANGLE_BITS), msg).toBe(s.yaw);
  expect(quantizeAngle(s.roll, ANGLE_BITS), msg).toBe(s.roll);
  expect(quantize(s.stepDistance, 0, FOOTSTEP_DISTANCE, STEP_DISTANCE_PRECISION), msg).toBe(s.stepDistance);
}

/** A bot's command: heads for a target with noise, jumps and crouches now and then. */
function randomCommand(
  rng: Random,
  p: ArenaPlayerState,
  target: readonly number[],
  c: UserCommand,
): UserCommand {
  c.sequence++;
  c.msec = rng.chance(0.03) ? rng.int(1, 250) : rng.int(1, 33);
  c.yaw = (Math.atan2(target[1] - p.originY, target[0] - p.originX) * 180) / Math.PI + rng.range(-50, 50);
  c.pitch = rng.range(-89, 89);
  c.forwardMove = rng.chance(0.7) ? 127 : rng.int(-127, 127);
  c.sideMove = rng.chance(0.5) ? 0 : rng.int(-127, 127);
  c.upMove = rng.chance(0.99) ? 0 : rng.int(-127, 127);
  c.buttons = (rng.chance(0.015) ? BUTTON_JUMP : 0) | (rng.chance(0.1) ? BUTTON_CROUCH : 0);
  quantizeUserCommand(c);
  return c;
}

/** Places near the arena's walls, crates, stairs, ramp and overhang. */
const ARENA_TARGETS = [
  [-600, -536],
  [-320, -200],
  [-320, -472],
  [192, 192],
  [248, 184],
  [-288, 232],
  [452, -328],
  [416, 416],
  [1008, 0],
  [-1008, 500],
  [0, 1008],
  [0, -1008],
  [1008, 1008],
];

describe('arena player state', () => {
  it('lists every field; copy copies each one and equals compares each one', () => {
    expect(ARENA_PLAYER_FIELDS.length).toBe(Object.keys(arenaPlayer.create()).length);
    const rng = new Random(11);
    for (const field of ARENA_PLAYER_FIELDS) {
      const a = randomState(rng);
      const b = arenaPlayer.create();
      arenaPlayer.copy(b, a);
      expect(arenaPlayer.equals(a, b), field).toBe(true);
      nudge(b, field);
      expect(arenaPlayer.equals(a, b), field).toBe(false);
      arenaPlayer.copy(a, b);
      expect(a[field], field).toBe(b[field]);
      expect(arenaPlayer.equals(a, b), field).toBe(true);
      // The wire carries the field.
      expect(roundTrip(b)[field], field).toBe(b[field]);
    }
  });

  it('round-trips through serialize exactly, in 237 bits', () => {
    const seed = 2024;
    const rng = new Random(seed);
    for (let i = 0; i < 500; i++) {
      const s = randomState(rng);
      expect(arenaPlayer.equals(roundTrip(s), s), `seed ${seed} case ${i}`).toBe(true);
    }
    expect(arenaPlayer.serialize(new BitStream().beginMeasure(), arenaPlayer.create())).toBe(true);
    const m = new BitStream().beginMeasure();
    arenaPlayer.serialize(m, arenaPlayer.create());
    expect(m.bitsProcessed).toBe(237);
  });

  it('fails a read of truncated or garbage data without throwing', () => {
    const s = randomState(new Random(5));
    stream.beginWrite();
    arenaPlayer.serialize(stream, s);
    const bytes = stream.bytes.slice();
    for (let len = 0; len < bytes.length; len++) {
      const r = new BitStream(0).beginRead(bytes, len);
      expect(arenaPlayer.serialize(r, arenaPlayer.create()), `length ${len}`).toBe(false);
      expect(r.error).toBe('read past end');
    }
    const seed = 77;
    const rng = new Random(seed);
    let failures = 0;
    for (let i = 0; i < 2000; i++) {
      const junk = new Uint8Array(rng.int(0, 30));
      for (let j = 0; j < junk.length; j++) junk[j] = rng.int(0, 255);
      const out = arenaPlayer.create();
      const ok = arenaPlayer.serialize(new BitStream(0).beginRead(junk), out);
      if (!ok) failures++;
      else expectQuantized(out, `seed ${seed} case ${i}`);
    }
    expect(failures, `seed ${seed}`).toBeGreaterThan(0);
  });

  it('reports its origin, and has no client-only fields to copy', () => {
    const s = randomState(new Random(3));
    expect(arenaPlayer.origin(s, vec3())).toEqual({ x: s.originX, y: s.originY, z: s.originZ });
    const t = arenaPlayer.create();
    arenaPlayer.copyClientOnly(t, s);
    expect(arenaPlayer.equals(t, arenaPlayer.create())).toBe(true);
  });
});

describe('spawning', () => {
  it('stands the player on the floor at each spawn point, facing its yaw', () => {
    const p = arenaPlayer.create();
    ARENA_LEVEL.spawns.forEach((spawn, i) => {
      p.velocityX = 99;
      p.ducked = true;
      spawnArenaPlayer(p, arena, i);
      expect(p.originX).toBe(spawn.origin.x);
      expect(p.originY).toBe(spawn.origin.y);
      expect(p.originZ).toBe(spawn.origin.z + 0.125);
      expect(p.yaw).toBe(quantizeAngle(spawn.yaw, ANGLE_BITS));
      expect(p.onGround).toBe(true);
      expect(p.ducked).toBe(false);
      expect(p.velocityX).toBe(0);
    });
  });

  it('names a bad spawn index or a spawn inside solid', () => {
    const p = arenaPlayer.create();
    expect(() => spawnArenaPlayer(p, arena, ARENA_LEVEL.spawns.length)).toThrow(
      /spawnIndex 6 is not in \[0, 5\]/,
    );
    expect(() => spawnArenaPlayer(p, arena, -1)).toThrow(/spawnIndex -1/);
    expect(() => spawnArenaPlayer(p, arena, 0.5)).toThrow(/spawnIndex 0.5/);
    const buried = createLevelWorld(
      createLevel(
        'buried',
        [boxBrush(vec3(-64, -64, -64), vec3(64, 64, 64))],
        [{ origin: vec3(0, 0, 0), yaw: 0 }],
      ),
    );
    expect(() => spawnArenaPlayer(p, buried, 0)).toThrow(/spawns\[0\] of level buried is inside solid/);
  });
});

describe('arenaGame', () => {
  it('plays the arena level and spawns slot i at spawn point i modulo their count', () => {
    const world = arenaGame.createWorld();
    expect(world.level).toBe(ARENA_LEVEL);
    expect(arenaGame.player).toBe(arenaPlayer);
    const count = ARENA_LEVEL.spawns.length;
    const p = arenaGame.player.create();
    for (const slot of [0, 3, count, count + 4, 100]) {
      arenaGame.spawn(p, world, slot);
      const spawn = ARENA_LEVEL.spawns[slot % count];
      expect(p.originX, `slot ${slot}`).toBe(spawn.origin.x);
      expect(p.originY, `slot ${slot}`).toBe(spawn.origin.y);
    }
  });
});

describe('determinism', () => {
  it('runs a long random command sequence to identical states twice, each already on the wire grid', () => {
    const seed = 31337;
    const rng = new Random(seed);
    const commands: UserCommand[] = [];
    const c = createUserCommand();
    const probe = arenaPlayer.create();
    spawnArenaPlayer(probe, arena, 0);
    let target = ARENA_TARGETS[0];
    for (let i = 0; i < 3000; i++) {
      if (rng.chance(0.01)) target = ARENA_TARGETS[rng.int(0, ARENA_TARGETS.length - 1)];
      commands.push({ ...randomCommand(rng, probe, target, c) });
      arenaPlayer.move(probe, commands[i], arena, NO_EVENTS);
    }
    const a = arenaPlayer.create();
    const b = arenaPlayer.create();
    spawnArenaPlayer(a, arena, 0);
    spawnArenaPlayer(b, arena, 0);
    for (let i = 0; i < commands.length; i++) {
      const msg = `seed ${seed} command ${i}`;
      arenaPlayer.move(a, commands[i], arena, NO_EVENTS);
      expectQuantized(a, msg);
      expect(arenaPlayer.equals(roundTrip(a), a), msg).toBe(true);
      arenaPlayer.move(b, commands[i], arena, NO_EVENTS);
      expect(arenaPlayer.equals(a, b), msg).toBe(true);
    }
    expect(arenaPlayer.equals(a, probe), `seed ${seed}`).toBe(true);
  });

  it('re-running commands from a received state reproduces the sender exactly (prediction)', () => {
    const seed = 4242;
    const rng = new Random(seed);
    const server = arenaPlayer.create();
    spawnArenaPlayer(server, arena, 2);
    const c = createUserCommand();
    const pending: UserCommand[] = [];
    const client = arenaPlayer.create();
    let target = ARENA_TARGETS[3];
    for (let i = 0; i < 2000; i++) {
      if (rng.chance(0.02)) target = ARENA_TARGETS[rng.int(0, ARENA_TARGETS.length - 1)];
      if (i % 50 === 0) {
        // A snapshot arrives: the client restarts from the server's state and replays the rest.
        arenaPlayer.copy(client, roundTrip(server));
        pending.length = 0;
      }
      const cmd = { ...randomCommand(rng, server, target, c) };
      pending.push(cmd);
      arenaPlayer.move(server, cmd, arena, NO_EVENTS);
      if (i % 50 === 49) {
        for (const p of pending) arenaPlayer.move(client, p, arena, NO_EVENTS);
        expect(arenaPlayer.equals(client, server), `seed ${seed} command ${i}`).toBe(true);
      }
    }
  });
});

function stuckInSolid(world: ArenaWorld, p: ArenaPlayerState): boolean {
  const mins = vec3();
  const maxs = vec3();
  playerHull(p.ducked, mins, maxs);
  const o = vec3(p.originX, p.originY, p.originZ);
  const tr = createTraceResult();
  world.trace(o, o, mins, maxs, tr);
  return tr.startSolid;
}

/** A walled 1200 x 1200 room (with a ceiling) full of random boxes and ramps of every slope. */
function clutteredLevel(seed: number): Level {
  const rng = new Random(seed);
  const brushes = [
    boxBrush(vec3(-600, -600, -32), vec3(600, 600, 0)),
    boxBrush(vec3(-600, -600, 0), vec3(-584, 600, 300)),
    boxBrush(vec3(584, -600, 0), vec3(600, 600, 300)),
    boxBrush(vec3(-584, -600, 0), vec3(584, -584, 300)),
    boxBrush(vec3(-584, 584, 0), vec3(584, 600, 300)),
    boxBrush(vec3(-584, -584, 280), vec3(584, 584, 300)),
  ];
  const rises: RampRise[] = ['+x', '-x', '+y', '-y'];
  for (let i = 0; i < 40; i++) {
    const x = rng.range(-560, 400);
    const y = rng.range(-560, 400);
    const z = rng.chance(0.7) ? 0 : rng.range(0, 120);
    const lo = vec3(x, y, z);
    const hi = vec3(x + rng.range(20, 200), y + rng.range(20, 200), z + rng.range(4, 150));
    brushes.push(rng.chance(0.5) ? rampBrush(lo, hi, rises[rng.int(0, 3)]) : boxBrush(lo, hi));
  }
  // Spawn points where a standing hull fits just above the floor.
  const probe = createLevelWorld(createLevel('probe', brushes, [{ origin: vec3(0, 0, 0), yaw: 0 }]));
  const spawns = [];
  const state = arenaPlayer.create();
  while (spawns.length < 8) {
    state.originX = Math.round(rng.range(-560, 560));
    state.originY = Math.round(rng.range(-560, 560));
    state.originZ = 1;
    if (!stuckInSolid(probe, state)) spawns.push({ origin: vec3(state.originX, state.originY, 0), yaw: 0 });
  }
  return createLevel(`cluttered ${seed}`, brushes, spawns);
}

describe('fuzzing', () => {
  it('thousands of random commands in the arena never leave the player in solid or below the floor', () => {
    for (const seed of [1, 2, 3, 4]) {
      const rng = new Random(seed);
      const p = arenaPlayer.create();
      spawnArenaPlayer(p, arena, seed % ARENA_LEVEL.spawns.length);
      const c = createUserCommand();
      let target = ARENA_TARGETS[seed];
      let grounded = 0;
      for (let i = 0; i < 5000; i++) {
        if (rng.chance(0.01)) target = ARENA_TARGETS[rng.int(0, ARENA_TARGETS.length - 1)];
        arenaPlayer.move(p, randomCommand(rng, p, target, c), arena, NO_EVENTS);
        const msg = `seed ${seed} command ${i}`;
        if (stuckInSolid(arena, p))
          expect.fail(`${msg}: in solid at ${p.originX}, ${p.originY}, ${p.originZ}`);
        if (p.originZ < 0.1) expect.fail(`${msg}: below the floor at ${p.originZ}`);
        if (Math.abs(p.originX) > 992 || Math.abs(p.originY) > 992) expect.fail(`${msg}: outside the walls`);
        if (p.onGround) grounded++;
      }
      expect(grounded, `seed ${seed}: the bot mostly walks`).toBeGreaterThan(2000);
    }
  });

  it('random commands among random ramps and boxes never leave the player in solid', () => {
    for (const seed of [10, 20, 30]) {
      const world = createLevelWorld(clutteredLevel(seed));
      const rng = new Random(seed);
      for (let spawn = 0; spawn < 4; spawn++) {
        const p = arenaPlayer.create();
        spawnArenaPlayer(p, world, spawn);
        const c = createUserCommand();
        let yaw = rng.range(0, 360);
        for (let i = 0; i < 2500; i++) {
          yaw += rng.range(-25, 25);
          const heading = (yaw * Math.PI) / 180;
          randomCommand(rng, p, [p.originX + Math.cos(heading), p.originY + Math.sin(heading)], c);
          arenaPlayer.move(p, c, world, NO_EVENTS);
          const msg = `seed ${seed} spawn ${spawn} command ${i}`;
          if (stuckInSolid(world, p))
            expect.fail(`${msg}: in solid at ${p.originX}, ${p.originY}, ${p.originZ}`);
          if (p.originZ < 0.1) expect.fail(`${msg}: below the floor at ${p.originZ}`);
        }
      }
    }
  });
});

describe('shared code hygiene', () => {
  it('uses no clock, no Math.random and no inexact Math functions (the arena and the engine math both sides run)', () => {
    const forbidden =
      /Math\.(random|a?sinh?|a?cosh?|a?tanh?|atan2|pow|exp\w*|log\w*|hypot|cbrt|fround)\b|Date\.now|performance\.now|[\w)\]]\s*\*\*\s*[\w(]/;
    const shared = new URL('../../../games/arena/shared/', import.meta.url);
    const files: URL[] = [];
    for (const file of readdirSync(shared)) if (file.endsWith('.ts')) files.push(new URL(file, shared));
    for (const file of ['math.ts', 'blend.ts', 'random.ts'])
      files.push(new URL(`../../../src/sim/${file}`, import.meta.url));
    expect(files.length).toBeGreaterThan(8);
    for (const file of files) {
      let source = readFileSync(file, 'utf8');
      // math.ts names Math.sin/Math.cos in its comments, to say they are not used.
      source = source.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
      expect(forbidden.exec(source)?.[0], file.pathname).toBeUndefined();
    }
    // The pattern itself catches what it is meant to.
    for (const bad of [
      'Math.log2(x)',
      'Math.expm1(x)',
      'Math.atanh(x)',
      'Math.sin(a)',
      'a ** 2',
      'Date.now()',
    ]) {
      expect(forbidden.test(bad), bad).toBe(true);
    }
  });
});

describe('which commands lag compensation rewinds for', () => {
  it('shotSegment keeps every ray a command fires within its reach of the segment (the broad phase is conservative)', () => {
    const seed = 4243;
    const rng = new Random(seed);
    const state = arenaPlayer.create();
    arenaGame.spawn(state, arena, 0);
    const cmd = createUserCommand();
    const start = vec3();
    const end = vec3();
    const forward = vec3();
    const right = vec3();
    const up = vec3();
    const dir = vec3();
    let reach = 0;
    let rays = 0;
    let worst = 0;
    const shots: number[] = [];
    const sink = {
      emit: (type: number, p0: number, p1: number, p2: number, p3: number) => {
        if (type === EVENT_SHOT) shots.push(p0, p1, p2, p3);
      },
    };
    let sequence = 0;
    for (let i = 0; i < 20_000; i++) {
      cmd.sequence = ++sequence;
      cmd.msec = rng.chance(0.1) ? rng.int(1, 250) : rng.int(4, 20);
      cmd.yaw = rng.range(-180, 180);
      cmd.pitch = rng.range(-89, 89);
      cmd.forwardMove = rng.int(-1, 1) * 127;
      cmd.sideMove = rng.int(-1, 1) * 127;
      cmd.buttons =
        (rng.chance(0.9) ? BUTTON_ATTACK : 0) |
        (rng.chance(0.2) ? BUTTON_JUMP : 0) |
        (rng.chance(0.2) ? BUTTON_CROUCH : 0) |
        (rng.chance(0.01) ? BUTTON_RELOAD : 0);
      cmd.impulse = rng.chance(0.05) ? rng.int(1, 3) : 0;
      quantizeUserCommand(cmd);
      // The server asks before the command runs, as lag compensation does.
      if (arenaHitscan.fires(state, cmd)) reach = arenaHitscan.shotSegment(state, cmd, start, end);
      shots.length = 0;
      arenaGame.player.move(state, cmd, arena, sink);
      if (shots.length === 0) continue;
      // Every pellet's ray, recomputed exactly as the weapon fired it, from the eye it fired from.
      const weapon = WEAPONS[state.activeWeapon];
      angleVectors(state.pitch, state.yaw, 0, forward, right, up);
      for (let k = 0; k < shots.length; k += 4) {
        pelletDirection(forward, right, up, weapon.spread, cmd.randomSeed, k / 4, dir);
        for (let step = 0; step <= 64; step++) {
          const d = (weapon.range * step) / 64;
          const x = shots[k] + dir.x * d;
          const y = shots[k + 1] + dir.y * d;
          const z = shots[k + 2] + dir.z * d;
          const off = distanceToSegment(x, y, z, start, end);
          worst = Math.max(worst, off / reach);
          expect(off, `seed ${seed}, command ${i}, pellet ${k / 4}, ${d} units out`).toBeLessThanOrEqual(
            reach,
          );
        }
        rays++;
      }
    }
    expect(rays, `seed ${seed}`).toBeGreaterThan(300);
    // The reach is not loose either: some ray comes within a third of it.
    expect(worst, `seed ${seed}`).toBeGreaterThan(0.3);
  });
  it('fires() is true for every command that fires a hit-scan weapon, and false while the weapon is busy', () => {
    const seed = 4242;
    const rng = new Random(seed);
    const state = arenaPlayer.create();
    arenaGame.spawn(state, arena, 0);
    const cmd = createUserCommand();
    let fired = 0;
    let rewound = 0;
    let held = 0;
    let sequence = 0;
    const sink = { emit: (type: number) => void (type === EVENT_SHOT && fired++) };
    for (let i = 0; i < 20_000; i++) {
      cmd.sequence = ++sequence;
      cmd.msec = rng.chance(0.05) ? rng.int(1, 250) : rng.int(4, 20);
      cmd.yaw = rng.range(-180, 180);
      cmd.pitch = rng.range(-30, 30);
      cmd.forwardMove = rng.int(-1, 1) * 127;
      cmd.buttons = (rng.chance(0.9) ? BUTTON_ATTACK : 0) | (rng.chance(0.01) ? BUTTON_RELOAD : 0);
      cmd.impulse = rng.chance(0.01) ? rng.int(1, 3) : 0;
      quantizeUserCommand(cmd);
      const mayFire = arenaHitscan.fires(state, cmd);
      if ((cmd.buttons & BUTTON_ATTACK) !== 0) held++;
      if (mayFire) rewound++;
      const before = fired;
      arenaGame.player.move(state, cmd, arena, sink);
      if (fired > before) expect(mayFire, `seed ${seed}, command ${i}: fired without a rewind`).toBe(true);
    }
    expect(fired, `seed ${seed}`).toBeGreaterThan(300);
    // Most commands with the trigger held come while the weapon is still busy.
    expect(rewound, `seed ${seed}`).toBeLessThan(held / 2);
  });
});

/** Distance from (x, y, z) to the segment from `a` to `b`. */
function distanceToSegment(
  x: number,
  y: number,
  z: number,
  a: { x: number; y: number; z: number },
  b: { x: number; y: number; z: number },
): number {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const dz = b.z - a.z;
  const len2 = dx * dx + dy * dy + dz * dz;
  let t = len2 > 0 ? ((x - a.x) * dx + (y - a.y) * dy + (z - a.z) * dz) / len2 : 0;
  t = Math.max(0, Math.min(1, t));
  return Math.hypot(x - a.x - dx * t, y - a.y - dy * t, z - a.z - dz * t);
}
