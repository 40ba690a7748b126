// One client's snapshot writer: picks the entities the client should hear about this frame, by
// interest and priority within a bit budget, and delta-encodes them against the newest frame the
// client acknowledged (wire layout: src/protocol/snapshot.ts).
//
// Every frame records, per entity in the client's view, the tick whose values the client holds
// for it once it has that frame. The next frame, built against an acknowledged one, sends only
// what differs from those values: an entity whose values have not changed since the tick the
// client holds costs nothing. Entities that need sending are bucketed by accumulated priority
// (it grows each frame an entity waits, faster the nearer it is, and resets when it is sent), so
// the budget goes to the most urgent ones first and far ones still get their turn, less often.
// Selection charges each entity its entry plus the change in index-step bits when every entry
// takes a step of its own (and the first one the bit that says how the entries are listed), then
// the chosen entries are written in ascending index order, as runs of consecutive indices when
// that costs fewer bits: the charge is exact or above, never below.
//
// An update is predicted from the last two values the client holds (snapshot.ts). A frame
// therefore also records, per entity in view, how old the client's newer value is (`age`: ticks
// since the frame whose entry carried it), how far apart its two values are (`gap`, 0: it holds
// one) and a tick whose values equal its older value (`back` ticks before the newer one's frame).
// An entity's entry is a pure function of what the baseline frame records for it and its values
// now, so it is cached by exactly those: entries come from the server's shared encode cache
// (snapshot-cache.ts), each encoded once per tick for every client holding the same state, and
// an entry's cost is its cached length.

import { BitStream } from '../protocol/bitstream.ts';
import {
  type CodeTally,
  createEntryHeader,
  indexStepBits,
  OP_CREATE,
  OP_REFRESH,
  OP_REMOVE,
  OP_UPDATE,
  PREDICTION_TICKS,
  runLengthBits,
  serializeIndexStep,
  serializeRunLength,
} from '../protocol/snapshot.ts';
import type { EntityStore, HistorySlot } from './entities.ts';
import { encodeEntry, NO_SPANS, NOT_HELD, SnapshotEncodeCache, SPAN_MAX } from './snapshot-cache.ts';

export interface SnapshotWriterConfig {
  /** Entities farther than this from the viewer are not sent (default Infinity: all of them). */
  viewRadius: number;
  /** Distance in world units at which an entity's priority weight is halved (default 1024). */
  priorityDistance: number;
  /**
   * Ticks of frames remembered for lag compensation (`hasFrame`, `heldTick`), a whole number;
   * at least the schema's `frameHistory` is kept whatever this says (default 0). Baselines are
   * never older than `frameHistory`: this only lets the server rebuild a view a client named from
   * a frame older than that (a command held for a missing one before it, section 6 of SPEC.md).
   * Only ticks that had a frame cost memory.
   */
  rememberTicks: number;
  /**
   * An entity whose values a frame would hold from this many ticks before it or more (an update,
   * a removal or a replacement deferred frame after frame) is written first, past the frame's
   * byte budget if need be (never past the packet); 0: never forced. The server sets it so that
   * lag compensation still has those values in its entity history when a command names the frame:
   * the history's length less a command's longest wait, less maxUnlagMs in ticks, less 1. A
   * server's `snapshots.maxHeldAgeTicks` replaces that: larger (or 0) lets views be refused as
   * frames not sent, smaller sends more past the budget.
   */
  maxHeldAgeTicks: number;
}

/** The most ticks a writer remembers frames for (rememberTicks): 64 s at 64 Hz. */
export const MAX_REMEMBER_TICKS = 4096;

export const DEFAULT_SNAPSHOT_WRITER_CONFIG: SnapshotWriterConfig = {
  viewRadius: Infinity,
  priorityDistance: 1024,
  rememberTicks: 0,
  maxHeldAgeTicks: 0,
};

export interface SnapshotWriterStats {
  /** Frames written, and those of them written against no baseline. */
  frames: number;
  framesWithoutBaseline: number;
  /** Frames whose entries were listed as runs of consecutive indices (the rest: a step each). */
  runFrames: number;
  /** Bits of all snapshots written. */
  totalBits: number;
  /** The last frame: its bits and bytes (rounded up), baseline tick (-1: none), entities. */
  lastBits: number;
  lastBytes: number;
  lastBaselineTick: number;
  /** Entities in the client's view after the frame. */
  lastInView: number;
  lastCreated: number;
  lastUpdated: number;
  lastRemoved: number;
  /** Entities that needed sending but did not fit the budget: in the last frame, and in all. */
  lastDeferred: number;
  deferred: number;
}

const NO_OP = -1;
const IN_BASE = 1;
const VISIBLE = 2;
/** Priority buckets: 4 per doubling of accumulated priority, 1.0 (a near entity's first frame) in bucket 40. */
const BUCKETS = 64;
const BUCKET_OF_ONE = 40;
/** The bucket only entities held past maxHeldAgeTicks go to: every other stays below it. */
const FORCED_BUCKET = BUCKETS - 1;

/** The bucket of accumulated priority `p`: floor(4 log2 p) + BUCKET_OF_ONE within [0, BUCKETS). */
export function priorityBucket(p: number): number {
  const b = Math.floor(4 * Math.log2(p)) + BUCKET_OF_ONE;
  if (!(b >= 0)) return 0;
  return b >= BUCKETS ? BUCKETS - 1 : b;
}

/**
 * BUCKET_THRESHOLD[j] (1 <= j < BUCKETS): the least priority whose bucket is j or above, so a
 * bucket is six comparisons (`priorityBucketFast`) instead of a logarithm. Found from priorityBucket itself
 * (each threshold's neighbouring doubles stepped until it changes), so both give the same bucket.
 */
const BUCKET_THRESHOLD = ((): Float64Array => {
  const t = new Float64Array(BUCKETS);
  t[0] = Number.NEGATIVE_INFINITY;
  const f64 = new Float64Array(1);
  const i64 = new BigInt64Array(f64.buffer);
  const step = (x: number, by: bigint): number => {
    f64[0] = x;
    i64[0] += by;
    return f64[0];
  };
  for (let j = 1; j < BUCKETS; j++) {
    let x = 2 ** ((j - BUCKET_OF_ONE) / 4);
    while (priorityBucket(x) >= j) x = step(x, -1n);
    while (priorityBucket(x) < j) x = step(x, 1n);
    t[j] = x;
  }
  return t;
})();

/** priorityBucket(p) by the thresholds: the largest j with BUCKET_THRESHOLD[j] <= p (0 for NaN). */
export function priorityBucketFast(p: number): number {
  const t = BUCKET_THRESHOLD;
  let b = 0;
  if (p >= t[b + 32]) b += 32;
  if (p >= t[b + 16]) b += 16;
  if (p >= t[b + 8]) b += 8;
  if (p >= t[b + 4]) b += 4;
  if (p >= t[b + 2]) b += 2;
  if (p >= t[b + 1]) b += 1;
  return b;
}

/**
 * Bytes of the spill (FrameWork): a frame's measured entries are at most a packet and the one
 * that did not fit; past that, entries are measured and encoded again when written.
 */
const SPILL_BYTES = 4096;

/**
 * A write's scratch, one for every writer of a store (`workFor`), since writes never overlap:
 * shared, it stays in cache across the clients' frames, where each writer's own arrays (19,840
 * bytes a writer for 1,024 entities) would be read cold for every frame. A write leaves `mark` 0, `op`
 * NO_OP and `selected` clear where it set them; the rest means nothing between writes. `pos[e]`:
 * where entity e sits in the frame being written (set for its candidates only).
 */
class FrameWork {
  readonly pos: Uint16Array;
  readonly mark: Uint8Array;
  readonly op: Int8Array;
  readonly bucketOf: Uint8Array;
  readonly bucketCount = new Int32Array(BUCKETS);
  readonly order: Uint16Array;
  readonly found: Uint16Array;
  readonly selected: Uint32Array;
  readonly entryOf: Int32Array;
  readonly entryBits: Int32Array;
  /**
   * Entries the encode cache could not hold (their entity's slots were full), encoded once when
   * measured and copied from here when written; `spillAt[e]`: where e's entry starts (-1: none).
   */
  readonly spill = new BitStream(SPILL_BYTES);
  readonly spillAt: Int32Array;
  /** Whether this write began the spill (it is begun when first needed: most frames never do). */
  spillBegun = false;
  readonly need: Uint16Array;
  /** A write began and did not finish (it failed, or threw): the arrays are cleared whole before the next. */
  dirty = false;
  constructor(maxEntities: number) {
    const n = maxEntities;
    this.pos = new Uint16Array(n);
    this.mark = new Uint8Array(n);
    this.op = new Int8Array(n).fill(NO_OP);
    this.bucketOf = new Uint8Array(n);
    this.order = new Uint16Array(n);
    this.found = new Uint16Array(n);
    this.selected = new Uint32Array((n + 31) >>> 5);
    this.entryOf = new Int32Array(n);
    this.entryBits = new Int32Array(n);
    this.spillAt = new Int32Array(n);
    this.need = new Uint16Array(n);
  }

  /** Clears what an unfinished write may have left set. */
  clear(): void {
    this.mark.fill(0);
    this.op.fill(NO_OP);
    this.selected.fill(0);
    this.bucketCount.fill(0);
  }
}

const works = new WeakMap<EntityStore, FrameWork>();

/** The FrameWork every writer of `store` shares. */
function workFor(store: EntityStore): FrameWork {
  let work = works.get(store);
  if (work === undefined) {
    work = new FrameWork(store.maxEntities);
    works.set(store, work);
  }
  return work;
}

/**
 * Entries a writer's first frame has room for. A writer's frames all grow to the room of the
 * largest view it has written (capacity), so a match whose views are large allocates each
 * frame's memory once, and a frame of the same room as its baseline starts as one copy of it.
 */
const FRAME_START_CAPACITY = 64;

/**
 * What a client holds once it has a frame: the entities in its view (`view[0..viewCount)`, in no
 * set order) and, at the same positions, `held`, the tick of the values it holds for that entity,
 * and what its next update is predicted from: `sent`, the tick of the frame whose entry brought
 * the client's newer value (its `age` at a frame is that frame's tick less this, saturating at
 * SPAN_MAX), and `spans`, which packs one byte each from the second lowest: `gap` (ticks from its
 * older value's entry to the newer's; 0: none), `back` (the older value is the values at sent -
 * back) and `type`, the type of the entity it holds; its lowest byte is 0, where the cache key
 * (snapshot-cache.ts) puts the age. Every other entity is not held. Every value is absolute or
 * relative to the entity's own entries. A frame keeps only its view: a client's frames stay in
 * memory for the lag-compensation history (about 130 at 32 frames a second), so their size is
 * their view's, not the store's.
 */
class Frame {
  tick = -1;
  /** The tick this frame was last written for (even if the write failed), -1: never. */
  writtenTick = -1;
  viewCount = 0;
  /** Entries the arrays have room for. */
  capacity = 0;
  view!: Uint16Array;
  held!: Uint32Array;
  spans!: Uint32Array;
  sent!: Uint32Array;
  /** The four arrays' one block, whole: a frame of the same capacity is copied in one call. */
  bytes!: Uint8Array;
  constructor(capacity: number) {
    this.allocate(capacity);
  }

  /** Makes room for `capacity` entries (their values are not kept: only before they are written). */
  reserve(capacity: number): void {
    if (capacity > this.capacity) this.allocate(capacity);
  }

  private allocate(capacity: number): void {
    // One block for the four arrays, so a frame's memory is contiguous.
    const n = capacity;
    const block = new ArrayBuffer(n * 12 + ((n * 2 + 3) & ~3));
    this.held = new Uint32Array(block, 0, n);
    this.spans = new Uint32Array(block, n * 4, n);
    this.sent = new Uint32Array(block, n * 8, n);
    this.view = new Uint16Array(block, n * 12, n);
    this.bytes = new Uint8Array(block);
    this.capacity = n;
  }
}

/** Whether values held from tick `held` are, at frame `tick`, `maxHeldAge` ticks old or more (0: never). */
function heldTooLong(held: number, tick: number, maxHeldAge: number): boolean {
  return maxHeldAge > 0 && held !== NOT_HELD && tick - held >= maxHeldAge;
}

/** The cache key spans (snapshot-cache.ts) of the entity at position `p` of `frame` at tick `tick`: its age in the lowest byte. */
function spansAt(frame: Frame, p: number, tick: number): number {
  return (frame.spans[p] | Math.min(tick - frame.sent[p], SPAN_MAX)) >>> 0;
}

export class SnapshotWriter {
  readonly config: SnapshotWriterConfig;
  readonly stats: SnapshotWriterStats = {
    frames: 0,
    framesWithoutBaseline: 0,
    runFrames: 0,
    totalBits: 0,
    lastBits: 0,
    lastBytes: 0,
    lastBaselineTick: -1,
    lastInView: 0,
    lastCreated: 0,
    lastUpdated: 0,
    lastRemoved: 0,
    lastDeferred: 0,
    deferred: 0,
  };
  private baseline = -1;
  /**
   * The newest acknowledgement not yet looked up (-1: none): an acknowledgement only notes its
   * tick, and whether the writer still remembers that frame is asked when the baseline is next
   * read (before the next write, which alone forgets frames). A server takes 256 acknowledgements
   * a tick at 512 players, each for a writer last touched a frame ago: looking the frame up then
   * cost about 2 us of memory fetches, and the write that follows reads the same lines anyway.
   */
  private ackedTick = -1;

  /** The newest acknowledged frame the writer remembers (the next baseline), -1 for none. */
  get baselineTick(): number {
    this.takeAck();
    return this.baseline;
  }

  /** The pending acknowledgement becomes the baseline if the writer remembers its frame. */
  private takeAck(): void {
    const acked = this.ackedTick;
    if (acked < 0) return;
    this.ackedTick = -1;
    if (acked > this.baseline && this.frameAt(acked) !== null) this.baseline = acked;
  }
  /** When set, written (not measured) updates count their code symbols here (code training). */
  tally: CodeTally | null = null;

  private readonly store: EntityStore;
  /**
   * The frames of the last remembered ticks (`rememberTicks`, at least `frameHistory`), pooled: a
   * tick's frame is found through `slotOf` (tick modulo the ticks remembered), and only ticks with
   * a frame hold one, so a client at half the tick rate keeps half as many frames in memory.
   */
  private readonly frames: Frame[] = [];
  private readonly slotOf: Int32Array;
  /** Pool indices in the order their frames were written (a ring of at most the ticks remembered). */
  private readonly written: Int32Array;
  private writtenHead = 0;
  private writtenCount = 0;
  /** Pool indices of frames older than the history, free to write again. */
  private readonly free: Int32Array;
  private freeCount = 0;
  private readonly frameHistory: number;
  /** Ticks remembered: a frame's slot is its tick modulo this. */
  private readonly remembered: number;
  /** The held state of the frame being written (shared by every writer of the store). */
  private readonly work: FrameWork;
  private readonly priority: Float64Array;
  private readonly mark: Uint8Array;
  private readonly op: Int8Array;
  private readonly bucketOf: Uint8Array;
  private readonly bucketCount: Int32Array;
  private readonly pos: Uint16Array;
  private readonly order: Uint16Array;
  private readonly found: Uint16Array;
  private readonly selected: Uint32Array;
  private readonly measure = new BitStream(0);
  private readonly header = createEntryHeader();
  /** The viewer's position (x, y, z) for writeForViewer; write sets it from its arguments. */
  readonly viewer = new Float64Array(3);
  /** Per chosen entity: its entry in the cache, or -1 (then copied from the spill, or encoded when written). */
  private readonly entryOf: Int32Array;
  /** Per chosen entity: the bits of its entry (after its index step). */
  private readonly entryBits: Int32Array;
  private readonly cache: SnapshotEncodeCache;
  /** The entities `classify` found needing an entry, in candidate order. */
  private readonly need: Uint16Array;
  /** Each entity type's relative priority, by type id. */
  private readonly typePriority: Float64Array;
  private lastWrittenTick = -1;
  private firstValidTick = 0;
  /** The most candidates a write has had (at least FRAME_START_CAPACITY): the room of its frames. */
  private largestView = FRAME_START_CAPACITY;

  /** `cache`: the encode cache every writer of `store` shares (default: a cache of its own). */
  constructor(
    store: EntityStore,
    config: Partial<SnapshotWriterConfig> = {},
    cache: SnapshotEncodeCache = new SnapshotEncodeCache(store),
  ) {
    this.config = { ...DEFAULT_SNAPSHOT_WRITER_CONFIG, ...config };
    const { viewRadius, priorityDistance } = this.config;
    // The schema's frame history: the oldest baseline usable, in ticks, as many as readers keep.
    const { frameHistory } = store.schema;
    if (!(viewRadius >= 0))
      throw new RangeError(`SnapshotWriter: viewRadius must be >= 0, got ${viewRadius}`);
    if (!(priorityDistance > 0)) {
      throw new RangeError(`SnapshotWriter: priorityDistance must be > 0, got ${priorityDistance}`);
    }
    this.store = store;
    const n = store.maxEntities;
    const { rememberTicks } = this.config;
    if (!(Number.isInteger(rememberTicks) && rememberTicks >= 0 && rememberTicks <= MAX_REMEMBER_TICKS)) {
      throw new RangeError(
        `SnapshotWriter: rememberTicks must be a whole number in 0..${MAX_REMEMBER_TICKS}, got ${rememberTicks}`,
      );
    }
    const { maxHeldAgeTicks } = this.config;
    if (!(Number.isInteger(maxHeldAgeTicks) && maxHeldAgeTicks >= 0)) {
      throw new RangeError(
        `SnapshotWriter: maxHeldAgeTicks must be a whole number >= 0, got ${maxHeldAgeTicks}`,
      );
    }
    const remembered = Math.max(frameHistory, rememberTicks);
    this.frameHistory = frameHistory;
    this.remembered = remembered;
    this.slotOf = new Int32Array(remembered).fill(-1);
    this.written = new Int32Array(remembered);
    this.free = new Int32Array(remembered);
    this.work = workFor(store);
    this.priority = new Float64Array(n);
    const work = this.work;
    this.mark = work.mark;
    this.op = work.op;
    this.bucketOf = work.bucketOf;
    this.bucketCount = work.bucketCount;
    this.pos = work.pos;
    this.order = work.order;
    this.found = work.found;
    this.selected = work.selected;
    this.entryOf = work.entryOf;
    this.entryBits = work.entryBits;
    this.need = work.need;
    this.typePriority = Float64Array.from(store.schema.types, (t) => t.priority);
    this.cache = cache;
  }

  /**
   * The packet carrying frame `tick` was acknowledged: that frame becomes the baseline if it is
   * newer than the current one (checked when `baselineTick` is next read). Acks of frames this
   * writer no longer remembers, or written before the last `resetBaseline`, are ignored.
   */
  acknowledge(tick: number): void {
    if (!Number.isInteger(tick) || tick < this.firstValidTick || tick <= this.baseline) return;
    if (tick <= this.ackedTick) return;
    // A newer acknowledgement before the pending one was taken (two between writes): the pending
    // one is taken first, so a frame the writer no longer remembers never hides an older one it does.
    this.takeAck();
    this.ackedTick = tick;
  }

  /** Frames in memory (the pool): at most one per tick remembered that had a frame written. */
  get framesKept(): number {
    return this.frames.length;
  }

  /** The frame built at `tick`, or null when none is remembered. */
  private frameAt(tick: number): Frame | null {
    if (tick < 0) return null;
    const i = this.slotOf[tick % this.remembered];
    if (i < 0) return null;
    const f = this.frames[i];
    return f.tick === tick ? f : null;
  }

  /**
   * A frame to write for `tick` (newer than any written): the frames written more than the
   * remembered ticks ago are forgotten first and their memory reused.
   */
  private acquireFrame(tick: number): Frame {
    const history = this.remembered;
    while (this.writtenCount > 0) {
      const i = this.written[this.writtenHead];
      const f = this.frames[i];
      if (f.writtenTick > tick - history) break;
      const slot = f.writtenTick % history;
      if (this.slotOf[slot] === i) this.slotOf[slot] = -1;
      f.tick = -1;
      this.free[this.freeCount++] = i;
      this.writtenHead = this.writtenHead + 1 === history ? 0 : this.writtenHead + 1;
      this.writtenCount--;
    }
    let i: number;
    if (this.freeCount > 0) i = this.free[--this.freeCount];
    else {
      i = this.frames.length;
      this.frames.push(new Frame(this.largestView));
    }
    const f = this.frames[i];
    f.writtenTick = tick;
    f.tick = -1;
    this.slotOf[tick % history] = i;
    this.written[(this.writtenHead + this.writtenCount) % history] = i;
    this.writtenCount++;
    return f;
  }

  /** The client lost track (it asked for a full update): the next frame goes against nothing. */
  resetBaseline(): void {
    this.baseline = -1;
    this.ackedTick = -1;
    this.firstValidTick = this.lastWrittenTick + 1;
  }

  /** True while the writer remembers the frame it built at `frameTick`. */
  hasFrame(frameTick: number): boolean {
    return Number.isInteger(frameTick) && this.frameAt(frameTick) !== null;
  }

  /**
   * The tick whose values the client holds for entity `index` once it has frame `frameTick`;
   * -1 when the entity is not in that frame's view or the frame is not remembered. A search of
   * the frame's view: for many entities, `heldTicks` once.
   */
  heldTick(frameTick: number, index: number): number {
    const f = Number.isInteger(frameTick) ? this.frameAt(frameTick) : null;
    if (f === null) return -1;
    const view = f.view;
    for (let k = 0; k < f.viewCount; k++) if (view[k] === index) return f.held[k];
    return -1;
  }

  /**
   * What the client holds once it has frame `frameTick`, for every entity, into `out` (at least
   * the store's maxEntities long): the tick of the values it holds, or NOT_HELD. False (and `out`
   * untouched) when the frame is not remembered.
   */
  heldTicks(frameTick: number, out: Uint32Array): boolean {
    const f = Number.isInteger(frameTick) ? this.frameAt(frameTick) : null;
    if (f === null) return false;
    if (out.length < this.store.maxEntities) {
      throw new RangeError(
        `SnapshotWriter.heldTicks: out has ${out.length} entries, fewer than the store's ${this.store.maxEntities}`,
      );
    }
    out.fill(NOT_HELD);
    const view = f.view;
    for (let k = 0; k < f.viewCount; k++) out[view[k]] = f.held[k];
    return true;
  }

  /**
   * Copies into `out` the entities in the view of the frame built at `frameTick` (in no set order) and
   * returns how many; -1 when the frame is not remembered.
   */
  frameView(frameTick: number, out: Uint16Array): number {
    const f = Number.isInteger(frameTick) ? this.frameAt(frameTick) : null;
    if (f === null) return -1;
    const view = f.view;
    for (let k = 0; k < f.viewCount; k++) out[k] = view[k];
    return f.viewCount;
  }

  /**
   * Writes the snapshot of `tick` (the store's newest commit; one frame per tick) for a viewer at
   * (viewerX, viewerY, viewerZ), using at most `budgetBits` bits (but always at least the 16 of
   * an empty snapshot). Returns false, with the stream rewound to where it was, when the stream
   * had failed before or has no room for even an empty snapshot; entities that do not fit the
   * stream's room are left for a later frame. `viewerEntity` (default -1: none) is never sent:
   * the viewer's own entity, which its client predicts. `baselineHint` (default -1: none) is a
   * tick the reader is also given: when the baseline is that frame, one bit says so. Allocation-free.
   */
  write(
    s: BitStream,
    tick: number,
    viewerX: number,
    viewerY: number,
    viewerZ: number,
    budgetBits: number,
    viewerEntity = -1,
    baselineHint = -1,
  ): boolean {
    const viewer = this.viewer;
    viewer[0] = viewerX;
    viewer[1] = viewerY;
    viewer[2] = viewerZ;
    return this.writeForViewer(s, tick, budgetBits, viewerEntity, baselineHint);
  }

  /**
   * `write` for the viewer whose position is in `viewer` (x, y, z: set them first). A server's
   * frames come this way: a position passed to a call as three numbers is three heap boxes.
   */
  writeForViewer(
    s: BitStream,
    tick: number,
    budgetBits: number,
    viewerEntity = -1,
    baselineHint = -1,
  ): boolean {
    const store = this.store;
    if (tick !== store.lastCommitTick) {
      throw new RangeError(
        `SnapshotWriter.write: tick ${tick} is not the store's newest commit (${store.lastCommitTick})`,
      );
    }
    if (tick <= this.lastWrittenTick) {
      throw new RangeError(
        `SnapshotWriter.write: a frame was already written for tick ${this.lastWrittenTick}`,
      );
    }
    if (!s.isWriting) throw new RangeError('SnapshotWriter.write: the stream is not writing');
    if (!s.ok) return false;
    const cur = store.history(tick) as HistorySlot;
    let base: Frame | null = null;
    const baseline = this.baselineTick;
    if (baseline >= 0 && tick - baseline < this.frameHistory) {
      base = this.frameAt(baseline);
    }
    const frame = this.acquireFrame(tick);
    frame.viewCount = 0;
    const work = this.work;
    if (work.dirty) work.clear();
    work.dirty = true;
    this.header.tally = this.tally;
    work.spillBegun = false;

    const start = s.bitsProcessed;
    const delta = base === null ? 0 : tick - base.tick;
    if (baselineHint < 0 || !s.bool(base !== null && base.tick === baselineHint)) s.varuint(delta);
    if (!s.ok) {
      s.rewind(start);
      return false;
    }

    // What the client holds starts as what the baseline says (a copy of it) and the entities
    // coming into view after it; the frame then changes only what it sends.
    const candidateCount = this.gatherCandidates(frame, base, cur, viewerEntity);
    const needCount = this.classify(frame, cur, tick, candidateCount);
    const chosen = this.choose(
      frame,
      cur,
      tick,
      needCount,
      s.bitsProcessed - start + 2,
      budgetBits,
      s.bitsProcessed - start + s.bitsRemaining,
    );
    const st = this.stats;
    st.lastCreated = 0;
    st.lastUpdated = 0;
    st.lastRemoved = 0;
    st.lastDeferred = needCount - chosen;
    st.deferred += st.lastDeferred;
    const runs = chosen > 0 && this.runsPay(s);
    if (runs) this.writeRuns(s, frame, cur, tick);
    else this.writeChosen(s, frame, cur, tick);
    serializeIndexStep(s, 0);
    if (!s.ok) {
      // The frame stays unusable (tick -1); the scratch is cleared whole before the next write.
      this.clearMarks(frame, candidateCount);
      s.rewind(start);
      return false;
    }
    // The frame keeps the entities held (its view), in candidate order; the scratch is cleared
    // where this write set it (every entity it set is a candidate).
    const mark = this.mark;
    const ops = this.op;
    const { view, held, spans, sent } = frame;
    let n = 0;
    for (let k = 0; k < candidateCount; k++) {
      const e = view[k];
      mark[e] = 0;
      ops[e] = NO_OP;
      const h = held[k];
      if (h === NOT_HELD) continue;
      if (n !== k) {
        view[n] = e;
        held[n] = h;
        spans[n] = spans[k];
        sent[n] = sent[k];
      }
      n++;
    }
    frame.viewCount = n;
    work.dirty = false;
    frame.tick = tick;
    this.lastWrittenTick = tick;
    const bits = s.bitsProcessed - start;
    st.frames++;
    if (base === null) st.framesWithoutBaseline++;
    if (runs) st.runFrames++;
    st.totalBits += bits;
    st.lastBits = bits;
    st.lastBytes = (bits + 7) >>> 3;
    st.lastBaselineTick = base === null ? -1 : base.tick;
    st.lastInView = frame.viewCount;
    return true;
  }

  /**
   * Fills `frame` with the candidates: the baseline's view (to update or remove), as the baseline
   * holds it, then the live entities in range but `skip` that it does not hold (NOT_HELD), and
   * notes each one's position in `pos`. Returns how many.
   */
  private gatherCandidates(frame: Frame, base: Frame | null, cur: HistorySlot, skip: number): number {
    const mark = this.mark;
    const pos = this.pos;
    const found = this.found;
    const baseCount = base === null ? 0 : base.viewCount;
    if (base !== null) {
      const bv = base.view;
      for (let k = 0; k < baseCount; k++) {
        const e = bv[k];
        mark[e] = IN_BASE;
        pos[e] = k;
      }
    }
    // The entities coming into view, kept at the front of `found` in the order found.
    const foundCount = this.store.interest.queryFrom(this.viewer, this.config.viewRadius, found);
    let fresh = 0;
    for (let k = 0; k < foundCount; k++) {
      const e = found[k];
      if (cur.alive[e] === 0 || e === skip) continue;
      if (mark[e] === 0) found[fresh++] = e;
      mark[e] |= VISIBLE;
    }
    const count = baseCount + fresh;
    // Every frame of the writer has the room of its largest view: once the views stop growing,
    // none is allocated again and a frame is copied from its baseline in one call.
    if (count > this.largestView) this.largestView = count;
    frame.reserve(this.largestView);
    const view = frame.view;
    const held = frame.held;
    if (base !== null) {
      if (base.capacity === frame.capacity) frame.bytes.set(base.bytes);
      else {
        const { view: bv, held: bh, spans: bs, sent: bt } = base;
        const { spans, sent } = frame;
        for (let k = 0; k < baseCount; k++) {
          view[k] = bv[k];
          held[k] = bh[k];
          spans[k] = bs[k];
          sent[k] = bt[k];
        }
      }
    }
    for (let j = 0; j < fresh; j++) {
      const e = found[j];
      const k = baseCount + j;
      view[k] = e;
      held[k] = NOT_HELD;
      pos[e] = k;
    }
    return count;
  }

  /**
   * Decides each candidate's operation, marks unchanged ones held at `tick`, grows the priority of
   * those that need sending and buckets them into `order`, most urgent first. One pass over the
   * candidates with no calls but the history look-ups of an update: an unchanged entity costs a
   * few array reads and one write, since the frame already holds its baseline's state.
   */
  private classify(frame: Frame, cur: HistorySlot, tick: number, candidateCount: number): number {
    const viewer = this.viewer;
    const x = viewer[0];
    const y = viewer[1];
    const z = viewer[2];
    const store = this.store;
    const typePriority = this.typePriority;
    const interest = store.interest;
    const createdTick = store.createdTick;
    const changedTick = store.changedTick;
    const curType = cur.type;
    const distanceScale = 1 / this.config.priorityDistance;
    const counts = this.bucketCount;
    const view = frame.view;
    const mark = this.mark;
    const priority = this.priority;
    const ops = this.op;
    const bucketOf = this.bucketOf;
    const need = this.need;
    const held = frame.held;
    const maxHeldAge = this.config.maxHeldAgeTicks;
    let needCount = 0;
    for (let k = 0; k < candidateCount; k++) {
      const e = view[k];
      // Only a baseline's view has entities that are not VISIBLE, and those are held.
      const h = held[k];
      let op: number;
      let weight = 1;
      if ((mark[e] & VISIBLE) === 0) {
        op = OP_REMOVE;
      } else {
        if (h === NOT_HELD || createdTick[e] > h) op = OP_CREATE;
        else if (changedTick[e] > h) op = this.canPredict(frame, k, tick, h) ? OP_UPDATE : OP_REFRESH;
        else {
          held[k] = tick;
          priority[e] = 0;
          continue;
        }
        let d = interest.distance(e, x, y, z);
        if (!(d >= 0)) d = 0;
        weight = typePriority[curType[e]] / (1 + d * distanceScale);
      }
      const p = priority[e] + weight;
      priority[e] = p;
      // Values held too long (an update, removal or replacement deferred frame after frame) go
      // first, in a bucket of their own; everything else waits below it.
      const b = heldTooLong(h, tick, maxHeldAge)
        ? FORCED_BUCKET
        : Math.min(priorityBucketFast(p), FORCED_BUCKET - 1);
      ops[e] = op;
      bucketOf[e] = b;
      counts[b]++;
      need[needCount++] = e;
    }
    let next = 0;
    for (let b = BUCKETS - 1; b >= 0; b--) {
      const c = counts[b];
      counts[b] = next;
      next += c;
    }
    const order = this.order;
    for (let k = 0; k < needCount; k++) {
      const e = need[k];
      order[counts[bucketOf[e]]++] = e;
    }
    counts.fill(0);
    return needCount;
  }

  /**
   * Takes entities from `order` while their exact cost fits the budget (`used` bits already
   * spent, including the end marker) and marks them in the `selected` bit set. Returns how many.
   */
  private choose(
    frame: Frame,
    cur: HistorySlot,
    tick: number,
    needCount: number,
    used: number,
    budgetBits: number,
    packetBits: number,
  ): number {
    const sel = this.selected;
    const cache = this.cache;
    const spill = this.work.spill;
    const spillAt = this.work.spillAt;
    const maxHeldAge = this.config.maxHeldAgeTicks;
    let total = used;
    let k = 0;
    for (; k < needCount; k++) {
      const e = this.order[k];
      const h = frame.held[this.pos[e]];
      // An entity held too long (classify put it first, in a bucket of its own) may use the
      // packet past the budget.
      const limit = heldTooLong(h, tick, maxHeldAge) ? packetBits : budgetBits;
      const entry = cache.entry(
        e,
        this.op[e],
        tick,
        h,
        h === NOT_HELD ? NO_SPANS : spansAt(frame, this.pos[e], tick),
      );
      this.entryOf[e] = entry;
      spillAt[e] = -1;
      let bits = -1;
      if (entry >= 0) bits = cache.bitsOf(entry);
      else if (this.tally === null && (!this.work.spillBegun || spill.ok)) {
        // Encoded once: measured by writing it to the spill, copied from there if chosen.
        if (!this.work.spillBegun) {
          spill.beginWrite();
          this.work.spillBegun = true;
        }
        const at = spill.bitsProcessed;
        this.serializeOne(spill, e, cur, frame, tick);
        if (spill.ok) {
          bits = spill.bitsProcessed - at;
          spillAt[e] = at;
        }
      }
      if (bits < 0) {
        const m = this.measure.beginMeasure();
        this.serializeOne(m, e, cur, frame, tick);
        bits = m.bitsProcessed;
      }
      this.entryBits[e] = bits;
      const p = prevSet(sel, e);
      const n = nextSet(sel, e);
      // The first entry also pays the bit that says how the entries are listed.
      let cost = bits + indexStepBits(e - p) + (k === 0 ? 1 : 0);
      if (n >= 0) cost += indexStepBits(n - e) - indexStepBits(n - p);
      if (total + cost > limit) break;
      total += cost;
      sel[e >>> 5] |= 1 << (e & 31);
    }
    for (let r = k; r < needCount; r++) this.op[this.order[r]] = NO_OP;
    return k;
  }

  /**
   * Whether listing the selected entries as runs costs fewer bits than a step each, and the whole
   * list fits the stream's room (the step form alone can leave out entries that do not fit).
   */
  private runsPay(s: BitStream): boolean {
    const sel = this.selected;
    let prev = -1;
    let steps = 0;
    let runs = 0;
    let length = 0;
    let entries = 0;
    for (let w = 0; w < sel.length; w++) {
      let bits = sel[w] | 0;
      while (bits !== 0) {
        const low = bits & -bits;
        bits ^= low;
        const e = (w << 5) + 31 - Math.clz32(low);
        const step = indexStepBits(e - prev);
        steps += step;
        entries += this.entryBits[e];
        if (length > 0 && e === prev + 1) length++;
        else {
          if (length > 0) runs += runLengthBits(length);
          runs += step;
          length = 1;
        }
        prev = e;
      }
    }
    if (length > 0) runs += runLengthBits(length);
    return runs < steps && 1 + runs + entries + indexStepBits(0) <= s.bitsRemaining;
  }

  /** Writes the selected entries in ascending index order, a step each, and records them in `frame`. */
  private writeChosen(s: BitStream, frame: Frame, cur: HistorySlot, tick: number): void {
    const sel = this.selected;
    let prev = -1;
    let full = false;
    for (let w = 0; w < sel.length; w++) {
      let bits = sel[w] | 0;
      if (bits === 0) continue;
      sel[w] = 0;
      while (bits !== 0) {
        const low = bits & -bits;
        bits ^= low;
        const e = (w << 5) + 31 - Math.clz32(low);
        const op = this.op[e];
        if (full) {
          this.op[e] = NO_OP;
          continue;
        }
        const at = s.bitsProcessed;
        serializeIndexStep(s, e - prev);
        // After the first step: the entries are listed a step each.
        if (prev < 0) s.bool(false);
        this.writeEntry(s, e, frame, cur, tick);
        this.op[e] = NO_OP;
        if (!s.ok || s.bitsRemaining < 2) {
          s.rewind(at);
          full = true;
          continue;
        }
        prev = e;
        this.record(frame, cur, tick, e, op);
      }
    }
  }

  /**
   * Writes the selected entries as runs of consecutive indices (each a step, its length, its
   * entries) and records them in `frame`. runsPay said the whole list fits.
   */
  private writeRuns(s: BitStream, frame: Frame, cur: HistorySlot, tick: number): void {
    const sel = this.selected;
    const last = sel.length * 32;
    let prev = -1;
    for (let e = isSet(sel, 0) ? 0 : nextSet(sel, 0); e >= 0; e = nextSet(sel, e)) {
      if (prev < 0 || e !== prev + 1) {
        let end = e;
        while (end + 1 < last && isSet(sel, end + 1)) end++;
        serializeIndexStep(s, e - prev);
        if (prev < 0) s.bool(true);
        serializeRunLength(s, end - e + 1);
      }
      const op = this.op[e];
      this.writeEntry(s, e, frame, cur, tick);
      this.op[e] = NO_OP;
      prev = e;
      this.record(frame, cur, tick, e, op);
    }
    sel.fill(0);
  }

  /** Writes entity `e`'s entry (after its index step): a copy of its cached or spilled bits, or encoded. */
  private writeEntry(s: BitStream, e: number, frame: Frame, cur: HistorySlot, tick: number): void {
    const entry = this.entryOf[e];
    // Code training counts the symbols it writes: those entries are encoded, not copied.
    if (entry >= 0 && this.tally === null) {
      s.copyBits(this.cache.bytes, this.cache.startOf(entry), this.cache.bitsOf(entry));
    } else if (entry < 0 && this.work.spillAt[e] >= 0) {
      s.copyBits(this.work.spill.buffer, this.work.spillAt[e], this.entryBits[e]);
    } else this.serializeOne(s, e, cur, frame, tick);
  }

  /** Records in `frame` what the client holds for `e` once it has the entry written with `op`. */
  private record(frame: Frame, cur: HistorySlot, tick: number, e: number, op: number): void {
    const st = this.stats;
    const p = this.pos[e];
    this.priority[e] = 0;
    if (op === OP_REMOVE) {
      frame.held[p] = NOT_HELD;
      st.lastRemoved++;
      return;
    }
    // Sent now (age 0); for an update, the client's newer value becomes its older one:
    // `age` ticks old (gap), held at `held` (back).
    let sp = cur.type[e] << 24;
    if (op === OP_UPDATE) {
      const back = tick - frame.held[p];
      sp |= (Math.min(back, SPAN_MAX) << 16) | (Math.min(tick - frame.sent[p], SPAN_MAX) << 8);
      st.lastUpdated++;
    } else if (op === OP_CREATE) st.lastCreated++;
    else st.lastUpdated++;
    frame.spans[p] = sp;
    frame.sent[p] = tick;
    frame.held[p] = tick;
  }

  /**
   * Whether an update of the entity at position `p` can be written against what the client holds
   * in `frame` (`held`): the server still has the values at `held`, and at the older value's tick
   * when the update is predicted from it; else the entity is refreshed.
   */
  private canPredict(frame: Frame, p: number, tick: number, held: number): boolean {
    const store = this.store;
    if (store.history(held) === undefined) return false;
    const spans = frame.spans[p];
    const age = Math.min(tick - frame.sent[p], SPAN_MAX);
    const gap = (spans >>> 8) & 0xff;
    if (gap === 0 || gap > PREDICTION_TICKS || age > PREDICTION_TICKS) return true;
    return store.history(tick - age - ((spans >>> 16) & 0xff)) !== undefined;
  }

  /** Serializes entity `e`'s entry (after its index skip) with its chosen operation, against what `frame` says the client holds. */
  private serializeOne(s: BitStream, e: number, cur: HistorySlot, frame: Frame, tick: number): void {
    const p = this.pos[e];
    const h = frame.held[p];
    encodeEntry(
      s,
      this.store,
      this.header,
      e,
      this.op[e],
      tick,
      cur,
      h,
      h === NOT_HELD ? NO_SPANS : spansAt(frame, p, tick),
    );
  }

  private clearMarks(frame: Frame, candidateCount: number): void {
    for (let k = 0; k < candidateCount; k++) {
      const e = frame.view[k];
      this.mark[e] = 0;
      this.op[e] = NO_OP;
    }
  }
}

/** Highest set bit below `e` in the bit set, or -1. */
function prevSet(sel: Uint32Array, e: number): number {
  let w = e >>> 5;
  let bits = sel[w] & ((1 << (e & 31)) - 1);
  for (;;) {
    if (bits !== 0) return (w << 5) + 31 - Math.clz32(bits);
    if (w === 0) return -1;
    w--;
    bits = sel[w] | 0;
  }
}

/** Whether bit `e` of the bit set is set. */
function isSet(sel: Uint32Array, e: number): boolean {
  return (sel[e >>> 5] & (1 << (e & 31))) !== 0;
}

/** Lowest set bit above `e` in the bit set, or -1. */
function nextSet(sel: Uint32Array, e: number): number {
  let w = e >>> 5;
  let bits = sel[w] & ~((2 << (e & 31)) - 1);
  for (;;) {
    if (bits !== 0) return (w << 5) + 31 - Math.clz32(bits & -bits);
    w++;
    if (w >= sel.length) return -1;
    bits = sel[w] | 0;
  }
}
