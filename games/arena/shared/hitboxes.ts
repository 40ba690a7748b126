// The arena player's hitboxes: the pose a hit test depends on, the boxes of a pose, and the ray test against them.
//
// Boxes are axis-aligned and relative to the origin (the centre of the feet); they ignore yaw and
// pitch (Quake style) and follow crouching, the head dropping with the eyes. They lie inside the
// player's hull and do not overlap (neighbours share a face):
//
//   +------+---------------------------+---------------------------+
//   | box  | standing (x, y; z)        | crouched (x, y; z)        |
//   +------+---------------------------+---------------------------+
//   | HEAD | +-6, +-6; 58 .. 72        | +-6, +-6; 22 .. 36        |
//   | BODY | +-13, +-13; 30 .. 58      | +-13, +-13; 12 .. 22      |
//   | LEGS | +-12, +-12; 0 .. 30       | +-14, +-14; 0 .. 12       |
//   +------+---------------------------+---------------------------+

import type { Vec3 } from 'backstep/sim';
import { vec3 } from 'backstep/sim';
import {
  ARENA_MAX_ENTITIES,
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_DUCK_HEIGHT,
  PLAYER_STAND_EYE_HEIGHT,
  PLAYER_STAND_HEIGHT,
} from './constants.ts';

export const HITBOX_HEAD = 0;
export const HITBOX_BODY = 1;
export const HITBOX_LEGS = 2;
export const HITBOX_COUNT = 3;

/**
 * How many hit targets a world holds: every entity slot of the arena, so that no view is ever
 * cut short. A smaller table would drop some of the players a view drew, and the shooter's
 * client and the server's rewind, listing them in different orders, would drop different ones
 * and name different targets.
 */
export const MAX_HIT_TARGETS = ARENA_MAX_ENTITIES;

/**
 * The pose of one player as a hit test sees it (a flat record, copied field by field): the
 * client fills it from the remote player as it drew it, the server from its lag-compensated
 * history. `yaw` and `pitch` are carried for completeness; the boxes do not turn with them.
 */
export interface HitTarget {
  /** The player's entity index (reported by a hit). */
  slot: number;
  originX: number;
  originY: number;
  originZ: number;
  yaw: number;
  pitch: number;
  ducked: boolean;
  /** Dead players are never hit. */
  alive: boolean;
}

/** The nearest hit a ray test found. */
export interface RayHit {
  /** The entity index of the player hit. */
  slot: number;
  /** Which of the player's boxes (HITBOX_HEAD, HITBOX_BODY, HITBOX_LEGS). */
  box: number;
  /** Index of the target in the array passed in. */
  targetIndex: number;
  /** Distance along the ray (in units of the direction's length) where it enters the box; 0 if it starts inside. */
  distance: number;
  /** start + dir * distance. */
  point: Vec3;
}

export function createHitTarget(): HitTarget {
  return { slot: -1, originX: 0, originY: 0, originZ: 0, yaw: 0, pitch: 0, ducked: false, alive: false };
}

/** `capacity` fresh targets (allocate once, reuse). */
export function createHitTargets(capacity: number): HitTarget[] {
  if (!Number.isInteger(capacity) || capacity < 0) {
    throw new Error(`createHitTargets: capacity ${capacity} is not a non-negative integer`);
  }
  const targets: HitTarget[] = [];
  for (let i = 0; i < capacity; i++) targets.push(createHitTarget());
  return targets;
}

export function copyHitTarget(out: HitTarget, from: HitTarget): void {
  out.slot = from.slot;
  out.originX = from.originX;
  out.originY = from.originY;
  out.originZ = from.originZ;
  out.yaw = from.yaw;
  out.pitch = from.pitch;
  out.ducked = from.ducked;
  out.alive = from.alive;
}

export function createRayHit(): RayHit {
  return { slot: -1, box: -1, targetIndex: -1, distance: 0, point: vec3() };
}

/** Height of the eyes above the origin (the feet): where shots start and around which the head box sits. */
export function viewHeight(ducked: boolean): number {
  return ducked ? PLAYER_DUCK_EYE_HEIGHT : PLAYER_STAND_EYE_HEIGHT;
}

const HEAD_HALF_WIDTH = 6;
const HEAD_BELOW_EYE = 6;

/** Boxes per pose, box id order, six numbers each: minX, minY, minZ, maxX, maxY, maxZ. */
const STAND_BOXES: readonly number[] = [
  -HEAD_HALF_WIDTH,
  -HEAD_HALF_WIDTH,
  PLAYER_STAND_EYE_HEIGHT - HEAD_BELOW_EYE,
  HEAD_HALF_WIDTH,
  HEAD_HALF_WIDTH,
  PLAYER_STAND_HEIGHT,
  -13,
  -13,
  30,
  13,
  13,
  PLAYER_STAND_EYE_HEIGHT - HEAD_BELOW_EYE,
  -12,
  -12,
  0,
  12,
  12,
  30,
];
const DUCK_BOXES: readonly number[] = [
  -HEAD_HALF_WIDTH,
  -HEAD_HALF_WIDTH,
  PLAYER_DUCK_EYE_HEIGHT - HEAD_BELOW_EYE,
  HEAD_HALF_WIDTH,
  HEAD_HALF_WIDTH,
  PLAYER_DUCK_HEIGHT,
  -13,
  -13,
  12,
  13,
  13,
  PLAYER_DUCK_EYE_HEIGHT - HEAD_BELOW_EYE,
  -14,
  -14,
  0,
  14,
  14,
  12,
];

/** The union of a pose's boxes, six numbers like a box. */
function unionOf(boxes: readonly number[]): readonly number[] {
  const u = [boxes[0], boxes[1], boxes[2], boxes[3], boxes[4], boxes[5]];
  for (let b = 1; b < HITBOX_COUNT; b++) {
    for (let k = 0; k < 3; k++) {
      u[k] = Math.min(u[k], boxes[b * 6 + k]);
      u[k + 3] = Math.max(u[k + 3], boxes[b * 6 + k + 3]);
    }
  }
  return u;
}

const STAND_BOUNDS = unionOf(STAND_BOXES);
const DUCK_BOUNDS = unionOf(DUCK_BOXES);

/**
 * Writes box `box` (HITBOX_HEAD, HITBOX_BODY or HITBOX_LEGS) of a standing or crouched player,
 * relative to the origin, into `outMins` and `outMaxs`. Throws on a box id out of range.
 */
export function hitboxBounds(ducked: boolean, box: number, outMins: Vec3, outMaxs: Vec3): void {
  if (!Number.isInteger(box) || box < 0 || box >= HITBOX_COUNT) {
    throw new Error(`hitboxBounds: box ${box} is not in [0, ${HITBOX_COUNT - 1}]`);
  }
  const b = ducked ? DUCK_BOXES : STAND_BOXES;
  const o = box * 6;
  outMins.x = b[o];
  outMins.y = b[o + 1];
  outMins.z = b[o + 2];
  outMaxs.x = b[o + 3];
  outMaxs.y = b[o + 4];
  outMaxs.z = b[o + 5];
}

/** World-space bounds of all of `target`'s boxes (for a broad phase), into `outMins` and `outMaxs`. */
export function targetBounds(target: HitTarget, outMins: Vec3, outMaxs: Vec3): void {
  const u = target.ducked ? DUCK_BOUNDS : STAND_BOUNDS;
  outMins.x = target.originX + u[0];
  outMins.y = target.originY + u[1];
  outMins.z = target.originZ + u[2];
  outMaxs.x = target.originX + u[3];
  outMaxs.y = target.originY + u[4];
  outMaxs.z = target.originZ + u[5];
}

/** The entry of the last slab test (scratch). */
let slabEnter = 0;

/**
 * Slab test of the ray against the box `b[o .. o + 5]` offset by (x, y, z): true when the ray
 * meets it within [0, maxT], leaving the entry distance (0 when it starts inside) in slabEnter.
 * A direction component of 0 never divides: the ray is then inside that slab or misses.
 */
function slab(
  start: Vec3,
  dir: Vec3,
  maxT: number,
  b: readonly number[],
  o: number,
  x: number,
  y: number,
  z: number,
): boolean {
  let enter = 0;
  let leave = maxT;
  for (let axis = 0; axis < 3; axis++) {
    const s = axis === 0 ? start.x : axis === 1 ? start.y : start.z;
    const d = axis === 0 ? dir.x : axis === 1 ? dir.y : dir.z;
    const offset = axis === 0 ? x : axis === 1 ? y : z;
    const lo = offset + b[o + axis];
    const hi = offset + b[o + axis + 3];
    if (d === 0) {
      if (s < lo || s > hi) return false;
      continue;
    }
    let t0 = (lo - s) / d;
    let t1 = (hi - s) / d;
    if (t0 > t1) {
      const t = t0;
      t0 = t1;
      t1 = t;
    }
    if (t0 > enter) enter = t0;
    if (t1 < leave) leave = t1;
    if (enter > leave) return false;
  }
  slabEnter = enter;
  return true;
}

/**
 * Casts the ray start + t * dir, 0 <= t <= maxDistance, against the boxes of the first `count`
 * targets, skipping dead ones and those whose slot is `ignoreSlot`, and fills `out` with the
 * nearest box it enters (a ray starting inside a box hits it at distance 0). Ties go to the lower
 * slot, then the lower box id, so the answer does not depend on the order of `targets`. With a
 * unit `dir` distances are in world units. Returns false (leaving `out` alone) when nothing is
 * hit or maxDistance is negative or NaN. Deterministic (IEEE-exact arithmetic only) and allocation-free.
 */
export function rayVsTargets(
  start: Vec3,
  dir: Vec3,
  maxDistance: number,
  targets: readonly HitTarget[],
  count: number,
  ignoreSlot: number,
  out: RayHit,
): boolean {
  if (!(maxDistance >= 0)) return false;
  const n = Math.min(count, targets.length);
  let best = maxDistance;
  let bestIndex = -1;
  let bestSlot = -1;
  let bestBox = -1;
  for (let i = 0; i < n; i++) {
    const t = targets[i];
    if (!t.alive || t.slot === ignoreSlot) continue;
    const x = t.originX;
    const y = t.originY;
    const z = t.originZ;
    if (!slab(start, dir, best, t.ducked ? DUCK_BOUNDS : STAND_BOUNDS, 0, x, y, z)) continue;
    const boxes = t.ducked ? DUCK_BOXES : STAND_BOXES;
    for (let box = 0; box < HITBOX_COUNT; box++) {
      if (!slab(start, dir, best, boxes, box * 6, x, y, z)) continue;
      const d = slabEnter;
      const nearer =
        bestIndex < 0 ||
        d < best ||
        (d === best && (t.slot < bestSlot || (t.slot === bestSlot && box < bestBox)));
      if (!nearer) continue;
      best = d;
      bestIndex = i;
      bestSlot = t.slot;
      bestBox = box;
    }
  }
  if (bestIndex < 0) return false;
  out.slot = bestSlot;
  out.box = bestBox;
  out.targetIndex = bestIndex;
  out.distance = best;
  out.point.x = start.x + dir.x * best;
  out.point.y = start.y + dir.y * best;
  out.point.z = start.z + dir.z * best;
  return true;
}
