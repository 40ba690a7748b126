// Per-client command intake on the server: validation, in-order exactly-once execution, and the
// time budget that holds a client to real time (speed hack defence).

import { quantizeAngle } from '../protocol/bitstream.ts';
import {
  CMD_ANGLE_BITS,
  CMD_LERP_MSEC_MAX,
  CMD_MOVE_MAX,
  CMD_MSEC_MAX,
  CMD_MSEC_MIN,
  CMD_VIEW_DELTA_MAX,
  CMD_VIEW_FRACTION_MAX,
  CMD_VIEW_FRACTION_STEPS,
  CMD_VIEW_NEWEST_MAX,
  CommandRing,
  copyUserCommand,
  createUserCommand,
  type UserCommand,
} from '../protocol/usercmd.ts';

export interface CommandBudgetConfig {
  /**
   * How far ahead of real time a client's commands may run. The budget of simulated time a
   * client may spend refills with real time and holds at most this much (or, while a longer
   * command waits, that command's msec, so any command up to CMD_MSEC_MAX can run): over any
   * stretch of time, a client's commands run at most that stretch plus the slack. Covers jitter
   * and the burst after a loss gap; it is also the most a speed hack can gain, at any moment.
   */
  commandSlackMs: number;
  /** Buttons the game defines; a command with any other bit set has those bits cleared. */
  validButtons: number;
  /** The game's highest impulse; a command with a higher one has it cleared (0). */
  maxImpulse: number;
  /**
   * After a stall (a latency spike, a loss burst) a client's commands arrive late and queue up;
   * arriving at the pace of real time, that backlog would never drain, and running it faster
   * than real time would be a bank a cheater could collect. So while commands wait beyond the
   * budget, the oldest are dropped at this share of real time (0.1: a 100 ms backlog in about a
   * second), and whatever waits beyond max(slack, CMD_MSEC_MAX) is dropped at once.
   */
  catchUpRate: number;
  /**
   * How long a missing command is waited for once a newer one has arrived, before it is taken
   * as lost and skipped (ms). Packets overtake each other on a jittery route; the client repeats
   * each command only in a bounded number of packets, so the server cannot tell from a packet's
   * first command that the ones before it will never come. The server has it follow, per client,
   * a target from the measured delay to a first acknowledgement and its deviation
   * (`ChannelStats.ackDelayMs`, late acknowledgements included; `reorderWindowFor`,
   * `CommandQueue.followReorderWindow`); this is the starting value.
   */
  reorderWindowMs: number;
  /**
   * The buttons a player holds down through a stretch of commands (movement: jump, crouch), which
   * a command filled in for a lost one keeps (`fillLostMs`); every other button (attack, reload)
   * and the impulse are cleared, so a filled command never fires or acts. 0: none.
   */
  heldButtons: number;
  /**
   * A command skipped as lost is filled in, as Source runs the last command again for each one
   * dropped: the command before it runs once more in its place (its msec and moves, the
   * `heldButtons` of its buttons, the view angles a step of the way to the next command received),
   * so the player keeps moving on the server as the client predicted instead of standing still
   * for the lost time. At most this much simulated time in a row is filled (ms; 0: none); a
   * filled command spends the time budget like any other.
   */
  fillLostMs: number;
  /**
   * The longest a missing command is waited for once a newer one has arrived while the client is
   * heard (ms; default MAX_REORDER_WINDOW_MS, at least MIN_REORDER_WINDOW_MS): past it the command
   * is skipped (and filled in), unless the client is silent (below).
   */
  maxReorderWindowMs?: number;
  /**
   * Past maxReorderWindowMs, a missing command is still waited for while the client is silent
   * (`clientHearing` false: no acknowledgement of a recent frame arrives), up to this much more
   * (ms; default MAX_SILENT_WAIT_MS, 0 to 10000). A silent client's missing command is in the
   * first packet that gets through after the silence (it sends the oldest ones the server has not
   * acknowledged running in every packet), and skipping it meanwhile runs nothing more than the
   * commands already queued behind it, then waits for the rest all the same: the player gains
   * nothing and its client takes a correction. The moment the client is heard again, the cap
   * applies.
   */
  maxSilentWaitMs?: number;
}

/** Shortest reorder window the server uses, and the longest by default (ms: `maxReorderWindowMs`). */
export const MIN_REORDER_WINDOW_MS = 20;
export const MAX_REORDER_WINDOW_MS = 1500;
/**
 * How much longer than maxReorderWindowMs a missing command is waited for while its client is
 * silent (ms: CommandBudgetConfig.maxSilentWaitMs). Traced on runners on `bursty` (seed 27): the
 * up-link lost every packet for 1.6 s, 28 packets in a row at 19 a second, each carrying the
 * three missing commands; the server skipped them at 1.5 s, 0.15 s before the next packet
 * brought them (three commands lost, a correction).
 */
export const MAX_SILENT_WAIT_MS = 1000;
/** Time the client takes to notice every copy of a command was lost, beyond a round trip (ms). */
const RESEND_MARGIN_MS = 70;
/**
 * How fast the reorder window may come down when its target does (ms a second). After
 * a latency spike the acknowledgements' delay falls back at once, but the packets sent during it
 * are still on their way, overtaken by those sent after: on `spikes` (seed 1, runners, traced)
 * the gaps they left filled up to 656 ms after they were found, and the window had fallen to 516
 * ms within half a second of the spike's end (two commands skipped 15 ms before their copies
 * came, a correction). Falling 250 ms a second, a window of 1.5 s is back to 0.5 s in 4 s.
 */
export const REORDER_WINDOW_FALL_PER_SECOND = 250;

/**
 * The reorder window for a client with round trip `rttMs` deviating by `rttDeviationMs` on
 * average: long enough for packets overtaken by four deviations, and for the client to notice
 * every copy of a command was lost and send it again, twice over (each time within its probe
 * timeout, a round trip and four deviations, as QUIC's: a resend is itself lost in a loss burst
 * as often as the copies were; plus two packet intervals), at least MIN_REORDER_WINDOW_MS, at
 * most MAX_REORDER_WINDOW_MS. On a link turning from a 40 ms to a 400 ms round trip with 80 ms of
 * jitter and 20 % loss (the `flapping` profile) the resends of commands lost as it turned came
 * 1.23 and 1.27 s after the gap was found: a cap of 1000 ms, or four deviations counted once,
 * skipped them (a correction each). Waiting
 * costs the client nothing it will not get back: the commands behind the gap wait with the time
 * budget still filling (up to the slack), and run as soon as it closes; skipping a command the
 * client still resends costs its prediction a correction.
 */
export function reorderWindowFor(
  rttMs: number,
  rttDeviationMs: number,
  maxMs: number = MAX_REORDER_WINDOW_MS,
): number {
  const rtt = Number.isFinite(rttMs) ? Math.max(0, rttMs) : 0;
  const d = Number.isFinite(rttDeviationMs) ? Math.max(0, rttDeviationMs) : 0;
  return Math.min(maxMs, MIN_REORDER_WINDOW_MS + 2 * (rtt + 4 * d) + RESEND_MARGIN_MS);
}

/** Most jitter allowance (ms): a backlog beyond a bundle and this drains whatever the route. */
export const MAX_JITTER_ALLOWANCE_MS = 100;

/**
 * The jitter allowance for a client whose round trip deviates by `rttDeviationMs` on average:
 * twice that (packets early by up to two deviations), at most MAX_JITTER_ALLOWANCE_MS.
 */
export function jitterAllowanceFor(rttDeviationMs: number): number {
  const d = Number.isFinite(rttDeviationMs) ? Math.max(0, rttDeviationMs) : 0;
  return Math.min(MAX_JITTER_ALLOWANCE_MS, 2 * d);
}

export interface CommandStats {
  /** Commands executed. */
  executed: number;
  /** Copies of commands already executed or queued (redundant sends): expected, not an error. */
  duplicates: number;
  /**
   * Commands never received: every packet carrying them lost (or the client never sent them),
   * skipped once the reorder window passed after a newer one arrived.
   */
  lost: number;
  /** Commands that arrived after a newer one (overtaken on the route) and were still run. */
  reordered: number;
  /** Copies that arrived after their command was skipped as lost (a reorder window too short). */
  late: number;
  /** Lost commands filled in with the command before them (`fillLostMs`), and their msec. */
  filled: number;
  filledMs: number;
  /**
   * Commands dropped because they waited beyond the time budget: a client running faster than
   * real time, or the stale backlog after a stall being drained.
   */
  overBudget: number;
  /** Simulated milliseconds executed / dropped for the budget. */
  executedMs: number;
  overBudgetMs: number;
  /**
   * Real time the budget's cap let go while the queue starved, paid back into the budget later
   * (ms): the reserve (CommandQueue.reserveMs).
   */
  repaidMs: number;
  /** Commands with out-of-range fields that were clamped (msec, moves, view). */
  clamped: number;
  /** Commands with buttons or an impulse the game does not define, cleared. */
  invalidInput: number;
  /** Commands too far ahead of the execution point to queue. */
  tooFarAhead: number;
}

const QUEUE_SIZE = 256;
/**
 * The most of one packet's commands that may wait beyond the budget without counting as a
 * backlog to drain: a client sending fewer packets than frames bundles commands (two at 30
 * packets and 60 frames a second), and the later ones wait for the budget the earlier spent.
 */
const MAX_BUNDLE_ALLOWANCE_MS = 50;
/**
 * The most commands one command too far ahead to queue (QUEUE_SIZE or more past the execution
 * point) can have skipped as lost at once.
 */
export const MAX_LOST_PER_CLAIM = QUEUE_SIZE / 2;

/**
 * Queues a client's commands as packets bring them (each packet repeats recent ones) and
 * releases them exactly once, in order, within the time budget. A missing command is waited for
 * up to the reorder window after a newer one arrived, then skipped as lost.
 */
export class CommandQueue {
  readonly config: CommandBudgetConfig;
  readonly stats: CommandStats = {
    executed: 0,
    duplicates: 0,
    lost: 0,
    reordered: 0,
    late: 0,
    filled: 0,
    filledMs: 0,
    overBudget: 0,
    executedMs: 0,
    overBudgetMs: 0,
    repaidMs: 0,
    clamped: 0,
    invalidInput: 0,
    tooFarAhead: 0,
  };
  /** The newest command executed or dropped: everything up to here is done. */
  lastDone = 0;
  /**
   * Milliseconds of simulation the client may still spend. Set in the constructor; this field and
   * reorderWindowMs are declared with a fraction so each is laid out as a double from the start (a
   * field declared bare starts as undefined, and V8 then boxes every fraction stored in it anew).
   */
  budgetMs = 0.5;
  /**
   * How long the command `next()` last returned waited in the queue since its first copy arrived
   * (real time, ms: the ticks' time passed to addRealTime since). Lag compensation bounds a view's
   * age by when the command arrived, not by how long the server held it for a missing one.
   */
  lastWaitMs = 0;

  /** Commands waiting to run (clamped), by number. */
  private readonly pending = new CommandRing(QUEUE_SIZE);
  /**
   * Every command received, as its first copy came (before clamping), by number: the bases the client's
   * runs are encoded against (`serializeCommandRun`). Twice the queue, so a base the client may
   * still name (at most MAX_COMMAND_BASE_GAP before a run) is never overwritten by a command it
   * has not sent yet.
   */
  private readonly received = new CommandRing(2 * QUEUE_SIZE);
  /** What `lookup` last gave. */
  private readonly base = createUserCommand();
  /**
   * `received` as a lookup for the command run decoder (made once): the command comes back in
   * one reused object, valid until the next look-up (the decoder reads one base per run).
   */
  readonly lookup = (sequence: number): UserCommand | undefined => this.received.read(sequence, this.base);
  /** A received command being clamped before it queues. */
  private readonly incoming = createUserCommand();
  /** The command `next()` last returned. */
  private readonly current = createUserCommand();
  /** The last command run (received or filled in), the model of a filled one; valid once `hasLast`. */
  private readonly last = createUserCommand();
  private hasLast = false;
  /** The next command received after a gap, read to aim a filled command's view. */
  private readonly ahead = createUserCommand();
  /** Simulated time filled in since the last command received ran (ms). */
  private filledRunMs = 0;
  /**
   * Real time that passed while the queue had nothing to run (its next command missing) and the
   * budget was full, since the last command received ran (ms, at most fillLostMs): time the
   * budget's cap let go, which filled commands spend before the budget. Filling then leaves the
   * budget where it was, and what the client runs in all stays within real time plus the slack.
   */
  private fillCreditMs = 0;
  /**
   * Real time the budget's cap let go while the queue starved (ms, at most the slack): any wait
   * with the budget full (an honest client's reserve is usually full), and what a stall longer
   * than the budget had room for left over. Paid back into the budget at `catchUpRate` of real time
   * while the budget is below its cap, and counted with it before a backlog is drained (what it
   * will pay for waits instead of being dropped). Without
   * it a stall cost an honest client the part of its slack the stall outlasted, for good: its
   * commands come at the pace of real time, so the budget never refilled, and after a stall as
   * long as the slack every later bundle that came early by more than its allowance was drained
   * (a prediction correction each). What a client runs in all stays within real time plus the
   * slack and this reserve (at most another slack, and that only at catchUpRate).
   */
  reserveMs = 0;
  /** Whether the last `next()` found its next command missing (the queue starved). */
  private starved = false;
  /** Whether the command `next()` last returned was filled in for a lost one. */
  lastFilled = false;
  /** The reorder window in use (ms): see CommandBudgetConfig.reorderWindowMs (a double from the start, as budgetMs). */
  reorderWindowMs = 0.5;
  /**
   * The longest a missing command is waited for while the client is heard (ms):
   * CommandBudgetConfig.maxReorderWindowMs.
   */
  readonly maxReorderWindowMs: number;
  /** ...and how much longer while the client is silent (ms): CommandBudgetConfig.maxSilentWaitMs. */
  readonly maxSilentWaitMs: number;
  /**
   * Whether the client is hearing the server (it acknowledged a recent packet; the server sets it
   * each tick). A client that hears nothing (a loss burst or a stall on the down-link) cannot learn
   * that a command's copies were lost, so the reorder window runs only while it hears; a missing
   * command is still skipped after `maxReorderWindowMs` in all, or `maxSilentWaitMs` more while
   * nothing is heard from the client (its acknowledgements are what is heard: a silent up-link
   * reads the same).
   */
  clientHearing = true;
  /** Newest command number received (a command run's short first number is read near it). */
  newestReceived = 0;
  /**
   * How much more than one arrival's bundle may wait without counting as a backlog to drain (ms):
   * packets arriving early by the route's jitter bring their commands before the budget has
   * refilled for them. The server sets it per client from the deviation of the delay to a first
   * acknowledgement (`ChannelStats.ackDelayVarianceMs`; `jitterAllowanceFor`).
   */
  jitterAllowanceMs = 0;

  /** Newest command seen, capped at lastDone + MAX_LOST_PER_CLAIM + 1 when it arrived. */
  private newestSeen = 0;
  /** Real time received so far (addRealTime), ms: the queue's clock. */
  private clockMs = 0;
  /**
   * A command arrived too far ahead to queue: the missing ones before this number (at most
   * MAX_LOST_PER_CLAIM past where the queue was) are skipped without waiting (0: none).
   */
  private farUntil = 0;
  /** When the command at the head was first found missing with a newer one here (-1: not). */
  private gapSinceMs = -1;
  /** Of the time since, how long the client could hear the server (`clientHearing`). */
  private gapHeardMs = 0;
  /**
   * By number modulo the queue size, two numbers a command (one place in memory): the queue's
   * clock when the pending command's first copy arrived, and the number of the command skipped
   * there as lost (to count late copies).
   */
  private readonly arrivals = new Float64Array(2 * QUEUE_SIZE);
  private queuedMs = 0;
  /** Backlog the drain may drop: grows at catchUpRate while commands wait beyond the budget. */
  private drainMs = 0;
  /** msec of the new commands that arrived at the newest arrival time (one packet's bundle). */
  private bundleMs = 0;
  private bundleAtMs = -1;

  constructor(config: CommandBudgetConfig) {
    if (!(config.commandSlackMs >= 0)) {
      throw new RangeError(`commandSlackMs must be >= 0, got ${config.commandSlackMs}`);
    }
    if (!(config.catchUpRate >= 0 && config.catchUpRate <= 1)) {
      throw new RangeError(`catchUpRate must be in [0, 1], got ${config.catchUpRate}`);
    }
    if (!(config.reorderWindowMs >= 0 && config.reorderWindowMs <= 10_000)) {
      throw new RangeError(`reorderWindowMs must be in [0, 10000], got ${config.reorderWindowMs}`);
    }
    if (!(config.fillLostMs >= 0 && config.fillLostMs <= 10_000)) {
      throw new RangeError(`fillLostMs must be in [0, 10000], got ${config.fillLostMs}`);
    }
    const longest = config.maxReorderWindowMs ?? MAX_REORDER_WINDOW_MS;
    if (!(longest >= MIN_REORDER_WINDOW_MS && longest <= 10_000)) {
      throw new RangeError(
        `maxReorderWindowMs must be in [${MIN_REORDER_WINDOW_MS}, 10000], got ${config.maxReorderWindowMs}`,
      );
    }
    this.maxReorderWindowMs = longest;
    const silent = config.maxSilentWaitMs ?? MAX_SILENT_WAIT_MS;
    if (!(silent >= 0 && silent <= 10_000)) {
      throw new RangeError(`maxSilentWaitMs must be in [0, 10000], got ${config.maxSilentWaitMs}`);
    }
    this.maxSilentWaitMs = silent;
    this.config = config;
    this.reorderWindowMs = config.reorderWindowMs;
    this.budgetMs = config.commandSlackMs;
  }

  /**
   * The reorder window follows `targetMs` (reorderWindowFor, every tick, `elapsedMs` after the
   * last): it rises to a longer target at once and falls by at most
   * REORDER_WINDOW_FALL_PER_SECOND, within [MIN_REORDER_WINDOW_MS, maxReorderWindowMs]. A target
   * or elapsed time that is not a finite number >= 0 is ignored.
   */
  followReorderWindow(targetMs: number, elapsedMs: number): void {
    if (!(targetMs >= 0 && elapsedMs >= 0 && Number.isFinite(targetMs) && Number.isFinite(elapsedMs))) return;
    const fallen = this.reorderWindowMs - (REORDER_WINDOW_FALL_PER_SECOND * elapsedMs) / 1000;
    this.reorderWindowMs = Math.min(
      this.maxReorderWindowMs,
      Math.max(MIN_REORDER_WINDOW_MS, targetMs, fallen),
    );
  }

  /**
   * Takes one received command (already decoded). Commands at or before `lastDone` are
   * duplicates (or late: skipped as lost before they came). A command the queue can hold (up to
   * QUEUE_SIZE - 1 past `lastDone`) queues, and the missing ones before it are waited for like
   * any gap: a client out of a long up-link loss burst sends its newest command with its oldest
   * unacknowledged ones, and the ones between are still to come. A command further ahead is
   * refused, but still shows the ones before it are overdue: they are skipped without waiting (at
   * most MAX_LOST_PER_CLAIM of them: a forged far-ahead number costs its own client that much).
   */
  /** Whether the command numbered `seq` was run, skipped, or is held: a copy of it changes nothing. */
  holds(seq: number): boolean {
    return seq <= this.lastDone || this.pending.has(seq);
  }

  receive(cmd: UserCommand): void {
    const seq = cmd.sequence;
    // A copy of a command already held is the same command (the client repeats what it sent).
    if (!this.received.has(seq)) this.received.put(cmd);
    if (seq > this.newestReceived) this.newestReceived = seq;
    const queues = seq - this.lastDone < QUEUE_SIZE;
    if (seq > this.newestSeen) {
      this.newestSeen = queues ? seq : Math.max(this.newestSeen, this.lastDone + MAX_LOST_PER_CLAIM + 1);
    } else if (seq < this.newestSeen && seq > this.lastDone && !this.pending.has(seq)) {
      this.stats.reordered++;
    }
    if (!queues) {
      // The client is that far on: whatever is missing before it is not waited for.
      this.stats.tooFarAhead++;
      this.farUntil = Math.max(this.farUntil, this.lastDone + MAX_LOST_PER_CLAIM + 1);
      return;
    }
    if (seq <= this.lastDone || this.pending.has(seq)) {
      if (this.wasSkipped(seq)) this.stats.late++;
      else this.stats.duplicates++;
      return;
    }
    const slot = copyUserCommand(this.incoming, cmd);
    this.arrivals[2 * (seq % QUEUE_SIZE)] = this.clockMs;
    if (clearInvalidInput(slot, this.config.validButtons, this.config.maxImpulse)) this.stats.invalidInput++;
    if (sanitize(slot)) this.stats.clamped++;
    this.pending.put(slot);
    this.queuedMs += slot.msec;
    if (this.bundleAtMs !== this.clockMs) {
      this.bundleAtMs = this.clockMs;
      this.bundleMs = 0;
    }
    this.bundleMs += slot.msec;
  }

  /**
   * Builds in `current` the command filled in for lost command `seq` (`fillLostMs`), if the run
   * of filled time allows and it is paid for: from the time the queue starved with the budget
   * full (`fillCreditMs`), then from the budget, as long as that still pays for every command
   * waiting (a filled command never makes one received wait or be dropped). False when `seq` is
   * only skipped. Its view angles move from the last command run toward the next one received, a
   * step per command number.
   */
  private fill(seq: number): boolean {
    const last = this.last;
    const msec = last.msec;
    const fromCredit = Math.min(this.fillCreditMs, msec);
    const fromBudget = msec - fromCredit;
    if (
      !this.hasLast ||
      seq < this.farUntil ||
      this.filledRunMs + msec > this.config.fillLostMs ||
      this.queuedMs + fromBudget > this.budgetMs
    )
      return false;
    const c = copyUserCommand(this.current, last);
    c.sequence = seq;
    c.buttons = last.buttons & this.config.heldButtons;
    c.impulse = 0;
    for (let s = seq + 1; s <= this.newestSeen; s++) {
      const next = this.pending.read(s, this.ahead);
      if (next === undefined) continue;
      const t = (seq - last.sequence) / (s - last.sequence);
      c.pitch = stepAngle(last.pitch, next.pitch, t);
      c.yaw = stepAngle(last.yaw, next.yaw, t);
      c.roll = stepAngle(last.roll, next.roll, t);
      break;
    }
    this.fillCreditMs -= fromCredit;
    // The same overflowed time is the reserve's: spent once.
    this.reserveMs = Math.max(0, this.reserveMs - fromCredit);
    this.budgetMs -= fromBudget;
    this.filledRunMs += msec;
    this.lastWaitMs = 0;
    this.stats.filled++;
    this.stats.filledMs += msec;
    copyUserCommand(last, c);
    this.lastFilled = true;
    return true;
  }

  /** Whether `seq` is one of the commands most recently skipped as lost. */
  private wasSkipped(seq: number): boolean {
    return this.arrivals[2 * (seq % QUEUE_SIZE) + 1] === seq;
  }

  /**
   * Real time passed: the budget grows by it, up to the slack (or up to the msec of a longer
   * command waiting to run); while a backlog waits beyond the budget the drain grows.
   */
  addRealTime(ms: number): void {
    const { commandSlackMs, catchUpRate } = this.config;
    const headMsec = this.pending.msec(this.lastDone + 1);
    const cap = Math.max(headMsec, commandSlackMs);
    const credited = Math.max(0, Math.min(ms, cap - this.budgetMs));
    if (this.starved && credited < ms) {
      this.fillCreditMs = Math.min(this.config.fillLostMs, this.fillCreditMs + ms - credited);
      this.reserveMs = Math.min(commandSlackMs, this.reserveMs + ms - credited);
    }
    this.budgetMs = Math.min(cap, this.budgetMs + ms);
    if (this.reserveMs > 0 && this.budgetMs < cap) {
      const repaid = Math.min(this.reserveMs, ms * catchUpRate, cap - this.budgetMs);
      this.budgetMs += repaid;
      this.reserveMs -= repaid;
      // The fill credit is the same let-go time: what was repaid is not there to spend again.
      this.fillCreditMs = Math.min(this.fillCreditMs, this.reserveMs);
      this.stats.repaidMs += repaid;
    }
    this.clockMs += ms;
    if (this.gapSinceMs >= 0 && this.clientHearing) this.gapHeardMs += ms;
    // Commands that came together in one packet wait for each other's budget: that much (up to
    // MAX_BUNDLE_ALLOWANCE_MS) is not a backlog.
    const allowance = Math.min(this.bundleMs, MAX_BUNDLE_ALLOWANCE_MS) + this.jitterAllowanceMs;
    if (this.queuedMs > this.budgetMs + this.reserveMs + allowance) this.drainMs += ms * catchUpRate;
    else this.drainMs = 0;
  }

  /**
   * The next command to execute, or undefined. A command that would overspend the budget waits;
   * while commands wait, the oldest are dropped as the drain allows, and at once when more than
   * max(slack, CMD_MSEC_MAX) waits (a client running faster than real time, or a stale backlog).
   * Dropped commands are counted; no time is ever lent, and what a client leaves unused is
   * collected later only up to the slack. The command comes in one object the queue reuses: it
   * holds this command until the next call.
   */
  next(): UserCommand | undefined {
    const waitLimit = Math.max(this.config.commandSlackMs, CMD_MSEC_MAX);
    for (;;) {
      const seq = this.lastDone + 1;
      const cmd = this.pending.read(seq, this.current);
      if (cmd === undefined) {
        // Missing: wait while nothing newer is here, or for the reorder window after it was.
        if (seq >= this.newestSeen) {
          this.gapSinceMs = -1;
          this.farUntil = 0;
          this.starved = true;
          return undefined;
        }
        if (this.gapSinceMs < 0) {
          this.gapSinceMs = this.clockMs;
          this.gapHeardMs = 0;
        }
        const waited = this.clockMs - this.gapSinceMs;
        if (
          seq >= this.farUntil &&
          this.gapHeardMs < this.reorderWindowMs &&
          (waited < this.maxReorderWindowMs ||
            (!this.clientHearing && waited < this.maxReorderWindowMs + this.maxSilentWaitMs))
        ) {
          this.starved = true;
          return undefined;
        }
        this.lastDone = seq;
        this.stats.lost++;
        this.arrivals[2 * (seq % QUEUE_SIZE) + 1] = seq;
        if (this.fill(seq)) return this.current;
        continue;
      }
      this.gapSinceMs = -1;
      this.starved = false;
      if (cmd.msec <= this.budgetMs) {
        this.budgetMs -= cmd.msec;
        this.queuedMs -= cmd.msec;
        this.pending.remove(cmd.sequence);
        this.lastDone = cmd.sequence;
        this.lastWaitMs = this.clockMs - this.arrivals[2 * (cmd.sequence % QUEUE_SIZE)];
        this.stats.executed++;
        this.stats.executedMs += cmd.msec;
        copyUserCommand(this.last, cmd);
        this.hasLast = true;
        this.filledRunMs = 0;
        this.fillCreditMs = 0;
        this.lastFilled = false;
        return cmd;
      }
      const waiting = this.queuedMs - this.budgetMs;
      if (waiting <= waitLimit) {
        if (this.drainMs < cmd.msec) return undefined;
        this.drainMs -= cmd.msec;
      }
      this.queuedMs -= cmd.msec;
      this.pending.remove(cmd.sequence);
      this.lastDone = cmd.sequence;
      this.stats.overBudget++;
      this.stats.overBudgetMs += cmd.msec;
    }
  }
}

/** The angle a share `t` of the way from `a` to `b` (degrees, the shorter way round), quantized as a command's. */
function stepAngle(a: number, b: number, t: number): number {
  let d = (b - a) % 360;
  if (d > 180) d -= 360;
  else if (d < -180) d += 360;
  return quantizeAngle(a + d * t, CMD_ANGLE_BITS);
}

/**
 * Clears the buttons and the impulse a game does not define (`GameDefinition.input`); returns
 * true when the command had any.
 */
export function clearInvalidInput(cmd: UserCommand, validButtons: number, maxImpulse: number): boolean {
  let invalid = false;
  if ((cmd.buttons & ~validButtons) !== 0) {
    cmd.buttons &= validButtons;
    invalid = true;
  }
  if (cmd.impulse > maxImpulse) {
    cmd.impulse = 0;
    invalid = true;
  }
  return invalid;
}

/**
 * Clamps a received command to what a legitimate client can send; returns true if anything
 * changed. The decoder already bounds every field to its wire range; this catches values the
 * wire can carry but the engine does not allow. View angle limits (pitch) are the game's: its
 * move function clamps them, identically on both sides.
 */
export function sanitize(cmd: UserCommand): boolean {
  let changed = false;
  if (cmd.msec < CMD_MSEC_MIN || cmd.msec > CMD_MSEC_MAX) {
    cmd.msec = cmd.msec < CMD_MSEC_MIN ? CMD_MSEC_MIN : CMD_MSEC_MAX;
    changed = true;
  }
  // Each field by name, and the fraction's rounding here: a number that crosses a call, or a field
  // read by a key that varies, is a heap box of its own (a server checks a thousand commands a tick).
  const forward = cmd.forwardMove;
  if (forward > CMD_MOVE_MAX || forward < -CMD_MOVE_MAX) {
    cmd.forwardMove = forward > 0 ? CMD_MOVE_MAX : -CMD_MOVE_MAX;
    changed = true;
  }
  const side = cmd.sideMove;
  if (side > CMD_MOVE_MAX || side < -CMD_MOVE_MAX) {
    cmd.sideMove = side > 0 ? CMD_MOVE_MAX : -CMD_MOVE_MAX;
    changed = true;
  }
  const up = cmd.upMove;
  if (up > CMD_MOVE_MAX || up < -CMD_MOVE_MAX) {
    cmd.upMove = up > 0 ? CMD_MOVE_MAX : -CMD_MOVE_MAX;
    changed = true;
  }
  if (cmd.lerpMsec > CMD_LERP_MSEC_MAX) {
    cmd.lerpMsec = CMD_LERP_MSEC_MAX;
    changed = true;
  }
  if (cmd.viewTickB < cmd.viewTickA || cmd.viewTickB - cmd.viewTickA > CMD_VIEW_DELTA_MAX) {
    cmd.viewTickB = cmd.viewTickA;
    changed = true;
  }
  if (cmd.viewNewest < cmd.viewTickB || cmd.viewNewest - cmd.viewTickB > CMD_VIEW_NEWEST_MAX) {
    cmd.viewNewest = cmd.viewTickB;
    changed = true;
  }
  // quantizeViewFraction (usercmd.ts), written out.
  const fraction = cmd.viewFraction;
  let q = Math.round(fraction * CMD_VIEW_FRACTION_STEPS);
  if (!(q > 0)) q = 0;
  if (q > VIEW_FRACTION_MAX_STEPS) q = VIEW_FRACTION_MAX_STEPS;
  if (q / CMD_VIEW_FRACTION_STEPS !== fraction) {
    cmd.viewFraction = q / CMD_VIEW_FRACTION_STEPS;
    changed = true;
  }
  return changed;
}

const VIEW_FRACTION_MAX_STEPS = CMD_VIEW_FRACTION_MAX * CMD_VIEW_FRACTION_STEPS;
