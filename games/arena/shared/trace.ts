// Box sweep against a level's convex brushes (a Quake-style trace): the collision query shared movement uses.

import type { TraceResult } from 'backstep/sim';
import { type Vec3, vec3 } from 'backstep/sim';
import { BRUSH_GRID_CELL, type Brush, type BrushGrid, type Level } from './level.ts';

/**
 * A trace that hits a plane stops this far from it (measured along the plane's normal), and a
 * box this close to a plane cannot move closer to it. Four times the origin quantum (1/32), so an
 * origin rounded to the wire grid after a hit is still clear of the surface.
 */
export const TRACE_EPSILON = 1 / 8;

/** Slack around the swept box for the bounds test of the broad phase. */
const BROAD_PHASE_PAD = 1;

/** A trace result to fill (allocate once, reuse). */
export function createTraceResult(): TraceResult {
  return { fraction: 1, endPos: vec3(), normal: vec3(), startSolid: false, allSolid: false };
}

/**
 * The box the current trace sweeps through (x0, y0, z0, x1, y1, z1, padded; scratch, set per
 * trace). The broad phase reads it here rather than as arguments: a number passed to a function
 * V8 does not inline is boxed on the heap, six allocations a trace.
 */
const box = new Float64Array(6);

/** The brush and plane that set the current trace's fraction (scratch, reset per trace). */
const hit = { brush: -1, plane: 0 };

/**
 * Clips the sweep of the box [mins, maxs] from start to end against one brush, lowering
 * `out.fraction` if the box enters it earlier than anything seen so far. Each plane is pushed
 * out by the box's extent along its normal (its support distance), which turns the box sweep
 * into a point sweep against the enlarged brush.
 */
function clipToBrush(
  brush: Brush,
  brushIndex: number,
  start: Vec3,
  end: Vec3,
  mins: Vec3,
  maxs: Vec3,
  out: TraceResult,
): void {
  const planes = brush.planes;
  let enterFrac = -1;
  let leaveFrac = 1;
  let enterPlane = -1;
  let startOut = false;
  let endOut = false;
  for (let i = 0; i < brush.planeCount; i++) {
    const o = i * 4;
    const nx = planes[o];
    const ny = planes[o + 1];
    const nz = planes[o + 2];
    const dist =
      planes[o + 3] -
      ((nx < 0 ? maxs.x : mins.x) * nx + (ny < 0 ? maxs.y : mins.y) * ny + (nz < 0 ? maxs.z : mins.z) * nz);
    const d1 = start.x * nx + start.y * ny + start.z * nz - dist;
    const d2 = end.x * nx + end.y * ny + end.z * nz - dist;
    if (d2 > 0) endOut = true;
    if (d1 > 0) startOut = true;
    // Entirely in front of this plane (or ending clear of its shell): the brush is not touched.
    if (d1 > 0 && (d2 >= TRACE_EPSILON || d2 >= d1)) return;
    // Entirely behind this plane: it does not limit the sweep.
    if (d1 <= 0 && d2 <= 0) continue;
    if (d1 > d2) {
      let f = (d1 - TRACE_EPSILON) / (d1 - d2);
      if (f < 0) f = 0;
      if (f > enterFrac) {
        enterFrac = f;
        enterPlane = i;
      }
    } else {
      let f = (d1 + TRACE_EPSILON) / (d1 - d2);
      if (f > 1) f = 1;
      if (f < leaveFrac) leaveFrac = f;
    }
  }
  if (!startOut) {
    out.startSolid = true;
    if (!endOut) {
      out.allSolid = true;
      out.fraction = 0;
    }
    return;
  }
  // The earliest entry wins, and of equal ones the lowest brush: the same whatever order the
  // broad phase visits the brushes in.
  if (
    enterFrac < leaveFrac &&
    enterFrac > -1 &&
    (enterFrac < out.fraction || (enterFrac === out.fraction && brushIndex < hit.brush))
  ) {
    out.fraction = enterFrac;
    hit.brush = brushIndex;
    hit.plane = enterPlane;
  }
}

/** Beyond this many broad-phase cells a trace (a long shot) tests every brush's bounds instead. */
const MAX_GRID_CELLS = 16;

/**
 * The brushes whose bounds meet [x0, x1] x [y0, y1] x [z0, z1], through the level's grid (each
 * once), or all of them in order when the box spans more than MAX_GRID_CELLS cells; each clipped.
 */
function sweepGrid(
  grid: BrushGrid,
  brushes: readonly Brush[],
  start: Vec3,
  end: Vec3,
  mins: Vec3,
  maxs: Vec3,
  out: TraceResult,
): void {
  const bounds = grid.bounds;
  const x0 = box[0];
  const y0 = box[1];
  const x1 = box[3];
  const y1 = box[4];
  const inv = 1 / BRUSH_GRID_CELL;
  const last = grid.columns - 1;
  const lastRow = grid.rows - 1;
  const cx0 = clampCell(Math.floor((x0 - grid.originX) * inv), last);
  const cx1 = clampCell(Math.floor((x1 - grid.originX) * inv), last);
  const cy0 = clampCell(Math.floor((y0 - grid.originY) * inv), lastRow);
  const cy1 = clampCell(Math.floor((y1 - grid.originY) * inv), lastRow);
  // NaN, a box inverted by its caller, or a long shot: every brush.
  if (cx1 < cx0 || cy1 < cy0 || !((cx1 - cx0 + 1) * (cy1 - cy0 + 1) <= MAX_GRID_CELLS)) {
    for (let i = 0; i < brushes.length; i++) {
      if (outside(bounds, i * 6)) continue;
      clipToBrush(brushes[i], i, start, end, mins, maxs, out);
      if (out.allSolid) return;
    }
    return;
  }
  const seen = grid.seen;
  grid.stamp = (grid.stamp + 1) >>> 0;
  if (grid.stamp === 0) {
    // The counter wrapped: forget every mark (once in 2^32 traces).
    seen.fill(0);
    grid.stamp = 1;
  }
  const stamp = grid.stamp;
  const items = grid.items;
  const starts = grid.starts;
  for (let cy = cy0; cy <= cy1; cy++) {
    for (let cx = cx0; cx <= cx1; cx++) {
      const c = cy * grid.columns + cx;
      for (let k = starts[c]; k < starts[c + 1]; k++) {
        const i = items[k];
        if (seen[i] === stamp) continue;
        seen[i] = stamp;
        if (outside(bounds, i * 6)) continue;
        clipToBrush(brushes[i], i, start, end, mins, maxs, out);
        if (out.allSolid) return;
      }
    }
  }
}

/** Whether the bounds at `bounds[o .. o + 5]` (mins, then maxs) miss the trace's `box`. */
function outside(bounds: Float64Array, o: number): boolean {
  return (
    bounds[o] > box[3] ||
    bounds[o + 3] < box[0] ||
    bounds[o + 1] > box[4] ||
    bounds[o + 4] < box[1] ||
    bounds[o + 2] > box[5] ||
    bounds[o + 5] < box[2]
  );
}

/** `c` within [0, last] (NaN stays NaN: the caller then tests every brush). */
function clampCell(c: number, last: number): number {
  return Math.max(0, Math.min(last, c));
}

/**
 * Sweeps the box [mins, maxs] (relative to the origin; mins <= 0 <= maxs on each axis) from
 * `start` to `end` through the level and fills `out`: the fraction of the move made before the
 * box comes within TRACE_EPSILON of a solid, where it stopped, the normal of the plane it hit,
 * and whether it started (startSolid) or stayed (allSolid) inside a solid. A box touching a
 * surface counts as inside. `start === end` tests a position. Does not allocate.
 */
export function traceLevel(
  level: Level,
  start: Vec3,
  end: Vec3,
  mins: Vec3,
  maxs: Vec3,
  out: TraceResult,
): void {
  out.fraction = 1;
  out.startSolid = false;
  out.allSolid = false;
  out.normal.x = 0;
  out.normal.y = 0;
  out.normal.z = 0;
  hit.brush = -1;
  const x0 = Math.min(start.x, end.x) + mins.x - BROAD_PHASE_PAD;
  const y0 = Math.min(start.y, end.y) + mins.y - BROAD_PHASE_PAD;
  const z0 = Math.min(start.z, end.z) + mins.z - BROAD_PHASE_PAD;
  const x1 = Math.max(start.x, end.x) + maxs.x + BROAD_PHASE_PAD;
  const y1 = Math.max(start.y, end.y) + maxs.y + BROAD_PHASE_PAD;
  const z1 = Math.max(start.z, end.z) + maxs.z + BROAD_PHASE_PAD;
  const brushes = level.brushes;
  const grid = level.grid;
  if (grid === undefined) {
    for (let i = 0; i < brushes.length; i++) {
      const b = brushes[i];
      if (b.mins.x > x1 || b.maxs.x < x0 || b.mins.y > y1 || b.maxs.y < y0 || b.mins.z > z1 || b.maxs.z < z0)
        continue;
      clipToBrush(b, i, start, end, mins, maxs, out);
      if (out.allSolid) break;
    }
  } else {
    box[0] = x0;
    box[1] = y0;
    box[2] = z0;
    box[3] = x1;
    box[4] = y1;
    box[5] = z1;
    sweepGrid(grid, brushes, start, end, mins, maxs, out);
  }
  if (!out.allSolid && hit.brush >= 0) {
    const planes = brushes[hit.brush].planes;
    const o = hit.plane * 4;
    out.normal.x = planes[o];
    out.normal.y = planes[o + 1];
    out.normal.z = planes[o + 2];
  }
  if (out.fraction === 1) {
    out.endPos.x = end.x;
    out.endPos.y = end.y;
    out.endPos.z = end.z;
  } else {
    const f = out.fraction;
    out.endPos.x = start.x + f * (end.x - start.x);
    out.endPos.y = start.y + f * (end.y - start.y);
    out.endPos.z = start.z + f * (end.z - start.z);
  }
}
