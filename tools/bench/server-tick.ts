// Benchmark section 2: the server's real CPU time per tick for 16 to 512 shooting bots, in three
// scenes: the arena, where every player is in every other's view, a large level whose players
// see only those within a view radius (interest management at work), and the arena again with
// every bot on a mobile link (jitter and loss scatter the baselines clients hold); the mean number of
// entities in each client's view, the players one core could hold at 64 Hz, and the figures
// before the shared encode cache and the rewind-only-when-the-weapon-can-fire change (README).
// First, two parts of every frame timed alone: the owner's state and the view radius query.

import { performance } from 'node:perf_hooks';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import type { DatagramEndpoint } from 'backstep/net';
import { GameServer } from 'backstep/server';
import { Match } from 'backstep/testing';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { boxBrush, createLevel, type Level, type SpawnPoint } from '../../games/arena/shared/level.ts';
import {
  createArenaPlayerState,
  createLevelWorld,
  serializeArenaPlayerState,
} from '../../games/arena/shared/player.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { serverCipher } from '../../src/net/node-packet-crypto.ts';
import { type NetworkProfile, profileByName } from '../../src/net/profile.ts';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { PlayerStateHistory } from '../../src/protocol/player-state.ts';
import { InterestGrid } from '../../src/server/interest.ts';
import type { ServerConfig } from '../../src/server/server.ts';
import type { GameDefinition } from '../../src/sim/game.ts';
import { vec3 } from '../../src/sim/math.ts';
import { Random } from '../../src/sim/random.ts';
import { mean, percentile, Samples } from '../stats.ts';
import { type Row, round, table, timePerCall } from './report.ts';
import { CLEAN_20MS } from './scene.ts';
import {
  beginMeasured,
  createServerRecording,
  endMeasured,
  fastestPerUpdate,
  recordingServerEndpoint,
  recordServerUpdates,
  replayServerInProcess,
  type ServerRecording,
} from './server-replay.ts';

export interface ServerTickOptions {
  bots: readonly number[];
  /** Bot counts of the large-level scene. */
  largeBots: readonly number[];
  /** Bot counts of the arena with every bot on the mobile link. */
  mobileBots: readonly number[];
  seed: number;
  warmupMs: number;
  /** Measured simulated time per size, by bot count (counts not listed use `measureMs`). */
  measureMs: number;
  measureMsFor: Readonly<Record<number, number>>;
  /**
   * The scene and size whose server is recorded and replayed alone (server-replay.ts), and how
   * many timed passes; null: none.
   */
  replay: { scene: SceneName; bots: number; passes: number } | null;
}

export const DEFAULT_SERVER_TICK_OPTIONS: ServerTickOptions = {
  bots: [16, 32, 64, 128, 256, 512],
  largeBots: [128, 256, 512],
  mobileBots: [128, 256],
  seed: 1,
  warmupMs: 1500,
  measureMs: 8000,
  measureMsFor: { 256: 6000, 512: 4000 },
  replay: { scene: 'large', bots: 512, passes: 5 },
};

/** Half the width of the large level's floor; the arena's is 1008. */
const LARGE_HALF_WIDTH = 3968;
/** How far a player sees in the large level (the server's snapshot view radius). */
const LARGE_VIEW_RADIUS = 1200;

/** A 7936-unit square floor inside walls, crates every 512 units for cover, 196 spawn points spread over it. */
function largeLevel(): Level {
  const h = LARGE_HALF_WIDTH;
  const brushes = [
    boxBrush(vec3(-h - 16, -h - 16, -32), vec3(h + 16, h + 16, 0)),
    boxBrush(vec3(-h - 16, -h - 16, 0), vec3(-h, h + 16, 256)),
    boxBrush(vec3(h, -h - 16, 0), vec3(h + 16, h + 16, 256)),
    boxBrush(vec3(-h, -h - 16, 0), vec3(h, -h, 256)),
    boxBrush(vec3(-h, h, 0), vec3(h, h + 16, 256)),
  ];
  const spawns: SpawnPoint[] = [];
  for (let x = -3584; x <= 3584; x += 512) {
    for (let y = -3584; y <= 3584; y += 512) {
      brushes.push(boxBrush(vec3(x + 160, y + 160, 0), vec3(x + 224, y + 224, 64)));
      spawns.push({ origin: vec3(x, y, 0), yaw: (x + y) % 360 });
    }
  }
  return createLevel('large', brushes, spawns);
}

interface Scene {
  name: string;
  game: GameDefinition<ArenaPlayerState, ArenaWorld>;
  server: Partial<ServerConfig>;
  /** Every bot's link. */
  profile: NetworkProfile;
}

export type SceneName = 'arena' | 'large' | 'mobile';

/** The mobile profile without its handover spike, so every measured second sees the same link. */
const MOBILE_STEADY: NetworkProfile = { ...profileByName('mobile'), events: [] };

const LARGE_LEVEL = largeLevel();
const SCENES: Record<SceneName, Scene> = {
  arena: { name: 'arena, all in view', game: arenaGame, server: {}, profile: CLEAN_20MS },
  large: {
    name: `large level, view radius ${LARGE_VIEW_RADIUS}`,
    game: { ...arenaGame, createWorld: () => createLevelWorld(LARGE_LEVEL) },
    server: { snapshots: { viewRadius: LARGE_VIEW_RADIUS } },
    profile: CLEAN_20MS,
  },
  mobile: {
    name: 'arena, all in view, every bot on the mobile link (60 ms and 20 ms jitter each way, 2 % loss in bursts)',
    game: arenaGame,
    server: {},
    profile: MOBILE_STEADY,
  },
};

/**
 * Before the shared snapshot encode cache and rewinding only for commands whose weapon can fire:
 * the README's arena table at 16 to 256 players and the 512-player figure measured with it
 * (mean, p99 ms), on this machine.
 */
const BEFORE: Readonly<Record<number, readonly [number, number]>> = {
  16: [0.41, 2.9],
  32: [0.56, 1.8],
  64: [2.11, 4.7],
  128: [8.3, 17.8],
  256: [28.1, 63.0],
  512: [83, 173],
};

const TICK_RATE = 64;
/** The most simulated time the warm-up waits for the writers' frame pools to fill. */
const MAX_POOL_WARMUP_MS = 15_000;
const UPDATE_RATE = 32;
const TICK_BUDGET_MS = 1000 / TICK_RATE;

interface TickFigures {
  bots: number;
  meanMs: number;
  p50Ms: number;
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

/** The bench server's secret key: a replay of a recorded server needs the recorded one's. */
const BENCH_SECRET_KEY = new Uint8Array(32).fill(11);

/** The server configuration of `sceneName` with `bots` players. */
function sceneServerConfig(sceneName: SceneName, bots: number): Partial<ServerConfig> {
  return {
    tickRate: TICK_RATE,
    maxClients: bots,
    defaultUpdateRate: UPDATE_RATE,
    cookieSecret: new Uint8Array(32).fill(7),
    secretKey: BENCH_SECRET_KEY,
    ...SCENES[sceneName].server,
  };
}

/** A fresh server of `sceneName` with `bots` players on `endpoint`, as its matches make it (for replays). */
export function sceneServer(
  sceneName: string,
  bots: number,
  endpoint: DatagramEndpoint,
): GameServer<unknown, unknown> {
  if (!Object.hasOwn(SCENES, sceneName)) throw new RangeError(`server tick: no scene '${sceneName}'`);
  const name = sceneName as SceneName;
  return new GameServer(
    SCENES[name].game,
    endpoint,
    sceneServerConfig(name, bots),
    arenaRules({ respawnMs: 1000 }),
  ) as unknown as GameServer<unknown, unknown>;
}

/**
 * A match of the benchmark's scene (arena or large level) with `bots` shooting bots, run through
 * the warm-up and then until the snapshot writers' frame pools are full (the steady state: no
 * frame allocated), which takes the writers' remembered ticks after each client's rate control
 * reached 32 snapshots a second. `tools/ab.ts` builds it from two source trees to compare them.
 */
export function tickScene(
  sceneName: SceneName,
  bots: number,
  o: Pick<ServerTickOptions, 'seed' | 'warmupMs'> = DEFAULT_SERVER_TICK_OPTIONS,
  recording: ServerRecording | null = null,
): Match<ArenaPlayerState, ArenaWorld> {
  const scene = SCENES[sceneName];
  const match = new Match<ArenaPlayerState, ArenaWorld>(
    scene.game,
    o.seed,
    sceneServerConfig(sceneName, bots),
    arenaRules({ respawnMs: 1000 }),
    recording === null ? {} : { wrapServerEndpoint: (e) => recordingServerEndpoint(e, recording) },
  );
  if (recording !== null) recordServerUpdates(match.server, recording);
  for (let i = 0; i < bots; i++) {
    match.addClient({
      profile: scene.profile,
      drive: aimBot(o.seed * 7919 + i, { aimErrorUnits: 12 }),
      frameJitterMs: 2,
      // The bots seal with the server's cipher: what they cost is not measured, only slows the run.
      config: { updateRate: UPDATE_RATE, rateBytesPerSecond: 200_000, packetCipher: serverCipher },
    });
  }
  match.run(o.warmupMs);
  const server = match.server;
  if (server.clientCount !== bots) {
    throw new Error(`server tick: ${server.clientCount} of ${bots} bots connected after warm-up`);
  }
  const kept = () => server.clients.reduce((n, c) => n + (c === null ? 0 : c.snapshots.framesKept), 0);
  for (let before = kept(), waited = 0; waited < MAX_POOL_WARMUP_MS; waited += 500) {
    match.run(500);
    const now = kept();
    if (now === before) break;
    before = now;
  }
  return match;
}

/** Runs one match of `bots` shooting bots and times every server update after the warm-up. */
function measure(
  bots: number,
  o: ServerTickOptions,
  sceneName: SceneName,
  recording: ServerRecording | null = null,
): { row: Row; figures: TickFigures } {
  const scene = SCENES[sceneName];
  const match = tickScene(sceneName, bots, o, recording);
  const server = match.server;
  const all = new Samples();
  const cpu = new Samples();
  // Each update's wall clock less the collector's pauses within it (V8's GCProfiler, per update):
  // the bots share the server's heap, so their garbage is collected inside the server's updates.
  const withoutGc = new Samples();
  let gcMs = 0;
  let gcUpdates = 0;
  // Heap growth across an update (updates during which a collection shrank the heap are left out).
  let allocated = 0;
  let allocatedTicks = 0;
  const clients = server.clients.filter((c) => c !== null);
  const framesSeen = clients.map((c) => c.snapshots.stats.frames);
  const bytesBefore = clients.map((c) => c.channel.stats.bytesSent);
  const packetsBefore = clients.map((c) => c.channel.stats.packetsSent);
  const eventsBefore = match.clients.map((c) => c.client.stats.eventsReceived);
  const receivedBefore = match.clients.map((c) => c.client.stats.framesReceived);
  let frames = 0;
  let framesMost = 0;
  let inView = 0;
  let entries = 0;
  let deferred = 0;
  const ticksBefore = server.stats.ticks;
  const phaseBefore = { ...server.stats.phaseMs };
  const loggedBefore = server.events.head;
  const missedBefore = clients.reduce((n, c) => n + c.eventsMissed, 0);
  const shotsBefore = server.lagCompensation?.stats.rewinds ?? 0;
  const cache = server.snapshotCache.stats;
  const encodedBefore = cache.encoded;
  const reusedBefore = cache.reused;
  // Times one update (`update(nowMs)`); a recorded server's update runs inside its recording's
  // bookkeeping, which is left out of the time.
  const timed = (nowMs: number, update: (nowMs: number) => void) => {
    const gc = new GCProfiler();
    gc.start();
    const h0 = getHeapStatistics().used_heap_size;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    update(nowMs);
    const ms = performance.now() - t0;
    const c1 = process.cpuUsage(c0);
    const h1 = getHeapStatistics().used_heap_size;
    const collections = gc.stop().statistics;
    let paused = 0;
    for (let i = 0; i < collections.length; i++) paused += collections[i].cost / 1000;
    gcMs += paused;
    if (collections.length > 0) gcUpdates++;
    withoutGc.add(Math.max(0, ms - paused));
    if (h1 >= h0) {
      allocated += h1 - h0;
      allocatedTicks++;
    }
    cpu.add((c1.user + c1.system) / 1000);
    let sent = 0;
    for (let i = 0; i < clients.length; i++) {
      const st = clients[i].snapshots.stats;
      if (st.frames === framesSeen[i]) continue;
      framesSeen[i] = st.frames;
      sent++;
      entries += st.lastCreated + st.lastUpdated;
      inView += st.lastInView;
      deferred += st.lastDeferred;
    }
    frames += sent;
    if (sent > framesMost) framesMost = sent;
    all.add(ms);
  };
  const update = server.update.bind(server);
  if (recording === null) server.update = (nowMs: number) => timed(nowMs, update);
  else recording.around = timed;
  const measureMs = o.measureMsFor[bots] ?? o.measureMs;
  if (recording !== null) beginMeasured(recording);
  match.run(measureMs);
  if (recording !== null) {
    endMeasured(recording);
    recording.around = undefined;
  }
  server.update = update;
  const ticks = server.stats.ticks - ticksBefore;
  const phase = server.stats.phaseMs;
  const perUpdate = (now: number, before: number) => round(all.count > 0 ? (now - before) / all.count : 0, 2);
  const logged = server.events.head - loggedBefore;
  const missed = clients.reduce((n, c) => n + c.eventsMissed, 0) - missedBefore;
  const shots = (server.lagCompensation?.stats.rewinds ?? 0) - shotsBefore;
  const encoded = cache.encoded - encodedBefore;
  const reused = cache.reused - reusedBefore;
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
  const cpuSorted = cpu.sorted();
  const perFrame = (x: number) => round(frames > 0 ? x / frames : 0, 1);
  return {
    row: {
      'measured (s)': measureMs / 1000,
      ticks,
      'p50 (ms)': round(percentile(sorted, 0.5) ?? 0, 3),
      'p99 (ms)': round(p99, 3),
      'mean (ms)': round(m, 3),
      'p99 without GC (ms)': round(percentile(withoutGc.sorted(), 0.99) ?? 0, 3),
      'GC (ms/update, updates with one %)': `${round(all.count > 0 ? gcMs / all.count : 0, 2)}, ${round(all.count > 0 ? (gcUpdates / all.count) * 100 : 0, 1)}`,
      'CPU p50 / p99 / mean (ms)': [
        round(percentile(cpuSorted, 0.5) ?? 0, 2),
        round(percentile(cpuSorted, 0.99) ?? 0, 2),
        round(mean(cpuSorted) ?? 0, 2),
      ].join(' / '),
      'receive / simulate / send (ms)': [
        perUpdate(phase.receive, phaseBefore.receive),
        perUpdate(phase.simulate, phaseBefore.simulate),
        perUpdate(phase.send, phaseBefore.send),
      ].join(' / '),
      'before: mean / p99 (ms)': scene === SCENES.arena && BEFORE[bots] ? BEFORE[bots].join(' / ') : '-',
      'in view (mean)': perFrame(inView),
      'ticks/s on one core': round(1000 / m, 0),
      'core at 64 Hz (%)': round((m / TICK_BUDGET_MS) * 100, 1),
      'allocated (KB/update)': round(allocatedTicks > 0 ? allocated / allocatedTicks / 1024 : 0, 0),
      'shots (/tick)': round(ticks > 0 ? shots / ticks : 0, 1),
      'frames (/tick, mean / most)': `${round(ticks > 0 ? frames / ticks : 0, 1)} / ${framesMost}`,
      'packet (B)': round(packets > 0 ? bytes / packets : 0, 0),
      'events (/frame)': round(received > 0 ? events / received : 0, 1),
      'events logged (/tick)': round(ticks > 0 ? logged / ticks : 0, 1),
      'events missed': missed,
      'entries (/frame)': perFrame(entries),
      'deferred (/frame)': perFrame(deferred),
      'entries shared (%)': round(encoded + reused > 0 ? (reused / (encoded + reused)) * 100 : 0, 1),
    },
    figures: { bots, meanMs: m, p50Ms: percentile(sorted, 0.5) ?? 0, p99Ms: p99 },
  };
}

/**
 * Two parts of every frame of every client, alone: the owner's state (the player part,
 * player-state.ts: recording the state the frame carries, the game's serialize with each field's
 * place and value noted, and writing it against the frame two back), and the interest grid's
 * query for the entities within the view radius (the large level's: 512 players on its floor).
 */
function framePartsTable(): void {
  const history = new PlayerStateHistory(serializeArenaPlayerState, 64);
  const state = createArenaPlayerState();
  const s = new BitStream(MAX_PACKET_BYTES);
  const frame = { serverTick: 0, ackedCommand: 0, playerBaseline: -1, player: state };
  let tick = 2;
  const move = () => {
    tick++;
    state.originX = (tick % 1000) * 0.5;
    state.originY = (tick % 777) * 0.25;
    state.velocityX = (tick % 320) - 160;
    state.yaw = (tick * 3) % 360;
  };
  const recordUs =
    timePerCall(() => {
      move();
      history.record(tick, state, tick);
    }) * 1000;
  const bothUs =
    timePerCall(() => {
      move();
      history.record(tick, state, tick);
      frame.serverTick = tick;
      frame.ackedCommand = tick;
      frame.playerBaseline = tick - 2;
      s.beginWrite();
      history.serialize(s, frame);
    }) * 1000;
  // 512 players spread over the large level's floor (heights 0 to 64: one layer of cells).
  const players = 512;
  const grid = new InterestGrid(players);
  const positions = new Float64Array(3 * players);
  const alive = new Uint8Array(players).fill(1);
  const random = new Random(7);
  for (let i = 0; i < players; i++) {
    positions[3 * i] = random.range(-LARGE_HALF_WIDTH, LARGE_HALF_WIDTH);
    positions[3 * i + 1] = random.range(-LARGE_HALF_WIDTH, LARGE_HALF_WIDTH);
    positions[3 * i + 2] = random.range(0, 64);
  }
  grid.rebuild(positions, alive, players);
  const found = new Uint16Array(players);
  let q = 0;
  let inView = 0;
  let queries = 0;
  const queryUs =
    timePerCall(() => {
      const i = q++ % players;
      inView += grid.query(
        positions[3 * i],
        positions[3 * i + 1],
        positions[3 * i + 2],
        LARGE_VIEW_RADIUS,
        found,
      );
      queries++;
    }) * 1000;
  table(
    "Parts of every frame, alone: the owner's state and the view radius query",
    {
      'per frame': {
        'own state: record (us)': round(recordUs, 2),
        'own state: record + write (us)': round(bothUs, 2),
        [`interest query, radius ${LARGE_VIEW_RADIUS} (us)`]: round(queryUs, 2),
        'entities found (mean)': round(inView / queries, 1),
      },
    },
    [
      "own state: the arena player; record: the game's serialize into the frame's slot, each field's place and",
      "  value noted (PlayerStateHistory.record); write: the field delta against the baseline's own baseline.",
      `interest query: InterestGrid.query around each of ${players} players spread over the large level's floor`,
      '  (the snapshot writer asks it once a frame).',
    ],
  );
}

/** Prints the server tick cost table of each scene and its players-per-core estimate. */
export async function serverTickSection(
  options: ServerTickOptions = DEFAULT_SERVER_TICK_OPTIONS,
): Promise<void> {
  framePartsTable();
  for (const [sceneName, sizes] of [
    ['arena', options.bots],
    ['large', options.largeBots],
    ['mobile', options.mobileBots],
  ] as const) {
    if (sizes.length === 0) continue;
    const scene = SCENES[sceneName];
    const rows: Record<string, Row> = {};
    const figures: TickFigures[] = [];
    const replay = options.replay?.scene === sceneName ? options.replay : null;
    let recording: ServerRecording | null = null;
    let recorded: TickFigures | null = null;
    for (const bots of sizes) {
      const record = replay !== null && replay.bots === bots;
      if (record) recording = createServerRecording(options.seed);
      const r = measure(bots, options, sceneName, record ? recording : null);
      rows[`${bots} bots`] = r.row;
      figures.push(r.figures);
      if (record) recorded = r.figures;
    }
    table(
      `Server tick cost, ${scene.name}: wall clock and CPU time of GameServer.update per ${TICK_RATE} Hz tick, shooting bots, ${UPDATE_RATE} snapshots/s each`,
      rows,
      [
        'The bots run, jump, switch weapons and fire at the nearest player they see (arena rules: damage, deaths,',
        '  respawns); every command whose weapon can fire a hit-scan shot is lag compensated (exact mode: the other',
        '  players rebuilt as the shooter saw them) before it runs. shots/tick counts those commands.',
        'Each update reads the packets due, runs one tick (every command, the entity commit and interest grid)',
        '  and writes the frames due (per client: packet header, frame header, own state, events, delta snapshot).',
        '  Each client gets a frame every other tick, spread over the ticks (frames/tick, mean and busiest), so a',
        '  tick costs with the frames due in it. The bots run in the same process over the memory transport (20 ms each',
        '  way, or the mobile link); only the server update is timed, but garbage collection caused by the bots can land in it (p99),',
        "  so each update's collector pauses are measured too (V8's GCProfiler): GC is their mean per update and",
        '  the share of updates with one; p99 without GC is the p99 of each update less its pauses (what the',
        "  server's own work costs, the bots' garbage and the server's alike left out: a lower bound).",
        '  and other work on the machine shows as noise (8 engineers share 2 cores: compare ratios within a run).',
        '  CPU: the process CPU time the update took (process.cpuUsage: every thread, so the collector threads',
        '  working for the bots count too); on a loaded machine the wall clock also counts time the server',
        '  waited for a core, which CPU time does not. allocated: mean heap growth across an update (the',
        '  server allocates that much per tick; updates during which a collection ran are left out).',
        '  receive / simulate / send: where the mean update went (GameServer.stats.phaseMs, real clock): reading',
        '  the packets due (decryption, acknowledgements, commands), the tick (commands, lag compensation, the',
        "  entity commit) and the connections' upkeep and frames (snapshots, events, own state, sealing).",
        '  frames: client frames written per tick, mean and on the busiest tick (the server spreads them over the',
        '  ticks: GameServer config spreadFrames).',
        "  in view: entities in a client's view after its frame, mean over frames; packet: mean bytes of a server",
        '  packet; events: effect events per frame, events the server logged per tick, and events its log overwrote',
        "  before a client's next frame looked at them (missed); entries, deferred: entities written in a frame and those the",
        '  1200-byte packet could not hold (sent later, by priority); entries shared: entries copied from the',
        "  encode cache that another client's frame had already encoded this tick.",
        `  before: the same arena scene before the encode cache and fire-only rewinds (README; 512: measured then).`,
        `Warm-up ${options.warmupMs / 1000} s simulated, then until the snapshot writers' frame pools are full; seed ${options.seed}.`,
        `Players per core at ${TICK_RATE} Hz (mean tick = ${round(TICK_BUDGET_MS, 3)} ms, log-log interpolation): ${playersPerCore(figures, (f) => f.meanMs)};` +
          ` keeping p99 within a tick: ${playersPerCore(figures, (f) => f.p99Ms)}.`,
      ],
    );
    if (replay !== null && recording !== null && recorded !== null) {
      await replayTable(scene.name, sceneName, replay.bots, replay.passes, recording, recorded);
    }
  }
}

/**
 * How the replay processes run: as `npm run bench` does; with V8's collector on the server's own
 * thread, as docs/deployment.md runs a server given one core; that with a young generation of 64
 * MB a half; and that with each datagram in an ArrayBuffer of its own, as a UDP socket gives them.
 */
const REPLAY_FORMS: readonly { label: string; nodeFlags: readonly string[]; ownBuffers: boolean }[] = [
  { label: '', nodeFlags: [], ownBuffers: false },
  { label: ' with --single-threaded-gc', nodeFlags: ['--single-threaded-gc'], ownBuffers: false },
  {
    label: ' with --single-threaded-gc --max-semi-space-size=64',
    nodeFlags: ['--single-threaded-gc', '--max-semi-space-size=64'],
    ownBuffers: false,
  },
  {
    label: ' with --single-threaded-gc, a buffer per datagram',
    nodeFlags: ['--single-threaded-gc'],
    ownBuffers: true,
  },
];

/**
 * The recorded server of one scene and size replayed alone (server-replay.ts): its updates timed
 * in every pass, and each update's fastest run, beside the same updates timed in the match.
 */
async function replayTable(
  title: string,
  sceneName: SceneName,
  bots: number,
  passes: number,
  recording: ServerRecording,
  inMatch: TickFigures,
): Promise<void> {
  const figures = (s: Samples, collections: string): Row => {
    const sorted = s.sorted();
    return {
      updates: s.count,
      'p50 (ms)': round(percentile(sorted, 0.5) ?? 0, 3),
      'p99 (ms)': round(percentile(sorted, 0.99) ?? 0, 3),
      'mean (ms)': round(mean(sorted) ?? 0, 3),
      'within the tick at p99': (percentile(sorted, 0.99) ?? 0) <= TICK_BUDGET_MS ? 'yes' : 'no',
      'collections per pass: scavenges (pauses, ms)': collections,
    };
  };
  const rows: Record<string, Row> = {};
  for (const form of REPLAY_FORMS) {
    const result = await replayServerInProcess({
      recording,
      scene: sceneName,
      bots,
      passes,
      nodeFlags: form.nodeFlags,
      ownBuffers: form.ownBuffers,
    });
    const every = new Samples();
    for (const pass of result.passes) for (const ms of pass) every.add(ms);
    const fastest = new Samples();
    for (const ms of fastestPerUpdate(result)) fastest.add(ms);
    const collections = result.collections
      .map((c) => (c.count === 0 ? '0' : `${c.count}: ${c.scavenges} sc. (${round(c.ms, 1)})`))
      .join(', ');
    rows[`alone${form.label}, every run (${passes} passes)`] = figures(every, collections);
    rows[`alone${form.label}, each update's fastest of ${passes}`] = figures(fastest, '');
  }
  const updates = recording.measureTo - recording.measureFrom;
  table(
    `The server alone, ${title}, ${bots} bots: the match's server replayed in a process of its own`,
    {
      'in the match (above)': {
        updates,
        'p50 (ms)': round(inMatch.p50Ms, 3),
        'p99 (ms)': round(inMatch.p99Ms, 3),
        'mean (ms)': round(inMatch.meanMs, 3),
        'within the tick at p99': inMatch.p99Ms <= TICK_BUDGET_MS ? 'yes' : 'no',
        'collections per pass: scavenges (pauses, ms)': '',
      },
      ...rows,
    },
    [
      "The match's server was recorded: every datagram each update received, the update times, and a checksum of",
      `  all ${recording.sent} datagrams it sent by the last timed update (server-replay.ts). A child process that has run`,
      '  nothing else builds a fresh server of the scene with the same secret key and feeds it the same datagrams at',
      '  the same times, once to warm up and then once per pass after a full collection, with a second full collection',
      "  just before the first timed update (the server's first seconds' objects then sit in the old generation, as in a",
      '  server that has run for minutes); every pass sent exactly the recorded datagrams (checked: it throws otherwise),',
      "  so every pass does the same work. Each update's fastest run is the best estimate of what it costs when the",
      "  machine's other work (8 engineers share 2 cores) does not land in it. The second process runs with",
      "  --single-threaded-gc, as docs/deployment.md runs a server given one core: V8's collector then works on the",
      "  server's own thread and never waits for helper threads. The third gives V8 a young generation of 64 MB a half",
      "  (--max-semi-space-size=64; V8's own limit is 16 MB on this machine). At 55-70 KB of garbage an update a 16 MB",
      '  half fills about once in 230-290 updates, so a pass of 256 timed updates sees one scavenge or none; one in a',
      "  steady server copies only what a few updates still hold (0.7 ms on the server's thread, 2026-12-03). Until",
      '  2026-12-03 the replay held an ArrayBuffer per recorded datagram (363,169 at 512 players), which V8 sweeps in its',
      '  scavenges, and timed the first scavenges of a young server: those made the 4.7-50 ms pauses of the table then.',
      "  The fourth hands the server each datagram in an ArrayBuffer of its own, copied in the timed update, as Node's",
      '  UDP socket does (the memory transport and the recording do not): V8 sweeps the dead ones in its scavenges,',
      "  two of 7.7-11.4 ms a pass on the server's own thread at 512 players (2026-12-03).",
      '  Collections per pass: those that ran from the',
      "  first timed update to the last (V8's GCProfiler), each pass's count, how many were scavenges (the others: the",
      "  old generation's marking, sweeping, compaction) and their pauses in all.",
    ],
  );
}
