// The server's shared cache of encoded snapshot entries (Source's packed-entity and change-frame
// caches): within a tick, an entity's entry against a given baseline state is encoded once and
// copied bit for bit into every client's snapshot that needs the same entry, and a client's
// writer measures an entry's cost by its cached length instead of encoding it twice.
//
// An entry is a pure function of the entity's values now and of what the client's baseline frame
// records for it (snapshot-writer.ts: the tick whose values it holds, the type it holds, and the
// spans to its older value that an update is predicted from), so it is keyed by exactly those:
// two clients with equal keys get equal bits, whatever the codec does with the baseline state.

import { BitStream } from '../protocol/bitstream.ts';
import {
  createEntryHeader,
  type EntryHeader,
  OP_UPDATE,
  PREDICTION_TICKS,
  serializeEntry,
} from '../protocol/snapshot.ts';
import type { EntityStore, HistorySlot } from './entities.ts';

/** Entries kept per entity per tick (distinct baselines); more are encoded each time, uncached. */
const SLOTS = 16;
/** Bytes of encoded entries kept per tick (about 40,000 typical entries); more go uncached. */
const DEFAULT_CAPACITY_BYTES = 1 << 19;

export interface SnapshotCacheStats {
  /** Entries encoded into the cache, and entries served from it without encoding. */
  encoded: number;
  reused: number;
  /** Entries encoded outside the cache (the entity's slots or the tick's bytes were full). */
  uncached: number;
}

/**
 * What a client's baseline frame records for an entity, as the codec sees it: the tick whose
 * values it holds (NOT_HELD: none) and the type it holds (-1: none); for an update, how many ticks
 * ago the entry that brought its newer value was sent (`age`), how far apart its two values are
 * (`gap`, 0: it holds one) and `back` (its older value is the values at tick - age - back).
 */
export interface HeldState {
  held: number;
  heldType: number;
  age: number;
  gap: number;
  back: number;
}

/**
 * Writes entity `e`'s entry (after its index skip) with operation `op`, from the current values
 * `cur` of tick `tick`, against what the client holds (`state`). What every writer writes, cached
 * or not; `h` is the caller's scratch header (its tally, if any, counts the symbols written).
 */
export function encodeEntry(
  s: BitStream,
  store: EntityStore,
  h: EntryHeader,
  e: number,
  op: number,
  tick: number,
  cur: HistorySlot,
  state: HeldState,
): void {
  const o = e * store.stride;
  h.op = op;
  h.parity = cur.parity[e];
  h.typeId = cur.type[e];
  h.heldType = state.heldType;
  let base = cur.values;
  let prev = cur.values;
  if (op === OP_UPDATE) {
    const held = store.history(state.held) as HistorySlot;
    base = held.values;
    prev = base;
    h.baseParity = held.parity[e];
    h.age = state.age;
    h.gap = state.gap;
    if (h.gap !== 0 && h.gap <= PREDICTION_TICKS && h.age <= PREDICTION_TICKS) {
      prev = (store.history(tick - h.age - state.back) as HistorySlot).values;
    }
  }
  serializeEntry(s, h, store.schema, cur.values, o, base, o, prev, o);
}

/** One per entity store, shared by every client's SnapshotWriter. Allocation-free after construction. */
export class SnapshotEncodeCache {
  readonly stats: SnapshotCacheStats = { encoded: 0, reused: 0, uncached: 0 };
  private readonly store: EntityStore;
  private readonly stream: BitStream;
  private readonly header = createEntryHeader();
  private tick = -1;
  /** Per entity: the tick its entries are for, and how many it has. */
  private readonly entityTick: Float64Array;
  private readonly count: Uint8Array;
  /** Per entry (entity * SLOTS + k): its key (operation, held tick, packed type and spans) and where its bits are. */
  private readonly keyOp: Int8Array;
  private readonly keyHeld: Float64Array;
  private readonly keyRest: Int32Array;
  private readonly start: Int32Array;
  private readonly length: Int32Array;

  constructor(store: EntityStore, capacityBytes = DEFAULT_CAPACITY_BYTES) {
    this.store = store;
    const n = store.maxEntities;
    this.stream = new BitStream(capacityBytes);
    this.entityTick = new Float64Array(n).fill(-1);
    this.count = new Uint8Array(n);
    this.keyOp = new Int8Array(n * SLOTS);
    this.keyHeld = new Float64Array(n * SLOTS);
    this.keyRest = new Int32Array(n * SLOTS);
    this.start = new Int32Array(n * SLOTS);
    this.length = new Int32Array(n * SLOTS);
  }

  /** The bytes entries are copied from (valid until the next tick's first entry). */
  get bytes(): Uint8Array {
    return this.stream.buffer;
  }

  /**
   * The cached entry of entity `e` with operation `op` at the store's newest commit `tick`, for a
   * client holding `state`: its index, encoding it first if no client needed it yet this tick.
   * -1 when it cannot be cached: the caller encodes it itself (encodeEntry).
   */
  entry(e: number, op: number, tick: number, state: HeldState): number {
    if (tick !== this.tick) {
      this.tick = tick;
      this.stream.beginWrite();
    }
    // An update depends on all of the held state; any other operation only on the held type.
    const update = op === OP_UPDATE;
    const held = update ? state.held : -1;
    const rest =
      ((state.heldType & 0xff) << 24) |
      (update ? ((state.age & 0xff) << 16) | ((state.gap & 0xff) << 8) | (state.back & 0xff) : 0);
    const base = e * SLOTS;
    let n = this.count[e];
    if (this.entityTick[e] !== tick) {
      this.entityTick[e] = tick;
      n = 0;
      this.count[e] = 0;
    }
    for (let k = base; k < base + n; k++) {
      if (this.keyOp[k] === op && this.keyHeld[k] === held && this.keyRest[k] === rest) {
        this.stats.reused++;
        return k;
      }
    }
    if (n === SLOTS) {
      this.stats.uncached++;
      return -1;
    }
    const s = this.stream;
    const at = s.bitsProcessed;
    encodeEntry(s, this.store, this.header, e, op, tick, this.store.history(tick) as HistorySlot, state);
    if (!s.ok) {
      s.rewind(at);
      this.stats.uncached++;
      return -1;
    }
    const k = base + n;
    this.keyOp[k] = op;
    this.keyHeld[k] = held;
    this.keyRest[k] = rest;
    this.start[k] = at;
    this.length[k] = s.bitsProcessed - at;
    this.count[e] = n + 1;
    this.stats.encoded++;
    return k;
  }

  /** Bits of cached entry `k`. */
  bitsOf(k: number): number {
    return this.length[k];
  }

  /** Where cached entry `k` starts in `bytes`, in bits. */
  startOf(k: number): number {
    return this.start[k];
  }
}
