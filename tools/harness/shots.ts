// Shooting bots and the shot ledger: bots aim at the remote players they see (where they drew
// them, with a configurable aim error) and fire; the ledger records each ray's verdict as the
// shooter's client saw it and as the server judged it in every lag compensation mode.

import {
  BUTTON_ATTACK,
  BUTTON_JUMP,
  EVENT_HIT,
  EVENT_IMPACT_WORLD,
  EVENT_MISS,
  EVENT_WEAPON_FIRE,
} from '../../games/arena/shared/constants.ts';
import { PLAYER_ENTITY, PLAYER_ENTITY_TYPE } from '../../games/arena/shared/entities.ts';
import { HIT_EVENT, IMPACT_EVENT, MISS_EVENT } from '../../games/arena/shared/events.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { eyeHeight } from '../../games/arena/shared/player.ts';
import { createTraceResult } from '../../games/arena/shared/trace.ts';
import type { ClientHooks, GameClient, InputSample } from '../../src/client/client.ts';
import { type WireEvent, wireEventParam } from '../../src/protocol/frames.ts';
import type { UserCommand } from '../../src/protocol/usercmd.ts';
import type { EventCapture } from '../../src/server/events.ts';
import type { ServerHooks } from '../../src/server/hooks.ts';
import { LAG_COMPENSATION_MODES, type LagCompensationMode } from '../../src/server/lag-compensation.ts';
import type { GameServer, ServerClient } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';
import type { InputDriver } from './match.ts';

const HIT = HIT_EVENT.index;
const IMPACT = IMPACT_EVENT.index;
const MISS = MISS_EVENT.index;

type Client = GameClient<ArenaPlayerState, ArenaWorld>;
type Server = GameServer<ArenaPlayerState, ArenaWorld>;

const X = PLAYER_ENTITY.index.x;
const Y = PLAYER_ENTITY.index.y;
const Z = PLAYER_ENTITY.index.z;
const DUCKED = PLAYER_ENTITY.index.ducked;
const ALIVE = PLAYER_ENTITY.index.alive;
const PELLET_SHIFT = 2 ** 20;

export interface AimBotOptions {
  /** Standard deviation of the aim point's error, units, on each axis (0: dead centre). */
  aimErrorUnits: number;
  /** Where on the target the bot aims: height above its origin, standing and crouched. */
  aimHeight: number;
  aimHeightDucked: number;
  /** Chance per second of switching weapon (impulse 1 rifle, 2 shotgun). */
  switchPerSecond: number;
  /** Whether the bot moves (strafes and jumps) while shooting. */
  move: boolean;
}

export const DEFAULT_AIM_BOT: AimBotOptions = {
  aimErrorUnits: 0,
  aimHeight: 40,
  aimHeightDucked: 24,
  switchPerSecond: 0.2,
  move: true,
};

/**
 * A bot that aims at the nearest living remote player it drew last frame (the view its next
 * command names) and holds the trigger, strafing and jumping meanwhile.
 */
export function aimBot(
  seed: number,
  options: Partial<AimBotOptions> = {},
): InputDriver<ArenaPlayerState, ArenaWorld> {
  const o = { ...DEFAULT_AIM_BOT, ...options };
  const rng = new Random(seed);
  let changeAtMs = 0;
  let lastMs = -1;
  return (client: Client, nowMs: number, input: InputSample) => {
    const dt = lastMs < 0 ? 0 : (nowMs - lastMs) / 1000;
    lastMs = nowMs;
    input.impulse = 0;
    if (o.move && nowMs >= changeAtMs) {
      changeAtMs = nowMs + rng.range(300, 1500);
      input.forwardMove = rng.int(-1, 1) * 127;
      input.sideMove = rng.int(-1, 1) * 127;
      input.buttons = rng.chance(0.2) ? BUTTON_JUMP : 0;
    }
    if (rng.chance(o.switchPerSecond * dt)) input.impulse = rng.int(1, 2);
    input.buttons &= ~BUTTON_ATTACK;
    if (!client.isSpawned) return;
    const me = client.predictor.current;
    if (me.health <= 0) return;
    const ex = me.originX;
    const ey = me.originY;
    const ez = me.originZ + eyeHeight(me);
    const view = client.view;
    let best = -1;
    let bestD = Infinity;
    for (let k = 0; k < view.count; k++) {
      const e = view.list[k];
      if (view.types[e] !== PLAYER_ENTITY_TYPE) continue;
      const v = e * view.stride;
      if (view.values[v + ALIVE] === 0) continue;
      const d = Math.hypot(view.values[v + X] - ex, view.values[v + Y] - ey);
      if (d < bestD) {
        bestD = d;
        best = e;
      }
    }
    if (best < 0) return;
    const v = best * view.stride;
    const height = view.values[v + DUCKED] !== 0 ? o.aimHeightDucked : o.aimHeight;
    const tx = view.values[v + X] + gauss(rng) * o.aimErrorUnits;
    const ty = view.values[v + Y] + gauss(rng) * o.aimErrorUnits;
    const tz = view.values[v + Z] + height + gauss(rng) * o.aimErrorUnits;
    const dx = tx - ex;
    const dy = ty - ey;
    const dz = tz - ez;
    input.yaw = (Math.atan2(dy, dx) * 180) / Math.PI;
    input.pitch = (-Math.atan2(dz, Math.hypot(dx, dy)) * 180) / Math.PI;
    input.buttons |= BUTTON_ATTACK;
  };
}

function gauss(rng: Random): number {
  const u = Math.max(rng.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

/** A ray's verdict: the entity and box it hit, or -1 for none. */
function verdict(entity: number, box: number): number {
  return entity * 8 + box;
}

export interface ModeAgreement {
  /** Rays the server judged in this mode whose client verdict is known. */
  compared: number;
  agreed: number;
  /** agreed / compared. */
  share: number;
}

/**
 * Records the verdict of every ray: the shooter's client's (what its ray hit in the world it
 * drew, from its first prediction of the command) and the server's in each mode.
 */
export class ShotLedger {
  /** Key "slot:sequence:pellet" -> verdict. */
  readonly client = new Map<string, number>();
  readonly server: Record<LagCompensationMode, Map<string, number>> = {
    exact: new Map(),
    estimate: new Map(),
    off: new Map(),
  };
  /**
   * Commands "slot:sequence" that fired while the shooter's own prediction was wrong (its state
   * after the command differed from the server's: it had died, respawned or been pushed and did
   * not know yet). Their rays are judged from another place, so they are counted apart.
   */
  readonly mispredicted = new Set<string>();
  private readonly predicted = new Map<string, ArenaPlayerState>();
  private readonly fired = new Set<string>();
  /** Decisive hits on a target that, in the present, the shooter could not see (behind cover). */
  aroundCorner = 0;
  decisiveHits = 0;
  private readonly trace = createTraceResult();
  private readonly point = { x: 0, y: 0, z: 0 };

  /** Hooks for one client: its first predictions of each command are its verdicts. */
  clientHooks(getClient: () => Client): ClientHooks {
    return {
      onEvent: (e: WireEvent, predicted: boolean) => {
        if (!predicted) return;
        const c = getClient();
        const key = (pellet: number) => `${c.slot}:${c.predictor.newestSequence}:${pellet}`;
        if (e.type === EVENT_WEAPON_FIRE) this.fired.add(`${c.slot}:${c.predictor.newestSequence}`);
        else if (e.type === EVENT_HIT)
          this.client.set(
            key(wireEventParam(e, HIT.pellet)),
            verdict(wireEventParam(e, HIT.target), wireEventParam(e, HIT.box)),
          );
        else if (e.type === EVENT_IMPACT_WORLD)
          this.client.set(key(Math.floor(wireEventParam(e, IMPACT.pelletAndNormal) / PELLET_SHIFT)), -1);
        else if (e.type === EVENT_MISS) this.client.set(key(wireEventParam(e, MISS.pellet)), -1);
      },
      onPredicted: (cmd, state) => {
        // A command that fired: the state it ends in is what the server's run must match.
        const key = `${getClient().slot}:${cmd.sequence}`;
        if (!this.fired.delete(key)) return;
        const copy = arenaGame.player.create();
        arenaGame.player.copy(copy, state as ArenaPlayerState);
        this.predicted.set(key, copy);
      },
    };
  }

  /** Server hooks: every mode's verdicts, and shots around a corner in the decisive one. */
  serverHooks(): ServerHooks<ArenaPlayerState, ArenaWorld> {
    return {
      onCommand: (_server, shooter, cmd) => {
        const key = `${shooter.slot}:${cmd.sequence}`;
        const mine = this.predicted.get(key);
        if (mine === undefined) return;
        this.predicted.delete(key);
        // Health is not the shooter's to predict (others damage it); everything else is.
        mine.health = shooter.state.health;
        if (!arenaGame.player.equals(mine, shooter.state)) this.mispredicted.add(key);
      },
      beforeShot: (server, shooter, cmd) => {
        const deciding = server.lagCompensation?.config.mode;
        for (const mode of LAG_COMPENSATION_MODES) {
          if (mode !== deciding)
            this.record(server, shooter, cmd, mode, server.judgeShot(shooter, cmd, mode), false);
        }
      },
      onShot: (server, shooter, cmd, events) => {
        const mode = server.lagCompensation?.config.mode ?? 'exact';
        this.record(server, shooter, cmd, mode, events, true);
      },
    };
  }

  /**
   * Agreement of each mode with the clients' verdicts, over rays both sides judged from the same
   * shooter state (rays of mispredicted commands are left out: see `mispredicted`).
   */
  agreement(mode: LagCompensationMode): ModeAgreement {
    let compared = 0;
    let agreed = 0;
    for (const [key, v] of this.server[mode]) {
      const mine = this.client.get(key);
      if (mine === undefined || this.mispredicted.has(key.slice(0, key.lastIndexOf(':')))) continue;
      compared++;
      if (mine === v) agreed++;
    }
    return { compared, agreed, share: compared > 0 ? agreed / compared : 0 };
  }

  /** Rays the clients hit a player with, among those the server judged. */
  clientHits(): number {
    let hits = 0;
    for (const [key, v] of this.client) if (v >= 0 && this.server.exact.has(key)) hits++;
    return hits;
  }

  /** One mode's verdicts on a shot's rays; shots around a corner are counted in the deciding mode. */
  private record(
    server: Server,
    shooter: ServerClient<ArenaPlayerState>,
    cmd: UserCommand,
    mode: LagCompensationMode,
    events: EventCapture,
    deciding: boolean,
  ): void {
    const into = this.server[mode];
    for (let i = 0; i < events.count; i++) {
      const t = events.type[i];
      const key = (pellet: number) => `${shooter.slot}:${cmd.sequence}:${pellet}`;
      if (t === EVENT_HIT) {
        into.set(
          key(events.param(i, HIT.pellet)),
          verdict(events.param(i, HIT.target), events.param(i, HIT.box)),
        );
        if (deciding) this.checkCorner(server, shooter, events, i);
      } else if (t === EVENT_IMPACT_WORLD)
        into.set(key(Math.floor(events.param(i, IMPACT.pelletAndNormal) / PELLET_SHIFT)), -1);
      else if (t === EVENT_MISS) into.set(key(events.param(i, MISS.pellet)), -1);
    }
  }

  private checkCorner(
    server: Server,
    shooter: ServerClient<ArenaPlayerState>,
    events: EventCapture,
    i: number,
  ): void {
    this.decisiveHits++;
    const entity = events.param(i, HIT.target);
    let target: ServerClient<ArenaPlayerState> | null = null;
    for (const c of server.clients) if (c !== null && c.entity === entity) target = c;
    if (target === null) return;
    const s = shooter.state;
    const eye = { x: s.originX, y: s.originY, z: s.originZ + eyeHeight(s) };
    this.point.x = target.state.originX;
    this.point.y = target.state.originY;
    this.point.z = target.state.originZ + (target.state.ducked ? 20 : 36);
    const zero = { x: 0, y: 0, z: 0 };
    server.world.trace(eye, this.point, zero, zero, this.trace);
    if (this.trace.fraction < 1) this.aroundCorner++;
  }
}
