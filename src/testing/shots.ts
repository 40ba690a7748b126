// The shot ledger, for any game with hit-scan weapons: every ray's verdict as the shooter's client
// saw it (its first prediction of the command, against the players as it drew them) and as the
// server judged it (lag compensated, in the configured mode and, on request, in the others), so
// a game measures its own hit agreement in its tests.

import type { ClientHooks, GameClient } from '../client/client.ts';
import type { WireEvent } from '../protocol/frames.ts';
import { createWireEvent } from '../protocol/frames.ts';
import type { UserCommand } from '../protocol/usercmd.ts';
import type { EventCapture } from '../server/events.ts';
import type { ServerHooks } from '../server/hooks.ts';
import type { LagCompensationMode } from '../server/lag-compensation.ts';
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
  /** agreed / compared (0 when nothing was compared). */
  share: number;
  /** The compared rays the client saw hit something. */
  clientHits: number;
  /** The compared rays the server saw hit something. */
  serverHits: number;
}

/**
 * Records the verdict of every ray, keyed "slot:command:ray". Give each client
 * `clientHooks(() => client)` and the server `serverHooks()` (with `combineHooks` beside the
 * game's own), run the match, then read `agreement()`.
 */
export class ShotLedger<P, W> {
  /** The clients' verdicts, by "slot:command:ray". */
  readonly client = new Map<string, number>();
  /** The server's verdicts in each mode judged, by "slot:command:ray". */
  readonly server = new Map<LagCompensationMode, Map<string, number>>();
  /**
   * Commands "slot:command" that fired while the shooter's own prediction was wrong (its state
   * after the command differed from the server's: it had died, respawned or been pushed and did
   * not know yet). Their rays were judged from another place, so `agreement` leaves them out.
   */
  readonly mispredicted = new Set<string>();
  /** Commands "slot:command" whose client knew the server would not honour their view. */
  readonly uncompensated = new Set<string>();
  readonly options: ShotLedgerOptions<P>;
  /** The server's own lag compensation mode, once it judged a shot. */
  deciding: LagCompensationMode | null = null;
  private readonly predicted = new Map<string, P>();
  private readonly shooting = new Set<string>();
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
        const slot = getClient().slot;
        this.shooting.add(`${slot}:${command}`);
        this.client.set(`${slot}:${command}:${this.ray.ray}`, this.ray.verdict);
      },
      onPredicted: (cmd, state) => {
        // A command that shot: the state it ends in is what the server's run must match.
        const client = getClient();
        const key = `${client.slot}:${cmd.sequence}`;
        if (!this.shooting.delete(key)) return;
        if (!client.lastViewHonoured) this.uncompensated.add(key);
        const copy = this.game.player.create();
        this.game.player.copy(copy, state as P);
        this.predicted.set(key, copy);
      },
    };
  }

  /** Server hooks: the verdicts of every shot in the server's mode and in `alsoJudge`. */
  serverHooks(): ServerHooks<P, W> {
    return {
      onCommand: (_server, shooter, cmd) => {
        const key = `${shooter.slot}:${cmd.sequence}`;
        const mine = this.predicted.get(key);
        if (mine === undefined) return;
        this.predicted.delete(key);
        const same = this.options.samePlace ?? this.game.player.equals;
        if (!same(mine, shooter.state)) this.mispredicted.add(key);
      },
      beforeShot: (server, shooter, cmd) => {
        const deciding = server.lagCompensation?.config.mode;
        for (const mode of this.options.alsoJudge) {
          if (mode !== deciding) this.record(shooter, cmd, mode, server.judgeShot(shooter, cmd, mode));
        }
      },
      onShot: (server, shooter, cmd, events) => {
        this.deciding = server.lagCompensation?.config.mode ?? 'exact';
        this.record(shooter, cmd, this.deciding, events);
      },
    };
  }

  /** The server's verdicts in `mode` (empty when that mode was not judged). */
  verdicts(mode: LagCompensationMode): Map<string, number> {
    let m = this.server.get(mode);
    if (m === undefined) {
      m = new Map();
      this.server.set(mode, m);
    }
    return m;
  }

  /**
   * How often the server in `mode` (default: its own) agreed with the clients, over rays both
   * judged from the same shooter state.
   */
  agreement(mode: LagCompensationMode | null = this.deciding): ShotAgreement {
    const server = mode === null ? new Map<string, number>() : this.verdicts(mode);
    let compared = 0;
    let agreed = 0;
    let uncompensated = 0;
    let clientHits = 0;
    let serverHits = 0;
    for (const [key, v] of server) {
      const mine = this.client.get(key);
      const command = key.slice(0, key.lastIndexOf(':'));
      if (mine === undefined || this.mispredicted.has(command)) continue;
      compared++;
      if (this.uncompensated.has(command)) {
        uncompensated++;
        agreed++;
      } else if (mine === v) agreed++;
      if (mine >= 0) clientHits++;
      if (v >= 0) serverHits++;
    }
    return {
      compared,
      agreed,
      uncompensated,
      share: compared > 0 ? agreed / compared : 0,
      clientHits,
      serverHits,
    };
  }

  /** Records one judgement's verdicts. */
  private record(
    shooter: ServerClient<P>,
    cmd: UserCommand,
    mode: LagCompensationMode,
    events: EventCapture,
  ): void {
    const into = this.verdicts(mode);
    const e = this.event;
    const ray = this.ray;
    for (let i = 0; i < events.count; i++) {
      e.type = events.type[i];
      e.source = shooter.slot;
      e.p0 = events.p0[i];
      e.p1 = events.p1[i];
      e.p2 = events.p2[i];
      e.p3 = events.p3[i];
      if (this.read(e, ray)) into.set(`${shooter.slot}:${cmd.sequence}:${ray.ray}`, ray.verdict);
    }
  }
}
