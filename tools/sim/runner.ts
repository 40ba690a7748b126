// Runs a planned sim: the arena server judging every shot in all three lag compensation modes,
// and its bots, over the memory transport on simulated time or over UDP on 127.0.0.1 in real
// time; samples the metrics every bucket, reports progress, and returns every figure.

import { closeSync, openSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ConditionedEndpoint, type InputDriver } from 'backstep/testing';
import { type ArenaRules, arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { ArenaShotLedger } from '../../games/arena/testing/shots.ts';
import {
  type ClientHooks,
  createInputSample,
  GameClient,
  type InputSample,
} from '../../src/client/client.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { UdpEndpoint } from '../../src/net/transports/udp.ts';
import { combineHooks, type ServerHooks } from '../../src/server/hooks.ts';
import { KillcamRecorder } from '../../src/server/killcam.ts';
import { LAG_COMPENSATION_MODES } from '../../src/server/lag-compensation.ts';
import { DemoRecorder, type DemoRecorderStats } from '../../src/server/recorder.ts';
import { GameServer, type ServerClient, type ServerConfig } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';
import { Samples } from '../stats.ts';
import {
  BotGroup,
  botAddress,
  botSeeds,
  type ClientSummary,
  clientConfigFor,
  driverFor,
  GroupWorker,
  lockstepWindowMs,
  readBatch,
  splitBots,
  summarizeClient,
  type WindowReply,
} from './lockstep.ts';
import {
  type Figure,
  REAL_CLOCK_FIGURES,
  REAL_CLOCK_SERIES,
  type SeriesName,
  SimMetrics,
} from './metrics.ts';
import { describePlan, type SimOptionsSummary, type SimPlan } from './options.ts';
import { type SoakReport, SoakSampler } from './soak.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;
type Server = GameServer<ArenaPlayerState, ArenaWorld>;
type Driver = InputDriver<ArenaPlayerState, ArenaWorld>;

/** What a run produced: the JSON document `--json` writes. */
export interface SimResult {
  options: SimOptionsSummary;
  /** Every figure by plain name (null: not meaningful in this run, e.g. a share of no rays). */
  figures: Record<string, Figure>;
  /** Names of the figures and series measured on the real clock (not reproducible from the seed). */
  realClockFigures: readonly string[];
  realClockSeries: readonly string[];
  /** Length of one bucket of the series, seconds; `series.t` is each bucket's end. */
  bucketSeconds: number;
  series: Record<SeriesName, Figure[]>;
  /** With --record: the demo file written and what it holds. */
  demo?: DemoRecorderStats & { file: string };
  /** The soak's samples (--soak), or null. */
  soak: SoakReport | null;
}

/** How long a killcam recorded into a demo looks back from the kill. */
const KILLCAM_MS = 3000;

/** The server, the bots' hooks and drivers: the same for both transports. */
interface Fight {
  readonly ledger: ArenaShotLedger;
  readonly rules: ArenaRules | null;
  /** Every client the server accepted, kept after it leaves (for its counters). */
  readonly serverClients: ServerClient<ArenaPlayerState>[];
  readonly serverConfig: Partial<ServerConfig>;
  readonly serverHooks: ServerHooks<ArenaPlayerState, ArenaWorld>;
  /** With --record: the demo recorder (its killcams from the killcam recorder). */
  readonly recorder: DemoRecorder<ArenaPlayerState, ArenaWorld> | null;
}

/** A running server and its bots on one transport. */
interface Session {
  readonly server: Server;
  /**
   * Every bot's client as the metrics read it at `nowMs`, the end of the latest `advance` (over
   * memory, where they were read at the end of that window, on each bot's thread).
   */
  summaries(nowMs: number): readonly ClientSummary[];
  /** Runs until `untilMs` (ms since the start: simulated over memory, real over UDP). */
  advance(untilMs: number): Promise<void>;
  /** Disconnects everyone and releases every socket. */
  close(): Promise<void>;
}

function createFight(plan: SimPlan): Fight {
  const s = plan.scenario;
  const ledger = new ArenaShotLedger();
  const recorder = plan.record === null ? null : new DemoRecorder(arenaGame);
  const killcams = recorder === null ? null : new KillcamRecorder(arenaGame);
  const rules = s.damage
    ? arenaRules({
        respawnMs: s.respawnMs,
        onKill: (_server, killer, victim, weapon) => {
          if (recorder === null || killcams === null) return;
          recorder.kill(killer, victim, weapon < 0 ? 255 : weapon);
          const cam =
            killer === null || killer === victim ? null : killcams.capture(killer, victim, KILLCAM_MS);
          if (cam !== null) recorder.killcam(cam);
        },
      })
    : null;
  const serverClients: ServerClient<ArenaPlayerState>[] = [];
  const track: ServerHooks<ArenaPlayerState, ArenaWorld> = {
    onConnect: (_server, client) => {
      serverClients.push(client);
    },
  };
  const hooks = rules === null ? [ledger.serverHooks(), track] : [rules, ledger.serverHooks(), track];
  if (recorder !== null && killcams !== null) hooks.push(recorder.hooks, killcams.hooks);
  return {
    ledger,
    rules,
    serverClients,
    serverConfig: {
      tickRate: s.tickRate,
      maxClients: plan.bots.length,
      defaultUpdateRate: s.updateRate,
      defaultRateBytesPerSecond: s.rateBytesPerSecond,
      lagCompensation: { mode: s.lagCompensation, maxUnlagMs: s.maxUnlagMs },
    },
    serverHooks: combineHooks(...hooks),
    recorder,
  };
}

/** The shortest window worth running the workers a window behind (ms): shorter ones cost more in hand-overs. */
const MIN_LAGGED_WINDOW_MS = 8;

/**
 * Simulated time: the server on the memory transport and its conditioner, and the bots in
 * `plan.threads` groups: one on this thread beside the server, the others on worker threads in
 * lockstep with it (lockstep.ts). The figures are the same whatever the number of threads.
 */
function startMemory(plan: SimPlan, fight: Fight, tickTimes: Samples): Session {
  // Every endpoint but the server's is given its seeds; the server's links are not conditioned.
  const network = new MemoryNetwork({ seed: plan.seed });
  const serverEndpoint = network.createEndpoint('server');
  const server = new GameServer(
    arenaGame,
    serverEndpoint,
    { cookieSecret: new Uint8Array(32).fill(7), ...fight.serverConfig },
    fight.serverHooks,
  );
  // Time every server update (a tick and its sends) on the real clock; nothing else reads it.
  const update = server.update.bind(server);
  server.update = (nowMs: number) => {
    const t0 = performance.now();
    update(nowMs);
    tickTimes.add(performance.now() - t0);
  };
  const seeds = botSeeds(plan);
  const groups = splitBots(plan.bots.length, plan.threads);
  const workers = groups.slice(1).map((indices) => new GroupWorker({ plan, indices, seeds }));
  workers.forEach((w, k) => {
    for (const i of groups[k + 1]) {
      network.createRelay(botAddress(i), (_from, bytes, atMs) => w.outbox.add(i, atMs, bytes));
    }
  });
  const group = new BotGroup(plan, groups[0], seeds, network, fight.ledger);
  // The workers run up to a window behind or ahead of this thread when the links' delays leave
  // windows long enough for it: then neither side waits out the other's slower windows (the work
  // per window varies: a server tick writes frames every other tick).
  const lag =
    workers.length > 0 && lockstepWindowMs(plan.scenario, plan.bots, 1) >= MIN_LAGGED_WINDOW_MS ? 1 : 0;
  const windowMs =
    workers.length > 0 ? lockstepWindowMs(plan.scenario, plan.bots, lag) : Number.POSITIVE_INFINITY;
  const summaries: ClientSummary[] = [];
  let nextTickMs = 0;
  let nowMs = 0;
  const runUntil = (untilMs: number) => {
    for (;;) {
      const next = Math.min(nextTickMs, group.nextFrameMs);
      if (next > untilMs) break;
      if (nextTickMs <= next) {
        server.update(next);
        nextTickMs += server.tickIntervalMs;
      }
      group.frames(next);
    }
  };
  const deliver = (bot: number, atMs: number, bytes: Uint8Array) =>
    serverEndpoint.deliver(botAddress(bot), bytes, atMs);
  // Made once, not for each window or bucket: a closure made anew for each bucket and run hot was
  // optimized anew about once a minute all through a soak (V8's --trace-opt), each time new code.
  const take = (got: WindowReply[]) => {
    for (let k = 0; k < got.length; k++) {
      const reply = got[k];
      readBatch(reply.datagrams, deliver);
      fight.ledger.addPending(reply.shots);
      const read = reply.summaries;
      if (read === null) continue;
      const indices = groups[k + 1];
      for (let j = 0; j < indices.length; j++) summaries[indices[j]] = read[j];
    }
  };
  const ends: number[] = [];
  const start = (k: number) => {
    const asked: Promise<WindowReply>[] = [];
    for (const w of workers) asked.push(w.start(ends[k], ends[k] === ends[ends.length - 1]));
    return asked;
  };
  return {
    server,
    summaries: () => summaries,
    advance: async (untilMs) => {
      ends.length = 0;
      for (let t = nowMs; t < untilMs; ) {
        t = Math.min(untilMs, t + windowMs);
        ends.push(t);
      }
      const replies: Promise<WindowReply>[][] = [];
      let taken = 0;
      // Lag 0: each window in step. Lag 1: a worker is asked for window k + 1 (with the server's
      // datagrams up to window k - 1) before this thread runs window k, which needs the workers'
      // datagrams up to window k - 2 only: either side may be a window ahead of the other.
      if (lag === 1 && ends.length > 0) replies.push(start(0));
      for (let k = 0; k < ends.length; k++) {
        if (lag === 0) replies.push(start(k));
        else if (k + 1 < ends.length) replies.push(start(k + 1));
        for (; taken < k - 1; taken++) take(await Promise.all(replies[taken]));
        runUntil(ends[k]);
        if (lag === 0) take(await Promise.all(replies[taken++]));
        nowMs = ends[k];
      }
      for (; taken < replies.length; taken++) take(await Promise.all(replies[taken]));
      const own = group.summaries();
      const indices = groups[0];
      for (let j = 0; j < own.length; j++) summaries[indices[j]] = own[j];
    },
    close: async () => {
      group.disconnect();
      server.close();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}

interface UdpBot {
  readonly client: Client;
  readonly conditioned: ConditionedEndpoint | null;
  readonly input: InputSample;
  readonly drive: Driver;
  nextFrameMs: number;
}

/**
 * Real time: UDP sockets on 127.0.0.1, one per bot and one for the server, driven by a 1 ms timer
 * loop (the server at its tick rate, each bot at its frame rate). A bot's profile conditions its
 * socket (ConditionedEndpoint); "none" leaves the bare loopback.
 */
async function startUdp(plan: SimPlan, fight: Fight, tickTimes: Samples): Promise<Session> {
  const sockets: UdpEndpoint[] = [];
  const open = async () => {
    const socket = await UdpEndpoint.open({ host: '127.0.0.1', port: 0 });
    sockets.push(socket);
    return socket;
  };
  try {
    return await connectUdp(plan, fight, tickTimes, sockets, open);
  } catch (e) {
    await Promise.all(sockets.map((socket) => socket.close()));
    throw e;
  }
}

/** Opens every socket through `open` (which keeps them for closing) and builds the session. */
async function connectUdp(
  plan: SimPlan,
  fight: Fight,
  tickTimes: Samples,
  sockets: UdpEndpoint[],
  open: () => Promise<UdpEndpoint>,
): Promise<Session> {
  const random = new Random(plan.seed);
  const seeds = botSeeds(plan);
  const clientConfig = clientConfigFor(plan);
  const frameMs = 1000 / plan.scenario.frameRate;
  const serverSocket = await open();
  const server = new GameServer(arenaGame, serverSocket, fight.serverConfig, fight.serverHooks);
  const bots: UdpBot[] = [];
  for (let i = 0; i < plan.bots.length; i++) {
    const bot = plan.bots[i];
    const socket = await open();
    const conditioned =
      bot.profile === null ? null : new ConditionedEndpoint(socket, bot.profile, random.nextU32());
    let client: Client | null = null;
    const hooks: ClientHooks = fight.ledger.clientHooks(() => client as Client);
    client = new GameClient(
      arenaGame,
      conditioned ?? socket,
      serverSocket.address,
      { ...clientConfig, seed: random.nextU32() },
      hooks,
    );
    bots.push({
      client,
      conditioned,
      input: createInputSample(),
      drive: driverFor(plan, i, seeds[i].driver),
      nextFrameMs: 0,
    });
  }
  const start = performance.now();
  for (const b of bots) b.client.connect(0);
  const tickMs = server.tickIntervalMs;
  const jitterMs = plan.scenario.frameJitterMs;
  let nextTickMs = 0;
  const step = (now: number) => {
    for (const b of bots) b.conditioned?.pump(now);
    if (now >= nextTickMs) {
      const t0 = performance.now();
      server.update(now);
      tickTimes.add(performance.now() - t0);
      while (nextTickMs <= now) nextTickMs += tickMs;
    }
    for (const b of bots) {
      if (now < b.nextFrameMs) continue;
      b.drive(b.client, now, b.input);
      b.client.update(now, b.input);
      b.nextFrameMs = now + frameMs + (jitterMs > 0 ? random.range(0, jitterMs) : 0);
    }
  };
  // One loop for the whole run, not one made for each advance (see startMemory's `take`).
  let advanceUntilMs = 0;
  let advanced: (() => void) | null = null;
  let failed: ((e: unknown) => void) | null = null;
  const loop = () => {
    const now = performance.now() - start;
    if (now >= advanceUntilMs) {
      advanced?.();
      return;
    }
    try {
      step(now);
    } catch (e) {
      failed?.(e);
      return;
    }
    setTimeout(loop, 1);
  };
  return {
    server,
    summaries: () => {
      const out: ClientSummary[] = [];
      for (const b of bots) {
        const links =
          b.conditioned === null ? null : { up: b.conditioned.up.stats, down: b.conditioned.down.stats };
        out.push(summarizeClient(b.client, links));
      }
      return out;
    },
    advance: (untilMs) =>
      new Promise<void>((resolve, reject) => {
        advanceUntilMs = untilMs;
        advanced = resolve;
        failed = reject;
        loop();
      }),
    close: async () => {
      for (const b of bots) b.client.disconnect();
      server.close();
      for (const b of bots) b.conditioned?.close();
      await Promise.all(sockets.map((s) => s.close()));
    },
  };
}

function percent(x: Figure): string {
  return x === null ? '  -   ' : `${(x * 100).toFixed(1).padStart(5)}%`;
}

/** One soak sample as a progress line. */
function soakLine(s: SoakReport['samples'][number]): string {
  const ms = (x: number | null) => (x === null ? '-' : x.toFixed(2));
  return `  soak  ${s.t.toFixed(0).padStart(5)} s  heap ${s.heapMB.toFixed(1)} MB  rss ${s.rssMB.toFixed(1)} MB  tick p50 ${ms(s.tickP50Ms)} ms  p99 ${ms(s.tickP99Ms)} ms`;
}

/** One progress line: how far, the wall time, and the newest figures. */
function progressLine(
  plan: SimPlan,
  metrics: SimMetrics,
  fight: Fight,
  done: number,
  wallSeconds: number,
): string {
  const agreement = LAG_COMPENSATION_MODES.map(
    (m) => `${m} ${percent(metrics.latest(`hitAgreement.${m}.cumulative`))}`,
  ).join('  ');
  const clock = plan.transport === 'memory' ? 'simulated' : 'real';
  const t = (metrics.latest('t') ?? 0).toFixed(0).padStart(5);
  const down = Math.round(metrics.latest('bytesPerClientPerSecond.down') ?? 0);
  return `${(done * 100).toFixed(0).padStart(4)}%  ${t} s ${clock}  (wall ${wallSeconds.toFixed(1)} s)  hit agreement ${agreement}  kills ${fight.rules?.kills ?? 0}  down ${down} B/s per client`;
}

/**
 * Runs the plan and returns its figures. `log` receives a progress line about every 5% of the
 * run (none when `plan.progress` is false). With the memory transport every figure but those
 * listed in `realClockFigures` is the same for the same plan and seed.
 */
export async function runSim(plan: SimPlan, log: (line: string) => void = () => {}): Promise<SimResult> {
  const s = plan.scenario;
  const totalMs = s.seconds * 1000;
  const bucketMs = 1000 * Math.max(1, Math.ceil(s.seconds / 300));
  const fight = createFight(plan);
  const tickTimes = new Samples(s.seconds * s.tickRate * 1.1);
  const wallStart = performance.now();
  const session =
    plan.transport === 'memory'
      ? startMemory(plan, fight, tickTimes)
      : await startUdp(plan, fight, tickTimes);
  const metrics = new SimMetrics(
    {
      server: session.server,
      serverClients: fight.serverClients,
      clients: (nowMs) => session.summaries(nowMs),
      profiles: plan.bots.map((b) => b.profile),
      ledger: fight.ledger,
      rules: fight.rules,
      tickTimes,
    },
    Math.ceil(totalMs / bucketMs),
  );
  const soak = plan.soakSeconds === null ? null : new SoakSampler(plan.soakSeconds, s.seconds, tickTimes);
  let shownStep = 0;
  let figures: Record<string, Figure>;
  const demoFile = plan.record === null ? -1 : openSync(plan.record, 'w');
  fight.recorder?.start(session.server, (bytes) => writeSync(demoFile, bytes));
  try {
    for (let t = 0; t < totalMs; ) {
      const end = Math.min(totalMs, t + bucketMs);
      await session.advance(end);
      metrics.sample(end);
      t = end;
      if (soak?.due(t / 1000)) {
        soak.sample(t / 1000);
        const newest = soak.latest();
        if (plan.progress && newest !== null) log(soakLine(newest));
      }
      const step = Math.floor((t / totalMs) * 20);
      if (plan.progress && step > shownStep) {
        shownStep = step;
        log(progressLine(plan, metrics, fight, t / totalMs, (performance.now() - wallStart) / 1000));
      }
    }
    figures = metrics.figures(totalMs / 1000);
    if (soak !== null) Object.assign(figures, soak.figures());
  } finally {
    fight.recorder?.stop();
    if (demoFile >= 0) closeSync(demoFile);
    await session.close();
  }
  figures.wallClockSeconds = (performance.now() - wallStart) / 1000;
  figures.wallClockPerSimulatedSecond = figures.wallClockSeconds / (totalMs / 1000);
  let runners = 0;
  for (const b of plan.bots) if (b.kind === 'runner') runners++;
  return {
    options: describePlan(plan),
    figures: {
      bots: plan.bots.length,
      'bots.aim': plan.bots.length - runners,
      'bots.runner': runners,
      ...figures,
    },
    realClockFigures: REAL_CLOCK_FIGURES,
    realClockSeries: REAL_CLOCK_SERIES,
    bucketSeconds: bucketMs / 1000,
    series: metrics.series(),
    ...(fight.recorder !== null && plan.record !== null
      ? { demo: { ...fight.recorder.stats, file: plan.record } }
      : {}),
    soak: soak?.report ?? null,
  };
}
