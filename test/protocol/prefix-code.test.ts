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

  it('a residual (class, then its bits) writes and reads as the class code then the bits would: same bits, values, failures', () => {
    const rng = new Random(SEED);
    const fused = new BitStream(64);
    const steps = new BitStream(64);
    const m = new BitStream(0);
    const a = new BitStream(0);
    const b = new BitStream(0);
    const data = new Uint8Array(64);
    let fast = 0;
    let slow = 0;
    let failures = 0;
    for (let k = 0; k < 300; k++) {
      // Classes 0..32 (a residual of up to 32 bits), some codes long enough to pass 24 bits.
      const code = new PrefixCode(
        Array.from({ length: rng.int(1, 33) }, () => (rng.chance(0.3) ? 0 : rng.int(0, 1e6))),
      );
      const at = rng.int(0, 7);
      const c = rng.int(0, code.size - 1);
      const u = c === 0 ? 0 : 2 ** (c - 1) + Math.floor(rng.range(0, 1) * 2 ** (c - 1));
      fused.beginWrite();
      steps.beginWrite();
      m.beginMeasure();
      fused.uint(0, at);
      steps.uint(0, at);
      m.uint(0, at);
      code.writeResidual(fused, c, u);
      code.writeResidual(m, c, u);
      code.serialize(steps, c);
      if (c >= 2) steps.uint(u - 2 ** (c - 1), c - 1);
      expect(fused.bitsProcessed, `seed ${SEED}`).toBe(steps.bitsProcessed);
      expect(m.bitsProcessed, `seed ${SEED}`).toBe(steps.bitsProcessed);
      expect([...fused.bytes], `seed ${SEED}`).toEqual([...steps.bytes]);
      if (code.lengths[c] + Math.max(0, c - 1) <= 24) fast++;
      else slow++;
      // Whole, cut at every byte, and with random bytes after the residual's first bits.
      const bytes = fused.bytes.slice();
      for (let cut = 0; cut <= bytes.length + 1; cut++) {
        const noisy = cut === bytes.length + 1;
        data.set(bytes);
        if (noisy) for (let i = (at + 1) >>> 3; i < data.length; i++) data[i] = rng.int(0, 255);
        const length = noisy ? data.length : Math.min(cut, bytes.length);
        a.beginRead(data, length);
        b.beginRead(data, length);
        a.uint(0, at);
        b.uint(0, at);
        const got = code.readResidual(a);
        const cls = code.serialize(b, 0);
        let want = cls === 0 ? 0 : 2 ** (cls - 1);
        if (cls >= 2) want += b.uint(0, cls - 1);
        expect(a.ok, `seed ${SEED} cut ${cut}`).toBe(b.ok);
        expect(a.error, `seed ${SEED} cut ${cut}`).toBe(b.error);
        if (b.ok) {
          expect(got, `seed ${SEED} cut ${cut}`).toBe(want);
          expect(a.bitsProcessed, `seed ${SEED} cut ${cut}`).toBe(b.bitsProcessed);
          if (cut === bytes.length) expect(got, `seed ${SEED}`).toBe(u);
        } else failures++;
      }
    }
    expect(fast, `seed ${SEED}`).toBeGreaterThan(50);
    expect(slow, `seed ${SEED}`).toBeGreaterThan(20);
    expect(failures, `seed ${SEED}`).toBeGreaterThan(100);
    expect(() => new PrefixCode([1, 2]).writeResidual(fused.beginWrite(), 2, 2)).toThrow(/out of range/);
  });
});
