// The delta snapshot codec: the wire form of a frame's entities, delta-encoded against a
// baseline frame the client acknowledged (Quake 3 style), shared by the server's writer and the
// client's reader through one serialize function per entity entry. An update sends only what the
// client cannot predict: each field's residual against a value extrapolated from the last two
// values the client holds, in a static prefix code the game trains on its own traffic.
//
// Snapshot (follows the frame header, which carries the frame's server tick):
//   +--------------------+-----------+-----------------------------------------------------+
//   | baselineDelta      | varuint   | frame tick - baseline tick; 0: no baseline           |
//   | first step         | step      | the first entry's index + 1; 0: no entries, the end  |
//   | runs               | 1         | after a first step not 0: how the entries are listed |
//   | entries            | var       | runs = 0: entry, then (step, entry)* in ascending    |
//   |                    |           | index; runs = 1: run length, that many entries at    |
//   |                    |           | consecutive indices, then (step, length, entries)*   |
//   | end                | 2         | the index step 0                                     |
//   +--------------------+-----------+-----------------------------------------------------+
// A step is the entry's (or run's first entry's) index minus the previous entry's
// (serializeIndexStep); a run length L >= 1 travels as L - 1 in an order-0 exponential-Golomb
// code (serializeRunLength). The writer lists the entries whichever way costs fewer bits: one
// step each (1 bit when consecutive) or runs (a run of 63 consecutive entries costs 11 bits).
// Entry:
//   +--------------------+-----------+-----------------------------------------------------+
//   | op                 | 1 or 3    | 0: update; 1 then uint 2: 0 create, 1 remove,        |
//   |                    |           | 2 refresh, 3 update across a teleport (parity flips) |
//   | parity             | 1         | create, refresh: teleport parity                     |
//   | typeId             | typeBits  | create only: position in the game schema             |
//   | values             | var       | create, refresh: every field's value, in table order |
//   | changedCount       | code      | update: last field whose residual is not 0, + 1      |
//   | residual           | code+raw  | update: per field below changedCount: class, bits    |
//   +--------------------+-----------+-----------------------------------------------------+
// A value is the field's stored integer in [lo, hi], written in bitsRequired(hi - lo) bits
// (typeBits = bitsRequired(types - 1)). An update's field f is predicted from the values the
// client holds (predictField); its residual is (value - prediction) mod (hi - lo + 1), taken on
// the short way round and zigzagged into u in [0, hi - lo]; u travels as its class c (0 for 0,
// else bit length of u) in the field's prefix code, then, for c >= 2, the c - 1 bits below the
// top one. Fields at and above changedCount take their prediction. Entities the baseline holds
// and the entry list does not name keep their baseline values and cost nothing; an entity the
// baseline does not hold is only ever created. Refresh sends every field of an entity the client
// holds when the server no longer knows which values it holds. A new entity in an index the
// baseline holds for another one is a create (the client sees a remove and a create).

import type { BitStream } from './bitstream.ts';
import { type EntityTypeSchema, type GameSchema, MAX_ENTITY_FIELDS } from './schema.ts';

export const OP_UPDATE = 0;
export const OP_CREATE = 1;
export const OP_REMOVE = 2;
export const OP_REFRESH = 3;
/** Escaped op code of an update across a teleport (the parity flips); decoded as OP_UPDATE. */
const WIRE_UPDATE_TELEPORT = 3;

/**
 * Extrapolation reach, in ticks: a field is extrapolated from the two values the client holds
 * only when they are at most this far apart and the newer is at most this old; else it is held.
 */
export const PREDICTION_TICKS = 64;
/** Field predictors (EntityTypeSchema.predict): hold the newer value, extrapolate on a line or round a circle. */
export const PREDICT_HOLD = 0;
export const PREDICT_LINEAR = 1;
export const PREDICT_ANGLE = 2;

/** Why a reader dropped a snapshot. */
export type SnapshotDropReason =
  | 'duplicate'
  | 'frame too old'
  | 'bad frame tick'
  | 'baseline too old'
  | 'baseline unknown'
  | 'index out of range'
  | 'unknown entity type'
  | 'field value out of range'
  | 'overrun'
  | 'malformed';

export const SNAPSHOT_DROP_REASONS: readonly SnapshotDropReason[] = [
  'duplicate',
  'frame too old',
  'bad frame tick',
  'baseline too old',
  'baseline unknown',
  'index out of range',
  'unknown entity type',
  'field value out of range',
  'overrun',
  'malformed',
];

/**
 * The head of one entry and what its update is predicted from. Before reading, the caller sets
 * `heldType` to the baseline's type (-1: none), `baseParity` to the baseline's parity, and `age`
 * and `gap` as below; before writing, all of them and `op`, `parity` and `typeId`.
 */
export interface EntryHeader {
  op: number;
  parity: number;
  /** The entity's type (a create's new type); after a read, the type of what the entry left. */
  typeId: number;
  /** Type of the entity the client holds at the index (-1: none; then the entry is a create). */
  heldType: number;
  /** Teleport parity the client holds for the entity (an update that differs sends the flip). */
  baseParity: number;
  /** Ticks from the client's newer value to this frame (saturating at 255). */
  age: number;
  /** Ticks from the client's older value to its newer one (0: it holds no older value; saturating). */
  gap: number;
  /** Optional training tallies (see CodeTally): counted when writing, never when measuring. */
  tally: CodeTally | null;
  /** Scratch, one per field: predictions, motions and residuals (no allocation per entry). */
  readonly prediction: Float64Array;
  readonly motion: Float64Array;
  readonly residual: Float64Array;
}

export function createEntryHeader(): EntryHeader {
  return {
    op: OP_UPDATE,
    parity: 0,
    typeId: -1,
    heldType: -1,
    baseParity: 0,
    age: 0,
    gap: 0,
    tally: null,
    prediction: new Float64Array(MAX_ENTITY_FIELDS),
    motion: new Float64Array(MAX_ENTITY_FIELDS),
    residual: new Float64Array(MAX_ENTITY_FIELDS),
  };
}

/**
 * Symbol counts gathered from written snapshots, per entity type id: `changed[t][head]` (an
 * update's changed count, or fieldCount + 1 for any other operation on a held entity) and
 * `residual[t][field][class]`, the counts a game trains its codes on (EntityCodeCounts).
 */
export interface CodeTally {
  readonly changed: number[][];
  readonly residual: number[][][];
}

export function createCodeTally(schema: GameSchema): CodeTally {
  return {
    changed: schema.types.map((t) => new Array<number>(t.fieldCount + 2).fill(0)),
    residual: schema.types.map((t) => t.residualCodes.map((c) => new Array<number>(c.size).fill(0))),
  };
}

/**
 * x modulo n (n a positive integer), in [0, n). The values met here are within a turn or two of
 * the range, which comparisons settle; `%` on doubles is a call into the runtime.
 */
function mod(x: number, n: number): number {
  if (x >= 0) {
    if (x < n) return x;
    if (x < 2 * n) return x - n;
  } else if (x > -n) {
    return x + n;
  }
  const r = x % n;
  return r < 0 ? r + n : r;
}

/**
 * The prediction of field `f` of `type` from the client's newer value `v1` and older value `v0`,
 * `age` ticks after v1 and `gap` ticks after v0: v1 itself for a held field, when the client
 * holds no older value (gap 0) or either span exceeds PREDICTION_TICKS; else v1 plus the change
 * from v0 scaled by age / gap and rounded (Math.round), clamped into [lo, hi] on a line, taken
 * the short way and wrapped round a circle. Exact integer arithmetic in doubles: every engine
 * gets the same result.
 */
export function predictField(
  type: EntityTypeSchema,
  f: number,
  v1: number,
  v0: number,
  age: number,
  gap: number,
): number {
  const kind = type.predict[f];
  if (kind === PREDICT_HOLD || gap === 0 || gap > PREDICTION_TICKS || age > PREDICTION_TICKS) return v1;
  if (kind === PREDICT_ANGLE) {
    const n = type.hi[f] + 1;
    let d = mod(v1 - v0, n);
    if (d >= n / 2) d -= n;
    return mod(v1 + Math.round((d * age) / gap), n);
  }
  const p = v1 + Math.round(((v1 - v0) * age) / gap);
  const lo = type.lo[f];
  const hi = type.hi[f];
  return p < lo ? lo : Math.min(p, hi);
}

/**
 * Predicts every field of an update (predictField) into `pred` and, for each extrapolated one,
 * its motion (v1 - v0, the short way round for an angle; 0 when held) into `motion`. Returns the
 * lead: of the type's x, y and z fields that move, the one that moves most (the first on a tie),
 * or -1. Every extrapolated field after the lead that moves is then predicted to share the lead's
 * surprise in proportion to its own motion (follow): what moves every field off its line is
 * mostly how far the entity advanced (how many of its commands ran by the tick), the same for all.
 */
export function predictEntity(
  type: EntityTypeSchema,
  base: Int32Array,
  bo: number,
  prev: Int32Array,
  po: number,
  age: number,
  gap: number,
  pred: Float64Array,
  motion: Float64Array,
): number {
  const n = type.fieldCount;
  if (gap === 0 || gap > PREDICTION_TICKS || age > PREDICTION_TICKS) {
    // Nothing to extrapolate from: every field holds, nothing moves, no lead.
    for (let f = 0; f < n; f++) {
      pred[f] = base[bo + f];
      motion[f] = 0;
    }
    return -1;
  }
  const predict = type.predict;
  const lo = type.lo;
  const hi = type.hi;
  // predictField, field by field, written out here with the motion it finds on the way.
  for (let f = 0; f < n; f++) {
    const v1 = base[bo + f];
    const kind = predict[f];
    if (kind === PREDICT_HOLD) {
      pred[f] = v1;
      motion[f] = 0;
      continue;
    }
    let d = v1 - prev[po + f];
    if (kind === PREDICT_ANGLE) {
      const m = hi[f] + 1;
      d = mod(d, m);
      if (d >= m / 2) d -= m;
      pred[f] = mod(v1 + Math.round((d * age) / gap), m);
    } else {
      const p = v1 + Math.round((d * age) / gap);
      pred[f] = p < lo[f] ? lo[f] : Math.min(p, hi[f]);
    }
    motion[f] = d;
  }
  let lead = -1;
  let most = 0;
  const axes = type.positionFields;
  for (let k = 0; k < 3; k++) {
    const f = axes[k];
    if (f < 0) continue;
    const d = Math.abs(motion[f]);
    if (d > most || (d === most && d > 0 && f < lead)) {
      most = d;
      lead = f;
    }
  }
  return lead;
}

/**
 * Whether field f's prediction follows the lead's residual (follow): a field after the lead that
 * moves, when the lead's prediction missed. Tested before the call, so that the common case (the
 * lead on target, or a field that holds) costs no call.
 */
function follows(f: number, lead: number, leadResidual: number, motion: number): boolean {
  return lead >= 0 && f > lead && leadResidual !== 0 && motion !== 0;
}

/**
 * Field f's prediction `p` moved by the lead's residual scaled by the ratio of their motions;
 * called only where `follows` holds (a residual and a motion not 0).
 */
function follow(
  type: EntityTypeSchema,
  f: number,
  p: number,
  leadResidual: number,
  motion: number,
  leadMotion: number,
): number {
  const q = p + Math.round((leadResidual * motion) / leadMotion);
  if (type.predict[f] === PREDICT_ANGLE) return mod(q, type.hi[f] + 1);
  const lo = type.lo[f];
  const hi = type.hi[f];
  return q < lo ? lo : Math.min(q, hi);
}

/** The signed residual a zigzagged one stands for. */
function signedOf(u: number): number {
  // u & 1 is u's low bit for any integer below 2^53 (ToInt32 keeps the low 32 bits).
  return (u & 1) === 0 ? u / 2 : -(u + 1) / 2;
}

/** The zigzagged short-way residual u in [0, hi - lo] of `value` against `prediction`. */
function residualOf(value: number, prediction: number, lo: number, hi: number): number {
  const n = hi - lo + 1;
  const m = mod(value - prediction, n);
  return m <= (n - 1) / 2 ? 2 * m : 2 * (n - m) - 1;
}

/** The value residual `u` (in [0, hi - lo]) stands for against `prediction`. */
function valueFrom(u: number, prediction: number, lo: number, hi: number): number {
  return lo + mod(prediction - lo + signedOf(u), hi - lo + 1);
}

/** The class of residual u: 0 for 0, else its bit length. */
function classOf(u: number): number {
  return u === 0 ? 0 : 32 - Math.clz32(u);
}

/** Bits of `v` (>= 0) as an order-0 exponential-Golomb code: 2 * bitLength(v + 1) - 1. */
function expGolombBits(v: number): number {
  return 2 * (32 - Math.clz32(v + 1)) - 1;
}

/** Bits of an index step (serializeIndexStep): 1 for the next index, 2 for the end. */
export function indexStepBits(step: number): number {
  return step === 1 ? 1 : step === 0 ? 2 : 2 + expGolombBits(step - 2);
}

/**
 * Writes, reads or measures an index step: the entry's index minus the previous entry's (the
 * first: index + 1), so 1..65536; 0 ends the entries. 1 is the bit 1; 0 is 0 then 1; a larger
 * step is 0, 0, then step - 2 as an order-0 exponential-Golomb code (n - 1 zeros, a one, then the
 * n - 1 bits of step - 1 below its top bit, n its bit length). A read of more than 16 zeros there
 * fails with 'malformed'.
 */
export function serializeIndexStep(s: BitStream, step: number): number {
  if (!s.isReading) {
    if (step === 1) {
      s.uint(1, 1);
    } else if (step === 0) {
      s.uint(2, 2);
    } else {
      s.uint(0, 2);
      const v = step - 1;
      const n = 32 - Math.clz32(v);
      s.uint(1 << (n - 1), n);
      if (n > 1) s.uint(v - (1 << (n - 1)), n - 1);
    }
    return step;
  }
  // The two commonest steps from one look at the next two bits (bits past the data show as 0,
  // and take the bit-by-bit path below, which fails the read as before).
  if (s.ok) {
    const w = s.peek(2);
    if ((w & 1) === 1) {
      s.skip(1);
      return 1;
    }
    if (w === 2) {
      s.skip(2);
      return 0;
    }
  }
  if (s.uint(0, 1) === 1) return 1;
  if (s.uint(0, 1) === 1) return 0;
  let zeros = 0;
  while (s.uint(0, 1) === 0) {
    if (!s.ok) return 0;
    if (++zeros > 16) {
      s.fail('malformed');
      return 0;
    }
  }
  return (zeros === 0 ? 1 : (1 << zeros) + s.uint(0, zeros)) + 1;
}

/** Bits of a run of `length` (>= 1) consecutive entries' length (serializeRunLength). */
export function runLengthBits(length: number): number {
  return expGolombBits(length - 1);
}

/**
 * Writes, reads or measures the length (1 .. 65536) of a run of entries at consecutive indices:
 * length - 1 as an order-0 exponential-Golomb code (1 bit for 1, 3 for 2 or 3, 2n - 1 for up to
 * 2^n - 1). A read of more than 16 zeros there fails with 'malformed' (the caller checks the run
 * against the schema's capacity).
 */
export function serializeRunLength(s: BitStream, length: number): number {
  if (!s.isReading) {
    const v = length;
    const n = 32 - Math.clz32(v);
    s.uint(1 << (n - 1), n);
    if (n > 1) s.uint(v - (1 << (n - 1)), n - 1);
    return length;
  }
  let zeros = 0;
  while (s.uint(0, 1) === 0) {
    if (!s.ok) return 0;
    if (++zeros > 16) {
      s.fail('malformed');
      return 0;
    }
  }
  return zeros === 0 ? 1 : (1 << zeros) + s.uint(0, zeros);
}

/**
 * The writer's residuals of an update (into h.residual) and its changed count: the last field
 * whose residual is not 0, + 1.
 */
function countOf(
  type: EntityTypeSchema,
  h: EntryHeader,
  values: Int32Array,
  vo: number,
  base: Int32Array,
  bo: number,
  prev: Int32Array,
  po: number,
): number {
  const pred = h.prediction;
  const motion = h.motion;
  const u = h.residual;
  const lead = predictEntity(type, base, bo, prev, po, h.age, h.gap, pred, motion);
  const leadMotion = lead >= 0 ? motion[lead] : 1;
  let leadResidual = 0;
  let count = 0;
  for (let f = 0; f < type.fieldCount; f++) {
    const p = follows(f, lead, leadResidual, motion[f])
      ? follow(type, f, pred[f], leadResidual, motion[f], leadMotion)
      : pred[f];
    u[f] = residualOf(values[vo + f], p, type.lo[f], type.hi[f]);
    if (f === lead) leadResidual = signedOf(u[f]);
    if (u[f] !== 0) count = f + 1;
  }
  return count;
}

/**
 * Serializes one entry after its index step: op, parity, type and values of the entity whose
 * stored values are `values[vo .. vo + fieldCount)`. For an update, `base[bo ..]` holds the values
 * the client holds and `prev[po ..]` the older ones it held before (the prediction's inputs,
 * with `h.age` and `h.gap`): writing and measuring send each field's residual against the
 * prediction; reading writes every field of `values` (which may be `prev`'s or `base`'s array at
 * another offset, never an overlapping range of base). Reading fails with a SnapshotDropReason as the stream
 * error on an unknown type, an update/refresh/remove of an entity the baseline does not hold, a
 * value out of range, a code no symbol has, or running out of data; it never throws.
 */
export function serializeEntry(
  s: BitStream,
  h: EntryHeader,
  schema: GameSchema,
  values: Int32Array,
  vo: number,
  base: Int32Array,
  bo: number,
  prev: Int32Array,
  po: number,
): boolean {
  const reading = s.isReading;
  let op = OP_CREATE;
  let teleport = false;
  let count = 0;
  if (h.heldType >= 0) {
    // The client holds the index: its type's head code says an update's count, or escapes.
    const held = schema.types[h.heldType];
    const escapeHead = held.fieldCount + 1;
    let code = -1;
    if (!reading) {
      op = h.op;
      count = op === OP_UPDATE ? countOf(held, h, values, vo, base, bo, prev, po) : 0;
      if (op !== OP_UPDATE) code = op - 1;
      else if (h.parity !== h.baseParity) code = WIRE_UPDATE_TELEPORT;
    }
    const head = held.changedCode.serialize(s, code < 0 ? count : escapeHead);
    if (!s.ok) return false;
    const tally = s.isWriting ? h.tally : null;
    if (tally !== null) tally.changed[h.heldType][head]++;
    if (head === escapeHead) {
      code = s.uint(code, 2);
      if (code === WIRE_UPDATE_TELEPORT) {
        teleport = true;
        op = OP_UPDATE;
        count = held.changedCode.serialize(s, count);
        if (!s.ok) return false;
        if (count === escapeHead) return s.fail('malformed');
      } else {
        op = code + 1;
      }
    } else {
      op = OP_UPDATE;
      count = head;
    }
  }
  h.op = op;
  if (op !== OP_CREATE) h.typeId = h.heldType;
  if (op === OP_REMOVE) return true;
  if (op === OP_UPDATE) {
    if (reading) h.parity = teleport ? h.baseParity ^ 1 : h.baseParity;
  } else {
    h.parity = s.uint(h.parity, 1);
  }
  if (op === OP_CREATE) {
    const typeId = s.uint(h.typeId, schema.typeBits);
    if (!s.ok) return false;
    if (typeId >= schema.types.length) return s.fail('unknown entity type');
    h.typeId = typeId;
  }
  const type = schema.types[h.typeId];
  const n = type.fieldCount;
  const lo = type.lo;
  const hi = type.hi;
  if (op !== OP_UPDATE) {
    for (let f = 0; f < n; f++) {
      const v = s.uint(values[vo + f] - lo[f], type.bits[f]) + lo[f];
      if (reading) {
        if (!s.ok) return false;
        if (v > hi[f]) return s.fail('field value out of range');
        values[vo + f] = v;
      }
    }
    return s.ok;
  }
  const pred = h.prediction;
  const motion = h.motion;
  const u = h.residual;
  const tally = s.isWriting ? h.tally : null;
  // The writer's residuals are in `u` already (countOf); the reader predicts as it goes.
  const lead = reading ? predictEntity(type, base, bo, prev, po, h.age, h.gap, pred, motion) : -1;
  const leadMotion = lead >= 0 ? motion[lead] : 1;
  let leadResidual = 0;
  for (let f = 0; f < count; f++) {
    const code = type.residualCodes[f];
    if (!reading) {
      const c = classOf(u[f]);
      code.writeResidual(s, c, u[f]);
      if (tally !== null) tally.residual[h.typeId][f][c]++;
      continue;
    }
    const r = code.readResidual(s);
    if (!s.ok) return false;
    if (r > hi[f] - lo[f]) return s.fail('field value out of range');
    const p = follows(f, lead, leadResidual, motion[f])
      ? follow(type, f, pred[f], leadResidual, motion[f], leadMotion)
      : pred[f];
    values[vo + f] = valueFrom(r, p, lo[f], hi[f]);
    if (f === lead) leadResidual = signedOf(r);
  }
  if (reading) {
    for (let f = count; f < n; f++) {
      values[vo + f] = follows(f, lead, leadResidual, motion[f])
        ? follow(type, f, pred[f], leadResidual, motion[f], leadMotion)
        : pred[f];
    }
  }
  return s.ok;
}
