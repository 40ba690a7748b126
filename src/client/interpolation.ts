// Interpolation of remote entities: each one's position history (the paper's), sampled at render time.
//
// An InterpolationHistory keeps the last `capacity` updates of one entity, { server tick, field
// values }, in a ring of preallocated slots, oldest to newest. The client renders other entities
// in the past, at renderTick = (clock.receivedNow - delay) / tickIntervalMs, and the history finds
// the pair of entries that straddles it, searching backward from the newest, and blends every
// field between them:
//
//   linear  a + (b - a) * f
//   angle   degrees, along the short arc (350 -> 10 passes through 0)
//   step    the older value until the newer entry's tick is reached
//
// Past the newest entry it extrapolates along the last two entries for at most
// maxExtrapolationTicks, then holds there; before the oldest it holds the oldest. A teleport
// (flagged by the server, or a jump of the position fields larger than teleportDistance) clears
// the history first, so the entity never slides across the map. Every sample records the pair and
// fraction it used (lastTickA, lastTickB, lastFraction): a user command reports them as the view
// it drew, and resample() reproduces the same values from them exactly.

import { clamp, lerp, lerpAngle } from '../sim/math.ts';

/** How a field is blended between two entries. */
export type FieldKind = 'linear' | 'angle' | 'step';

export interface InterpolatedField {
  readonly name: string;
  readonly kind: FieldKind;
}

export interface InterpolationHistoryConfig {
  /** The interpolated fields, in the order of the value arrays pushed and sampled. */
  fields: readonly InterpolatedField[];
  /** Entries kept, a power of two >= 2 (default 64: 1 s of history at 64 updates per second). */
  capacity: number;
  /** A move of the position fields larger than this between consecutive entries is a teleport
   * (world units; default Infinity: only the server's flag). */
  teleportDistance: number;
  /** The fields whose distance is measured for teleportDistance (default: every linear field). */
  positionFields: readonly string[];
}

/** What sample() produced. */
export const SampleResult = {
  /** No entries: `out` untouched. */
  EMPTY: 0,
  /** Between two entries (or exactly on one). */
  INTERPOLATED: 1,
  /** Past the newest entry, along the last two entries' velocity. */
  EXTRAPOLATED: 2,
  /** Not moving: before the oldest entry, past the extrapolation cap, or past a lone entry. */
  HELD: 3,
} as const;
export type SampleResult = (typeof SampleResult)[keyof typeof SampleResult];

const KIND_LINEAR = 0;
const KIND_ANGLE = 1;
const KIND_STEP = 2;

function kindCode(kind: FieldKind): number {
  return kind === 'linear' ? KIND_LINEAR : kind === 'angle' ? KIND_ANGLE : KIND_STEP;
}

function blend(code: number, a: number, b: number, fraction: number): number {
  if (code === KIND_LINEAR) return lerp(a, b, fraction);
  if (code === KIND_ANGLE) return lerpAngle(a, b, fraction);
  return fraction < 1 ? a : b;
}

/**
 * Blends one field value of kind `kind` from `a` (fraction 0) to `b` (fraction 1); a fraction
 * above 1 extrapolates. The history uses exactly this, so a server rewinding to a named view with
 * the same inputs gets bit-identical values.
 */
export function interpolateField(kind: FieldKind, a: number, b: number, fraction: number): number {
  return blend(kindCode(kind), a, b, fraction);
}

/** The interpolation delay the paper recommends: the larger of 100 ms and two snapshot intervals. */
export function defaultInterpolationDelayMs(updateRate: number): number {
  if (!(updateRate > 0 && Number.isFinite(updateRate))) {
    throw new Error(`defaultInterpolationDelayMs: updateRate must be a finite number > 0, got ${updateRate}`);
  }
  return Math.max(100, (2 * 1000) / updateRate);
}

/** Position history of one remote entity. Allocates only in its constructor. */
export class InterpolationHistory {
  readonly fieldCount: number;
  readonly capacity: number;
  readonly fieldNames: readonly string[];
  /** Pushes ignored because their tick was not after the newest (out of order or duplicate). */
  ignoredPushes = 0;
  /** Pushes rejected because the tick was not a non-negative integer or a value was not finite. */
  rejectedPushes = 0;
  /** Times the history was cleared by a teleport (flag or distance). */
  teleports = 0;
  /** Tick of the last teleport, -1 if none. */
  lastTeleportTick = -1;
  /** What the last sample() produced, and the entries and fraction it used: the value drawn is
   * entry A blended towards entry B by lastFraction (above 1 when extrapolated); A = B with
   * fraction 0 when a single entry was shown; both -1 when EMPTY. */
  lastResult: SampleResult = SampleResult.EMPTY;
  lastTickA = -1;
  lastTickB = -1;
  lastFraction = 0;

  private readonly mask: number;
  private readonly kinds: Uint8Array;
  private readonly positionIndices: Int32Array;
  private readonly teleportDistanceSq: number;
  private readonly ticks: Float64Array;
  private readonly values: Float64Array;
  private start = 0;
  private count = 0;

  constructor(config: Partial<InterpolationHistoryConfig> & Pick<InterpolationHistoryConfig, 'fields'>) {
    const fields = config.fields;
    if (!Array.isArray(fields) || fields.length === 0) {
      throw new Error('InterpolationHistory: fields must name at least one field');
    }
    const capacity = config.capacity ?? 64;
    if (!Number.isInteger(capacity) || capacity < 2 || (capacity & (capacity - 1)) !== 0) {
      throw new Error(`InterpolationHistory: capacity must be a power of two >= 2, got ${capacity}`);
    }
    const teleportDistance = config.teleportDistance ?? Infinity;
    if (!(teleportDistance > 0)) {
      throw new Error(`InterpolationHistory: teleportDistance must be > 0, got ${teleportDistance}`);
    }
    const names: string[] = [];
    this.kinds = new Uint8Array(fields.length);
    for (let i = 0; i < fields.length; i++) {
      const { name, kind } = fields[i];
      if (typeof name !== 'string' || name === '' || names.includes(name)) {
        throw new Error(
          `InterpolationHistory: fields[${i}].name must be a unique non-empty string, got '${name}'`,
        );
      }
      if (kind !== 'linear' && kind !== 'angle' && kind !== 'step') {
        throw new Error(
          `InterpolationHistory: fields[${i}].kind must be linear, angle or step, got '${kind}'`,
        );
      }
      names.push(name);
      this.kinds[i] = kindCode(kind);
    }
    const positions = config.positionFields ?? fields.filter((f) => f.kind === 'linear').map((f) => f.name);
    this.positionIndices = new Int32Array(positions.length);
    for (let i = 0; i < positions.length; i++) {
      const index = names.indexOf(positions[i]);
      if (index < 0 || fields[index].kind !== 'linear') {
        throw new Error(
          `InterpolationHistory: positionFields[${i}] must name a linear field, got '${positions[i]}'`,
        );
      }
      this.positionIndices[i] = index;
    }
    if (teleportDistance !== Infinity && positions.length === 0) {
      throw new Error('InterpolationHistory: teleportDistance needs at least one position field');
    }
    this.fieldNames = Object.freeze(names);
    this.fieldCount = fields.length;
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.teleportDistanceSq = teleportDistance * teleportDistance;
    this.ticks = new Float64Array(capacity);
    this.values = new Float64Array(capacity * fields.length);
  }

  /** Index of the field called `name` in the value arrays; throws for an unknown name. */
  fieldIndex(name: string): number {
    const index = this.fieldNames.indexOf(name);
    if (index < 0) throw new Error(`InterpolationHistory: no field named '${name}'`);
    return index;
  }

  /** Entries held. */
  get length(): number {
    return this.count;
  }

  /** Tick of the newest entry, -1 when empty. */
  get newestTick(): number {
    return this.count === 0 ? -1 : this.ticks[(this.start + this.count - 1) & this.mask];
  }

  /** Tick of the oldest entry, -1 when empty. */
  get oldestTick(): number {
    return this.count === 0 ? -1 : this.ticks[this.start];
  }

  /** Forgets every entry (for example after a clock resync). */
  clear(): void {
    this.start = 0;
    this.count = 0;
  }

  /**
   * Appends the entity's state at server tick `tick` (the widened tick count, not a wrapped wire
   * sequence; `values` in field order, extra elements ignored). A tick not after the newest is ignored and counted; a tick that is not a
   * non-negative integer or a value that is not finite is rejected and counted. A teleport
   * (`teleported`, or a jump beyond teleportDistance) clears the history first. When full, the
   * oldest entry is dropped. Returns true if the entry was stored. Throws only when `values` is
   * shorter than the field list (a programming error).
   */
  push(tick: number, values: ArrayLike<number>, teleported: boolean): boolean {
    const n = this.fieldCount;
    if (values.length < n) {
      throw new Error(
        `InterpolationHistory.push: values has ${values.length} elements, the layout has ${n} fields`,
      );
    }
    if (!Number.isInteger(tick) || tick < 0) {
      this.rejectedPushes++;
      return false;
    }
    for (let k = 0; k < n; k++) {
      if (!Number.isFinite(values[k])) {
        this.rejectedPushes++;
        return false;
      }
    }
    if (this.count > 0) {
      const newest = (this.start + this.count - 1) & this.mask;
      if (tick <= this.ticks[newest]) {
        this.ignoredPushes++;
        return false;
      }
      if (teleported || this.jumpSq(newest, values) > this.teleportDistanceSq) {
        this.teleports++;
        this.lastTeleportTick = tick;
        this.start = 0;
        this.count = 0;
      }
    } else if (teleported) {
      this.teleports++;
      this.lastTeleportTick = tick;
    }
    if (this.count === this.capacity) {
      this.start = (this.start + 1) & this.mask;
      this.count--;
    }
    const slot = (this.start + this.count) & this.mask;
    this.ticks[slot] = tick;
    const base = slot * n;
    for (let k = 0; k < n; k++) this.values[base + k] = values[k];
    this.count++;
    return true;
  }

  /**
   * Writes the entity's fields at `renderTick` (fractional server tick) into `out` and returns how
   * they were obtained; records the entries and fraction used in lastTickA/lastTickB/lastFraction.
   * Past the newest entry, extrapolates along the last two for at most `maxExtrapolationTicks`
   * (>= 0), then holds the capped position. Does not allocate. Throws for a non-finite renderTick,
   * a negative or NaN maxExtrapolationTicks, or an `out` shorter than the field list.
   */
  sample(renderTick: number, out: Float64Array, maxExtrapolationTicks: number): SampleResult {
    if (!Number.isFinite(renderTick)) {
      throw new Error(`InterpolationHistory.sample: renderTick must be finite, got ${renderTick}`);
    }
    if (!(maxExtrapolationTicks >= 0)) {
      throw new Error(
        `InterpolationHistory.sample: maxExtrapolationTicks must be >= 0, got ${maxExtrapolationTicks}`,
      );
    }
    if (out.length < this.fieldCount) {
      throw new Error(
        `InterpolationHistory.sample: out has ${out.length} elements, the layout has ${this.fieldCount} fields`,
      );
    }
    if (this.count === 0) return this.record(SampleResult.EMPTY, -1, -1, 0);
    const mask = this.mask;
    const newest = (this.start + this.count - 1) & mask;
    const newestTick = this.ticks[newest];
    if (renderTick >= newestTick) {
      if (renderTick === newestTick || this.count === 1) {
        this.copyEntry(newest, out);
        const result = renderTick === newestTick ? SampleResult.INTERPOLATED : SampleResult.HELD;
        return this.record(result, newestTick, newestTick, 0);
      }
      const previous = (newest - 1) & mask;
      const tickA = this.ticks[previous];
      const capTick = newestTick + maxExtrapolationTicks;
      const capped = Math.min(renderTick, capTick);
      const fraction = (capped - tickA) / (newestTick - tickA);
      this.blendEntries(previous, newest, fraction, out);
      const result = renderTick > capTick ? SampleResult.HELD : SampleResult.EXTRAPOLATED;
      return this.record(result, tickA, newestTick, fraction);
    }
    for (let i = this.count - 2; i >= 0; i--) {
      const a = (this.start + i) & mask;
      const tickA = this.ticks[a];
      if (tickA <= renderTick) {
        const b = (a + 1) & mask;
        const tickB = this.ticks[b];
        const fraction = (renderTick - tickA) / (tickB - tickA);
        this.blendEntries(a, b, fraction, out);
        return this.record(SampleResult.INTERPOLATED, tickA, tickB, fraction);
      }
    }
    const oldestTick = this.ticks[this.start];
    this.copyEntry(this.start, out);
    return this.record(SampleResult.HELD, oldestTick, oldestTick, 0);
  }

  /**
   * Rebuilds a drawn view: entry `tickA` blended towards entry `tickB` by `fraction`, exactly as
   * sample() computed it when it reported them (tickA = tickB for a single entry). Returns false,
   * leaving `out` untouched, if either entry is no longer held or tickB < tickA.
   */
  resample(tickA: number, tickB: number, fraction: number, out: Float64Array): boolean {
    if (!(tickB >= tickA) || !Number.isFinite(fraction) || out.length < this.fieldCount) return false;
    const a = this.find(tickA);
    if (a < 0) return false;
    if (tickA === tickB) {
      this.copyEntry(a, out);
      return true;
    }
    const b = this.find(tickB);
    if (b < 0) return false;
    this.blendEntries(a, b, fraction, out);
    return true;
  }

  /** Slot holding `tick`, searching backward from the newest; -1 if not held. */
  private find(tick: number): number {
    for (let i = this.count - 1; i >= 0; i--) {
      const slot = (this.start + i) & this.mask;
      const t = this.ticks[slot];
      if (t === tick) return slot;
      if (t < tick) return -1;
    }
    return -1;
  }

  private jumpSq(slot: number, values: ArrayLike<number>): number {
    const base = slot * this.fieldCount;
    let sum = 0;
    for (let i = 0; i < this.positionIndices.length; i++) {
      const k = this.positionIndices[i];
      const d = values[k] - this.values[base + k];
      sum += d * d;
    }
    return sum;
  }

  private copyEntry(slot: number, out: Float64Array): void {
    const n = this.fieldCount;
    const base = slot * n;
    for (let k = 0; k < n; k++) out[k] = this.values[base + k];
  }

  private blendEntries(slotA: number, slotB: number, fraction: number, out: Float64Array): void {
    const n = this.fieldCount;
    const a = slotA * n;
    const b = slotB * n;
    for (let k = 0; k < n; k++)
      out[k] = blend(this.kinds[k], this.values[a + k], this.values[b + k], fraction);
  }

  private record(result: SampleResult, tickA: number, tickB: number, fraction: number): SampleResult {
    this.lastResult = result;
    this.lastTickA = tickA;
    this.lastTickB = tickB;
    this.lastFraction = fraction;
    return result;
  }
}

/** Tuning of an AdaptiveDelay; every field has a default (DEFAULT_ADAPTIVE_DELAY_CONFIG). */
export interface AdaptiveDelayConfig {
  /** Snapshot rate expected before any is measured (snapshots per second). */
  updateRateHz: number;
  /** The delay never goes below this (ms). */
  minDelayMs: number;
  /** The delay never goes above this (ms). */
  maxDelayMs: number;
  /** Snapshot intervals the delay covers, before jitter (2: one lost snapshot is bridged). */
  intervals: number;
  /** Standard deviations of arrival jitter added on top. */
  jitterDeviations: number;
  /** Weight of each new measurement in the interval and jitter filters, in (0, 1]. */
  smoothingFactor: number;
  /** Fastest the delay moves towards its target (ms of delay per second of local time). */
  maxChangeMsPerSecond: number;
}

export const DEFAULT_ADAPTIVE_DELAY_CONFIG: Readonly<AdaptiveDelayConfig> = Object.freeze({
  updateRateHz: 20,
  minDelayMs: 100,
  maxDelayMs: 500,
  intervals: 2,
  jitterDeviations: 2,
  smoothingFactor: 1 / 16,
  maxChangeMsPerSecond: 10,
});

function checkDelayConfig(c: AdaptiveDelayConfig): void {
  const positive: (keyof AdaptiveDelayConfig)[] = ['updateRateHz', 'maxChangeMsPerSecond'];
  for (const field of positive) {
    if (!(c[field] > 0 && Number.isFinite(c[field]))) {
      throw new Error(`AdaptiveDelay: ${field} must be a finite number > 0, got ${c[field]}`);
    }
  }
  const nonNegative: (keyof AdaptiveDelayConfig)[] = ['minDelayMs', 'intervals', 'jitterDeviations'];
  for (const field of nonNegative) {
    if (!(c[field] >= 0 && Number.isFinite(c[field]))) {
      throw new Error(`AdaptiveDelay: ${field} must be a finite number >= 0, got ${c[field]}`);
    }
  }
  if (!(c.maxDelayMs >= c.minDelayMs && Number.isFinite(c.maxDelayMs))) {
    throw new Error(
      `AdaptiveDelay: maxDelayMs must be finite and >= minDelayMs (${c.minDelayMs}), got ${c.maxDelayMs}`,
    );
  }
  if (!(c.smoothingFactor > 0 && c.smoothingFactor <= 1)) {
    throw new Error(`AdaptiveDelay: smoothingFactor must be in (0, 1], got ${c.smoothingFactor}`);
  }
}

/**
 * An interpolation delay that follows the measured snapshot spacing and arrival jitter:
 * target = clamp(intervals * interval + jitterDeviations * jitter, minDelayMs, maxDelayMs), where
 * interval is the filtered server-time spacing of snapshots (losses widen it) and jitter the
 * filtered standard deviation of their transit time (arrival minus server time). The delay moves
 * towards the target at most maxChangeMsPerSecond, so the render clock speeds up or slows down by
 * at most that much. Pure: time passed in.
 */
export class AdaptiveDelay {
  readonly config: Readonly<AdaptiveDelayConfig>;
  /** Filtered spacing between consecutive snapshots, in server ms. */
  intervalMs: number;
  /** Filtered standard deviation of snapshot transit time, ms. */
  jitterMs = 0;
  /** Where the delay is heading, ms. */
  targetDelayMs: number;
  /** Snapshots ignored because a time was not finite. */
  rejectedSamples = 0;

  private transitMeanMs = 0;
  private transitVariance = 0;
  private lastServerMs = -Infinity;
  private hasTransit = false;
  private anchorLocalMs = -Infinity;
  private anchorDelayMs: number;

  constructor(config: Partial<AdaptiveDelayConfig> = {}) {
    const c = { ...DEFAULT_ADAPTIVE_DELAY_CONFIG, ...config };
    checkDelayConfig(c);
    this.config = Object.freeze(c);
    this.intervalMs = 1000 / c.updateRateHz;
    this.targetDelayMs = this.computeTarget();
    this.anchorDelayMs = this.targetDelayMs;
  }

  /**
   * Records a snapshot built at `serverTimeMs` that arrived at `localNowMs`. Out-of-order and
   * duplicate snapshots count towards jitter but not spacing; a single measurement counts for at
   * most maxDelayMs, so one long pause or clock jump cannot blow the filters up. Returns false
   * (and counts it) if a time is not finite; never throws.
   */
  onSnapshot(localNowMs: number, serverTimeMs: number): boolean {
    if (!Number.isFinite(localNowMs) || !Number.isFinite(serverTimeMs)) {
      this.rejectedSamples++;
      return false;
    }
    const a = this.config.smoothingFactor;
    this.anchorDelayMs = this.delayMs(localNowMs);
    this.anchorLocalMs = localNowMs;
    const transit = localNowMs - serverTimeMs;
    const cap = this.config.maxDelayMs;
    if (this.hasTransit) {
      const deviation = transit - this.transitMeanMs;
      const d = clamp(deviation, -cap, cap);
      this.transitMeanMs += a * d;
      this.transitVariance = (1 - a) * (this.transitVariance + a * d * d);
    } else {
      this.transitMeanMs = transit;
      this.hasTransit = true;
    }
    this.jitterMs = Math.sqrt(this.transitVariance);
    if (serverTimeMs > this.lastServerMs) {
      if (this.lastServerMs !== -Infinity) {
        const spacing = serverTimeMs - this.lastServerMs;
        this.intervalMs += a * (Math.min(spacing, cap) - this.intervalMs);
      }
      this.lastServerMs = serverTimeMs;
    }
    this.targetDelayMs = this.computeTarget();
    return true;
  }

  /** The delay to render with at local time `localNowMs`, ms. */
  delayMs(localNowMs: number): number {
    const elapsed = localNowMs > this.anchorLocalMs ? localNowMs - this.anchorLocalMs : 0;
    const step = (this.config.maxChangeMsPerSecond / 1000) * elapsed;
    const gap = this.targetDelayMs - this.anchorDelayMs;
    if (gap > step) return this.anchorDelayMs + step;
    if (gap < -step) return this.anchorDelayMs - step;
    return this.targetDelayMs;
  }

  private computeTarget(): number {
    const c = this.config;
    const want = c.intervals * this.intervalMs + c.jitterDeviations * this.jitterMs;
    return clamp(want, c.minDelayMs, c.maxDelayMs);
  }
}
