// The snapshot writer buckets accumulated priority by comparisons against thresholds instead of a
// logarithm per entity; the thresholds must give the logarithm's bucket for every priority.
import { describe, expect, it } from 'vitest';
import { priorityBucket, priorityBucketFast } from '../../src/server/snapshot-writer.ts';
import { Random } from '../../src/sim/random.ts';

/** The doubles `n` steps either side of `x`. */
function neighbours(x: number, n: number): number[] {
  const f = new Float64Array(1);
  const i = new BigInt64Array(f.buffer);
  const out: number[] = [];
  for (let d = -n; d <= n; d++) {
    f[0] = x;
    i[0] += BigInt(d);
    out.push(f[0]);
  }
  return out;
}

describe('priority buckets', () => {
  it('thresholds give the bucket of floor(4 log2 p) + 40 at and around every bucket edge, and for any priority', () => {
    const seed = 17;
    const rng = new Random(seed);
    const check = (p: number): void => {
      expect(priorityBucketFast(p), `p ${p}, seed ${seed}`).toBe(priorityBucket(p));
    };
    for (let j = -48; j <= 32; j++) for (const p of neighbours(2 ** (j / 4), 64)) check(p);
    for (let k = 0; k < 20000; k++) check(2 ** (rng.next() * 40 - 20));
    for (const p of [0, -0, -1, Number.NaN, Number.MIN_VALUE, 1e-300, 1, 1e300, Number.POSITIVE_INFINITY])
      check(p);
    expect(priorityBucketFast(1)).toBe(40);
    expect(priorityBucketFast(2)).toBe(44);
    expect(priorityBucketFast(0)).toBe(0);
    expect(priorityBucketFast(1e300)).toBe(63);
  });
});
