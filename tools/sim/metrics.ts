// The sim's measurements: counters read from the server, the clients and the shot ledger at the end
// of every time bucket (series for the chart) and at the end of the run (the figures, by plain name).

import type { ArenaRules } from '../../games/arena/server/rules.ts';
import type { ArenaPlayerState, ArenaWorld } from '../../games/arena/shared/game.ts';
import type { ArenaShotLedger } from '../../games/arena/testing/shots.ts';
import type { NetworkProfile } from '../../src/net/profile.ts';
import { LAG_COMPENSATION_MODES, type LagCompensationMode } from '../../src/server/lag-compensation.ts';
import type { GameServer, ServerClient } from '../../src/server/server.ts';
import { percentile, type Samples } from '../stats.ts';
import type { ClientSummary } from './lockstep.ts';

/** A figure: a number, or null when it has no meaning in this run (a share of nothing). */
export type Figure = number | null;

/**
 * Figures measured on the real clock: they vary from run to run even on the memory transport.
 * Every other figure of a memory run is a function of the options and the seed.
 */
export const REAL_CLOCK_FIGURES: readonly string[] = [
  'serverTickMs.p50',
  'serverTickMs.p99',
  'serverTickMs.max',
  'serverTickMs.mean',
  'wallClockSeconds',
  'wallClockPerSimulatedSecond',
  'soak.heapMB.first',
  'soak.heapMB.last',
  'soak.heapMBPerHour',
  'soak.heapMBPerHour.error',
  'soak.heapMBPerHour.effectiveSamples',
  'soak.codeMB.first',
  'soak.codeMB.last',
  'soak.codeMBPerHour',
  'soak.codeMBPerHour.error',
  'soak.dataMB.first',
  'soak.dataMB.last',
  'soak.dataMBPerHour',
  'soak.dataMBPerHour.error',
  'soak.dataMBPerHour.effectiveSamples',
  'soak.rssMB.first',
  'soak.rssMB.last',
  'soak.rssMBPerHour',
  'soak.rssMBPerHour.error',
  'soak.rssMBPerHour.effectiveSamples',
  'soak.heapCommittedMBPerHour',
  'soak.heapCommittedMBPerHour.error',
  'soak.externalMBPerHour',
  'soak.externalMBPerHour.error',
  'soak.nativeMB.first',
  'soak.nativeMB.last',
  'soak.nativeMBPerHour',
  'soak.nativeMBPerHour.error',
  'soak.fileMB.first',
  'soak.fileMB.last',
  'soak.fileMBPerHour',
  'soak.fileMBPerHour.error',
  'soak.anonymousMBPerHour',
  'soak.anonymousMBPerHour.error',
  'soak.anonymousMBPerHour.effectiveSamples',
  'soak.peakMallocedMB.first',
  'soak.peakMallocedMB.last',
  'soak.tickP50MsPerHour',
  'soak.tickP99MsPerHour',
];

/** Series measured on the real clock (see REAL_CLOCK_FIGURES). */
export const REAL_CLOCK_SERIES: readonly string[] = [
  'serverTickMs.p50',
  'serverTickMs.p99',
  'serverTickMs.max',
];

/** What the metrics read. `serverClients` holds every client the server accepted, even after it left. */
export interface SimSources {
  readonly server: GameServer<ArenaPlayerState, ArenaWorld>;
  readonly serverClients: readonly ServerClient<ArenaPlayerState>[];
  /** Every bot's client as read at `nowMs` (the end of the bucket just run). */
  readonly clients: (nowMs: number) => readonly ClientSummary[];
  /** Each bot's network profile (null: none), in the order of `clients`. */
  readonly profiles: readonly (NetworkProfile | null)[];
  readonly ledger: ArenaShotLedger;
  readonly rules: ArenaRules | null;
  readonly tickTimes: Samples;
}

/**
 * Rays of the deciding mode whose verdicts differ, by what became of the command's named view
 * (in the order of VIEW_OUTCOME_NAMES: the rule's verdicts, then the server's own refusals).
 */
export const DISAGREEMENT_FIGURES: readonly string[] = [
  'disagreements.honoured',
  'disagreements.noView',
  'disagreements.notReceived',
  'disagreements.olderThanDelay',
  'disagreements.beyondUnlag',
  'disagreements.framesNotSent',
  'disagreements.pastUnlagServerTime',
];

/** Cumulative counters at one moment. */
interface Totals {
  bytesDown: number;
  bytesUp: number;
  framesSent: number;
  choked: number;
  corrections: number;
  visibleCorrections: number;
  correctionUnits: number;
  interpolated: number;
  extrapolated: number;
  held: number;
  compared: Record<LagCompensationMode, number>;
  agreed: Record<LagCompensationMode, number>;
  kills: number;
  aroundCorner: number;
}

function createTotals(): Totals {
  return {
    bytesDown: 0,
    bytesUp: 0,
    framesSent: 0,
    choked: 0,
    corrections: 0,
    visibleCorrections: 0,
    correctionUnits: 0,
    interpolated: 0,
    extrapolated: 0,
    held: 0,
    compared: { exact: 0, estimate: 0, off: 0 },
    agreed: { exact: 0, estimate: 0, off: 0 },
    kills: 0,
    aroundCorner: 0,
  };
}

function share(part: number, whole: number): Figure {
  return whole > 0 ? part / whole : null;
}

/**
 * A connection's rate control starts low (8,000 B/s) and climbs 50 % a second until the link
 * shows a queue: frames it holds back meanwhile are the start's, not the link's (choke.steadyShare
 * leaves out the buckets that begin before this).
 */
export const RATE_STARTUP_MS = 5000;

/** The first seconds of a run, while the clients connect and fill their view, are not steady. */
export const STEADY_AFTER_MS = 2000;
/** After an outage (a profile event) ends, the view gets this long to recover before it is steady again. */
export const OUTAGE_RECOVERY_MS = 1000;

/**
 * Whether the time [fromMs, toMs) is steady for a client on `profile`: past the start, and clear of
 * every outage (each of the profile's events, and OUTAGE_RECOVERY_MS after it).
 */
export function steadyBetween(profile: NetworkProfile | null, fromMs: number, toMs: number): boolean {
  if (fromMs < STEADY_AFTER_MS) return false;
  if (profile === null) return true;
  for (const e of profile.events) {
    if (fromMs < e.atMs + e.durationMs + OUTAGE_RECOVERY_MS && toMs > e.atMs) return false;
  }
  return true;
}

/** Names of the series, in the order the JSON lists them. */
export const SERIES_NAMES = [
  't',
  'bytesPerClientPerSecond.down',
  'bytesPerClientPerSecond.up',
  'prediction.correctionsPerMinute',
  'hitAgreement.exact',
  'hitAgreement.estimate',
  'hitAgreement.off',
  'hitAgreement.exact.cumulative',
  'hitAgreement.estimate.cumulative',
  'hitAgreement.off.cumulative',
  'view.extrapolatedShare',
  'view.heldShare',
  'choke.share',
  'kills',
  'shots.aroundCorner',
  'serverTickMs.p50',
  'serverTickMs.p99',
  'serverTickMs.max',
] as const;

export type SeriesName = (typeof SERIES_NAMES)[number];

/**
 * Collects a run's measurements: call `sample` at the end of every bucket (simulated time, or
 * real time over UDP), then `figures`.
 */
export class SimMetrics {
  /**
   * Every series' values, one per bucket, in storage made once for the run's buckets (NaN stands
   * for null): a long run or a soak adds nothing to the heap as it goes, so the soak's memory
   * slope measures the server and the clients, not the harness's own record.
   */
  private readonly store: Record<SeriesName, Float64Array>;
  private buckets = 0;
  private readonly previous = createTotals();
  private readonly current = createTotals();
  private bucketFirstTick = 0;
  private lastSampleMs = 0;
  /** Server-side round trips sampled once a second after the first 10 s (the link settled). */
  private rttSum = 0;
  private rttCount = 0;
  /** Frames held back and frames due after the rate control's start (RATE_STARTUP_MS). */
  private steadyChoked = 0;
  private steadyFrames = 0;
  /**
   * The bots' link queues (packets, wait ms; down, then up), summed over the bots: when the round
   * trip began to be sampled (10 s), and at the last sample.
   */
  private readonly queueFrom = new Float64Array(4);
  private readonly queueAt = new Float64Array(4);
  private queueFromSet = false;
  private rttMax = 0;
  /** How far in the past remote players were drawn (server present minus the view), sampled. */
  private viewAgeSum = 0;
  private viewAgeCount = 0;
  /** Frames each client drew by then, interpolated + extrapolated + held, and guessed (the latter two). */
  private readonly drawnBefore: Float64Array;
  private readonly guessedBefore: Float64Array;
  /** Frames drawn, and of those guessed, in steady time (steadyBetween). */
  private steadyDrawn = 0;
  private steadyGuessed = 0;

  /**
   * Sets one series' value of the bucket being closed (`sample`). Made once, not a closure for
   * each bucket (see the runner's `take`).
   */
  private readonly put = (name: SeriesName, value: Figure): void => {
    this.store[name][this.buckets] = value === null ? Number.NaN : value;
  };

  /** `capacity`: how many buckets the run has (`sample` is called at most that many times). */
  constructor(
    private readonly sources: SimSources,
    private readonly capacity: number,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(
        `SimMetrics: capacity must be a whole number of buckets, at least 1 (got ${capacity})`,
      );
    }
    this.store = Object.fromEntries(
      // Written through now (NaN: not sampled yet) so that their pages are the process's from the
      // start rather than one by one as the buckets fill (Samples, tools/stats.ts, says why).
      SERIES_NAMES.map((name) => [name, new Float64Array(capacity).fill(Number.NaN)]),
    ) as unknown as Record<SeriesName, Float64Array>;
    this.drawnBefore = new Float64Array(sources.profiles.length);
    this.guessedBefore = new Float64Array(sources.profiles.length);
  }

  /** Every series as plain arrays, one value per bucket sampled so far (for the report and the chart). */
  series(): Record<SeriesName, Figure[]> {
    const out = {} as Record<SeriesName, Figure[]>;
    for (const name of SERIES_NAMES) {
      const values: Figure[] = [];
      const column = this.store[name];
      for (let i = 0; i < this.buckets; i++) values.push(Number.isNaN(column[i]) ? null : column[i]);
      out[name] = values;
    }
    return out;
  }

  /** The newest bucket's value of one series; null before the first bucket or where it has none. */
  latest(name: SeriesName): Figure {
    if (this.buckets === 0) return null;
    const v = this.store[name][this.buckets - 1];
    return Number.isNaN(v) ? null : v;
  }

  /** Closes the bucket that ends at `nowMs` (ms since the start): sets one value of every series. */
  sample(nowMs: number): void {
    if (this.buckets >= this.capacity) {
      throw new RangeError(`SimMetrics: more than the ${this.capacity} buckets it was made for`);
    }
    const server = this.sources.server;
    const tickMs = server.tickIntervalMs;
    const clients = this.sources.clients(nowMs);
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      const drawn = c.interpolated + c.extrapolated + c.held;
      const guessed = c.extrapolated + c.held;
      if (steadyBetween(this.sources.profiles[i] ?? null, this.lastSampleMs, nowMs)) {
        this.steadyDrawn += drawn - this.drawnBefore[i];
        this.steadyGuessed += guessed - this.guessedBefore[i];
      }
      this.drawnBefore[i] = drawn;
      this.guessedBefore[i] = guessed;
      if (c.viewServerMs === null) continue;
      // The server's present when the client last drew (its ticks run on the same clock), minus
      // the server time the client drew remote players at.
      const present = server.tick * tickMs + (c.drawnAtMs - server.newestTickAtMs);
      this.viewAgeSum += present - c.viewServerMs;
      this.viewAgeCount++;
    }
    this.queueAt.fill(0);
    for (const c of clients) {
      this.queueAt[0] += c.queuedDown;
      this.queueAt[1] += c.queueWaitDownMs;
      this.queueAt[2] += c.queuedUp;
      this.queueAt[3] += c.queueWaitUpMs;
    }
    if (nowMs >= 10_000 && !this.queueFromSet) {
      this.queueFrom.set(this.queueAt);
      this.queueFromSet = true;
    }
    if (nowMs >= 10_000) {
      for (const sc of this.sources.serverClients) {
        const rtt = sc.channel.stats.rttMs;
        this.rttSum += rtt;
        this.rttCount++;
        if (rtt > this.rttMax) this.rttMax = rtt;
      }
    }
    const cur = this.current;
    const prev = this.previous;
    this.read(cur, clients);
    const seconds = (nowMs - this.lastSampleMs) / 1000;
    const n = Math.max(1, clients.length);
    const push = this.put;
    push('t', nowMs / 1000);
    push('bytesPerClientPerSecond.down', (cur.bytesDown - prev.bytesDown) / n / seconds);
    push('bytesPerClientPerSecond.up', (cur.bytesUp - prev.bytesUp) / n / seconds);
    push('prediction.correctionsPerMinute', (cur.corrections - prev.corrections) / n / (seconds / 60));
    for (const mode of LAG_COMPENSATION_MODES) {
      push(
        `hitAgreement.${mode}`,
        share(cur.agreed[mode] - prev.agreed[mode], cur.compared[mode] - prev.compared[mode]),
      );
      push(`hitAgreement.${mode}.cumulative`, share(cur.agreed[mode], cur.compared[mode]));
    }
    const drawn =
      cur.interpolated + cur.extrapolated + cur.held - (prev.interpolated + prev.extrapolated + prev.held);
    push('view.extrapolatedShare', share(cur.extrapolated - prev.extrapolated, drawn));
    push('view.heldShare', share(cur.held - prev.held, drawn));
    const choked = cur.choked - prev.choked;
    push('choke.share', share(choked, choked + cur.framesSent - prev.framesSent));
    if (this.lastSampleMs >= RATE_STARTUP_MS) {
      this.steadyChoked += choked;
      this.steadyFrames += choked + cur.framesSent - prev.framesSent;
    }
    push('kills', cur.kills - prev.kills);
    push('shots.aroundCorner', cur.aroundCorner - prev.aroundCorner);
    const bucket = this.sources.tickTimes.sorted(this.bucketFirstTick);
    push('serverTickMs.p50', percentile(bucket, 0.5));
    push('serverTickMs.p99', percentile(bucket, 0.99));
    push('serverTickMs.max', bucket.length > 0 ? bucket[bucket.length - 1] : null);
    this.bucketFirstTick = this.sources.tickTimes.count;
    this.lastSampleMs = nowMs;
    this.buckets++;
    copyTotals(prev, cur);
  }

  /**
   * Every figure of the run by plain name, but wallClockSeconds (the caller's); `seconds` is how
   * long it ran (simulated over memory).
   */
  figures(seconds: number): Record<string, Figure> {
    const { server, serverClients, ledger, rules } = this.sources;
    const clients = this.sources.clients(seconds * 1000);
    const t = this.current;
    this.read(t, clients);
    const n = clients.length;
    let maxCorrection = 0;
    let maxVisible = 0;
    let snaps = 0;
    let connected = 0;
    for (const c of clients) {
      if (c.maxCorrectionUnits > maxCorrection) maxCorrection = c.maxCorrectionUnits;
      if (c.maxVisibleErrorUnits > maxVisible) maxVisible = c.maxVisibleErrorUnits;
      snaps += c.snaps;
      if (c.connected) connected++;
    }
    let executed = 0;
    let lost = 0;
    let overBudget = 0;
    let late = 0;
    let filled = 0;
    for (const sc of serverClients) {
      executed += sc.commandStats.executed;
      lost += sc.commandStats.lost;
      late += sc.commandStats.late;
      filled += sc.commandStats.filled;
      overBudget += sc.commandStats.overBudget;
    }
    const decisive = server.lagCompensation?.config.mode ?? 'exact';
    const f: Record<string, Figure> = {
      bots: n,
      simulatedSeconds: seconds,
    };
    for (const mode of LAG_COMPENSATION_MODES) {
      const a = ledger.agreement(mode);
      f[`hitAgreement.${mode}`] = share(a.agreed, a.compared);
      f[`hitAgreement.${mode}.compared`] = a.compared;
      f[`hitAgreement.${mode}.agreed`] = a.agreed;
      f[`hitAgreement.${mode}.uncompensated`] = a.uncompensated;
      f[`hitAgreement.${mode}.uncompensatedDiffering`] = a.uncompensatedDiffering;
    }
    for (let o = 0; o < DISAGREEMENT_FIGURES.length; o++) {
      f[DISAGREEMENT_FIGURES[o]] = ledger.disagreedByOutcome[o];
    }
    const decided = ledger.agreement(decisive);
    f['shots.uncompensatedShare'] = share(decided.uncompensated, decided.compared);
    f['shots.uncompensatedDifferingShare'] = share(decided.uncompensatedDiffering, decided.compared);
    f['shots.rays'] = ledger.rays(decisive);
    f['shots.clientHits'] = ledger.clientHits();
    f['shots.serverHits'] = ledger.decisiveHits;
    f['shots.aroundCorner'] = ledger.aroundCorner;
    f['shots.aroundCornerShare'] = share(ledger.aroundCorner, ledger.decisiveHits);
    f['shots.mispredictedCommands'] = ledger.mispredictedCommands;
    f['shots.unjudged'] = ledger.unjudgedShots;
    f['shots.unjudgedHitsShown'] = ledger.unjudgedHitsShown;
    f.kills = rules?.kills ?? 0;
    f.damage = rules?.damageDealt ?? 0;
    f['prediction.corrections'] = t.corrections;
    f['prediction.correctionsPerMinute'] = n > 0 && seconds > 0 ? t.corrections / n / (seconds / 60) : null;
    f['prediction.visibleCorrectionsPerMinute'] =
      n > 0 && seconds > 0 ? t.visibleCorrections / n / (seconds / 60) : null;
    f['prediction.meanCorrectionUnits'] = share(t.correctionUnits, t.corrections);
    f['prediction.maxCorrectionUnits'] = maxCorrection;
    f['prediction.maxVisibleErrorUnits'] = maxVisible;
    f['prediction.snaps'] = snaps;
    f['bytesPerClientPerSecond.down'] = n > 0 && seconds > 0 ? t.bytesDown / n / seconds : null;
    f['bytesPerClientPerSecond.up'] = n > 0 && seconds > 0 ? t.bytesUp / n / seconds : null;
    f['choke.share'] = share(t.choked, t.choked + t.framesSent);
    f['choke.frames'] = t.choked;
    f['choke.steadyShare'] = share(this.steadyChoked, this.steadyFrames);
    f['view.meanAgeMs'] = share(this.viewAgeSum, this.viewAgeCount);
    f['rtt.meanMs'] = share(this.rttSum, this.rttCount);
    f['rtt.maxMs'] = this.rttCount > 0 ? this.rttMax : null;
    // The time packets waited in the links' bandwidth queues after 10 s, mean per packet each way:
    // their sum is what queues added to the round trip, the rest is the path's own.
    const q = this.queueAt;
    const q0 = this.queueFromSet ? this.queueFrom : q;
    const down = share(q[1] - q0[1], q[0] - q0[0]);
    const up = share(q[3] - q0[3], q[2] - q0[2]);
    f['rtt.queueDownMs'] = down;
    f['rtt.queueUpMs'] = up;
    f['rtt.queueMs'] = down === null && up === null ? null : (down ?? 0) + (up ?? 0);
    let base = 0;
    let rate = 0;
    let controlled = 0;
    for (const sc of serverClients) {
      const control = sc.pacing.control;
      if (control === null || !Number.isFinite(control.baseRttMs)) continue;
      base += control.baseRttMs;
      rate += sc.pacing.effectiveRate;
      controlled++;
    }
    f['rtt.baseMs'] = share(base, controlled);
    f['rate.downBytesPerSecond'] = share(rate, controlled);
    f['snapshots.sent'] = t.framesSent;
    const drawn = t.interpolated + t.extrapolated + t.held;
    f['view.interpolatedShare'] = share(t.interpolated, drawn);
    f['view.extrapolatedShare'] = share(t.extrapolated, drawn);
    f['view.heldShare'] = share(t.held, drawn);
    f['view.steadyGuessedShare'] = share(this.steadyGuessed, this.steadyDrawn);
    f['commands.executed'] = executed;
    f['commands.lost'] = lost;
    f['commands.late'] = late;
    f['commands.filled'] = filled;
    f['commands.overBudget'] = overBudget;
    const lag = server.lagCompensation?.stats;
    f['lagCompensation.exactViews'] = lag?.exactViews ?? 0;
    f['lagCompensation.viewsRefused'] = lag?.viewsRefused ?? 0;
    f['lagCompensation.viewsRefusedByRule'] = lag?.viewsRefusedByRule ?? 0;
    f['lagCompensation.viewsNotSent'] = lag?.viewsNotSent ?? 0;
    f['lagCompensation.viewsPastUnlag'] = lag?.viewsPastUnlag ?? 0;
    f['lagCompensation.newestRaised'] = lag?.newestRaised ?? 0;
    f['lagCompensation.tooOld'] = lag?.tooOld ?? 0;
    f['clients.connectedAtEnd'] = connected;
    f['server.ticks'] = server.stats.ticks;
    f['server.ticksSkipped'] = server.stats.ticksSkipped;
    f['server.framesSpread'] = server.stats.framesSpread;
    const cache = server.snapshotCache.stats;
    f['snapshotCache.encoded'] = cache.encoded;
    f['snapshotCache.reused'] = cache.reused;
    f['snapshotCache.uncached'] = cache.uncached;
    f['snapshotCache.reusedShare'] = share(cache.reused, cache.encoded + cache.reused + cache.uncached);
    const sorted = this.sources.tickTimes.sorted(0);
    let sum = 0;
    for (let i = 0; i < sorted.length; i++) sum += sorted[i];
    f['serverTickMs.p50'] = percentile(sorted, 0.5);
    f['serverTickMs.p99'] = percentile(sorted, 0.99);
    f['serverTickMs.max'] = sorted.length > 0 ? sorted[sorted.length - 1] : null;
    f['serverTickMs.mean'] = sorted.length > 0 ? sum / sorted.length : null;
    return f;
  }

  private read(into: Totals, clients: readonly ClientSummary[]): void {
    const { serverClients, ledger, rules } = this.sources;
    into.bytesDown = 0;
    into.bytesUp = 0;
    into.framesSent = 0;
    into.choked = 0;
    for (const sc of serverClients) {
      into.bytesDown += sc.channel.stats.bytesSent;
      into.bytesUp += sc.channel.stats.bytesReceived;
      into.framesSent += sc.framesSent;
      into.choked += sc.choked;
    }
    into.corrections = 0;
    into.visibleCorrections = 0;
    into.correctionUnits = 0;
    into.interpolated = 0;
    into.extrapolated = 0;
    into.held = 0;
    for (const c of clients) {
      into.corrections += c.corrections;
      into.visibleCorrections += c.visibleCorrections;
      into.correctionUnits += c.correctionUnits;
      into.interpolated += c.interpolated;
      into.extrapolated += c.extrapolated;
      into.held += c.held;
    }
    for (const mode of LAG_COMPENSATION_MODES) {
      const a = ledger.agreement(mode);
      into.compared[mode] = a.compared;
      into.agreed[mode] = a.agreed;
    }
    into.kills = rules?.kills ?? 0;
    into.aroundCorner = ledger.aroundCorner;
  }
}

function copyTotals(to: Totals, from: Totals): void {
  to.bytesDown = from.bytesDown;
  to.bytesUp = from.bytesUp;
  to.framesSent = from.framesSent;
  to.choked = from.choked;
  to.corrections = from.corrections;
  to.visibleCorrections = from.visibleCorrections;
  to.correctionUnits = from.correctionUnits;
  to.interpolated = from.interpolated;
  to.extrapolated = from.extrapolated;
  to.held = from.held;
  for (const mode of LAG_COMPENSATION_MODES) {
    to.compared[mode] = from.compared[mode];
    to.agreed[mode] = from.agreed[mode];
  }
  to.kills = from.kills;
  to.aroundCorner = from.aroundCorner;
}
