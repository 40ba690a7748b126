// Benchmarks: `npm run bench`. Each section prints a table; figures are compared as ratios
// within one run, never asserted in tests.

import { performance } from 'node:perf_hooks';
import { BUTTON_JUMP } from '../games/arena/shared/constants.ts';
import { arenaGame } from '../games/arena/shared/game.ts';
import { Predictor } from '../src/client/prediction.ts';
import { createUserCommand, quantizeUserCommand } from '../src/protocol/usercmd.ts';
import { NO_EVENTS } from '../src/sim/game.ts';
import { Random } from '../src/sim/random.ts';

/** Runs `fn` until `minMs` have passed (after a warm-up) and returns milliseconds per call. */
function timePerCall(fn: () => void, minMs = 500): number {
  for (let i = 0; i < 200; i++) fn();
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < 50; i++) fn();
    calls += 50;
    elapsed = performance.now() - start;
  }
  return elapsed / calls;
}

function table(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n${title}`);
  console.table(rows);
}

/** Client cost of replaying N unacknowledged commands through the arena's shared movement. */
function predictionReplay(): void {
  const rows: Record<string, string | number>[] = [];
  for (const pending of [8, 16, 32, 64]) {
    const world = arenaGame.createWorld();
    const predictor = new Predictor(arenaGame.player, world);
    const spawn = arenaGame.player.create();
    arenaGame.spawn(spawn, world, 0);
    predictor.reset(spawn, 0);
    const rng = new Random(pending);
    const cmd = createUserCommand();
    for (let seq = 1; seq <= pending; seq++) {
      cmd.sequence = seq;
      cmd.msec = 16;
      cmd.forwardMove = 127;
      cmd.sideMove = rng.int(-1, 1) * 127;
      cmd.yaw = rng.range(0, 360);
      cmd.buttons = rng.chance(0.1) ? BUTTON_JUMP : 0;
      quantizeUserCommand(cmd);
      predictor.addCommand(cmd, NO_EVENTS);
    }
    let now = 0;
    const ms = timePerCall(() => {
      now += 16;
      predictor.replay(now);
    });
    rows.push({
      'unacked commands': pending,
      'replay (us)': (ms * 1000).toFixed(1),
      'per command (us)': ((ms * 1000) / pending).toFixed(2),
      'share of a 60 fps frame': `${((ms / (1000 / 60)) * 100).toFixed(2)}%`,
    });
  }
  table('Client prediction: replaying unacknowledged commands (arena movement)', rows);
}

console.log(`Backstep benchmarks (node ${process.version}, ${process.platform} ${process.arch})`);
predictionReplay();
