// Benchmark section 8: what playing a demo costs (the browser game's player does exactly this).
// A match of aim bots is recorded on simulated time with its killcams, then the DemoPlayer opens
// it (every chunk checked and decoded once), seeks to random ticks (from the keyframe at or before
// each) beside the same seeks decoded from the first tick (what a file without keyframes would
// cost), and draws it frame by frame at 60 frames a second as the page does.

import { performance } from 'node:perf_hooks';
import { Match } from 'backstep/testing';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { DemoPlayer } from '../../src/client/demo-player.ts';
import { combineHooks } from '../../src/server/hooks.ts';
import { KillcamRecorder } from '../../src/server/killcam.ts';
import { DemoRecorder } from '../../src/server/recorder.ts';
import { Random } from '../../src/sim/random.ts';
import { mean as meanOf, percentile as percentileOf } from '../stats.ts';
import { round, table } from './report.ts';
import { CLEAN_20MS } from './scene.ts';

const BOTS = 8;
const SEEKS = 200;
const SEED = 1;

const mean = (v: number[]): number => meanOf(v) ?? 0;
const percentile = (v: number[], p: number): number =>
  percentileOf(
    [...v].sort((a, b) => a - b),
    p,
  ) ?? 0;

function record(seconds: number): Uint8Array {
  const recorder = new DemoRecorder(arenaGame);
  const killcams = new KillcamRecorder(arenaGame);
  const rules = arenaRules({
    respawnMs: 1500,
    onKill: (_server, killer, victim, weapon) => {
      recorder.kill(killer, victim, weapon < 0 ? 255 : weapon);
      const cam = killer === null || killer === victim ? null : killcams.capture(killer, victim, 3000);
      if (cam !== null) recorder.killcam(cam);
    },
  });
  const match = new Match(arenaGame, SEED, {}, combineHooks(rules, recorder.hooks, killcams.hooks));
  for (let i = 0; i < BOTS; i++) {
    match.addClient({
      profile: CLEAN_20MS,
      drive: aimBot(SEED * 13 + i, { aimErrorUnits: 20 }),
      frameJitterMs: 2,
    });
  }
  const parts: Uint8Array[] = [];
  recorder.start(match.server, (b) => parts.push(b.slice()));
  match.run(seconds * 1000);
  recorder.stop();
  match.close();
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Records a match of `seconds` and measures playing it. */
export function demoSection(seconds = 60): void {
  const bytes = record(seconds);
  const t0 = performance.now();
  const opened = DemoPlayer.open(bytes, arenaGame);
  const openMs = performance.now() - t0;
  if (!(opened instanceof DemoPlayer))
    throw new Error(`bench: the recorded demo was refused: ${opened.message}`);
  const p = opened;
  const random = new Random(SEED);
  const targets: number[] = [];
  for (let i = 0; i < SEEKS; i++)
    targets.push(p.firstTick + Math.floor(random.next() * (p.lastTick - p.firstTick + 1)));

  // Seeks from the keyframe at or before each tick (what DemoPlayer.seek does), then the same
  // ticks decoded from the first tick on.
  const keyed: number[] = [];
  const keyedTicks: number[] = [];
  for (const t of targets) {
    p.seek(p.lastTick); // away from the target, so each seek starts fresh
    const before = p.decodedTicks;
    const s = performance.now();
    p.seek(t);
    keyed.push(performance.now() - s);
    keyedTicks.push(p.decodedTicks - before);
  }
  const full: number[] = [];
  const fullTicks: number[] = [];
  for (const t of targets) {
    p.seek(p.lastTick);
    const before = p.decodedTicks;
    const s = performance.now();
    p.seek(p.firstTick);
    while (p.tick < t && p.step()) {}
    full.push(performance.now() - s);
    fullTicks.push(p.decodedTicks - before);
  }

  // Playback: 60 frames a second of demo time, as the page draws it at 1x.
  p.seek(p.firstTick);
  const frameTicks = p.header.tickRate / 60;
  const frames: number[] = [];
  for (let tick = p.firstTick; tick <= p.lastTick; tick += frameTicks) {
    const s = performance.now();
    p.draw(tick);
    frames.push(performance.now() - s);
  }

  const keyframes = p.ticks.filter((t) => t.keyframe).length;
  table(
    `Demo playback: ${BOTS} aim bots, ${seconds} s at ${p.header.tickRate} Hz (${p.ticks.length} ticks, ${keyframes} keyframes every ${p.header.keyframeInterval} ticks), ${round(bytes.length / 1024, 1)} KB`,
    {
      'open (check + decode all)': { ms: round(openMs, 1), 'ticks decoded': p.ticks.length },
      'seek (from keyframe)': {
        ms: round(mean(keyed), 3),
        'p99 ms': round(percentile(keyed, 99), 3),
        'ticks decoded': round(mean(keyedTicks), 1),
      },
      'seek (from first tick)': {
        ms: round(mean(full), 3),
        'p99 ms': round(percentile(full, 99), 3),
        'ticks decoded': round(mean(fullTicks), 1),
      },
      'frame at 1x (draw)': { ms: round(mean(frames), 4), 'p99 ms': round(percentile(frames, 99), 4) },
    },
    [`${SEEKS} seeks to random ticks; the frame row is DemoPlayer.draw at 60 frames a second of demo time.`],
  );
}
