// Tests for the interest grid: a radius query returns exactly the entities a brute-force distance check finds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InterestGrid } from '../../src/server/interest.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0x1e7);

function bruteForce(
  positions: Float64Array,
  alive: Uint8Array,
  end: number,
  x: number,
  y: number,
  z: number,
  r: number,
): number[] {
  const out: number[] = [];
  for (let i = 0; i < end; i++) {
    if (alive[i] === 0) continue;
    const dx = positions[3 * i] - x;
    const dy = positions[3 * i + 1] - y;
    const dz = positions[3 * i + 2] - z;
    if (r === Infinity || dx * dx + dy * dy + dz * dz <= r * r) out.push(i);
  }
  return out;
}

describe('InterestGrid', () => {
  it('a query finds exactly the live entities within the radius, each once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0x7fffffff }),
        fc.constantFrom(16, 128, 512, 3000),
        fc.constantFrom(1, 16, 4096),
        (seed, cellSize, buckets) => {
          const rng = new Random(seed);
          const n = 400;
          const grid = new InterestGrid(n, { cellSize, buckets });
          const positions = new Float64Array(3 * n);
          const alive = new Uint8Array(n);
          const spread = rng.chance(0.5) ? 5000 : 300;
          for (let i = 0; i < n; i++) {
            alive[i] = rng.chance(0.8) ? 1 : 0;
            positions[3 * i] = rng.range(-spread, spread);
            positions[3 * i + 1] = rng.range(-spread, spread);
            positions[3 * i + 2] = rng.chance(0.1) ? Number.NaN : rng.range(-100, 100);
          }
          const end = rng.int(0, n);
          grid.rebuild(positions, alive, end);
          const out = new Uint16Array(n);
          for (let q = 0; q < 30; q++) {
            // Some queries reach past the cells the entities fill, or lie outside them altogether.
            const far = rng.chance(0.2) ? 3 : 1;
            const x = rng.range(-far * spread, far * spread);
            const y = rng.range(-spread, spread);
            const z = rng.chance(0.2) ? rng.range(-3000, 3000) : rng.range(-100, 100);
            const r = rng.chance(0.1) ? Infinity : rng.chance(0.1) ? 0 : rng.range(0, spread);
            const count = grid.query(x, y, z, r, out);
            const got = Array.from(out.subarray(0, count)).sort((a, b) => a - b);
            const want = bruteForce(positions, alive, end, x, y, z, r);
            expect(got, `seed ${seed} cell ${cellSize} buckets ${buckets} query ${q} r ${r}`).toEqual(want);
          }
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  });

  it('stops at the size of the output buffer', () => {
    const grid = new InterestGrid(10, { cellSize: 1 });
    const positions = new Float64Array(30);
    const alive = new Uint8Array(10).fill(1);
    grid.rebuild(positions, alive, 10);
    expect(grid.query(0, 0, 0, 5, new Uint16Array(4)), `seed ${SEED}`).toBe(4);
    expect(grid.query(0, 0, 0, Infinity, new Uint16Array(3)), `seed ${SEED}`).toBe(3);
    expect(grid.query(0, 0, 0, -1, new Uint16Array(3)), `seed ${SEED}`).toBe(0);
    expect(grid.query(Number.NaN, 0, 0, 5, new Uint16Array(3)), `seed ${SEED}`).toBe(0);
  });

  it('rejects bad configuration, naming the field', () => {
    expect(() => new InterestGrid(10, { cellSize: 0 }), `seed ${SEED}`).toThrow(/cellSize.*0/);
    expect(() => new InterestGrid(10, { buckets: 100 }), `seed ${SEED}`).toThrow(/buckets.*100/);
    expect(() => new InterestGrid(0), `seed ${SEED}`).toThrow(/maxEntities.*0/);
  });
});
