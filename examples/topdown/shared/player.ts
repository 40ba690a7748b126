// The player's shared code, run by both sides: `(state, cmd, world) -> state`. Movement on the
// plane (sliding along walls), a dash kept as predicted state (its time left, its direction and
// its cooldown), and a hit-scan gun that emits each shot's verdict as an event.

import { quantize, type UserCommand } from 'backstep/protocol';
import { dcos, dsin, type GameEventSink } from 'backstep/sim';
import {
  BUTTON_DASH,
  BUTTON_FIRE,
  DASH_COOLDOWN_MS,
  DASH_MS,
  DASH_SPEED,
  DIRECTION_STEP,
  EVENT_DASH,
  EVENT_HIT,
  EVENT_MISS,
  EVENT_WALL,
  FIRE_COOLDOWN_MS,
  GUN_RANGE,
  POSITION_STEP,
  RUN_SPEED,
  WORLD_LIMIT,
} from './constants.ts';
import { pushOutOfWalls, rayToCircle, rayToWalls, type Wall } from './level.ts';

/** What one player is, as its owner predicts it and the server sends it back. */
export interface TopdownPlayer {
  x: number;
  y: number;
  /** Where the player aims, degrees (the command's yaw). */
  yaw: number;
  /** Dash: milliseconds of it left (0: not dashing), its direction, and the cooldown left. */
  dashMs: number;
  dashX: number;
  dashY: number;
  dashCooldownMs: number;
  /** Milliseconds before the gun may fire again. */
  fireCooldownMs: number;
}

/** A target as shared code sees it: the entity it is, and where it stands. */
export interface Target {
  entity: number;
  x: number;
  y: number;
}

/** The world shared code runs against: the walls, and the other players a shot may hit. */
export interface TopdownWorld {
  readonly walls: readonly Wall[];
  readonly targets: Target[];
  targetCount: number;
  /** The shooter's own entity (never a target), -1 for none. */
  self: number;
}

export function createPlayer(): TopdownPlayer {
  return { x: 0, y: 0, yaw: 0, dashMs: 0, dashX: 0, dashY: 0, dashCooldownMs: 0, fireCooldownMs: 0 };
}

export function copyPlayer(out: TopdownPlayer, from: TopdownPlayer): void {
  out.x = from.x;
  out.y = from.y;
  out.yaw = from.yaw;
  out.dashMs = from.dashMs;
  out.dashX = from.dashX;
  out.dashY = from.dashY;
  out.dashCooldownMs = from.dashCooldownMs;
  out.fireCooldownMs = from.fireCooldownMs;
}

export function playersEqual(a: TopdownPlayer, b: TopdownPlayer): boolean {
  return (
    a.x === b.x &&
    a.y === b.y &&
    a.yaw === b.yaw &&
    a.dashMs === b.dashMs &&
    a.dashX === b.dashX &&
    a.dashY === b.dashY &&
    a.dashCooldownMs === b.dashCooldownMs &&
    a.fireCooldownMs === b.fireCooldownMs
  );
}

const position = (v: number) => quantize(v, -WORLD_LIMIT, WORLD_LIMIT, POSITION_STEP);
const direction = (v: number) => quantize(v, -1, 1, DIRECTION_STEP);
const point = { x: 0, y: 0 };

/**
 * Runs one command: the gun first (from where the player stands, along the command's yaw), then
 * the move (a dash starts when its button is down and its cooldown is over, in the direction the
 * stick points, or the aim's when it points nowhere), then quantizes as the wire does.
 */
export function movePlayer(
  state: TopdownPlayer,
  cmd: UserCommand,
  world: TopdownWorld,
  events: GameEventSink,
): void {
  const msec = cmd.msec;
  state.yaw = cmd.yaw;
  state.fireCooldownMs = Math.max(0, state.fireCooldownMs - msec);
  state.dashCooldownMs = Math.max(0, state.dashCooldownMs - msec);
  if ((cmd.buttons & BUTTON_FIRE) !== 0 && state.fireCooldownMs === 0) {
    state.fireCooldownMs = FIRE_COOLDOWN_MS;
    shoot(state, cmd, world, events);
  }
  // The stick: forward is +y, side is +x, full speed at 127 (a diagonal is no faster).
  const sx = cmd.sideMove;
  const sy = cmd.forwardMove;
  const stick = Math.sqrt(sx * sx + sy * sy);
  const speed = stick === 0 ? 0 : (Math.min(stick, 127) / 127) * RUN_SPEED;
  const vx = stick === 0 ? 0 : (sx / stick) * speed;
  const vy = stick === 0 ? 0 : (sy / stick) * speed;
  if ((cmd.buttons & BUTTON_DASH) !== 0 && state.dashCooldownMs === 0 && state.dashMs === 0) {
    state.dashX = direction(stick === 0 ? dcos(cmd.yaw) : sx / stick);
    state.dashY = direction(stick === 0 ? dsin(cmd.yaw) : sy / stick);
    state.dashMs = DASH_MS;
    state.dashCooldownMs = DASH_COOLDOWN_MS;
    events.emit(EVENT_DASH, state.dashX, state.dashY, 0, 0);
  }
  // The part of the command spent dashing goes at dash speed, the rest at the stick's.
  const dashing = Math.min(state.dashMs, msec);
  state.dashMs -= dashing;
  const running = msec - dashing;
  point.x = state.x + (vx * running + state.dashX * DASH_SPEED * dashing) / 1000;
  point.y = state.y + (vy * running + state.dashY * DASH_SPEED * dashing) / 1000;
  pushOutOfWalls(world.walls, point);
  state.x = position(point.x);
  state.y = position(point.y);
}

/** One hit-scan ray: the nearest of a target and a wall decides; its verdict goes out as an event. */
function shoot(state: TopdownPlayer, cmd: UserCommand, world: TopdownWorld, events: GameEventSink): void {
  const dx = dcos(cmd.yaw);
  const dy = dsin(cmd.yaw);
  const wall = rayToWalls(world.walls, state.x, state.y, dx, dy, GUN_RANGE);
  let best = wall;
  let hit = -1;
  for (let i = 0; i < world.targetCount; i++) {
    const t = world.targets[i];
    if (t.entity === world.self) continue;
    const d = rayToCircle(state.x, state.y, dx, dy, t.x, t.y);
    if (d >= 0 && d < best) {
      best = d;
      hit = t.entity;
    }
  }
  if (hit >= 0) events.emit(EVENT_HIT, hit, best, 0, 0);
  else if (wall < GUN_RANGE) events.emit(EVENT_WALL, wall, 0, 0, 0);
  else events.emit(EVENT_MISS, 0, 0, 0, 0);
}
