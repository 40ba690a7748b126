// Lag compensation (the paper's algorithm): before a command that fires a hit-scan weapon runs,
// the other players are put back exactly where the shooter saw them, and afterwards the present
// is left as it was.
//
// The server never moves the live players: it builds the shooter's view into a table of target
// poses the shared weapon code tests rays against, from the entity history. In the default
// 'exact' mode that view is the one the command names: the two snapshot frames the client was
// interpolating between and the fraction, blended from the very values the client held for each
// player in those frames (with blendEntity, the function the client drew with), so the server
// tests the same boxes the client saw. Whether the named view is honoured is decided by the view
// acceptance rule (src/sim/view-acceptance.ts), which the client runs too, on the command's own
// data: the view, the newest frame the client had received (checked against what it
// acknowledged, GameServer.checkClaimedNewest), its declared delay. Besides the rule, the server
// refuses a view whose frames it did not send or no longer remembers, and, in server time, one
// older than maxUnlagMs plus lateArrivalMs when the command arrived (the client counts on
// maxUnlagMs alone; the allowance covers a command the link delayed after it was sent, which the
// client cannot foresee). A refused view falls back to the estimate. 'estimate' always uses the
// paper's estimate (now - latency - lerp, from the server's own history, never older than
// maxUnlagMs); 'off' tests against the present.

import { decodePosition } from '../protocol/schema.ts';
import type { UserCommand } from '../protocol/usercmd.ts';
import { drawEntity } from '../sim/blend.ts';
import type { HitscanDefinition } from '../sim/game.ts';
import { vec3 } from '../sim/math.ts';
import {
  checkViewAcceptanceLimits,
  DEFAULT_VIEW_ACCEPTANCE_LIMITS,
  judgeView,
  namedViewTick,
  VIEW_HONOURED,
  VIEW_NONE,
  VIEW_VERDICT_NAMES,
  type ViewAcceptanceLimits,
  type ViewVerdict,
} from '../sim/view-acceptance.ts';
import type { EntityStore, HistorySlot } from './entities.ts';
import { NOT_HELD } from './snapshot-cache.ts';
import type { SnapshotWriter } from './snapshot-writer.ts';

export type LagCompensationMode = 'exact' | 'estimate' | 'off';
export const LAG_COMPENSATION_MODES: readonly LagCompensationMode[] = ['exact', 'estimate', 'off'];

/**
 * The view acceptance limits (shared with clients: `maxUnlagMs` also bounds, in server time, how
 * old a world the estimate uses, and with `lateArrivalMs` how old a named view may be), plus the
 * server's own check of the newest frame a command claims.
 */
export interface LagCompensationConfig extends ViewAcceptanceLimits {
  /** How shots are judged: the view the command names, the paper's estimate, or none. */
  mode: LagCompensationMode;
  /**
   * A command may claim a newest frame older than the client acknowledged before making it by at
   * most this much (a frame acknowledged but not decoded); a claim older still is raised to that
   * floor before the rule runs. Also what a client lying about it can gain.
   */
  ackSlackMs: number;
  /**
   * A named view is honoured while its frame A is at most maxUnlagMs plus this older than the
   * tick the command arrived at (ms). The client counts on a view only while it expects frame A
   * within maxUnlagMs on arrival (its clock and round trip); this covers what the link adds after
   * the command was sent, which no client can foresee: a latency spike, a loss burst that took
   * every copy of a shot. A client delaying its commands on purpose (fake lag) can shoot this much
   * further into the past, never more.
   */
  lateArrivalMs: number;
}

export const DEFAULT_LAG_COMPENSATION_CONFIG: LagCompensationConfig = {
  mode: 'exact',
  ...DEFAULT_VIEW_ACCEPTANCE_LIMITS,
  ackSlackMs: 32,
  lateArrivalMs: 1250,
};

export interface LagCompensationStats {
  /** Commands that were judged against a rewound world, by mode. */
  rewinds: number;
  /** Named views honoured exactly. */
  exactViews: number;
  /** Named views refused, for any reason below. */
  viewsRefused: number;
  /** ...by the view acceptance rule (the client knew). */
  viewsRefusedByRule: number;
  /** ...naming frames the server did not send or no longer remembers, or a future newest frame. */
  viewsNotSent: number;
  /** ...older than maxUnlagMs + lateArrivalMs in server time (a slow up-link: the client could not know). */
  viewsPastUnlag: number;
  /** Commands whose claimed newest frame was older than their packet acknowledged, raised. */
  newestRaised: number;
  /** Estimates clamped to maxUnlagMs. */
  tooOld: number;
  /** Commands that named no view (nothing drawn yet). */
  noView: number;
  /**
   * Targets considered (drawn, and near enough the shot for their rewound position to matter: the
   * values of both frames bound it), and those the broad phase kept.
   */
  targetsConsidered: number;
  targetsRewound: number;
}

/**
 * A named view refused by the server alone: frames it did not send or no longer remembers, or
 * values the client held in them that its entity history no longer has.
 */
export const VIEW_FRAMES_NOT_SENT = 5;
/**
 * A named view refused by the server alone: older than maxUnlagMs + lateArrivalMs in server time
 * when the command arrived.
 */
export const VIEW_PAST_UNLAG_SERVER_TIME = 6;
/**
 * What became of a command's named view in 'exact' mode: the view acceptance rule's verdict
 * (VIEW_HONOURED, or the reason the client also knows) or one of the server's own refusals above.
 */
export type ViewOutcome = ViewVerdict | typeof VIEW_FRAMES_NOT_SENT | typeof VIEW_PAST_UNLAG_SERVER_TIME;
export const VIEW_OUTCOME_NAMES: readonly string[] = [
  ...VIEW_VERDICT_NAMES,
  'frames not sent or forgotten',
  'past maxUnlagMs + lateArrivalMs in server time',
];

/** What the last rewind used: for an overlay of the boxes tested (sv_showlagcompensation). */
export interface RewindReport {
  mode: LagCompensationMode;
  /** In 'exact' mode, what became of the named view; VIEW_NONE in the other modes. */
  outcome: ViewOutcome;
  /** The server tick the targets were taken from (fractional). */
  viewTick: number;
  /** Whether the command's named view was honoured exactly. */
  exact: boolean;
  count: number;
  /** Entity indices of the targets, and their values at `values[index * stride]`. */
  readonly entities: Int32Array;
  readonly values: Float64Array;
}

/** One server's lag compensation: shared by all clients (it keeps no per-client state). */
export class LagCompensator<P, W> {
  readonly config: LagCompensationConfig;
  readonly stats: LagCompensationStats = {
    rewinds: 0,
    exactViews: 0,
    viewsRefused: 0,
    viewsRefusedByRule: 0,
    viewsNotSent: 0,
    viewsPastUnlag: 0,
    newestRaised: 0,
    tooOld: 0,
    noView: 0,
    targetsConsidered: 0,
    targetsRewound: 0,
  };
  readonly report: RewindReport;

  private readonly store: EntityStore;
  private readonly hitscan: HitscanDefinition<P, W>;
  private readonly tickIntervalMs: number;
  private readonly stride: number;
  private readonly start = vec3();
  private readonly end = vec3();
  /** The current command's shot (beginTargets): SEG_* below. */
  private readonly seg = new Float64Array(10);
  /** Scratch points of addTarget (two positions). */
  private readonly points = new Float64Array(6);
  /**
   * The named view's players (`heldPlayers[0 .. heldCount)`) and the history slots of the values
   * the client held of each in frames A and B (undefined: not held), found by `findHeld`.
   */
  private readonly heldPlayers: Int32Array;
  /** What the client held in frames A and B, by entity (SnapshotWriter.heldTicks). */
  private readonly heldTicksA: Uint32Array;
  private readonly heldTicksB: Uint32Array;
  private readonly heldSlotsA: (HistorySlot | undefined)[];
  private readonly heldSlotsB: (HistorySlot | undefined)[];
  private heldCount = 0;

  constructor(
    store: EntityStore,
    hitscan: HitscanDefinition<P, W>,
    tickIntervalMs: number,
    config: Partial<LagCompensationConfig> = {},
  ) {
    this.config = { ...DEFAULT_LAG_COMPENSATION_CONFIG, ...config };
    validate(this.config);
    this.store = store;
    this.hitscan = hitscan;
    this.tickIntervalMs = tickIntervalMs;
    this.stride = store.schema.stride;
    this.report = {
      mode: 'off',
      outcome: VIEW_NONE,
      viewTick: 0,
      exact: false,
      count: 0,
      entities: new Int32Array(store.maxEntities),
      values: new Float64Array(store.maxEntities * this.stride),
    };
    this.heldPlayers = new Int32Array(store.maxEntities);
    this.heldTicksA = new Uint32Array(store.maxEntities);
    this.heldTicksB = new Uint32Array(store.maxEntities);
    this.heldSlotsA = new Array(store.maxEntities).fill(undefined);
    this.heldSlotsB = new Array(store.maxEntities).fill(undefined);
  }

  /**
   * Puts into `world` the targets `cmd` is judged against in `mode`, as seen by the shooter whose
   * player is entity `self`, whose snapshots `writer` wrote, with round trip `rttMs` (for the
   * estimate only), at server tick `tick` (the newest committed). The targets are chosen among `players[0 .. playerCount)`
   * (entity indices). `waitedTicks`: ticks the command waited on the server after it arrived (for
   * a missing one before it); no named view older than `maxUnlagMs + lateArrivalMs` before its
   * arrival, and no estimate older than `maxUnlagMs`, is used, so a command held for another's
   * sake is judged as if it had run on arrival. Call `finish(world)`
   * after the command ran.
   */
  rewind(
    mode: LagCompensationMode,
    world: W,
    state: P,
    cmd: UserCommand,
    self: number,
    writer: SnapshotWriter,
    rttMs: number,
    tick: number,
    players: Int32Array,
    playerCount: number,
    waitedTicks = 0,
  ): void {
    const r = this.report;
    const tickMs = this.tickIntervalMs;
    const waited = waitedTicks > 0 ? Math.min(waitedTicks, tick) : 0;
    const arrived = tick - waited;
    const oldest = Math.max(0, arrived - Math.floor(this.config.maxUnlagMs / tickMs));
    const namedUnlagMs = this.config.maxUnlagMs + this.config.lateArrivalMs;
    const oldestNamed = Math.max(0, arrived - Math.floor(namedUnlagMs / tickMs));
    r.mode = mode;
    r.outcome = VIEW_NONE;
    r.exact = false;
    r.count = 0;
    this.stats.rewinds++;
    // The paper's estimate: the shooter saw the world one round trip plus its interpolation
    // delay ago.
    const estimate = tick - (rttMs + cmd.lerpMsec) / tickMs;
    let viewTick = tick;
    if (mode !== 'off') {
      viewTick = estimate;
      if (mode === 'exact') {
        const verdict = judgeView(cmd, tickMs, this.config);
        r.outcome = verdict;
        if (verdict === VIEW_NONE) {
          this.stats.noView++;
        } else if (verdict !== VIEW_HONOURED) {
          this.stats.viewsRefused++;
          this.stats.viewsRefusedByRule++;
        } else if (
          cmd.viewNewest > tick ||
          !writer.hasFrame(cmd.viewTickA) ||
          !writer.hasFrame(cmd.viewTickB)
        ) {
          this.stats.viewsRefused++;
          this.stats.viewsNotSent++;
          r.outcome = VIEW_FRAMES_NOT_SENT;
        } else if (cmd.viewTickA < oldestNamed) {
          this.stats.viewsRefused++;
          this.stats.viewsPastUnlag++;
          r.outcome = VIEW_PAST_UNLAG_SERVER_TIME;
        } else if (!this.findHeld(writer, cmd, self, players, playerCount)) {
          this.stats.viewsRefused++;
          this.stats.viewsNotSent++;
          r.outcome = VIEW_FRAMES_NOT_SENT;
        } else {
          r.exact = true;
          viewTick = namedViewTick(cmd);
        }
      }
      if (!r.exact && viewTick < oldest) {
        viewTick = oldest;
        this.stats.tooOld++;
      }
      if (viewTick > tick) viewTick = tick;
    }
    r.viewTick = viewTick;
    if (r.exact) {
      this.stats.exactViews++;
      this.fromFrames(cmd, state);
    } else {
      this.fromHistory(viewTick, self, state, cmd, players, playerCount);
    }
    this.hitscan.setTargets(world, self, r.count, r.entities, r.values, this.stride);
  }

  /** Clears the targets after the command ran: the present was never touched. */
  finish(world: W, self: number): void {
    this.hitscan.setTargets(world, self, 0, this.report.entities, this.report.values, this.stride);
  }

  /**
   * Finds, for every player but `self`, the history slots of the values the client held in
   * frames A and B (both remembered: rewind checked). False when the entity history no longer
   * has one of them (the snapshot writer sends an entity before its held values get older than
   * the server's maxHeldAgeTicks allows, so only a writer configured otherwise leaves any out).
   */
  private findHeld(
    writer: SnapshotWriter,
    cmd: UserCommand,
    self: number,
    players: Int32Array,
    playerCount: number,
  ): boolean {
    const heldA = this.heldTicksA;
    const heldB = this.heldTicksB;
    writer.heldTicks(cmd.viewTickA, heldA);
    writer.heldTicks(cmd.viewTickB, heldB);
    const store = this.store;
    let n = 0;
    for (let i = 0; i < playerCount; i++) {
      const e = players[i];
      if (e === self) continue;
      const a = heldA[e] === NOT_HELD ? undefined : store.history(heldA[e]);
      const b = heldB[e] === NOT_HELD ? undefined : store.history(heldB[e]);
      if ((a === undefined && heldA[e] !== NOT_HELD) || (b === undefined && heldB[e] !== NOT_HELD)) {
        this.heldCount = 0;
        return false;
      }
      this.heldPlayers[n] = e;
      this.heldSlotsA[n] = a;
      this.heldSlotsB[n] = b;
      n++;
    }
    this.heldCount = n;
    return true;
  }

  /** The named view: each player blended from the values the client held in frames A and B. */
  private fromFrames(cmd: UserCommand, state: P): void {
    this.beginTargets(state, cmd, cmd.viewFraction);
    for (let i = 0; i < this.heldCount; i++) {
      this.addTarget(this.heldPlayers[i], this.heldSlotsA[i], this.heldSlotsB[i]);
    }
  }

  /** The world at fractional tick `viewTick` from the server's own history. */
  private fromHistory(
    viewTick: number,
    self: number,
    state: P,
    cmd: UserCommand,
    players: Int32Array,
    playerCount: number,
  ): void {
    const tickA = Math.floor(viewTick);
    const a = this.store.history(tickA);
    const b = this.store.history(tickA === viewTick ? tickA : tickA + 1);
    if (a === undefined || b === undefined) return;
    this.beginTargets(state, cmd, viewTick - tickA);
    for (let i = 0; i < playerCount; i++) {
      const e = players[i];
      if (e !== self) this.addTarget(e, a, b);
    }
  }

  /**
   * The shot's segment, its reach and the blend fraction, kept in `seg` for every `addTarget` of
   * this command: numbers pass through a typed array, not as arguments or results, so the loop
   * over hundreds of players allocates nothing.
   */
  private beginTargets(state: P, cmd: UserCommand, fraction: number): void {
    const seg = this.seg;
    const reach = this.hitscan.shotSegment(state, cmd, this.start, this.end) + this.hitscan.targetRadius;
    seg[SEG_X] = this.start.x;
    seg[SEG_Y] = this.start.y;
    seg[SEG_Z] = this.start.z;
    seg[SEG_DX] = this.end.x - this.start.x;
    seg[SEG_DY] = this.end.y - this.start.y;
    seg[SEG_DZ] = this.end.z - this.start.z;
    seg[SEG_LEN2] = seg[SEG_DX] * seg[SEG_DX] + seg[SEG_DY] * seg[SEG_DY] + seg[SEG_DZ] * seg[SEG_DZ];
    seg[SEG_REACH] = reach;
    seg[SEG_FRACTION] = fraction;
  }

  /**
   * Blends player `e` between history slots `a` and `b` (either may lack it) at the fraction of
   * `beginTargets`, as the client's view does, and keeps it as a target when the broad phase says
   * the shot can reach.
   */
  private addTarget(e: number, a: HistorySlot | undefined, b: HistorySlot | undefined): void {
    const target = this.hitscan.targetType;
    const inA = a !== undefined && a.alive[e] !== 0 && a.type[e] === target;
    const inB = b !== undefined && b.alive[e] !== 0 && b.type[e] === target;
    if (!inA && !inB) return;
    const stride = this.stride;
    const seg = this.seg;
    const f = seg[SEG_FRACTION];
    const reach = seg[SEG_REACH];
    // The blended position is A's, B's, or on the line from A to B at fraction f (past B when the
    // view extrapolated), so a target whose bounding sphere of that stretch misses the shot's
    // reach cannot be kept: it is not drawn.
    const type = this.store.schema.types[target];
    if (type.positionFields[0] >= 0) {
      const o = e * stride;
      const va = inA ? (a as HistorySlot).values : (b as HistorySlot).values;
      const vb = inB ? (b as HistorySlot).values : va;
      const p = this.points;
      decodePosition(type, va, o, p, 0);
      if (vb === va) {
        p[3] = p[0];
        p[4] = p[1];
        p[5] = p[2];
      } else decodePosition(type, vb, o, p, 3);
      // The blend's span, [min(f, 0), max(f, 1)], written so that a NaN fraction gives [0, 1].
      // biome-ignore lint/complexity/useMathMinMax: Math.min would carry a NaN into the bound
      const lo = f < 0 ? f : 0;
      // biome-ignore lint/complexity/useMathMinMax: as above
      const hi = f > 1 ? f : 1;
      const mid = (lo + hi) * 0.5;
      const half = (hi - lo) * 0.5;
      const dx = p[3] - p[0];
      const dy = p[4] - p[1];
      const dz = p[5] - p[2];
      const bound = reach + half * Math.sqrt(dx * dx + dy * dy + dz * dz) + 1;
      p[0] += dx * mid;
      p[1] += dy * mid;
      p[2] += dz * mid;
      seg[SEG_R2] = bound * bound;
      if (!nearSegment(seg, p, 0)) return;
    }
    const drawn = drawEntity(
      type,
      inA ? (a as HistorySlot).values : null,
      e * stride,
      inA ? (a as HistorySlot).parity[e] : 0,
      inB ? (b as HistorySlot).values : null,
      e * stride,
      inB ? (b as HistorySlot).parity[e] : 0,
      f,
      this.store.schema.teleportDistance,
      this.report.values,
      e * stride,
    );
    // As the client's view drew it (drawEntity is the one rule), or not at all.
    if (!drawn) return;
    this.stats.targetsConsidered++;
    // Broad phase: is the blended position within reach of the shot's segment?
    const position = type.positionFields;
    const v = this.report.values;
    const o = e * stride;
    const p = this.points;
    p[0] = v[o + position[0]];
    p[1] = position[1] < 0 ? 0 : v[o + position[1]];
    p[2] = position[2] < 0 ? 0 : v[o + position[2]];
    seg[SEG_R2] = reach * reach;
    if (!nearSegment(seg, p, 0)) return;
    this.stats.targetsRewound++;
    this.report.entities[this.report.count++] = e;
  }
}

/**
 * `seg` of LagCompensator: the shot's start, its direction (end - start), its squared length,
 * reach, fraction, and the squared distance nearSegment tests.
 */
const SEG_X = 0;
const SEG_Y = 1;
const SEG_Z = 2;
const SEG_DX = 3;
const SEG_DY = 4;
const SEG_DZ = 5;
const SEG_LEN2 = 6;
const SEG_REACH = 7;
const SEG_FRACTION = 8;
/** nearSegment's squared distance, set before each call (a number passed to a call is a heap box). */
const SEG_R2 = 9;

/** True when point `p[at .. at + 3)` is within squared distance `seg[SEG_R2]` of the segment in `seg`. */
function nearSegment(seg: Float64Array, p: Float64Array, at: number): boolean {
  const px = p[at] - seg[SEG_X];
  const py = p[at + 1] - seg[SEG_Y];
  const pz = p[at + 2] - seg[SEG_Z];
  const dx = seg[SEG_DX];
  const dy = seg[SEG_DY];
  const dz = seg[SEG_DZ];
  const len2 = seg[SEG_LEN2];
  let t = len2 > 0 ? (px * dx + py * dy + pz * dz) / len2 : 0;
  if (t < 0) t = 0;
  else if (t > 1) t = 1;
  const cx = px - dx * t;
  const cy = py - dy * t;
  const cz = pz - dz * t;
  return cx * cx + cy * cy + cz * cz <= seg[SEG_R2];
}

function validate(c: LagCompensationConfig): void {
  if (!LAG_COMPENSATION_MODES.includes(c.mode)) {
    throw new RangeError(
      `lagCompensation.mode must be one of ${LAG_COMPENSATION_MODES.join(', ')}, got ${String(c.mode)}`,
    );
  }
  checkViewAcceptanceLimits(c, 'lagCompensation');
  for (const key of ['ackSlackMs', 'lateArrivalMs'] as const) {
    const v = c[key];
    if (!(typeof v === 'number' && v >= 0 && Number.isFinite(v))) {
      throw new RangeError(`lagCompensation.${key} must be a finite number >= 0, got ${String(v)}`);
    }
  }
}
