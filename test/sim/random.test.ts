// Tests for the seeded random sources: reproducible from a seed, in range, roughly uniform.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Random, sharedRandom, sharedRandomRange } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0xa11ce);
const at = `seed ${SEED}`;
const seedArb = fc.integer({ min: 0, max: 0xffffffff });

/**
 * Pearson's chi-square statistic of `samples` values in [0, 1) over `buckets` equal buckets.
 * For uniform values it has buckets - 1 degrees of freedom: mean 63 and standard deviation about
 * 11 for 64 buckets, so the bound of 150 used below fails a good generator about once in 10^12.
 */
function chiSquare(next: (i: number) => number, samples: number, buckets: number): number {
  const counts = new Float64Array(buckets);
  for (let i = 0; i < samples; i++) counts[Math.floor(next(i) * buckets)]++;
  const expectedCount = samples / buckets;
  let chi = 0;
  for (const c of counts) chi += ((c - expectedCount) * (c - expectedCount)) / expectedCount;
  return chi;
}

describe('Random', () => {
  it('is reproducible from its seed, and different seeds give different streams', () => {
    fc.assert(
      fc.property(seedArb, seedArb, (a, b) => {
        const r1 = new Random(a);
        const r2 = new Random(a);
        const r3 = new Random(b);
        let differs = a === b;
        for (let i = 0; i < 64; i++) {
          const x = r1.nextU32();
          expect(r2.nextU32(), `${at} seed ${a} draw ${i}`).toBe(x);
          if (r3.nextU32() !== x) differs = true;
        }
        expect(differs, `${at} seeds ${a} and ${b}`).toBe(true);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('gives the same numbers on every run and engine (mulberry32 from seed 42)', () => {
    const r = new Random(42);
    expect([r.nextU32(), r.nextU32(), r.nextU32()]).toEqual([2581720956, 1925393290, 3661312704]);
  });

  it('takes any number as a seed by its low 32 bits', () => {
    expect(new Random(-1).nextU32()).toBe(new Random(0xffffffff).nextU32());
    expect(new Random(2 ** 32 + 5).nextU32()).toBe(new Random(5).nextU32());
  });

  it('keeps every draw in its documented range', () => {
    fc.assert(
      fc.property(
        seedArb,
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        (seed, min, width) => {
          const r = new Random(seed);
          for (let i = 0; i < 200; i++) {
            const u = r.nextU32();
            const x = r.next();
            const y = r.range(min, min + width + 0.5);
            const k = r.int(min, min + width);
            const ok =
              Number.isInteger(u) &&
              u >= 0 &&
              u <= 0xffffffff &&
              x >= 0 &&
              x < 1 &&
              y >= min &&
              y < min + width + 0.5 &&
              Number.isInteger(k) &&
              k >= min &&
              k <= min + width;
            if (!ok)
              expect.fail(`${at} seed ${seed} draw ${i}: nextU32 ${u}, next ${x}, range ${y}, int ${k}`);
          }
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('is roughly uniform (chi-square over 64 buckets), for several seeds', () => {
    for (let s = 0; s < 4; s++) {
      const r = new Random(SEED + s);
      const chi = chiSquare(() => r.next(), 200_000, 64);
      expect(chi, `${at}+${s}: chi-square ${chi}`).toBeLessThan(150);
    }
  });

  it('sets each of the 32 bits about half the time', () => {
    const r = new Random(SEED);
    const n = 100_000;
    const ones = new Float64Array(32);
    for (let i = 0; i < n; i++) {
      const u = r.nextU32();
      for (let b = 0; b < 32; b++) ones[b] += (u >>> b) & 1;
    }
    // Standard deviation of the count is sqrt(n)/2 = 158: 8 of them is far outside chance.
    for (let b = 0; b < 32; b++) expect(Math.abs(ones[b] - n / 2), `${at} bit ${b}`).toBeLessThan(8 * 158);
  });

  it('int hits both ends of its range, and chance(p) comes true about p of the time', () => {
    const r = new Random(SEED);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(r.int(-2, 2));
    expect(
      [...seen].sort((a, b) => a - b),
      at,
    ).toEqual([-2, -1, 0, 1, 2]);
    let hits = 0;
    const n = 100_000;
    for (let i = 0; i < n; i++) if (r.chance(0.25)) hits++;
    expect(Math.abs(hits / n - 0.25), at).toBeLessThan(0.01);
    expect(r.chance(0), at).toBe(false);
    expect(r.chance(1), at).toBe(true);
  });
});

describe('sharedRandom', () => {
  it('is a pure function of (seed, index), in [0, 1)', () => {
    fc.assert(
      fc.property(seedArb, seedArb, (seed, index) => {
        const x = sharedRandom(seed, index);
        expect(x >= 0 && x < 1, `${at} (${seed}, ${index}) -> ${x}`).toBe(true);
        expect(sharedRandom(seed, index), `${at} (${seed}, ${index})`).toBe(x);
        const y = sharedRandomRange(seed, index, -5, 5);
        expect(y >= -5 && y < 5, `${at} (${seed}, ${index}) range ${y}`).toBe(true);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('gives the same numbers on every run and engine', () => {
    expect([sharedRandom(0, 0), sharedRandom(12345, 7), sharedRandom(0xffffffff, 0xffffffff)]).toEqual([
      0.5582790048792958, 0.6103408955968916, 0.32693250686861575,
    ]);
  });

  it('is roughly uniform along the index (a command’s pellets) and along the seed (successive commands)', () => {
    const alongIndex = chiSquare((i) => sharedRandom(SEED, i), 200_000, 64);
    expect(alongIndex, `${at}: chi-square along index ${alongIndex}`).toBeLessThan(150);
    const alongSeed = chiSquare((i) => sharedRandom(SEED + i, 3), 200_000, 64);
    expect(alongSeed, `${at}: chi-square along seed ${alongSeed}`).toBeLessThan(150);
  });

  it('differs between neighbouring seeds and indices', () => {
    // A 32-bit hash may collide; over these 4,000 pairs the chance is about 1 in a million.
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xfffffffe }),
        fc.integer({ min: 0, max: 0xfffffffe }),
        (seed, index) => {
          const x = sharedRandom(seed, index);
          expect(sharedRandom(seed + 1, index), `${at} (${seed}, ${index})`).not.toBe(x);
          expect(sharedRandom(seed, index + 1), `${at} (${seed}, ${index})`).not.toBe(x);
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
