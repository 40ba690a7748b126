// Client-side prediction of the local player: replay unacknowledged commands from the last
// acknowledged server state through the shared move code, and smooth visible corrections.

import { copyUserCommand, createUserCommand, type UserCommand } from '../protocol/usercmd.ts';
import { type GameEventSink, NO_EVENTS, type PlayerDefinition } from '../sim/game.ts';
import { type Vec3, vec3 } from '../sim/math.ts';
import { SequenceBuffer } from '../sim/ring.ts';

export interface PredictionConfig {
  /** Commands kept for replay (a power of two); older unacknowledged ones cannot be replayed. */
  windowSize: number;
  /** A visible correction is blended out over this long. */
  smoothingMs: number;
  /** A correction moving the player further than this snaps instead of blending. */
  snapDistance: number;
  /**
   * When an acknowledged state equals what this client predicted for that command, the stored
   * predictions after it are what a replay would compute again (the move is deterministic), so
   * `'on-mismatch'` replays only after a correction, as Source's `cl_pred_optimize 2` does;
   * `'always'` replays on every new acknowledgement, the paper's loop as written. A game whose
   * move reads world state that can change between a command's first run and its acknowledgement
   * (a moving platform set from snapshots, say) uses `'always'`.
   */
  replay: 'on-mismatch' | 'always';
}

export const DEFAULT_PREDICTION_CONFIG: PredictionConfig = {
  windowSize: 256,
  smoothingMs: 100,
  snapDistance: 64,
  replay: 'on-mismatch',
};

export interface PredictionStats {
  /**
   * Acknowledged states that differed from what this client had predicted for that command, in
   * any replicated field (health changed by someone else's shot counts too).
   */
  corrections: number;
  /** Replays that moved the drawn player (a correction the player could see). */
  visibleCorrections: number;
  /** Sum of the position errors of those corrections (units). */
  correctionDistanceTotal: number;
  /** Largest position error seen. */
  correctionDistanceMax: number;
  /** Largest correction being blended out: how far the drawn player would have jumped unsmoothed. */
  visibleErrorMax: number;
  /** Corrections too large to blend. */
  snaps: number;
  /** Full replays from an acknowledged state. */
  replays: number;
  /**
   * New acknowledgements that equalled the prediction for their command, so that no replay was
   * needed (`replay: 'on-mismatch'`).
   */
  confirmations: number;
  /** Commands run through the move function in total (first runs and replays). */
  commandsRun: number;
  /** Acknowledgements ignored: older than the current one, or naming a command never sent. */
  staleAcks: number;
}

/**
 * The paper's prediction loop for one local player. Usage per frame: `addCommand` for the
 * command made this frame (its effects play now, the only time they do), `acknowledge` for each
 * server state received, then `predict` before rendering, and `renderOrigin` for where to draw.
 */
export class Predictor<P, W> {
  readonly config: PredictionConfig;
  readonly stats: PredictionStats = {
    corrections: 0,
    visibleCorrections: 0,
    correctionDistanceTotal: 0,
    correctionDistanceMax: 0,
    visibleErrorMax: 0,
    snaps: 0,
    replays: 0,
    confirmations: 0,
    commandsRun: 0,
    staleAcks: 0,
  };
  /** The predicted state after the newest command: what the client renders. */
  readonly current: P;
  /** The last state the server acknowledged, and the command it ran last. */
  readonly acked: P;
  ackedSequence = 0;
  /** Newest command added. */
  newestSequence = 0;

  private readonly player: PlayerDefinition<P, W>;
  private readonly world: W;
  private readonly commands: SequenceBuffer<UserCommand>;
  /** The sliding window of intermediate results: predicted state after each command. */
  private readonly states: SequenceBuffer<P>;
  private dirty = false;
  private hasAck = false;
  private readonly before = vec3();
  private readonly after = vec3();
  private readonly scratchA = vec3();
  private readonly scratchB = vec3();
  private readonly errorStart = vec3();
  private errorStartMs = 0;

  constructor(player: PlayerDefinition<P, W>, world: W, config: Partial<PredictionConfig> = {}) {
    this.config = { ...DEFAULT_PREDICTION_CONFIG, ...config };
    const { windowSize, smoothingMs, snapDistance, replay } = this.config;
    if (!Number.isInteger(windowSize) || windowSize < 2 || (windowSize & (windowSize - 1)) !== 0) {
      throw new RangeError(`prediction.windowSize must be a power of two >= 2, got ${windowSize}`);
    }
    if (!(smoothingMs >= 0)) throw new RangeError(`prediction.smoothingMs must be >= 0, got ${smoothingMs}`);
    if (!(snapDistance >= 0))
      throw new RangeError(`prediction.snapDistance must be >= 0, got ${snapDistance}`);
    if (replay !== 'on-mismatch' && replay !== 'always')
      throw new RangeError(`prediction.replay must be 'on-mismatch' or 'always', got ${String(replay)}`);
    this.player = player;
    this.world = world;
    this.current = player.create();
    this.acked = player.create();
    this.commands = new SequenceBuffer(windowSize, createUserCommand);
    this.states = new SequenceBuffer(windowSize, () => player.create());
  }

  /** Starts over from a state the server gave (spawn, full reset). */
  reset(state: P, ackedSequence: number): void {
    this.player.copy(this.acked, state);
    this.player.copy(this.current, state);
    this.ackedSequence = ackedSequence;
    this.newestSequence = ackedSequence;
    this.hasAck = true;
    this.dirty = false;
    this.commands.clear();
    this.states.clear();
    this.errorStart.x = this.errorStart.y = this.errorStart.z = 0;
  }

  /** Unacknowledged commands currently held (newest - acked). */
  get pendingCount(): number {
    return this.newestSequence - this.ackedSequence;
  }

  /** The stored command `sequence`, if still in the window. */
  command(sequence: number): UserCommand | undefined {
    return this.commands.get(sequence);
  }

  /**
   * Stores the frame's command (its sequence must be newestSequence + 1) and predicts it on top
   * of the current state. This is the command's first run: its effects go to `events`.
   */
  addCommand(cmd: UserCommand, events: GameEventSink): void {
    if (cmd.sequence !== this.newestSequence + 1) {
      throw new RangeError(`prediction: command ${cmd.sequence} does not follow ${this.newestSequence}`);
    }
    copyUserCommand(this.commands.insert(cmd.sequence), cmd);
    this.newestSequence = cmd.sequence;
    this.player.move(this.current, cmd, this.world, events);
    this.stats.commandsRun++;
    this.player.copy(this.states.insert(cmd.sequence), this.current);
  }

  /**
   * The server ran commands up to `sequence` and its player state is `state`. Out-of-date or
   * impossible acknowledgements are ignored and counted.
   */
  acknowledge(sequence: number, state: P): void {
    if ((this.hasAck && sequence < this.ackedSequence) || sequence > this.newestSequence) {
      this.stats.staleAcks++;
      return;
    }
    if (this.hasAck && sequence === this.ackedSequence && this.player.equals(this.acked, state)) return;
    this.player.copy(this.acked, state);
    const predicted = this.states.get(sequence);
    let confirmed = false;
    if (predicted !== undefined) {
      this.player.copyClientOnly(this.acked, predicted);
      confirmed = this.player.equals(predicted, state);
      if (!confirmed) {
        this.player.origin(predicted, this.scratchA);
        this.player.origin(state, this.scratchB);
        const d = distance(this.scratchA, this.scratchB);
        this.stats.corrections++;
        this.stats.correctionDistanceTotal += d;
        if (d > this.stats.correctionDistanceMax) this.stats.correctionDistanceMax = d;
      }
    }
    this.ackedSequence = sequence;
    this.hasAck = true;
    // A confirmed prediction leaves the stored states after it as a replay would make them; an
    // earlier correction not yet replayed keeps `dirty` set, and the replay starts from here.
    if (confirmed && this.config.replay === 'on-mismatch') this.stats.confirmations++;
    else this.dirty = true;
  }

  /**
   * Re-runs every stored unacknowledged command from the acknowledged state (the paper's loop),
   * if a new acknowledgement arrived since the last call (one that corrected the prediction,
   * with `replay: 'on-mismatch'`); the new current state is what the
   * client renders. A change of the predicted position becomes a render offset that blends out
   * over `smoothingMs` (or snaps when larger than `snapDistance`).
   */
  predict(nowMs: number): void {
    if (this.dirty) this.replay(nowMs);
  }

  /** Replays from the acknowledged state now, whether or not anything new arrived. */
  replay(nowMs: number): void {
    this.dirty = false;
    if (this.newestSequence - this.ackedSequence > this.config.windowSize) {
      // The window cannot reach back to the acknowledged command: keep predicting from the
      // current state until acknowledgements catch up.
      return;
    }
    this.player.origin(this.current, this.before);
    this.stats.replays++;
    this.player.copy(this.current, this.acked);
    for (let seq = this.ackedSequence + 1; seq <= this.newestSequence; seq++) {
      const cmd = this.commands.get(seq);
      if (cmd === undefined) break;
      this.player.move(this.current, cmd, this.world, NO_EVENTS);
      this.stats.commandsRun++;
      const stored = this.states.get(seq);
      if (stored !== undefined) this.player.copyClientOnly(this.current, stored);
      this.player.copy(this.states.insert(seq), this.current);
    }
    this.player.origin(this.current, this.after);
    const dx = this.before.x - this.after.x;
    const dy = this.before.y - this.after.y;
    const dz = this.before.z - this.after.z;
    // The replay confirmed the prediction: any blend in progress carries on undisturbed.
    if (dx === 0 && dy === 0 && dz === 0) return;
    this.stats.visibleCorrections++;
    // The drawn player stays where it was: the prediction moved by d, so the offset takes d on top
    // of what was still being blended, and the whole of it blends out from now (or snaps).
    const offset = this.renderOffset(nowMs, this.scratchB);
    const ex = offset.x + dx;
    const ey = offset.y + dy;
    const ez = offset.z + dz;
    const error = Math.sqrt(ex * ex + ey * ey + ez * ez);
    if (error > this.stats.visibleErrorMax) this.stats.visibleErrorMax = error;
    if (error > this.config.snapDistance) {
      this.stats.snaps++;
      this.errorStart.x = this.errorStart.y = this.errorStart.z = 0;
      return;
    }
    this.errorStart.x = ex;
    this.errorStart.y = ey;
    this.errorStart.z = ez;
    this.errorStartMs = nowMs;
  }

  /** The correction still being blended out at `nowMs` (added to the predicted origin). */
  renderOffset(nowMs: number, out: Vec3): Vec3 {
    const { smoothingMs } = this.config;
    const elapsed = nowMs - this.errorStartMs;
    const k = smoothingMs <= 0 || elapsed >= smoothingMs ? 0 : elapsed <= 0 ? 1 : 1 - elapsed / smoothingMs;
    out.x = this.errorStart.x * k;
    out.y = this.errorStart.y * k;
    out.z = this.errorStart.z * k;
    return out;
  }

  /** Where to draw the local player at `nowMs`: the prediction plus the blended correction. */
  renderOrigin(nowMs: number, out: Vec3): Vec3 {
    this.renderOffset(nowMs, this.scratchA);
    this.player.origin(this.current, out);
    out.x += this.scratchA.x;
    out.y += this.scratchA.y;
    out.z += this.scratchA.z;
    return out;
  }
}

function distance(a: Vec3, b: Vec3): number {
  const dx = a.x - b.x;
  const dy = a.y - b.y;
  const dz = a.z - b.z;
  return Math.sqrt(dx * dx + dy * dy + dz * dz);
}
