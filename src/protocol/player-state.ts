// The owner's player state on the wire, delta-encoded against the state carried by a frame the
// client acknowledged: both ends keep, per frame tick, the game's own serialization of the state
// (PlayerDefinition.serialize), where each of its fields lies (every primitive write), the command
// it followed and the frame it was itself encoded against. A frame sends, per field, the residual
// against the value predicted on a line from the baseline and the baseline's own baseline, or,
// when the fields moved, the bytes of the serialization that changed, as XOR masks. Exact
// whatever the game's state: the client rebuilds the very bits the server serialized and reads
// them with the game's serialize. Layout: SPEC.md section 7.
//
// Player part of a server frame (after the frame header's tick and choke):
//   +--------------------+-----------------+--------------------------------------------------+
//   | playerBaseline     | expGolomb       | frame tick - baseline frame tick; 0: no baseline  |
//   | ackedCommand       | 32, or expGolomb| none: the command; baseline: command - its command |
//   | state              | var             | none: the game's serialize                       |
//   | fields             | 1               | baseline: 1 when the fields are the baseline's    |
//   | residual           | var             | fields: per field, 1 bit (width 1), expGolomb of  |
//   |                    |                 | order k of the zigzag residual, or the raw bits   |
//   | changedBytes       | int [0, bytes]  | no fields: how many bytes differ                  |
//   | skip, mask         | expGolomb + 8   | per byte that differs: bytes since the previous    |
//   |                    |                 | one that differs (or the start), then its XOR mask |
//   +--------------------+-----------------+--------------------------------------------------+
// `bytes` is the baseline state's serialized length in bytes; a state whose serialization has
// another length in bits than its baseline's goes without a baseline.

import { BitStream, serializeExpGolomb } from './bitstream.ts';

/** Largest serialized player state that can serve as a baseline, in bytes. */
export const PLAYER_STATE_MAX_BYTES = 256;

/** Largest playerBaseline a reader takes (larger: 'malformed'), and largest ackedCommand step. */
const DELTA_MAX = 0xffff;
const ACKED_DELTA_MAX = 0x7ffffffe;

/** Why a frame's player part was not read (its stream error). */
export type PlayerStateDropReason =
  | 'player baseline too old'
  | 'player baseline unknown'
  | 'player state length';

/** Most fields (primitive writes) a serialization may have for the field delta; more: byte XOR. */
export const PLAYER_STATE_MAX_FIELDS = 128;
/** Fields this wide or wider travel as raw bits in the field delta. */
const RAW_FIELD_BITS = 30;

class Slot {
  // The numbers start as fractions and are set in the constructor: each field is laid out as a
  // double from the start (createUserCommand says why).
  tick = 0.5;
  acked = 0.5;
  bits = 0.5;
  /** The frame tick this state was delta-encoded against (-1: none). */
  baseTick = 0.5;
  /** The serialization's fields: bit offsets and widths of each primitive write (-1: too many). */
  fieldCount = 0.5;
  /** Leading bytes of `bytes` that may be other than zero (every byte after them is zero). */
  dirtyBytes = 0;
  readonly fieldStart: Uint16Array;
  readonly fieldBits: Uint8Array;
  /** Each field's value as its bits read back (unsigned): the field delta reads them from here. */
  readonly fieldValue: Uint32Array;
  readonly bytes: Uint8Array;

  /** The slot's arrays lie in `block` from `at` (SLOT_BYTES, 4-aligned): a history's slots are one block. */
  constructor(block: ArrayBuffer, at: number) {
    const n = PLAYER_STATE_MAX_FIELDS;
    this.fieldValue = new Uint32Array(block, at, n);
    this.fieldStart = new Uint16Array(block, at + 4 * n, n);
    this.fieldBits = new Uint8Array(block, at + 6 * n, n);
    this.bytes = new Uint8Array(block, at + 7 * n, PLAYER_STATE_MAX_BYTES);
    this.tick = -1;
    this.acked = 0;
    this.bits = -1;
    this.baseTick = -1;
    this.fieldCount = -1;
  }
}

/** Bytes of one slot's arrays (field values, starts, widths and the state's bytes), 4-aligned. */
const SLOT_BYTES = (7 * PLAYER_STATE_MAX_FIELDS + PLAYER_STATE_MAX_BYTES + 3) & ~3;

/** Stores `value` into the `bits`-bit field at bit `start` of `bytes`. */
function writeField(bytes: Uint8Array, start: number, bits: number, value: number): void {
  if (bits <= 24) {
    const i = start >>> 3;
    const offset = start & 7;
    const mask = ((1 << bits) - 1) << offset;
    const part = (value << offset) & mask;
    bytes[i] = (bytes[i] & ~mask) | part;
    if (offset + bits > 8) bytes[i + 1] = (bytes[i + 1] & ~(mask >>> 8)) | (part >>> 8);
    if (offset + bits > 16) bytes[i + 2] = (bytes[i + 2] & ~(mask >>> 16)) | (part >>> 16);
    if (offset + bits > 24) bytes[i + 3] = (bytes[i + 3] & ~(mask >>> 24)) | (part >>> 24);
    return;
  }
  let done = 0;
  while (done < bits) {
    const pos = start + done;
    const offset = pos & 7;
    const take = Math.min(8 - offset, bits - done);
    const mask = ((1 << take) - 1) << offset;
    const part = (Math.floor(value / 2 ** done) & ((1 << take) - 1)) << offset;
    bytes[pos >>> 3] = (bytes[pos >>> 3] & ~mask) | part;
    done += take;
  }
}

/** Whether two recorded states have the same fields (offsets and widths). */
function sameFields(a: Slot, b: Slot): boolean {
  if (a.fieldCount < 0 || a.fieldCount !== b.fieldCount || a.bits !== b.bits) return false;
  for (let i = 0; i < a.fieldCount; i++)
    if (a.fieldStart[i] !== b.fieldStart[i] || a.fieldBits[i] !== b.fieldBits[i]) return false;
  return true;
}

/** `v` modulo 2^bits as a signed value in [-2^(bits-1), 2^(bits-1)). */
function signed(v: number, bits: number): number {
  // An integer's low 32 bits are exact under ToInt32 (|v| < 2^53), so the shifts take it modulo 2^bits.
  if (bits < 32) return (v << (32 - bits)) >> (32 - bits);
  const m = 2 ** bits;
  let r = v % m;
  if (r < 0) r += m;
  return r >= m / 2 ? r - m : r;
}

/** The game's serialize of a state (a method: a history of a narrower state is still one of a wider). */
interface StateCodec<P> {
  serialize(s: BitStream, state: P): boolean;
}

/** What the player part of a frame reads and writes. */
export interface PlayerFrame<P> {
  serverTick: number;
  ackedCommand: number;
  /** Tick of the frame whose state this one is delta-encoded against; -1: none. */
  playerBaseline: number;
  player: P;
}

/**
 * One end's record of the player states its frames carried, by frame tick (the last
 * `frameHistory`), and the codec of a frame's player part against them. Allocation-free after
 * construction.
 */
export class PlayerStateHistory<P> {
  /** Set when a frame named a baseline this end does not hold; cleared by the next read. */
  needsFullUpdate = false;
  private readonly codec: StateCodec<P>;
  private readonly slots: Slot[];
  private readonly mask: number;
  private readonly scratch = new BitStream(0);
  private readonly recorder = new BitStream(0);
  private readonly work = new Uint8Array(PLAYER_STATE_MAX_BYTES);

  constructor(serialize: (s: BitStream, state: P) => boolean, frameHistory: number) {
    if (!Number.isInteger(frameHistory) || frameHistory < 2 || (frameHistory & (frameHistory - 1)) !== 0) {
      throw new RangeError(
        `PlayerStateHistory: frameHistory must be a power of two >= 2, got ${frameHistory}`,
      );
    }
    this.codec = { serialize };
    this.slots = [];
    const block = new ArrayBuffer(frameHistory * SLOT_BYTES);
    for (let i = 0; i < frameHistory; i++) this.slots.push(new Slot(block, i * SLOT_BYTES));
    this.mask = frameHistory - 1;
  }

  /** Forgets every state (a new connection). */
  reset(): void {
    for (const slot of this.slots) slot.tick = -1;
    this.needsFullUpdate = false;
  }

  /** True while the state of frame `tick` is held. */
  has(tick: number): boolean {
    return tick >= 0 && this.slots[tick & this.mask].tick === tick;
  }

  /**
   * The writer's side: records `state` (after command `acked`) as frame `tick`'s, in the game's
   * serialization. A state too long to hold is recorded as none (its frames go without baseline).
   */
  record(tick: number, state: P, acked: number): void {
    const slot = this.slots[tick & this.mask];
    slot.tick = tick;
    slot.acked = acked;
    slot.baseTick = -1;
    slot.fieldCount = 0;
    // Past the last state recorded here, the slot's bytes are zero: only those before are cleared
    // (all of them if a serialize threw on the way).
    const s = this.recorder.beginWrite(PLAYER_STATE_MAX_BYTES, slot.bytes, slot.dirtyBytes);
    slot.dirtyBytes = PLAYER_STATE_MAX_BYTES;
    this.recorder.notes = slot;
    slot.bits = this.codec.serialize(s, state) && s.ok ? s.bitsProcessed : -1;
    this.recorder.notes = null;
    if (slot.bits < 0) slot.fieldCount = -1;
    slot.dirtyBytes = (s.bitsProcessed + 7) >>> 3;
  }

  /**
   * Writes, measures or reads the player part of frame `f` (layout above). Writing and measuring
   * need the frame's state recorded first; they fall back to no baseline when `f.playerBaseline`
   * is not held, too old, has another length or a later command (and set it to -1). Reading
   * records what it read; it fails on a baseline it does not hold (setting needsFullUpdate), a
   * length that does not match, or the game's serialize failing.
   */
  serialize(s: BitStream, f: PlayerFrame<P>): boolean {
    const tick = f.serverTick;
    const slot = this.slots[tick & this.mask];
    if (!s.isReading) {
      let base: Slot | null = null;
      const b = f.playerBaseline;
      if (b >= 0 && b < tick && tick - b < this.slots.length && this.has(b) && slot.tick === tick) {
        const candidate = this.slots[b & this.mask];
        if (candidate.bits >= 0 && candidate.bits === slot.bits && candidate.acked <= f.ackedCommand)
          base = candidate;
      }
      if (base === null) {
        f.playerBaseline = -1;
        if (slot.tick === tick) slot.baseTick = -1;
        serializeExpGolomb(s, 0, DELTA_MAX);
        s.uint(f.ackedCommand, 32);
        return this.codec.serialize(s, f.player) && s.ok;
      }
      slot.baseTick = base.tick;
      serializeExpGolomb(s, tick - base.tick, DELTA_MAX);
      serializeExpGolomb(s, f.ackedCommand - base.acked, ACKED_DELTA_MAX);
      const fields = sameFields(slot, base);
      s.bool(fields);
      if (fields) {
        this.fieldDelta(s, tick, base, slot.bytes, slot);
        return s.ok;
      }
      const n = (base.bits + 7) >>> 3;
      let changed = 0;
      for (let i = 0; i < n; i++) if (slot.bytes[i] !== base.bytes[i]) changed++;
      s.int(changed, 0, n);
      let next = 0;
      for (let i = 0; i < n; i++) {
        const x = slot.bytes[i] ^ base.bytes[i];
        if (x === 0) continue;
        serializeExpGolomb(s, i - next, n);
        s.uint(x, 8);
        next = i + 1;
      }
      return s.ok;
    }
    const delta = serializeExpGolomb(s, 0, DELTA_MAX);
    if (!s.ok) return false;
    if (delta === 0) {
      f.playerBaseline = -1;
      f.ackedCommand = s.uint(0, 32);
      if (!s.ok || !this.codec.serialize(s, f.player)) return false;
      this.keep(tick, f);
      return true;
    }
    if (delta >= this.slots.length) {
      this.needsFullUpdate = true;
      return s.fail('player baseline too old');
    }
    const baseTick = tick - delta;
    if (!this.has(baseTick)) {
      this.needsFullUpdate = true;
      return s.fail('player baseline unknown');
    }
    const base = this.slots[baseTick & this.mask];
    if (base.bits < 0) return s.fail('player state length');
    f.playerBaseline = baseTick;
    const acked = base.acked + serializeExpGolomb(s, 0, ACKED_DELTA_MAX);
    if (!s.ok) return false;
    if (acked > 0xffffffff) return s.fail('command sequence out of range');
    f.ackedCommand = acked;
    const n = (base.bits + 7) >>> 3;
    const work = this.work;
    for (let i = 0; i < n; i++) work[i] = base.bytes[i];
    const fields = s.bool(false);
    if (fields) {
      if (base.fieldCount < 0) return s.fail('malformed');
      if (!this.fieldDelta(s, tick, base, work, null)) return false;
    }
    const changed = fields ? 0 : s.int(0, 0, n);
    let next = 0;
    for (let k = 0; k < changed; k++) {
      const i = next + serializeExpGolomb(s, 0, n);
      const x = s.uint(0, 8);
      if (!s.ok) return false;
      if (i >= n || x === 0) return s.fail('malformed');
      work[i] ^= x;
      next = i + 1;
    }
    if (!s.ok) return false;
    const r = this.scratch.beginRead(work, n);
    if (!this.codec.serialize(r, f.player) || !r.ok || r.bitsProcessed !== base.bits) {
      return s.fail(r.ok ? 'player state length' : r.error || 'malformed');
    }
    this.keep(tick, f);
    return true;
  }

  /** The reader's side: records the state just read as frame `tick`'s, unless a newer frame holds its slot. */
  private keep(tick: number, f: PlayerFrame<P>): void {
    const slot = this.slots[tick & this.mask];
    if (slot.tick > tick) return;
    this.record(tick, f.player, f.ackedCommand);
    slot.baseTick = f.playerBaseline;
    this.needsFullUpdate = false;
  }

  /**
   * The state two frames back that predicts each field of a frame against `base`: the baseline
   * `base` itself was encoded against, when both ends surely hold it (within the history: the
   * writer recorded every frame since, the reader held it to read `base`) with the same fields.
   */
  private reference(tick: number, base: Slot): Slot | null {
    const b2 = base.baseTick;
    if (b2 < 0 || b2 >= base.tick || tick - b2 >= this.slots.length || !this.has(b2)) return null;
    const ref = this.slots[b2 & this.mask];
    return sameFields(base, ref) ? ref : null;
  }

  /**
   * Writes, measures or reads the field delta: per field of `base`, its value's residual
   * against the value predicted from `base` and the reference (linear over the frame ticks,
   * modulo the field's width; `base`'s value without a reference), zigzagged, as an
   * exponential-Golomb code of the order the field's last step gives; a 1-bit field as its XOR
   * with `base`'s; a field of RAW_FIELD_BITS or more as its bits.
   * Writing reads the values from `cur` (the slot recorded from `bytes`); reading stores them in
   * `bytes` (holding `base`'s bytes). Recorded slots hold their field values, so no bits are
   * picked out of bytes but the reader's stores.
   */
  private fieldDelta(s: BitStream, tick: number, base: Slot, bytes: Uint8Array, cur: Slot | null): boolean {
    // Whether the writer predicted from the reference travels: a reader that took a newer frame
    // first may have let the reference go, and must then fail rather than predict otherwise.
    let ref = this.reference(tick, base);
    const linear = s.bool(ref !== null);
    if (!s.ok) return false;
    if (s.isReading) {
      if (linear && ref === null) {
        this.needsFullUpdate = true;
        return s.fail('player baseline unknown');
      }
      if (!linear) ref = null;
    }
    const ahead = tick - base.tick;
    const behind = ref === null ? 1 : base.tick - ref.tick;
    const reading = s.isReading;
    const baseValue = base.fieldValue;
    const curValue = cur === null ? null : cur.fieldValue;
    const refValue = ref === null ? null : ref.fieldValue;
    for (let i = 0; i < base.fieldCount && s.ok; i++) {
      const start = base.fieldStart[i];
      const bits = base.fieldBits[i];
      const b = baseValue[i];
      const v = curValue === null ? 0 : curValue[i];
      if (bits === 1) {
        const x = s.uint(v ^ b, 1);
        if (reading) writeField(bytes, start, 1, x ^ b);
        continue;
      }
      if (bits >= RAW_FIELD_BITS) {
        const raw = s.uint(v, bits);
        if (reading) writeField(bytes, start, bits, raw);
        continue;
      }
      const d = refValue === null ? 0 : signed(b - refValue[i], bits);
      const predicted = b + Math.round((d * ahead) / behind);
      const r = signed(v - predicted, bits);
      // Order of the code: the field's last step's bit length less one (a field that moves far
      // has far residuals too), so the raw low bits are not spelt out in the prefix.
      // bits < RAW_FIELD_BITS: z < 2^29, and every step below is 32-bit integer arithmetic.
      const k = Math.min(bits - 1, Math.max(0, 31 - Math.clz32(Math.abs(d))));
      const z = r >= 0 ? 2 * r : -2 * r - 1;
      const hi = serializeExpGolomb(s, z >>> k, (1 << (bits - k)) - 1);
      const lo = s.uint(z & ((1 << k) - 1), k);
      if (reading) {
        const zig = hi * (1 << k) + lo;
        const got = (zig & 1) === 0 ? zig / 2 : -(zig + 1) / 2;
        writeField(bytes, start, bits, ((predicted + got) << (32 - bits)) >>> (32 - bits));
      }
    }
    return s.ok;
  }
}
