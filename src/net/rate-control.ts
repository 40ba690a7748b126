// Delay-based congestion control (after WebRTC's Google congestion control): how many bytes per
// second one direction of a link can take without building a queue, found from the round trips
// of acknowledged packets and from loss. The server runs one per client for its frames, the
// client one for its command packets; the configured rate is only the upper bound.
//
// A queue on the path shows as round trips growing above the path's own. The controller keeps
//   base     the lowest smoothed round trip of the last baseWindowMs (the path without a queue);
//   queue    smoothed round trip - base: how long packets now wait in queues;
//   delivered  bytes acknowledged per second over the last deliveryWindowMs (what the path carried).
// Each acknowledgement is a sample, and at most once per round trip the controller acts:
//   overuse  (queue above the threshold, max(queueThresholdMs, twice the smaller of the round-trip
//            deviation and three times its jitter) so that jitter alone is not taken for a queue,
//            for OVERUSE_HOLD_MS): rate = decreaseFactor x delivered, the bottleneck's own rate
//            less a share that drains the queue (drainFactor while the queue is over three
//            thresholds), but at most half the rate at once (a sender that sent less than it may
//            measures less than the link); with loss above lossThreshold as well (a drop-tail
//            queue overflowing, not random loss), x (1 - loss / 2); never below minBytesPerSecond;
//   normal   (queue under half the threshold): rate grows by increasePerSecond of itself per
//            second (startupIncreasePerSecond until the first decrease: a connection starts at
//            startBytesPerSecond, below most links, and climbs fast, held back only by a queue
//            over the threshold), up to maxBytesPerSecond; past LINK_HEADROOM times what the
//            link delivered at the last cut (or more, if it delivered more with no queue in the
//            last CLEAR_WINDOW_MS: a cut on a queue not the sender's, taken while the rate held
//            frames back, would otherwise set the estimate at what the held-back sender
//            delivered), only while the sender sends about the rate (a rate grown unused would
//            let the game's next burst queue at it).
// A queue is not always the sender's: a route that got longer (a latency step, a spike) or
// someone else's queue raises the round trip as much. Such a change comes as a jump: the round
// trip grows from one acknowledgement to the next by more than four times its jitter (RFC 3550's
// mean change between acknowledgements, which a steadily growing queue hardly moves). After a
// jump the dispersion (how long the acknowledged packets took to send over how long their
// acknowledgements took to arrive) is measured afresh on packets sent since: a handover lengthens
// both legs, and a packet sent just before it returns over the new up-leg, so the round trip
// climbs in steps that, mixed, would spread like a queue. Then:
//   bottleneck  dispersion below 0.7 and the acknowledgements spread (their span less the
//               packets' sending span) by more than four jitters: the sender overfills the link,
//               and the rate is cut at once to the delivered rate;
//   new route   anything else as the first verdict within STEP_VERDICT_MS of a jump, with a queue
//               past the standing-queue thresholds: after the hold the base moves up to the new
//               round trip (`latencySteps`) instead of the rate coming down; a smaller queue after
//               a jump waits (on a slow link a large packet or the tick's rounding makes jumps of a
//               few tens of ms: taking the sender's own queue for a route would hide it, cutting a
//               jittery route's would choke it);
//   standing    acknowledgements spaced as sent (0.85..1/0.85) with no jump before: the sender
//               keeps a queue standing by sending what the link carries; cut (at most half) only
//               past three thresholds, below which it is as likely the measure's noise;
//   in between  after the hold, cut by at most half;
// acknowledgements closer than the packets went (a queue draining), or too few to tell: nothing.
// Raw round trips that keep climbing (the least-squares trend over TREND_WINDOW_MS since the last
// jump, or across a run of jumps) are a queue that grows: the sender's, cut even with no
// dispersion measured (each jump restarts it), never taken for a route. So is a slower climb, a
// ramp over CLIMB_WINDOW_MS since the last jump (one sample per acknowledging packet) that rises
// CLIMB_T standard errors of its fit and keeps to its line within the jitter (a step, however it
// is blurred, strays from any line), while the acknowledgements spread (dispersion under
// SLOW_SIGN_DISPERSION): a sender a few per cent over a slow link builds its queue so, and would
// otherwise pass for a standing queue or a route.
// A cut that left the queue where it was a round trip later, acknowledgements keeping the
// packets' spacing, and two round trips later still, shows the queue is not the sender's (a
// route longer on both legs climbs in two jumps each too small to tell from jitter): the rate
// goes back to what it was before the cut and the base moves up, instead of halving again every
// round trip. (A sender's own queue drains after a cut only as fast as the link outruns the new
// rate: one round trip shows it barely lower.)
// Pure: time is passed in; allocation-free.

/** Tuning of a RateController; every field but maxBytesPerSecond has a default. */
export interface RateControllerConfig {
  /** The most it may ever send, bytes per second (the configured `rate`). */
  maxBytesPerSecond: number;
  /** It never goes below this, bytes per second. */
  minBytesPerSecond: number;
  /** The rate before any measurement, bytes per second (capped by maxBytesPerSecond). */
  startBytesPerSecond: number;
  /** Smallest queueing delay taken for a queue, ms. */
  queueThresholdMs: number;
  /** On overuse the rate becomes this share of the delivered rate. */
  decreaseFactor: number;
  /** ...or this share while the queue is over three thresholds (drain it quicker). */
  drainFactor: number;
  /** Growth of the rate while no queue shows, as a share of itself per second. */
  increasePerSecond: number;
  /**
   * ...until the first decrease: a connection starts low (startBytesPerSecond) and grows this
   * much faster while the path shows no queue, so a slow link is found before a start rate above
   * it builds seconds of queue, and a fast one is reached within seconds.
   */
  startupIncreasePerSecond: number;
  /** The base round trip is the lowest of this long, ms. */
  baseWindowMs: number;
  /** Delivered rate is measured over this long, ms. */
  deliveryWindowMs: number;
  /** Loss share taken for a sign of congestion (together with a queue). */
  lossThreshold: number;
  /**
   * Probe the path's bottleneck with packet pairs (src/net/packet-pair.ts; the server's frames
   * only): the rate stays within what they show it carries, and the start-up climb waits for
   * their verdict. Off, only the round trips and the loss tell the rate.
   */
  packetPairs: boolean;
}

export const DEFAULT_RATE_CONTROLLER_CONFIG: Readonly<Omit<RateControllerConfig, 'maxBytesPerSecond'>> =
  Object.freeze({
    minBytesPerSecond: 1500,
    startBytesPerSecond: 8_000,
    queueThresholdMs: 30,
    decreaseFactor: 0.85,
    drainFactor: 0.6,
    increasePerSecond: 0.08,
    startupIncreasePerSecond: 0.5,
    baseWindowMs: 10_000,
    deliveryWindowMs: 1000,
    lossThreshold: 0.1,
    packetPairs: true,
  });

/** Decisions taken, for reports. */
export interface RateControllerStats {
  /** Decreases for a queue, and for loss with a queue. */
  delayDecreases: number;
  lossDecreases: number;
  /**
   * Times the round trip grew while the acknowledgements kept the spacing the packets were sent
   * with (a longer route, someone else's queue: nothing sending less would fix): the base moved
   * up to the new round trip instead of the rate coming down.
   */
  latencySteps: number;
  /** Acknowledgement samples taken. */
  samples: number;
  /** Packet-pair samples taken (onPair). */
  pairs: number;
}

const DELIVERY_BUCKETS = 8;
/** A delivery bucket's numbers in `RateController.buckets`, and their places in it. */
const BUCKET_STRIDE = 8;
const BUCKET_BYTES = 0;
const BUCKET_ACKS = 1;
const BUCKET_ACK_BYTES = 2;
const BUCKET_FIRST_SENT = 3;
const BUCKET_LAST_SENT = 4;
const BUCKET_FIRST_ACK = 5;
const BUCKET_LAST_ACK = 6;
/** A queue must show this long before the rate is cut, ms. */
const OVERUSE_HOLD_MS = 200;
/**
 * Dispersion (the time the acknowledged packets took to be sent over the time their
 * acknowledgements took to arrive) below this: the packets left faster than the path carries
 * them, and the queue is the sender's own.
 */
const BOTTLENECK_DISPERSION = 0.7;
/** Above this, and below 1 / this, the acknowledgements kept the sending spacing. */
const STEADY_DISPERSION = 0.85;
/** Dispersion is measured over at least this many acknowledgements spanning this long, ms. */
const DISPERSION_MIN_ACKS = 8;
const DISPERSION_MIN_SPAN_MS = 300;
/**
 * The first and the last acknowledgement of the dispersion each come early or late by the
 * route's jitter: a spread (acknowledgement span less sending span) within this many times
 * `rttJitterMs` does not show a bottleneck.
 */
const JITTER_SPREAD = 4;
/**
 * A queue the acknowledgements show no sign of (they keep the packets' spacing), with no jump of
 * the round trip before it, is cut only past this many thresholds: the sender sends about what
 * the bottleneck carries and keeps it standing. Below, it is as likely the measure's own noise
 * on a jittery route.
 */
const STANDING_QUEUE_THRESHOLDS = 3;

/**
 * A jump of the round trip is taken for a longer route only within this long of it (ms): the
 * smoothed round trip has taken a route's step by then, and a queue that grows later is a queue.
 */
const STEP_VERDICT_MS = 2000;

/**
 * The trend of the raw round trips (is the queue still growing?) is read over the last this long
 * since the last jump, from at least TREND_MIN_SAMPLES samples spanning TREND_MIN_SPAN_MS.
 */
const TREND_WINDOW_MS = 600;
/**
 * Enough for CLIMB_WINDOW_MS of acknowledgements at up to 106 a second; more, and the windows
 * are shorter.
 */
const TREND_SAMPLES = 160;
/**
 * A slow climb of the raw round trips (queueClimbing) is read over this long since the last jump,
 * and only once the samples span nine tenths of it: a longer route's transition (packets of both
 * routes mixed, each leg's jitter) can climb for a round trip or two after its last jump.
 */
const CLIMB_WINDOW_MS = 1500;
const CLIMB_MIN_SPAN_MS = 1350;
/** A climb strays from its line by at most 1.5 jitters and this (ms: the round trips' rounding). */
const CLIMB_RESIDUAL_FLOOR_MS = 5;
/**
 * A climb's slope passes this many of its standard errors (the test runs every update on windows
 * that overlap, so a chance climb must be far less likely than one in a thousand).
 */
const CLIMB_T = 4;
const TREND_MIN_SAMPLES = 5;
/**
 * Acknowledgements spread to at most this share of the packets' spacing: a queue of the sender's
 * grows (one growing 30 ms a second spreads them to 0.97).
 */
const SLOW_SIGN_DISPERSION = 0.97;
/** The rate grows unused up to this many times what the link carried (see linkBytesPerSecond). */
const LINK_HEADROOM = 1.1;
/** Delivering less than this share of the rate, the sender is limited by what it has to send. */
const APP_LIMITED_SHARE = 0.9;
/**
 * What the link delivered with no queue showing is remembered this long (ms, a windowed maximum
 * in two halves): a cut's estimate of the link is never below it (see linkBytesPerSecond).
 */
const CLEAR_WINDOW_MS = 10_000;
const TREND_MIN_SPAN_MS = 300;
/** Packet-pair samples kept (the newest), and the fewest a verdict is taken on. */
const PAIR_SAMPLES = 24;
const PAIR_MIN_SAMPLES = 8;
/**
 * The rate stays within this share of what the pairs show the bottleneck carries: their gaps are
 * read to the client's frames, so their mean may be a few per cent either way.
 */
const PAIR_SHARE = 0.9;
/**
 * The pairs show a bottleneck when their gaps' signs would come out so lopsided by chance on a
 * route without one less often than this (a sign test: a route's jitter makes a pair's second
 * packet as likely to come first as second; a slower hop spaces every pair by its bytes). Gaps
 * read as 0 (both packets read in one client frame) count for neither. At least 14 gaps of 14,
 * 18 of 19, 21 of 23.
 */
const PAIR_SIGN_P = 1e-4;
/**
 * Before the first decrease the rate does not grow until the pairs gave a verdict, or for this
 * long and two round trips after the first pair was sent (ms: reports lost, or none coming).
 */
const PAIR_VERDICT_MS = 1000;

export class RateController {
  readonly config: Readonly<RateControllerConfig>;
  readonly stats: RateControllerStats = {
    delayDecreases: 0,
    lossDecreases: 0,
    latencySteps: 0,
    samples: 0,
    pairs: 0,
  };
  /**
   * Bytes per second it may send now. Set in the constructor; declared with a fraction so it is
   * laid out as a double from the start (declared bare, V8 would box each value stored anew).
   */
  rateBytesPerSecond = 0.5;
  /** Smoothed round trip, its lowest of the window (the path without queues) and the difference, ms. */
  smoothedRttMs = 0;
  baseRttMs = Number.POSITIVE_INFINITY;
  queueDelayMs = 0;
  /** Mean deviation of round-trip samples, ms. */
  rttDeviationMs = 0;
  /**
   * Mean change of the round trip from one acknowledgement to the next, ms (RFC 3550's
   * interarrival jitter): unlike the deviation from the smoothed round trip, a queue that grows
   * steadily barely moves it, so it measures the route's jitter and not a trend.
   */
  rttJitterMs = 0;
  /** Bytes acknowledged per second over the delivery window. */
  deliveredBytesPerSecond = 0;
  /**
   * Over the delivery window: how long the acknowledged packets took to be sent over how long
   * their acknowledgements took to arrive (1: the path kept their spacing; below 1: they queued
   * at a bottleneck; above 1: a queue draining). NaN until enough acknowledgements.
   */
  dispersion = Number.NaN;
  /**
   * Bytes per second the acknowledgements of the dispersion's packets arrived at: the
   * bottleneck's rate when they queued there (unlike the delivered rate, not lowered by a pause).
   */
  spanDeliveredBytesPerSecond = 0;
  /** Over the same acknowledgements: their span less the packets' sending span, ms. */
  spreadMs = 0;

  private hasSample = false;
  private lastSampleMs = 0;
  /** Lowest smoothed round trip of the current and the previous half window. */
  private baseCurrent = Number.POSITIVE_INFINITY;
  private basePrevious = Number.POSITIVE_INFINITY;
  private baseSwitchMs = 0;
  /**
   * The delivery buckets, BUCKET_STRIDE numbers each (64 bytes: an acknowledgement reads every
   * bucket, which seven arrays of a field each spread over seven places in memory): the bytes
   * delivered (BUCKET_BYTES); and for the dispersion the acknowledgements, their bytes, and the
   * earliest and latest send and acknowledgement times.
   */
  private readonly buckets = new Float64Array(DELIVERY_BUCKETS * BUCKET_STRIDE);
  /** The sum of the buckets' BUCKET_BYTES (whole bytes: exact). */
  private deliveredSum = 0;
  private bucketStartMs = 0;
  private bucket = 0;
  private firstAckMs = -1;
  private lastUpdateMs = -1;
  private holdUntilMs = 0;
  private overuseSinceMs = -1;
  /**
   * The dispersion counts only packets sent from here on: when the round trip last jumped (the
   * path changed). A route that gets longer on both legs at once climbs in two jumps (a packet
   * sent just before the change comes back over the new up-leg), and on a jittery route the jump
   * test sees only the first: packets sent before it was seen may have crossed either path, and
   * mixed with the later ones their acknowledgements spread like a bottleneck's.
   */
  private dispersionFromSentMs = Number.NEGATIVE_INFINITY;
  /**
   * The round trip jumped and no decision was taken since. Only a queue that came with a jump may
   * be a longer route: one that built up without (acknowledgements keeping the packets' spacing
   * because the sender sends about what the bottleneck carries) is a standing queue of its own.
   */
  private stepPending = false;
  /** When the round trip last jumped, and the three jumps before. */
  private jumpAtMs = Number.NEGATIVE_INFINITY;
  private secondJumpAtMs = Number.NEGATIVE_INFINITY;
  private thirdJumpAtMs = Number.NEGATIVE_INFINITY;
  private fourthJumpAtMs = Number.NEGATIVE_INFINITY;
  /** The least-squares fit queueGrowing and queueClimbing fill (one, reused). */
  private readonly fit = new LineFit();
  /** The last TREND_SAMPLES raw round trips and when they were taken (a ring of pairs: time, round trip). */
  private readonly trend = new Float64Array(2 * TREND_SAMPLES);
  private trendCount = 0;
  private trendNext = 0;
  /** A decrease was taken: the startup is over. */
  private decreased = false;
  /**
   * What the link carried (the delivered rate) when the sender's queue was last cut: above it the
   * rate grows only while the sender uses it. Infinite until a cut, and after a cut undone.
   */
  private linkBytesPerSecond = Number.POSITIVE_INFINITY;
  /**
   * The most the link delivered with no queue (under half the threshold) in the current and the
   * previous half of CLEAR_WINDOW_MS, bytes per second.
   */
  private clearCurrent = 0;
  private clearPrevious = 0;
  private clearSwitchMs = Number.NEGATIVE_INFINITY;
  /**
   * The queue when the rate was last cut, while the queue has stayed over the threshold since
   * (-1: no cut in this overuse), and the rate before the first cut of it.
   */
  private cutQueueMs = -1;
  private rateBeforeCut = 0;
  /** When the rate was last cut. */
  private cutAtMs = Number.NEGATIVE_INFINITY;
  /** A round trip after the cut the queue stood where it was: a route, unless it drains. */
  private restorePending = false;
  /**
   * What the packet pairs show the path's narrowest hop carries, bytes per second of packets the
   * size of those sampled (Infinity: no pairs, or pairs that show no bottleneck); the rate never
   * exceeds PAIR_SHARE of it.
   */
  pairBytesPerSecond = Number.POSITIVE_INFINITY;
  /** The last PAIR_SAMPLES pairs: their arrival gap (ms, signed) and the second packet's bytes. */
  private readonly pairGapMs = new Float64Array(PAIR_SAMPLES);
  private readonly pairBytes = new Float64Array(PAIR_SAMPLES);
  private pairCount = 0;
  private pairNext = 0;
  /** Of the pairs kept, those whose gap was positive and negative. */
  private pairPositive = 0;
  private pairNegative = 0;
  /** When the first pair was sent (-1: none). */
  private pairsFromMs = -1;

  constructor(config: Partial<RateControllerConfig> & { maxBytesPerSecond: number }) {
    const c = { ...DEFAULT_RATE_CONTROLLER_CONFIG, ...config };
    checkConfig(c);
    this.config = Object.freeze(c);
    this.rateBytesPerSecond = Math.max(
      c.minBytesPerSecond,
      Math.min(c.startBytesPerSecond, c.maxBytesPerSecond),
    );
  }

  /** A new upper bound (the configured rate changed). */
  setMax(maxBytesPerSecond: number): void {
    (this.config as RateControllerConfig).maxBytesPerSecond = maxBytesPerSecond;
    if (this.rateBytesPerSecond > maxBytesPerSecond) this.rateBytesPerSecond = maxBytesPerSecond;
  }

  /** A packet of `bytes` sent `rttMs` ago was acknowledged at `nowMs`. */
  onAck(nowMs: number, rttMs: number, bytes: number): void {
    if (!(rttMs >= 0 && Number.isFinite(rttMs) && Number.isFinite(nowMs))) return;
    this.stats.samples++;
    // A round trip that jumps from one acknowledgement to the next by more than the route's
    // jitter explains (a queue grows packet by packet) is the path changing: the dispersion
    // measured across the jump would mistake the gap for a bottleneck, so it starts again after it.
    if (
      this.hasSample &&
      rttMs - this.lastSampleMs > Math.max(2 * this.config.queueThresholdMs, 4 * this.rttJitterMs)
    ) {
      const buckets = this.buckets;
      for (let at = 0; at < buckets.length; at += BUCKET_STRIDE) {
        buckets[at + BUCKET_ACKS] = 0;
        buckets[at + BUCKET_ACK_BYTES] = 0;
      }
      this.dispersionFromSentMs = nowMs;
      this.dispersion = Number.NaN;
      this.stepPending = true;
      this.fourthJumpAtMs = this.thirdJumpAtMs;
      this.thirdJumpAtMs = this.secondJumpAtMs;
      this.secondJumpAtMs = this.jumpAtMs;
      this.jumpAtMs = nowMs;
    }
    this.trend[2 * this.trendNext] = nowMs;
    this.trend[2 * this.trendNext + 1] = rttMs;
    this.trendNext = (this.trendNext + 1) % TREND_SAMPLES;
    if (this.trendCount < TREND_SAMPLES) this.trendCount++;
    if (this.hasSample) this.rttJitterMs += (Math.abs(rttMs - this.lastSampleMs) - this.rttJitterMs) / 16;
    this.lastSampleMs = rttMs;
    if (this.hasSample) {
      this.rttDeviationMs += (Math.abs(rttMs - this.smoothedRttMs) - this.rttDeviationMs) / 4;
      this.smoothedRttMs += (rttMs - this.smoothedRttMs) / 8;
    } else {
      this.hasSample = true;
      this.smoothedRttMs = rttMs;
      this.rttDeviationMs = rttMs / 4;
      this.baseSwitchMs = nowMs;
      this.bucketStartMs = nowMs;
      this.firstAckMs = nowMs;
    }
    // Windowed minimum in two halves: the base forgets a path that got longer within a window.
    if (nowMs - this.baseSwitchMs >= this.config.baseWindowMs / 2) {
      this.basePrevious = this.baseCurrent;
      this.baseCurrent = Number.POSITIVE_INFINITY;
      this.baseSwitchMs = nowMs;
    }
    if (this.smoothedRttMs < this.baseCurrent) this.baseCurrent = this.smoothedRttMs;
    this.baseRttMs = Math.min(this.baseCurrent, this.basePrevious);
    this.queueDelayMs = this.smoothedRttMs - this.baseRttMs;
    this.addDelivered(nowMs, bytes);
    const buckets = this.buckets;
    const b = this.bucket * BUCKET_STRIDE;
    const sentMs = nowMs - rttMs;
    if (sentMs < this.dispersionFromSentMs) return;
    if (buckets[b + BUCKET_ACKS] === 0) {
      buckets[b + BUCKET_FIRST_SENT] = sentMs;
      buckets[b + BUCKET_LAST_SENT] = sentMs;
      buckets[b + BUCKET_FIRST_ACK] = nowMs;
    } else {
      if (sentMs < buckets[b + BUCKET_FIRST_SENT]) buckets[b + BUCKET_FIRST_SENT] = sentMs;
      if (sentMs > buckets[b + BUCKET_LAST_SENT]) buckets[b + BUCKET_LAST_SENT] = sentMs;
    }
    buckets[b + BUCKET_LAST_ACK] = nowMs;
    buckets[b + BUCKET_ACKS]++;
    buckets[b + BUCKET_ACK_BYTES] += bytes;
    this.measureDispersion();
  }

  /** Dispersion over the live buckets (see `dispersion`). */
  private measureDispersion(): void {
    const buckets = this.buckets;
    let acks = 0;
    let bytes = 0;
    let firstSent = Number.POSITIVE_INFINITY;
    let lastSent = Number.NEGATIVE_INFINITY;
    let firstAck = Number.POSITIVE_INFINITY;
    let lastAck = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < DELIVERY_BUCKETS; i++) {
      const at = i * BUCKET_STRIDE;
      const n = buckets[at + BUCKET_ACKS];
      if (n === 0) continue;
      acks += n;
      bytes += buckets[at + BUCKET_ACK_BYTES];
      if (buckets[at + BUCKET_FIRST_SENT] < firstSent) firstSent = buckets[at + BUCKET_FIRST_SENT];
      if (buckets[at + BUCKET_LAST_SENT] > lastSent) lastSent = buckets[at + BUCKET_LAST_SENT];
      if (buckets[at + BUCKET_FIRST_ACK] < firstAck) firstAck = buckets[at + BUCKET_FIRST_ACK];
      if (buckets[at + BUCKET_LAST_ACK] > lastAck) lastAck = buckets[at + BUCKET_LAST_ACK];
    }
    const ackSpan = lastAck - firstAck;
    this.spreadMs = ackSpan - Math.max(0, lastSent - firstSent);
    this.spanDeliveredBytesPerSecond = ackSpan > 0 ? (bytes * 1000) / ackSpan : 0;
    this.dispersion =
      acks >= DISPERSION_MIN_ACKS && ackSpan >= DISPERSION_MIN_SPAN_MS
        ? Math.max(0, lastSent - firstSent) / ackSpan
        : Number.NaN;
  }

  /** Takes a decision if one is due at `nowMs`, given the share of packets lost (`loss`). */
  update(nowMs: number, loss: number): void {
    const dt = this.lastUpdateMs < 0 ? 0 : Math.min(nowMs - this.lastUpdateMs, 1000);
    this.lastUpdateMs = nowMs;
    if (!this.hasSample || !(dt >= 0)) return;
    const c = this.config;
    this.addDelivered(nowMs, 0);
    const threshold = Math.max(c.queueThresholdMs, 2 * Math.min(this.rttDeviationMs, 3 * this.rttJitterMs));
    const queue = this.queueDelayMs;
    const measured = nowMs - this.firstAckMs >= c.deliveryWindowMs / 2;
    if (nowMs - this.clearSwitchMs >= CLEAR_WINDOW_MS / 2) {
      this.clearPrevious = this.clearCurrent;
      this.clearCurrent = 0;
      this.clearSwitchMs = nowMs;
    }
    if (queue > threshold) {
      // A queue held for a while, not one noisy sample.
      if (this.overuseSinceMs < 0) this.overuseSinceMs = nowMs;
      const d = this.dispersion;
      // Round trips that keep climbing since the last jump: a queue that grows, the sender's
      // (a route's step is one or two jumps and then level), whatever the dispersion says.
      const growing = this.queueGrowing(nowMs, threshold);
      // A slower climb, taken only with acknowledgements that spread as a queue of the sender's
      // spreads them (dispersion under SLOW_SIGN_DISPERSION: a route's jitter wanders the round
      // trip as much, but keeps the packets' spacing):
      const spreading = d < SLOW_SIGN_DISPERSION;
      const climbing = growing || (spreading && this.queueClimbing(nowMs, threshold));
      // Not measured yet: nothing to decide.
      if (!(d >= 0) && !climbing) return;
      // A bottleneck spreads the acknowledgements by more than jitter would.
      const bottleneck = d < BOTTLENECK_DISPERSION && this.spreadMs > JITTER_SPREAD * this.rttJitterMs;
      // The acknowledgements arrive closer than the packets went (a queue draining, a route
      // getting shorter): nothing to decide.
      if (d > 1 / STEADY_DISPERSION) return;
      // The packets arrive spaced as they were sent, after the round trip jumped: the path got
      // longer (or a queue not ours stands on it); sending less would not shorten it.
      // Right after a jump, anything short of a clear bottleneck with a queue past the
      // standing-queue thresholds is taken for the new route.
      if (this.stepPending && nowMs - this.jumpAtMs > STEP_VERDICT_MS) this.stepPending = false;
      if (this.stepPending && !climbing && (d > STEADY_DISPERSION || !bottleneck)) {
        // A queue within the standing-queue thresholds after a jump is neither: wait.
        if (queue <= STANDING_QUEUE_THRESHOLDS * threshold) return;
        if (nowMs - this.overuseSinceMs >= OVERUSE_HOLD_MS) this.takeLatencyStep(nowMs);
        return;
      }
      // Acknowledgements keeping the packets' spacing with no jump before: a standing queue, the
      // sender's own if it is well past what the route's jitter makes of the measure.
      if (!climbing && d > STEADY_DISPERSION && queue <= STANDING_QUEUE_THRESHOLDS * threshold) return;
      // A queue the sender builds itself is cut at once; any other after the hold.
      const held = bottleneck || nowMs - this.overuseSinceMs >= OVERUSE_HOLD_MS;
      if (held && nowMs >= this.holdUntilMs && (measured || bottleneck)) {
        // The last cut left the queue where it was, and the acknowledgements keep the packets'
        // spacing: sending less did not shorten it, so it is not the sender's. A route that got
        // longer on both legs climbs in two jumps each too small to tell from jitter; without
        // this every round trip would halve the rate again. A queue that stands a round trip
        // after the cut is only a sign: those acknowledgements are of packets sent before it,
        // that met the whole queue, and a queue of the sender's drains only as fast as the link
        // outruns the rate cut to (on a slow link, about a tenth of a second a second). So the
        // verdict waits, cutting nothing more, until two round trips after the cut: a queue that
        // has not come down by then is not the sender's.
        if (this.cutQueueMs >= 0 && !bottleneck && !climbing && d > STEADY_DISPERSION) {
          const early = nowMs - this.cutAtMs < 2 * this.smoothedRttMs + OVERUSE_HOLD_MS;
          if (!this.restorePending && early && Math.abs(queue - this.cutQueueMs) < threshold / 2) {
            this.restorePending = true;
          }
          if (this.restorePending && early) return;
        }
        if (
          this.restorePending &&
          !bottleneck &&
          !climbing &&
          d > STEADY_DISPERSION &&
          queue > this.cutQueueMs - threshold / 2
        ) {
          this.rateBytesPerSecond = Math.min(
            c.maxBytesPerSecond,
            Math.max(this.rateBytesPerSecond, this.rateBeforeCut),
            this.pairCap(),
          );
          this.linkBytesPerSecond = Number.POSITIVE_INFINITY;
          this.takeLatencyStep(nowMs);
          return;
        }
        // It came down (or the signs turned): the queue was the sender's.
        this.restorePending = false;
        const factor = queue > 3 * threshold ? c.drainFactor : c.decreaseFactor;
        // The delivered rate is the bottleneck's when the queue is ours (the acknowledgements
        // show it: dispersion); otherwise (a sender that sent less than it may measures less than
        // the link) no more than half the rate goes at once.
        let target = factor * (bottleneck ? this.spanDeliveredBytesPerSecond : this.deliveredBytesPerSecond);
        if (!bottleneck) target = Math.max(target, 0.5 * this.rateBytesPerSecond);
        if (loss > c.lossThreshold) target *= 1 - loss / 2;
        this.stepPending = false;
        this.decreased = true;
        if (target < this.rateBytesPerSecond) {
          if (this.cutQueueMs < 0) this.rateBeforeCut = this.rateBytesPerSecond;
          this.cutQueueMs = queue;
          this.cutAtMs = nowMs;
          // What the link carried with a queue, or more if it carried more within CLEAR_WINDOW_MS
          // without one: a link seldom loses capacity in seconds, while a queue read on a jittery
          // route (a handover, someone else's traffic) may not be the sender's. With frames paced
          // at whole ticks a sender the rate holds back delivers about three quarters of it, so
          // an estimate taken from a misread cut alone would hold the rate there for good.
          this.linkBytesPerSecond = bottleneck
            ? this.spanDeliveredBytesPerSecond
            : Math.max(this.deliveredBytesPerSecond, this.clearCurrent, this.clearPrevious);
          this.rateBytesPerSecond = Math.max(c.minBytesPerSecond, target);
          if (loss > c.lossThreshold) this.stats.lossDecreases++;
          else this.stats.delayDecreases++;
        }
        this.holdUntilMs = nowMs + this.smoothedRttMs + 100;
      }
      return;
    }
    this.overuseSinceMs = -1;
    this.cutQueueMs = -1;
    this.restorePending = false;
    // Until the first decrease nothing is known of the link: the rate climbs unless a queue shows
    // (after it, only while the queue is under half the threshold). Past what the link carried at
    // the last cut it climbs only while the sender sends about that much: a rate a game does not
    // use tells nothing of the link, and grown unused it would let the game's next burst (a fight,
    // a respawn) queue for as long as it lasts.
    // (The link carries at least what it delivered without a queue: a cut on a misreading
    // leaves an estimate the game's own bursts soon raise.) Lost packets were sent too.
    if (queue < threshold / 2 && this.deliveredBytesPerSecond > this.linkBytesPerSecond) {
      this.linkBytesPerSecond = this.deliveredBytesPerSecond;
    }
    if (queue < threshold / 2 && measured && this.deliveredBytesPerSecond > this.clearCurrent) {
      this.clearCurrent = this.deliveredBytesPerSecond;
    }
    const sent = this.deliveredBytesPerSecond / Math.max(0.5, 1 - loss);
    const appLimited =
      this.rateBytesPerSecond >= LINK_HEADROOM * this.linkBytesPerSecond &&
      sent < APP_LIMITED_SHARE * this.rateBytesPerSecond;
    // A connection probed with packet pairs starts climbing once they said whether the path has
    // a bottleneck below where the climb would go (or gave no verdict in time): after the first
    // PAIR_MIN_SAMPLES, unless they lean to one so far (none negative, some positive).
    const pairsPending =
      !this.decreased &&
      this.pairsFromMs >= 0 &&
      this.pairBytesPerSecond === Number.POSITIVE_INFINITY &&
      (this.pairCount < PAIR_MIN_SAMPLES || this.pairsLeaning) &&
      nowMs - this.pairsFromMs < PAIR_VERDICT_MS + 2 * this.smoothedRttMs;
    if (
      queue < (this.decreased ? threshold / 2 : threshold) &&
      nowMs >= this.holdUntilMs &&
      !appLimited &&
      !pairsPending
    ) {
      const increase = this.decreased ? c.increasePerSecond : c.startupIncreasePerSecond;
      const grown = this.rateBytesPerSecond * (1 + (increase * dt) / 1000);
      this.rateBytesPerSecond = Math.min(c.maxBytesPerSecond, grown, this.pairCap());
    }
  }

  /**
   * Whether the pairs show a bottleneck, or lean to one so far (none of the gaps negative, some
   * positive): more pairs are worth sending soon.
   */
  get pairsLeaning(): boolean {
    return (
      this.pairBytesPerSecond < Number.POSITIVE_INFINITY || (this.pairNegative === 0 && this.pairPositive > 0)
    );
  }

  /** The first packet pair was sent at `nowMs` (the start-up climb waits for the pairs' verdict). */
  pairsStarted(nowMs: number): void {
    if (this.pairsFromMs < 0) this.pairsFromMs = nowMs;
  }

  /**
   * A packet pair's second packet, of `bytes`, arrived `gapMs` after the first (negative: before
   * it). Once PAIR_MIN_SAMPLES are in, the last PAIR_SAMPLES show a bottleneck when their gaps'
   * signs pass the sign test (PAIR_SIGN_P: jitter orders a route's pairs either way; a slower hop
   * spaces every pair by its bytes); its rate is then the bytes over the gaps of the pairs that
   * did not come reversed (their mean gap: true however coarsely the client reads its clock), and
   * the rate is kept within PAIR_SHARE of it. When they stop showing one the cap is lifted and the
   * rate climbs as the round trips allow.
   */
  onPair(gapMs: number, bytes: number): void {
    if (!Number.isFinite(gapMs) || !(bytes > 0)) return;
    this.stats.pairs++;
    this.pairGapMs[this.pairNext] = gapMs;
    this.pairBytes[this.pairNext] = bytes;
    this.pairNext = (this.pairNext + 1) % PAIR_SAMPLES;
    if (this.pairCount < PAIR_SAMPLES) this.pairCount++;
    const n = this.pairCount;
    let sum = 0;
    let sumBytes = 0;
    let positive = 0;
    let negative = 0;
    for (let i = 0; i < n; i++) {
      const gap = this.pairGapMs[i];
      if (gap < 0) {
        negative++;
        continue;
      }
      if (gap > 0) positive++;
      sum += gap;
      sumBytes += this.pairBytes[i];
    }
    this.pairPositive = positive;
    this.pairNegative = negative;
    const shown = n >= PAIR_MIN_SAMPLES && sum > 0 && signTest(positive, negative) < PAIR_SIGN_P;
    this.pairBytesPerSecond = shown ? (1000 * sumBytes) / sum : Number.POSITIVE_INFINITY;
    if (!shown) return;
    const cap = this.pairCap();
    if (this.rateBytesPerSecond > cap) this.rateBytesPerSecond = cap;
  }

  /** The most the pairs let the rate be (never below the least rate). */
  private pairCap(): number {
    return Math.max(this.config.minBytesPerSecond, PAIR_SHARE * this.pairBytesPerSecond);
  }

  /**
   * Whether the raw round trips since the last jump (within TREND_WINDOW_MS) climb by more than
   * the threshold and four jitters: the least-squares slope over their span.
   */
  private queueGrowing(nowMs: number, threshold: number): boolean {
    // Samples before a jump belong to the old route, unless the jumps come one after another
    // (four within the window: a route changes in one or two, and jitter may add one).
    const window = nowMs - TREND_WINDOW_MS;
    const from = this.fourthJumpAtMs >= window ? window : Math.max(window, this.jumpAtMs);
    const fit = this.fit.reset();
    for (let i = 0; i < this.trendCount; i++) {
      const t = this.trend[2 * i];
      if (t >= from) fit.add(t - from, this.trend[2 * i + 1]);
    }
    if (fit.n < TREND_MIN_SAMPLES || fit.span < TREND_MIN_SPAN_MS) return false;
    const slope = fit.slope();
    return slope * fit.span > Math.max(threshold, 4 * this.rttJitterMs);
  }

  /**
   * Whether the raw round trips since the last jump (within CLIMB_WINDOW_MS, spanning at least
   * CLIMB_MIN_SPAN_MS) climb as a ramp: their least-squares rise passes the threshold and CLIMB_T
   * standard errors of the fit, and they stray from the line by about the jitter. A
   * queue the sender fills a little faster than the link drains (a game's frames growing past a
   * slow link's rate) climbs so, too slowly for queueGrowing's shorter window to tell from
   * jitter; a longer route is level after its jump.
   */
  private queueClimbing(nowMs: number, threshold: number): boolean {
    const from = Math.max(nowMs - CLIMB_WINDOW_MS, this.jumpAtMs);
    const fit = this.fit.reset();
    // One sample per arrival: the acknowledgements one packet brings share its wait (a run of
    // lost packets delays them all), so they count once, by the least of them (the packet sent
    // last, which waited least for it). The ring is read oldest first.
    const count = this.trendCount;
    const oldest = count < TREND_SAMPLES ? 0 : this.trendNext;
    let groupAt = Number.NaN;
    let groupRtt = 0;
    for (let k = 0; k < count; k++) {
      const i = (oldest + k) % TREND_SAMPLES;
      const t = this.trend[2 * i];
      if (t < from) continue;
      const rtt = this.trend[2 * i + 1];
      if (t === groupAt) {
        if (rtt < groupRtt) groupRtt = rtt;
        continue;
      }
      if (!Number.isNaN(groupAt)) fit.add(groupAt - from, groupRtt);
      groupAt = t;
      groupRtt = rtt;
    }
    if (!Number.isNaN(groupAt)) fit.add(groupAt - from, groupRtt);
    if (fit.n < TREND_MIN_SAMPLES || fit.span < CLIMB_MIN_SPAN_MS) return false;
    const slope = fit.slope();
    if (!(slope * fit.span > threshold)) return false;
    // The fit's own standard error (its residual over the spread of the times): the climb must
    // pass CLIMB_T of them. A very jittery route (tens of ms each way, packets reordered)
    // wanders by more than its jitter estimate says; its residual says how much.
    const residual = fit.residual();
    if (!(slope > (CLIMB_T * residual) / Math.sqrt(fit.centredXX()))) return false;
    // A ramp strays from its line by about the jitter (the mean change between samples, about
    // 1.13 standard deviations of one); a step (a longer route in jumps too small to tell from
    // jitter) strays from any line by a share of its height.
    return residual < (1.5 * this.rttJitterMs) / 1.13 + CLIMB_RESIDUAL_FLOOR_MS;
  }

  /** The path got longer (or a queue not the sender's stands on it): the base moves up to it. */
  private takeLatencyStep(nowMs: number): void {
    this.baseCurrent = this.smoothedRttMs;
    this.basePrevious = this.smoothedRttMs;
    this.baseSwitchMs = nowMs;
    this.baseRttMs = this.smoothedRttMs;
    this.queueDelayMs = 0;
    this.overuseSinceMs = -1;
    this.stepPending = false;
    this.cutQueueMs = -1;
    this.restorePending = false;
    this.stats.latencySteps++;
  }

  /** Adds `bytes` acknowledged at `nowMs` to the delivery buckets and refreshes the delivered rate. */
  private addDelivered(nowMs: number, bytes: number): void {
    const width = this.config.deliveryWindowMs / DELIVERY_BUCKETS;
    let steps = 0;
    const buckets = this.buckets;
    while (nowMs - this.bucketStartMs >= width && steps < DELIVERY_BUCKETS) {
      this.bucket = (this.bucket + 1) % DELIVERY_BUCKETS;
      const at = this.bucket * BUCKET_STRIDE;
      this.deliveredSum -= buckets[at + BUCKET_BYTES];
      buckets[at + BUCKET_BYTES] = 0;
      buckets[at + BUCKET_ACKS] = 0;
      buckets[at + BUCKET_ACK_BYTES] = 0;
      this.bucketStartMs += width;
      steps++;
    }
    if (nowMs - this.bucketStartMs >= width) this.bucketStartMs = nowMs;
    buckets[this.bucket * BUCKET_STRIDE + BUCKET_BYTES] += bytes;
    this.deliveredSum += bytes;
    const sum = this.deliveredSum;
    const span = Math.min(this.config.deliveryWindowMs, Math.max(width, nowMs - this.firstAckMs));
    this.deliveredBytesPerSecond = (sum * 1000) / span;
  }
}

/** A least-squares line through points (x, y) added one by one; allocation-free once built. */
class LineFit {
  n = 0;
  /** The points' least and greatest x. */
  minX = Number.POSITIVE_INFINITY;
  maxX = Number.NEGATIVE_INFINITY;
  private sx = 0;
  private sy = 0;
  private sxx = 0;
  private sxy = 0;
  private syy = 0;

  reset(): this {
    this.n = 0;
    this.minX = Number.POSITIVE_INFINITY;
    this.maxX = Number.NEGATIVE_INFINITY;
    this.sx = 0;
    this.sy = 0;
    this.sxx = 0;
    this.sxy = 0;
    this.syy = 0;
    return this;
  }

  add(x: number, y: number): void {
    this.n++;
    this.sx += x;
    this.sy += y;
    this.sxx += x * x;
    this.sxy += x * y;
    this.syy += y * y;
    if (x < this.minX) this.minX = x;
    if (x > this.maxX) this.maxX = x;
  }

  /** maxX - minX (-Infinity with no point). */
  get span(): number {
    return this.maxX - this.minX;
  }

  /** The line's slope; NaN when the xs do not spread (so every comparison with it is false). */
  slope(): number {
    const den = this.n * this.sxx - this.sx * this.sx;
    return den > 0 ? (this.n * this.sxy - this.sx * this.sy) / den : Number.NaN;
  }

  /** The sum of (x - mean x)^2. */
  centredXX(): number {
    return this.sxx - (this.sx * this.sx) / this.n;
  }

  /** The points' standard deviation about the line (n - 2 degrees of freedom). */
  residual(): number {
    const n = this.n;
    const cxy = this.sxy - (this.sx * this.sy) / n;
    const cyy = this.syy - (this.sy * this.sy) / n;
    return Math.sqrt(Math.max(0, cyy - (cxy * cxy) / this.centredXX()) / (n - 2));
  }
}

function checkConfig(c: RateControllerConfig): void {
  const positive = [
    'maxBytesPerSecond',
    'minBytesPerSecond',
    'startBytesPerSecond',
    'baseWindowMs',
    'deliveryWindowMs',
  ] as const;
  for (const key of positive) {
    if (!(c[key] > 0 && Number.isFinite(c[key]))) {
      throw new RangeError(`rate control: ${key} must be a finite number > 0, got ${String(c[key])}`);
    }
  }
  for (const key of ['queueThresholdMs', 'increasePerSecond', 'startupIncreasePerSecond'] as const) {
    if (!(c[key] >= 0 && Number.isFinite(c[key]))) {
      throw new RangeError(`rate control: ${key} must be a finite number >= 0, got ${String(c[key])}`);
    }
  }
  for (const key of ['decreaseFactor', 'drainFactor', 'lossThreshold'] as const) {
    if (!(c[key] > 0 && c[key] <= 1)) {
      throw new RangeError(`rate control: ${key} must be in (0, 1], got ${String(c[key])}`);
    }
  }
  if (typeof c.packetPairs !== 'boolean') {
    throw new RangeError(`rate control: packetPairs must be true or false, got ${String(c.packetPairs)}`);
  }
}

/**
 * The chance that `positive + negative` fair coin flips give `negative` or fewer tails: how
 * likely pairs on a route with no bottleneck come out at least this lopsided.
 */
function signTest(positive: number, negative: number): number {
  const n = positive + negative;
  let term = 0.5 ** n;
  let p = term;
  for (let k = 1; k <= negative; k++) {
    term = (term * (n - k + 1)) / k;
    p += term;
  }
  return p;
}
