// The interpolation delay: how far in the past remote entities are drawn. The paper's default
// (the larger of 100 ms and two snapshot intervals), or one that adapts to measured jitter.

import { clamp } from '../sim/math.ts';

/** The interpolation delay the paper recommends: the larger of 100 ms and two snapshot intervals. */
export function defaultInterpolationDelayMs(updateRate: number): number {
  if (!(updateRate > 0 && Number.isFinite(updateRate))) {
    throw new Error(`defaultInterpolationDelayMs: updateRate must be a finite number > 0, got ${updateRate}`);
  }
  return Math.max(100, (2 * 1000) / updateRate);
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
  /** Fastest the delay comes down towards its target (ms of delay per second of local time). */
  maxChangeMsPerSecond: number;
  /**
   * Fastest the delay goes up towards its target (ms per second): faster than it comes down, so
   * it is wide again before the next burst of a bursty link (the render clock then runs up to
   * this share slower than real time: 40 ms/s is 4 %).
   */
  maxRiseMsPerSecond: number;
  /**
   * The jitter the target covers is the largest measured lately: a peak that decays to the
   * current jitter with this time constant (ms). A link that had a burst of jitter or loss is
   * taken to have another, so the delay stays wide between them instead of shrinking and being
   * caught out by the next.
   */
  jitterHoldMs: number;
}

export const DEFAULT_ADAPTIVE_DELAY_CONFIG: Readonly<AdaptiveDelayConfig> = Object.freeze({
  updateRateHz: 20,
  minDelayMs: 0,
  maxDelayMs: 500,
  intervals: 2,
  jitterDeviations: 2,
  smoothingFactor: 1 / 16,
  maxChangeMsPerSecond: 10,
  maxRiseMsPerSecond: 40,
  jitterHoldMs: 10_000,
});

function checkDelayConfig(c: AdaptiveDelayConfig): void {
  const positive: (keyof AdaptiveDelayConfig)[] = [
    'updateRateHz',
    'maxChangeMsPerSecond',
    'maxRiseMsPerSecond',
    'jitterHoldMs',
  ];
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
 * filtered standard deviation of their transit time (arrival minus server time), held at its
 * recent peak (jitterHoldMs). The delay comes down at most maxChangeMsPerSecond and goes up at
 * most maxRiseMsPerSecond, so the render clock speeds up or slows down by
 * at most that much. Pure: time passed in.
 */
export class AdaptiveDelay {
  readonly config: Readonly<AdaptiveDelayConfig>;
  /** Filtered spacing between consecutive snapshots, in server ms. */
  intervalMs: number;
  /** Filtered standard deviation of snapshot transit time, ms. */
  jitterMs = 0;
  /** The largest jitter lately (decaying to jitterMs over jitterHoldMs): what the target covers. */
  heldJitterMs = 0;
  /** Where the delay is heading, ms. */
  targetDelayMs: number;
  /** Snapshots ignored because a time was not finite. */
  rejectedSamples = 0;

  private transitMeanMs = 0;
  private transitVariance = 0;
  private lastServerMs = -Infinity;
  private heldAtMs = -Infinity;
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
    const since = localNowMs > this.heldAtMs ? localNowMs - this.heldAtMs : 0;
    const decayed = this.heldJitterMs * Math.exp(-since / this.config.jitterHoldMs);
    this.heldJitterMs = decayed > this.jitterMs ? decayed : this.jitterMs;
    this.heldAtMs = localNowMs;
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
    const gap = this.targetDelayMs - this.anchorDelayMs;
    const rise = (this.config.maxRiseMsPerSecond / 1000) * elapsed;
    const fall = (this.config.maxChangeMsPerSecond / 1000) * elapsed;
    if (gap > rise) return this.anchorDelayMs + rise;
    if (gap < -fall) return this.anchorDelayMs - fall;
    return this.targetDelayMs;
  }

  private computeTarget(): number {
    const c = this.config;
    const want = c.intervals * this.intervalMs + c.jitterDeviations * this.heldJitterMs;
    return clamp(want, c.minDelayMs, c.maxDelayMs);
  }
}
