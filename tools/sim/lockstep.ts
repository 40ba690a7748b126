// The sim over the memory transport on simulated time, its bots split into groups that may run on
// other threads in lockstep with the server.
//
// Every bot is a whole GameClient (prediction, snapshot reading, view, its own verdict of every
// shot) with its own seeds: its client seed, its link conditioners' seeds, its frame jitter and
// its input driver, all drawn from the run's seed. Nothing a bot does depends on another bot but
// through the server, and nothing reaches the server or a bot but through the conditioned network,
// where every datagram takes at least the profile's smallest one-way delay. So the run can be cut
// into windows shorter than that delay: in a window, each thread runs its own bots (and the main
// thread the server) up to the window's end, and the datagrams sent in it are handed over between
// windows, before any of them can arrive. The figures are the same whatever the number of
// threads (checked by test/tools/sim-lockstep.test.ts).
//
// Send times: a client stamps what it sends with its endpoint's clock, the time of its latest
// poll (the previous frame), and the server polls before it sends; so the window is at most the
// smallest one-way delay less the longest gap between a bot's frames.

import { Worker } from 'node:worker_threads';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { type ArenaShotLedger, aimBot } from '../../games/arena/testing/shots.ts';
import {
  type ClientConfig,
  createInputSample,
  GameClient,
  type InputSample,
} from '../../src/client/client.ts';
import type { LinkStats } from '../../src/net/conditioner.ts';
import { serverCipher } from '../../src/net/node-packet-crypto.ts';
import { conditionsAt, createLinkConditions, type NetworkProfile } from '../../src/net/profile.ts';
import type { MemoryEndpoint, MemoryNetwork } from '../../src/net/transports/memory.ts';
import { MinHeap } from '../../src/sim/heap.ts';
import { Random } from '../../src/sim/random.ts';
import type { InputDriver, PendingShotRecord } from '../../src/testing/index.ts';
import type { SimPlan } from './options.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;
type Driver = InputDriver<ArenaPlayerState, ArenaWorld>;

/** A bot's seeds, drawn from the run's seed in bot order. */
export interface BotSeeds {
  client: number;
  up: number;
  down: number;
  jitter: number;
  driver: number;
}

/** Every bot's seeds: the same for a seed whatever the threads. */
export function botSeeds(plan: SimPlan): BotSeeds[] {
  const random = new Random((plan.seed ^ 0x5eed5eed) >>> 0);
  const out: BotSeeds[] = [];
  for (let i = 0; i < plan.bots.length; i++) {
    out.push({
      client: random.nextU32(),
      up: random.nextU32(),
      down: random.nextU32(),
      jitter: random.nextU32(),
      driver: random.nextU32(),
    });
  }
  return out;
}

/** The bots' client configuration (the same on every thread). */
export function clientConfigFor(plan: SimPlan): Partial<ClientConfig> {
  const s = plan.scenario;
  return {
    // The bots are clients in Node: the server's ChaCha20-Poly1305 (libsodium where it loads).
    packetCipher: serverCipher,
    updateRate: s.updateRate,
    rateBytesPerSecond: s.rateBytesPerSecond,
    interpolationDelayMs: s.interpolationDelayMs,
    viewAcceptance: { maxUnlagMs: s.maxUnlagMs },
  };
}

/** Bot `i`'s input driver. */
export function driverFor(plan: SimPlan, i: number, seed: number): Driver {
  const b = plan.bots[i];
  return b.kind === 'aim'
    ? aimBot(seed, { aimErrorUnits: b.aimErrorUnits, switchPerSecond: plan.scenario.switchPerSecond })
    : runnerBot(seed);
}

/** The address of bot `i` on the memory network. */
export function botAddress(i: number): string {
  return `client${i}`;
}

/**
 * The smallest delay a datagram can take in `direction` of `profile`, ms: the least latency less
 * jitter over the base conditions and every stretch between event boundaries (0 without a profile).
 */
export function smallestDelayMs(profile: NetworkProfile | null, direction: 'up' | 'down'): number {
  if (profile === null) return 0;
  const times = [0];
  for (const e of profile.events) times.push(e.atMs, e.atMs + e.durationMs);
  let least = Number.POSITIVE_INFINITY;
  const c = createLinkConditions();
  for (const t of times) {
    conditionsAt(profile, direction, t, c);
    least = Math.min(least, Math.max(0, c.latencyMs - c.jitterMs));
  }
  return least;
}

/**
 * The longest window the run can be cut into (ms; 0: none, every bot's traffic may arrive at
 * once): the smallest one-way delay of any bot, less the longest gap between one bot's frames on
 * its way up. With `lag` 1 the workers may run a window behind or ahead of the main thread: the
 * server reads their bots' datagrams one window later and they read the server's one window
 * later, so whatever is sent must take two windows to arrive (both shares halved).
 */
export function lockstepWindowMs(
  s: { readonly frameRate: number; readonly frameJitterMs: number },
  bots: readonly { readonly profile: NetworkProfile | null }[],
  lag: 0 | 1 = 0,
): number {
  const frameGapMs = 1000 / s.frameRate + s.frameJitterMs;
  let window = Number.POSITIVE_INFINITY;
  for (const b of bots) {
    window = Math.min(
      window,
      smallestDelayMs(b.profile, 'down') / (lag + 1),
      (smallestDelayMs(b.profile, 'up') - frameGapMs) / (lag + 1),
    );
  }
  return Number.isFinite(window) && window > 0 ? window : 0;
}

/** What the metrics read of one client at the end of a bucket. */
export interface ClientSummary {
  connected: boolean;
  /** The server time remote players were last drawn at (the view: ms), or null before any. */
  viewServerMs: number | null;
  /** When the client last drew (its last update, on the run's clock). */
  drawnAtMs: number;
  corrections: number;
  visibleCorrections: number;
  correctionUnits: number;
  maxCorrectionUnits: number;
  maxVisibleErrorUnits: number;
  snaps: number;
  interpolated: number;
  extrapolated: number;
  held: number;
  /**
   * The bot's links, from their conditioners (0 without a bandwidth): packets that went through
   * each direction's bandwidth queue and the time they waited in it, ms.
   */
  queuedDown: number;
  queueWaitDownMs: number;
  queuedUp: number;
  queueWaitUpMs: number;
}

/** The link stats a summary reads: each direction's conditioner, when the bot has a profile. */
export interface SummaryLinks {
  readonly up: LinkStats | null;
  readonly down: LinkStats | null;
}

export function summarizeClient(c: Client, links: SummaryLinks | null = null): ClientSummary {
  const view = c.view;
  const p = c.predictor.stats;
  const drawn = c.state === 'connected' && view.tickB !== 0 && c.tickRate > 0 && c.lastUpdateMs >= 0;
  const viewTick = view.tickA + (view.tickB - view.tickA) * view.fraction;
  return {
    connected: c.state === 'connected',
    viewServerMs: drawn ? (viewTick * 1000) / c.tickRate : null,
    drawnAtMs: c.lastUpdateMs,
    corrections: p.corrections,
    visibleCorrections: p.visibleCorrections,
    correctionUnits: p.correctionDistanceTotal,
    maxCorrectionUnits: p.correctionDistanceMax,
    maxVisibleErrorUnits: p.visibleErrorMax,
    snaps: p.snaps,
    interpolated: c.view.stats.interpolated,
    extrapolated: c.view.stats.extrapolated,
    held: c.view.stats.held,
    queuedDown: links?.down?.queued ?? 0,
    queueWaitDownMs: links?.down?.queueWaitMs ?? 0,
    queuedUp: links?.up?.queued ?? 0,
    queueWaitUpMs: links?.up?.queueWaitMs ?? 0,
  };
}

interface Bot {
  readonly index: number;
  readonly client: Client;
  readonly endpoint: MemoryEndpoint;
  readonly input: InputSample;
  readonly drive: Driver;
  readonly jitter: Random;
}

/**
 * The next frame time of each of `count` bots (all 0 at first), earliest first and bot order
 * among equal times: a binary heap (MinHeap), so a frame looks at a few bots, not at every bot of
 * the group twice (for the next time, then for who is due).
 */
export class FrameQueue {
  private readonly times: Float64Array;
  /** Bot positions, earliest time first, then position. */
  private readonly heap: MinHeap<number>;

  constructor(count: number) {
    const times = new Float64Array(count);
    this.times = times;
    this.heap = new MinHeap((k, j) => times[k] < times[j] || (times[k] === times[j] && k < j));
    for (let i = 0; i < count; i++) this.heap.push(i);
  }

  /** The earliest next frame time (Infinity with no bots). */
  get nextTime(): number {
    const k = this.heap.peek();
    return k === undefined ? Number.POSITIVE_INFINITY : this.times[k];
  }

  /** The bot whose frame is next (the first in order among the earliest; -1 with no bots). */
  get next(): number {
    return this.heap.peek() ?? -1;
  }

  /** The next bot's frame after this one is at `timeMs` (not earlier than its last). */
  delayNext(timeMs: number): void {
    const k = this.heap.pop();
    this.times[k] = timeMs;
    this.heap.push(k);
  }
}

/**
 * Some of the bots, on one thread's memory network: each one's frames at its own times (every
 * 1000 / frameRate ms plus its own jitter), in bot order at equal times.
 */
export class BotGroup {
  readonly bots: Bot[] = [];
  /** Each bot's next frame time, by its position in `bots`. */
  private readonly queue: FrameQueue;
  private readonly frameMs: number;
  private readonly jitterMs: number;

  constructor(
    plan: SimPlan,
    indices: readonly number[],
    seeds: readonly BotSeeds[],
    network: MemoryNetwork,
    ledger: ArenaShotLedger,
  ) {
    this.frameMs = 1000 / plan.scenario.frameRate;
    this.jitterMs = plan.scenario.frameJitterMs;
    const config = clientConfigFor(plan);
    for (const i of indices) {
      const seed = seeds[i];
      const profile = plan.bots[i].profile ?? undefined;
      const endpoint = network.createEndpoint(botAddress(i), profile, { up: seed.up, down: seed.down });
      let client: Client | null = null;
      client = new GameClient(
        arenaGame,
        endpoint,
        'server',
        { ...config, seed: seed.client },
        ledger.clientHooks(() => client as Client),
      );
      client.connect(0);
      this.bots.push({
        index: i,
        client,
        endpoint,
        input: createInputSample(),
        drive: driverFor(plan, i, seed.driver),
        jitter: new Random(seed.jitter),
      });
    }
    this.queue = new FrameQueue(this.bots.length);
  }

  /** The time of the next frame of any bot of the group (Infinity with none). */
  get nextFrameMs(): number {
    return this.queue.nextTime;
  }

  /**
   * Runs the frame of every bot whose frame is due at `nowMs` (the group's next frame time), in
   * bot order.
   */
  frames(nowMs: number): void {
    const q = this.queue;
    while (q.nextTime <= nowMs) {
      const b = this.bots[q.next];
      b.drive(b.client, nowMs, b.input);
      b.client.update(nowMs, b.input);
      q.delayNext(nowMs + this.frameMs + (this.jitterMs > 0 ? b.jitter.range(0, this.jitterMs) : 0));
    }
  }

  /** Runs every frame due by `untilMs` (for a group without the server). */
  runUntil(untilMs: number): void {
    for (let next = this.nextFrameMs; next <= untilMs; next = this.nextFrameMs) this.frames(next);
  }

  /** Every bot's summary now: a loop, not a closure made for each call (see the runner's `take`). */
  summaries(): ClientSummary[] {
    const out: ClientSummary[] = [];
    for (const b of this.bots) out.push(summarizeClient(b.client, b.endpoint.stats));
    return out;
  }

  disconnect(): void {
    for (const b of this.bots) b.client.disconnect();
  }
}

/** Datagrams handed between threads: (bot, time, bytes) packed into one transferable buffer. */
export class DatagramBatch {
  private buffer = new Uint8Array(1 << 16);
  private view = new DataView(this.buffer.buffer);
  private length = 0;
  count = 0;

  add(bot: number, atMs: number, data: Uint8Array): void {
    const need = this.length + 14 + data.length;
    if (need > this.buffer.length) {
      const grown = new Uint8Array(Math.max(need, this.buffer.length * 2));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
      this.view = new DataView(grown.buffer);
    }
    this.view.setUint16(this.length, bot);
    this.view.setFloat64(this.length + 2, atMs);
    this.view.setUint32(this.length + 10, data.length);
    this.buffer.set(data, this.length + 14);
    this.length = need;
    this.count++;
  }

  /** The batch so far as its own buffer (to transfer); the batch starts again empty. */
  take(): ArrayBuffer {
    const out = this.buffer.slice(0, this.length).buffer;
    this.length = 0;
    this.count = 0;
    return out;
  }
}

/** Calls `each(bot, atMs, bytes)` for every datagram of a taken batch, in the order added. */
export function readBatch(
  buffer: ArrayBuffer,
  each: (bot: number, atMs: number, data: Uint8Array) => void,
): void {
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  for (let at = 0; at < buffer.byteLength; ) {
    const bot = view.getUint16(at);
    const atMs = view.getFloat64(at + 2);
    const length = view.getUint32(at + 10);
    each(bot, atMs, bytes.subarray(at + 14, at + 14 + length));
    at += 14 + length;
  }
}

/** What the main thread sends a group's worker for each window, or to end. */
export type GroupRequest = WindowRequest | { type: 'close' };

export interface WindowRequest {
  type: 'run';
  untilMs: number;
  /** Datagrams from the server to the worker's bots, sent in the last window. */
  datagrams: ArrayBuffer;
  /** Return the bots' summaries at untilMs (a bucket ends there). */
  summarize: boolean;
}

/** A worker's answer to a window. */
export interface WindowReply {
  type: 'window';
  /** Datagrams from its bots to the server, sent in the window. */
  datagrams: ArrayBuffer;
  /** Shots its bots predicted in the window, for the main thread's ledger. */
  shots: PendingShotRecord<ArenaPlayerState>[];
  summaries: ClientSummary[] | null;
}

export interface GroupWorkerData {
  plan: SimPlan;
  indices: number[];
  seeds: BotSeeds[];
}

/** A group of bots on a worker thread, driven window by window. */
export class GroupWorker {
  readonly worker: Worker;
  /** Datagrams from the server to this worker's bots, waiting for the next window. */
  readonly outbox = new DatagramBatch();
  /** Who waits for each window asked for and not yet answered, oldest first. */
  private readonly pending: ((reply: WindowReply) => void)[] = [];
  private failure: Error | null = null;

  constructor(data: GroupWorkerData) {
    const self = import.meta.url;
    const entry = new URL(`./group-worker.${self.endsWith('.ts') ? 'ts' : 'js'}`, self).href;
    this.worker = new Worker(
      self.endsWith('.ts')
        ? `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`
        : new URL(entry),
      {
        eval: self.endsWith('.ts'),
        execArgv: ['--conditions=backstep-source'],
        workerData: data,
      },
    );
    this.worker.on('message', (reply: WindowReply) => this.pending.shift()?.(reply));
    this.worker.on('error', (e) => {
      this.failure = e;
      for (const resolve of this.pending.splice(0)) {
        resolve({ type: 'window', datagrams: new ArrayBuffer(0), shots: [], summaries: null });
      }
    });
  }

  /**
   * Asks for the worker's window up to `untilMs`, handing over the datagrams waiting for it; the
   * worker runs windows in the order asked (one may be asked for before the last is answered).
   */
  start(untilMs: number, summarize: boolean): Promise<WindowReply> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const datagrams = this.outbox.take();
    const request: WindowRequest = { type: 'run', untilMs, datagrams, summarize };
    return new Promise((resolve, reject) => {
      this.pending.push((reply) => (this.failure === null ? resolve(reply) : reject(this.failure)));
      this.worker.postMessage(request, [datagrams]);
    });
  }

  /** Asks the worker to disconnect its bots and end (terminated if it has not within 5 s). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => void this.worker.terminate(), 5000);
      this.worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.worker.postMessage({ type: 'close' } satisfies GroupRequest);
    });
  }
}

/**
 * The bots of each thread, in bot order: the first group runs beside the server on the main
 * thread, so it takes fewer (the server and the harness cost about 40 % of a run's time).
 */
export function splitBots(bots: number, threads: number): number[][] {
  const share = threads <= 1 ? 1 : Math.max(0, (1 / threads - SERVER_SHARE) / (1 - SERVER_SHARE));
  const first = Math.round(bots * share);
  const groups: number[][] = [[]];
  for (let i = 0; i < first; i++) groups[0].push(i);
  const rest = bots - first;
  for (let t = 1; t < threads; t++) {
    const group: number[] = [];
    const from = first + Math.floor((rest * (t - 1)) / (threads - 1));
    const to = first + Math.floor((rest * t) / (threads - 1));
    for (let i = from; i < to; i++) group.push(i);
    groups.push(group);
  }
  return groups;
}

/**
 * What stays on the main thread, as a share of a single-threaded run's time: the server's updates
 * and the harness (lockstep, metrics). One thread's CPU profile after the first 40 % of a 30 s
 * mobile-link run: 40 % at 128 bots (the server 36 %, the clients 60 %) and at 256 bots (35 %,
 * 60 %); 47 % at 32.
 */
const SERVER_SHARE = 0.4;
