// Benchmark section "matches": how many matches of 16 shooting players at 64 Hz one core carries,
// how many one process carries on every core of this machine (worker threads, all at once), and
// the memory one match holds on the server.

import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { GameClient } from 'backstep/client';
import { MatchClientEndpoint, MemoryNetwork } from 'backstep/net';
import { MatchHost } from 'backstep/server';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import type { MatchesWorkerData, MatchesWorkerResult } from './matches-worker.ts';
import { heldMemory, type Row, round, table } from './report.ts';

export interface MatchesBenchOptions {
  players: number;
  /** Matches each worker thread runs at once. */
  matchesPerThread: number;
  warmupMs: number;
  measureMs: number;
  seed: number;
  /** Matches created to measure memory per match. */
  memoryMatches: number;
  /** Share of a core the fleet plan lets matches use (the rest: sockets, GC, spikes). */
  headroom: number;
  /** Concurrent players the fleet plan is for. */
  fleetPlayers: number;
}

export const DEFAULT_MATCHES_BENCH_OPTIONS: MatchesBenchOptions = {
  players: 16,
  matchesPerThread: 4,
  warmupMs: 1500,
  measureMs: 6000,
  seed: 3,
  memoryMatches: 16,
  headroom: 0.7,
  fleetPlayers: 100_000,
};

const TICK_RATE = 64;

/** Runs one bench worker (TypeScript through tsx, as the benchmarks run). */
function runWorker(data: MatchesWorkerData): Promise<MatchesWorkerResult> {
  const entry = new URL('./matches-worker.ts', import.meta.url).href;
  const worker = new Worker(
    `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, execArgv: ['--conditions=backstep-source'], workerData: data },
  );
  return new Promise((resolve, reject) => {
    worker.once('message', (result: MatchesWorkerResult) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

/** Server-side memory of one match with its players: heap and ArrayBuffers after GC, clients dropped. */
function memoryPerMatch(o: MatchesBenchOptions): { bytes: number; heap: number; buffers: number } {
  const network = new MemoryNetwork({ seed: o.seed });
  const host = new MatchHost(network.createEndpoint('server'));
  const before = heldMemory();
  let clients: { client: GameClient<unknown, unknown>; close: () => void }[] = [];
  for (let id = 1; id <= o.memoryMatches; id++) {
    host.create(id, { game: arenaGame, config: { maxClients: o.players }, hooks: arenaRules() });
    for (let i = 0; i < o.players; i++) {
      const endpoint = network.createEndpoint(`c${id}.${i}`);
      const client = new GameClient(arenaGame, new MatchClientEndpoint(endpoint, id), 'server', {
        seed: id * 100 + i,
      });
      client.connect(0);
      clients.push({ client: client as GameClient<unknown, unknown>, close: () => endpoint.close() });
    }
  }
  for (let t = 0; t <= 2000; t += 1000 / 60) {
    host.update(t);
    for (const c of clients) c.client.update(t, null);
  }
  let connected = 0;
  for (const m of host.matches.values()) connected += m.server.clientCount;
  if (connected !== o.memoryMatches * o.players) {
    throw new Error(`matches bench: ${connected} of ${o.memoryMatches * o.players} players connected`);
  }
  for (const c of clients) c.close();
  clients = [];
  const after = heldMemory();
  const heap = (after.heap - before.heap) / o.memoryMatches;
  const buffers = (after.buffers - before.buffers) / o.memoryMatches;
  host.close();
  return { bytes: heap + buffers, heap, buffers };
}

/** Prints the matches tables and the fleet plan. */
export async function matchesSection(o: MatchesBenchOptions = DEFAULT_MATCHES_BENCH_OPTIONS): Promise<void> {
  const cores = availableParallelism();
  const data = (seed: number): MatchesWorkerData => ({
    matches: o.matchesPerThread,
    players: o.players,
    seed,
    warmupMs: o.warmupMs,
    measureMs: o.measureMs,
  });
  const t0 = performance.now();
  const one = await runWorker(data(o.seed));
  const oneMs = performance.now() - t0;
  const all = await Promise.all(
    Array.from({ length: cores }, (_, i) => runWorker(data(o.seed + 100 * (i + 1)))),
  );
  // CPU, not wall time: on a shared machine a thread waits for a core, and wall time counts the
  // wait. The servers' share of the process's CPU is taken as their share of the loop's wall time.
  const seconds = o.measureMs / 1000;
  const perMatchMs = (one.processCpuMs * (one.serverWallMs / one.loopWallMs)) / seconds / o.matchesPerThread;
  const perCore = 1000 / perMatchMs;
  const cpuAll = all.reduce((a, r) => a + r.processCpuMs, 0) / all.length;
  const shareAll = all.reduce((a, r) => a + r.serverWallMs, 0) / all.reduce((a, r) => a + r.loopWallMs, 0);
  const perMatchAllMs = (cpuAll * shareAll) / seconds / (cores * o.matchesPerThread);
  const perProcess = (cores * 1000) / perMatchAllMs;
  const wall = (r: MatchesWorkerResult) => r.serverMsPerSecond / o.matchesPerThread;
  const rows: Record<string, Row> = {
    'one thread': {
      threads: 1,
      'server CPU ms per match-second': round(perMatchMs, 2),
      'wall ms per match-second': round(wall(one), 2),
      'p99 update, wall (ms)': round(one.p99Ms, 3),
      'shots (/tick)': round(one.shotsPerTick / o.matchesPerThread, 1),
      'matches at 100% of the cores': round(perCore, 1),
      [`matches at ${o.headroom * 100}%`]: round(perCore * o.headroom, 1),
    },
    [`all ${cores} cores at once`]: {
      threads: cores,
      'server CPU ms per match-second': round(perMatchAllMs, 2),
      'wall ms per match-second': round(all.reduce((a, r) => a + wall(r), 0) / cores, 2),
      'p99 update, wall (ms)': round(Math.max(...all.map((r) => r.p99Ms)), 3),
      'shots (/tick)': round(all.reduce((a, r) => a + r.shotsPerTick, 0) / cores / o.matchesPerThread, 1),
      'matches at 100% of the cores': round(perProcess, 1),
      [`matches at ${o.headroom * 100}%`]: round(perProcess * o.headroom, 1),
    },
  };
  const memory = memoryPerMatch(o);
  const mb = memory.bytes / 1e6;
  table(
    `Matches of ${o.players} shooting players at ${TICK_RATE} Hz: server CPU per core and per process (worker threads)`,
    rows,
    [
      `Each thread runs ${o.matchesPerThread} matches of ${o.players} aim bots (arena rules, exact lag compensation, 32 snapshots/s),`,
      '  the bots over the memory transport in the same thread, each match in turn for 100 ms of simulated time;',
      `  ${o.measureMs / 1000} s simulated after a ${o.warmupMs / 1000} s warm-up. Server CPU per match-second: the process's CPU time`,
      "  during the loop times the servers' share of the loop's wall time (GameServer.update timed with the real",
      '  clock), per match and simulated second. Wall time is shown too: on a loaded machine it counts the waits for',
      '  a core. "matches at 100%" = the cores\' 1000 ms a second / server CPU per match-second. The all-cores',
      `  row runs one such thread per core at once (the bots share those cores; ${(oneMs / 1000).toFixed(0)} s for the one-thread run).`,
      '  Not included: the socket thread (one system call per datagram, measured by the transports, not here).',
      `Memory per match with ${o.players} players, server side (heap + ArrayBuffers after GC, ${o.memoryMatches} matches):`,
      `  ${mb.toFixed(2)} MB (${(memory.heap / 1e6).toFixed(2)} MB heap, ${(memory.buffers / 1e6).toFixed(2)} MB ArrayBuffers).`,
      ...fleetPlan(o, perCore * o.headroom, mb),
    ],
  );
}

/** The fleet for `o.fleetPlayers` concurrent players from the measured matches per core. */
function fleetPlan(o: MatchesBenchOptions, matchesPerCore: number, mbPerMatch: number): string[] {
  const matches = Math.ceil(o.fleetPlayers / o.players);
  const cores = Math.ceil(matches / Math.max(matchesPerCore, 1e-9));
  const perProcessCores = 4;
  const processes = Math.ceil(cores / perProcessCores);
  const matchesPerProcess = Math.ceil(matches / processes);
  return [
    `Fleet for ${o.fleetPlayers.toLocaleString('en')} concurrent players (on paper): ${matches.toLocaleString('en')} matches of ${o.players};`,
    `  at ${matchesPerCore.toFixed(1)} matches per core (${o.headroom * 100}% of a core) that is ${cores.toLocaleString('en')} cores, e.g. ${processes.toLocaleString('en')} processes`,
    `  (Agones GameServers) of ${perProcessCores} cores with ${matchesPerProcess} matches and ${(matchesPerProcess * mbPerMatch).toFixed(0)} MB of match memory each.`,
  ];
}
