// Bot input drivers for the arena: scripted players that run, strafe, turn, jump and crouch,
// reproducible from a seed.

import { BUTTON_CROUCH, BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { Random } from '../../src/sim/random.ts';
import type { InputDriver } from './match.ts';

/**
 * A bot that changes what it does every 0.2 to 1.2 s: runs forward or back, strafes, turns at
 * a steady rate, jumps and crouches at random. Its input depends only on the seed and time.
 */
export function runnerBot<P, W>(seed: number): InputDriver<P, W> {
  const rng = new Random(seed);
  let until = 0;
  let yawRate = 0;
  let lastMs = -1;
  return (_client, nowMs, input) => {
    if (nowMs >= until) {
      until = nowMs + rng.range(200, 1200);
      input.forwardMove = rng.int(-1, 1) * 127;
      input.sideMove = rng.int(-1, 1) * 127;
      yawRate = rng.range(-0.3, 0.3);
      input.buttons = (rng.chance(0.3) ? BUTTON_JUMP : 0) | (rng.chance(0.15) ? BUTTON_CROUCH : 0);
    }
    const dt = lastMs < 0 ? 0 : nowMs - lastMs;
    lastMs = nowMs;
    input.yaw += yawRate * dt;
    input.pitch = 10;
  };
}
