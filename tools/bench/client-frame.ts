// Benchmark section 3: one client's frame with 64 and with 128 remote players in view at 250 ms
// RTT (receive, prediction, interpolation), timed in the match and alone (a few clients' packets
// recorded and replayed into a fresh client), and the replay cost by unacknowledged commands.

import { getHeapStatistics } from 'node:v8';
import { type ClientConfig, GameClient } from 'backstep/client';
import { MemoryNetwork } from 'backstep/net';
import { Match } from 'backstep/testing';
import { BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { Predictor } from '../../src/client/prediction.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { createUserCommand, quantizeUserCommand } from '../../src/protocol/usercmd.ts';
import { NO_EVENTS } from '../../src/sim/game.ts';
import { Random } from '../../src/sim/random.ts';
import { mean, percentile, Samples } from '../stats.ts';
import { addRecordedClient, type ClientRecording, replayInProcess } from './client-replay.ts';
import { heldMemory, type Row, round, table, timed, timePerCall } from './report.ts';

export interface ClientFrameOptions {
  /** Remote players each client sees (the match has one more), one table per count. */
  remotePlayers: readonly number[];
  rttMs: number;
  seed: number;
  warmupMs: number;
  measureMs: number;
}

export const DEFAULT_CLIENT_FRAME_OPTIONS: ClientFrameOptions = {
  remotePlayers: [64, 128],
  rttMs: 250,
  seed: 1,
  warmupMs: 3000,
  measureMs: 10_000,
};

const FRAME_60_FPS_MS = 1000 / 60;

/** Clients of the match whose datagrams and frames are recorded, each replayed alone afterwards. */
const RECORDED_CLIENTS = 8;

function timingRow(samples: Samples): Row {
  const sorted = samples.sorted();
  const m = mean(sorted) ?? 0;
  return {
    'p50 (us)': round((percentile(sorted, 0.5) ?? 0) * 1000, 1),
    'p99 (us)': round((percentile(sorted, 0.99) ?? 0) * 1000, 1),
    'mean (us)': round(m * 1000, 1),
    'mean share of a 60 fps frame (%)': round((m / FRAME_60_FPS_MS) * 100, 2),
    samples: samples.count,
  };
}

/** Every client's configuration in the scene. */
const CLIENT_CONFIG: Partial<ClientConfig> = { updateRate: 32, rateBytesPerSecond: 200_000 };

interface MatchTimes {
  rows: Record<string, Row>;
  /** Per frame means, as lines of the table's notes. */
  means: string[];
  clients: number;
}

/**
 * Times every client's frame, prediction and remote view in a match where each sees
 * `remotePlayers`, and records the first RECORDED_CLIENTS clients into `recordings`.
 */
function timeInMatch(
  o: ClientFrameOptions,
  remotePlayers: number,
  recordings: ClientRecording[],
): MatchTimes {
  const players = remotePlayers + 1;
  const profile = parseProfile({
    name: `rtt-${o.rttMs}ms`,
    description: `${o.rttMs / 2} ms each way, no jitter, no loss`,
    latencyMs: o.rttMs / 2,
  });
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, o.seed, {
    tickRate: 64,
    maxClients: players,
    defaultUpdateRate: 32,
  });
  for (let i = 0; i < players; i++) {
    const drive = runnerBot(o.seed * 7919 + i);
    if (i >= RECORDED_CLIENTS) {
      match.addClient({ profile, drive, frameJitterMs: 2, config: CLIENT_CONFIG });
      continue;
    }
    recordings.push(
      addRecordedClient(match, o.seed * 1000 + i, {
        profile,
        drive,
        frameJitterMs: 2,
        config: CLIENT_CONFIG,
      }),
    );
  }
  match.run(o.warmupMs);
  for (const r of recordings) r.warmupFrames = r.frames.length;
  const frame = new Samples();
  const frameCpu = new Samples();
  const predict = new Samples();
  const view = new Samples();
  // Heap growth across a frame, the timing wrappers' few objects included (frames across which
  // the heap shrank, a collection having run, are left out; one that freed less still counts).
  let allocated = 0;
  let allocatedFrames = 0;
  let pending = 0;
  let drawn = 0;
  let rtt = 0;
  let frames = 0;
  for (const c of match.clients) {
    const client = c.client;
    if (client.state !== 'connected' || !client.isSpawned) {
      throw new Error(`client frame: a client is ${client.state} after the warm-up`);
    }
    // The whole frame by wall clock and by the process's CPU time (what the frame cost, without
    // the time the process sat descheduled on a busy machine; 1 us resolution).
    const update = timed(client.update.bind(client), frame);
    client.update = (nowMs, input) => {
      const c0 = process.cpuUsage();
      const h0 = getHeapStatistics().used_heap_size;
      update(nowMs, input);
      const h1 = getHeapStatistics().used_heap_size;
      const c1 = process.cpuUsage(c0);
      if (h1 >= h0) {
        allocated += h1 - h0;
        allocatedFrames++;
      }
      frameCpu.add((c1.user + c1.system) / 1000);
    };
    client.predictor.predict = timed(client.predictor.predict.bind(client.predictor), predict);
    client.view.update = timed(client.view.update.bind(client.view), view);
    c.afterFrame = () => {
      pending += client.predictor.pendingCount;
      drawn += client.view.count;
      rtt += client.channel?.stats.rttMs ?? 0;
      frames++;
    };
  }
  match.run(o.measureMs);
  for (const r of recordings) r.sentInFrames = r.sent.length;
  match.close();
  const n = Math.max(1, frames);
  return {
    rows: {
      'GameClient.update (whole frame)': timingRow(frame),
      'the same, CPU time': timingRow(frameCpu),
      'of which Predictor.predict': timingRow(predict),
      'of which RemoteView.update': timingRow(view),
    },
    means: [
      `Per frame means: ${round(pending / n, 1)} unacknowledged commands, ${round(drawn / n, 1)} remote entities drawn, RTT ${round(rtt / n, 0)} ms,`,
      `  ${round(allocated / Math.max(1, allocatedFrames), 0)} bytes allocated (heap growth across the frame and its timers; frames across which the heap shrank left out).`,
    ],
    clients: match.clients.length,
  };
}

/**
 * The client frame table for `remotePlayers`: every client timed in the match, then the recorded
 * ones replayed alone in a process of their own.
 */
async function clientFrame(o: ClientFrameOptions, remotePlayers: number): Promise<void> {
  const recordings: ClientRecording[] = [];
  const inMatch = timeInMatch(o, remotePlayers, recordings);
  const alone = await replayInProcess({ recordings, config: CLIENT_CONFIG });
  const aloneFrame = new Samples();
  for (const ms of alone.wall) aloneFrame.add(ms);
  table(
    `Client frame cost: ${remotePlayers} remote players in view, ${o.rttMs} ms RTT, 60 fps, 32 snapshots/s`,
    {
      ...inMatch.rows,
      [`one client alone (${recordings.length} replayed)`]: timingRow(aloneFrame),
    },
    [
      ...inMatch.means,
      'A frame makes and predicts one command, sends commands, reads the packets due (decoding the frame header,',
      '  events and delta snapshot; about 32 of 60 frames read one: the p50 mixes both kinds), replays prediction',
      '  after a correction (an acknowledged state that differs from the prediction) and interpolates every remote',
      `  player. All ${inMatch.clients} clients of the match are timed (each sample is one client's frame; between two`,
      `  frames of one, the server and the ${inMatch.clients - 1} others run in this process and take its caches);`,
      `  warm-up ${o.warmupMs / 1000} s, ${o.measureMs / 1000} s measured; seed ${o.seed}.`,
      `  Alone: ${recordings.length} of the clients had every datagram they received, every frame's time and input and every`,
      '  datagram they sent recorded; after the match, a process of their own (as a browser tab is) replays each',
      '  into a fresh client, once to warm its code up and three times timed (frames after the warm-up), and checks that',
      '  it sends exactly what the recorded one sent. Its wall clock only: the process CPU time of those frames',
      "  counts V8's compiler and collector threads too, which run beside the frame (with --single-threaded the",
      '  two agree), and the process has a core to itself.',
      '  CPU time: the process CPU time the frame took (process.cpuUsage, 1 us steps, all threads), which a',
      '  descheduled process does not add to, unlike the wall clock of the rows around it.',
    ],
  );
}

/** Client cost of replaying N unacknowledged commands through the arena's shared movement. */
function predictionReplay(): void {
  const rows: Record<string, Row> = {};
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
    rows[`${pending} commands`] = {
      'replay (us)': round(ms * 1000, 1),
      'per command (us)': round((ms * 1000) / pending, 2),
      'share of a 60 fps frame (%)': round((ms / FRAME_60_FPS_MS) * 100, 2),
    };
  }
  table('Client prediction: replaying unacknowledged commands (arena movement)', rows);
}

/** Clients made and connected at once for `clientSetup`. */
const SETUP_CLIENTS = 50;

/**
 * What making and connecting an arena client costs (a bot harness makes hundreds): the time, and
 * the heap and ArrayBuffers it holds after full collections, before any snapshot came.
 */
function clientSetup(): void {
  const network = new MemoryNetwork({ seed: 1 });
  const before = heldMemory();
  const clients: GameClient<ArenaPlayerState, ArenaWorld>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < SETUP_CLIENTS; i++) {
    const client = new GameClient(arenaGame, network.createEndpoint(`client${i}`), 'server', {});
    client.connect(0);
    clients.push(client);
  }
  const ms = (performance.now() - t0) / SETUP_CLIENTS;
  const after = heldMemory();
  const mb = (bytes: number) => round(bytes / SETUP_CLIENTS / 1e6, 2);
  table(
    'Making a client: new GameClient and connect, arena game',
    {
      [`${clients.length} clients`]: {
        'per client (ms)': round(ms, 2),
        'memory held per client (MB)': mb(after.heap + after.buffers - before.heap - before.buffers),
        'of which ArrayBuffers (MB)': mb(after.buffers - before.buffers),
      },
    },
    [
      'Memory held: heap and ArrayBuffers after full collections, less those before; before any snapshot',
      "  came (the snapshot reader's frames are made as snapshots fill its ring: sized by the entity",
      '  indices the game uses).',
    ],
  );
  for (const client of clients) client.disconnect();
}

/** Prints the client frame table, the prediction replay table and the cost of making a client. */
export async function clientFrameSection(
  options: ClientFrameOptions = DEFAULT_CLIENT_FRAME_OPTIONS,
): Promise<void> {
  for (const remotePlayers of options.remotePlayers) await clientFrame(options, remotePlayers);
  predictionReplay();
  clientSetup();
}
