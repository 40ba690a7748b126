// Entity field tables: a game declares each entity type as an ordered table of quantized fields,
// compiled here into the runtime schema that drives the snapshot codec, the server's entity
// store and the client's interpolation.
//
// A table lists every field of the entity's state type (a missing or extra field is a compile
// error), in order of how often the field changes, most often first: an update carries "the
// number of the last changed field + 1", so fields that rarely change, placed last, cost nothing
// while they stay still. (Object keys keep their written order; names must not be integers.)
//
// Values are stored as integers, in quantized form: a float as its step index k (the value is
// min + k * precision), an angle as its step k of 2^bits per turn (k * 360 / 2^bits degrees), an
// int as itself, a bool as 0 or 1. Comparing two stored values is exact, and copying is cheap.

import { bitsRequired } from './bitstream.ts';
import { PrefixCode } from './prefix-code.ts';

/** Largest number of fields in one entity type. */
export const MAX_ENTITY_FIELDS = 32;
/** Largest number of entity types in one game. */
export const MAX_ENTITY_TYPES = 16;
/** Largest entity capacity a game may declare (indices travel in 16 bits at most). */
export const MAX_ENTITY_CAPACITY = 65536;
/** Entity capacity of a game schema unless it says otherwise. */
export const DEFAULT_MAX_ENTITIES = 1024;

export interface FloatField {
  kind: 'float';
  min: number;
  max: number;
  /** Step between representable values; (max - min) / precision steps fit in 31 bits. */
  precision: number;
  /** Default 'linear'. */
  interp?: 'linear' | 'none';
}

export interface AngleField {
  kind: 'angle';
  /** Bits per turn, 1..31. Degrees in and out, wrapped into [0, 360). */
  bits: number;
  /** Default 'angle' (shortest way round). */
  interp?: 'angle' | 'none';
}

export interface IntField {
  kind: 'int';
  /** Inclusive range of 32-bit signed integers. */
  min: number;
  max: number;
  /** 'linear' blends; 'step' and 'none' (the default) keep the older frame's value until the newer frame's tick. */
  interp?: 'linear' | 'step' | 'none';
}

export interface BoolField {
  kind: 'bool';
}

export type NumberFieldSpec = FloatField | AngleField | IntField;
export type FieldSpec = NumberFieldSpec | BoolField;

/**
 * A field table for the state type `S`: one spec per field, boolean fields as `bool` and number
 * fields as float, angle or int. Key order is change-frequency order, most often first.
 */
export type FieldTable<S> = { [K in keyof S]: S[K] extends boolean ? BoolField : NumberFieldSpec };

export type FieldKind = FieldSpec['kind'];
export type InterpKind = 'linear' | 'angle' | 'step';

/** A field the client's interpolation history tracks. */
export interface InterpField {
  readonly name: string;
  readonly index: number;
  readonly kind: InterpKind;
}

/** One compiled field: its stored-integer range [lo, hi] and its wire cost. */
export interface CompiledField {
  readonly name: string;
  readonly index: number;
  readonly kind: FieldKind;
  readonly interp: InterpKind | 'none';
  /** Smallest and largest stored integer. */
  readonly lo: number;
  readonly hi: number;
  /** Bits one value costs on the wire: bitsRequired(hi - lo). */
  readonly bits: number;
  /** Float: range and step. Angle: min 0, max 360, precision 360 / 2^bits. Int: min, max, 1. */
  readonly min: number;
  readonly max: number;
  readonly precision: number;
}

/** The runtime form of an entity type, independent of the game's state type. */
export interface EntityTypeSchema {
  readonly name: string;
  readonly fieldCount: number;
  readonly fields: readonly CompiledField[];
  /** Stored-integer bounds and wire bits per field, for the hot paths. */
  readonly lo: Int32Array;
  readonly hi: Int32Array;
  readonly bits: Uint8Array;
  /** Bits of all fields' values together. */
  readonly valueBits: number;
  /** Bits of "number of the last changed field + 1" in an update: bitsRequired(fieldCount). */
  readonly changedCountBits: number;
  /** Fields interpolated by the client, in table order. */
  readonly interpFields: readonly InterpField[];
  /**
   * Indices of the float or int fields named x, y and z (-1 when absent). The server derives an
   * entity's position for interest from them; a type without them sets its position itself.
   */
  readonly positionFields: readonly [number, number, number];
  /** Relative snapshot priority (default 1): an entity twice as important is sent twice as often. */
  readonly priority: number;
  /**
   * Each field's predictor in an update (src/protocol/snapshot.ts): 0 holds the client's value
   * (bools, step and 'none' fields), 1 extrapolates on a line ('linear' floats and ints), 2 round
   * the circle ('angle' angles).
   */
  readonly predict: Uint8Array;
  /**
   * How decodeNumber reads each field, for the hot paths: `decodeKind` 0 takes the stored integer
   * (ints, bools); DECODE_FLOAT and DECODE_ANGLE give decodeMin + q * decodeStep, an angle's
   * decodeMin being 0 and its decodeStep 360 / 2^bits (a power of two times 360, so q * decodeStep
   * is exactly (q * 360) / 2^bits, with no division).
   */
  readonly decodeKind: Uint8Array;
  readonly decodeMin: Float64Array;
  readonly decodeStep: Float64Array;
  /**
   * Prefix code of an entry's head for an entity the client holds: an update's changed count
   * (0 .. fieldCount), or fieldCount + 1 for any other operation (src/protocol/snapshot.ts).
   */
  readonly changedCode: PrefixCode;
  /** Per field, prefix code of a residual's class (0 .. bitsRequired(hi - lo)). */
  readonly residualCodes: readonly PrefixCode[];
  /** The symbol counts the codes were built from (trained, or the defaults). */
  readonly codeCounts: EntityCodeCounts;
}

/** An entity type whose state is `S` (the type parameter only types the object helpers). */
export interface EntityType<S> extends EntityTypeSchema {
  readonly fieldNames: readonly (keyof S & string)[];
  /**
   * Each field's index by name, derived from the table's order: read and write flat value arrays
   * as `values[offset + type.index.x]` (or destructure once into constants) at no cost per access.
   */
  readonly index: { readonly [K in keyof S & string]: number };
  /** Never set: carries `S` for type inference. */
  readonly stateType?: S;
}

/**
 * Symbol counts a game trains its snapshot codes on (from its own traffic: `npm run train-codes`
 * prints them for the arena): a more frequent symbol gets a shorter code. `changed` has
 * fieldCount + 2 counts (an update's changed count 0 .. fieldCount, then every other operation
 * on an entity the client holds), `residual` one list per field in table order
 * with bitsRequired(hi - lo) + 1 counts (a residual's class). Counts are only weights: any value
 * can still be sent, an unseen one at the longest code.
 */
export interface EntityCodeCounts {
  readonly changed: readonly number[];
  readonly residual: readonly (readonly number[])[];
}

export interface EntityTypeOptions {
  /** Relative snapshot priority, > 0 (default 1). */
  priority?: number;
  /**
   * Trained symbol counts for the snapshot codes. Default: every changed count alike, and a
   * residual of 0 as likely as all the others together.
   */
  code?: EntityCodeCounts;
}

/** The residual classes of a field: 0 .. bitsRequired(hi - lo). */
export function residualClasses(f: CompiledField): number {
  return bitsRequired(f.hi - f.lo) + 1;
}

/** The default code counts of a type's fields (see EntityTypeOptions.code). */
export function defaultCodeCounts(fields: readonly CompiledField[]): EntityCodeCounts {
  return {
    changed: new Array<number>(fields.length + 2).fill(1),
    residual: fields.map((f) => {
      const n = residualClasses(f);
      const counts = new Array<number>(n).fill(1);
      counts[0] = n - 1;
      return counts;
    }),
  };
}

function checkCodeCounts(typeName: string, fields: readonly CompiledField[], code: EntityCodeCounts): void {
  const where = `entity type '${typeName}': code`;
  const check = (counts: unknown, length: number, what: string): void => {
    if (!Array.isArray(counts) || counts.length !== length) {
      throw new RangeError(
        `${where}: ${what} must list ${length} counts, got ${String((counts as unknown[] | null)?.length)}`,
      );
    }
    for (const c of counts) {
      if (typeof c !== 'number' || !(c >= 0) || !Number.isFinite(c)) {
        throw new RangeError(`${where}: ${what} counts must be finite numbers >= 0, got ${String(c)}`);
      }
    }
  };
  if (code === null || typeof code !== 'object') throw new TypeError(`${where}: must be an object`);
  check(code.changed, fields.length + 2, 'changed');
  if (!Array.isArray(code.residual) || code.residual.length !== fields.length) {
    throw new RangeError(`${where}: residual must list one count list per field (${fields.length})`);
  }
  for (const f of fields) check(code.residual[f.index], residualClasses(f), `residual of field '${f.name}'`);
}

/** EntityTypeSchema.decodeKind: a float field (min + q * precision). */
export const DECODE_FLOAT = 1;
/** EntityTypeSchema.decodeKind: an angle field (q * 360 / 2^bits, as q * decodeStep). */
export const DECODE_ANGLE = 2;
/** Predictor ids (PREDICT_LINEAR and PREDICT_ANGLE of snapshot.ts). */
const PREDICT_LINEAR_FIELD = 1;
const PREDICT_ANGLE_FIELD = 2;

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function compileField(typeName: string, name: string, index: number, spec: FieldSpec): CompiledField {
  const where = `entity type '${typeName}': field '${name}'`;
  if (spec === null || typeof spec !== 'object') throw new TypeError(`${where}: spec must be an object`);
  const interp = (spec as { interp?: unknown }).interp;
  const checkInterp = (allowed: readonly string[]): void => {
    if (interp !== undefined && !allowed.includes(interp as string)) {
      throw new RangeError(`${where}: interp must be one of ${allowed.join(', ')}, got ${String(interp)}`);
    }
  };
  switch (spec.kind) {
    case 'float': {
      const { min, max, precision } = spec;
      if (!Number.isFinite(min) || !Number.isFinite(max)) {
        throw new RangeError(`${where}: min and max must be finite, got min ${min}, max ${max}`);
      }
      if (!(min < max)) throw new RangeError(`${where}: min (${min}) must be less than max (${max})`);
      if (!(precision > 0) || !Number.isFinite(precision)) {
        throw new RangeError(`${where}: precision must be a positive finite number, got ${precision}`);
      }
      const steps = Math.round((max - min) / precision);
      if (!(steps >= 1 && steps <= INT32_MAX)) {
        throw new RangeError(`${where}: (max - min) / precision must be 1..2^31-1 steps, got ${steps}`);
      }
      checkInterp(['linear', 'none']);
      return {
        name,
        index,
        kind: 'float',
        interp: interp === 'none' ? 'none' : 'linear',
        lo: 0,
        hi: steps,
        bits: bitsRequired(steps),
        min,
        max,
        precision,
      };
    }
    case 'angle': {
      const { bits } = spec;
      if (!Number.isInteger(bits) || bits < 1 || bits > 31) {
        throw new RangeError(`${where}: bits must be an integer in 1..31, got ${bits}`);
      }
      checkInterp(['angle', 'none']);
      const scale = 2 ** bits;
      return {
        name,
        index,
        kind: 'angle',
        interp: interp === 'none' ? 'none' : 'angle',
        lo: 0,
        hi: scale - 1,
        bits,
        min: 0,
        max: 360,
        precision: 360 / scale,
      };
    }
    case 'int': {
      const { min, max } = spec;
      if (!Number.isInteger(min) || !Number.isInteger(max) || min < INT32_MIN || max > INT32_MAX) {
        throw new RangeError(`${where}: min and max must be 32-bit integers, got min ${min}, max ${max}`);
      }
      if (!(min < max)) throw new RangeError(`${where}: min (${min}) must be less than max (${max})`);
      checkInterp(['linear', 'step', 'none']);
      return {
        name,
        index,
        kind: 'int',
        interp: interp === 'linear' || interp === 'step' ? interp : 'none',
        lo: min,
        hi: max,
        bits: bitsRequired(max - min),
        min,
        max,
        precision: 1,
      };
    }
    case 'bool':
      return {
        name,
        index,
        kind: 'bool',
        interp: 'none',
        lo: 0,
        hi: 1,
        bits: 1,
        min: 0,
        max: 1,
        precision: 1,
      };
    default:
      throw new RangeError(
        `${where}: kind must be 'float', 'angle', 'int' or 'bool', got ${String((spec as { kind?: unknown }).kind)}`,
      );
  }
}

/**
 * Compiles an entity type from its field table (see the file header for the ordering rule).
 * Throws an Error naming the type and field when a spec is invalid (min >= max, precision <= 0,
 * too many steps, bad angle bits or interp) or the table has more than MAX_ENTITY_FIELDS fields.
 */
export function defineEntityType<S>(
  name: string,
  table: FieldTable<S>,
  options: EntityTypeOptions = {},
): EntityType<S> {
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(`defineEntityType: name must be a non-empty string, got ${String(name)}`);
  }
  if (table === null || typeof table !== 'object') {
    throw new TypeError(`entity type '${name}': field table must be an object`);
  }
  const names = Object.keys(table) as (keyof S & string)[];
  if (names.length > MAX_ENTITY_FIELDS) {
    throw new RangeError(
      `entity type '${name}': ${names.length} fields is over the limit of ${MAX_ENTITY_FIELDS}`,
    );
  }
  const priority = options.priority ?? 1;
  if (!(priority > 0) || !Number.isFinite(priority)) {
    throw new RangeError(`entity type '${name}': priority must be a positive finite number, got ${priority}`);
  }
  const fields: CompiledField[] = [];
  for (let i = 0; i < names.length; i++) {
    const fieldName = names[i];
    if (/^(0|[1-9][0-9]*)$/.test(fieldName)) {
      throw new RangeError(`entity type '${name}': field '${fieldName}': an integer name breaks field order`);
    }
    fields.push(compileField(name, fieldName, i, (table as Record<string, FieldSpec>)[fieldName]));
  }
  const interpFields: InterpField[] = [];
  let valueBits = 0;
  for (const f of fields) {
    valueBits += f.bits;
    if (f.interp !== 'none') interpFields.push({ name: f.name, index: f.index, kind: f.interp });
  }
  const position = (axis: string): number => {
    const f = fields.find((c) => c.name === axis);
    return f !== undefined && (f.kind === 'float' || f.kind === 'int') ? f.index : -1;
  };
  const code = options.code ?? defaultCodeCounts(fields);
  checkCodeCounts(name, fields, code);
  return {
    name,
    fieldCount: fields.length,
    fields,
    fieldNames: names,
    index: Object.freeze(Object.fromEntries(names.map((n, i) => [n, i]))) as EntityType<S>['index'],
    lo: Int32Array.from(fields, (f) => f.lo),
    hi: Int32Array.from(fields, (f) => f.hi),
    bits: Uint8Array.from(fields, (f) => f.bits),
    valueBits,
    changedCountBits: bitsRequired(fields.length),
    interpFields,
    positionFields: [position('x'), position('y'), position('z')],
    priority,
    predict: Uint8Array.from(fields, (f) =>
      f.interp === 'linear' ? PREDICT_LINEAR_FIELD : f.interp === 'angle' ? PREDICT_ANGLE_FIELD : 0,
    ),
    decodeKind: Uint8Array.from(fields, (f) =>
      f.kind === 'float' ? DECODE_FLOAT : f.kind === 'angle' ? DECODE_ANGLE : 0,
    ),
    decodeMin: Float64Array.from(fields, (f) => (f.kind === 'float' ? f.min : 0)),
    decodeStep: Float64Array.from(fields, (f) =>
      f.kind === 'float' ? f.precision : f.kind === 'angle' ? 360 / (f.hi + 1) : 1,
    ),
    changedCode: new PrefixCode(code.changed),
    residualCodes: fields.map((_, i) => new PrefixCode(code.residual[i])),
    codeCounts: { changed: [...code.changed], residual: code.residual.map((r) => [...r]) },
  };
}

/** All the entity types of a game; a type's id is its position in `types`. */
export interface GameSchema {
  readonly types: readonly EntityTypeSchema[];
  /** Bits of a type id on the wire: bitsRequired(types.length - 1). */
  readonly typeBits: number;
  /** Most fields of any type: the stride of flat value arrays (entity i at i * stride). */
  readonly stride: number;
  /** Entity capacity, the same on server and client: indices are 0..maxEntities-1. */
  readonly maxEntities: number;
  /**
   * A move longer than this between two frames is a teleport: the client's view never
   * interpolates across it, and the server's rewind (lag compensation) blends exactly as the view.
   */
  readonly teleportDistance: number;
  /**
   * Snapshot frames both ends keep (a power of two): a writer deltas only against a baseline
   * younger than this, and a reader keeps this many frames to decode against and to draw from.
   */
  readonly frameHistory: number;
}

/** A move longer than this between two frames is a teleport, unless the game's schema says otherwise. */
export const DEFAULT_TELEPORT_DISTANCE = 256;
/** Snapshot frames both ends keep, unless the game's schema says otherwise. */
export const DEFAULT_FRAME_HISTORY = 64;

export interface GameSchemaOptions {
  /** Entity capacity (default 1024, at most 65536). */
  maxEntities?: number;
  /** Teleport distance, world units (default 256). */
  teleportDistance?: number;
  /** Snapshot frames both ends keep, a power of two >= 2 (default 64). */
  frameHistory?: number;
}

/**
 * Gathers a game's entity types (ids by position, at most MAX_ENTITY_TYPES, names unique) and
 * its entity capacity. Throws an Error naming the offending type or value.
 */
export function defineGameSchema(
  types: readonly EntityTypeSchema[],
  options: GameSchemaOptions = {},
): GameSchema {
  if (!Array.isArray(types) || types.length === 0) {
    throw new RangeError('defineGameSchema: types must be a non-empty array');
  }
  if (types.length > MAX_ENTITY_TYPES) {
    throw new RangeError(`defineGameSchema: ${types.length} types is over the limit of ${MAX_ENTITY_TYPES}`);
  }
  const seen = new Set<string>();
  let stride = 0;
  for (const t of types) {
    if (seen.has(t.name)) throw new RangeError(`defineGameSchema: entity type '${t.name}' is listed twice`);
    seen.add(t.name);
    stride = Math.max(stride, t.fieldCount);
  }
  const maxEntities = options.maxEntities ?? DEFAULT_MAX_ENTITIES;
  if (!Number.isInteger(maxEntities) || maxEntities < 1 || maxEntities > MAX_ENTITY_CAPACITY) {
    throw new RangeError(
      `defineGameSchema: maxEntities must be an integer in 1..${MAX_ENTITY_CAPACITY}, got ${maxEntities}`,
    );
  }
  const teleportDistance = options.teleportDistance ?? DEFAULT_TELEPORT_DISTANCE;
  if (!(teleportDistance > 0)) {
    throw new RangeError(`defineGameSchema: teleportDistance must be > 0, got ${teleportDistance}`);
  }
  const frameHistory = options.frameHistory ?? DEFAULT_FRAME_HISTORY;
  if (!Number.isInteger(frameHistory) || frameHistory < 2 || (frameHistory & (frameHistory - 1)) !== 0) {
    throw new RangeError(`defineGameSchema: frameHistory must be a power of two >= 2, got ${frameHistory}`);
  }
  return {
    types: [...types],
    typeBits: bitsRequired(types.length - 1),
    stride: Math.max(stride, 1),
    maxEntities,
    teleportDistance,
    frameHistory,
  };
}

/**
 * A 32-bit fingerprint (FNV-1a) of everything in the schema that shapes the wire: capacity, types
 * in order, and each field's name, kind and range. Server and client can compare it when they
 * connect, since a snapshot decoded against a different schema is garbage that may still parse.
 */
export function schemaHash(schema: GameSchema): number {
  let h = 0x811c9dc5;
  const mix = (text: string): void => {
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ 0xff, 0x01000193);
  };
  mix(`${schema.maxEntities}:${schema.teleportDistance}:${schema.frameHistory}`);
  for (const t of schema.types) {
    mix(t.name);
    for (const f of t.fields)
      mix(`${f.name}:${f.kind}:${f.lo}:${f.hi}:${f.min}:${f.max}:${f.precision}:${f.interp}`);
    mix(`code:${Array.from(t.changedCode.lengths).join(',')}`);
    for (const c of t.residualCodes) mix(Array.from(c.lengths).join(','));
  }
  return h >>> 0;
}

/** The id of `type` in `schema` (its position); throws when the schema does not list it. */
export function typeIdOf(schema: GameSchema, type: EntityTypeSchema): number {
  const id = schema.types.indexOf(type);
  if (id < 0) throw new RangeError(`typeIdOf: entity type '${type.name}' is not in the game schema`);
  return id;
}

/**
 * Quantizes `value` for field `i` of `type` to its stored integer, exactly as the wire does:
 * floats clamp to [min, max] and round to the nearest step (NaN gives min), angles wrap and
 * round to the nearest step, ints round and clamp, bools give 0 or 1 (never -0).
 */
export function encodeField(type: EntityTypeSchema, i: number, value: number | boolean): number {
  const f = type.fields[i];
  const v = typeof value === 'boolean' ? (value ? 1 : 0) : value;
  switch (f.kind) {
    case 'float': {
      const q = Math.round((v - f.min) / f.precision);
      if (!(q >= 0)) return 0;
      return Math.min(q, f.hi) + 0;
    }
    case 'angle': {
      const scale = f.hi + 1;
      const wrapped = v - 360 * Math.floor(v / 360);
      const q = Math.round((wrapped * scale) / 360);
      return !(q > 0) || q >= scale ? 0 : q;
    }
    case 'int': {
      if (!(v >= f.lo)) return f.lo;
      if (v > f.hi) return f.hi;
      return Math.round(v) + 0;
    }
    default:
      return v ? 1 : 0;
  }
}

/**
 * The value a stored integer of field `i` stands for: the float min + q * precision, the angle
 * q * 360 / 2^bits degrees, the int itself, or the bool q !== 0. For a float or angle this is
 * exactly what `quantize` / `quantizeAngle` give for the value that was encoded.
 */
export function decodeField(type: EntityTypeSchema, i: number, q: number): number | boolean {
  return type.fields[i].kind === 'bool' ? q !== 0 : decodeNumber(type, i, q);
}

/**
 * The numeric value of stored integer `q` of field `i` (booleans as 0 and 1); a fractional `q`
 * (between two steps) gives the value that far between them. The one decoding of a field that
 * the snapshot reader, the client's view and the server's rewind all use.
 */
export function decodeNumber(type: EntityTypeSchema, i: number, q: number): number {
  return type.decodeKind[i] === 0 ? q : type.decodeMin[i] + q * type.decodeStep[i];
}

/**
 * Decodes the position fields of the entity at `values[o ..]` into `out[at .. at + 3)` (a missing
 * axis is 0): the numbers go into an array, not out of a call, so a hot path's loop over hundreds
 * of entities allocates nothing (a small loop, where decodeNumber is inlined).
 */
export function decodePosition(
  type: EntityTypeSchema,
  values: Int32Array,
  o: number,
  out: Float64Array,
  at: number,
): void {
  const position = type.positionFields;
  for (let k = 0; k < 3; k++) {
    const i = position[k];
    out[at + k] = i < 0 ? 0 : decodeNumber(type, i, values[o + i]);
  }
}

/** Encodes every field of `state` into `out[offset ..]` (a convenience, not for hot paths). */
export function entityToValues<S>(type: EntityType<S>, state: S, out: Int32Array, offset = 0): Int32Array {
  const names = type.fieldNames;
  for (let i = 0; i < names.length; i++) {
    out[offset + i] = encodeField(type, i, state[names[i]] as number | boolean);
  }
  return out;
}

/** Decodes `values[offset ..]` into the fields of `out` (a convenience, not for hot paths). */
export function valuesToEntity<S>(type: EntityType<S>, values: ArrayLike<number>, offset: number, out: S): S {
  const names = type.fieldNames;
  for (let i = 0; i < names.length; i++) {
    (out as Record<string, number | boolean>)[names[i]] = decodeField(type, i, values[offset + i]);
  }
  return out;
}
