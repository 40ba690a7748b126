import { describe, expect, it } from 'vitest';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { MAX_CODE_LENGTH, PrefixCode } from '../../src/protocol/prefix-code.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0x2c0de);

function randomCounts(rng: Random): number[] {
  const n = rng.int(1, 40);
  return Array.from({ length: n }, () => (rng.chance(0.3) ? 0 : Math.floor(rng.range(0, 1) ** 4 * 1e6)));
}

describe('static prefix codes', () => {
  it('give frequent symbols short codes, every symbol a code, and form a complete code', () => {
    const code = new PrefixCode([1000, 10, 10, 0, 500]);
    expect(code.lengths[0]).toBeLessThanOrEqual(code.lengths[1]);
    expect(code.lengths[4]).toBeLessThanOrEqual(code.lengths[1]);
    expect(code.lengths[3]).toBeGreaterThanOrEqual(code.lengths[2]);
    expect(new PrefixCode([5]).lengths[0]).toBe(0);
    expect(() => new PrefixCode([])).toThrow(/1 to 256/);
    expect(() => new PrefixCode([1, -1])).toThrow(/>= 0/);
    const rng = new Random(SEED);
    for (let k = 0; k < 200; k++) {
      const counts = randomCounts(rng);
      const c = new PrefixCode(counts);
      let kraft = 0;
      for (let i = 0; i < c.size; i++) {
        expect(c.lengths[i], `seed ${SEED}`).toBeLessThanOrEqual(MAX_CODE_LENGTH);
        kraft += 2 ** -c.lengths[i];
      }
      expect(kraft, `seed ${SEED} counts ${counts}`).toBe(1);
    }
  });

  it('round-trips every symbol in any order, and measures what it writes', () => {
    const rng = new Random(SEED);
    const w = new BitStream(1 << 14);
    const m = new BitStream(0);
    const r = new BitStream(0);
    for (let k = 0; k < 100; k++) {
      const code = new PrefixCode(randomCounts(rng));
      const symbols = Array.from({ length: 300 }, () => rng.int(0, code.size - 1));
      w.beginWrite();
      m.beginMeasure();
      for (const sym of symbols) {
        code.serialize(w, sym);
        code.serialize(m, sym);
      }
      expect(m.bitsProcessed, `seed ${SEED}`).toBe(w.bitsProcessed);
      r.beginRead(w.bytes.slice());
      for (const sym of symbols) expect(code.serialize(r, 0), `seed ${SEED}`).toBe(sym);
      expect(r.ok, `seed ${SEED}`).toBe(true);
      expect(() => code.serialize(w.beginWrite(), code.size)).toThrow(/out of range/);
    }
  });

  it('reads random bytes without throwing: a symbol in range, or a failed stream', () => {
    const rng = new Random(SEED);
    const r = new BitStream(0);
    const bytes = new Uint8Array(8);
    let failed = 0;
    for (let k = 0; k < 20_000; k++) {
      const code = new PrefixCode(randomCounts(rng));
      const length = rng.int(0, 3);
      for (let i = 0; i < length; i++) bytes[i] = rng.int(0, 255);
      r.beginRead(bytes, length);
      const sym = code.serialize(r, 0);
      if (!r.ok) failed++;
      else expect(sym >= 0 && sym < code.size, `seed ${SEED}`).toBe(true);
    }
    expect(failed, `seed ${SEED}`).toBeGreaterThan(0);
  });

  it('a code cut short fails with read past end, whole it reads back; long codes (past the lookup table) included', () => {
    const rng = new Random(SEED);
    const w = new BitStream(64);
    const r = new BitStream(0);
    let long = 0;
    let cuts = 0;
    for (let k = 0; k < 100; k++) {
      const code = new PrefixCode(randomCounts(rng));
      for (let sym = 0; sym < code.size; sym++) {
        const len = code.lengths[sym];
        if (len > 9) long++;
        // The code after `at` bits; the data ends after `at + cut` bits (whole bytes only: cuts
        // that fall on a byte boundary, and the whole code).
        const at = rng.int(0, 7);
        w.beginWrite();
        w.uint(0, at);
        code.serialize(w, sym);
        const bytes = w.bytes.slice();
        for (let cut = 0; cut <= len; cut++) {
          const whole = cut === len;
          if (!whole && ((at + cut) & 7) !== 0) continue;
          r.beginRead(bytes, whole ? (at + len + 7) >>> 3 : (at + cut) >>> 3);
          r.uint(0, at);
          const got = code.serialize(r, 0);
          if (whole) expect(r.ok && got === sym, `seed ${SEED}`).toBe(true);
          else {
            // No proper prefix of a code is a code: the read runs out of data.
            expect(r.ok, `seed ${SEED}`).toBe(false);
            expect(r.error, `seed ${SEED}`).toBe('read past end');
            cuts++;
          }
        }
      }
    }
    expect(long, `seed ${SEED}`).toBeGreaterThan(0);
    expect(cuts, `seed ${SEED}`).toBeGreaterThan(100);
  });
});
