// Tests for entity field tables: quantization matches the wire exactly, tables are checked at compile time and at run time.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitStream, quantize, quantizeAngle } from '../../src/protocol/bitstream.ts';
import {
  decodeField,
  defineEntityType,
  defineGameSchema,
  type EntityTypeSchema,
  encodeField,
  entityToValues,
  type FieldSpec,
  type FieldTable,
  MAX_ENTITY_FIELDS,
  MAX_ENTITY_TYPES,
  schemaHash,
  typeIdOf,
  valuesToEntity,
} from '../../src/protocol/schema.ts';

const SEED = Number(process.env.SEED ?? 0x5c4e);
const opts = { seed: SEED, numRuns: 500 };
const at = `seed ${SEED}`;

interface PlayerEntity {
  x: number;
  y: number;
  z: number;
  yaw: number;
  pitch: number;
  ducked: boolean;
  weapon: number;
}

const playerTable = {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32, interp: 'linear' },
  y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32, interp: 'linear' },
  z: { kind: 'float', min: -1024, max: 1024, precision: 1 / 8 },
  yaw: { kind: 'angle', bits: 16 },
  pitch: { kind: 'angle', bits: 10, interp: 'none' },
  ducked: { kind: 'bool' },
  weapon: { kind: 'int', min: 0, max: 15, interp: 'step' },
} satisfies FieldTable<PlayerEntity>;

const playerEntity = defineEntityType<PlayerEntity>('player', playerTable);

describe('defineEntityType', () => {
  it('compiles a table in its written order with ranges, bit costs and interpolated fields', () => {
    expect(playerEntity.fieldCount, at).toBe(7);
    expect(
      playerEntity.fields.map((f) => f.name),
      at,
    ).toEqual(['x', 'y', 'z', 'yaw', 'pitch', 'ducked', 'weapon']);
    expect(Array.from(playerEntity.hi), at).toEqual([262144, 262144, 16384, 65535, 1023, 1, 15]);
    expect(Array.from(playerEntity.bits), at).toEqual([19, 19, 15, 16, 10, 1, 4]);
    expect(playerEntity.valueBits, at).toBe(19 + 19 + 15 + 16 + 10 + 1 + 4);
    expect(playerEntity.changedCountBits, at).toBe(3);
    expect(playerEntity.interpFields, at).toEqual([
      { name: 'x', index: 0, kind: 'linear' },
      { name: 'y', index: 1, kind: 'linear' },
      { name: 'z', index: 2, kind: 'linear' },
      { name: 'yaw', index: 3, kind: 'angle' },
      { name: 'weapon', index: 6, kind: 'step' },
    ]);
    expect(playerEntity.positionFields, at).toEqual([0, 1, 2]);
    expect(playerEntity.priority, at).toBe(1);
  });

  it('a type without x, y, z fields has no position fields', () => {
    const t = defineEntityType<{ volume: number; on: boolean }>('sound', {
      volume: { kind: 'int', min: 0, max: 255 },
      on: { kind: 'bool' },
    });
    expect(t.positionFields, at).toEqual([-1, -1, -1]);
    expect(t.interpFields, at).toEqual([]);
  });

  it('a table missing a field of the state type, or with a bool spec for a number, does not compile', () => {
    const missing = () =>
      defineEntityType<PlayerEntity>(
        'player',
        // @ts-expect-error: 'weapon' is missing from the table
        {
          x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
          y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
          z: { kind: 'float', min: -1024, max: 1024, precision: 1 / 8 },
          yaw: { kind: 'angle', bits: 16 },
          pitch: { kind: 'angle', bits: 10 },
          ducked: { kind: 'bool' },
        },
      );
    const wrongKind: FieldTable<{ on: boolean }> = {
      // @ts-expect-error: a boolean field needs a bool spec
      on: { kind: 'int', min: 0, max: 1 },
    };
    // At run time the incomplete table compiles (it is the type checker that refuses it).
    expect(missing().fieldCount, at).toBe(6);
    expect(wrongKind.on.kind, at).toBe('int');
  });

  const bad: [string, Record<string, FieldSpec>, RegExp][] = [
    [
      'min == max',
      { speed: { kind: 'float', min: 5, max: 5, precision: 1 } },
      /'speed'.*min \(5\).*max \(5\)/,
    ],
    ['min > max', { hp: { kind: 'int', min: 10, max: 0 } }, /'hp'.*min \(10\).*max \(0\)/],
    ['precision 0', { speed: { kind: 'float', min: 0, max: 5, precision: 0 } }, /'speed'.*precision.*0/],
    ['precision < 0', { speed: { kind: 'float', min: 0, max: 5, precision: -1 } }, /'speed'.*precision.*-1/],
    [
      'precision NaN',
      { speed: { kind: 'float', min: 0, max: 5, precision: Number.NaN } },
      /'speed'.*precision/,
    ],
    ['infinite range', { x: { kind: 'float', min: 0, max: Infinity, precision: 1 } }, /'x'.*finite/],
    ['too many steps', { x: { kind: 'float', min: 0, max: 1e6, precision: 1e-6 } }, /'x'.*steps/],
    ['angle bits 0', { yaw: { kind: 'angle', bits: 0 } }, /'yaw'.*bits.*0/],
    ['angle bits 32', { yaw: { kind: 'angle', bits: 32 } }, /'yaw'.*bits.*32/],
    ['int not integer', { n: { kind: 'int', min: 0, max: 2.5 } }, /'n'.*integers/],
    ['int beyond 32 bits', { n: { kind: 'int', min: 0, max: 2 ** 31 } }, /'n'.*32-bit/],
    [
      'bad interp',
      { x: { kind: 'float', min: 0, max: 1, precision: 0.1, interp: 'step' as 'linear' } },
      /'x'.*interp/,
    ],
    ['unknown kind', { x: { kind: 'vector' } as unknown as FieldSpec }, /'x'.*kind.*vector/],
    ['integer field name', { 7: { kind: 'bool' } }, /'7'.*integer name/],
  ];
  for (const [name, table, message] of bad) {
    it(`rejects a table with ${name}, naming the field`, () => {
      expect(
        () => defineEntityType('thing', table as unknown as FieldTable<Record<string, number>>),
        at,
      ).toThrow(message);
    });
  }

  it('rejects more than 32 fields, naming the type and count', () => {
    const table: Record<string, FieldSpec> = {};
    for (let i = 0; i <= MAX_ENTITY_FIELDS; i++) table[`f${i}`] = { kind: 'bool' };
    expect(
      () => defineEntityType('crowd', table as unknown as FieldTable<Record<string, number>>),
      at,
    ).toThrow(/'crowd'.*33 fields/);
    delete table.f32;
    expect(
      defineEntityType('crowd', table as unknown as FieldTable<Record<string, number>>).fieldCount,
      at,
    ).toBe(32);
  });

  it('rejects an empty name and a bad priority', () => {
    expect(() => defineEntityType('', {}), at).toThrow(/name/);
    expect(() => defineEntityType('a', {}, { priority: 0 }), at).toThrow(/'a'.*priority.*0/);
  });
});

describe('defineGameSchema', () => {
  const rocket = defineEntityType<{ x: number }>('rocket', {
    x: { kind: 'float', min: 0, max: 1, precision: 0.5 },
  });

  it('gives ids by position, the stride of the widest type and the capacity', () => {
    const schema = defineGameSchema([playerEntity, rocket], { maxEntities: 300 });
    expect(typeIdOf(schema, playerEntity), at).toBe(0);
    expect(typeIdOf(schema, rocket), at).toBe(1);
    expect(schema.stride, at).toBe(7);
    expect(schema.typeBits, at).toBe(1);
    expect(schema.maxEntities, at).toBe(300);
    expect(defineGameSchema([rocket]).maxEntities, at).toBe(1024);
    expect(() => typeIdOf(defineGameSchema([rocket]), playerEntity), at).toThrow(/'player'/);
  });

  it('hashes the same definitions alike and any wire difference apart', () => {
    const make = (max: number, name = 'x', maxEntities = 64) =>
      defineGameSchema(
        [
          playerEntity,
          defineEntityType<Record<string, number>>('r', { [name]: { kind: 'int', min: 0, max } }),
        ],
        { maxEntities },
      );
    const base = schemaHash(make(10));
    expect(schemaHash(make(10)), at).toBe(base);
    expect(schemaHash(make(11)), at).not.toBe(base);
    expect(schemaHash(make(10, 'y')), at).not.toBe(base);
    expect(schemaHash(make(10, 'x', 65)), at).not.toBe(base);
    expect(schemaHash(defineGameSchema([rocket, playerEntity])), at).not.toBe(
      schemaHash(defineGameSchema([playerEntity, rocket])),
    );
  });

  it('rejects more than 16 types, a repeated name and a bad capacity', () => {
    const many: EntityTypeSchema[] = [];
    for (let i = 0; i <= MAX_ENTITY_TYPES; i++) many.push(defineEntityType(`t${i}`, {}));
    expect(() => defineGameSchema(many), at).toThrow(/17 types/);
    expect(defineGameSchema(many.slice(0, 16)).typeBits, at).toBe(4);
    expect(() => defineGameSchema([rocket, rocket]), at).toThrow(/'rocket'.*twice/);
    expect(() => defineGameSchema([rocket], { maxEntities: 0 }), at).toThrow(/maxEntities.*0/);
    expect(() => defineGameSchema([rocket], { maxEntities: 70000 }), at).toThrow(/maxEntities.*70000/);
    expect(() => defineGameSchema([]), at).toThrow(/types/);
  });
});

describe('encodeField / decodeField', () => {
  it('a float decodes to exactly what quantize() and the bit stream give', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -100000, max: 100000 }),
        fc.integer({ min: 1, max: 100000 }),
        fc.constantFrom(1, 0.5, 1 / 32, 1 / 8, 0.1, 3),
        fc.double({ min: -300000, max: 300000, noNaN: true }),
        (min, span, precision, value) => {
          const max = min + span * precision;
          const t = defineEntityType<{ v: number }>('f', { v: { kind: 'float', min, max, precision } });
          const q = encodeField(t, 0, value);
          const msg = `${at} min=${min} max=${max} p=${precision} v=${value}`;
          expect(q >= t.lo[0] && q <= t.hi[0], msg).toBe(true);
          expect(decodeField(t, 0, q), msg).toBe(quantize(value, min, max, precision));
          const s = new BitStream(16).beginWrite();
          const written = s.float(value, min, max, precision);
          expect(decodeField(t, 0, q), msg).toBe(written);
          expect(encodeField(t, 0, decodeField(t, 0, q) as number), msg).toBe(q);
        },
      ),
      opts,
    );
  });

  it('an angle decodes to exactly what quantizeAngle() gives, for any degrees', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }),
        fc.double({ min: -1e6, max: 1e6, noNaN: true }),
        (bits, deg) => {
          const t = defineEntityType<{ a: number }>('a', { a: { kind: 'angle', bits } });
          const q = encodeField(t, 0, deg);
          const msg = `${at} bits=${bits} deg=${deg}`;
          expect(Number.isInteger(q) && q >= 0 && q < 2 ** bits, msg).toBe(true);
          expect(decodeField(t, 0, q), msg).toBe(quantizeAngle(deg, bits));
          expect(encodeField(t, 0, decodeField(t, 0, q) as number), msg).toBe(q);
        },
      ),
      opts,
    );
  });

  it('an angle between two steps decodes to exactly (q * 360) / 2^bits, as the wire defines it', () => {
    // decodeNumber multiplies by 360 / 2^bits (no division per field): exact for every q the
    // blend and rewind give it, since scaling by a power of two commutes with rounding.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        // A fraction of a step as a blend makes one: a multiple of 2^-40 in [-1, 2].
        fc.integer({ min: -(2 ** 40), max: 2 ** 41 }),
        (bits, share, frac) => {
          const t = defineEntityType<{ a: number }>('a', { a: { kind: 'angle', bits } });
          const q = Math.floor(share * 2 ** bits) + frac / 2 ** 40;
          expect(decodeField(t, 0, q), `${at} bits=${bits} q=${q}`).toBe((q * 360) / 2 ** bits);
        },
      ),
      opts,
    );
  });

  it('ints round and clamp, bools are 0/1, NaN gives the minimum', () => {
    const t = defineEntityType<{ n: number; b: boolean; f: number }>('m', {
      n: { kind: 'int', min: -5, max: 5 },
      b: { kind: 'bool' },
      f: { kind: 'float', min: 1, max: 2, precision: 0.25 },
    });
    expect(
      [encodeField(t, 0, 2.4), encodeField(t, 0, -9), encodeField(t, 0, 99), encodeField(t, 0, Number.NaN)],
      at,
    ).toEqual([2, -5, 5, -5]);
    expect([encodeField(t, 1, true), encodeField(t, 1, false)], at).toEqual([1, 0]);
    expect([decodeField(t, 1, 1), decodeField(t, 1, 0)], at).toEqual([true, false]);
    expect(
      [encodeField(t, 2, Number.NaN), encodeField(t, 2, Infinity), encodeField(t, 2, -Infinity)],
      at,
    ).toEqual([0, 4, 0]);
  });

  it('an object round-trips through stored values to its quantized form', () => {
    fc.assert(
      fc.property(
        fc.record({
          x: fc.double({ min: -5000, max: 5000, noNaN: true }),
          y: fc.double({ min: -5000, max: 5000, noNaN: true }),
          z: fc.double({ min: -5000, max: 5000, noNaN: true }),
          yaw: fc.double({ min: -720, max: 720, noNaN: true }),
          pitch: fc.double({ min: -90, max: 90, noNaN: true }),
          ducked: fc.boolean(),
          weapon: fc.integer({ min: -3, max: 20 }),
        }),
        (p) => {
          const values = entityToValues(playerEntity, p, new Int32Array(10), 3);
          const back = valuesToEntity(playerEntity, values, 3, {} as PlayerEntity);
          const msg = `${at} ${JSON.stringify(p)}`;
          expect(back.x, msg).toBe(quantize(p.x, -4096, 4096, 1 / 32));
          expect(back.z, msg).toBe(quantize(p.z, -1024, 1024, 1 / 8));
          expect(back.yaw, msg).toBe(quantizeAngle(p.yaw, 16));
          expect(back.pitch, msg).toBe(quantizeAngle(p.pitch, 10));
          expect(back.ducked, msg).toBe(p.ducked);
          expect(back.weapon, msg).toBe(Math.min(15, Math.max(0, p.weapon)));
          expect(Array.from(entityToValues(playerEntity, back, new Int32Array(7))), msg).toEqual(
            Array.from(values.subarray(3, 10)),
          );
        },
      ),
      opts,
    );
  });
});
