// The arena's shooting bots and shot ledger: bots aim at the remote players they see (where they
// drew them, with a configurable aim error) and fire; the ledger (the engine's, reading the arena's
// hit, impact and miss events) records each ray's verdict as the shooter's client saw it and as
// the server judged it in every lag compensation mode, and counts hits around a corner.

import type { GameClient, InputSample } from 'backstep/client';
import { type WireEvent, wireEventParam } from 'backstep/protocol';
import {
  combineHooks,
  type EventCapture,
  type GameServer,
  LAG_COMPENSATION_MODES,
  type ServerClient,
  type ServerHooks,
} from 'backstep/server';
import { Random, vec3 } from 'backstep/sim';
import { type InputDriver, type RayVerdict, ShotLedger } from 'backstep/testing';
import {
  BUTTON_ATTACK,
  BUTTON_JUMP,
  EVENT_HIT,
  EVENT_IMPACT_WORLD,
  EVENT_MISS,
} from '../shared/constants.ts';
import { PLAYER_ENTITY, PLAYER_ENTITY_TYPE } from '../shared/entities.ts';
import { HIT_EVENT, IMPACT_EVENT, MISS_EVENT } from '../shared/events.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../shared/game.ts';
import { eyeHeight } from '../shared/player.ts';
import { createTraceResult } from '../shared/trace.ts';

const HIT = HIT_EVENT.index;
const IMPACT = IMPACT_EVENT.index;
const MISS = MISS_EVENT.index;

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

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
      // Squared distance: Math.hypot returns a heap number, once per bot, entity and frame.
      const dx = view.values[v + X] - ex;
      const dy = view.values[v + Y] - ey;
      const d = dx * dx + dy * dy;
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

/** Reads an arena event as one ray's verdict: a hit (entity and box), a wall or a miss. */
export function readArenaRay(e: WireEvent, out: RayVerdict): boolean {
  if (e.type === EVENT_HIT) {
    out.ray = wireEventParam(e, HIT.pellet);
    out.verdict = verdict(wireEventParam(e, HIT.target), wireEventParam(e, HIT.box));
  } else if (e.type === EVENT_IMPACT_WORLD) {
    out.ray = Math.floor(wireEventParam(e, IMPACT.pelletAndNormal) / PELLET_SHIFT);
    out.verdict = -1;
  } else if (e.type === EVENT_MISS) {
    out.ray = wireEventParam(e, MISS.pellet);
    out.verdict = -1;
  } else return false;
  return true;
}

/**
 * The engine's shot ledger for the arena: every lag compensation mode judged on every shot, the
 * shooter's prediction compared without health (others damage it), and decisive hits on a
 * target that, in the present, the shooter could not see (behind cover) counted.
 */
export class ArenaShotLedger extends ShotLedger<ArenaPlayerState, ArenaWorld> {
  /** Decisive hits on a target that, in the present, the shooter could not see (behind cover). */
  aroundCorner = 0;
  decisiveHits = 0;
  private readonly trace = createTraceResult();
  private readonly point = vec3();

  constructor() {
    super(arenaGame, readArenaRay, {
      alsoJudge: LAG_COMPENSATION_MODES,
      samePlace: (mine, server) => {
        // Health is not the shooter's to predict (others damage it); everything else is.
        mine.health = server.health;
        return arenaGame.player.equals(mine, server);
      },
    });
  }

  override serverHooks(): ServerHooks<ArenaPlayerState, ArenaWorld> {
    return combineHooks(super.serverHooks(), {
      onShot: (server, shooter, _cmd, events) => {
        for (let i = 0; i < events.count; i++) {
          if (events.type[i] === EVENT_HIT) this.checkCorner(server, shooter, events, i);
        }
      },
    });
  }

  /** Rays the clients hit a player with, among those the server judged. */
  clientHits(): number {
    return this.clientHitsJudged('exact');
  }

  private checkCorner(
    server: GameServer<ArenaPlayerState, ArenaWorld>,
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
