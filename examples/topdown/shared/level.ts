// The level: walls as axis-aligned boxes on the plane, and the two questions shared code asks of
// them: where a moving circle ends up (it slides along walls) and how far a ray gets.

import { clamp } from 'backstep/sim';
import { PLAYER_RADIUS, WORLD_LIMIT } from './constants.ts';

/** A wall: the box [minX, maxX] x [minY, maxY]. */
export interface Wall {
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
}

const EDGE = WORLD_LIMIT - 64;
const THICK = 32;

/** The room's four sides and a few pillars to hide behind. */
export const WALLS: readonly Wall[] = [
  { minX: -EDGE - THICK, minY: -EDGE - THICK, maxX: EDGE + THICK, maxY: -EDGE },
  { minX: -EDGE - THICK, minY: EDGE, maxX: EDGE + THICK, maxY: EDGE + THICK },
  { minX: -EDGE - THICK, minY: -EDGE, maxX: -EDGE, maxY: EDGE },
  { minX: EDGE, minY: -EDGE, maxX: EDGE + THICK, maxY: EDGE },
  { minX: -60, minY: -60, maxX: 60, maxY: 60 },
  { minX: -560, minY: 300, maxX: -440, maxY: 340 },
  { minX: 440, minY: -340, maxX: 560, maxY: -300 },
];

/** Spawn points, on a ring clear of every wall; player slot i starts at point i modulo their count. */
export const SPAWNS: readonly { readonly x: number; readonly y: number }[] = [
  { x: -320, y: 0 },
  { x: 320, y: 0 },
  { x: 0, y: -320 },
  { x: 0, y: 320 },
  { x: -240, y: -240 },
  { x: 240, y: 240 },
  { x: 240, y: -240 },
  { x: -240, y: 240 },
];

/**
 * Pushes a circle of PLAYER_RADIUS centred at `p` out of every wall it overlaps (out of the
 * nearest side when its centre is inside one), twice over so corners settle. Exact arithmetic
 * and sqrt only: the same result on every engine.
 */
export function pushOutOfWalls(walls: readonly Wall[], p: { x: number; y: number }): void {
  const r = PLAYER_RADIUS;
  for (let pass = 0; pass < 2; pass++) {
    for (const w of walls) {
      const cx = clamp(p.x, w.minX, w.maxX);
      const cy = clamp(p.y, w.minY, w.maxY);
      const dx = p.x - cx;
      const dy = p.y - cy;
      const d2 = dx * dx + dy * dy;
      if (d2 >= r * r) continue;
      if (d2 > 0) {
        const d = Math.sqrt(d2);
        p.x = cx + (dx / d) * r;
        p.y = cy + (dy / d) * r;
        continue;
      }
      // The centre is inside the box: out through the nearest side.
      const left = p.x - w.minX;
      const right = w.maxX - p.x;
      const down = p.y - w.minY;
      const up = w.maxY - p.y;
      const least = Math.min(left, right, down, up);
      if (least === left) p.x = w.minX - r;
      else if (least === right) p.x = w.maxX + r;
      else if (least === down) p.y = w.minY - r;
      else p.y = w.maxY + r;
    }
  }
}

/**
 * How far along the ray from (ox, oy) in direction (dx, dy) (a unit vector) the first wall is,
 * up to `range` (range itself when none is nearer). The slab test.
 */
export function rayToWalls(
  walls: readonly Wall[],
  ox: number,
  oy: number,
  dx: number,
  dy: number,
  range: number,
): number {
  let best = range;
  for (const w of walls) {
    let t0 = 0;
    let t1 = best;
    if (dx === 0) {
      if (ox < w.minX || ox > w.maxX) continue;
    } else {
      let a = (w.minX - ox) / dx;
      let b = (w.maxX - ox) / dx;
      if (a > b) [a, b] = [b, a];
      if (a > t0) t0 = a;
      if (b < t1) t1 = b;
    }
    if (dy === 0) {
      if (oy < w.minY || oy > w.maxY) continue;
    } else {
      let a = (w.minY - oy) / dy;
      let b = (w.maxY - oy) / dy;
      if (a > b) [a, b] = [b, a];
      if (a > t0) t0 = a;
      if (b < t1) t1 = b;
    }
    if (t0 <= t1 && t0 < best) best = t0;
  }
  return best;
}

/**
 * Where the ray from (ox, oy) along the unit vector (dx, dy) first meets the circle of
 * PLAYER_RADIUS centred at (cx, cy): its distance, or -1 when it misses (or starts inside).
 */
export function rayToCircle(ox: number, oy: number, dx: number, dy: number, cx: number, cy: number): number {
  const fx = ox - cx;
  const fy = oy - cy;
  const b = fx * dx + fy * dy;
  const c = fx * fx + fy * fy - PLAYER_RADIUS * PLAYER_RADIUS;
  if (c <= 0) return -1;
  const disc = b * b - c;
  if (disc < 0) return -1;
  const t = -b - Math.sqrt(disc);
  return t >= 0 ? t : -1;
}
