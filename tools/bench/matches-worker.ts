// A worker thread of the matches benchmark: runs `matches` matches of 16 shooting bots at 64 Hz
// on simulated time (bots over the memory transport in the same thread) and reports the real
// time its servers' updates took, so one thread's figure is the server cost one core carries.

import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { Match } from 'backstep/testing';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { CLEAN_20MS } from './scene.ts';

export interface MatchesWorkerData {
  matches: number;
  players: number;
  seed: number;
  warmupMs: number;
  measureMs: number;
}

export interface MatchesWorkerResult {
  /** Real (wall) milliseconds of server updates per simulated second, summed over the matches. */
  serverMsPerSecond: number;
  /** Wall milliseconds of the servers' updates and of the whole measured loop (bots included). */
  serverWallMs: number;
  loopWallMs: number;
  /** CPU milliseconds the whole process used during the measured loop (every thread). */
  processCpuMs: number;
  /** The 99th percentile of one match's update, ms. */
  p99Ms: number;
  ticks: number;
  shotsPerTick: number;
  connected: number;
}

const TICK_RATE = 64;
const UPDATE_RATE = 32;

function run(o: MatchesWorkerData): MatchesWorkerResult {
  const matches: Match<ArenaPlayerState, ArenaWorld>[] = [];
  for (let m = 0; m < o.matches; m++) {
    const match = new Match<ArenaPlayerState, ArenaWorld>(
      arenaGame,
      o.seed + m,
      { tickRate: TICK_RATE, maxClients: o.players, defaultUpdateRate: UPDATE_RATE },
      arenaRules({ respawnMs: 1000 }),
    );
    for (let i = 0; i < o.players; i++) {
      match.addClient({
        profile: CLEAN_20MS,
        drive: aimBot((o.seed + m) * 7919 + i, { aimErrorUnits: 12 }),
        frameJitterMs: 2,
        config: { updateRate: UPDATE_RATE, rateBytesPerSecond: 200_000 },
      });
    }
    matches.push(match);
  }
  for (const match of matches) match.run(o.warmupMs);
  let total = 0;
  const samples: number[] = [];
  const ticksBefore = matches.map((m) => m.server.stats.ticks);
  const shotsBefore = matches.map((m) => m.server.lagCompensation?.stats.rewinds ?? 0);
  for (const match of matches) {
    const server = match.server;
    const update = server.update.bind(server);
    server.update = (nowMs: number) => {
      const t0 = performance.now();
      update(nowMs);
      const ms = performance.now() - t0;
      total += ms;
      samples.push(ms);
    };
  }
  // The matches take turns in 100 ms slices of simulated time, as one thread's loop runs them.
  const cpu = process.cpuUsage();
  const loopStart = performance.now();
  for (let t = 0; t < o.measureMs; t += 100) for (const match of matches) match.run(100);
  const loopWallMs = performance.now() - loopStart;
  const used = process.cpuUsage(cpu);
  let ticks = 0;
  let shots = 0;
  let connected = 0;
  matches.forEach((m, i) => {
    ticks += m.server.stats.ticks - ticksBefore[i];
    shots += (m.server.lagCompensation?.stats.rewinds ?? 0) - shotsBefore[i];
    connected += m.server.clientCount;
    m.close();
  });
  samples.sort((a, b) => a - b);
  return {
    serverMsPerSecond: total / (o.measureMs / 1000),
    serverWallMs: total,
    loopWallMs,
    processCpuMs: (used.user + used.system) / 1000,
    p99Ms: samples[Math.floor(samples.length * 0.99)] ?? 0,
    ticks,
    shotsPerTick: ticks > 0 ? shots / ticks : 0,
    connected,
  };
}

parentPort?.postMessage(run(workerData as MatchesWorkerData));
