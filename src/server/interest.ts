// Interest management: a uniform spatial grid of entity positions, rebuilt once per tick, that
// answers "which entities are within this radius of a viewer" without an all-pairs scan.
//
// The world is unbounded, so cells are hashed into a fixed table of buckets; each bucket is a
// singly linked list threaded through typed arrays (no allocation per rebuild or query). An
// entity remembers its cell, so a query visits each entity of a cell once even when two cells
// share a bucket. A query whose box covers more cells than there are entities scans the entity
// list instead (an "everything in range" query costs the same as a linear pass, not more).

export interface InterestConfig {
  /** Edge of a grid cell in world units (default 512). */
  cellSize: number;
  /** Hash buckets, a power of two (default 4096). */
  buckets: number;
}

export const DEFAULT_INTEREST_CONFIG: InterestConfig = { cellSize: 512, buckets: 4096 };

const NONE = -1;

export class InterestGrid {
  readonly config: InterestConfig;
  readonly maxEntities: number;
  /** Entities indexed by the last rebuild. */
  count = 0;
  private readonly members: Uint16Array;
  /** query's position, handed to queryFrom. */
  private readonly at = new Float64Array(3);
  private readonly px: Float64Array;
  private readonly py: Float64Array;
  private readonly pz: Float64Array;
  private readonly cx: Int32Array;
  private readonly cy: Int32Array;
  private readonly cz: Int32Array;
  private readonly next: Int32Array;
  private readonly heads: Int32Array;
  private readonly mask: number;
  private readonly inverseCell: number;
  /**
   * The cells the last rebuild filled lie within these bounds: a query visits no cell outside
   * them (a level of one floor fills one layer of cells, and a view radius spans several).
   */
  private minCx = 0;
  private maxCx = -1;
  private minCy = 0;
  private maxCy = -1;
  private minCz = 0;
  private maxCz = -1;

  constructor(maxEntities: number, config: Partial<InterestConfig> = {}) {
    this.config = { ...DEFAULT_INTEREST_CONFIG, ...config };
    const { cellSize, buckets } = this.config;
    if (!Number.isInteger(maxEntities) || maxEntities < 1 || maxEntities > 65536) {
      throw new RangeError(`InterestGrid: maxEntities must be an integer in 1..65536, got ${maxEntities}`);
    }
    if (!(cellSize > 0) || !Number.isFinite(cellSize)) {
      throw new RangeError(`InterestGrid: cellSize must be a positive finite number, got ${cellSize}`);
    }
    if (!Number.isInteger(buckets) || buckets < 1 || (buckets & (buckets - 1)) !== 0 || buckets > 1 << 24) {
      throw new RangeError(`InterestGrid: buckets must be a power of two up to 2^24, got ${buckets}`);
    }
    this.maxEntities = maxEntities;
    this.members = new Uint16Array(maxEntities);
    this.px = new Float64Array(maxEntities);
    this.py = new Float64Array(maxEntities);
    this.pz = new Float64Array(maxEntities);
    this.cx = new Int32Array(maxEntities);
    this.cy = new Int32Array(maxEntities);
    this.cz = new Int32Array(maxEntities);
    this.next = new Int32Array(maxEntities);
    this.heads = new Int32Array(buckets).fill(NONE);
    this.mask = buckets - 1;
    this.inverseCell = 1 / cellSize;
  }

  /**
   * Rebuilds the grid from the entities `i < end` with `alive[i] !== 0`, at positions
   * `positions[3i .. 3i+2]`. Allocation-free; costs one pass over the entities and one clear of
   * the bucket table.
   */
  rebuild(positions: Float64Array, alive: Uint8Array, end: number): void {
    this.heads.fill(NONE);
    let count = 0;
    const inv = this.inverseCell;
    let minCx = 0x7fffffff;
    let maxCx = -0x80000000;
    let minCy = 0x7fffffff;
    let maxCy = -0x80000000;
    let minCz = 0x7fffffff;
    let maxCz = -0x80000000;
    for (let i = 0; i < end; i++) {
      if (alive[i] === 0) continue;
      const x = positions[3 * i];
      const y = positions[3 * i + 1];
      const z = positions[3 * i + 2];
      const cx = cellOf(x * inv);
      const cy = cellOf(y * inv);
      const cz = cellOf(z * inv);
      this.px[i] = x;
      this.py[i] = y;
      this.pz[i] = z;
      this.cx[i] = cx;
      this.cy[i] = cy;
      this.cz[i] = cz;
      if (cx < minCx) minCx = cx;
      if (cx > maxCx) maxCx = cx;
      if (cy < minCy) minCy = cy;
      if (cy > maxCy) maxCy = cy;
      if (cz < minCz) minCz = cz;
      if (cz > maxCz) maxCz = cz;
      const b = hashCell(cx, cy, cz) & this.mask;
      this.next[i] = this.heads[b];
      this.heads[b] = i;
      this.members[count++] = i;
    }
    this.count = count;
    this.minCx = minCx;
    this.maxCx = maxCx;
    this.minCy = minCy;
    this.maxCy = maxCy;
    this.minCz = minCz;
    this.maxCz = maxCz;
  }

  /**
   * Writes into `out` the indices of the entities within `radius` (inclusive) of (x, y, z), each
   * once, in no particular order, and returns how many (at most out.length). A radius of
   * Infinity takes every entity; a NaN position is never in range.
   */
  query(x: number, y: number, z: number, radius: number, out: Uint16Array): number {
    const at = this.at;
    at[0] = x;
    at[1] = y;
    at[2] = z;
    return this.queryFrom(at, radius, out);
  }

  /**
   * `query` around the position in `position[0..3)` (x, y, z): the snapshot writers' way, since a
   * position passed to a call as three numbers is three heap boxes.
   */
  queryFrom(position: Float64Array, radius: number, out: Uint16Array): number {
    const x = position[0];
    const y = position[1];
    const z = position[2];
    if (!(radius >= 0)) return 0;
    const limit = out.length;
    const r2 = radius * radius;
    const inv = this.inverseCell;
    // The cells the radius spans, within those the entities fill (none filled: an empty range).
    const x0 = Math.max(cellOf((x - radius) * inv), this.minCx);
    const x1 = Math.min(cellOf((x + radius) * inv), this.maxCx);
    const y0 = Math.max(cellOf((y - radius) * inv), this.minCy);
    const y1 = Math.min(cellOf((y + radius) * inv), this.maxCy);
    const z0 = Math.max(cellOf((z - radius) * inv), this.minCz);
    const z1 = Math.min(cellOf((z + radius) * inv), this.maxCz);
    let n = 0;
    if (radius !== Infinity && (x1 < x0 || y1 < y0 || z1 < z0)) return 0;
    const cells = (x1 - x0 + 1) * (y1 - y0 + 1) * (z1 - z0 + 1);
    if (!(cells <= this.count) || radius === Infinity) {
      for (let m = 0; m < this.count && n < limit; m++) {
        const i = this.members[m];
        if (radius === Infinity || this.within(i, x, y, z, r2)) out[n++] = i;
      }
      return n;
    }
    for (let cz = z0; cz <= z1; cz++) {
      for (let cy = y0; cy <= y1; cy++) {
        for (let cx = x0; cx <= x1; cx++) {
          for (let i = this.heads[hashCell(cx, cy, cz) & this.mask]; i !== NONE; i = this.next[i]) {
            if (this.cx[i] !== cx || this.cy[i] !== cy || this.cz[i] !== cz) continue;
            if (!this.within(i, x, y, z, r2)) continue;
            if (n === limit) return n;
            out[n++] = i;
          }
        }
      }
    }
    return n;
  }

  /** Distance from (x, y, z) to entity `i` at the last rebuild (meaningful only if it was indexed). */
  distance(i: number, x: number, y: number, z: number): number {
    const dx = this.px[i] - x;
    const dy = this.py[i] - y;
    const dz = this.pz[i] - z;
    return Math.sqrt(dx * dx + dy * dy + dz * dz);
  }

  private within(i: number, x: number, y: number, z: number, r2: number): boolean {
    const dx = this.px[i] - x;
    const dy = this.py[i] - y;
    const dz = this.pz[i] - z;
    return dx * dx + dy * dy + dz * dz <= r2;
  }
}

/** Cell coordinate of a position already divided by the cell size, clamped to 32 bits. */
function cellOf(scaled: number): number {
  const c = Math.floor(scaled);
  if (c > 0x3fffffff) return 0x3fffffff;
  if (c < -0x40000000) return -0x40000000;
  return c | 0;
}

function hashCell(cx: number, cy: number, cz: number): number {
  return (Math.imul(cx, 73856093) ^ Math.imul(cy, 19349663) ^ Math.imul(cz, 83492791)) >>> 0;
}
