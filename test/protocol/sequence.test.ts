// Tests for wrap-safe 16-bit sequence numbers, across the 65535 -> 0 wrap and at the half-space boundary.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SEQUENCE_MASK,
  SEQUENCE_MODULO,
  seqAdd,
  seqDiff,
  seqGreaterThan,
  seqLessThan,
} from '../../src/protocol/sequence.ts';

const SEED = Number(process.env.SEED ?? 0x5e9);
const opts = { seed: SEED, numRuns: 2000 };
const at = `seed ${SEED}`;

const seq = fc.integer({ min: 0, max: SEQUENCE_MASK });
const HALF = SEQUENCE_MODULO / 2;

describe('seqGreaterThan / seqLessThan', () => {
  it('orders numbers across the wrap', () => {
    expect(seqGreaterThan(0, 65535), at).toBe(true);
    expect(seqGreaterThan(65535, 0), at).toBe(false);
    expect(seqGreaterThan(5, 65530), at).toBe(true);
    expect(seqLessThan(65530, 5), at).toBe(true);
    expect(seqGreaterThan(1, 0), at).toBe(true);
    expect(seqGreaterThan(0, 1), at).toBe(false);
  });

  it('a number is never greater or less than itself', () => {
    fc.assert(
      fc.property(seq, (a) => {
        expect(seqGreaterThan(a, a), `${at} a=${a}`).toBe(false);
        expect(seqLessThan(a, a), `${at} a=${a}`).toBe(false);
      }),
      opts,
    );
  });

  it('of two different numbers exactly one is greater (antisymmetric and total)', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        fc.pre(a !== b);
        expect(seqGreaterThan(a, b) !== seqGreaterThan(b, a), `${at} a=${a} b=${b}`).toBe(true);
        expect(seqLessThan(a, b), `${at} a=${a} b=${b}`).toBe(seqGreaterThan(b, a));
      }),
      opts,
    );
  });

  it('a + n is greater than a for n in 1..32767 and less for n in 32769..65535, wherever a is', () => {
    fc.assert(
      fc.property(seq, fc.integer({ min: 1, max: HALF - 1 }), (a, n) => {
        expect(seqGreaterThan(seqAdd(a, n), a), `${at} a=${a} n=${n}`).toBe(true);
        expect(seqLessThan(seqAdd(a, -n), a), `${at} a=${a} n=-${n}`).toBe(true);
      }),
      opts,
    );
  });

  it('half-space boundary: numbers exactly 32768 apart are ordered by their raw value', () => {
    // Two numbers half the space apart are equally "ahead" of each other; the tie is broken by
    // the raw value, so exactly one of them is greater (the larger one).
    fc.assert(
      fc.property(fc.integer({ min: 0, max: HALF - 1 }), (low) => {
        const high = low + HALF;
        expect(seqGreaterThan(high, low), `${at} ${high} vs ${low}`).toBe(true);
        expect(seqGreaterThan(low, high), `${at} ${low} vs ${high}`).toBe(false);
      }),
      opts,
    );
  });
});

describe('seqDiff', () => {
  it('measures the signed distance across the wrap', () => {
    expect(seqDiff(0, 65535), at).toBe(1);
    expect(seqDiff(65535, 0), at).toBe(-1);
    expect(seqDiff(10, 65530), at).toBe(16);
    expect(seqDiff(65530, 10), at).toBe(-16);
    expect(seqDiff(7, 7), at).toBe(0);
  });

  it('stays in (-32768, 32768] and undoes seqAdd', () => {
    fc.assert(
      fc.property(seq, fc.integer({ min: -HALF + 1, max: HALF }), (b, n) => {
        const a = seqAdd(b, n);
        const d = seqDiff(a, b);
        expect(d, `${at} a=${a} b=${b}`).toBe(n);
        expect(d > -HALF && d <= HALF, `${at} a=${a} b=${b}`).toBe(true);
      }),
      opts,
    );
  });

  it('is antisymmetric and agrees in sign with seqGreaterThan, except at the half-space boundary', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        const d = seqDiff(a, b);
        if (d === HALF) return;
        expect(d + seqDiff(b, a), `${at} a=${a} b=${b}`).toBe(0);
        expect(d > 0, `${at} a=${a} b=${b}`).toBe(seqGreaterThan(a, b));
        expect(d === 0, `${at} a=${a} b=${b}`).toBe(a === b);
      }),
      opts,
    );
  });

  it('half-space boundary: numbers 32768 apart are +32768 from each other', () => {
    // The range (-32768, 32768] has room for only one sign at the boundary, so seqDiff(a, b) is
    // +32768 both ways, while seqGreaterThan picks the larger raw value: callers that need a
    // verdict at exactly half the space use seqGreaterThan.
    expect(seqDiff(HALF, 0), at).toBe(HALF);
    expect(seqDiff(0, HALF), at).toBe(HALF);
    expect(seqDiff(65535, HALF - 1), at).toBe(HALF);
    expect(seqDiff(HALF - 1, 65535), at).toBe(HALF);
  });
});

describe('seqAdd', () => {
  it('wraps 65535 -> 0 in both directions', () => {
    expect(seqAdd(65535, 1), at).toBe(0);
    expect(seqAdd(0, -1), at).toBe(65535);
    expect(seqAdd(65000, 1000), at).toBe(464);
    expect(seqAdd(3, 65536 * 4), at).toBe(3);
  });

  it('stays in [0, 65535] and is the sum modulo 65536', () => {
    fc.assert(
      fc.property(seq, fc.integer({ min: -(2 ** 30), max: 2 ** 30 }), (a, n) => {
        const s = seqAdd(a, n);
        expect(s >= 0 && s <= SEQUENCE_MASK, `${at} a=${a} n=${n}`).toBe(true);
        expect((((a + n) % SEQUENCE_MODULO) + SEQUENCE_MODULO) % SEQUENCE_MODULO, `${at} a=${a} n=${n}`).toBe(
          s,
        );
      }),
      opts,
    );
  });

  it('walking 70,000 steps past the wrap, each number is greater than the one before', () => {
    let prev = 65000;
    for (let i = 0; i < 70000; i++) {
      const next = seqAdd(prev, 1);
      if (!seqGreaterThan(next, prev) || seqDiff(next, prev) !== 1) {
        expect.fail(`${at} step ${i}: ${next} after ${prev}`);
      }
      prev = next;
    }
    expect(prev, at).toBe((65000 + 70000) % SEQUENCE_MODULO);
  });
});
