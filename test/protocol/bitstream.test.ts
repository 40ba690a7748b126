// Property tests for the bit stream: every primitive round-trips and measures what it writes; hostile bytes never throw.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BitStream,
  bitsRequired,
  quantize,
  quantizeAngle,
  quantizeAngles,
  quantizeValues,
} from '../../src/protocol/bitstream.ts';

const SEED = Number(process.env.SEED ?? 0x4b17);
const RUNS = 400;
const opts = { seed: SEED, numRuns: RUNS };
const at = `seed ${SEED}`;

/** One field of a test message: its kind, its declared range and the value to write. */
type Field =
  | { kind: 'uint'; bits: number; value: number }
  | { kind: 'int'; min: number; max: number; value: number }
  | { kind: 'bool'; value: boolean }
  | { kind: 'float'; min: number; max: number; precision: number; value: number }
  | { kind: 'angle'; bits: number; value: number }
  | { kind: 'varuint'; max: number; value: number }
  | { kind: 'float32'; value: number }
  | { kind: 'bytes'; data: Uint8Array }
  | { kind: 'string'; maxBytes: number; value: string };

type FieldValue = number | boolean | string | Uint8Array | null;

/** The message schema's serialize function: one call per field, for write, read and measure. */
function serializeField(s: BitStream, f: Field): FieldValue {
  switch (f.kind) {
    case 'uint':
      return s.uint(f.value, f.bits);
    case 'int':
      return s.int(f.value, f.min, f.max);
    case 'bool':
      return s.bool(f.value);
    case 'float':
      return s.float(f.value, f.min, f.max, f.precision);
    case 'angle':
      return s.angle(f.value, f.bits);
    case 'varuint':
      return s.varuint(f.value, f.max);
    case 'float32':
      return s.float32(f.value);
    case 'bytes': {
      const target = s.isReading ? new Uint8Array(f.data.length) : f.data;
      return s.bytesField(target, f.data.length) ? target : null;
    }
    case 'string':
      return s.string(f.value, f.maxBytes);
  }
}

/** What reading the field back must give: the value itself or its quantized form. */
function expected(f: Field): FieldValue {
  switch (f.kind) {
    case 'float':
      return quantize(f.value, f.min, f.max, f.precision);
    case 'angle':
      return quantizeAngle(f.value, f.bits);
    case 'float32':
      return Math.fround(f.value);
    case 'bytes':
      return f.data;
    default:
      return f.value;
  }
}

/** What a failed read of the field returns. */
function minimum(f: Field): FieldValue {
  switch (f.kind) {
    case 'int':
    case 'float':
      return f.min;
    case 'bool':
      return false;
    case 'bytes':
      return null;
    case 'string':
      return '';
    default:
      return 0;
  }
}

/** Exact bit cost of the field as the stream documents it. */
function expectedBits(f: Field): number {
  switch (f.kind) {
    case 'uint':
    case 'angle':
      return f.bits;
    case 'int':
      return bitsRequired(f.max - f.min);
    case 'bool':
      return 1;
    case 'float':
      return bitsRequired(Math.round((f.max - f.min) / f.precision));
    case 'varuint': {
      let groups = 1;
      for (let v = f.value; v >= 128; v = Math.floor(v / 128)) groups++;
      return 8 * groups;
    }
    case 'float32':
      return 32;
    case 'bytes':
      return 8 * f.data.length;
    case 'string':
      return bitsRequired(f.maxBytes) + 8 * new TextEncoder().encode(f.value).length;
  }
}

const PRECISIONS = [1, 0.5, 0.25, 1 / 8, 1 / 16, 1 / 1024, 0.1, 0.01, 3];

const uintArb = fc.integer({ min: 1, max: 32 }).chain((bits) =>
  fc.record({
    kind: fc.constant('uint' as const),
    bits: fc.constant(bits),
    value: fc.integer({ min: 0, max: 2 ** bits - 1 }),
  }),
);

const intArb = fc
  .record({
    min: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    width: fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 300 })),
  })
  .chain(({ min, width }) =>
    fc.record({
      kind: fc.constant('int' as const),
      min: fc.constant(min),
      max: fc.constant(min + width),
      value: fc.integer({ min, max: min + width }),
    }),
  );

const floatArb = fc
  .record({
    min: fc.double({ min: -10000, max: 10000, noNaN: true }).map((m) => m + 0),
    precision: fc.constantFrom(...PRECISIONS),
    steps: fc.integer({ min: 0, max: 2 ** 20 }),
  })
  .chain(({ min, precision, steps }) => {
    const max = min + steps * precision;
    const span = max - min + 10;
    return fc.record({
      kind: fc.constant('float' as const),
      min: fc.constant(min),
      max: fc.constant(max),
      precision: fc.constant(precision),
      value: fc.oneof(
        fc.double({ min: min - span, max: max + span, noNaN: true }),
        fc.constantFrom(min, max, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0),
      ),
    });
  });

const angleValueArb = fc.oneof(
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc.double(),
  fc.integer({ min: -100, max: 100 }).map((k) => k * 90),
  fc.constantFrom(-0, 359.9999999, 360, -360, -1e-300, 1e300),
);
const angleArb = fc.record({
  kind: fc.constant('angle' as const),
  bits: fc.integer({ min: 1, max: 32 }),
  value: angleValueArb,
});

const varuintArb = fc
  .oneof(fc.constant(0xffffffff), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 20000 }))
  .chain((max) =>
    fc.record({
      kind: fc.constant('varuint' as const),
      max: fc.constant(max),
      value: fc.integer({ min: 0, max }),
    }),
  );

const float32Arb = fc.record({
  kind: fc.constant('float32' as const),
  value: fc.oneof(
    fc.float({ noNaN: true, noDefaultInfinity: true }),
    fc.double({ min: -3.4e38, max: 3.4e38, noNaN: true }),
  ),
});

const bytesArb = fc.record({ kind: fc.constant('bytes' as const), data: fc.uint8Array({ maxLength: 48 }) });

const stringValueArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ unit: 'binary-ascii', maxLength: 16 }),
  fc.string({ unit: 'binary', maxLength: 4 }).map((t) => `\uFEFF${t}`),
);
const stringArb = fc
  .record({ value: stringValueArb, slack: fc.integer({ min: 0, max: 300 }) })
  .map(({ value, slack }) => ({
    kind: 'string' as const,
    value,
    maxBytes: new TextEncoder().encode(value).length + slack,
  }));

const boolArb = fc.record({ kind: fc.constant('bool' as const), value: fc.boolean() });

const fieldArb: fc.Arbitrary<Field> = fc.oneof(
  uintArb,
  intArb,
  boolArb,
  floatArb,
  angleArb,
  varuintArb,
  float32Arb,
  bytesArb,
  stringArb,
);

const CAPACITY = 16384;

/** Writes, measures and reads `fields`, checking every figure; returns the written byte count. */
function roundTrip(fields: Field[], label: string): number {
  const w = new BitStream(CAPACITY).beginWrite();
  const ends: number[] = [];
  for (const f of fields) {
    expect(serializeField(w, f), `${label} write ${f.kind}`).toEqual(expected(f));
    ends.push(w.bitsProcessed);
  }
  expect(w.ok, `${label} write ok (${w.error})`).toBe(true);

  const m = new BitStream().beginMeasure();
  let start = 0;
  for (let i = 0; i < fields.length; i++) {
    serializeField(m, fields[i]);
    expect(m.bitsProcessed - start, `${label} measure ${fields[i].kind} #${i}`).toBe(expectedBits(fields[i]));
    expect(m.bitsProcessed, `${label} measure == write after #${i}`).toBe(ends[i]);
    start = m.bitsProcessed;
  }

  const r = new BitStream().beginRead(w.bytes);
  for (let i = 0; i < fields.length; i++) {
    expect(serializeField(r, fields[i]), `${label} read ${fields[i].kind} #${i}`).toEqual(
      expected(fields[i]),
    );
    expect(r.bitsProcessed, `${label} read position after #${i}`).toBe(ends[i]);
  }
  expect(r.ok, `${label} read ok (${r.error})`).toBe(true);
  expect(r.bitsRemaining, `${label} only padding left`).toBeLessThan(8);
  return w.bytesProcessed;
}

describe('bitsRequired, quantize and quantizeAngle', () => {
  it('bitsRequired is the width of the range', () => {
    expect(bitsRequired(0), at).toBe(0);
    expect(bitsRequired(1), at).toBe(1);
    expect(bitsRequired(255), at).toBe(8);
    expect(bitsRequired(256), at).toBe(9);
    expect(bitsRequired(0xffffffff), at).toBe(32);
    for (const bad of [-1, 0.5, 2 ** 32, Number.NaN]) {
      expect(() => bitsRequired(bad), `${bad}`).toThrow(RangeError);
    }
  });

  it('quantize clamps to the range and lands on the grid', () => {
    expect(quantize(-5, 0, 10, 0.5), at).toBe(0);
    expect(quantize(11, 0, 10, 0.5), at).toBe(10);
    expect(quantize(Number.NaN, -2, 10, 0.5), at).toBe(-2);
    expect(quantize(3.3, 0, 10, 0.5), at).toBe(3.5);
  });

  it('quantizeAngle wraps negative angles and angles past 360', () => {
    expect(quantizeAngle(-90, 16), at).toBe(270);
    expect(quantizeAngle(450, 16), at).toBe(90);
    expect(quantizeAngle(360, 8), at).toBe(0);
    expect(quantizeAngle(-720.5, 16), at).toBe(quantizeAngle(359.5, 16));
    expect(quantizeAngle(359.9999999, 16), at).toBe(0);
    expect(quantizeAngle(Number.NaN, 16), at).toBe(0);
    expect(quantizeAngle(Number.POSITIVE_INFINITY, 16), at).toBe(0);
  });

  it('a value on the grid comes back as itself, and -0 as 0, from the functions and from writes', () => {
    // toBe is Object.is: -0 is not 0.
    expect(quantize(-0, -10, 10, 0.5), at).toBe(0);
    expect(quantize(-0, 0, 10, 0.5), at).toBe(0);
    expect(quantizeAngle(-0, 16), at).toBe(0);
    expect(quantizeAngle(-1e-9, 16), at).toBe(0);
    const s = new BitStream(64);
    s.beginWrite();
    expect(s.float(-0, -10, 10, 0.5), at).toBe(0);
    expect(s.angle(-0, 16), at).toBe(0);
    fc.assert(
      fc.property(fc.integer({ min: -20, max: 20 }), fc.integer({ min: 0, max: 65535 }), (q, u) => {
        const v = q * 0.5;
        const degrees = (u * 360) / 65536;
        s.beginWrite();
        return (
          Object.is(quantize(v, -10, 10, 0.5), v) &&
          Object.is(s.float(v, -10, 10, 0.5), v) &&
          Object.is(quantizeAngle(degrees, 16), degrees) &&
          Object.is(s.angle(degrees, 16), degrees)
        );
      }),
      opts,
    );
  });
});

describe('the array forms: floats, angles, quantizeValues, quantizeAngles', () => {
  // Any number a game may hold, on the grid or off it, out of range, -0, NaN and infinities.
  const anyNumber = fc.oneof(
    fc.double({ min: -5000, max: 5000, noNaN: true }),
    fc.integer({ min: -40, max: 40 }).map((q) => q * 0.25),
    fc.constantFrom(-0, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e300),
  );
  const run = fc.array(anyNumber, { minLength: 1, maxLength: 6 });

  it('write, measure and read the bits and values one call each of float and angle gives', () => {
    const one = new BitStream(256);
    const many = new BitStream(256);
    fc.assert(
      fc.property(run, run, (floats, angles) => {
        one.beginWrite();
        many.beginWrite();
        const expected = [
          ...floats.map((x) => one.float(x, -10, 10, 0.25)),
          ...angles.map((x) => one.angle(x, 12)),
        ];
        const values = Float64Array.from([...floats, ...angles]);
        expect(many.floats(values, 0, floats.length, -10, 10, 0.25), at).toBe(true);
        expect(many.angles(values, floats.length, angles.length, 12), at).toBe(true);
        // The same numbers (Object.is: -0 is not 0) and the same bytes.
        expect(
          [...values].every((v, i) => Object.is(v, expected[i])),
          `${at} ${values} vs ${expected}`,
        ).toBe(true);
        expect(many.bitsProcessed, at).toBe(one.bitsProcessed);
        const bytes = many.bitsProcessed >> 3;
        expect(Array.from(many.buffer.subarray(0, bytes + 1)), at).toEqual(
          Array.from(one.buffer.subarray(0, bytes + 1)),
        );
        const measure = new BitStream(256);
        measure.beginMeasure();
        const measured = Float64Array.from([...floats, ...angles]);
        measure.floats(measured, 0, floats.length, -10, 10, 0.25);
        measure.angles(measured, floats.length, angles.length, 12);
        expect(measure.bitsProcessed, at).toBe(one.bitsProcessed);
        expect(
          [...measured].every((v, i) => Object.is(v, expected[i])),
          at,
        ).toBe(true);
        const reader = new BitStream(256);
        reader.beginRead(many.buffer.subarray(0, (many.bitsProcessed + 7) >> 3));
        const read = new Float64Array(values.length).fill(99);
        reader.floats(read, 0, floats.length, -10, 10, 0.25);
        reader.angles(read, floats.length, angles.length, 12);
        expect(reader.ok, at).toBe(true);
        expect(
          [...read].every((v, i) => v === expected[i]),
          `${at} read ${read}`,
        ).toBe(true);
      }),
      opts,
    );
  });

  it('a read past the end or of a step beyond the range fails as float does, with the minimum', () => {
    const s = new BitStream(8);
    s.beginRead(new Uint8Array([0xff]));
    const values = new Float64Array(3).fill(5);
    // 0..20 in steps of 1 takes 5 bits: 0b11111 = 31 > 20.
    expect(s.floats(values, 0, 3, 0, 20, 1), at).toBe(false);
    expect(s.error, at).toBe('quantized float out of range');
    expect(Array.from(values), at).toEqual([0, 0, 0]);
    const short = new BitStream(8);
    short.beginRead(new Uint8Array([0x01]));
    const angles = new Float64Array(2).fill(5);
    expect(short.angles(angles, 0, 2, 8), at).toBe(false);
    expect(short.error, at).toBe('read past end');
    expect(angles[1], at).toBe(0);
  });

  it('quantizeValues and quantizeAngles give what quantize and quantizeAngle give, in place', () => {
    fc.assert(
      fc.property(run, fc.integer({ min: 0, max: 2 }), (xs, at0) => {
        const values = new Float64Array(xs.length + 4).fill(7);
        values.set(xs, at0);
        quantizeValues(values, at0, xs.length, -10, 10, 0.25);
        const angles = new Float64Array(xs.length + 4).fill(7);
        angles.set(xs, at0);
        quantizeAngles(angles, at0, xs.length, 16);
        for (let i = 0; i < values.length; i++) {
          const inRun = i >= at0 && i < at0 + xs.length;
          const x = xs[i - at0];
          const q = quantize(x, -10, 10, 0.25);
          const a = quantizeAngle(x, 16);
          // The array holds a number, not the caller's own: -0 only where quantize gives -0 too.
          if (inRun && !(values[i] === q || (Number.isNaN(q) && Number.isNaN(values[i])))) return false;
          if (inRun && angles[i] !== a) return false;
          if (!inRun && (values[i] !== 7 || angles[i] !== 7)) return false;
        }
        return true;
      }),
      opts,
    );
  });

  it('refuses a run outside the array or a bad bit count by name', () => {
    const s = new BitStream(8);
    s.beginWrite();
    expect(() => s.floats(new Float64Array(2), 1, 2, 0, 1, 0.5)).toThrow(/BitStream.floats: at and count/);
    expect(() => s.angles(new Float64Array(2), -1, 1, 8)).toThrow(/BitStream.angles: at and count/);
    expect(() => s.angles(new Float64Array(2), 0, 1, 40)).toThrow(/BitStream.angles: bits/);
    expect(() => s.floats([1, 2] as unknown as Float64Array, 0, 1, 0, 1, 0.5)).toThrow(/Float64Array/);
  });
});

describe('BitStream primitives round-trip', () => {
  const cases: [string, fc.Arbitrary<Field>][] = [
    ['uint 1..32 bits', uintArb],
    ['int over random ranges up to 2^32-1 wide, negative included', intArb],
    ['bool', boolArb],
    ['float quantized (clamped outside its range)', floatArb],
    ['angle (wrapped, quantized)', angleArb],
    ['varuint up to 2^32-1 and with a max', varuintArb],
    ['float32', float32Arb],
    ['bytesField', bytesArb],
    ['string (multi-byte UTF-8, BOM, maxBytes)', stringArb],
  ];
  for (const [name, arb] of cases) {
    it(name, () => {
      fc.assert(
        fc.property(arb, (f) => {
          roundTrip([f], at);
        }),
        opts,
      );
    });
  }

  it('every read angle lies in [0, 360)', () => {
    fc.assert(
      fc.property(angleArb, (f) => {
        const a = quantizeAngle(f.value, f.bits);
        expect(a >= 0 && a < 360, `${at}: ${f.value} -> ${a}`).toBe(true);
      }),
      opts,
    );
  });

  it('exact edge values', () => {
    roundTrip(
      [
        { kind: 'uint', bits: 32, value: 0xffffffff },
        { kind: 'uint', bits: 31, value: 2 ** 31 - 1 },
        { kind: 'int', min: -(2 ** 31), max: 2 ** 31 - 1, value: -(2 ** 31) },
        { kind: 'int', min: -(2 ** 31), max: 2 ** 31 - 1, value: 2 ** 31 - 1 },
        { kind: 'int', min: 7, max: 7, value: 7 },
        { kind: 'varuint', max: 0xffffffff, value: 0xffffffff },
        { kind: 'varuint', max: 0xffffffff, value: 127 },
        { kind: 'varuint', max: 0xffffffff, value: 128 },
        { kind: 'float32', value: -0 },
        { kind: 'float32', value: 3.4028234663852886e38 },
        { kind: 'string', maxBytes: 0, value: '' },
        { kind: 'string', maxBytes: 8, value: '\uFEFF\u00e9' },
        { kind: 'string', maxBytes: 10, value: '\u00e9\u20ac\u{1f600}' },
      ],
      at,
    );
  });

  it('varuint costs 8 bits per started group of 7', () => {
    const m = new BitStream().beginMeasure();
    const costs = [0, 127, 128, 16383, 16384, 2 ** 28 - 1, 2 ** 28, 0xffffffff].map((v) => {
      const before = m.bitsProcessed;
      m.varuint(v);
      return m.bitsProcessed - before;
    });
    expect(costs, at).toEqual([8, 8, 16, 16, 24, 32, 40, 40]);
  });
});

describe('BitStream messages', () => {
  it('random sequences of fields round-trip, and measuring gives the written bit count', () => {
    fc.assert(
      fc.property(fc.array(fieldArb, { maxLength: 40 }), (fields) => {
        roundTrip(fields, at);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('rewind rolls back a write: the rewound bits read as the later write, with no stale bits', () => {
    fc.assert(
      fc.property(
        fc.array(fieldArb, { maxLength: 8 }),
        fc.array(fieldArb, { minLength: 1, maxLength: 8 }),
        fc.array(fieldArb, { maxLength: 8 }),
        (prefix, discarded, kept) => {
          const w = new BitStream(CAPACITY).beginWrite();
          for (const f of prefix) serializeField(w, f);
          const mark = w.bitsProcessed;
          for (const f of discarded) serializeField(w, f);
          const longEnd = w.bytesProcessed;
          w.rewind(mark);
          expect(w.bitsProcessed, at).toBe(mark);
          for (const f of kept) serializeField(w, f);
          expect(w.ok, at).toBe(true);
          for (let i = w.bytesProcessed; i < longEnd; i++) expect(w.buffer[i], `${at} byte ${i}`).toBe(0);
          if (w.bitsProcessed & 7) {
            expect(w.buffer[w.bytesProcessed - 1] >>> (w.bitsProcessed & 7), `${at} padding bits`).toBe(0);
          }

          const r = new BitStream().beginRead(w.bytes);
          for (const f of [...prefix, ...kept]) expect(serializeField(r, f), at).toEqual(expected(f));
          expect(r.ok, `${at} ${r.error}`).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('beginWrite with dirtyBytes clears only those bytes, and the bits written are those a cleared buffer gets', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffffff }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 0x7fffff }), { minLength: 0, maxLength: 40 }),
        (first, second) => {
          const buffer = new Uint8Array(200);
          const s = new BitStream();
          s.beginWrite(buffer.length, buffer);
          for (const v of first) s.uint(v, 24);
          const dirty = (s.bitsProcessed + 7) >>> 3;
          s.beginWrite(buffer.length, buffer, dirty);
          for (const v of second) s.uint(v, 23);
          const clean = new BitStream(200).beginWrite();
          for (const v of second) clean.uint(v, 23);
          expect([...buffer], at).toEqual([...clean.bytes, ...new Uint8Array(200 - clean.bytes.length)]);
          // Past the last bit written, every byte is as it was: zero.
          expect(
            buffer.subarray((s.bitsProcessed + 7) >>> 3).every((b) => b === 0),
            at,
          ).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    // A dirty count past the limit, negative or missing clears the whole limit.
    for (const dirty of [undefined, -1, 500]) {
      const buffer = new Uint8Array(16).fill(0xff);
      new BitStream().beginWrite(8, buffer, dirty);
      expect([...buffer], `dirtyBytes ${dirty}`).toEqual([
        ...new Uint8Array(8),
        ...new Uint8Array(8).fill(0xff),
      ]);
    }
  });

  it('rewind clears a write overflow so a smaller message can take its place', () => {
    const w = new BitStream(64).beginWrite(4);
    w.uint(5, 8);
    const mark = w.bitsProcessed;
    w.uint(0xffffffff, 32);
    expect(w.ok, at).toBe(false);
    expect(w.error, at).toBe('write overflow');
    w.rewind(mark);
    expect(w.ok, at).toBe(true);
    expect(w.error, at).toBe('');
    w.uint(0xabcd, 16);
    expect(w.ok, at).toBe(true);
    const r = new BitStream().beginRead(w.bytes);
    expect([r.uint(0, 8), r.uint(0, 16)], at).toEqual([5, 0xabcd]);
    expect(() => w.rewind(w.bitsProcessed + 1), at).toThrow(RangeError);
    expect(() => w.rewind(-1), at).toThrow(RangeError);
  });
});

describe('BitStream reads of hostile data', () => {
  it('a read past the end fails, returns the minimum, and every later call is a no-op', () => {
    fc.assert(
      fc.property(fc.array(fieldArb, { minLength: 1, maxLength: 20 }), fc.nat(), (fields, cutSeed) => {
        const w = new BitStream(CAPACITY).beginWrite();
        const ends: number[] = [];
        for (const f of fields) {
          serializeField(w, f);
          ends.push(w.bitsProcessed);
        }
        const total = w.bytesProcessed;
        if (total === 0) return;
        const cut = cutSeed % total;
        const r = new BitStream().beginRead(w.bytes, cut);
        let failedAt = -1;
        for (let i = 0; i < fields.length; i++) {
          const f = fields[i];
          const fits = ends[i] <= cut * 8 && failedAt < 0;
          const before = r.bitsProcessed;
          const got = serializeField(r, f);
          if (fits) {
            expect(got, `${at} field ${i} before the cut`).toEqual(expected(f));
          } else {
            if (failedAt < 0) failedAt = i;
            expect(got, `${at} field ${i} ${f.kind} after the cut`).toEqual(minimum(f));
            expect(r.ok, `${at} field ${i}`).toBe(false);
            expect(r.error, `${at} field ${i}`).toBe('read past end');
            if (i > failedAt) expect(r.bitsProcessed, `${at} no-op after failure`).toBe(before);
          }
        }
        expect(r.bitsProcessed <= cut * 8, `${at} never reads beyond the data`).toBe(true);
        expect(failedAt >= 0 || ends[ends.length - 1] <= cut * 8, at).toBe(true);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('peek shows the next bits without moving, zeros past the data; skip consumes and fails past the end', () => {
    const w = new BitStream(16).beginWrite();
    w.uint(0b101, 3);
    w.uint(0x3ff, 10);
    const r = new BitStream().beginRead(w.bytes, 2);
    expect(r.peek(3)).toBe(0b101);
    expect(r.peek(24)).toBe(0b101 | (0x3ff << 3));
    expect(r.bitsProcessed).toBe(0);
    r.skip(3);
    expect(r.uint(0, 10)).toBe(0x3ff);
    // Three bits of data left, zeros after them.
    expect(r.peek(8)).toBe(0);
    r.skip(3);
    expect(r.ok).toBe(true);
    r.skip(1);
    expect(r.ok).toBe(false);
    expect(r.error).toBe('read past end');
    expect(r.bitsProcessed).toBe(16);
  });

  it('each primitive returns its minimum on an empty buffer', () => {
    const empty = new Uint8Array(0);
    const s = new BitStream();
    const calls: [string, () => FieldValue, FieldValue][] = [
      ['uint', () => s.uint(9, 8), 0],
      ['int', () => s.int(9, -5, 10), -5],
      ['bool', () => s.bool(true), false],
      ['float', () => s.float(9, -3, 10, 0.5), -3],
      ['angle', () => s.angle(90, 16), 0],
      ['varuint', () => s.varuint(9), 0],
      ['float32', () => s.float32(9), 0],
      ['bytesField', () => s.bytesField(new Uint8Array(2), 2), false],
      ['string', () => s.string('x', 10), ''],
    ];
    for (const [name, call, min] of calls) {
      s.beginRead(empty);
      expect(call(), `${at} ${name}`).toEqual(min);
      expect(s.ok, `${at} ${name}`).toBe(false);
      expect(s.error, `${at} ${name}`).toBe('read past end');
    }
  });

  it('a varuint whose continuation bit is past the end fails and returns 0', () => {
    const s = new BitStream().beginRead(new Uint8Array([0xfe]));
    expect(s.bool(true), at).toBe(false);
    expect(s.varuint(5), at).toBe(0);
    expect(s.ok, at).toBe(false);
  });

  it('out-of-range integers, floats and varuints fail', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.nat(),
        (min, width, pick) => {
          const bits = bitsRequired(width);
          const top = 2 ** bits - 1;
          if (top === width) return;
          const raw = width + 1 + (pick % (top - width));
          const w = new BitStream().beginWrite();
          w.uint(raw, bits);
          w.uint(raw, bits);
          const r = new BitStream().beginRead(w.bytes);
          expect(r.int(0, min, min + width), `${at} raw ${raw} in [0, ${width}]`).toBe(min);
          expect(r.ok, at).toBe(false);
          expect(r.error, at).toBe('integer out of range');
          const rf = new BitStream().beginRead(w.bytes);
          expect(rf.float(0, min, min + width * 0.25, 0.25), at).toBe(min);
          expect(rf.error, at).toBe('quantized float out of range');
        },
      ),
      opts,
    );

    const w = new BitStream().beginWrite();
    w.varuint(300);
    const r = new BitStream().beginRead(w.bytes);
    expect(r.varuint(0, 299), at).toBe(0);
    expect(r.error, at).toBe('varuint out of range');

    const tooBig = new BitStream().beginRead(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x7f]));
    expect(tooBig.varuint(0), at).toBe(0);
    expect(tooBig.error, `${at} 2^35-1 is over 2^32-1`).toBe('varuint out of range');

    const tooLong = new BitStream().beginRead(new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80, 0x00]));
    expect(tooLong.varuint(0), at).toBe(0);
    expect(tooLong.error, at).toBe('varuint too long');

    const s = new BitStream();
    for (const bits of [0x7fc00000, 0x7f800000, 0xff800000]) {
      const wf = new BitStream().beginWrite();
      wf.uint(bits, 32);
      s.beginRead(wf.bytes);
      expect(s.float32(1), `${at} ${bits.toString(16)}`).toBe(0);
      expect(s.error, at).toBe('non-finite float');
    }

    const ws = new BitStream().beginWrite();
    ws.int(9, 0, 15);
    s.beginRead(ws.bytes);
    expect(s.string('', 8), `${at} length 9 over maxBytes 8`).toBe('');
    expect(s.error, at).toBe('integer out of range');
  });

  it('invalid UTF-8 fails', () => {
    const invalid = [
      [0xc3, 0x28],
      [0xc0, 0x80],
      [0xed, 0xa0, 0x80],
      [0xe2, 0x82],
      [0xff],
      [0xf4, 0x90, 0x80, 0x80],
    ];
    for (const bytes of invalid) {
      const w = new BitStream().beginWrite();
      w.int(bytes.length, 0, 16);
      w.bytesField(Uint8Array.from(bytes), bytes.length);
      const r = new BitStream().beginRead(w.bytes);
      expect(r.string('x', 16), `${at} ${bytes}`).toBe('');
      expect(r.ok, `${at} ${bytes}`).toBe(false);
      expect(r.error, `${at} ${bytes}`).toBe('invalid utf-8');
    }
  });

  it('random garbage read through a random schema never throws, and what it accepts is in range', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 96 }),
        fc.array(fieldArb, { maxLength: 24 }),
        (bytes, fields) => {
          const r = new BitStream().beginRead(bytes);
          for (const f of fields) {
            const got = serializeField(r, f);
            if (!r.ok) {
              expect(got, `${at} ${f.kind}`).toEqual(minimum(f));
              continue;
            }
            expect(inRange(f, got), `${at} ${f.kind} ${String(got)}`).toBe(true);
          }
          expect(r.ok || r.error !== '', at).toBe(true);
          expect(r.bitsProcessed <= bytes.length * 8, at).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });
});

/** True when a value read for `f` is one a writer could have produced. */
function inRange(f: Field, v: FieldValue): boolean {
  switch (f.kind) {
    case 'uint':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** f.bits;
    case 'int':
      return typeof v === 'number' && Number.isInteger(v) && v >= f.min && v <= f.max;
    case 'bool':
      return typeof v === 'boolean';
    case 'float':
      return typeof v === 'number' && v === quantize(v, f.min, f.max, f.precision);
    case 'angle':
      return typeof v === 'number' && v >= 0 && v < 360 && v === quantizeAngle(v, f.bits);
    case 'varuint':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= f.max;
    case 'float32':
      return typeof v === 'number' && Number.isFinite(v) && v === Math.fround(v);
    case 'bytes':
      return v instanceof Uint8Array && v.length === f.data.length;
    case 'string':
      return typeof v === 'string' && new TextEncoder().encode(v).length <= f.maxBytes;
  }
}

describe('BitStream writes', () => {
  it('a write past the limit fails without throwing and never touches bytes beyond the limit', () => {
    fc.assert(
      fc.property(
        fc.array(fieldArb, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 0, max: 64 }),
        (fields, limit) => {
          const target = new Uint8Array(limit + 16).fill(0xaa);
          const w = new BitStream().beginWrite(limit, target);
          let needed = 0;
          for (const f of fields) {
            serializeField(w, f);
            needed += expectedBits(f);
          }
          expect(w.ok, `${at} needed ${needed} bits, limit ${limit * 8}`).toBe(needed <= limit * 8);
          if (!w.ok) expect(w.error, at).toBe('write overflow');
          expect(w.bitsProcessed <= limit * 8, at).toBe(true);
          for (let i = limit; i < target.length; i++) expect(target[i], `${at} byte ${i}`).toBe(0xaa);
        },
      ),
      opts,
    );
  });

  it('after a write overflow every call is a no-op returning the minimum', () => {
    const w = new BitStream().beginWrite(1);
    w.uint(0x1ff, 9);
    expect(w.ok, at).toBe(false);
    const pos = w.bitsProcessed;
    expect(w.uint(3, 2), at).toBe(0);
    expect(w.int(3, 1, 5), at).toBe(1);
    expect(w.bool(true), at).toBe(false);
    expect(w.string('abc', 8), at).toBe('');
    expect(w.bitsProcessed, at).toBe(pos);
    expect(w.error, at).toBe('write overflow');
  });

  it('writing a value outside its declared range throws a RangeError naming it', () => {
    const w = new BitStream().beginWrite();
    expect(() => w.int(5, 0, 4), at).toThrow(/5 is outside \[0, 4\]/);
    expect(() => w.int(-6, -5, 5), at).toThrow(/-6/);
    expect(() => w.int(1.5, 0, 4), at).toThrow(/1\.5/);
    expect(() => w.int(Number.NaN, 0, 4), at).toThrow(/NaN/);
    expect(() => w.uint(256, 8), at).toThrow(/256 does not fit in 8 bits/);
    expect(() => w.uint(-1, 8), at).toThrow(/-1/);
    expect(() => w.uint(2 ** 32, 32), at).toThrow(RangeError);
    expect(() => w.uint(2.5, 8), at).toThrow(/2\.5 does not fit in 8 bits/);
    expect(() => w.uint(2 ** 32 - 0.5, 32), at).toThrow(RangeError);
    expect(() => w.uint(2 ** 31 + 0.5, 32), at).toThrow(RangeError);
    expect(() => w.uint(1, 2.5), at).toThrow(/bits must be an integer in \[0, 32\], got 2\.5/);
    expect(() => w.uint(1, 33), at).toThrow(/got 33/);
    expect(() => w.uint(1, -1), at).toThrow(/got -1/);
    expect(w.uint(2 ** 32 - 1, 32), `${at}: the largest 32-bit value fits`).toBe(2 ** 32 - 1);
    w.rewind(0);
    expect(() => w.varuint(-1), at).toThrow(/-1/);
    expect(() => w.varuint(11, 10), at).toThrow(/11 is outside \[0, 10\]/);
    expect(() => w.varuint(2 ** 32), at).toThrow(RangeError);
    expect(() => w.string('héllo', 5), at).toThrow(/6 bytes is over the limit of 5/);
    expect(() => w.float32(Number.NaN), at).toThrow(/NaN/);
    expect(() => w.float32(1e39), at).toThrow(/1e\+39/);
    expect(w.ok, `${at}: a throwing write leaves the stream usable`).toBe(true);
    expect(w.bitsProcessed, at).toBe(0);
  });

  it('bad arguments throw a RangeError naming the value', () => {
    const s = new BitStream();
    for (const mode of ['write', 'read', 'measure'] as const) {
      if (mode === 'write') s.beginWrite();
      else if (mode === 'read') s.beginRead(new Uint8Array(8));
      else s.beginMeasure();
      expect(() => s.uint(0, 33), `${at} ${mode}`).toThrow(/got 33/);
      expect(() => s.uint(0, -1), `${at} ${mode}`).toThrow(/got -1/);
      expect(() => s.angle(0, 40), `${at} ${mode}`).toThrow(/got 40/);
      expect(() => s.int(0, 0, 2 ** 32), `${at} ${mode}`).toThrow(/4294967296/);
    }
    expect(() => s.beginWrite(Number.NaN), at).toThrow(/limitBytes .* NaN/);
    expect(() => s.beginWrite(-1), at).toThrow(/limitBytes .* -1/);
    expect(() => s.beginRead(new Uint8Array(4), -2), at).toThrow(/byteLength .* -2/);
    expect(() => s.beginRead(new Uint8Array(4), 1.5), at).toThrow(/byteLength .* 1\.5/);
  });

  it('a bad byte-field length fails the stream instead of reading or writing', () => {
    const s = new BitStream().beginWrite();
    expect(s.bytesField(new Uint8Array(2), 3), at).toBe(false);
    expect(s.error, at).toBe('byte field longer than its buffer');
    s.beginRead(new Uint8Array(8));
    expect(s.bytesField(new Uint8Array(4), 1.5), at).toBe(false);
    expect(s.bitsProcessed, at).toBe(0);
  });

  it('notes give each write its first bit, width and low bits, and go void when their arrays are full', () => {
    const notes = {
      fieldCount: 0,
      fieldStart: new Uint16Array(4),
      fieldBits: new Uint8Array(4),
      fieldValue: new Uint32Array(4),
    };
    const s = new BitStream(64).beginWrite();
    s.notes = notes;
    s.bool(true);
    s.int(-3, -8, 7);
    s.float(1.25, -2, 2, 1 / 4);
    s.uint(0xfedcba98, 32);
    expect(notes.fieldCount).toBe(4);
    expect([...notes.fieldStart]).toEqual([0, 1, 5, 10]);
    expect([...notes.fieldBits]).toEqual([1, 4, 5, 32]);
    expect([...notes.fieldValue]).toEqual([1, 5, 13, 0xfedcba98]);
    s.bool(false);
    expect(notes.fieldCount).toBe(-1);
    s.bool(true);
    expect(notes.fieldCount).toBe(-1);
    // Unset, the stream notes nothing and writes the same bits.
    s.notes = null;
    const again = new BitStream(64).beginWrite();
    again.bool(true);
    again.int(-3, -8, 7);
    again.float(1.25, -2, 2, 1 / 4);
    again.uint(0xfedcba98, 32);
    again.bool(false);
    again.bool(true);
    expect(again.bytes).toEqual(s.bytes);
  });

  it('beginWrite uses the stream’s own buffer, never the data last given to beginRead', () => {
    const received = Uint8Array.from([1, 2, 3, 4]);
    const s = new BitStream(16);
    s.beginRead(received);
    expect(s.uint(0, 8), at).toBe(1);
    s.beginWrite();
    s.uint(0xff, 8);
    expect(Array.from(received), at).toEqual([1, 2, 3, 4]);
    expect(s.bitsRemaining, at).toBe(16 * 8 - 8);
  });

  it('beginWrite into a target defaults to the whole target', () => {
    const target = new Uint8Array(100);
    const s = new BitStream(2).beginWrite(undefined, target);
    s.uint(0xdeadbeef, 32);
    expect(s.ok, at).toBe(true);
    expect(s.bitsRemaining, at).toBe(100 * 8 - 32);
    expect(s.bytes.buffer, at).toBe(target.buffer);
  });
});
