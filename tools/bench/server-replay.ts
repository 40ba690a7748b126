// Recording the server of a bench match and replaying it alone: every datagram it received (each
// poll's), the time of every update and a checksum of everything it sent, replayed into a fresh
// server, with the recorded secret key, in a process of its own (whose code has run no bot, as on
// a dedicated host). The replay must send exactly what the recorded server sent. Since it does the
// same work every time, each update can be timed several times: the fastest of its runs is what
// the update costs without the machine's other work, which on a shared machine is most of the
// spread of the update times (their p99).

import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { GCProfiler } from 'node:v8';
import type { DatagramEndpoint, PacketHandler } from 'backstep/net';
import type { GameServer } from 'backstep/server';
import { crc32 } from '../../src/net/crc32.ts';
import { Random } from '../../src/sim/random.ts';
import { withRandom } from './seeded-random.ts';

/** What a server received and sent, from its construction. */
export interface ServerRecording {
  /** The seed of the stream the server's randomness (resume tokens) is drawn from. */
  seed: number;
  /** The datagrams of each poll of the server's endpoint, in order (one poll per update). */
  polls: { from: string; data: Uint8Array }[][];
  /** The time of each update. */
  updates: number[];
  /** The updates to time: [measureFrom, measureTo). Replays run the updates up to measureTo. */
  measureFrom: number;
  measureTo: number;
  /** How many datagrams the server sent by the end of update measureTo - 1, and their CRC-32 chained. */
  sent: number;
  sentCrc: number;
  /** The same, counting on (what the server sent so far). */
  sentSoFar: number;
  sentCrcSoFar: number;
  /**
   * Runs each recorded update (`update(nowMs)`) for a caller that times it: the recording's own
   * work (the checksum of what the update sent, the seeded stream) stays outside. Unset: runs it.
   */
  around?: (nowMs: number, update: (nowMs: number) => void) => void;
}

export function createServerRecording(seed: number): ServerRecording {
  return {
    seed,
    polls: [],
    updates: [],
    measureFrom: 0,
    measureTo: 0,
    sent: 0,
    sentCrc: 0,
    sentSoFar: 0,
    sentCrcSoFar: 0,
  };
}

/** Bytes of the datagrams one update sends, held until its checksum is taken (after it). */
const SENT_POOL_BYTES = 8 << 20;
const SENT_POOL_DATAGRAMS = 1 << 16;

/**
 * The datagrams an update sends, copied into buffers made once (as a socket copies them into the
 * kernel: no garbage), chained into a CRC-32 after the update, each after its destination.
 */
class SentDatagrams {
  private readonly pool = new Uint8Array(SENT_POOL_BYTES);
  private readonly lengths = new Uint32Array(SENT_POOL_DATAGRAMS);
  private readonly to: string[] = [];
  private used = 0;
  private count = 0;
  private overflow = false;
  private readonly address = new Uint8Array(512);

  add(to: string, data: Uint8Array): void {
    if (this.count === SENT_POOL_DATAGRAMS || this.used + data.length > SENT_POOL_BYTES) {
      this.overflow = true;
      return;
    }
    this.pool.set(data, this.used);
    this.used += data.length;
    this.lengths[this.count] = data.length;
    this.to[this.count++] = to;
  }

  /**
   * Puts `to`'s UTF-16 code units into `address` (one byte each below 0x80, else two) and returns
   * how many bytes: the destination goes into the checksum without a Buffer per datagram, whose
   * garbage would bring the collector into the timed updates.
   */
  private addressBytes(to: string): number {
    let n = 0;
    for (let i = 0; i < to.length && n + 2 <= this.address.length; i++) {
      const c = to.charCodeAt(i);
      if (c < 0x80) this.address[n++] = c;
      else {
        this.address[n++] = c & 0xff;
        this.address[n++] = c >>> 8;
      }
    }
    return n;
  }

  /** Chains the held datagrams onto `crc` and forgets them: their count and the new CRC. */
  take(crc: number): [number, number] {
    if (this.overflow) throw new Error('server replay: an update sent more than the pool holds');
    const n = this.count;
    for (let i = 0, at = 0; i < n; i++) {
      const bytes = this.addressBytes(this.to[i]);
      crc = crc32(this.address, 0, bytes, crc);
      crc = crc32(this.pool, at, at + this.lengths[i], crc);
      at += this.lengths[i];
    }
    this.used = 0;
    this.count = 0;
    return [n, crc];
  }
}

/** Bytes of each block the recorder copies datagrams into. */
const RECEIVED_BLOCK_BYTES = 1 << 20;

/**
 * Copies of datagrams in blocks of `blockBytes` (a block holds at least one datagram): each copy
 * is a view into a block, not an ArrayBuffer of its own. A recording holds hundreds of thousands
 * of datagrams (363,169 for the 512-player scene), and V8 sweeps its list of young ArrayBuffers
 * in every scavenge: with a buffer per datagram, the recording server's own updates paid for an
 * allocation per datagram received and the scavenges in them for the sweep.
 */
class ReceivedBytes {
  private block: Uint8Array;
  private used = 0;

  constructor(private readonly blockBytes = RECEIVED_BLOCK_BYTES) {
    this.block = new Uint8Array(blockBytes);
  }

  copy(data: Uint8Array): Uint8Array {
    if (this.used + data.length > this.block.length) {
      this.block = new Uint8Array(Math.max(this.blockBytes, data.length));
      this.used = 0;
    }
    const at = this.used;
    this.block.set(data, at);
    this.used += data.length;
    return this.block.subarray(at, at + data.length);
  }
}

// Each recording's held datagrams live beside it, not in it: the recording goes to the replay
// process as a structured clone, and the pool (8 MB) would go with it.
const held = new WeakMap<ServerRecording, SentDatagrams>();

function heldFor(recording: ServerRecording): SentDatagrams {
  let sent = held.get(recording);
  if (sent === undefined) {
    sent = new SentDatagrams();
    held.set(recording, sent);
  }
  return sent;
}

/**
 * `endpoint` with every poll's datagrams copied into `recording` (a transport may reuse its
 * buffers) and every datagram sent held for the update's checksum (Match's `wrapServerEndpoint`,
 * so it sees the server's first poll; then `recordServerUpdates`).
 */
export function recordingServerEndpoint(
  endpoint: DatagramEndpoint,
  recording: ServerRecording,
): DatagramEndpoint {
  const sent = heldFor(recording);
  const bytes = new ReceivedBytes();
  return {
    address: endpoint.address,
    send(to, data) {
      sent.add(to, data);
      endpoint.send(to, data);
    },
    poll(nowMs, onPacket) {
      const batch: { from: string; data: Uint8Array }[] = [];
      endpoint.poll(nowMs, (from, data) => {
        batch.push({ from, data: bytes.copy(data) });
        onPacket(from, data);
      });
      recording.polls.push(batch);
    },
    close: () => endpoint.close(),
    hostOf: endpoint.hostOf?.bind(endpoint),
    drop: endpoint.drop?.bind(endpoint),
    established: endpoint.established?.bind(endpoint),
  };
}

/**
 * Records `server`'s update times and, after each update, what it sent, destination included.
 * Each update draws its randomness from the recording's seeded stream (so a replay draws the
 * same resume tokens). Call before its first update.
 */
export function recordServerUpdates<P, W>(server: GameServer<P, W>, recording: ServerRecording): void {
  const update = server.update.bind(server);
  const random = new Random(recording.seed);
  const sent = heldFor(recording);
  server.update = (nowMs: number) => {
    recording.updates.push(nowMs);
    const around = recording.around;
    withRandom(random, () => (around === undefined ? update(nowMs) : around(nowMs, update)));
    const [n, crc] = sent.take(recording.sentCrcSoFar);
    recording.sentSoFar += n;
    recording.sentCrcSoFar = crc;
  };
}

/** Marks the updates recorded from now on as the ones a replay times. */
export function beginMeasured(recording: ServerRecording): void {
  recording.measureFrom = recording.updates.length;
}

/** Ends the timed updates and notes what the server had sent by then. */
export function endMeasured(recording: ServerRecording): void {
  recording.measureTo = recording.updates.length;
  recording.sent = recording.sentSoFar;
  recording.sentCrc = recording.sentCrcSoFar;
}

/** Builds a fresh server like the recorded one (same game, config with its secret key, and hooks) on `endpoint`. */
export type ServerFactory = (endpoint: DatagramEndpoint) => GameServer<unknown, unknown>;

/**
 * Replays `recording` into a server from `make`, once; returns the wall clock (ms) of each update
 * in [measureFrom, measureTo). Throws if it sent anything other than what the recorded server
 * sent (checked after each update, outside the timing). `ownBuffers`: each datagram is handed to
 * the server in an ArrayBuffer of its own, copied in the timed update (as Node's UDP socket hands
 * over every datagram it receives), not as a view into the recording.
 */
export function replayServer(
  recording: ServerRecording,
  make: ServerFactory,
  collections?: ReplayCollections,
  ownBuffers = false,
): number[] {
  const sentNow = new SentDatagrams();
  let sent = 0;
  let crc = 0;
  let poll = 0;
  const endpoint: DatagramEndpoint = {
    address: 'replay',
    send: (to, data) => sentNow.add(to, data),
    poll(_nowMs, onPacket: PacketHandler) {
      const batch = recording.polls[poll++];
      if (batch === undefined) return;
      for (let i = 0; i < batch.length; i++) {
        const data = batch[i].data;
        if (ownBuffers) {
          const own = new Uint8Array(new ArrayBuffer(data.length));
          own.set(data);
          onPacket(batch[i].from, own);
        } else onPacket(batch[i].from, data);
      }
    },
    close() {},
  };
  const server = make(endpoint);
  const random = new Random(recording.seed);
  const wall: number[] = [];
  const { updates, measureFrom, measureTo } = recording;
  // V8's collections from the first timed update to the last; one set off by the replay's own
  // bookkeeping between updates (the sent datagrams' checksum, the times) counts too.
  const profiler = collections === undefined ? null : new GCProfiler();
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let u = 0; u < measureTo; u++) {
    const nowMs = updates[u];
    // A full collection before the first timed update, where the process exposes one: it moves
    // what the server built in its first seconds (connections, frame pools, its young heap) to
    // the old generation, as a server that has run for minutes has long done. Without it, the
    // first scavenges of the timed updates copied and promoted those objects, 2-12 MB, a pause
    // of 10-50 ms that a server in its steady state does not have.
    if (u === measureFrom) {
      gc?.();
      profiler?.start();
    }
    if (u < measureFrom) withRandom(random, () => server.update(nowMs));
    else {
      withRandom(random, () => {
        const t0 = performance.now();
        server.update(nowMs);
        wall.push(performance.now() - t0);
      });
    }
    const [n, c] = sentNow.take(crc);
    sent += n;
    crc = c;
  }
  if (profiler !== null && collections !== undefined && measureTo > measureFrom) {
    const stats = profiler.stop().statistics;
    collections.count = stats.length;
    collections.scavenges = 0;
    collections.ms = 0;
    for (let i = 0; i < stats.length; i++) {
      collections.ms += stats[i].cost / 1000;
      if (stats[i].gcType === 'Scavenge') collections.scavenges++;
    }
  }
  if (sent !== recording.sent || crc !== recording.sentCrc) {
    throw new Error(
      `server replay: the replayed server sent ${sent} datagrams (CRC-32 ${crc >>> 0}), the recorded one ${recording.sent} (${recording.sentCrc >>> 0})`,
    );
  }
  return wall;
}

export interface ServerReplayResult {
  /** Each pass's wall clock per timed update, ms. */
  passes: number[][];
  /** Each pass's garbage collections while its timed updates ran. */
  collections: ReplayCollections[];
}

/**
 * Garbage collections during a pass's timed updates: how many, how many of them scavenges (of the
 * young generation; the others are the old generation's marking, sweeping and compaction), and
 * their pauses in all (ms).
 */
export interface ReplayCollections {
  count: number;
  scavenges: number;
  ms: number;
}

/**
 * Moves every datagram of `recording` into one buffer (each one's `data` becomes a view into it).
 * A recording that came as a structured clone holds an ArrayBuffer per datagram, and V8 sweeps
 * its list of ArrayBuffers in scavenges: a replay of the 512-player scene paused 7.5 ms in one
 * scavenge sweeping it, none of which a server's own heap has.
 */
export function packReceived(recording: ServerRecording): void {
  let total = 0;
  for (const batch of recording.polls) for (let i = 0; i < batch.length; i++) total += batch[i].data.length;
  const into = new ReceivedBytes(total);
  for (const batch of recording.polls)
    for (let i = 0; i < batch.length; i++) batch[i].data = into.copy(batch[i].data);
}

/**
 * Replays `recording` once untimed (the code warms up), then `passes` times, each after a full
 * collection when the process exposes one (each pass starts with the last pass's server gone).
 * Its datagrams are moved into one buffer first (`packReceived`).
 */
export function replayServerPasses(
  recording: ServerRecording,
  make: ServerFactory,
  passes: number,
  ownBuffers = false,
): ServerReplayResult {
  const gc = (globalThis as { gc?: () => void }).gc;
  packReceived(recording);
  replayServer(recording, make, undefined, ownBuffers);
  const result: ServerReplayResult = { passes: [], collections: [] };
  for (let p = 0; p < passes; p++) {
    gc?.();
    const collections: ReplayCollections = { count: 0, scavenges: 0, ms: 0 };
    result.passes.push(replayServer(recording, make, collections, ownBuffers));
    result.collections.push(collections);
  }
  return result;
}

/** Each timed update's fastest run over the passes. */
export function fastestPerUpdate(result: ServerReplayResult): number[] {
  const [first, ...rest] = result.passes;
  const fastest = first.slice();
  for (const pass of rest)
    for (let i = 0; i < fastest.length; i++) fastest[i] = Math.min(fastest[i], pass[i]);
  return fastest;
}

/** What the replay process is sent: the recording and the bench scene to build its server from. */
export interface ServerReplayJob {
  recording: ServerRecording;
  scene: string;
  bots: number;
  passes: number;
  /** Node's and V8's flags for the replay process, beside --expose-gc (none: []). */
  nodeFlags?: readonly string[];
  /**
   * How the replay process loads the code: 'modules', through tsx one module a file (as the
   * benchmarks run), or 'bundle', engine and game as one esbuild bundle. Default 'modules'.
   */
  form?: 'modules' | 'bundle';
  /**
   * Each datagram handed to the server in an ArrayBuffer of its own, as Node's UDP socket hands
   * them over (`replayServer`); default false: views into the recording.
   */
  ownBuffers?: boolean;
}

/**
 * Replays `job` in a child process of its own (its code through tsx as the benchmarks run, or
 * bundled: `job.form`; the collector exposed, and `job.nodeFlags`): nothing else runs in it, as
 * nothing else runs on a dedicated server.
 */
export async function replayServerInProcess(job: ServerReplayJob): Promise<ServerReplayResult> {
  const entry = fileURLToPath(new URL('./server-replay-process.ts', import.meta.url));
  const flags = ['--expose-gc', ...(job.nodeFlags ?? [])];
  const bundled = job.form === 'bundle';
  const child = fork(bundled ? await bundleReplayProcess(entry) : entry, [], {
    execArgv: bundled ? flags : ['--import', 'tsx', '--conditions=backstep-source', ...flags],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let result: ServerReplayResult | null = null;
    let failure: string | null = null;
    child.once('message', (message) => {
      const m = message as { result?: ServerReplayResult; error?: string };
      if (m.error !== undefined) failure = m.error;
      else result = m.result ?? null;
      child.disconnect();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (result !== null) resolve(result);
      else
        reject(
          new Error(
            failure ?? `server replay: the replay process exited with code ${code} before its result`,
          ),
        );
    });
    // A child that died before taking the job says so by its exit (above), not by a send error.
    child.send(job, (e) => {
      if (e !== null) failure ??= `server replay: the replay process did not take its job (${e.message})`;
    });
  });
}

/**
 * Builds the replay process's code, engine and game, into one ES module with esbuild (the
 * project's packages left external) under node_modules/.cache, where those packages resolve;
 * returns its path.
 */
async function bundleReplayProcess(entry: string): Promise<string> {
  const { build } = await import('esbuild');
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const outfile = join(root, 'node_modules', '.cache', 'backstep-bench', 'server-replay-process.mjs');
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['backstep-source'],
    external: Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.devDependencies }),
    // Packages that load others with require() need one in an ES module.
    banner: {
      js: "import { createRequire as backstepRequire } from 'node:module'; const require = backstepRequire(import.meta.url);",
    },
    logLevel: 'error',
  });
  return outfile;
}
