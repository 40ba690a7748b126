// Tests for the power-of-two sequence buffer: insert/get/has/remove, stale laps, sizes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextPowerOfTwo, SequenceBuffer, SequenceRecords } from '../../src/sim/ring.ts';

const SEED = Number(process.env.SEED ?? 0x7165);
const at = `seed ${SEED}`;

interface Entry {
  slot: number;
  value: number;
}

function buffer(size: number): SequenceBuffer<Entry> {
  return new SequenceBuffer<Entry>(size, (slot) => ({ slot, value: -1 }));
}

describe('SequenceBuffer', () => {
  it('insert claims a slot; get/has find exactly that sequence; remove frees it', () => {
    const b = buffer(16);
    expect(b.size).toBe(16);
    expect(b.mask).toBe(15);
    expect(b.has(3)).toBe(false);
    expect(b.get(3)).toBeUndefined();
    const e = b.insert(3);
    e.value = 30;
    expect(b.has(3)).toBe(true);
    expect(b.get(3)).toBe(e);
    expect(b.get(3)?.value).toBe(30);
    expect(b.get(3 + 16), 'the same slot a lap later is not this sequence').toBeUndefined();
    b.remove(19);
    expect(b.has(3), 'removing another sequence of the same slot leaves it').toBe(true);
    b.remove(3);
    expect(b.has(3)).toBe(false);
    expect(b.get(3)).toBeUndefined();
  });

  it('entries are preallocated and reused, never created per insert', () => {
    const b = buffer(8);
    const first = b.insert(5);
    const again = b.insert(13);
    expect(again, 'sequence 13 reuses the slot of 5').toBe(first);
    expect(first.slot).toBe(5);
    expect(b.has(5), 'the lap-old sequence is gone').toBe(false);
    expect(b.has(13)).toBe(true);
  });

  it('stale entries from a lap ago are never returned (model check over random operations)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2, 8, 64),
        fc.array(
          fc.record({
            op: fc.constantFrom('insert', 'remove', 'clear'),
            seq: fc.integer({ min: 0, max: 2 ** 31 }),
          }),
          { maxLength: 200 },
        ),
        fc.array(fc.integer({ min: 0, max: 2 ** 31 }), { maxLength: 50 }),
        (size, ops, probes) => {
          const b = buffer(size);
          const model = new Map<number, number>();
          let n = 0;
          for (const { op, seq } of ops) {
            const slot = seq & (size - 1);
            if (op === 'insert') {
              b.insert(seq).value = ++n;
              model.set(slot, seq);
            } else if (op === 'remove') {
              b.remove(seq);
              if (model.get(slot) === seq) model.delete(slot);
            } else {
              b.clear();
              model.clear();
            }
          }
          for (const seq of [...probes, ...ops.map((o) => o.seq)]) {
            const present = model.get(seq & (size - 1)) === seq;
            expect(b.has(seq), `${at} size ${size} seq ${seq}`).toBe(present);
            expect(b.get(seq) !== undefined, `${at} size ${size} seq ${seq}`).toBe(present);
          }
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('works with 16-bit wire sequences across the wrap', () => {
    const b = buffer(32);
    for (let s = 65520; s < 65536 + 16; s++) b.insert(s & 0xffff).value = s;
    for (let s = 65520; s < 65536 + 16; s++) expect(b.get(s & 0xffff)?.value, `${s}`).toBe(s);
    expect(b.has(65519)).toBe(false);
  });

  it('widened sequences beyond 2^31 index by their low bits', () => {
    const b = buffer(16);
    const big = 2 ** 40 + 7;
    b.insert(big).value = 1;
    expect(b.get(big)?.slot).toBe(7);
    expect(b.has(big - 16)).toBe(false);
  });

  it('clear empties every slot', () => {
    const b = buffer(4);
    for (let s = 0; s < 4; s++) b.insert(s);
    b.clear();
    for (let s = 0; s < 4; s++) expect(b.has(s)).toBe(false);
  });

  it('a size that is not a power of two throws, naming it', () => {
    for (const bad of [0, 3, 6, 100, -4, 1.5, Number.NaN]) {
      expect(() => buffer(bad), `${bad}`).toThrow(new RegExp(`power of two, got ${bad}`));
    }
    for (const good of [1, 2, 4, 1024]) expect(buffer(good).size).toBe(good);
  });
});

describe('nextPowerOfTwo', () => {
  it('rounds up to a power of two, exactly, for every size', () => {
    expect(nextPowerOfTwo(0)).toBe(1);
    expect(nextPowerOfTwo(-5)).toBe(1);
    expect(nextPowerOfTwo(Number.NaN)).toBe(1);
    expect(nextPowerOfTwo(1)).toBe(1);
    expect(nextPowerOfTwo(3)).toBe(4);
    expect(nextPowerOfTwo(2.5)).toBe(4);
    for (let k = 1; k < 53; k++) {
      expect(nextPowerOfTwo(2 ** k), `2^${k}`).toBe(2 ** k);
      if (k > 1) expect(nextPowerOfTwo(2 ** k - 1), `2^${k}-1`).toBe(2 ** k);
      expect(nextPowerOfTwo(2 ** k + 1), `2^${k}+1`).toBe(2 ** (k + 1));
    }
  });
});

describe('SequenceRecords', () => {
  it('a record holds exactly the sequence last inserted into it, never one a lap away', () => {
    const t = new SequenceRecords(16, 4);
    expect(t.size).toBe(16);
    expect(t.records.length).toBe(64);
    expect(t.slot(3), 'nothing inserted').toBe(-1);
    expect(t.slot(0), 'a fresh record holds no sequence, not 0').toBe(-1);
    expect(t.insert(3)).toBe(12);
    expect(t.slot(3)).toBe(12);
    t.records[12 + 1] = 7.5;
    expect(t.slot(19), 'the same record a lap later is not this sequence').toBe(-1);
    expect(t.insert(19), 'a lap later claims the same record').toBe(12);
    expect(t.slot(3), 'and forgets the older sequence').toBe(-1);
    expect(t.slot(19)).toBe(12);
    expect(t.records[12 + 1], 'the fields stay for the caller to fill').toBe(7.5);
    expect(t.insert(0xffff)).toBe(60);
    expect(t.slot(0xffff)).toBe(60);
    expect(t.slot(2 ** 40 + 3), 'a sequence past 32 bits').toBe(-1);
    expect(t.insert(2 ** 40 + 3)).toBe(12);
    expect(t.slot(2 ** 40 + 3)).toBe(12);
    expect(t.slot(3), 'not the sequence 2^40 below it').toBe(-1);
  });

  it('refuses a size that is not a power of two and a stride without a field, naming them', () => {
    for (const bad of [0, 3, 12, 1.5, -4]) {
      expect(() => new SequenceRecords(bad, 4), `${bad}`).toThrow(
        /SequenceRecords: size must be a power of two/,
      );
    }
    for (const bad of [0, 1, 2.5, Number.NaN]) {
      expect(() => new SequenceRecords(16, bad), `${bad}`).toThrow(
        /SequenceRecords: stride must be an integer >= 2/,
      );
    }
  });
});
