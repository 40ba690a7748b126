// The delta snapshot codec: the wire form of a frame's entities, delta-encoded against a
// baseline frame the client acknowledged (Quake 3 style), shared by the server's writer and the
// client's reader through one serialize function per entity entry.
//
// Snapshot (follows the frame header, which carries the frame's server tick):
//   +--------------------+-----------+-----------------------------------------------------+
//   | baselineDelta      | varuint   | frame tick - baseline tick; 0: no baseline           |
//   | entries            | var       | touched entities in ascending index order            |
//   | end                | varuint   | 0                                                    |
//   +--------------------+-----------+-----------------------------------------------------+
// Entry:
//   +--------------------+-----------+-----------------------------------------------------+
//   | indexGap           | varuint   | index - previous entry's index (first: index + 1)    |
//   | op                 | 2         | 0 update, 1 create, 2 remove, 3 refresh              |
//   | parity             | 1         | teleport parity (not for remove)                     |
//   | typeId             | typeBits  | create only: position in the game schema             |
//   | values             | var       | create, refresh: every field's value, in table order |
//   | changedCount       | cntBits   | update: number of the last changed field + 1         |
//   | changed, value     | 1 + bits  | update: per field below changedCount; value if set   |
//   +--------------------+-----------+-----------------------------------------------------+
// A value is the field's stored integer in [lo, hi], written in bitsRequired(hi - lo) bits
// (typeBits = bitsRequired(types - 1), cntBits = bitsRequired(fieldCount)). Entities the
// baseline holds and the entry list does not name keep their baseline values and cost nothing;
// an entity the baseline does not hold is only ever created. Refresh sends every field of an
// entity the client holds when the server no longer knows which values it holds. A new entity in
// an index the baseline holds for another one is a create (the client sees a remove and a create).

import type { BitStream } from './bitstream.ts';
import type { GameSchema } from './schema.ts';

export const OP_UPDATE = 0;
export const OP_CREATE = 1;
export const OP_REMOVE = 2;
export const OP_REFRESH = 3;

/** Why a reader dropped a snapshot. */
export type SnapshotDropReason =
  | 'duplicate'
  | 'frame too old'
  | 'bad frame tick'
  | 'baseline too old'
  | 'baseline unknown'
  | 'index out of range'
  | 'unknown entity type'
  | 'not in baseline'
  | 'field count out of range'
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
  'not in baseline',
  'field count out of range',
  'field value out of range',
  'overrun',
  'malformed',
];

/** The head of one entry; the caller sets `typeId` to the baseline's type (-1: none) before reading. */
export interface EntryHeader {
  op: number;
  parity: number;
  typeId: number;
}

export function createEntryHeader(): EntryHeader {
  return { op: OP_UPDATE, parity: 0, typeId: -1 };
}

/**
 * Serializes one entry after its index gap: op, parity, type and values of the entity whose
 * stored values are `values[vo .. vo + fieldCount)`. For an update, `base[bo ..]` holds the values
 * the client already has: writing and measuring send the fields that differ from it; reading
 * leaves the unchanged fields of `values` as they are (the reader passes the same array for
 * both, filled from its baseline). Reading fails with a SnapshotDropReason as the stream error
 * on an unknown type, an update/refresh/remove of an entity the baseline does not hold, a
 * changed count or value out of range, or running out of data; it never throws.
 */
export function serializeEntry(
  s: BitStream,
  h: EntryHeader,
  schema: GameSchema,
  values: Int32Array,
  vo: number,
  base: Int32Array,
  bo: number,
): boolean {
  const op = s.uint(h.op, 2);
  h.op = op;
  if (!s.ok) return false;
  if (op !== OP_CREATE && h.typeId < 0) return s.fail('not in baseline');
  if (op === OP_REMOVE) return true;
  h.parity = s.uint(h.parity, 1);
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
  const reading = s.isReading;
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
  let count = 0;
  if (!reading) {
    for (let f = n - 1; f >= 0; f--) {
      if (values[vo + f] !== base[bo + f]) {
        count = f + 1;
        break;
      }
    }
  }
  count = s.uint(count, type.changedCountBits);
  if (!s.ok) return false;
  if (count > n) return s.fail('field count out of range');
  for (let f = 0; f < count; f++) {
    const changed = s.bool(values[vo + f] !== base[bo + f]);
    if (!changed) continue;
    const v = s.uint(values[vo + f] - lo[f], type.bits[f]) + lo[f];
    if (reading) {
      if (!s.ok) return false;
      if (v > hi[f]) return s.fail('field value out of range');
      values[vo + f] = v;
    }
  }
  return s.ok;
}
