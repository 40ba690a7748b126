// The arena's wandering bot: the engine's wanderBot with the arena's jump and crouch buttons.

import { type InputDriver, wanderBot } from 'backstep/testing';
import { BUTTON_CROUCH, BUTTON_JUMP } from '../shared/constants.ts';

/**
 * A bot that changes what it does every 0.2 to 1.2 s: runs forward or back, strafes, turns at
 * a steady rate, jumps and crouches at random. Its input depends only on the seed and time.
 */
export function runnerBot<P, W>(seed: number): InputDriver<P, W> {
  return wanderBot(seed, {
    pitch: 10,
    buttons: [
      { bit: BUTTON_JUMP, chance: 0.3 },
      { bit: BUTTON_CROUCH, chance: 0.15 },
    ],
  });
}
