// Matches on every core (Node only): worker threads each run many matches, and the main thread
// owns the sockets and routes each datagram to its match's thread through a shared-memory ring
// (one copy per datagram, nothing per entity). A match that throws is ended by its worker alone;
// a loop that stalls is seen by a watchdog, which names the match it was stuck in, ends the
// worker's matches (clients told DISCONNECT_MATCH_FAILED) and starts a fresh worker; matches on
// the other workers play on.
//
// A match module is a file the workers import: it exports `createMatch(id, options)`, returning
// the match's game, config and hooks (and optionally `inspect()`, whose result `inspect(id)`
// brings back to the main thread).

import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DEFAULT_PROTOCOL_ID, PacketType } from '../net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_MATCH_ENDED,
  DISCONNECT_MATCH_FAILED,
  DISCONNECT_SERVER_SHUTDOWN,
  PACKET_SERVER_DISCONNECT,
  peekPacketType,
  writeHandshakePacket,
} from '../net/handshake.ts';
import { checkMatchId, MATCH_ROUTE_HEADER_BYTES, readMatchRoute } from '../net/match-route.ts';
import { DISCONNECT_TOKEN_BYTES } from '../net/packet-crypto.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import {
  Allowance,
  checkRate,
  JoinGate,
  type MatchEnded,
  type MatchSpec,
  NoMatchRefusals,
} from '../server/matches.ts';
import {
  createRingBuffers,
  DatagramRing,
  RING_BIND,
  RING_DATAGRAM,
  RING_DROP,
  RING_UNBIND,
  type RingRecord,
} from './datagram-ring.ts';
import type { MatchWorkerData } from './match-worker.ts';

/** What a match module's `createMatch` returns: a match, and optionally what `inspect` reports. */
export interface WorkerMatchSpec<P, W> extends MatchSpec<P, W> {
  /** Called in the worker by `MatchWorkers.inspect(id)`; its result is structured-cloned back. */
  inspect?: () => unknown;
}

/** The module every worker imports: makes match `id` from the options given to `create`. */
export interface MatchModule {
  // biome-ignore lint/suspicious/noExplicitAny: a module makes matches of any game; the worker never looks inside.
  createMatch(id: number, options: unknown): WorkerMatchSpec<any, any>;
}

export interface MatchWorkersOptions {
  /** The shared endpoint (a MultiTransportServer, say): every match is reached on it. */
  endpoint: DatagramEndpoint;
  /** The match module (file URL or path). */
  module: string | URL;
  /** Worker threads (default: the machine's available parallelism). */
  workers?: number;
  /** A worker whose loop has not turned for this long is stalled (default 2000 ms). */
  stallMs?: number;
  /** The main thread's routing loop and each worker's loop period, ms (default 1 and 2). */
  pumpMs?: number;
  loopMs?: number;
  /** Slots of each ring (a power of two; default 2048 each way per worker). */
  ringSlots?: number;
  /** Datagrams one match may have waiting (default 1024). */
  queueCapacity?: number;
  protocolId?: number;
  /** "No such match" refusals per second in all (default 200). */
  maxRefusalsPerSecond?: number;
  /** Packets from addresses not yet in a match each match takes per second (default 500; see MatchRouterOptions). */
  maxJoinPacketsPerSecond?: number;
  /** Each match that ended: by `end`, by failure (its code threw, or its worker stalled), or at `close`. */
  onEnded?: (ended: MatchEnded) => void;
  /** A player joined (`connected`) or left a match: for player tracking (Agones). */
  onPlayer?: (address: string, matchId: number, connected: boolean) => void;
  /** Node options for the workers (default: the loader the sources need when run from TypeScript). */
  execArgv?: string[];
}

/** @internal Messages to a worker. */
export type WorkerRequest =
  | { type: 'create'; id: number; options: unknown; seq: number }
  | { type: 'end'; id: number; reason: number }
  | { type: 'inspect'; id: number; seq: number }
  | { type: 'close' };

/** @internal Messages from a worker. */
export type WorkerReply =
  | { type: 'ready' }
  | { type: 'created'; seq: number; error?: string }
  | { type: 'inspected'; seq: number; value?: unknown; error?: string }
  | { type: 'ended'; id: number; reason: number; error?: string; ticks: number; clients: number }
  | { type: 'closed' };

export interface MatchWorkersStats {
  /** Datagrams dropped before reaching any worker, by reason (as MatchRouter's). */
  rejected: Record<string, number>;
  refusedNoMatch: number;
  /** Datagrams handed to workers, and sent for them. */
  routed: number;
  sent: number;
  /** Datagrams lost to a full ring, each way. */
  inboundFull: number;
  outboundFull: number;
  /** Workers started again after a stall or a crash. */
  restarts: number;
}

interface Pending {
  slot: WorkerSlot;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** One worker thread and what the main thread knows of it. */
class WorkerSlot {
  worker!: Worker;
  inbound!: DatagramRing;
  outbound!: DatagramRing;
  heartbeat!: Int32Array;
  readonly matches = new Set<number>();
  lastBeat = 0;
  lastBeatMs = 0;
  alive = false;
  constructor(readonly index: number) {}
}

interface MatchEntry {
  readonly id: number;
  readonly worker: WorkerSlot;
  /** Addresses the match accepted, with their client nonces and disconnect tokens. */
  readonly players: Map<string, { nonce: number; token: Uint8Array }>;
  /** Packets from addresses not yet in the match, per second, and from those among them retrying (JoinGate). */
  readonly joins: Allowance;
  readonly rejoins: Allowance;
}

/** Where the worker entry is, and how Node must load it (TypeScript sources need tsx). */
function workerEntry(execArgv: string[] | undefined): {
  url: URL | string;
  eval: boolean;
  execArgv: string[];
} {
  const self = import.meta.url;
  if (self.endsWith('.ts')) {
    const entry = new URL('./match-worker.ts', self).href;
    return {
      url: `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`,
      eval: true,
      execArgv: execArgv ?? ['--conditions=backstep-source'],
    };
  }
  return { url: new URL('./match-worker.js', self), eval: false, execArgv: execArgv ?? [] };
}

function moduleUrl(module: string | URL): string {
  if (module instanceof URL) return module.href;
  return module.startsWith('file:') ? module : pathToFileURL(module).href;
}

/** Matches spread over worker threads on one shared endpoint; start with `MatchWorkers.start`. */
export class MatchWorkers {
  readonly stats: MatchWorkersStats = {
    rejected: {},
    refusedNoMatch: 0,
    routed: 0,
    sent: 0,
    inboundFull: 0,
    outboundFull: 0,
    restarts: 0,
  };
  readonly endpoint: DatagramEndpoint;
  private readonly options: MatchWorkersOptions;
  private readonly workers: WorkerSlot[] = [];
  private readonly matches = new Map<number, MatchEntry>();
  private readonly byAddress = new Map<string, MatchEntry>();
  private readonly peers = new Map<string, number>();
  private nextPeer = 1;
  private readonly pending = new Map<number, Pending>();
  private nextSeq = 1;
  private readonly pump: ReturnType<typeof setInterval>;
  private readonly stallMs: number;
  private readonly protocolId: number;
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly refusals: NoMatchRefusals;
  private readonly gate = new JoinGate();
  private closing: Promise<void> | null = null;
  private stopping = false;
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array): void => this.route(from, data);
  private readonly onRecord = (r: RingRecord): void => this.fromWorker(r);

  private constructor(options: MatchWorkersOptions) {
    this.options = options;
    this.endpoint = options.endpoint;
    this.stallMs = options.stallMs ?? 2000;
    this.protocolId = options.protocolId ?? DEFAULT_PROTOCOL_ID;
    this.refusals = new NoMatchRefusals(
      options.endpoint,
      this.protocolId,
      options.maxRefusalsPerSecond ?? 200,
    );
    this.pump = setInterval(() => this.step(), options.pumpMs ?? 1);
  }

  /** Starts the workers and resolves once each has loaded the match module (rejects naming what failed). */
  static async start(options: MatchWorkersOptions): Promise<MatchWorkers> {
    const count = options.workers ?? availableParallelism();
    if (!Number.isInteger(count) || count < 1 || count > 256) {
      throw new RangeError(
        `MatchWorkers: workers must be an integer in 1..256, got ${String(options.workers)}`,
      );
    }
    for (const key of ['stallMs', 'pumpMs', 'loopMs'] as const) {
      const v = options[key];
      if (v !== undefined && (!(v > 0) || !Number.isFinite(v))) {
        throw new RangeError(
          `MatchWorkers: ${key} must be a positive number of milliseconds, got ${String(v)}`,
        );
      }
    }
    createRingBuffers(options.ringSlots ?? 2048);
    checkRate('MatchWorkers', 'maxRefusalsPerSecond', options.maxRefusalsPerSecond ?? 200);
    checkRate('MatchWorkers', 'maxJoinPacketsPerSecond', options.maxJoinPacketsPerSecond ?? 500);
    const host = new MatchWorkers(options);
    try {
      for (let i = 0; i < count; i++) host.workers.push(new WorkerSlot(i));
      await Promise.all(host.workers.map((w) => host.spawn(w)));
    } catch (error) {
      await host.stop();
      throw error;
    }
    return host;
  }

  /** Worker threads running. */
  get workerCount(): number {
    return this.workers.length;
  }

  /** Matches running. */
  get size(): number {
    return this.matches.size;
  }

  /** Addresses bound to a match. */
  get boundAddresses(): number {
    return this.byAddress.size;
  }

  /** The worker (0-based) running match `id`, or -1. */
  workerOf(id: number): number {
    return this.matches.get(id)?.worker.index ?? -1;
  }

  /**
   * Creates match `id` on the least loaded worker from `options` (structured-cloned to the
   * module's `createMatch`). Resolves once it runs; rejects if the id is taken or the module threw.
   */
  async create(id: number, options?: unknown): Promise<void> {
    checkMatchId('MatchWorkers.create', id);
    if (this.stopping) throw new Error('MatchWorkers.create: closed');
    if (this.matches.has(id)) throw new Error(`MatchWorkers.create: match ${id} is already running`);
    let worker = this.workers[0];
    for (const w of this.workers) if (w.matches.size < worker.matches.size) worker = w;
    const entry: MatchEntry = {
      id,
      worker,
      players: new Map(),
      joins: new Allowance(this.options.maxJoinPacketsPerSecond ?? 500),
      rejoins: new Allowance(this.options.maxJoinPacketsPerSecond ?? 500),
    };
    this.matches.set(id, entry);
    worker.matches.add(id);
    try {
      await this.request(worker, (seq) => ({ type: 'create', id, options, seq }));
    } catch (error) {
      this.forget(entry);
      throw error;
    }
  }

  /** Ends match `id` (its clients told `reason`); `onEnded` hears of it. False when no such match runs. */
  end(id: number, reason: number = DISCONNECT_MATCH_ENDED): boolean {
    const entry = this.matches.get(id);
    if (entry === undefined) return false;
    this.post(entry.worker, { type: 'end', id, reason });
    return true;
  }

  /** What match `id`'s `inspect()` returns in its worker. */
  inspect(id: number): Promise<unknown> {
    const entry = this.matches.get(id);
    if (entry === undefined) return Promise.reject(new Error(`MatchWorkers.inspect: no match ${id}`));
    return this.request(entry.worker, (seq) => ({ type: 'inspect', id, seq }));
  }

  /** Players in match `id` (addresses its connection layer accepted). */
  players(id: number): number {
    return this.matches.get(id)?.players.size ?? 0;
  }

  /**
   * True when every worker runs and its loop turned within `maxSilenceMs` (default 1000, at most
   * stallMs): what a health check (Agones, /healthz) should report, so one stalled match fails
   * the process's health before the watchdog ends it.
   */
  healthy(nowMs: number = performance.now(), maxSilenceMs = Math.min(1000, this.stallMs)): boolean {
    for (const w of this.workers) if (!w.alive || nowMs - w.lastBeatMs > maxSilenceMs) return false;
    return true;
  }

  /** Ends every match (DISCONNECT_SERVER_SHUTDOWN), stops the workers and closes the endpoint. */
  close(): Promise<void> {
    this.closing ??= this.stop().then(() => this.endpoint.close());
    return this.closing;
  }

  private async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map(async (w) => {
        if (!w.alive) return;
        const closed = new Promise<void>((resolve) => {
          w.worker.once('exit', () => resolve());
        });
        this.post(w, { type: 'close' });
        const timer = setTimeout(() => void w.worker.terminate(), 2000);
        await closed;
        clearTimeout(timer);
      }),
    );
    this.step();
    clearInterval(this.pump);
    for (const entry of [...this.matches.values()])
      this.finish(entry, DISCONNECT_SERVER_SHUTDOWN, undefined, 0);
  }

  private spawn(slot: WorkerSlot): Promise<void> {
    const slots = this.options.ringSlots ?? 2048;
    const inbound = createRingBuffers(slots);
    const outbound = createRingBuffers(slots);
    const heartbeat = new SharedArrayBuffer(8);
    const entry = workerEntry(this.options.execArgv);
    const data: MatchWorkerData = {
      index: slot.index,
      moduleUrl: moduleUrl(this.options.module),
      inbound,
      outbound,
      heartbeat,
      loopMs: this.options.loopMs ?? 2,
      queueCapacity: this.options.queueCapacity ?? 1024,
      protocolId: this.protocolId,
    };
    const worker = new Worker(entry.url, { eval: entry.eval, execArgv: entry.execArgv, workerData: data });
    slot.worker = worker;
    slot.inbound = new DatagramRing(inbound);
    slot.outbound = new DatagramRing(outbound);
    slot.heartbeat = new Int32Array(heartbeat);
    slot.lastBeat = 0;
    slot.lastBeatMs = performance.now();
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      worker.on('message', (message: WorkerReply) => {
        if (message.type === 'ready') {
          ready = true;
          slot.alive = true;
          slot.lastBeatMs = performance.now();
          resolve();
        } else this.reply(slot, message);
      });
      worker.on('error', (error) => {
        if (!ready) reject(new Error(`MatchWorkers: worker ${slot.index} failed to start: ${error.message}`));
        else if (slot.worker === worker) this.lose(slot, `worker ${slot.index} crashed: ${error.message}`, 0);
      });
      worker.on('exit', (code) => {
        if (!ready)
          reject(new Error(`MatchWorkers: worker ${slot.index} exited with code ${code} while starting`));
        else if (slot.alive && slot.worker === worker && !this.stopping)
          this.lose(slot, `worker ${slot.index} exited with code ${code}`, 0);
        if (slot.worker === worker) slot.alive = false;
      });
    });
  }

  private post(slot: WorkerSlot, request: WorkerRequest): void {
    if (slot.alive) slot.worker.postMessage(request);
  }

  private request(slot: WorkerSlot, make: (seq: number) => WorkerRequest): Promise<unknown> {
    const seq = this.nextSeq++;
    return new Promise((resolve, reject) => {
      if (!slot.alive) {
        reject(new Error(`MatchWorkers: worker ${slot.index} is not running`));
        return;
      }
      this.pending.set(seq, { slot, resolve, reject });
      slot.worker.postMessage(make(seq));
    });
  }

  private reply(slot: WorkerSlot, message: WorkerReply): void {
    if (message.type === 'created' || message.type === 'inspected') {
      const pending = this.pending.get(message.seq);
      if (pending === undefined) return;
      this.pending.delete(message.seq);
      if (message.error !== undefined) pending.reject(new Error(message.error));
      else pending.resolve(message.type === 'inspected' ? message.value : undefined);
    } else if (message.type === 'ended') {
      // Records already in the ring (the match's last sends) go out first.
      this.drain(slot);
      const entry = this.matches.get(message.id);
      if (entry !== undefined && entry.worker === slot)
        this.finish(entry, message.reason, message.error, message.ticks, message.clients);
    }
  }

  /** The main thread's loop: datagrams to the workers, theirs to the network, the watchdog. */
  private step(): void {
    const now = performance.now();
    this.nowMs = now;
    this.endpoint.poll(now, this.onPacket);
    for (const w of this.workers) {
      if (!w.alive) continue;
      this.drain(w);
      const beat = Atomics.load(w.heartbeat, 0);
      if (beat !== w.lastBeat) {
        w.lastBeat = beat;
        w.lastBeatMs = now;
      } else if (now - w.lastBeatMs > this.stallMs) {
        const stuck = Atomics.load(w.heartbeat, 1) >>> 0;
        this.lose(
          w,
          `match ${stuck} stalled its worker's loop for ${Math.round(now - w.lastBeatMs)} ms`,
          stuck,
        );
      }
    }
  }

  private drain(slot: WorkerSlot): void {
    const before = slot.outbound.full;
    slot.outbound.read(this.onRecord);
    this.stats.outboundFull += slot.outbound.full - before;
  }

  private fromWorker(r: RingRecord): void {
    switch (r.kind) {
      case RING_DATAGRAM:
        this.stats.sent++;
        this.endpoint.send(r.address, r.data);
        break;
      case RING_BIND: {
        const entry = this.matches.get(r.matchId);
        if (entry === undefined) return;
        const previous = this.byAddress.get(r.address);
        if (previous !== undefined && previous !== entry) previous.players.delete(r.address);
        this.byAddress.set(r.address, entry);
        this.endpoint.established?.(r.address);
        entry.players.set(r.address, { nonce: r.nonce, token: r.data.slice(0, DISCONNECT_TOKEN_BYTES) });
        this.options.onPlayer?.(r.address, r.matchId, true);
        break;
      }
      case RING_UNBIND: {
        const entry = this.matches.get(r.matchId);
        if (entry === undefined || !entry.players.delete(r.address)) return;
        if (this.byAddress.get(r.address) === entry) this.byAddress.delete(r.address);
        this.options.onPlayer?.(r.address, r.matchId, false);
        break;
      }
      case RING_DROP:
        this.endpoint.drop?.(r.address);
        break;
    }
  }

  /** The router: a bound address to its match's worker; a routed lifecycle packet to the match it names. */
  private route(from: string, data: Uint8Array): void {
    let entry = this.byAddress.get(from);
    if (entry === undefined) {
      const routed = readMatchRoute(data);
      if (routed === 0) {
        this.reject(peekPacketType(data) === PacketType.Data ? 'unknown address' : 'no route header');
        return;
      }
      entry = this.matches.get(routed);
      if (entry === undefined) {
        this.refuseNoMatch(from, data.subarray(MATCH_ROUTE_HEADER_BYTES));
        return;
      }
      if (!this.gate.take(from, this.nowMs, entry.joins, entry.rejoins)) {
        this.reject('join rate');
        return;
      }
    }
    let peer = this.peers.get(from);
    if (peer === undefined) {
      if (this.peers.size >= 65536) this.peers.clear();
      peer = this.nextPeer;
      this.nextPeer = this.nextPeer >= 0xffffffff ? 1 : this.nextPeer + 1;
      this.peers.set(from, peer);
    }
    const ring = entry.worker.inbound;
    if (ring.write(RING_DATAGRAM, entry.id, peer, 0, from, data)) this.stats.routed++;
    else this.stats.inboundFull++;
  }

  private reject(reason: string): void {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
  }

  private refuseNoMatch(from: string, inner: Uint8Array): void {
    this.reject('no such match');
    this.refusals.answer(from, inner, performance.now());
    this.stats.refusedNoMatch = this.refusals.sent;
  }

  /**
   * A worker stalled or crashed: every match on it is ended (its players told
   * DISCONNECT_MATCH_FAILED from here, since the worker cannot), reported, and a fresh worker
   * takes its place.
   */
  private lose(slot: WorkerSlot, why: string, culprit: number): void {
    if (!slot.alive) return;
    slot.alive = false;
    const dead = slot.worker;
    void dead.terminate();
    for (const [seq, pending] of this.pending) {
      if (pending.slot !== slot) continue;
      pending.reject(new Error(`MatchWorkers: ${why}`));
      this.pending.delete(seq);
    }
    for (const id of [...slot.matches]) {
      const entry = this.matches.get(id);
      if (entry === undefined) continue;
      const p = this.hs;
      for (const [address, player] of entry.players) {
        // The worker holds the packet keys and cannot seal: the disconnect token proves this one.
        p.type = PACKET_SERVER_DISCONNECT;
        p.clientNonce = player.nonce;
        p.token.set(player.token);
        p.reason = DISCONNECT_MATCH_FAILED;
        for (let i = 0; i < 3; i++)
          this.endpoint.send(address, writeHandshakePacket(this.hsStream, this.protocolId, p));
      }
      const error = id === culprit ? why : `ended with its worker: ${why}`;
      this.finish(entry, DISCONNECT_MATCH_FAILED, error, 0, entry.players.size);
    }
    if (this.stopping) return;
    this.stats.restarts++;
    this.spawn(slot).catch((error: unknown) => {
      this.reject(`worker restart failed: ${String(error)}`);
    });
  }

  private finish(
    entry: MatchEntry,
    reason: number,
    error: string | undefined,
    ticks: number,
    clients?: number,
  ): void {
    const count = clients ?? entry.players.size;
    for (const address of entry.players.keys()) {
      if (this.byAddress.get(address) === entry) this.byAddress.delete(address);
      this.options.onPlayer?.(address, entry.id, false);
    }
    this.forget(entry);
    this.options.onEnded?.({ id: entry.id, reason, error, ticks, clients: count });
  }

  private forget(entry: MatchEntry): void {
    entry.players.clear();
    entry.worker.matches.delete(entry.id);
    if (this.matches.get(entry.id) === entry) this.matches.delete(entry.id);
  }
}
