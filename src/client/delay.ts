// The interpolation delay: how far in the past remote entities are drawn. The paper's default
// (the larger of 100 ms and two snapshot intervals), or one that adapts to the link: the
// smallest delay that would have kept the view interpolating a set share of the time lately.

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
  /** Snapshot rate expected before any is measured (snapshots per second): the first delay is two intervals. */
  updateRateHz: number;
  /** The delay never goes below this (ms). */
  minDelayMs: number;
  /** The delay never goes above this (ms). */
  maxDelayMs: number;
  /**
   * Share of the time the delay aims to keep the view interpolating, in (0, 1]: the target is this
   * quantile of the measured staleness (below), so about 1 - coverage of the frames are drawn past
   * the newest snapshot while the link behaves as it did lately.
   */
  coverage: number;
  /** Added to the quantile (ms): the clock's smoothing and what the window has not seen yet. */
  marginMs: number;
  /**
   * How long the staleness is remembered (ms): two halves, the older one forgotten as a new one
   * starts, so the delay covers the bursts of the last windowMs / 2 to windowMs and is wide
   * before the next one instead of being caught out by it.
   */
  windowMs: number;
  /**
   * A gap between snapshots after which the staleness would pass this (ms) is an outage (a stall,
   * a latency spike): no delay worth having covers it, so it is left out of the quantile and counted.
   */
  outageMs: number;
  /** Fastest the delay comes down towards its target (ms of delay per second of local time). */
  maxChangeMsPerSecond: number;
  /**
   * Fastest the delay goes up towards its target (ms per second): faster than it comes down (the
   * render clock then runs up to this share slower than real time: 40 ms/s is 4 %).
   */
  maxRiseMsPerSecond: number;
  /** It rises only for this long (ms) after a gap outgrew it. */
  riseHoldMs: number;
  /**
   * For this long after the first snapshot (ms) it may rise warmUpRiseFactor times faster, and
   * once the jitter has lifted the ceiling (jitterCoverage) it heads for the ceiling: the first
   * seconds' staleness is measured against a clock still settling and reads low.
   */
  warmUpMs: number;
  warmUpRiseFactor: number;
  /**
   * 0: the delay's ceiling is maxDelayMs. In (0, 1]: the ceiling follows the link's jitter, this
   * quantile of how late snapshots arrive (how far each new snapshot's server time is behind the
   * server time the least delayed recent packets give: onSnapshot's leastDelayedMs),
   * plus two snapshot intervals and marginMs, at least ceilingFloorMs and at most maxDelayMs. A
   * jittery link raises it; a lossy link without jitter (loss bursts, whose snapshots arrive on
   * time when they arrive) leaves it at the floor, whatever the staleness of its gaps.
   */
  jitterCoverage: number;
  /** The ceiling never goes below this (ms), whatever the jitter or the limit (setLimit) says. */
  ceilingFloorMs: number;
  /**
   * 0: loss counts only through the staleness it caused. In (0, 1]: the delay is at least what
   * covers the link's loss bursts this share of the time, from a model of them (a two-state
   * Markov chain over the snapshots, received or lost, fitted to counts that fade with
   * lossMemoryMs: a lost one
   * follows a received one with probability b and a lost one with probability a, so a gap's lost
   * snapshots run geometrically), and the ceiling rises to it (under the limit and maxDelayMs).
   * The quantile of measured staleness needs many bursts to see a burst's tail; the model needs
   * a few, so the delay is wide before the next long burst instead of after it.
   */
  lossCoverage: number;
  /** The loss model's memory (ms): its counts fade by e each lossMemoryMs. */
  lossMemoryMs: number;
}

export const DEFAULT_ADAPTIVE_DELAY_CONFIG: Readonly<AdaptiveDelayConfig> = Object.freeze({
  updateRateHz: 20,
  minDelayMs: 0,
  maxDelayMs: 500,
  coverage: 0.995,
  marginMs: 4,
  windowMs: 10_000,
  outageMs: 600,
  maxChangeMsPerSecond: 20,
  maxRiseMsPerSecond: 40,
  riseHoldMs: 1000,
  warmUpMs: 5000,
  warmUpRiseFactor: 5,
  jitterCoverage: 0,
  ceilingFloorMs: 0,
  lossCoverage: 0,
  lossMemoryMs: 30_000,
});

/**
 * Snapshots the server sent between two that arrived `gapTicks` apart that never came, for
 * AdaptiveDelay.onSnapshot's `lostBefore`: the gap over the spacing the update rate asks for
 * (`ticksPerFrame`, tick rate over update rate; a quarter of it for a frame the server put off a
 * tick to spread its frames), less `choked`, the frames the rate held back (the frame header's
 * count: one for each update interval it held one). Never negative.
 */
export function framesLostBefore(gapTicks: number, ticksPerFrame: number, choked: number): number {
  return Math.max(0, Math.floor(gapTicks / ticksPerFrame + 0.25) - 1 - choked);
}

/** Width of one bin of the staleness histograms, ms. */
const BIN_MS = 2;
/** Snapshots measured before the jitter ceiling (jitterCoverage) leaves its floor. */
const MIN_LATENESS_SAMPLES = 8;
/** Snapshot transitions counted before the loss model (lossCoverage) is used. */
const MIN_LOSS_SAMPLES = 32;
/** The loss model's burst continuation is taken as at most this (a run never certain to go on). */
const MAX_BURST_CONTINUATION = 0.98;
/** The loss model's counts: received after received, lost after received, received after lost, lost after lost. */
const RR = 0;
const RL = 1;
const LR = 2;
const LL = 3;

function checkDelayConfig(c: AdaptiveDelayConfig): void {
  const positive: (keyof AdaptiveDelayConfig)[] = [
    'updateRateHz',
    'windowMs',
    'outageMs',
    'maxChangeMsPerSecond',
    'maxRiseMsPerSecond',
    'riseHoldMs',
    'warmUpMs',
    'warmUpRiseFactor',
    'lossMemoryMs',
  ];
  for (const field of positive) {
    if (!(c[field] > 0 && Number.isFinite(c[field]))) {
      throw new Error(`AdaptiveDelay: ${field} must be a finite number > 0, got ${c[field]}`);
    }
  }
  const nonNegative: (keyof AdaptiveDelayConfig)[] = ['minDelayMs', 'marginMs', 'ceilingFloorMs'];
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
  if (!(c.coverage > 0 && c.coverage <= 1)) {
    throw new Error(`AdaptiveDelay: coverage must be in (0, 1], got ${c.coverage}`);
  }
  for (const field of ['jitterCoverage', 'lossCoverage'] as const) {
    if (!(c[field] >= 0 && c[field] <= 1)) {
      throw new Error(`AdaptiveDelay: ${field} must be in [0, 1], got ${c[field]}`);
    }
  }
}

/**
 * An interpolation delay that follows how stale the newest snapshot gets. Render time is the
 * clock's newest received server time minus the delay, so a frame interpolates exactly when the
 * delay is at least the staleness: that clock time minus the server time of the newest snapshot
 * held. Between two arrivals the staleness grows with local time; each gap adds that ramp, weighted
 * by its length, to a histogram of the last `windowMs`. The target is the histogram's `coverage`
 * quantile plus `marginMs`: the smallest delay that would have kept the view interpolating that
 * share of the time (two snapshot intervals on a clean link take a little over one interval, a
 * lossy or jittery link takes what its gaps take). Gaps that would pass `outageMs` are outages,
 * left out. The delay comes down at most maxChangeMsPerSecond and goes up at most
 * maxRiseMsPerSecond, and only while gaps outgrow it (riseHoldMs): a latency step that is over
 * raised the target but is not chased. While a connection starts (warmUpMs) it rises faster, and
 * heads for a ceiling the jitter has lifted.
 * The target stays under a ceiling: maxDelayMs, or one that follows the link's jitter
 * (jitterCoverage), and under a limit the owner may set (setLimit), never under ceilingFloorMs.
 * Pure (time passed in); allocates only when built.
 */
export class AdaptiveDelay {
  readonly config: Readonly<AdaptiveDelayConfig>;
  /**
   * Where the delay is heading, ms. Set in the constructor; this field, ceilingMs and
   * anchorDelayMs are declared with a fraction so each is laid out as a double from the start (a
   * field declared bare starts as undefined, and V8 then boxes every fraction stored in it anew).
   */
  targetDelayMs = 0.5;
  /** Gaps left out as outages. */
  outages = 0;
  /** The ceiling the target was last held under, ms. */
  ceilingMs = 0.5;
  /** Snapshots ignored because a time was not finite. */
  rejectedSamples = 0;
  /** What the loss model says covers the loss bursts (lossCoverage), ms; 0 without one. */
  lossFloorMs = 0;

  /** Time (ms) spent at each staleness bin: the current half of the window and the one before. */
  private current: Float64Array;
  private previous: Float64Array;
  /** Snapshots counted at each lateness bin (staleness on arrival): this half and the one before. */
  private lateCurrent: Float64Array;
  private latePrevious: Float64Array;
  /** The loss model's counts (RR, RL, LR, LL), fading with lossMemoryMs. */
  private lossCounts = new Float64Array(4);
  private lossCountedAtMs = -Infinity;
  /** The owner's limit on the ceiling (setLimit), ms. */
  private limitMs = Infinity;
  private currentStartMs = -Infinity;
  private lastArrivalMs = -Infinity;
  private lastServerMs = -Infinity;
  /** Staleness right after the last arrival, ms. */
  private staleAfterMs = 0;
  private anchorLocalMs = -Infinity;
  private anchorDelayMs = 0.5;
  private firstArrivalMs = Infinity;
  /** When a gap last outgrew the delay (the view ran past the newest snapshot). */
  private caughtOutAtMs = -Infinity;

  constructor(config: Partial<AdaptiveDelayConfig> = {}) {
    const c = { ...DEFAULT_ADAPTIVE_DELAY_CONFIG, ...config };
    checkDelayConfig(c);
    this.config = Object.freeze(c);
    const bins = Math.ceil(c.outageMs / BIN_MS) + 1;
    this.current = new Float64Array(bins);
    this.previous = new Float64Array(bins);
    this.lateCurrent = new Float64Array(bins);
    this.latePrevious = new Float64Array(bins);
    this.ceilingMs = c.jitterCoverage > 0 ? Math.min(c.maxDelayMs, c.ceilingFloorMs) : c.maxDelayMs;
    this.targetDelayMs = clamp((2 * 1000) / c.updateRateHz, c.minDelayMs, this.ceilingMs);
    this.anchorDelayMs = this.targetDelayMs;
  }

  /**
   * Records a snapshot newer than any before, built at `serverTimeMs`, that arrived at `localNowMs`
   * when the clock's newest received server time read `receivedNowMs` (ServerClock.receivedNow
   * then) and the least delayed recent packets gave the server time as `leastDelayedMs`
   * (ServerClock.targetMs after this snapshot's sample; by default receivedNowMs). The staleness
   * the view sees is measured against the first, how late the snapshot came (the jitter ceiling)
   * against the second, which a settling clock does not hold back. Older or duplicate snapshots
   * are not given. `lostBefore`: snapshots the server sent since the one before that never came
   * (the gap in server time less those the rate held back), for the loss model.
   * Returns false (and counts it) if a time is not finite; never throws.
   */
  onSnapshot(
    localNowMs: number,
    serverTimeMs: number,
    receivedNowMs: number,
    leastDelayedMs = receivedNowMs,
    lostBefore = 0,
  ): boolean {
    if (
      !Number.isFinite(localNowMs) ||
      !Number.isFinite(serverTimeMs) ||
      !Number.isFinite(receivedNowMs) ||
      !Number.isFinite(leastDelayedMs) ||
      !(lostBefore >= 0 && lostBefore < Number.POSITIVE_INFINITY)
    ) {
      this.rejectedSamples++;
      return false;
    }
    this.anchorDelayMs = this.delayMs(localNowMs);
    this.anchorLocalMs = localNowMs;
    if (this.currentStartMs === -Infinity) {
      this.currentStartMs = localNowMs;
      this.firstArrivalMs = localNowMs;
    }
    if (localNowMs - this.currentStartMs >= this.config.windowMs / 2) {
      const old = this.previous;
      this.previous = this.current;
      this.current = old.fill(0);
      const oldLate = this.latePrevious;
      this.latePrevious = this.lateCurrent;
      this.lateCurrent = oldLate.fill(0);
      this.currentStartMs = localNowMs;
    }
    if (this.lastArrivalMs !== -Infinity && serverTimeMs > this.lastServerMs) {
      const gap = localNowMs - this.lastArrivalMs;
      const from = this.staleAfterMs;
      const to = Math.max(from, receivedNowMs - this.lastServerMs);
      if (to >= this.config.outageMs) this.outages++;
      else {
        if (gap > 0) this.addRamp(from, to, gap);
        // An outage's lost snapshots are no burst the delay could cover: left out here too.
        const loss = this.lossCounts;
        if (localNowMs > this.lossCountedAtMs) {
          const keep = Math.exp((this.lossCountedAtMs - localNowMs) / this.config.lossMemoryMs);
          for (let i = 0; i < 4; i++) loss[i] *= keep;
          this.lossCountedAtMs = localNowMs;
        }
        const lost = Math.floor(lostBefore);
        if (lost === 0) loss[RR]++;
        else {
          loss[RL]++;
          loss[LL] += lost - 1;
          loss[LR]++;
        }
      }
      if (to > this.anchorDelayMs) this.caughtOutAtMs = localNowMs;
    }
    if (serverTimeMs > this.lastServerMs) {
      this.lastArrivalMs = localNowMs;
      this.lastServerMs = serverTimeMs;
      this.staleAfterMs = Math.max(0, receivedNowMs - serverTimeMs);
      const late = this.lateCurrent;
      const lateness = leastDelayedMs > serverTimeMs ? leastDelayedMs - serverTimeMs : 0;
      late[Math.min(late.length - 1, Math.floor(lateness / BIN_MS))]++;
    }
    this.lossFloorMs = this.computeLossFloor();
    this.ceilingMs = this.computeCeiling();
    // Warming up on a link whose jitter lifted the ceiling: the ceiling (the staleness measured so
    // far is against a clock still catching up, and reads low).
    const c = this.config;
    const warmJitter =
      c.jitterCoverage > 0 &&
      localNowMs - this.firstArrivalMs < c.warmUpMs &&
      this.ceilingMs > c.ceilingFloorMs;
    this.targetDelayMs = warmJitter
      ? this.ceilingMs
      : Math.min(Math.max(this.computeTarget(), this.lossFloorMs), this.ceilingMs);
    return true;
  }

  /**
   * Holds the ceiling at most `limitMs` from the next snapshot on (never below ceilingFloorMs);
   * Infinity lifts it. A value that is NaN is ignored. Never throws.
   */
  setLimit(limitMs: number): void {
    if (!Number.isNaN(limitMs)) this.limitMs = limitMs;
  }

  /** The delay to render with at local time `localNowMs`, ms. */
  delayMs(localNowMs: number): number {
    const elapsed = localNowMs > this.anchorLocalMs ? localNowMs - this.anchorLocalMs : 0;
    const gap = this.targetDelayMs - this.anchorDelayMs;
    // It rises only while gaps outgrow it (within riseHoldMs): a wider target learnt from a
    // latency step that is over is not chased.
    const c = this.config;
    // It also rises whenever it is under the loss model's floor: that is what the link's recent
    // bursts need, not a latency step that may be over.
    const rising = localNowMs - this.caughtOutAtMs <= c.riseHoldMs || this.anchorDelayMs < this.lossFloorMs;
    // While the first measurements come in (a new connection), it may rise warmUpRiseFactor
    // times faster: the first seconds on a bad link are not spent drawing guesses.
    const warm = localNowMs - this.firstArrivalMs < c.warmUpMs ? c.warmUpRiseFactor : 1;
    const rise = rising ? (c.maxRiseMsPerSecond / 1000) * warm * elapsed : 0;
    const fall = (c.maxChangeMsPerSecond / 1000) * elapsed;
    if (gap > rise) return this.anchorDelayMs + rise;
    if (gap > 0 && !rising) return this.anchorDelayMs;
    if (gap < -fall) return this.anchorDelayMs - fall;
    return this.targetDelayMs;
  }

  /** `weightMs` of time spread evenly over staleness fromMs..toMs. */
  private addRamp(fromMs: number, toMs: number, weightMs: number): void {
    const h = this.current;
    const first = Math.floor(fromMs / BIN_MS);
    const last = Math.min(h.length - 1, Math.floor(toMs / BIN_MS));
    if (first >= last) {
      h[Math.min(first, h.length - 1)] += weightMs;
      return;
    }
    const perMs = weightMs / (toMs - fromMs);
    for (let b = first; b <= last; b++) {
      const lo = b === first ? fromMs : b * BIN_MS;
      const hi = b === last ? toMs : (b + 1) * BIN_MS;
      if (hi > lo) h[b] += (hi - lo) * perMs;
    }
  }

  /** maxDelayMs, or the jitter's quantile and two intervals (jitterCoverage); under the limit; at least the floor. */
  private computeCeiling(): number {
    const c = this.config;
    let top = c.maxDelayMs;
    if (c.jitterCoverage > 0) {
      const cur = this.lateCurrent;
      const prev = this.latePrevious;
      let total = 0;
      for (let b = 0; b < cur.length; b++) total += cur[b] + prev[b];
      // Until a few arrivals are measured, the floor.
      if (total < MIN_LATENESS_SAMPLES) return Math.min(c.maxDelayMs, c.ceilingFloorMs);
      const want = total * c.jitterCoverage;
      let sum = 0;
      let b = 0;
      for (; b < cur.length - 1; b++) {
        sum += cur[b] + prev[b];
        if (sum >= want) break;
      }
      top = Math.min(top, (b + 1) * BIN_MS + (2 * 1000) / c.updateRateHz + c.marginMs);
      if (this.lossFloorMs > top) top = this.lossFloorMs;
    }
    return Math.min(c.maxDelayMs, Math.max(c.ceilingFloorMs, Math.min(top, this.limitMs)));
  }

  /**
   * The smallest delay whose view, on a link losing snapshots as the model's counts say
   * (lossCoverage), runs past the newest snapshot at most 1 - lossCoverage of the time, plus
   * marginMs; 0 until MIN_LOSS_SAMPLES transitions are counted or while none was lost. A gap of
   * 1 + K snapshot intervals T, K lost: P(K >= k) = b a^(k - 1). The view is stale past D for
   * (1 + K) T - D of such a gap; over all gaps, from k0 = floor(D / T) on (the gaps longer than D),
   * that sums to b a^(k0 - 1) ((1 + k0) T - D + T a / (1 - a)), against a mean gap of
   * T (1 + b / (1 - a)). It falls as D grows: bisected. Below one interval (D < T) it leaves out
   * the gaps with nothing lost, so it reads low there; the floor matters only above the jitter
   * ceiling's floor (two intervals or 100 ms). At a snapshot a second or fewer the faded counts
   * never reach MIN_LOSS_SAMPLES and there is no floor.
   */
  private computeLossFloor(): number {
    const c = this.config;
    if (c.lossCoverage === 0) return 0;
    const loss = this.lossCounts;
    const rr = loss[RR];
    const rl = loss[RL];
    const lr = loss[LR];
    const ll = loss[LL];
    if (rl === 0 || rr + rl + lr + ll < MIN_LOSS_SAMPLES) return 0;
    const b = rl / (rr + rl);
    const a = Math.min(MAX_BURST_CONTINUATION, ll / (ll + lr));
    const t = 1000 / c.updateRateHz;
    const allowed = (1 - c.lossCoverage) * t * (1 + b / (1 - a));
    let lo = 0;
    let hi = c.maxDelayMs;
    if (staleBeyond(hi, t, a, b) > allowed) return c.maxDelayMs;
    while (hi - lo > BIN_MS / 2) {
      const mid = (lo + hi) / 2;
      if (staleBeyond(mid, t, a, b) > allowed) lo = mid;
      else hi = mid;
    }
    return Math.min(c.maxDelayMs, hi + c.marginMs);
  }

  private computeTarget(): number {
    const c = this.config;
    const cur = this.current;
    const prev = this.previous;
    let total = 0;
    for (let b = 0; b < cur.length; b++) total += cur[b] + prev[b];
    // Until a second of gaps is measured, keep the starting delay.
    if (total < 1000) return this.targetDelayMs;
    const want = total * c.coverage;
    let sum = 0;
    let b = 0;
    for (; b < cur.length; b++) {
      const here = cur[b] + prev[b];
      if (sum + here >= want) {
        const within = here > 0 ? (want - sum) / here : 1;
        return clamp((b + within) * BIN_MS + c.marginMs, c.minDelayMs, c.maxDelayMs);
      }
      sum += here;
    }
    return clamp(cur.length * BIN_MS + c.marginMs, c.minDelayMs, c.maxDelayMs);
  }
}

/**
 * The loss model's time past a delay `d` (ms) summed over gaps, per gap: snapshots every `t` ms,
 * a lost one after a received one with probability `b`, after a lost one `a` (computeLossFloor).
 */
function staleBeyond(d: number, t: number, a: number, b: number): number {
  const k0 = Math.max(1, Math.floor(d / t));
  return b * a ** (k0 - 1) * ((1 + k0) * t - d + (t * a) / (1 - a));
}
