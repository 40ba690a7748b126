// The shot ledger, for any game with hit-scan weapons: every ray's verdict as the shooter's client
// saw it (its first prediction of the command, against the players as it drew them) and as the
// server judged it (lag compensated, in the configured mode and, on request, in the others),
// compared as soon as the server runs the command and kept as totals, so a game measures its own
// hit agreement in its tests and in soaks of any length.

import type { ClientHooks, GameClient } from '../client/client.ts';
import type { WireEvent } from '../protocol/frames.ts';
import { createWireEvent } from '../protocol/frames.ts';
import type { EventCapture } from '../server/events.ts';
import type { ServerHooks } from '../server/hooks.ts';
import { type LagCompensationMode, VIEW_OUTCOME_NAMES } from '../server/lag-compensation.ts';
import type { ServerClient } from '../server/server.ts';
import type { GameDefinition } from '../sim/game.ts';

/** One ray's verdict, read from an event: which ray of its command, and what it hit. */
export interface RayVerdict {
  /** The ray's number within its command (0 for a single bullet; the pellet for a shotgun). */
  ray: number;
  /** What the ray hit: a number >= 0 the game chooses (entity and hitbox, say), or -1 for nothing. */
  verdict: number;
}

/**
 * How a game's events state its rays' verdicts: `read` fills `out` and returns true when `event`
 * is one ray's verdict (a hit, a miss, a wall), false for any other event. The same events the
 * shared weapon code emits on both sides, so client and server verdicts are read alike.
 */
export type ReadRayVerdict = (event: WireEvent, out: RayVerdict) => boolean;

export interface ShotLedgerOptions<P> {
  /**
   * Lag compensation modes to judge every shot in besides the server's own (each with
   * `GameServer.judgeShot`, which changes nothing): to compare modes on the same shots.
   */
  alsoJudge: readonly LagCompensationMode[];
  /**
   * True when the shooter's state after the command, as its client predicted it, is the state
   * the server reached: only then were both verdicts judged from the same place. Defaults to the
   * game's `player.equals`; a game whose state holds what others change (health) compares the rest.
   */
  samePlace?(predicted: P, server: P): boolean;
}

export interface ShotAgreement {
  /** Rays the server judged whose client verdict is known, from the same shooter state. */
  compared: number;
  /** Of those, rays both sides gave the same verdict, or that the client knew were uncompensated. */
  agreed: number;
  /**
   * Of the compared rays, those of commands whose view the client knew the server would not
   * honour (the view acceptance rule): the client showed no hit and left the verdict to the
   * server's estimate, so they count as agreed whatever the server decided.
   */
  uncompensated: number;
  /**
   * Of the uncompensated rays, those whose server verdict differed from the client's: what
   * counting a view out cost the shooter (it showed no hit where the server, honouring the view
   * after all or judging from its estimate, saw one, or the reverse).
   */
  uncompensatedDiffering: number;
  /** agreed / compared (0 when nothing was compared). */
  share: number;
  /** The compared rays the client saw hit something. */
  clientHits: number;
  /** The compared rays the server saw hit something. */
  serverHits: number;
}

/** Running totals of one lag compensation mode. */
interface ModeTotals {
  /** Rays judged in this mode. */
  rays: number;
  /** Of those, rays the shooter's client saw hit something (its prediction right or wrong). */
  clientHitsJudged: number;
  compared: number;
  agreed: number;
  uncompensated: number;
  uncompensatedDiffering: number;
  clientHits: number;
  serverHits: number;
}

/** A shooting command the client predicted and the server has not run yet. */
interface PendingShot<P> {
  command: number;
  /** Client verdict of ray r at index r (undefined: none). */
  readonly verdicts: number[];
  /** The shooter's state after its first prediction of the command (null until predicted). */
  predicted: P | null;
  /** The client knew the server would not honour the command's view (no hit shown). */
  uncompensated: boolean;
}

/**
 * A client's verdicts on one shooting command, as handed from a ledger whose clients run on
 * another thread (`takePending`) to the server's (`addPending`).
 */
export interface PendingShotRecord<P> {
  slot: number;
  command: number;
  /** Ray r's verdict at index r; null: the client gave none. */
  verdicts: (number | null)[];
  /** The shooter's state after its first prediction of the command (null: not predicted). */
  predicted: P | null;
  uncompensated: boolean;
}

/** Commands a client may have predicted and the server not yet run, per client (then the oldest go). */
const MAX_PENDING_PER_CLIENT = 4096;

/**
 * Compares the verdict of every ray as it is judged and keeps only totals, so its memory does not
 * grow with the length of the match: a client's verdicts wait only until the server runs their
 * command (a command the server never runs is forgotten once a later one runs). Give each client
 * `clientHooks(() => client)` and the server `serverHooks()` (with `combineHooks` beside the
 * game's own), run the match, then read `agreement()`.
 */
export class ShotLedger<P, W> {
  readonly options: ShotLedgerOptions<P>;
  /** The server's own lag compensation mode, once it judged a shot. */
  deciding: LagCompensationMode | null = null;
  /**
   * Commands that shot while the shooter's own prediction was wrong (its state after the command
   * differed from the server's: it had died, respawned or been pushed and did not know yet).
   * Their rays were judged from another place, so `agreement` leaves them out.
   */
  mispredictedCommands = 0;
  /**
   * Shooting commands whose view the client knew the server would not honour, by client slot,
   * and the rays of those commands the client nevertheless showed as hits (it should show none).
   */
  readonly uncompensatedCommands = new Map<number, number>();
  uncompensatedHitsShown = 0;
  /**
   * Shooting commands the client predicted whose rays the server never judged: the command never
   * ran (every copy lost, skipped once a later one ran) or ran filled in for a lost one (which
   * never fires). `agreement` cannot compare them; of their rays, `unjudgedHitsShown` are the ones
   * the shooter's screen showed as hits (a hit seen that the server never knew of; none of a
   * command whose view the client knew would not be honoured).
   */
  unjudgedShots = 0;
  unjudgedHitsShown = 0;
  /**
   * Rays of the deciding mode whose verdicts differ (uncompensated ones aside), by what became of
   * the command's named view (index: ViewOutcome, names in VIEW_OUTCOME_NAMES): a disagreement on
   * an honoured view is a bug; one on a view the server alone refused, something the client could
   * not foresee.
   */
  readonly disagreedByOutcome: number[] = VIEW_OUTCOME_NAMES.map(() => 0);
  /** What became of the named view of the command being run, in the deciding mode (-1: no shot). */
  private judgedOutcome = -1;
  private readonly totals = new Map<LagCompensationMode, ModeTotals>();
  /** Per client slot, its predicted shooting commands in the order it made them. */
  private readonly pending = new Map<number, PendingShot<P>[]>();
  /** The server's verdicts of the command being run, by mode: ray r's at index r. */
  private readonly judged = new Map<LagCompensationMode, number[]>();
  private readonly spare: PendingShot<P>[] = [];
  private readonly ray: RayVerdict = { ray: 0, verdict: -1 };
  private readonly event = createWireEvent();

  constructor(
    readonly game: GameDefinition<P, W>,
    private readonly read: ReadRayVerdict,
    options: Partial<ShotLedgerOptions<P>> = {},
  ) {
    this.options = { alsoJudge: [], ...options };
  }

  /** Hooks for one client: its first prediction of each command is its verdict. */
  clientHooks(getClient: () => GameClient<P, W>): ClientHooks {
    return {
      onEvent: (e: WireEvent, predicted: boolean, command: number) => {
        if (!predicted || !this.read(e, this.ray)) return;
        const shot = this.pendingShot(getClient().slot, command);
        if (shot.predicted === null) shot.verdicts[this.ray.ray] = this.ray.verdict;
      },
      onPredicted: (cmd, state) => {
        // A command that shot: the state it ends in is what the server's run must match.
        const client = getClient();
        const queue = this.pending.get(client.slot);
        const shot = queue === undefined ? undefined : queue[queue.length - 1];
        if (shot === undefined || shot.command !== cmd.sequence || shot.predicted !== null) return;
        shot.uncompensated = !client.lastViewHonoured;
        if (shot.uncompensated) {
          this.uncompensatedCommands.set(client.slot, (this.uncompensatedCommands.get(client.slot) ?? 0) + 1);
          for (const v of shot.verdicts) if (v !== undefined && v >= 0) this.uncompensatedHitsShown++;
        }
        const copy = this.game.player.create();
        this.game.player.copy(copy, state as P);
        shot.predicted = copy;
      },
    };
  }

  /** Server hooks: the verdicts of every shot in the server's mode and in `alsoJudge`. */
  serverHooks(): ServerHooks<P, W> {
    return {
      onCommand: (_server, shooter, cmd) => this.settle(shooter.slot, cmd.sequence, shooter.state),
      beforeShot: (server, shooter, cmd) => {
        const deciding = server.lagCompensation?.config.mode;
        for (const mode of this.options.alsoJudge) {
          if (mode !== deciding) this.record(shooter, mode, server.judgeShot(shooter, cmd, mode));
        }
      },
      onShot: (server, shooter, _cmd, events) => {
        this.deciding = server.lagCompensation?.config.mode ?? 'exact';
        this.judgedOutcome = server.lagCompensation?.report.outcome ?? -1;
        this.record(shooter, this.deciding, events);
      },
    };
  }

  /**
   * For a server that runs elsewhere (another thread or process) and reports its verdicts: the
   * server ran `slot`'s command `command`, judged its rays in `mode` as `rays` (ray r's verdict
   * at index r; undefined for none) and left the shooter in `state`. Compares them with this
   * ledger's client verdicts as `serverHooks` would. Call it in the order the server ran the
   * commands (a client's verdicts on earlier commands not reported are forgotten).
   */
  settleJudged(
    slot: number,
    command: number,
    state: P,
    mode: LagCompensationMode,
    rays: readonly (number | undefined)[],
  ): void {
    let into = this.judged.get(mode);
    if (into === undefined) {
      into = [];
      this.judged.set(mode, into);
    }
    for (let r = 0; r < rays.length; r++) {
      const v = rays[r];
      if (v !== undefined) into[r] = v;
    }
    this.settle(slot, command, state);
  }

  /**
   * For clients that run on another thread than their server: every shot this ledger's client
   * hooks recorded, taken out of it (call it between frames, when every command made was
   * predicted), for the server's ledger's `addPending`.
   */
  takePending(): PendingShotRecord<P>[] {
    const out: PendingShotRecord<P>[] = [];
    for (const [slot, queue] of this.pending) {
      for (const shot of queue) {
        const verdicts: (number | null)[] = [];
        for (let r = 0; r < shot.verdicts.length; r++) verdicts.push(shot.verdicts[r] ?? null);
        out.push({
          slot,
          command: shot.command,
          verdicts,
          predicted: shot.predicted,
          uncompensated: shot.uncompensated,
        });
        shot.predicted = null;
        this.recycle(shot);
      }
      queue.length = 0;
    }
    return out;
  }

  /**
   * The server's side of `takePending`: adds shots another ledger's clients predicted, as its
   * own client hooks would have (call it before the server can run their commands).
   */
  addPending(records: readonly PendingShotRecord<P>[]): void {
    for (const rec of records) {
      const shot = this.pendingShot(rec.slot, rec.command);
      for (let r = 0; r < rec.verdicts.length; r++) {
        const v = rec.verdicts[r];
        if (v !== null) shot.verdicts[r] = v;
      }
      shot.uncompensated = rec.uncompensated;
      if (rec.predicted !== null) {
        const copy = this.game.player.create();
        this.game.player.copy(copy, rec.predicted);
        shot.predicted = copy;
      }
      if (rec.uncompensated && rec.predicted !== null) {
        this.uncompensatedCommands.set(rec.slot, (this.uncompensatedCommands.get(rec.slot) ?? 0) + 1);
        for (const v of rec.verdicts) if (v !== null && v >= 0) this.uncompensatedHitsShown++;
      }
    }
  }

  /** Rays the server judged in `mode` (0 when that mode was not judged). */
  rays(mode: LagCompensationMode): number {
    return this.totalsOf(mode).rays;
  }

  /** Of the rays judged in `mode`, those the shooter's client saw hit something. */
  clientHitsJudged(mode: LagCompensationMode): number {
    return this.totalsOf(mode).clientHitsJudged;
  }

  /** Client verdicts waiting for the server to run their command (bounded; for soak checks). */
  get pendingShots(): number {
    let n = 0;
    for (const q of this.pending.values()) n += q.length;
    return n;
  }

  /**
   * How often the server in `mode` (default: its own) agreed with the clients, over rays both
   * judged from the same shooter state.
   */
  agreement(mode: LagCompensationMode | null = this.deciding): ShotAgreement {
    if (mode === null) {
      return {
        compared: 0,
        agreed: 0,
        uncompensated: 0,
        uncompensatedDiffering: 0,
        share: 0,
        clientHits: 0,
        serverHits: 0,
      };
    }
    const t = this.totalsOf(mode);
    return {
      compared: t.compared,
      agreed: t.agreed,
      uncompensated: t.uncompensated,
      uncompensatedDiffering: t.uncompensatedDiffering,
      share: t.compared > 0 ? t.agreed / t.compared : 0,
      clientHits: t.clientHits,
      serverHits: t.serverHits,
    };
  }

  private totalsOf(mode: LagCompensationMode): ModeTotals {
    let t = this.totals.get(mode);
    if (t === undefined) {
      t = {
        rays: 0,
        clientHitsJudged: 0,
        compared: 0,
        agreed: 0,
        uncompensated: 0,
        uncompensatedDiffering: 0,
        clientHits: 0,
        serverHits: 0,
      };
      this.totals.set(mode, t);
    }
    return t;
  }

  /** The record of `slot`'s command `command`, made when it is the newest. */
  private pendingShot(slot: number, command: number): PendingShot<P> {
    let queue = this.pending.get(slot);
    if (queue === undefined) {
      queue = [];
      this.pending.set(slot, queue);
    }
    const last = queue[queue.length - 1];
    if (last !== undefined && last.command === command) return last;
    if (queue.length >= MAX_PENDING_PER_CLIENT) this.recycle(queue.shift() as PendingShot<P>);
    const shot = this.spare.pop() ?? { command: 0, verdicts: [], predicted: null, uncompensated: false };
    shot.command = command;
    queue.push(shot);
    return shot;
  }

  private recycle(shot: PendingShot<P>): void {
    shot.verdicts.length = 0;
    shot.predicted = null;
    shot.uncompensated = false;
    this.spare.push(shot);
  }

  /** Records one judgement's verdicts of the command being run. */
  private record(shooter: ServerClient<P>, mode: LagCompensationMode, events: EventCapture): void {
    let into = this.judged.get(mode);
    if (into === undefined) {
      into = [];
      this.judged.set(mode, into);
    }
    const e = this.event;
    const ray = this.ray;
    for (let i = 0; i < events.count; i++) {
      e.type = events.type[i];
      e.source = shooter.slot;
      e.p0 = events.p0[i];
      e.p1 = events.p1[i];
      e.p2 = events.p2[i];
      e.p3 = events.p3[i];
      if (this.read(e, ray) && ray.ray >= 0 && ray.ray < 4096) into[ray.ray] = ray.verdict;
    }
  }

  /**
   * The server ran `slot`'s command `command`, leaving the shooter in `state`: compares its
   * verdicts (if it shot) with the client's (if it predicted a shot), adds them to the totals and
   * forgets both, and any older command of this client the server never ran.
   */
  private settle(slot: number, command: number, state: P): void {
    const queue = this.pending.get(slot);
    let shot: PendingShot<P> | undefined;
    if (queue !== undefined) {
      while (queue.length > 0 && queue[0].command < command) {
        const never = queue.shift() as PendingShot<P>;
        this.countUnjudged(never);
        this.recycle(never);
      }
      if (queue.length > 0 && queue[0].command === command) shot = queue.shift();
    }
    let mispredicted = false;
    if (shot !== undefined && shot.predicted !== null) {
      const same = this.options.samePlace ?? this.game.player.equals;
      mispredicted = !same(shot.predicted, state);
      if (mispredicted) this.mispredictedCommands++;
    }
    let judgedAny = false;
    for (const [mode, verdicts] of this.judged) {
      if (verdicts.length === 0) continue;
      judgedAny = true;
      const t = this.totalsOf(mode);
      for (let r = 0; r < verdicts.length; r++) {
        const v = verdicts[r];
        if (v === undefined) continue;
        t.rays++;
        const mine = shot === undefined ? undefined : shot.verdicts[r];
        if (mine !== undefined && mine >= 0) t.clientHitsJudged++;
        if (mine === undefined || mispredicted) continue;
        t.compared++;
        if (shot?.uncompensated) {
          t.uncompensated++;
          t.agreed++;
          if (mine !== v) t.uncompensatedDiffering++;
        } else if (mine === v) t.agreed++;
        else if (mode === this.deciding && this.judgedOutcome >= 0)
          this.disagreedByOutcome[this.judgedOutcome]++;
        if (mine >= 0) t.clientHits++;
        if (v >= 0) t.serverHits++;
      }
      verdicts.length = 0;
    }
    this.judgedOutcome = -1;
    if (shot !== undefined) {
      if (!judgedAny && !mispredicted) this.countUnjudged(shot);
      this.recycle(shot);
    }
  }

  /** Counts a predicted shot the server never judged (unjudgedShots, unjudgedHitsShown). */
  private countUnjudged(shot: PendingShot<P>): void {
    if (shot.predicted === null) return;
    this.unjudgedShots++;
    if (shot.uncompensated) return;
    for (const v of shot.verdicts) if (v !== undefined && v >= 0) this.unjudgedHitsShown++;
  }
}
