// Recording a client of a bench match and replaying it alone: every datagram it received, every
// frame's time and input and every datagram it sent, replayed into a fresh client in a process
// of its own (whose code has run no server and no other client, as in a player's browser tab).
// The replay must send exactly what the recorded client sent.

import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { type ClientConfig, GameClient, type InputSample } from 'backstep/client';
import type { DatagramEndpoint, PacketHandler } from 'backstep/net';
import type { AddClientOptions, Match } from 'backstep/testing';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { Random } from '../../src/sim/random.ts';
import { withRandom } from './seeded-random.ts';

/** What one client of a match received, sent and was given each frame, from its first frame. */
export interface ClientRecording {
  seed: number;
  /** The datagrams of each poll of the client's endpoint, in order. */
  polls: { from: string; data: Uint8Array }[][];
  /** Every datagram the client sent, in order. */
  sent: Uint8Array[];
  frames: { nowMs: number; input: InputSample }[];
  /** Frames made during the warm-up (not timed). */
  warmupFrames: number;
  /** Datagrams sent by the end of the last frame (the disconnect's come after). */
  sentInFrames: number;
}

/**
 * Adds a client to `match` (config seed `seed`, its key pair drawn from a stream seeded by it)
 * whose datagrams and frames are recorded. Set the recording's `warmupFrames` and `sentInFrames`
 * (its `frames` and `sent` lengths then) before replaying it.
 */
export function addRecordedClient<P, W>(
  match: Match<P, W>,
  seed: number,
  options: AddClientOptions<P, W>,
): ClientRecording {
  const recording: ClientRecording = {
    seed,
    polls: [],
    sent: [],
    frames: [],
    warmupFrames: 0,
    sentInFrames: 0,
  };
  const drive = options.drive;
  withSeededRandom(seed, () =>
    match.addClient({
      ...options,
      drive: (client, nowMs, input) => {
        drive?.(client, nowMs, input);
        recording.frames.push({ nowMs, input: { ...input } });
      },
      config: { ...options.config, seed },
      wrapEndpoint: (endpoint) => recordingEndpoint(endpoint, recording),
    }),
  );
  return recording;
}

const NO_DATAGRAMS: { from: string; data: Uint8Array }[] = [];

/**
 * Runs `fn` drawing from a stream seeded by `seed`. A client's X25519 key pair is the only
 * randomness it draws: a recorded client and its replay make the same pair, so the replay can
 * open the packets the server sealed for the recorded one.
 */
function withSeededRandom<T>(seed: number, fn: () => T): T {
  return withRandom(new Random(seed), fn);
}

/** `endpoint` with everything it delivers and sends copied into `recording`. */
function recordingEndpoint(endpoint: DatagramEndpoint, recording: ClientRecording): DatagramEndpoint {
  return {
    address: endpoint.address,
    send(to, data) {
      recording.sent.push(data.slice());
      endpoint.send(to, data);
    },
    poll(nowMs, onPacket) {
      let batch = NO_DATAGRAMS;
      endpoint.poll(nowMs, (from, data) => {
        if (batch === NO_DATAGRAMS) batch = [];
        batch.push({ from, data: data.slice() });
        onPacket(from, data);
      });
      recording.polls.push(batch);
    },
    close: () => endpoint.close(),
  };
}

/**
 * Replays `recording` into a fresh arena client at the recorded times with the recorded input;
 * when `wall` is given, times its frames after the warm-up (wall clock, ms). Throws if the client
 * sent anything other than what the recorded one sent.
 */
function replay(recording: ClientRecording, config: Partial<ClientConfig>, wall?: number[]): void {
  let poll = 0;
  const sent: Uint8Array[] = [];
  const endpoint: DatagramEndpoint = {
    address: 'replay',
    send: (_to, data) => sent.push(data.slice()),
    poll(_nowMs, onPacket: PacketHandler) {
      for (const d of recording.polls[poll++] ?? NO_DATAGRAMS) onPacket(d.from, d.data);
    },
    close() {},
  };
  const client = withSeededRandom(recording.seed, () => {
    const c = new GameClient(arenaGame, endpoint, 'server', { ...config, seed: recording.seed });
    c.connect(0);
    return c;
  });
  const { frames, warmupFrames } = recording;
  for (let f = 0; f < frames.length; f++) {
    const { nowMs, input } = frames[f];
    if (wall === undefined || f < warmupFrames) {
      client.update(nowMs, input);
      continue;
    }
    const t0 = performance.now();
    client.update(nowMs, input);
    wall.push(performance.now() - t0);
  }
  const diverged = sent.findIndex(
    (d, i) => i >= recording.sent.length || Buffer.compare(d, recording.sent[i]) !== 0,
  );
  if (diverged >= 0 || sent.length !== recording.sentInFrames) {
    throw new Error(
      `client replay: the replayed client sent ${sent.length} datagrams, the recorded one ${recording.sentInFrames}; first to differ: ${diverged}`,
    );
  }
  client.disconnect();
}

export interface ReplayData {
  recordings: ClientRecording[];
  config: Partial<ClientConfig>;
}

export interface ReplayResult {
  /** Each timed frame's wall clock, ms. */
  wall: number[];
}

/** Timed replays of each recording (more samples against the machine's noise). */
const TIMED_PASSES = 3;

/**
 * Every recording replayed once untimed (the process's code warms up, as a player's client's has
 * by the time it plays), then TIMED_PASSES times timed.
 */
export function replayRecordings(o: ReplayData): ReplayResult {
  for (const r of o.recordings) replay(r, o.config);
  const wall: number[] = [];
  for (let pass = 0; pass < TIMED_PASSES; pass++) for (const r of o.recordings) replay(r, o.config, wall);
  return { wall };
}

/**
 * Replays `data`'s recordings in a child process of their own (TypeScript through tsx, as the
 * benchmarks run): nothing else runs in it, as nothing else runs in a player's client.
 */
export function replayInProcess(data: ReplayData): Promise<ReplayResult> {
  const entry = fileURLToPath(new URL('./client-replay-process.ts', import.meta.url));
  const child = fork(entry, [], {
    execArgv: ['--import', 'tsx', '--conditions=backstep-source'],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let result: ReplayResult | null = null;
    child.once('message', (message) => {
      result = message as ReplayResult;
      child.disconnect();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (result !== null) resolve(result);
      else reject(new Error(`client replay: the replay process exited with code ${code} before its result`));
    });
    child.send(data);
  });
}
