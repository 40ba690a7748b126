// The level description: every solid is a convex brush (a set of planes), plus spawn points; and the example arena.

import { type Vec3, vec3 } from 'backstep/sim';
import { ORIGIN_LIMIT } from './constants.ts';

/**
 * A convex solid: the points p with `dot(normal, p) < dist` for every plane. The planes include
 * the six axial planes of the brush's bounds (bevel planes), so that sweeping an axis-aligned
 * box against the planes, each pushed out by the box's extent, is exact for boxes and for ramps
 * that rise along x or y.
 */
export interface Brush {
  /** Axis-aligned bounds, for the broad phase. */
  readonly mins: Vec3;
  readonly maxs: Vec3;
  /** Four numbers per plane: the unit normal (x, y, z) pointing out of the solid, then dist. */
  readonly planes: Float64Array;
  readonly planeCount: number;
}

/** Where a player may enter the level: `origin` is the feet position on the floor. */
export interface SpawnPoint {
  readonly origin: Vec3;
  /** Facing, degrees. */
  readonly yaw: number;
}

export interface Level {
  readonly name: string;
  readonly brushes: readonly Brush[];
  readonly spawns: readonly SpawnPoint[];
  /** Bounds of all brushes. */
  readonly mins: Vec3;
  readonly maxs: Vec3;
  /** The traces' broad phase (made by createLevel; without it a trace tests every brush's bounds). */
  readonly grid?: BrushGrid;
}

/** Edge of a broad-phase cell (units): a player's move and box span one to four. */
export const BRUSH_GRID_CELL = 256;

/**
 * The brushes by the square cells of the level's floor plan (x, y) their bounds overlap, for the
 * traces' broad phase: cell (cx, cy) holds `items[starts[c]] .. items[starts[c + 1] - 1]`, c =
 * cy * columns + cx, in increasing brush order. `bounds` holds each brush's bounds flat (mins x,
 * y, z, then maxs), and `seen` is a trace's scratch (a brush in several cells is tested once).
 */
export interface BrushGrid {
  readonly originX: number;
  readonly originY: number;
  readonly columns: number;
  readonly rows: number;
  readonly starts: Int32Array;
  readonly items: Int32Array;
  readonly bounds: Float64Array;
  readonly seen: Uint32Array;
  /** The stamp of the trace being run (`seen[b] === stamp`: tested), counting up per trace. */
  stamp: number;
}

function cellRange(lo: number, hi: number, origin: number, count: number): [number, number] {
  const a = Math.floor((lo - origin) / BRUSH_GRID_CELL);
  const b = Math.floor((hi - origin) / BRUSH_GRID_CELL);
  return [Math.max(0, Math.min(count - 1, a)), Math.max(0, Math.min(count - 1, b))];
}

function createBrushGrid(brushes: readonly Brush[], mins: Vec3, maxs: Vec3): BrushGrid {
  const columns = Math.max(1, Math.ceil((maxs.x - mins.x) / BRUSH_GRID_CELL));
  const rows = Math.max(1, Math.ceil((maxs.y - mins.y) / BRUSH_GRID_CELL));
  const cells = columns * rows;
  const counts = new Int32Array(cells + 1);
  const bounds = new Float64Array(brushes.length * 6);
  const visit = (b: Brush, fn: (c: number) => void) => {
    const [x0, x1] = cellRange(b.mins.x, b.maxs.x, mins.x, columns);
    const [y0, y1] = cellRange(b.mins.y, b.maxs.y, mins.y, rows);
    for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) fn(y * columns + x);
  };
  brushes.forEach((b, i) => {
    bounds.set([b.mins.x, b.mins.y, b.mins.z, b.maxs.x, b.maxs.y, b.maxs.z], i * 6);
    visit(b, (c) => counts[c + 1]++);
  });
  const starts = new Int32Array(cells + 1);
  for (let c = 0; c < cells; c++) starts[c + 1] = starts[c] + counts[c + 1];
  const items = new Int32Array(starts[cells]);
  const fill = starts.slice(0, cells);
  brushes.forEach((b, i) => {
    visit(b, (c) => {
      items[fill[c]++] = i;
    });
  });
  return {
    originX: mins.x,
    originY: mins.y,
    columns,
    rows,
    starts,
    items,
    bounds,
    seen: new Uint32Array(brushes.length),
    stamp: 0,
  };
}

/** Which way a ramp's top rises. */
export type RampRise = '+x' | '-x' | '+y' | '-y';

function checkBounds(what: string, mins: Vec3, maxs: Vec3): void {
  for (const axis of ['x', 'y', 'z'] as const) {
    const lo = mins[axis];
    const hi = maxs[axis];
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi)) {
      throw new Error(`${what}: mins.${axis} (${lo}) must be finite and less than maxs.${axis} (${hi})`);
    }
    if (lo < -ORIGIN_LIMIT || hi > ORIGIN_LIMIT) {
      throw new Error(`${what}: ${axis} range [${lo}, ${hi}] is outside [-${ORIGIN_LIMIT}, ${ORIGIN_LIMIT}]`);
    }
  }
}

function setPlane(
  planes: Float64Array,
  index: number,
  nx: number,
  ny: number,
  nz: number,
  dist: number,
): void {
  const o = index * 4;
  planes[o] = nx;
  planes[o + 1] = ny;
  planes[o + 2] = nz;
  planes[o + 3] = dist;
}

function setAxialPlanes(planes: Float64Array, mins: Vec3, maxs: Vec3): void {
  setPlane(planes, 0, 1, 0, 0, maxs.x);
  setPlane(planes, 1, -1, 0, 0, -mins.x);
  setPlane(planes, 2, 0, 1, 0, maxs.y);
  setPlane(planes, 3, 0, -1, 0, -mins.y);
  setPlane(planes, 4, 0, 0, 1, maxs.z);
  setPlane(planes, 5, 0, 0, -1, -mins.z);
}

/** An axis-aligned box solid. Throws if a bound is not finite, inverted, or outside the origin range. */
export function boxBrush(mins: Vec3, maxs: Vec3): Brush {
  checkBounds('boxBrush', mins, maxs);
  const planes = new Float64Array(6 * 4);
  setAxialPlanes(planes, mins, maxs);
  return { mins: vec3(mins.x, mins.y, mins.z), maxs: vec3(maxs.x, maxs.y, maxs.z), planes, planeCount: 6 };
}

/**
 * A ramp: the wedge inside the box [mins, maxs] whose top slopes from mins.z on its low side up
 * to maxs.z on its high side, rising in the direction `rise`; the high side is a vertical wall.
 * Walkable when its slope is at most about 45 degrees (height <= run).
 */
export function rampBrush(mins: Vec3, maxs: Vec3, rise: RampRise): Brush {
  checkBounds('rampBrush', mins, maxs);
  const alongX = rise === '+x' || rise === '-x';
  if (!alongX && rise !== '+y' && rise !== '-y')
    throw new Error(`rampBrush: rise must be +x, -x, +y or -y, got ${rise}`);
  const sign = rise === '+x' || rise === '+y' ? 1 : -1;
  const height = maxs.z - mins.z;
  const run = alongX ? maxs.x - mins.x : maxs.y - mins.y;
  const len = Math.sqrt(height * height + run * run);
  const nAlong = (-sign * height) / len;
  const nz = run / len;
  const lowAlong = alongX ? (sign > 0 ? mins.x : maxs.x) : sign > 0 ? mins.y : maxs.y;
  const planes = new Float64Array(7 * 4);
  setAxialPlanes(planes, mins, maxs);
  setPlane(planes, 6, alongX ? nAlong : 0, alongX ? 0 : nAlong, nz, nAlong * lowAlong + nz * mins.z);
  return { mins: vec3(mins.x, mins.y, mins.z), maxs: vec3(maxs.x, maxs.y, maxs.z), planes, planeCount: 7 };
}

/** A level from its brushes and spawn points. Throws if there are no brushes or no spawn points. */
export function createLevel(name: string, brushes: readonly Brush[], spawns: readonly SpawnPoint[]): Level {
  if (brushes.length === 0) throw new Error(`createLevel(${name}): brushes is empty`);
  if (spawns.length === 0) throw new Error(`createLevel(${name}): spawns is empty`);
  const mins = vec3(ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_LIMIT);
  const maxs = vec3(-ORIGIN_LIMIT, -ORIGIN_LIMIT, -ORIGIN_LIMIT);
  for (const b of brushes) {
    mins.x = Math.min(mins.x, b.mins.x);
    mins.y = Math.min(mins.y, b.mins.y);
    mins.z = Math.min(mins.z, b.mins.z);
    maxs.x = Math.max(maxs.x, b.maxs.x);
    maxs.y = Math.max(maxs.y, b.maxs.y);
    maxs.z = Math.max(maxs.z, b.maxs.z);
  }
  spawns.forEach((s, i) => {
    const o = s.origin;
    if (!(Math.abs(o.x) < ORIGIN_LIMIT && Math.abs(o.y) < ORIGIN_LIMIT && Math.abs(o.z) < ORIGIN_LIMIT)) {
      throw new Error(
        `createLevel(${name}): spawns[${i}].origin (${o.x}, ${o.y}, ${o.z}) is outside the origin range`,
      );
    }
    if (!Number.isFinite(s.yaw))
      throw new Error(`createLevel(${name}): spawns[${i}].yaw (${s.yaw}) is not finite`);
  });
  return { name, brushes, spawns, mins, maxs, grid: createBrushGrid(brushes, mins, maxs) };
}

function box(x0: number, y0: number, z0: number, x1: number, y1: number, z1: number): Brush {
  return boxBrush(vec3(x0, y0, z0), vec3(x1, y1, z1));
}

function stairs(x0: number, y0: number, y1: number, steps: number, depth: number, rise: number): Brush[] {
  const out: Brush[] = [];
  for (let i = 0; i < steps; i++)
    out.push(box(x0 + depth * i, y0, 0, x0 + depth * (i + 1), y1, rise * (i + 1)));
  return out;
}

/**
 * The example arena: a 2016 x 2016 floor inside walls 256 high; crates for cover (one stacked);
 * a staircase of six 16-unit steps up to a raised platform 96 high, which a ramp also reaches;
 * and a low overhang (bottom 40 above the floor) that only a crouched player fits under.
 */
export const ARENA_LEVEL: Level = createLevel(
  'arena',
  [
    box(-1024, -1024, -32, 1024, 1024, 0),
    box(-1024, -1024, 0, -1008, 1024, 256),
    box(1008, -1024, 0, 1024, 1024, 256),
    box(-1008, -1024, 0, 1008, -1008, 256),
    box(-1008, 1008, 0, 1008, 1024, 256),
    box(160, 160, 0, 224, 224, 64),
    box(176, 176, 64, 208, 208, 96),
    box(224, 160, 0, 272, 208, 48),
    box(-320, 200, 0, -256, 264, 48),
    box(420, -360, 0, 484, -296, 64),
    ...stairs(-640, -600, -472, 6, 32, 16),
    box(-448, -600, 0, -192, -344, 96),
    rampBrush(vec3(-384, -344, 0), vec3(-256, -56, 96), '-y'),
    box(320, 320, 40, 512, 512, 56),
  ],
  [
    { origin: vec3(0, 0, 0), yaw: 0 },
    { origin: vec3(700, 700, 0), yaw: 225 },
    { origin: vec3(-800, 800, 0), yaw: 315 },
    { origin: vec3(800, -800, 0), yaw: 135 },
    { origin: vec3(0, -800, 0), yaw: 90 },
    { origin: vec3(-320, -472, 96), yaw: 90 },
  ],
);
