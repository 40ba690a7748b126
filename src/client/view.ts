// The client's view of remote entities: interpolation through the history of received frames
// (the paper's position history), capped extrapolation when it runs dry, then hold.
//
// Render time is the client's estimate of the newest server time received minus the
// interpolation delay. The view searches back from the newest received frame for the pair that
// straddles it and blends every entity between them with `blendEntity`, using a fraction already
// quantized to what a user command carries, so the server can rebuild exactly this view.

import type { GameSchema } from '../protocol/schema.ts';
import { quantizeViewFraction } from '../protocol/usercmd.ts';
import { blendChanging, blendFields, drawEntity, interpolates } from '../sim/blend.ts';
import type { DecodedFrame, SnapshotReader } from './snapshot-reader.ts';

export const VIEW_EMPTY = 0;
export const VIEW_INTERPOLATED = 1;
export const VIEW_EXTRAPOLATED = 2;
export const VIEW_HELD = 3;
export type ViewMode =
  | typeof VIEW_EMPTY
  | typeof VIEW_INTERPOLATED
  | typeof VIEW_EXTRAPOLATED
  | typeof VIEW_HELD;

export interface RemoteViewConfig {
  /** Longest the view runs past the newest frame before it holds (QuakeWorld's 100 ms). */
  maxExtrapolationMs: number;
}

export const DEFAULT_REMOTE_VIEW_CONFIG: RemoteViewConfig = {
  maxExtrapolationMs: 100,
};

export interface RemoteViewStats {
  /** Frames drawn in each mode. */
  interpolated: number;
  extrapolated: number;
  held: number;
  empty: number;
}

const TICK_HISTORY = 64;

export class RemoteView {
  readonly config: RemoteViewConfig;
  readonly stats: RemoteViewStats = { interpolated: 0, extrapolated: 0, held: 0, empty: 0 };
  /** How the last `update` drew: interpolated, extrapolated, held or empty. */
  mode: ViewMode = VIEW_EMPTY;
  /**
   * The two frames the last view was drawn from and the fraction (for the user command): past 1
   * when extrapolating beyond B, so the server can rebuild an extrapolated view exactly too.
   */
  tickA = 0;
  tickB = 0;
  fraction = 0;
  /** Entities drawn: `list[0 .. count)`; each one's values at `values[e * stride ..]`. */
  readonly list: Uint16Array;
  count = 0;
  /** Each drawn entity's type id, by entity index. */
  readonly types: Uint8Array;
  readonly values: Float64Array;
  readonly stride: number;

  private readonly schema: GameSchema;
  private readonly reader: SnapshotReader;
  /** Ticks of received frames, ascending. */
  private readonly ticks = new Float64Array(TICK_HISTORY);
  private tickCount = 0;
  /**
   * Entities the last draw interpolated between its two frames with a field that changes with
   * the fraction: `moving[0 .. movingCount)`, each one's mask of such fields in `changing[k]`.
   */
  private readonly moving: Uint16Array;
  private readonly changing: Int32Array;
  private movingCount = 0;
  /** What the last draw drew from (null: nothing yet, or forgotten by `reset`). */
  private drawnA: DecodedFrame | null = null;
  private drawnB: DecodedFrame | null = null;
  private drawnTickA = -1;
  private drawnTickB = -1;
  private drawnPast = false;
  private drawnResets = -1;
  /** The reader's frames read and resets when the history was last checked against it. */
  private checkedReads = -1;
  private checkedResets = -1;

  constructor(schema: GameSchema, reader: SnapshotReader, config: Partial<RemoteViewConfig> = {}) {
    this.config = { ...DEFAULT_REMOTE_VIEW_CONFIG, ...config };
    if (!(this.config.maxExtrapolationMs >= 0)) {
      throw new RangeError(`view.maxExtrapolationMs must be >= 0, got ${this.config.maxExtrapolationMs}`);
    }
    this.schema = schema;
    this.reader = reader;
    this.stride = schema.stride;
    this.list = new Uint16Array(schema.maxEntities);
    this.types = new Uint8Array(schema.maxEntities);
    this.values = new Float64Array(schema.maxEntities * schema.stride);
    this.moving = new Uint16Array(schema.maxEntities);
    this.changing = new Int32Array(schema.maxEntities);
  }

  /** Newest frame received, -1 before any. */
  get newestTick(): number {
    return this.tickCount > 0 ? this.ticks[this.tickCount - 1] : -1;
  }

  /** Forgets every frame (a new connection). */
  reset(): void {
    this.tickCount = 0;
    this.count = 0;
    this.mode = VIEW_EMPTY;
    this.drawnA = null;
    this.drawnB = null;
    this.checkedReads = -1;
  }

  /** A frame of server tick `tick` was read: it joins the history (in tick order). */
  onFrame(tick: number): void {
    this.checkedReads = -1;
    const t = this.ticks;
    let i = this.tickCount;
    while (i > 0 && t[i - 1] > tick) i--;
    if (i > 0 && t[i - 1] === tick) return;
    if (this.tickCount === TICK_HISTORY) {
      // Full: the oldest leaves, the ticks before the insertion point move down one and the new
      // one takes the place freed (a frame older than all is not kept).
      if (i === 0) return;
      t.copyWithin(0, 1, i);
      t[i - 1] = tick;
      return;
    }
    t.copyWithin(i + 1, i, this.tickCount);
    t[i] = tick;
    this.tickCount++;
  }

  /**
   * Draws every remote entity at `renderTick` (server ticks, fractional): between the pair of
   * received frames that straddle it; past the newest, extrapolated for at most
   * maxExtrapolationMs and then held; before the oldest, held at the oldest.
   */
  update(renderTick: number, tickIntervalMs: number): ViewMode {
    this.dropForgottenFrames();
    const n = this.tickCount;
    if (n === 0) {
      this.count = 0;
      this.stats.empty++;
      this.mode = VIEW_EMPTY;
      return VIEW_EMPTY;
    }
    const t = this.ticks;
    let mode: ViewMode;
    let a: number;
    let b: number;
    let f: number;
    const newest = t[n - 1];
    if (renderTick >= newest) {
      if (n === 1 || renderTick === newest) {
        a = b = newest;
        f = 0;
        mode = renderTick === newest ? VIEW_INTERPOLATED : VIEW_HELD;
      } else {
        a = t[n - 2];
        b = newest;
        const cap = newest + this.config.maxExtrapolationMs / tickIntervalMs;
        mode = renderTick > cap ? VIEW_HELD : VIEW_EXTRAPOLATED;
        f = quantizeViewFraction((Math.min(renderTick, cap) - a) / (b - a));
      }
    } else if (renderTick <= t[0]) {
      a = b = t[0];
      f = 0;
      mode = renderTick === t[0] ? VIEW_INTERPOLATED : VIEW_HELD;
    } else {
      let i = n - 1;
      while (t[i - 1] > renderTick) i--;
      a = t[i - 1];
      b = t[i];
      f = quantizeViewFraction((renderTick - a) / (b - a));
      mode = VIEW_INTERPOLATED;
    }
    this.tickA = a;
    this.tickB = b;
    this.fraction = f;
    this.draw(a, b, f);
    if (mode === VIEW_INTERPOLATED) this.stats.interpolated++;
    else if (mode === VIEW_EXTRAPOLATED) this.stats.extrapolated++;
    else this.stats.held++;
    this.mode = mode;
    return mode;
  }

  private draw(tickA: number, tickB: number, f: number): void {
    const frameA = this.reader.frameAt(tickA) as DecodedFrame;
    const frameB = this.reader.frameAt(tickB) as DecodedFrame;
    const stride = this.stride;
    const types = this.schema.types;
    const past = f >= 1;
    if (
      frameA === this.drawnA &&
      frameB === this.drawnB &&
      tickA === this.drawnTickA &&
      tickB === this.drawnTickB &&
      past === this.drawnPast &&
      this.reader.resets === this.drawnResets
    ) {
      // The same two frames, on the same side of f = 1, as the last draw: the same entities are
      // drawn and only the fields of those interpolated whose values differ in A and B and move
      // with f change.
      const moving = this.moving;
      const changing = this.changing;
      for (let k = 0; k < this.movingCount; k++) {
        const o = moving[k] * stride;
        blendChanging(
          types[this.types[moving[k]]],
          frameA.values,
          o,
          frameB.values,
          o,
          f,
          this.values,
          o,
          changing[k],
        );
      }
      return;
    }
    const moving = this.moving;
    const changing = this.changing;
    const teleport = this.schema.teleportDistance;
    let count = 0;
    let movingCount = 0;
    // B's entities that A holds too: when that is all of A's, none of A's is left to look at.
    let inBoth = 0;
    for (let k = 0; k < frameB.viewCount; k++) {
      const e = frameB.view[k];
      const t = frameB.type[e];
      const type = types[t];
      const o = e * stride;
      const inA = frameA.inView[e] !== 0;
      if (inA) inBoth++;
      if (
        inA &&
        frameA.type[e] === t &&
        interpolates(type, frameA.values, o, frameA.parity[e], frameB.values, o, frameB.parity[e], teleport)
      ) {
        const fields = blendFields(type, frameA.values, o, frameB.values, o, f, this.values, o);
        if (fields !== 0) {
          moving[movingCount] = e;
          changing[movingCount++] = fields;
        }
      } else {
        // Only in B, or across a teleport: B's values (drawEntity's rule), whatever f.
        drawEntity(type, null, 0, 0, frameB.values, o, 0, f, teleport, this.values, o);
      }
      this.types[e] = t;
      this.list[count++] = e;
    }
    // Entities B no longer holds (drawEntity says whether they are still drawn). Every frame of
    // the reader has the same room, so B's membership is read for any of A's entities.
    if (frameA !== frameB && inBoth < frameA.viewCount) {
      const inB = frameB.inView;
      for (let k = 0; k < frameA.viewCount; k++) {
        const e = frameA.view[k];
        if (inB[e] !== 0) continue;
        const t = frameA.type[e];
        if (!drawEntity(types[t], frameA.values, e * stride, 0, null, 0, 0, f, 0, this.values, e * stride))
          continue;
        this.types[e] = t;
        this.list[count++] = e;
      }
    }
    this.count = count;
    this.movingCount = movingCount;
    this.drawnA = frameA;
    this.drawnB = frameB;
    this.drawnTickA = tickA;
    this.drawnTickB = tickB;
    this.drawnPast = past;
    this.drawnResets = this.reader.resets;
  }

  /**
   * Frames the reader no longer holds leave the history, wherever they are in it: a newer frame
   * can take the reader's ring slot of one while an older frame, whose slot no later frame
   * reached, is still held.
   */
  private dropForgottenFrames(): void {
    // A frame is forgotten only by a read (SnapshotReader.mayHaveForgotten says which) or a reset.
    const reads = this.reader.stats.framesRead;
    if (reads === this.checkedReads && this.reader.resets === this.checkedResets) return;
    const reset = this.reader.resets !== this.checkedResets;
    this.checkedReads = reads;
    this.checkedResets = this.reader.resets;
    const t = this.ticks;
    const n = this.tickCount;
    let kept = 0;
    for (let i = 0; i < n; i++) {
      if (!reset && !this.reader.mayHaveForgotten(t[i])) {
        // In tick order: this one and every later one are still held (no look at their frames).
        if (kept !== i) t.copyWithin(kept, i, n);
        kept += n - i;
        break;
      }
      if (this.reader.frameAt(t[i]) !== undefined) t[kept++] = t[i];
    }
    this.tickCount = kept;
  }
}
