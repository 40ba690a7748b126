// Benchmark section 2 (issue 7): the server's real CPU time per tick for 16 to 512 runner bots
// in each other's view, and the players one core could hold at 64 Hz.

import { performance } from 'node:perf_hooks';
import { Match } from 'backstep/testing';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { mean, percentile, Samples } from '../stats.ts';
import { type Row, round, table } from './report.ts';
import { CLEAN_20MS } from './scene.ts';

export interface ServerTickOptions {
  bots: readonly number[];
  seed: number;
  warmupMs: number;
  /** Measured simulated time per size, by bot count (counts not listed use `measureMs`). */
  measureMs: number;
  measureMsFor: Readonly<Record<number, number>>;
}

export const DEFAULT_SERVER_TICK_OPTIONS: ServerTickOptions = {
  bots: [16, 32, 64, 128, 256, 512],
  seed: 1,
  warmupMs: 1500,
  measureMs: 8000,
  measureMsFor: { 256: 6000, 512: 4000 },
};

const TICK_RATE = 64;
const UPDATE_RATE = 32;
const TICK_BUDGET_MS = 1000 / TICK_RATE;

interface TickFigures {
  bots: number;
  meanMs: number;
  p99Ms: number;
}

/**
 * The bot count at which `pick(figures)` reaches one tick interval, interpolated log-log between
 * the two measured sizes that straddle it; a bound when no pair does.
 */
function playersPerCore(rows: readonly TickFigures[], pick: (f: TickFigures) => number): string {
  if (rows.length === 0) return 'n/a';
  if (pick(rows[0]) > TICK_BUDGET_MS) return `< ${rows[0].bots}`;
  for (let i = 1; i < rows.length; i++) {
    const a = rows[i - 1];
    const b = rows[i];
    const ma = pick(a);
    const mb = pick(b);
    if (ma <= TICK_BUDGET_MS && mb > TICK_BUDGET_MS) {
      const k = (Math.log(TICK_BUDGET_MS) - Math.log(ma)) / (Math.log(mb) - Math.log(ma));
      return `about ${Math.round(Math.exp(Math.log(a.bots) + k * (Math.log(b.bots) - Math.log(a.bots))))}`;
    }
  }
  return `> ${rows[rows.length - 1].bots}`;
}

/** Runs one match of `bots` shooting bots and times every server update after the warm-up. */
function measure(bots: number, o: ServerTickOptions): { row: Row; figures: TickFigures } {
  const match = new Match<ArenaPlayerState, ArenaWorld>(
    arenaGame,
    o.seed,
    { tickRate: TICK_RATE, maxClients: bots, defaultUpdateRate: UPDATE_RATE },
    arenaRules({ respawnMs: 1000 }),
  );
  for (let i = 0; i < bots; i++) {
    match.addClient({
      profile: CLEAN_20MS,
      drive: aimBot(o.seed * 7919 + i, { aimErrorUnits: 12 }),
      frameJitterMs: 2,
      config: { updateRate: UPDATE_RATE, rateBytesPerSecond: 200_000 },
    });
  }
  match.run(o.warmupMs);
  const server = match.server;
  if (server.clientCount !== bots) {
    throw new Error(`server tick: ${server.clientCount} of ${bots} bots connected after warm-up`);
  }
  const all = new Samples();
  const clients = server.clients.filter((c) => c !== null);
  const framesSeen = clients.map((c) => c.snapshots.stats.frames);
  const bytesBefore = clients.map((c) => c.channel.stats.bytesSent);
  const packetsBefore = clients.map((c) => c.channel.stats.packetsSent);
  const eventsBefore = match.clients.map((c) => c.client.stats.eventsReceived);
  const receivedBefore = match.clients.map((c) => c.client.stats.framesReceived);
  let frames = 0;
  let entries = 0;
  let deferred = 0;
  const ticksBefore = server.stats.ticks;
  const shotsBefore = server.lagCompensation?.stats.rewinds ?? 0;
  const update = server.update.bind(server);
  server.update = (nowMs: number) => {
    const t0 = performance.now();
    update(nowMs);
    const ms = performance.now() - t0;
    let sent = 0;
    for (let i = 0; i < clients.length; i++) {
      const st = clients[i].snapshots.stats;
      if (st.frames === framesSeen[i]) continue;
      framesSeen[i] = st.frames;
      sent++;
      entries += st.lastCreated + st.lastUpdated;
      deferred += st.lastDeferred;
    }
    frames += sent;
    all.add(ms);
  };
  const measureMs = o.measureMsFor[bots] ?? o.measureMs;
  match.run(measureMs);
  server.update = update;
  const ticks = server.stats.ticks - ticksBefore;
  const shots = (server.lagCompensation?.stats.rewinds ?? 0) - shotsBefore;
  let bytes = 0;
  let packets = 0;
  for (let i = 0; i < clients.length; i++) {
    bytes += clients[i].channel.stats.bytesSent - bytesBefore[i];
    packets += clients[i].channel.stats.packetsSent - packetsBefore[i];
  }
  let events = 0;
  let received = 0;
  for (let i = 0; i < match.clients.length; i++) {
    events += match.clients[i].client.stats.eventsReceived - eventsBefore[i];
    received += match.clients[i].client.stats.framesReceived - receivedBefore[i];
  }
  match.close();
  const sorted = all.sorted();
  const m = mean(sorted) ?? 0;
  const p99 = percentile(sorted, 0.99) ?? 0;
  const perFrame = (x: number) => round(frames > 0 ? x / frames : 0, 1);
  return {
    row: {
      'measured (s)': measureMs / 1000,
      ticks,
      'p50 (ms)': round(percentile(sorted, 0.5) ?? 0, 3),
      'p99 (ms)': round(p99, 3),
      'mean (ms)': round(m, 3),
      'ticks/s on one core': round(1000 / m, 0),
      'core at 64 Hz (%)': round((m / TICK_BUDGET_MS) * 100, 1),
      'shots (/tick)': round(ticks > 0 ? shots / ticks : 0, 1),
      'frames (/tick)': round(ticks > 0 ? frames / ticks : 0, 1),
      'packet (B)': round(packets > 0 ? bytes / packets : 0, 0),
      'events (/frame)': round(received > 0 ? events / received : 0, 1),
      'entries (/frame)': perFrame(entries),
      'deferred (/frame)': perFrame(deferred),
    },
    figures: { bots, meanMs: m, p99Ms: p99 },
  };
}

/** Prints the server tick cost table and the players-per-core estimate. */
export function serverTickSection(options: ServerTickOptions = DEFAULT_SERVER_TICK_OPTIONS): void {
  const rows: Record<string, Row> = {};
  const figures: TickFigures[] = [];
  for (const bots of options.bots) {
    const r = measure(bots, options);
    rows[`${bots} bots`] = r.row;
    figures.push(r.figures);
  }
  table(
    `Server tick cost: real CPU time of GameServer.update per ${TICK_RATE} Hz tick, shooting bots all in view, ${UPDATE_RATE} snapshots/s each`,
    rows,
    [
      'The bots run, jump, switch weapons and fire at the nearest player they see (arena rules: damage, deaths,',
      '  respawns); every command that may fire a hit-scan weapon is lag compensated (exact mode: the other',
      '  players rebuilt as the shooter saw them) before it runs. shots/tick counts those commands.',
      'Each update reads the packets due, runs one tick (every command, the entity commit and interest grid)',
      '  and writes the frames due (per client: packet header, frame header, own state, events, delta snapshot).',
      '  Each client gets a frame every other tick, on the tick parity it connected on, so a tick costs with the',
      '  frames due in it (frames/tick). The bots run in the same process over the memory transport (20 ms each',
      '  way); only the server update is timed, but garbage collection caused by the bots can land in it (p99),',
      '  and other work on the machine shows as noise. Real sockets would add a system call per packet.',
      '  packet: mean bytes of a server packet; events: effect events per frame; entries, deferred:',
      '  entities written in a frame and those the 1200-byte packet could not hold (sent later, by priority).',
      `Warm-up ${options.warmupMs / 1000} s simulated; seed ${options.seed}.`,
      `Players per core at ${TICK_RATE} Hz (mean tick = ${round(TICK_BUDGET_MS, 3)} ms, log-log interpolation): ${playersPerCore(figures, (f) => f.meanMs)};` +
        ` keeping p99 within a tick: ${playersPerCore(figures, (f) => f.p99Ms)}.`,
    ],
  );
}
