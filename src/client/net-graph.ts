// net_graph's figures (Source's net_graph 3), read from the engine's own stats once a frame:
// frame rate, ping, bytes and packets per second each way, loss each way, choke, interpolation
// delay, the share of frames extrapolated or held, prediction errors, and the server's tick time
// when the game reports it. Rates are taken over whole windows (a second by default).

import type { GameClient } from './client.ts';

export interface NetGraphFigures {
  /** Frames per second and the mean frame interval, ms. */
  fps: number;
  frameMs: number;
  /** Smoothed round trip, ms (0 until measured). */
  pingMs: number;
  /** Interpolation delay in use, ms. */
  interpolationDelayMs: number;
  inBytesPerSecond: number;
  outBytesPerSecond: number;
  inPacketsPerSecond: number;
  outPacketsPerSecond: number;
  /** Share of the server's packets that never arrived, and of ours it never acknowledged. */
  lossIn: number;
  lossOut: number;
  /** Share of the frames due by the update rate that the server held back for this client's rate. */
  choke: number;
  /** Share of the window's frames that drew remote entities extrapolated, or held (history ran dry). */
  extrapolatedShare: number;
  heldShare: number;
  /** Visible prediction corrections in all, in the window, and their mean and largest size (units). */
  predictionErrors: number;
  predictionErrorsInWindow: number;
  predictionErrorMean: number;
  predictionErrorMax: number;
  /** Server tick time reported by the game, ms (NaN when unknown). */
  serverTickMs: number;
  /** Snapshots received per second. */
  snapshotsPerSecond: number;
}

export function createNetGraphFigures(): NetGraphFigures {
  return {
    fps: 0,
    frameMs: 0,
    pingMs: 0,
    interpolationDelayMs: 0,
    inBytesPerSecond: 0,
    outBytesPerSecond: 0,
    inPacketsPerSecond: 0,
    outPacketsPerSecond: 0,
    lossIn: 0,
    lossOut: 0,
    choke: 0,
    extrapolatedShare: 0,
    heldShare: 0,
    predictionErrors: 0,
    predictionErrorsInWindow: 0,
    predictionErrorMean: 0,
    predictionErrorMax: 0,
    serverTickMs: Number.NaN,
    snapshotsPerSecond: 0,
  };
}

/** Counters at the start of a window. */
interface Counters {
  frames: number;
  bytesIn: number;
  bytesOut: number;
  packetsIn: number;
  packetsOut: number;
  framesReceived: number;
  choked: number;
  interpolated: number;
  extrapolated: number;
  held: number;
  corrections: number;
}

function zeroCounters(): Counters {
  return {
    frames: 0,
    bytesIn: 0,
    bytesOut: 0,
    packetsIn: 0,
    packetsOut: 0,
    framesReceived: 0,
    choked: 0,
    interpolated: 0,
    extrapolated: 0,
    held: 0,
    corrections: 0,
  };
}

/**
 * Call `update(nowMs, client)` once per rendered frame; `figures` holds what net_graph shows
 * (rates refresh once per window, the rest every frame). Allocates nothing per frame.
 */
export class NetGraph {
  readonly figures: NetGraphFigures = createNetGraphFigures();
  readonly windowMs: number;
  private readonly start: Counters = zeroCounters();
  private readonly now: Counters = zeroCounters();
  private windowStartMs = -1;
  private frames = 0;
  /** The channel (connection) the window's counters came from: a new one restarts the window. */
  private channel: unknown = null;

  constructor(windowMs = 1000) {
    if (!(windowMs > 0)) throw new RangeError(`NetGraph: windowMs must be > 0, got ${windowMs}`);
    this.windowMs = windowMs;
  }

  /** Server tick time as the game learnt it from its server, ms. */
  set serverTickMs(ms: number) {
    this.figures.serverTickMs = ms;
  }

  update<P, W>(nowMs: number, client: GameClient<P, W>): void {
    const f = this.figures;
    this.frames++;
    const channel = client.channel;
    const stats = channel?.stats;
    const view = client.view.stats;
    const prediction = client.predictor.stats;
    f.pingMs = stats?.rttMs ?? 0;
    f.lossIn = stats?.incomingLoss ?? 0;
    f.lossOut = stats?.outgoingLoss ?? 0;
    f.interpolationDelayMs = client.interpolationDelayMs(nowMs);
    f.predictionErrors = prediction.visibleCorrections;
    f.predictionErrorMean =
      prediction.visibleCorrections === 0
        ? 0
        : prediction.correctionDistanceTotal / prediction.visibleCorrections;
    f.predictionErrorMax = prediction.correctionDistanceMax;
    const c = this.now;
    c.frames = this.frames;
    c.bytesIn = stats?.bytesReceived ?? 0;
    c.bytesOut = stats?.bytesSent ?? 0;
    c.packetsIn = stats?.packetsReceived ?? 0;
    c.packetsOut = stats?.packetsSent ?? 0;
    c.framesReceived = client.stats.framesReceived;
    c.choked = client.stats.choked;
    c.interpolated = view.interpolated;
    c.extrapolated = view.extrapolated;
    c.held = view.held;
    c.corrections = prediction.visibleCorrections;
    if (channel !== this.channel || this.windowStartMs < 0) {
      this.channel = channel;
      this.windowStartMs = nowMs;
      Object.assign(this.start, c);
      return;
    }
    const elapsed = nowMs - this.windowStartMs;
    if (elapsed < this.windowMs) return;
    const s = this.start;
    const perSecond = 1000 / elapsed;
    const frames = c.frames - s.frames;
    f.fps = frames * perSecond;
    f.frameMs = frames > 0 ? elapsed / frames : 0;
    f.inBytesPerSecond = (c.bytesIn - s.bytesIn) * perSecond;
    f.outBytesPerSecond = (c.bytesOut - s.bytesOut) * perSecond;
    f.inPacketsPerSecond = (c.packetsIn - s.packetsIn) * perSecond;
    f.outPacketsPerSecond = (c.packetsOut - s.packetsOut) * perSecond;
    const received = c.framesReceived - s.framesReceived;
    f.snapshotsPerSecond = received * perSecond;
    const choked = c.choked - s.choked;
    f.choke = choked + received === 0 ? 0 : choked / (choked + received);
    const drawn = c.interpolated - s.interpolated + (c.extrapolated - s.extrapolated) + (c.held - s.held);
    f.extrapolatedShare = drawn === 0 ? 0 : (c.extrapolated - s.extrapolated) / drawn;
    f.heldShare = drawn === 0 ? 0 : (c.held - s.held) / drawn;
    f.predictionErrorsInWindow = c.corrections - s.corrections;
    this.windowStartMs = nowMs;
    Object.assign(s, c);
  }
}
