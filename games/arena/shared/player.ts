// The arena player: its replicated state, the state's wire form, spawning, and the engine's PlayerDefinition.
//
// The owner's full state on the wire (237 bits), written by `serializeArenaPlayerState` with the
// same quantization `moveArenaPlayer` ends with:
//
//   +----------------------+--------+----------------------------------------+
//   | originX, Y, Z        | 3 x 19 | [-4096, 4096] in steps of 1/32 unit    |
//   | velocityX, Y, Z      | 3 x 16 | [-2048, 2048] in steps of 1/8 unit/s   |
//   | pitch, yaw, roll     | 3 x 16 | degrees, 16-bit angles                 |
//   | onGround             | 1      |                                        |
//   | ducked               | 1      |                                        |
//   | jumpHeld             | 1      |                                        |
//   | stepDistance         | 12     | [0, 96] in steps of 1/32 unit          |
//   | health               | 8      | int 0..255 (0: dead)                   |
//   | activeWeapon         | 2      | int 0..2 (WEAPON_RIFLE ...)            |
//   | pendingWeapon        | 2      | int 0..2                               |
//   | weaponState          | 3      | int 0..4 (WEAPON_IDLE ...)             |
//   | weaponTimeMs         | 12     | int 0..4095 ms                         |
//   | rifleClip/Reserve    | 6 + 8  | int 0..63, int 0..255                  |
//   | shotgunClip/Reserve  | 6 + 8  | int 0..63, int 0..255                  |
//   | launcherClip/Reserve | 6 + 8  | int 0..63, int 0..255                  |
//   +----------------------+--------+----------------------------------------+
//
// What other clients see of a player is the "player" entity type: PLAYER_ENTITY in entities.ts.

import type { BitStream, UserCommand } from 'backstep/protocol';
import type { GameEventSink, PlayerDefinition, TraceResult, Vec3 } from 'backstep/sim';
import {
  ANGLE_BITS,
  CLIP_LIMIT,
  FOOTSTEP_DISTANCE,
  HEALTH_LIMIT,
  ORIGIN_LIMIT,
  ORIGIN_PRECISION,
  RESERVE_LIMIT,
  SPAWN_HEALTH,
  STEP_DISTANCE_PRECISION,
  VELOCITY_LIMIT,
  VELOCITY_PRECISION,
  WEAPON_COUNT,
  WEAPON_STATE_COUNT,
  WEAPON_TIME_LIMIT,
} from './constants.ts';
import { createHitTargets, type HitTarget, MAX_HIT_TARGETS, viewHeight } from './hitboxes.ts';
import type { Level } from './level.ts';
import {
  type MovementState,
  movePlayer,
  quantizeOrigin,
  quantizeViewAngle,
  settlePlayer,
} from './movement.ts';
import { traceLevel } from './trace.ts';
import { giveSpawnLoadout, runWeapons, type WeaponState, type WeaponWorld } from './weapons.ts';

/**
 * The arena player's replicated state: a flat record of numbers and booleans (copied field by
 * field, never allocated per tick): movement, health and weapons.
 */
export interface ArenaPlayerState extends MovementState, WeaponState {
  /** Server-authoritative (shared code never changes it; see damageArenaPlayer); 0 means dead. */
  health: number;
}

/**
 * The names of every field of the state, in wire order (for tests and for the snapshot field
 * tables). A list, not an object keyed by the names: an object literal with the state's keys in
 * the state's order would share the state's hidden classes in V8, and its `true` values would
 * turn every numeric field of every player state into a boxed one (an allocation per store).
 */
export const ARENA_PLAYER_FIELDS = [
  'originX',
  'originY',
  'originZ',
  'velocityX',
  'velocityY',
  'velocityZ',
  'pitch',
  'yaw',
  'roll',
  'onGround',
  'ducked',
  'jumpHeld',
  'stepDistance',
  'health',
  'activeWeapon',
  'pendingWeapon',
  'weaponState',
  'weaponTimeMs',
  'rifleClip',
  'rifleReserve',
  'shotgunClip',
  'shotgunReserve',
  'launcherClip',
  'launcherReserve',
] as const satisfies readonly (keyof ArenaPlayerState)[];

/** Compiles only while ARENA_PLAYER_FIELDS names every field of the state. */
const EVERY_FIELD_LISTED: [Exclude<keyof ArenaPlayerState, (typeof ARENA_PLAYER_FIELDS)[number]>] extends [
  never,
]
  ? true
  : never = true;
void EVERY_FIELD_LISTED;

/**
 * The world the arena's shared code sees: the level, a trace through it, and the players shots
 * can hit (see WeaponWorld: the side running a command fills `targets`, `targetCount` and
 * `ownerSlot` first; movement never looks at them).
 */
export interface ArenaWorld extends WeaponWorld {
  readonly level: Level;
}

/**
 * A world whose trace sweeps boxes through `level`'s brushes, with MAX_HIT_TARGETS preallocated
 * hit targets, none in use, and no owner.
 */
export function createLevelWorld(level: Level): ArenaWorld {
  return {
    level,
    targets: createHitTargets(MAX_HIT_TARGETS),
    targetCount: 0,
    ownerSlot: -1,
    trace(start: Vec3, end: Vec3, mins: Vec3, maxs: Vec3, out: TraceResult): void {
      traceLevel(level, start, end, mins, maxs, out);
    },
  };
}

/**
 * A new state: a live player (SPAWN_HEALTH) at the origin holding the spawn loadout (see
 * giveSpawnLoadout); every movement number zero, every flag false.
 */
export function createArenaPlayerState(): ArenaPlayerState {
  const state: ArenaPlayerState = {
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
    health: SPAWN_HEALTH,
    activeWeapon: 0,
    pendingWeapon: 0,
    weaponState: 0,
    weaponTimeMs: 0,
    rifleClip: 0,
    rifleReserve: 0,
    shotgunClip: 0,
    shotgunReserve: 0,
    launcherClip: 0,
    launcherReserve: 0,
  };
  giveSpawnLoadout(state);
  return state;
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
  out.health = from.health;
  out.activeWeapon = from.activeWeapon;
  out.pendingWeapon = from.pendingWeapon;
  out.weaponState = from.weaponState;
  out.weaponTimeMs = from.weaponTimeMs;
  out.rifleClip = from.rifleClip;
  out.rifleReserve = from.rifleReserve;
  out.shotgunClip = from.shotgunClip;
  out.shotgunReserve = from.shotgunReserve;
  out.launcherClip = from.launcherClip;
  out.launcherReserve = from.launcherReserve;
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
    a.stepDistance === b.stepDistance &&
    a.health === b.health &&
    a.activeWeapon === b.activeWeapon &&
    a.pendingWeapon === b.pendingWeapon &&
    a.weaponState === b.weaponState &&
    a.weaponTimeMs === b.weaponTimeMs &&
    a.rifleClip === b.rifleClip &&
    a.rifleReserve === b.rifleReserve &&
    a.shotgunClip === b.shotgunClip &&
    a.shotgunReserve === b.shotgunReserve &&
    a.launcherClip === b.launcherClip &&
    a.launcherReserve === b.launcherReserve
  );
}

/**
 * The owner's origin, velocity and view angles, and its step distance, while serialize works on
 * them: they go through the stream's `floats` and `angles` in this array, so no fraction is
 * passed to or returned from a call (each would be a heap number for every state written).
 */
const wireScratch = new Float64Array(10);

/**
 * Writes, reads or measures the owner's full state (layout at the top of this file). Reading
 * checks every range and returns false on bad data (`s.error` says why); a failed read leaves
 * `state` partly overwritten, so read into a scratch state.
 */
export function serializeArenaPlayerState(s: BitStream, state: ArenaPlayerState): boolean {
  const v = wireScratch;
  v[0] = state.originX;
  v[1] = state.originY;
  v[2] = state.originZ;
  v[3] = state.velocityX;
  v[4] = state.velocityY;
  v[5] = state.velocityZ;
  v[6] = state.pitch;
  v[7] = state.yaw;
  v[8] = state.roll;
  s.floats(v, 0, 3, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  s.floats(v, 3, 3, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
  s.angles(v, 6, 3, ANGLE_BITS);
  state.originX = v[0];
  state.originY = v[1];
  state.originZ = v[2];
  state.velocityX = v[3];
  state.velocityY = v[4];
  state.velocityZ = v[5];
  state.pitch = v[6];
  state.yaw = v[7];
  state.roll = v[8];
  state.onGround = s.bool(state.onGround);
  state.ducked = s.bool(state.ducked);
  state.jumpHeld = s.bool(state.jumpHeld);
  v[9] = state.stepDistance;
  s.floats(v, 9, 1, 0, FOOTSTEP_DISTANCE, STEP_DISTANCE_PRECISION);
  state.stepDistance = v[9];
  state.health = s.int(state.health, 0, HEALTH_LIMIT);
  state.activeWeapon = s.int(state.activeWeapon, 0, WEAPON_COUNT - 1);
  state.pendingWeapon = s.int(state.pendingWeapon, 0, WEAPON_COUNT - 1);
  state.weaponState = s.int(state.weaponState, 0, WEAPON_STATE_COUNT - 1);
  state.weaponTimeMs = s.int(state.weaponTimeMs, 0, WEAPON_TIME_LIMIT);
  state.rifleClip = s.int(state.rifleClip, 0, CLIP_LIMIT);
  state.rifleReserve = s.int(state.rifleReserve, 0, RESERVE_LIMIT);
  state.shotgunClip = s.int(state.shotgunClip, 0, CLIP_LIMIT);
  state.shotgunReserve = s.int(state.shotgunReserve, 0, RESERVE_LIMIT);
  state.launcherClip = s.int(state.launcherClip, 0, CLIP_LIMIT);
  state.launcherReserve = s.int(state.launcherReserve, 0, RESERVE_LIMIT);
  return s.ok;
}

/** Height of the eyes above the origin (the feet). */
export function eyeHeight(state: ArenaPlayerState): number {
  return viewHeight(state.ducked);
}

/** True while the player is alive (health above 0); a dead player's commands do nothing. */
export function isArenaPlayerAlive(state: ArenaPlayerState): boolean {
  return state.health > 0;
}

/**
 * Takes `amount` whole points of health (the server applying an EVENT_HIT, see hitDamage),
 * never below 0 nor above HEALTH_LIMIT, so the state stays on the wire's grid. Returns true if
 * this killed the player. Throws on an amount that is not a finite number.
 */
export function damageArenaPlayer(state: ArenaPlayerState, amount: number): boolean {
  if (!Number.isFinite(amount)) throw new Error(`damageArenaPlayer: amount ${amount} is not finite`);
  const wasAlive = state.health > 0;
  state.health = Math.max(0, Math.min(HEALTH_LIMIT, Math.round(state.health - amount)));
  return wasAlive && state.health === 0;
}

/**
 * Runs one user command on the arena player: `(state, cmd, world) -> state`. A dead player
 * (health 0) does nothing; a live one moves (movePlayer), then runs its weapons (runWeapons)
 * from where the move left it. Effects go to `events`. Ends with every field quantized exactly as
 * serializeArenaPlayerState writes it. Deterministic and allocation-free.
 */
export function moveArenaPlayer(
  state: ArenaPlayerState,
  cmd: UserCommand,
  world: ArenaWorld,
  events: GameEventSink,
): void {
  if (state.health <= 0) return;
  movePlayer(state, cmd, world, events);
  runWeapons(state, cmd, world, events);
}

/** Spawns are placed this far above the floor, then dropped onto it. */
const SPAWN_LIFT = 1;
const SPAWN_STATE = createArenaPlayerState();

/**
 * Resets `state` (full health, the spawn loadout) and puts the player at spawn point `spawnIndex` of the world's level, standing
 * on the floor, facing the spawn's yaw. Throws if the index is not a spawn of the level or the
 * spawn point is inside solid (a broken level).
 */
export function spawnArenaPlayer(state: ArenaPlayerState, world: ArenaWorld, spawnIndex: number): void {
  const spawns = world.level.spawns;
  if (!Number.isInteger(spawnIndex) || spawnIndex < 0 || spawnIndex >= spawns.length) {
    throw new Error(`spawnArenaPlayer: spawnIndex ${spawnIndex} is not in [0, ${spawns.length - 1}]`);
  }
  const spawn = spawns[spawnIndex];
  copyArenaPlayerState(state, SPAWN_STATE);
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
  move: moveArenaPlayer,
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

/** Fills `out` with the hit pose of the player in `state`, at `slot` (the server, for its history). */
export function writeHitTarget(state: ArenaPlayerState, slot: number, out: HitTarget): HitTarget {
  out.slot = slot;
  out.originX = state.originX;
  out.originY = state.originY;
  out.originZ = state.originZ;
  out.yaw = state.yaw;
  out.pitch = state.pitch;
  out.ducked = state.ducked;
  out.alive = state.health > 0;
  return out;
}
