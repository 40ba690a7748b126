// The client's snapshot reader: decodes each snapshot against the baseline frame it names, keeps
// a ring of decoded frames to serve as later baselines, and drops (and counts) any snapshot it
// cannot decode exactly (wire layout: src/protocol/snapshot.ts).
//
// Every frame should be passed in, even one older than the newest read: the server may name it
// as a baseline later. After a successful read the outputs describe that frame (its tick, the
// entities in view with their type, values, teleport parity and whether this snapshot touched
// them, and the entities it created and removed); they stay as they are until the next
// successful read. A snapshot newer than every frame read so far that cannot be decoded sets
// `needsFullUpdate`: the client should ask the server to reset its baseline until a read succeeds.

import type { BitStream } from '../protocol/bitstream.ts';
import type { GameSchema } from '../protocol/schema.ts';
import {
  createEntryHeader,
  OP_CREATE,
  OP_REMOVE,
  OP_UPDATE,
  SNAPSHOT_DROP_REASONS,
  type SnapshotDropReason,
  serializeEntry,
  serializeIndexStep,
  serializeRunLength,
} from '../protocol/snapshot.ts';

export interface SnapshotReaderStats {
  framesRead: number;
  /** Snapshots dropped, by reason. */
  dropped: Record<SnapshotDropReason, number>;
  /** Bits of the last snapshot read. */
  lastBits: number;
  /**
   * Frames the ring has made: at most one per slot the frames in the read window need at once
   * (half the ring for a client sent every other tick), whatever ticks its frames move to.
   */
  framesMade: number;
}

/** Saturation of a decoded frame's `gap` (beyond PREDICTION_TICKS: no prediction). */
const SPAN_MAX = 255;

/** The entity indices a reader's frames have room for at first (grown as higher ones are read). */
const FIRST_CAPACITY = 64;

/**
 * One decoded frame: the entities in view at a tick and their values (stride values each), and
 * what their next update is predicted from: the frame tick whose entry brought the values
 * (`valueTick`), the values before that entry (`prev`) and the ticks between the two entries
 * (`gap`, 0: no older values; saturating at 255). Its arrays are indexed by entity and have room
 * for the indices below `capacity`: the reader grows every frame it holds, in place, when it
 * reads a higher one, so a frame's arrays may be replaced by larger ones (read them from the
 * frame each time; never keep them).
 */
export class DecodedFrame {
  // Fractions until the constructor sets them: laid out as doubles from the start
  // (createUserCommand says why).
  tick = 0.5;
  viewCount = 0.5;
  capacity = 0.5;
  view: Uint16Array;
  inView: Uint8Array;
  type: Uint8Array;
  parity: Uint8Array;
  changed: Uint8Array;
  values: Int32Array;
  prev: Int32Array;
  valueTick: Float64Array;
  gap: Uint8Array;
  /** The whole block, every array above: a frame is copied in one move. */
  bytes: Uint8Array;
  constructor(capacity: number, stride: number) {
    // One block for all the arrays: a frame's memory is contiguous, one allocation instead of nine.
    const n = capacity;
    const block = new ArrayBuffer(n * 8 + n * stride * 8 + n * 2 + n * 5);
    this.bytes = new Uint8Array(block);
    this.valueTick = new Float64Array(block, 0, n);
    this.values = new Int32Array(block, n * 8, n * stride);
    this.prev = new Int32Array(block, n * 8 + n * stride * 4, n * stride);
    let at = n * 8 + n * stride * 8;
    this.view = new Uint16Array(block, at, n);
    at += n * 2;
    this.inView = new Uint8Array(block, at, n);
    this.type = new Uint8Array(block, at + n, n);
    this.parity = new Uint8Array(block, at + 2 * n, n);
    this.changed = new Uint8Array(block, at + 3 * n, n);
    this.gap = new Uint8Array(block, at + 4 * n, n);
    this.tick = -1;
    this.viewCount = 0;
    this.capacity = capacity;
  }

  /** Gives the frame room for `capacity` entity indices (more than it has), keeping what it holds. */
  grow(capacity: number, stride: number): void {
    const from = new DecodedFrame(capacity, stride);
    from.view.set(this.view);
    from.inView.set(this.inView);
    from.type.set(this.type);
    from.parity.set(this.parity);
    from.changed.set(this.changed);
    from.values.set(this.values);
    from.prev.set(this.prev);
    from.valueTick.set(this.valueTick);
    from.gap.set(this.gap);
    this.view = from.view;
    this.inView = from.inView;
    this.type = from.type;
    this.parity = from.parity;
    this.changed = from.changed;
    this.values = from.values;
    this.prev = from.prev;
    this.valueTick = from.valueTick;
    this.gap = from.gap;
    this.bytes = from.bytes;
    this.capacity = capacity;
  }
}

/** The ring's empty slots: a frame of no tick and no room, never written (replaced when used). */
const NO_FRAME = new DecodedFrame(0, 0);

export class SnapshotReader {
  readonly schema: GameSchema;
  readonly stats: SnapshotReaderStats;
  /** Set when a new snapshot could not be decoded; cleared by the next successful read. */
  needsFullUpdate = false;
  /** Tick of the frame last read successfully (-1: none yet), and of its baseline (-1: none). */
  frameTick = -1;
  baselineTick = -1;
  /** The newest frame tick read successfully. */
  newestTick = -1;
  /** Times `reset` forgot every frame: a frame of the same tick read since may hold other values. */
  resets = 0;
  /** Entities the frame created (including a new entity in a reused index), ascending. */
  readonly created: Uint16Array;
  createdCount = 0;
  /** Entities the frame removed (including the old entity of a reused index), ascending. */
  readonly removed: Uint16Array;
  removedCount = 0;

  private readonly maxEntities: number;
  private readonly stride: number;
  /**
   * The entity indices the ring's frames and the work frame have room for: a power of two from
   * FIRST_CAPACITY (or maxEntities, if less), doubled when a snapshot names a higher index. The
   * outputs have room for maxEntities. Ring slots hold NO_FRAME until a frame is first stored in
   * them, so a reader's memory follows the indices its game uses and the frames it keeps.
   */
  private capacity: number;
  private readonly ring: DecodedFrame[];
  private readonly mask: number;
  private work: DecodedFrame;
  /** The outputs: a copy of the frame last read, made when first asked for (`published`). */
  private readonly out: DecodedFrame;
  /** The frame last read while the outputs do not show it yet (null: they do). */
  private unpublished: DecodedFrame | null = null;
  private readonly views: Int32Array[];
  private readonly pendingCreated: Uint16Array;
  private readonly pendingRemoved: Uint16Array;
  private readonly header = createEntryHeader();

  /** Keeps the schema's frameHistory frames. */
  constructor(schema: GameSchema) {
    const { frameHistory } = schema;
    this.schema = schema;
    const n = schema.maxEntities;
    const stride = schema.stride;
    this.maxEntities = n;
    this.stride = stride;
    this.capacity = Math.min(FIRST_CAPACITY, n);
    this.ring = [];
    for (let i = 0; i < frameHistory; i++) this.ring.push(NO_FRAME);
    this.mask = frameHistory - 1;
    this.work = new DecodedFrame(this.capacity, stride);
    this.out = new DecodedFrame(n, stride);
    // Made when first asked for (values).
    this.views = new Array(n);
    this.created = new Uint16Array(n);
    this.removed = new Uint16Array(n);
    this.pendingCreated = new Uint16Array(n);
    this.pendingRemoved = new Uint16Array(n);
    const dropped = {} as Record<SnapshotDropReason, number>;
    for (const r of SNAPSHOT_DROP_REASONS) dropped[r] = 0;
    this.stats = { framesRead: 0, dropped, lastBits: 0, framesMade: 0 };
  }

  /**
   * Forgets every frame (a new connection or level): the next snapshot must come without a
   * baseline. Statistics are kept. Allocation-free.
   */
  reset(): void {
    this.resets++;
    for (const f of this.ring) if (f !== NO_FRAME) f.tick = -1;
    const out = this.out;
    for (let k = 0; k < out.viewCount; k++) out.inView[out.view[k]] = 0;
    out.viewCount = 0;
    this.unpublished = null;
    this.createdCount = 0;
    this.removedCount = 0;
    this.frameTick = -1;
    this.baselineTick = -1;
    this.newestTick = -1;
    this.needsFullUpdate = false;
  }

  /**
   * Whether the frame of a tick read successfully since the last reset may have left the ring:
   * only one a ring's length or more behind the newest can (a later frame took its slot, or a
   * slot with no frame took it); a newer one is still held.
   */
  mayHaveForgotten(tick: number): boolean {
    return tick <= this.newestTick - this.ring.length;
  }

  /** The decoded frame of server tick `tick` while the ring still holds it (read-only use). */
  frameAt(tick: number): DecodedFrame | undefined {
    const f = this.ring[tick & this.mask];
    return f.tick === tick && tick >= 0 ? f : undefined;
  }

  /** Entities in view in the frame last read, ascending: `view[0 .. viewCount)`. */
  get view(): Uint16Array {
    return this.published().view;
  }

  get viewCount(): number {
    return this.published().viewCount;
  }

  /** True when entity `index` is in view in the frame last read. */
  inView(index: number): boolean {
    return index >= 0 && index < this.maxEntities && this.published().inView[index] !== 0;
  }

  /** Type id of in-view entity `index` in the frame last read. */
  typeOf(index: number): number {
    return this.published().type[index];
  }

  /** Teleport parity of in-view entity `index`: a change means "do not interpolate across". */
  parityOf(index: number): number {
    return this.published().parity[index];
  }

  /** True when the frame last read created or updated entity `index`. */
  changedThisFrame(index: number): boolean {
    return this.published().changed[index] !== 0;
  }

  /** Stored values of in-view entity `index` in the frame last read (a view made once). */
  values(index: number): Int32Array {
    this.published();
    let v = this.views[index];
    if (v === undefined && index >= 0 && index < this.maxEntities) {
      v = this.out.values.subarray(index * this.stride, (index + 1) * this.stride);
      this.views[index] = v;
    }
    return v;
  }

  /**
   * Decodes the snapshot at the stream's position, for the frame of server tick `frameTick`
   * (from the frame header) and `baselineHint`, the writer's hint (-1: none). Returns true and updates the outputs on success; returns false and
   * counts the reason in `stats.dropped` otherwise (a duplicate or too-old frame, a bad tick, an
   * unknown or too-old baseline, bad contents). Never throws on any bytes; allocation-free once
   * the ring's slots have each held a frame and no higher entity index comes (each allocates once).
   */
  read(s: BitStream, frameTick: number, baselineHint = -1): boolean {
    if (!s.isReading) throw new RangeError('SnapshotReader.read: the stream is not reading');
    if (!Number.isInteger(frameTick) || frameTick < 0 || frameTick > 0xffffffff) {
      return this.drop('bad frame tick', false);
    }
    const newer = this.newestTick < 0 || frameTick > this.newestTick;
    if (this.newestTick >= 0) {
      if (frameTick <= this.newestTick - this.ring.length) return this.drop('frame too old', false);
      if (this.ring[frameTick & this.mask].tick === frameTick) return this.drop('duplicate', false);
    }
    if (!s.ok) return this.fail(s, newer);
    const start = s.bitsProcessed;
    const hinted = baselineHint >= 0 && baselineHint < frameTick && s.bool(false);
    const delta = hinted ? frameTick - baselineHint : s.varuint(0);
    if (!s.ok) return this.fail(s, newer);
    let base: DecodedFrame | null = null;
    if (delta > 0) {
      if (delta >= this.ring.length) return this.drop('baseline too old', newer);
      const baseTick = frameTick - delta;
      const f = this.ring[baseTick & this.mask];
      if (baseTick < 0 || f.tick !== baseTick) return this.drop('baseline unknown', newer);
      base = f;
    }
    const w = this.work;
    this.startFrame(w, base);
    let created = 0;
    let removed = 0;
    const h = this.header;
    const stride = this.stride;
    let prev = -1;
    // Entries listed as runs (a step, a length, that many consecutive entries), and how many of
    // the current run are left to read.
    let runs = false;
    let left = 0;
    for (;;) {
      let e = prev + 1;
      if (left > 0) left--;
      else {
        const step = serializeIndexStep(s, 0);
        if (!s.ok) return this.fail(s, newer);
        if (step === 0) break;
        e = prev + step;
        if (e >= this.maxEntities) return this.drop('index out of range', newer);
        if (prev < 0) runs = s.bool(false);
        if (runs) left = serializeRunLength(s, 0) - 1;
        if (!s.ok) return this.fail(s, newer);
        if (e + left >= this.maxEntities) return this.drop('index out of range', newer);
        if (e + left >= this.capacity) this.grow(Math.max(e, e + left) + 1);
      }
      prev = e;
      const held = w.inView[e] !== 0;
      const o = e * stride;
      // The values an update replaces (the prediction's newer input): the baseline's, which the
      // work frame started as a copy of (a held entity is in the baseline, so base is a frame).
      // Read there rather than copied out first; a create reads none.
      const older = held ? (base as DecodedFrame).values : w.prev;
      h.heldType = -1;
      if (held) {
        h.heldType = w.type[e];
        h.baseParity = w.parity[e];
        const age = frameTick - w.valueTick[e];
        h.age = Math.min(age, SPAN_MAX);
        h.gap = w.gap[e];
      }
      if (!serializeEntry(s, h, this.schema, w.values, o, older, o, w.prev, o)) return this.fail(s, newer);
      if (h.op === OP_UPDATE) {
        for (let f = 0; f < stride; f++) w.prev[o + f] = older[o + f];
        w.gap[e] = h.age;
      } else {
        w.gap[e] = 0;
      }
      w.valueTick[e] = frameTick;
      if (h.op === OP_REMOVE) {
        w.inView[e] = 0;
        this.pendingRemoved[removed++] = e;
        continue;
      }
      if (h.op === OP_CREATE) {
        if (held) this.pendingRemoved[removed++] = e;
        // Listed at once, so that a frame failing further on leaves nothing behind (startFrame
        // clears what is listed); the list is rebuilt in order below.
        else w.view[w.viewCount++] = e;
        this.pendingCreated[created++] = e;
        w.inView[e] = 1;
        w.type[e] = h.typeId;
      }
      w.parity[e] = h.parity;
      w.changed[e] = 1;
    }
    // The baseline's list is ascending; only a frame that created or removed entities needs it
    // rebuilt in order.
    if (created > 0 || removed > 0) {
      let count = 0;
      const capacity = this.capacity;
      for (let e = 0; e < capacity; e++) if (w.inView[e] !== 0) w.view[count++] = e;
      w.viewCount = count;
    }
    w.tick = frameTick;
    const slot = frameTick & this.mask;
    const freed = this.ring[slot];
    // A slot that holds no frame: the work frame takes one no read can reach any more, or a new one.
    this.work = freed === NO_FRAME ? this.spareFrame(slot, newer ? frameTick : this.newestTick) : freed;
    this.ring[slot] = w;
    // The outputs are copied from the frame when first asked for: a client's view draws from the
    // ring's frames, and most reads are never looked at through them.
    this.unpublished = w;
    for (let k = 0; k < created; k++) this.created[k] = this.pendingCreated[k];
    for (let k = 0; k < removed; k++) this.removed[k] = this.pendingRemoved[k];
    this.createdCount = created;
    this.removedCount = removed;
    this.frameTick = frameTick;
    this.baselineTick = base === null ? -1 : base.tick;
    if (newer) this.newestTick = frameTick;
    this.needsFullUpdate = false;
    this.stats.framesRead++;
    this.stats.lastBits = s.bitsProcessed - start;
    return true;
  }

  /**
   * A frame for the work frame when the ring's slot `slot` held none: one of the ring's frames no
   * read can reach any more, taken from its slot, or else a new one. A frame `ring.length` ticks
   * or more behind the newest (`newest`) is outside the window snapshots are read in: only a
   * snapshot older than the newest could still name it as a baseline, and in steady state the
   * slot's next frame has replaced it by then. Without this, a client whose frames moved from even
   * to odd ticks (a server spreading its frames over ticks moves some) kept its old frames in the
   * other parity's slots for good and made a new frame for each slot of the new one: its memory
   * grew late in a long run, up to a frame per slot. A scan of the ring, only when a slot is empty.
   */
  private spareFrame(slot: number, newest: number): DecodedFrame {
    const ring = this.ring;
    for (let j = 0; j < ring.length; j++) {
      const f = ring[j];
      if (j !== slot && f !== NO_FRAME && (f.tick < 0 || f.tick <= newest - ring.length)) {
        ring[j] = NO_FRAME;
        return f;
      }
    }
    this.stats.framesMade++;
    return new DecodedFrame(this.capacity, this.stride);
  }

  /**
   * Gives the work frame and every frame of the ring room for `needed` entity indices (at most
   * maxEntities): the next power of two, each frame keeping what it holds.
   */
  private grow(needed: number): void {
    let capacity = this.capacity;
    while (capacity < needed) capacity *= 2;
    capacity = Math.min(capacity, this.maxEntities);
    const stride = this.stride;
    for (const f of this.ring) if (f !== NO_FRAME) f.grow(capacity, stride);
    this.work.grow(capacity, stride);
    this.capacity = capacity;
  }

  /** Empties the work frame and fills it with the baseline's entities, none marked changed. */
  private startFrame(w: DecodedFrame, base: DecodedFrame | null): void {
    if (base !== null && base.capacity === w.capacity && base.viewCount * 4 >= w.capacity) {
      // Most indices in view: the whole block in one copy beats a copy entity by entity. What
      // the block holds for indices out of view is never read.
      w.bytes.set(base.bytes);
      w.changed.fill(0);
      w.viewCount = base.viewCount;
      return;
    }
    for (let k = 0; k < w.viewCount; k++) w.inView[w.view[k]] = 0;
    w.viewCount = 0;
    if (base === null) return;
    const types = this.schema.types;
    const stride = this.stride;
    for (let k = 0; k < base.viewCount; k++) {
      const e = base.view[k];
      const t = base.type[e];
      w.inView[e] = 1;
      w.type[e] = t;
      w.parity[e] = base.parity[e];
      w.changed[e] = 0;
      w.valueTick[e] = base.valueTick[e];
      w.gap[e] = base.gap[e];
      const o = e * stride;
      const n = types[t].fieldCount;
      for (let f = 0; f < n; f++) {
        w.values[o + f] = base.values[o + f];
        w.prev[o + f] = base.prev[o + f];
      }
      w.view[w.viewCount++] = e;
    }
  }

  /**
   * The outputs, showing the frame last read: copied from it on the first call after a read. The
   * frame is still in the ring then: a later read that succeeds replaces `unpublished`, and one
   * that fails writes only the work frame, never a frame of the ring.
   */
  private published(): DecodedFrame {
    const out = this.out;
    const w = this.unpublished;
    if (w === null) return out;
    this.unpublished = null;
    const types = this.schema.types;
    const stride = this.stride;
    for (let k = 0; k < out.viewCount; k++) out.inView[out.view[k]] = 0;
    for (let k = 0; k < w.viewCount; k++) {
      const e = w.view[k];
      const t = w.type[e];
      out.view[k] = e;
      out.inView[e] = 1;
      out.type[e] = t;
      out.parity[e] = w.parity[e];
      out.changed[e] = w.changed[e];
      const o = e * stride;
      const n = types[t].fieldCount;
      for (let f = 0; f < n; f++) out.values[o + f] = w.values[o + f];
    }
    out.viewCount = w.viewCount;
    return out;
  }

  private fail(s: BitStream, newer: boolean): false {
    const error = s.error;
    let reason: SnapshotDropReason = 'malformed';
    if (error === 'read past end') reason = 'overrun';
    else {
      for (let k = 0; k < SNAPSHOT_DROP_REASONS.length; k++) {
        if (SNAPSHOT_DROP_REASONS[k] === error) reason = SNAPSHOT_DROP_REASONS[k];
      }
    }
    return this.drop(reason, newer);
  }

  private drop(reason: SnapshotDropReason, desync: boolean): false {
    this.stats.dropped[reason]++;
    if (desync) this.needsFullUpdate = true;
    return false;
  }
}
