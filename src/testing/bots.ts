// Input drivers for bots, for any game: a wandering player that runs, strafes, turns and presses
// the game's buttons at random, reproducible from a seed, and the pieces an aiming bot is built
// from (the nearest entity of a type as the client drew it, the view angles that look at a point).

import type { RemoteView } from '../client/view.ts';
import { Random } from '../sim/random.ts';
import type { InputDriver } from './match.ts';

/** A button a wandering bot presses: its bit and the chance it is held in each stretch. */
export interface BotButton {
  readonly bit: number;
  readonly chance: number;
}

export interface WanderBotOptions {
  /** Each stretch of the same input lasts between these many milliseconds. */
  minHoldMs: number;
  maxHoldMs: number;
  /** The move amounts (forward and side) are each -1, 0 or 1 times this. */
  moveAmount: number;
  /** Turning speed is drawn in [-turnDegPerMs, turnDegPerMs] for each stretch. */
  turnDegPerMs: number;
  /** The pitch the bot holds, degrees. */
  pitch: number;
  /** Buttons pressed at random, each drawn in this order for every stretch. */
  buttons: readonly BotButton[];
}

export const DEFAULT_WANDER_BOT: WanderBotOptions = {
  minHoldMs: 200,
  maxHoldMs: 1200,
  moveAmount: 127,
  turnDegPerMs: 0.3,
  pitch: 0,
  buttons: [],
};

/**
 * A bot that changes what it does every `minHoldMs` to `maxHoldMs`: runs forward or back,
 * strafes, turns at a steady rate and presses the given buttons at random. Its input depends
 * only on the seed and the times it is called at.
 */
export function wanderBot<P, W>(seed: number, options: Partial<WanderBotOptions> = {}): InputDriver<P, W> {
  const o = { ...DEFAULT_WANDER_BOT, ...options };
  const rng = new Random(seed);
  let until = 0;
  let yawRate = 0;
  let lastMs = -1;
  return (_client, nowMs, input) => {
    if (nowMs >= until) {
      until = nowMs + rng.range(o.minHoldMs, o.maxHoldMs);
      input.forwardMove = rng.int(-1, 1) * o.moveAmount;
      input.sideMove = rng.int(-1, 1) * o.moveAmount;
      yawRate = rng.range(-o.turnDegPerMs, o.turnDegPerMs);
      let buttons = 0;
      for (const b of o.buttons) if (rng.chance(b.chance)) buttons |= b.bit;
      input.buttons = buttons;
    }
    const dt = lastMs < 0 ? 0 : nowMs - lastMs;
    lastMs = nowMs;
    input.yaw += yawRate * dt;
    input.pitch = o.pitch;
  };
}

/**
 * The entity of type `type` drawn nearest to (x, y, z) in `view` (the remote entities as the
 * client drew them this frame), or -1. `accept` may pass over some (dead players, say): it gets
 * the view's values and the entity's offset in them. Distances use the x, y and z fields named.
 */
export function nearestEntity(
  view: RemoteView,
  type: number,
  fields: { readonly x: number; readonly y: number; readonly z?: number },
  x: number,
  y: number,
  z: number,
  accept?: (values: Float64Array, offset: number) => boolean,
): number {
  let best = -1;
  let bestD = Infinity;
  for (let k = 0; k < view.count; k++) {
    const e = view.list[k];
    if (view.types[e] !== type) continue;
    const v = e * view.stride;
    if (accept !== undefined && !accept(view.values, v)) continue;
    const dx = view.values[v + fields.x] - x;
    const dy = view.values[v + fields.y] - y;
    const dz = fields.z === undefined ? 0 : view.values[v + fields.z] - z;
    const d = dx * dx + dy * dy + dz * dz;
    if (d < bestD) {
      bestD = d;
      best = e;
    }
  }
  return best;
}

/** The view angles (degrees: yaw around z from +x, pitch positive looking down) that look along (dx, dy, dz). */
export function aimAngles(dx: number, dy: number, dz: number, out: { yaw: number; pitch: number }): void {
  out.yaw = (Math.atan2(dy, dx) * 180) / Math.PI;
  out.pitch = (-Math.atan2(dz, Math.hypot(dx, dy)) * 180) / Math.PI;
}
