// The arena player: its replicated state, the state's wire form, spawning, and the engine's PlayerDefinition.
//
// The owner's full state on the wire (168 bits), written by `serializeArenaPlayerState` with the
// same quantization `movePlayer` ends with:
//
//   +----------------------+--------+----------------------------------------+
//   | originX, Y, Z        | 3 x 19 | [-4096, 4096] in steps of 1/32 unit    |
//   | velocityX, Y, Z      | 3 x 16 | [-2048, 2048] in steps of 1/8 unit/s   |
//   | pitch, yaw, roll     | 3 x 16 | degrees, 16-bit angles                 |
//   | onGround             | 1      |                                        |
//   | ducked               | 1      |                                        |
//   | jumpHeld             | 1      |                                        |
//   | stepDistance         | 12     | [0, 96] in steps of 1/32 unit          |
//   +----------------------+--------+----------------------------------------+

import type { BitStream } from '../../../src/protocol/bitstream.ts';
import type { PlayerDefinition, TraceResult, TraceWorld } from '../../../src/sim/game.ts';
import type { Vec3 } from '../../../src/sim/math.ts';
import {
  ANGLE_BITS,
  FOOTSTEP_DISTANCE,
  ORIGIN_LIMIT,
  ORIGIN_PRECISION,
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_STAND_EYE_HEIGHT,
  STEP_DISTANCE_PRECISION,
  VELOCITY_LIMIT,
  VELOCITY_PRECISION,
} from './constants.ts';
import type { Level } from './level.ts';
import {
  type MovementState,
  movePlayer,
  quantizeOrigin,
  quantizeViewAngle,
  settlePlayer,
} from './movement.ts';
import { traceLevel } from './trace.ts';

/**
 * The arena player's replicated state: a flat record of numbers and booleans (copied field by
 * field, never allocated per tick). Weapon fields join the movement fields here.
 */
export type ArenaPlayerState = MovementState;

/** Every field of the state, in wire order; `satisfies` makes a field missing here a compile error. */
const FIELD_SET = {
  originX: true,
  originY: true,
  originZ: true,
  velocityX: true,
  velocityY: true,
  velocityZ: true,
  pitch: true,
  yaw: true,
  roll: true,
  onGround: true,
  ducked: true,
  jumpHeld: true,
  stepDistance: true,
} satisfies Record<keyof ArenaPlayerState, true>;

/** The names of every field of the state (for tests and for the snapshot field tables). */
export const ARENA_PLAYER_FIELDS = Object.keys(FIELD_SET) as readonly (keyof ArenaPlayerState)[];

/** The world the arena's shared code sees: the level, and a trace through it. */
export interface ArenaWorld extends TraceWorld {
  readonly level: Level;
}

/** A world whose trace sweeps boxes through `level`'s brushes. */
export function createLevelWorld(level: Level): ArenaWorld {
  return {
    level,
    trace(start: Vec3, end: Vec3, mins: Vec3, maxs: Vec3, out: TraceResult): void {
      traceLevel(level, start, end, mins, maxs, out);
    },
  };
}

/** A new state: every number zero, every flag false. */
export function createArenaPlayerState(): ArenaPlayerState {
  return {
    originX: 0,
    originY: 0,
    originZ: 0,
    velocityX: 0,
    velocityY: 0,
    velocityZ: 0,
    pitch: 0,
    yaw: 0,
    roll: 0,
    onGround: false,
    ducked: false,
    jumpHeld: false,
    stepDistance: 0,
  };
}

/** Copies every field of `from` into `out`. */
export function copyArenaPlayerState(out: ArenaPlayerState, from: ArenaPlayerState): void {
  out.originX = from.originX;
  out.originY = from.originY;
  out.originZ = from.originZ;
  out.velocityX = from.velocityX;
  out.velocityY = from.velocityY;
  out.velocityZ = from.velocityZ;
  out.pitch = from.pitch;
  out.yaw = from.yaw;
  out.roll = from.roll;
  out.onGround = from.onGround;
  out.ducked = from.ducked;
  out.jumpHeld = from.jumpHeld;
  out.stepDistance = from.stepDistance;
}

/** True when every replicated field of `a` equals the one of `b` exactly. */
export function arenaPlayerStatesEqual(a: ArenaPlayerState, b: ArenaPlayerState): boolean {
  return (
    a.originX === b.originX &&
    a.originY === b.originY &&
    a.originZ === b.originZ &&
    a.velocityX === b.velocityX &&
    a.velocityY === b.velocityY &&
    a.velocityZ === b.velocityZ &&
    a.pitch === b.pitch &&
    a.yaw === b.yaw &&
    a.roll === b.roll &&
    a.onGround === b.onGround &&
    a.ducked === b.ducked &&
    a.jumpHeld === b.jumpHeld &&
    a.stepDistance === b.stepDistance
  );
}

/**
 * Writes, reads or measures the owner's full state (layout at the top of this file). Reading
 * checks every range and returns false on bad data (`s.error` says why); a failed read leaves
 * `state` partly overwritten, so read into a scratch state.
 */
export function serializeArenaPlayerState(s: BitStream, state: ArenaPlayerState): boolean {
  state.originX = s.float(state.originX, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  state.originY = s.float(state.originY, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  state.originZ = s.float(state.originZ, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  state.velocityX = s.float(state.velocityX, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  state.velocityY = s.float(state.velocityY, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  state.velocityZ = s.float(state.velocityZ, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  state.pitch = s.angle(state.pitch, ANGLE_BITS);
  state.yaw = s.angle(state.yaw, ANGLE_BITS);
  state.roll = s.angle(state.roll, ANGLE_BITS);
  state.onGround = s.bool(state.onGround);
  state.ducked = s.bool(state.ducked);
  state.jumpHeld = s.bool(state.jumpHeld);
  state.stepDistance = s.float(state.stepDistance, 0, FOOTSTEP_DISTANCE, STEP_DISTANCE_PRECISION);
  return s.ok;
}

/** Height of the eyes above the origin (the feet). */
export function eyeHeight(state: ArenaPlayerState): number {
  return state.ducked ? PLAYER_DUCK_EYE_HEIGHT : PLAYER_STAND_EYE_HEIGHT;
}

/** Spawns are placed this far above the floor, then dropped onto it. */
const SPAWN_LIFT = 1;

/**
 * Resets `state` and puts the player at spawn point `spawnIndex` of the world's level, standing
 * on the floor, facing the spawn's yaw. Throws if the index is not a spawn of the level or the
 * spawn point is inside solid (a broken level).
 */
export function spawnArenaPlayer(state: ArenaPlayerState, world: ArenaWorld, spawnIndex: number): void {
  const spawns = world.level.spawns;
  if (!Number.isInteger(spawnIndex) || spawnIndex < 0 || spawnIndex >= spawns.length) {
    throw new Error(`spawnArenaPlayer: spawnIndex ${spawnIndex} is not in [0, ${spawns.length - 1}]`);
  }
  const spawn = spawns[spawnIndex];
  copyArenaPlayerState(state, createArenaPlayerState());
  state.originX = quantizeOrigin(spawn.origin.x);
  state.originY = quantizeOrigin(spawn.origin.y);
  state.originZ = quantizeOrigin(spawn.origin.z + SPAWN_LIFT);
  state.yaw = quantizeViewAngle(spawn.yaw);
  if (!settlePlayer(state, world)) {
    throw new Error(`spawnArenaPlayer: spawns[${spawnIndex}] of level ${world.level.name} is inside solid`);
  }
}

/** The arena player as the engine sees it: state, shared movement and wire form behind the engine's interface. */
export const arenaPlayer: PlayerDefinition<ArenaPlayerState, ArenaWorld> = {
  create: createArenaPlayerState,
  copy: copyArenaPlayerState,
  move: movePlayer,
  serialize: serializeArenaPlayerState,
  equals: arenaPlayerStatesEqual,
  copyClientOnly(): void {},
  origin(state: ArenaPlayerState, out: Vec3): Vec3 {
    out.x = state.originX;
    out.y = state.originY;
    out.z = state.originZ;
    return out;
  },
};
