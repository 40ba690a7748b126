// Per-client command intake on the server: validation, in-order exactly-once execution, and the
// time budget that holds a client to real time (speed hack defence).

import {
  CMD_LERP_MSEC_MAX,
  CMD_MOVE_MAX,
  CMD_MSEC_MAX,
  CMD_MSEC_MIN,
  CMD_VIEW_DELTA_MAX,
  CMD_VIEW_NEWEST_MAX,
  copyUserCommand,
  createUserCommand,
  quantizeViewFraction,
  type UserCommand,
} from '../protocol/usercmd.ts';
import { SequenceBuffer } from '../sim/ring.ts';

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
}

export interface CommandStats {
  /** Commands executed. */
  executed: number;
  /** Copies of commands already executed or queued (redundant sends): expected, not an error. */
  duplicates: number;
  /** Commands never received (every packet carrying them lost, or skipped by the client). */
  lost: number;
  /**
   * Commands dropped because they waited beyond the time budget: a client running faster than
   * real time, or the stale backlog after a stall being drained.
   */
  overBudget: number;
  /** Simulated milliseconds executed / dropped for the budget. */
  executedMs: number;
  overBudgetMs: number;
  /** Commands with out-of-range fields that were clamped (msec, moves, view). */
  clamped: number;
  /** Commands with buttons or an impulse the game does not define, cleared. */
  invalidInput: number;
  /** Commands too far ahead of the execution point to queue. */
  tooFarAhead: number;
}

const QUEUE_SIZE = 256;
/** The most commands one packet's claimed start can mark as never coming. */
export const MAX_LOST_PER_CLAIM = QUEUE_SIZE / 2;

/**
 * Queues a client's commands as packets bring them (each packet repeats the unacknowledged
 * ones) and releases them exactly once, in order, within the time budget.
 */
export class CommandQueue {
  readonly config: CommandBudgetConfig;
  readonly stats: CommandStats = {
    executed: 0,
    duplicates: 0,
    lost: 0,
    overBudget: 0,
    executedMs: 0,
    overBudgetMs: 0,
    clamped: 0,
    invalidInput: 0,
    tooFarAhead: 0,
  };
  /** The newest command executed or dropped: everything up to here is done. */
  lastDone = 0;
  /** Milliseconds of simulation the client may still spend. */
  budgetMs: number;

  private readonly pending = new SequenceBuffer<UserCommand>(QUEUE_SIZE, createUserCommand);
  private lostBelow = 0;
  private queuedMs = 0;
  /** Backlog the drain may drop: grows at catchUpRate while commands wait beyond the budget. */
  private drainMs = 0;

  constructor(config: CommandBudgetConfig) {
    if (!(config.commandSlackMs >= 0)) {
      throw new RangeError(`commandSlackMs must be >= 0, got ${config.commandSlackMs}`);
    }
    if (!(config.catchUpRate >= 0 && config.catchUpRate <= 1)) {
      throw new RangeError(`catchUpRate must be in [0, 1], got ${config.catchUpRate}`);
    }
    this.config = config;
    this.budgetMs = config.commandSlackMs;
  }

  /**
   * Takes one received command (already decoded). Commands at or before `lastDone` are
   * duplicates; a command more than half the queue ahead is refused.
   */
  receive(cmd: UserCommand, firstInPacket: boolean): void {
    const seq = cmd.sequence;
    // Each packet starts at the oldest command the client has not seen acknowledged, so any
    // command before it that is not here by now never will be: it is skipped when reached, at
    // most half a queue at a time. A client whose commands ran past the window (sent faster than
    // the server runs them) is carried on that way; a packet claiming a far-ahead start costs at
    // most that half queue (MAX_LOST_PER_CLAIM).
    if (firstInPacket && seq > this.lostBelow)
      this.lostBelow = Math.min(seq, this.lastDone + MAX_LOST_PER_CLAIM + 1);
    if (seq - this.lastDone > QUEUE_SIZE / 2) {
      this.stats.tooFarAhead++;
      return;
    }
    if (seq <= this.lastDone || this.pending.has(seq)) {
      this.stats.duplicates++;
      return;
    }
    const slot = this.pending.insert(seq);
    copyUserCommand(slot, cmd);
    if (clearInvalidInput(slot, this.config.validButtons, this.config.maxImpulse)) this.stats.invalidInput++;
    if (sanitize(slot)) this.stats.clamped++;
    this.queuedMs += slot.msec;
  }

  /**
   * Real time passed: the budget grows by it, up to the slack (or up to the msec of a longer
   * command waiting to run); while a backlog waits beyond the budget the drain grows.
   */
  addRealTime(ms: number): void {
    const { commandSlackMs, catchUpRate } = this.config;
    const head = this.pending.get(this.lastDone + 1);
    const cap = head !== undefined && head.msec > commandSlackMs ? head.msec : commandSlackMs;
    this.budgetMs = Math.min(cap, this.budgetMs + ms);
    if (this.queuedMs > this.budgetMs) this.drainMs += ms * catchUpRate;
    else this.drainMs = 0;
  }

  /**
   * The next command to execute, or undefined. A command that would overspend the budget waits;
   * while commands wait, the oldest are dropped as the drain allows, and at once when more than
   * max(slack, CMD_MSEC_MAX) waits (a client running faster than real time, or a stale backlog).
   * Dropped commands are counted; no time is ever lent, so nothing a client leaves unused can be
   * collected later.
   */
  next(): UserCommand | undefined {
    const waitLimit = Math.max(this.config.commandSlackMs, CMD_MSEC_MAX);
    for (;;) {
      const seq = this.lastDone + 1;
      const cmd = this.pending.get(seq);
      if (cmd === undefined) {
        if (seq >= this.lostBelow) return undefined;
        this.lastDone = seq;
        this.stats.lost++;
        continue;
      }
      if (cmd.msec <= this.budgetMs) {
        this.budgetMs -= cmd.msec;
        this.queuedMs -= cmd.msec;
        this.pending.remove(cmd.sequence);
        this.lastDone = cmd.sequence;
        this.stats.executed++;
        this.stats.executedMs += cmd.msec;
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
  for (const key of MOVE_KEYS) {
    const v = cmd[key];
    if (v > CMD_MOVE_MAX || v < -CMD_MOVE_MAX) {
      cmd[key] = v > 0 ? CMD_MOVE_MAX : -CMD_MOVE_MAX;
      changed = true;
    }
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
  const f = quantizeViewFraction(cmd.viewFraction);
  if (f !== cmd.viewFraction) {
    cmd.viewFraction = f;
    changed = true;
  }
  return changed;
}

const MOVE_KEYS = ['forwardMove', 'sideMove', 'upMove'] as const;
