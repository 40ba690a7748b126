// Tests of the arena's hitboxes: box layout and crouching, the ray test (nearest, ties, dead, ignored, ranges), hit poses and the player entity type.

import { describe, expect, it } from 'vitest';
import {
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_DUCK_HEIGHT,
  PLAYER_HALF_WIDTH,
  PLAYER_STAND_EYE_HEIGHT,
  PLAYER_STAND_HEIGHT,
} from '../../../games/arena/shared/constants.ts';
import {
  ARENA_SCHEMA,
  arenaHitscan,
  PLAYER_ENTITY,
  targetFromEntity,
  writePlayerEntity,
} from '../../../games/arena/shared/entities.ts';
import {
  copyHitTarget,
  createHitTarget,
  createHitTargets,
  createRayHit,
  HITBOX_BODY,
  HITBOX_COUNT,
  HITBOX_HEAD,
  HITBOX_LEGS,
  type HitTarget,
  hitboxBounds,
  MAX_HIT_TARGETS,
  rayVsTargets,
  targetBounds,
  viewHeight,
} from '../../../games/arena/shared/hitboxes.ts';
import { ARENA_LEVEL } from '../../../games/arena/shared/level.ts';
import {
  arenaPlayer,
  createLevelWorld,
  eyeHeight,
  writeHitTarget,
} from '../../../games/arena/shared/player.ts';
import { decodeNumber, encodeField } from '../../../src/protocol/schema.ts';
import { type Vec3, vec3 } from '../../../src/sim/math.ts';
import { Random } from '../../../src/sim/random.ts';

function target(slot: number, x: number, y: number, z: number, ducked = false, alive = true): HitTarget {
  const t = createHitTarget();
  t.slot = slot;
  t.originX = x;
  t.originY = y;
  t.originZ = z;
  t.ducked = ducked;
  t.alive = alive;
  return t;
}

/** A ray along +x from (x, y, z). */
function alongX(x: number, y: number, z: number): [Vec3, Vec3] {
  return [vec3(x, y, z), vec3(1, 0, 0)];
}

const hit = createRayHit();

function cast(start: Vec3, dir: Vec3, targets: HitTarget[], max = 10000, ignore = -1): boolean {
  return rayVsTargets(start, dir, max, targets, targets.length, ignore, hit);
}

function boxOf(ducked: boolean, box: number): [Vec3, Vec3] {
  const mins = vec3();
  const maxs = vec3();
  hitboxBounds(ducked, box, mins, maxs);
  return [mins, maxs];
}

describe('box layout', () => {
  it('boxes lie inside the hull, do not overlap, and the head surrounds the eyes in both poses', () => {
    for (const ducked of [false, true]) {
      const height = ducked ? PLAYER_DUCK_HEIGHT : PLAYER_STAND_HEIGHT;
      const boxes = [HITBOX_HEAD, HITBOX_BODY, HITBOX_LEGS].map((b) => boxOf(ducked, b));
      for (const [mins, maxs] of boxes) {
        expect(mins.x, `ducked ${ducked}`).toBeGreaterThanOrEqual(-PLAYER_HALF_WIDTH);
        expect(maxs.y, `ducked ${ducked}`).toBeLessThanOrEqual(PLAYER_HALF_WIDTH);
        expect(mins.z, `ducked ${ducked}`).toBeGreaterThanOrEqual(0);
        expect(maxs.z, `ducked ${ducked}`).toBeLessThanOrEqual(height);
      }
      // Stacked: legs from the feet, body on the legs, head on the body up to the top of the hull.
      expect(boxes[2][0].z).toBe(0);
      expect(boxes[1][0].z).toBe(boxes[2][1].z);
      expect(boxes[0][0].z).toBe(boxes[1][1].z);
      expect(boxes[0][1].z).toBe(height);
      const eye = viewHeight(ducked);
      expect(eye).toBe(ducked ? PLAYER_DUCK_EYE_HEIGHT : PLAYER_STAND_EYE_HEIGHT);
      expect(eye > boxes[0][0].z && eye < boxes[0][1].z, `ducked ${ducked}`).toBe(true);
    }
    // The head drops with the eyes.
    expect(boxOf(false, HITBOX_HEAD)[0].z - boxOf(true, HITBOX_HEAD)[0].z).toBe(
      PLAYER_STAND_EYE_HEIGHT - PLAYER_DUCK_EYE_HEIGHT,
    );
    const p = arenaPlayer.create();
    p.ducked = true;
    expect(eyeHeight(p)).toBe(PLAYER_DUCK_EYE_HEIGHT);
    expect(() => hitboxBounds(false, HITBOX_COUNT, vec3(), vec3())).toThrow(/box 3 is not in \[0, 2\]/);
  });

  it('targetBounds holds every box of the pose, at the target', () => {
    for (const ducked of [false, true]) {
      const t = target(1, 100, -50, 8, ducked);
      const mins = vec3();
      const maxs = vec3();
      targetBounds(t, mins, maxs);
      expect(mins.z).toBe(8);
      expect(maxs.z).toBe(8 + (ducked ? PLAYER_DUCK_HEIGHT : PLAYER_STAND_HEIGHT));
      for (let b = 0; b < HITBOX_COUNT; b++) {
        const [bmin, bmax] = boxOf(ducked, b);
        expect(bmin.x + 100 >= mins.x && bmax.x + 100 <= maxs.x, `ducked ${ducked} box ${b}`).toBe(true);
        expect(bmin.y - 50 >= mins.y && bmax.y - 50 <= maxs.y, `ducked ${ducked} box ${b}`).toBe(true);
      }
    }
  });
});

describe('rayVsTargets', () => {
  it('tells the head from the body and the legs, and a crouched head is lower', () => {
    const standing = [target(1, 200, 0, 0)];
    const crouched = [target(1, 200, 0, 0, true)];
    for (const [z, box] of [
      [64, HITBOX_HEAD],
      [40, HITBOX_BODY],
      [10, HITBOX_LEGS],
    ]) {
      expect(cast(...alongX(0, 0, z), standing), `z ${z}`).toBe(true);
      expect(hit.box, `z ${z}`).toBe(box);
    }
    expect(cast(...alongX(0, 0, 64), crouched)).toBe(false);
    expect(cast(...alongX(0, 0, 28), crouched)).toBe(true);
    expect(hit.box).toBe(HITBOX_HEAD);
    expect(cast(...alongX(0, 0, 28), standing)).toBe(true);
    expect(hit.box).toBe(HITBOX_LEGS);
    // Beside the head, at head height: nothing (the head is narrower than the body).
    expect(cast(...alongX(0, 10, 64), standing)).toBe(false);
  });

  it('reports the exact entry distance and point, slot and index', () => {
    const targets = [target(9, 300, 0, 0), target(4, 200, 0, 0)];
    expect(cast(...alongX(0, 0, 40), targets)).toBe(true);
    expect([hit.slot, hit.box, hit.targetIndex, hit.distance]).toEqual([4, HITBOX_BODY, 1, 187]);
    expect(hit.point).toEqual({ x: 187, y: 0, z: 40 });
    // A ray running along x = 0 down onto the top of a head.
    expect(rayVsTargets(vec3(0, 0, 500), vec3(0, 0, -1), 1000, [target(2, 0, 0, 0)], 1, -1, hit)).toBe(true);
    expect([hit.box, hit.distance]).toEqual([HITBOX_HEAD, 500 - PLAYER_STAND_HEIGHT]);
  });

  it('the nearest target wins, whatever the order of the list; exact ties go to the lower slot', () => {
    const a = target(7, 200, 0, 0);
    const b = target(3, 260, 0, 0);
    for (const list of [
      [a, b],
      [b, a],
    ]) {
      expect(cast(...alongX(0, 0, 40), list)).toBe(true);
      expect(hit.slot).toBe(7);
    }
    // Two players in the same place: the lower slot, whichever comes first.
    const c = target(5, 200, 0, 0);
    for (const list of [
      [a, c],
      [c, a],
    ]) {
      expect(cast(...alongX(0, 0, 40), list)).toBe(true);
      expect(hit.slot).toBe(5);
    }
  });

  it('skips dead targets, the ignored slot and entries past count; stops at maxDistance', () => {
    const near = target(1, 200, 0, 0);
    const far = target(2, 400, 0, 0);
    const [s, d] = alongX(0, 0, 40);
    near.alive = false;
    expect(cast(s, d, [near, far])).toBe(true);
    expect(hit.slot).toBe(2);
    near.alive = true;
    expect(cast(s, d, [near, far], 10000, 1)).toBe(true);
    expect(hit.slot).toBe(2);
    expect(rayVsTargets(s, d, 10000, [far, near], 1, 2, hit)).toBe(false);
    expect(cast(s, d, [near], 186)).toBe(false);
    expect(cast(s, d, [near], 187)).toBe(true);
    for (const bad of [-1, Number.NaN]) expect(cast(s, d, [near], bad), `max ${bad}`).toBe(false);
    expect(rayVsTargets(s, d, 1000, [near], 5, -1, hit)).toBe(true);
  });

  it('a ray starting inside a box hits it at distance 0; one pointing away from everything misses', () => {
    const t = [target(1, 0, 0, 0)];
    expect(cast(vec3(0, 0, 40), vec3(1, 0, 0), t)).toBe(true);
    expect([hit.box, hit.distance]).toEqual([HITBOX_BODY, 0]);
    expect(cast(vec3(-100, 0, 40), vec3(-1, 0, 0), t)).toBe(false);
    // Parallel to a face, just outside it: a miss; on it: a hit.
    expect(cast(vec3(-100, 13.001, 40), vec3(1, 0, 0), t)).toBe(false);
    expect(cast(vec3(-100, 13, 40), vec3(1, 0, 0), t)).toBe(true);
  });

  it('a ray aimed at any point of any box hits that player no later than the point, the same for any order', () => {
    const seed = 6060;
    const rng = new Random(seed);
    const mins = vec3();
    const maxs = vec3();
    const dir = vec3();
    const other = createRayHit();
    for (let i = 0; i < 3000; i++) {
      const count = rng.int(1, 8);
      const targets: HitTarget[] = [];
      for (let t = 0; t < count; t++) {
        targets.push(target(rng.int(0, 63), rng.range(-500, 500), rng.range(-500, 500), rng.range(-50, 50)));
        targets[t].ducked = rng.chance(0.4);
      }
      const aim = targets[rng.int(0, count - 1)];
      const box = rng.int(0, HITBOX_COUNT - 1);
      hitboxBounds(aim.ducked, box, mins, maxs);
      const px = aim.originX + rng.range(mins.x, maxs.x);
      const py = aim.originY + rng.range(mins.y, maxs.y);
      const pz = aim.originZ + rng.range(mins.z, maxs.z);
      const start = vec3(rng.range(-1000, 1000), rng.range(-1000, 1000), rng.range(-200, 300));
      dir.x = px - start.x;
      dir.y = py - start.y;
      dir.z = pz - start.z;
      const len = Math.sqrt(dir.x * dir.x + dir.y * dir.y + dir.z * dir.z);
      dir.x /= len;
      dir.y /= len;
      dir.z /= len;
      const msg = `seed ${seed} case ${i}`;
      expect(rayVsTargets(start, dir, 5000, targets, count, -1, hit), msg).toBe(true);
      expect(hit.distance, msg).toBeLessThanOrEqual(len + 1e-9);
      // The hit point lies on (or in) the box reported.
      const t = targets[hit.targetIndex];
      hitboxBounds(t.ducked, hit.box, mins, maxs);
      expect(hit.point.x - t.originX, msg).toBeGreaterThanOrEqual(mins.x - 1e-9);
      expect(hit.point.x - t.originX, msg).toBeLessThanOrEqual(maxs.x + 1e-9);
      expect(hit.point.z - t.originZ, msg).toBeGreaterThanOrEqual(mins.z - 1e-9);
      expect(hit.point.z - t.originZ, msg).toBeLessThanOrEqual(maxs.z + 1e-9);
      const reversed = [...targets].reverse();
      expect(rayVsTargets(start, dir, 5000, reversed, count, -1, other), msg).toBe(true);
      expect([other.slot, other.box, other.distance], msg).toEqual([hit.slot, hit.box, hit.distance]);
    }
  });
});

describe('hit poses and the player entity', () => {
  it('the world holds a target for every entity slot, none in use, and no owner; never fewer than given', () => {
    const world = createLevelWorld(ARENA_LEVEL);
    expect(world.targets.length).toBe(MAX_HIT_TARGETS);
    // Every entity a view can draw fits: none is ever left out of a hit test.
    expect(MAX_HIT_TARGETS).toBe(ARENA_SCHEMA.maxEntities);
    const ids = Int32Array.from({ length: MAX_HIT_TARGETS + 1 }, (_, i) => i);
    const values = new Float64Array((MAX_HIT_TARGETS + 1) * ARENA_SCHEMA.stride);
    arenaHitscan.setTargets(world, -1, MAX_HIT_TARGETS, ids, values, ARENA_SCHEMA.stride);
    expect(world.targetCount).toBe(MAX_HIT_TARGETS);
    expect(() =>
      arenaHitscan.setTargets(world, -1, MAX_HIT_TARGETS + 1, ids, values, ARENA_SCHEMA.stride),
    ).toThrow(/1025 targets, the world holds 1024/);
    arenaHitscan.setTargets(world, -1, 0, ids, values, ARENA_SCHEMA.stride);
    expect(world.targetCount).toBe(0);
    expect(world.ownerSlot).toBe(-1);
    expect(createHitTargets(3).length).toBe(3);
    expect(() => createHitTargets(-1)).toThrow(/capacity -1/);
    const a = target(3, 1, 2, 3, true);
    const b = createHitTarget();
    copyHitTarget(b, a);
    expect(b).toEqual(a);
  });

  it('a player state, its entity and the hit pose a client rebuilds from the entity agree', () => {
    const seed = 1234;
    const rng = new Random(seed);
    const fields = new Float64Array(PLAYER_ENTITY.fieldCount);
    const received = new Float64Array(PLAYER_ENTITY.fieldCount);
    for (let i = 0; i < 200; i++) {
      const p = arenaPlayer.create();
      p.originX = rng.int(-4096 * 32, 4096 * 32) / 32;
      p.originY = rng.int(-4096 * 32, 4096 * 32) / 32;
      p.originZ = rng.int(-100 * 32, 400 * 32) / 32;
      p.yaw = (rng.int(0, 65535) * 360) / 65536;
      p.pitch = (rng.int(0, 65535) * 360) / 65536;
      p.ducked = rng.chance(0.5);
      p.health = rng.chance(0.2) ? 0 : rng.int(1, 100);
      p.activeWeapon = rng.int(0, 2);
      const msg = `seed ${seed} case ${i}`;
      const fromState = writeHitTarget(p, 7, createHitTarget());
      writePlayerEntity(p, fields);
      // Through the snapshot's stored integers and back: nothing is lost.
      for (let f = 0; f < PLAYER_ENTITY.fieldCount; f++) {
        received[f] = decodeNumber(PLAYER_ENTITY, f, encodeField(PLAYER_ENTITY, f, fields[f]));
      }
      expect(Array.from(received), msg).toEqual(Array.from(fields));
      expect(targetFromEntity(received, 0, 7, createHitTarget()), msg).toEqual(fromState);
      expect(fromState.alive, msg).toBe(p.health > 0);
      expect(received[PLAYER_ENTITY.fieldNames.indexOf('weapon')], msg).toBe(p.activeWeapon);
    }
    expect(PLAYER_ENTITY.name).toBe('player');
    expect(PLAYER_ENTITY.valueBits).toBe(93);
    expect(PLAYER_ENTITY.positionFields).toEqual([0, 1, 4]);
    expect(PLAYER_ENTITY.interpFields.map((f) => `${f.name}:${f.kind}`)).toEqual([
      'x:linear',
      'y:linear',
      'yaw:angle',
      'pitch:angle',
      'z:linear',
      'ducked:step',
      'weapon:step',
      'alive:step',
    ]);
  });
});
