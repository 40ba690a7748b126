// The client's estimate of the server clock: adopted from snapshots (the paper's footnote 6), smoothed.
//
// Every snapshot names the server time it was built at. The client turns each arrival into an
// offset sample, `serverTimeMs - localNowMs`, and keeps two clocks derived from them:
//
//   receivedNow(local)  the newest server time the client has received, advancing with local time.
//                       This is the base for rendering: renderTime = receivedNow - interpolation
//                       delay, so interpolation never runs ahead of the data that has arrived.
//   serverNow(local)    receivedNow + smoothed RTT / 2: the estimate of the server's present, for
//                       reasoning about commands and lag compensation (exact on a symmetric path).
//
// Filtering: a packet that arrives late has a low offset, so the target is the highest sample of
// the last `offsetWindowMs`, each advanced to now by its age (at 1 - offsetDecayMsPerSecond/1000,
// so that a server clock running slower than the local one is followed too). The least delayed
// packet sets the clock; a late one changes nothing.
//
// Smoothing: the estimate advances with local time at 1 +- a rate adjustment proportional to its
// error (error / catchUpTimeMs when behind, error / slowDownTimeMs when ahead, at most
// maxRateAdjustFraction), works off exactly the error measured and no more (no overshoot), and
// ignores errors inside the dead band. Catching up is quicker than slowing down because an early
// packet is certain news, while a drop of the target may be the window losing its best sample.
// With the rate always positive the output never goes backwards, even when a sample says the
// server is behind. An error beyond resyncThresholdMs is jumped instead (a resync, counted in
// `resyncs`): that is the only discontinuity, and the only way the output can move backwards.
// A server clock that jumps back is noticed once the older, higher samples have left the window
// (offsetWindowMs), since until then they still vouch for the old time.
// A server clock running steadily fast by a fraction d is followed d * catchUpTimeMs behind.

/** Tuning of a ServerClock; every field has a default (DEFAULT_SERVER_CLOCK_CONFIG). */
export interface ServerClockConfig {
  /** Largest speed-up or slow-down of the estimate while it corrects an error (0.05 = 5%). */
  maxRateAdjustFraction: number;
  /** Estimate behind its target: rate adjustment = error / catchUpTimeMs (capped). */
  catchUpTimeMs: number;
  /** Estimate ahead of its target: rate adjustment = error / slowDownTimeMs (capped). */
  slowDownTimeMs: number;
  /** Errors up to this size are left alone, so the estimate does not hunt noise. */
  deadBandMs: number;
  /** An error larger than this is jumped rather than slewed (a resync). */
  resyncThresholdMs: number;
  /** How long a sample counts towards the target (at most OFFSET_WINDOW_CAPACITY samples). */
  offsetWindowMs: number;
  /** A sample's offset is lowered by this much per second of its age, so a server clock running
   * slower than the local one by up to this rate is followed without lag. */
  offsetDecayMsPerSecond: number;
  /** Weight of each new RTT sample in the smoothed RTT (exponential filter), in (0, 1]. */
  rttSmoothingFactor: number;
}

export const DEFAULT_SERVER_CLOCK_CONFIG: Readonly<ServerClockConfig> = Object.freeze({
  maxRateAdjustFraction: 0.05,
  catchUpTimeMs: 1000,
  slowDownTimeMs: 2000,
  deadBandMs: 2,
  resyncThresholdMs: 250,
  offsetWindowMs: 2000,
  offsetDecayMsPerSecond: 3,
  rttSmoothingFactor: 0.1,
});

/** Most offset samples the window holds; at higher snapshot rates the window is shorter. */
export const OFFSET_WINDOW_CAPACITY = 64;

function checkConfig(c: ServerClockConfig): void {
  const bad = (field: string, value: number, want: string): Error =>
    new Error(`ServerClock: ${field} must be ${want}, got ${value}`);
  const finiteAtLeast = (field: keyof ServerClockConfig, min: number, strict: boolean): void => {
    const v = c[field];
    if (!Number.isFinite(v) || v < min || (strict && v === min)) {
      throw bad(field, v, `a finite number ${strict ? '>' : '>='} ${min}`);
    }
  };
  if (!(c.maxRateAdjustFraction > 0 && c.maxRateAdjustFraction < 1)) {
    throw bad('maxRateAdjustFraction', c.maxRateAdjustFraction, 'in (0, 1)');
  }
  finiteAtLeast('catchUpTimeMs', 0, true);
  finiteAtLeast('slowDownTimeMs', 0, true);
  finiteAtLeast('deadBandMs', 0, false);
  finiteAtLeast('offsetWindowMs', 0, false);
  finiteAtLeast('offsetDecayMsPerSecond', 0, false);
  if (!(c.resyncThresholdMs > c.deadBandMs)) {
    throw bad('resyncThresholdMs', c.resyncThresholdMs, `greater than deadBandMs (${c.deadBandMs})`);
  }
  if (!(c.rttSmoothingFactor > 0 && c.rttSmoothingFactor <= 1)) {
    throw bad('rttSmoothingFactor', c.rttSmoothingFactor, 'in (0, 1]');
  }
}

/**
 * The client's smoothed estimate of the server clock. Pure: every method takes the local time,
 * nothing reads a clock. Local times passed in are expected not to decrease; a call with an
 * earlier time than a previous one does not move the outputs backwards.
 */
export class ServerClock {
  readonly config: Readonly<ServerClockConfig>;
  /** True once a sample was accepted; before that both clocks read 0. */
  synced = false;
  /** Error jumps (not counting the first synchronisation). */
  resyncs = 0;
  /** Samples accepted. */
  samples = 0;
  /** Samples ignored because a time was not finite or the RTT was negative. */
  rejectedSamples = 0;
  /** Target minus estimate at the last accepted sample (before any jump), ms. */
  lastErrorMs = 0;
  /** Smoothed round-trip time, ms. */
  smoothedRttMs = 0;
  /**
   * The target at the last accepted sample, unsmoothed: the server time then, as the window's
   * least delayed packet tells it (0 until synced). How late a packet arrives is measured against
   * this: the estimate itself may still be catching up to it.
   */
  targetMs = 0;

  private anchorLocalMs = 0;
  private anchorEstimateMs = 0;
  private pendingCorrectionMs = 0;
  private correctionRate = 0;
  private lastReceivedOutMs = -Infinity;
  private lastServerOutMs = -Infinity;
  private readonly windowLocalMs = new Float64Array(OFFSET_WINDOW_CAPACITY);
  private readonly windowServerMs = new Float64Array(OFFSET_WINDOW_CAPACITY);
  private windowStart = 0;
  private windowCount = 0;

  constructor(config: Partial<ServerClockConfig> = {}) {
    const c = { ...DEFAULT_SERVER_CLOCK_CONFIG, ...config };
    checkConfig(c);
    this.config = Object.freeze(c);
  }

  /** Forgets the server (a new connection): the next sample synchronises afresh. Counters stay. */
  reset(): void {
    this.synced = false;
    this.lastErrorMs = 0;
    this.smoothedRttMs = 0;
    this.targetMs = 0;
    this.anchorLocalMs = 0;
    this.anchorEstimateMs = 0;
    this.pendingCorrectionMs = 0;
    this.correctionRate = 0;
    this.lastReceivedOutMs = -Infinity;
    this.lastServerOutMs = -Infinity;
    this.windowStart = 0;
    this.windowCount = 0;
  }

  /**
   * Feeds one received snapshot: `serverTimeMs` is the time the server built it (its tick times
   * the tick interval), `rttMs` the connection's current round-trip estimate. Returns false (and
   * counts it) if a value is not finite or the RTT is negative; never throws.
   */
  onServerTime(localNowMs: number, serverTimeMs: number, rttMs: number): boolean {
    if (!Number.isFinite(localNowMs) || !Number.isFinite(serverTimeMs) || !(rttMs >= 0 && rttMs < Infinity)) {
      this.rejectedSamples++;
      return false;
    }
    const c = this.config;
    const estimate = this.estimateAt(localNowMs);
    this.smoothedRttMs = this.synced
      ? this.smoothedRttMs + c.rttSmoothingFactor * (rttMs - this.smoothedRttMs)
      : rttMs;
    const target = this.addSample(localNowMs, serverTimeMs);
    this.targetMs = target;
    const error = target - estimate;
    this.samples++;
    this.anchorLocalMs = localNowMs;
    if (!this.synced || Math.abs(error) > c.resyncThresholdMs) {
      if (this.synced) this.resyncs++;
      this.lastErrorMs = this.synced ? error : 0;
      this.synced = true;
      this.anchorEstimateMs = target;
      this.pendingCorrectionMs = 0;
      this.correctionRate = 0;
      this.lastReceivedOutMs = -Infinity;
      this.lastServerOutMs = -Infinity;
      return true;
    }
    this.lastErrorMs = error;
    this.anchorEstimateMs = estimate;
    const absError = Math.abs(error);
    if (absError <= c.deadBandMs) {
      this.pendingCorrectionMs = 0;
      this.correctionRate = 0;
    } else {
      this.pendingCorrectionMs = error;
      const rate = absError / (error < 0 ? c.slowDownTimeMs : c.catchUpTimeMs);
      this.correctionRate = Math.min(rate, c.maxRateAdjustFraction);
    }
    return true;
  }

  /**
   * Smoothed newest server time received, advanced by local time since: the render base
   * (render time = receivedNow - interpolation delay). Non-decreasing between resyncs; 0 until synced.
   */
  receivedNow(localNowMs: number): number {
    if (!this.synced) return 0;
    const t = this.estimateAt(localNowMs);
    if (t > this.lastReceivedOutMs) this.lastReceivedOutMs = t;
    return this.lastReceivedOutMs;
  }

  /**
   * Estimate of the server's present time: receivedNow plus half the smoothed RTT. Non-decreasing
   * between resyncs; 0 until synced.
   */
  serverNow(localNowMs: number): number {
    if (!this.synced) return 0;
    const t = this.estimateAt(localNowMs) + this.smoothedRttMs / 2;
    if (t > this.lastServerOutMs) this.lastServerOutMs = t;
    return this.lastServerOutMs;
  }

  /** The rate the estimate runs at now, minus 1 (0.02: 2% faster than local time). */
  rateAdjustAt(localNowMs: number): number {
    const elapsed = localNowMs - this.anchorLocalMs;
    const pending = this.pendingCorrectionMs;
    if (this.correctionRate === 0 || this.correctionRate * elapsed >= Math.abs(pending)) return 0;
    return pending < 0 ? -this.correctionRate : this.correctionRate;
  }

  private estimateAt(localNowMs: number): number {
    const elapsed = localNowMs > this.anchorLocalMs ? localNowMs - this.anchorLocalMs : 0;
    const pending = this.pendingCorrectionMs;
    let correction = this.correctionRate * elapsed;
    if (correction > Math.abs(pending)) correction = Math.abs(pending);
    return this.anchorEstimateMs + elapsed + (pending < 0 ? -correction : correction);
  }

  /**
   * Adds the sample to the window, drops expired ones, and returns the target: the highest of the
   * window's server times, each advanced to now by its age (less the decay).
   */
  private addSample(localNowMs: number, serverTimeMs: number): number {
    const mask = OFFSET_WINDOW_CAPACITY - 1;
    if (this.windowCount === OFFSET_WINDOW_CAPACITY) {
      this.windowStart = (this.windowStart + 1) & mask;
      this.windowCount--;
    }
    const slot = (this.windowStart + this.windowCount) & mask;
    this.windowLocalMs[slot] = localNowMs;
    this.windowServerMs[slot] = serverTimeMs;
    this.windowCount++;
    while (localNowMs - this.windowLocalMs[this.windowStart] > this.config.offsetWindowMs) {
      this.windowStart = (this.windowStart + 1) & mask;
      this.windowCount--;
    }
    const rate = 1 - this.config.offsetDecayMsPerSecond / 1000;
    let best = -Infinity;
    for (let i = 0; i < this.windowCount; i++) {
      const j = (this.windowStart + i) & mask;
      const age = localNowMs - this.windowLocalMs[j];
      const projected = this.windowServerMs[j] + (age > 0 ? age * rate : 0);
      if (projected > best) best = projected;
    }
    return best;
  }
}
