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

/**
 * Entries kept per entity per tick (distinct baselines); more go uncached: the frame's writer
 * encodes each once, into the spill its store's writers share (snapshot-writer.ts).
 */
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

/** Held tick meaning "not in the client's view". */
export const NOT_HELD = 0xffffffff;
/** Saturation of the one-byte tick spans a frame records (beyond PREDICTION_TICKS: no prediction). */
export const SPAN_MAX = 255;
/** The spans of an entity the client does not hold. */
export const NO_SPANS = 0xffffffff;

/**
 * Writes entity `e`'s entry (after its index skip) with operation `op`, from the current values
 * `cur` of tick `tick`, against what the client's baseline frame records for it: `held`, the tick
 * whose values it holds (NOT_HELD: none), and `spans`, one byte each from the lowest: how many
 * ticks ago the entry that brought its newer value was sent (`age`), how far apart its two values
 * are (`gap`, 0: it holds one), `back` (its older value is the values at tick - age - back) and
 * the type it holds (NO_SPANS when it holds none). What every writer writes, cached or not; `h`
 * is the caller's scratch header (its tally, if any, counts the symbols written).
 */
export function encodeEntry(
  s: BitStream,
  store: EntityStore,
  h: EntryHeader,
  e: number,
  op: number,
  tick: number,
  cur: HistorySlot,
  held: number,
  spans: number,
): void {
  const o = e * store.stride;
  h.op = op;
  h.parity = cur.parity[e];
  h.typeId = cur.type[e];
  h.heldType = held === NOT_HELD ? -1 : spans >>> 24;
  let base = cur.values;
  let prev = cur.values;
  if (op === OP_UPDATE) {
    const slot = store.history(held) as HistorySlot;
    base = slot.values;
    prev = base;
    h.baseParity = slot.parity[e];
    h.age = spans & 0xff;
    h.gap = (spans >>> 8) & 0xff;
    if (h.gap !== 0 && h.gap <= PREDICTION_TICKS && h.age <= PREDICTION_TICKS) {
      prev = (store.history(tick - h.age - ((spans >>> 16) & 0xff)) as HistorySlot).values;
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
   * client holding `held` and `spans` (as encodeEntry): its index, encoding it first if no client
   * needed it yet this tick. -1 when it cannot be cached: the caller encodes it itself.
   */
  entry(e: number, op: number, tick: number, held: number, spans: number): number {
    if (tick !== this.tick) {
      this.tick = tick;
      this.stream.beginWrite();
    }
    // An update depends on all of the held state; any other operation only on the held type.
    const update = op === OP_UPDATE;
    const keyHeld = update ? held : -1;
    const rest = update ? spans | 0 : held === NOT_HELD ? -1 : spans >>> 24;
    const base = e * SLOTS;
    let n = this.count[e];
    if (this.entityTick[e] !== tick) {
      this.entityTick[e] = tick;
      n = 0;
      this.count[e] = 0;
    }
    for (let k = base; k < base + n; k++) {
      if (this.keyOp[k] === op && this.keyHeld[k] === keyHeld && this.keyRest[k] === rest) {
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
    encodeEntry(
      s,
      this.store,
      this.header,
      e,
      op,
      tick,
      this.store.history(tick) as HistorySlot,
      held,
      spans,
    );
    if (!s.ok) {
      s.rewind(at);
      this.stats.uncached++;
      return -1;
    }
    const k = base + n;
    this.keyOp[k] = op;
    this.keyHeld[k] = keyHeld;
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
