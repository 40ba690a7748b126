// A match worker thread (Node only): runs the matches the main thread places on it, each a
// GameServer of the match module's making, over a ring endpoint (datagrams in and out through
// shared memory), on its own real-time loop; reports its heartbeat in shared memory so a stalled
// loop is seen from outside.

import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { DatagramEndpoint, PacketHandler } from '../net/transport.ts';
import { MatchHost } from '../server/matches.ts';
import {
  DatagramRing,
  RING_BIND,
  RING_DATAGRAM,
  RING_DROP,
  RING_UNBIND,
  type RingBuffers,
  type RingRecord,
} from './datagram-ring.ts';
import type { MatchModule, WorkerReply, WorkerRequest } from './match-workers.ts';

export interface MatchWorkerData {
  index: number;
  moduleUrl: string;
  inbound: RingBuffers;
  outbound: RingBuffers;
  /** Int32: [loop count, match id running (0: none)]. */
  heartbeat: SharedArrayBuffer;
  loopMs: number;
  queueCapacity: number;
  protocolId: number;
}

/** The shared endpoint of a worker's matches: reads the inbound ring, writes the outbound one. */
class RingEndpoint implements DatagramEndpoint {
  readonly address: string;
  /** Peer number of each address seen, echoed back with everything sent to it. */
  readonly peers = new Map<string, number>();
  private readonly inbound: DatagramRing;
  private readonly outbound: DatagramRing;
  private handler: PacketHandler | null = null;
  private readonly onRecord = (r: RingRecord): void => {
    if (r.kind !== RING_DATAGRAM || this.handler === null) return;
    if (!this.peers.has(r.address)) {
      if (this.peers.size >= 65536) this.peers.clear();
      this.peers.set(r.address, r.peer);
    }
    this.handler(r.address, r.data);
  };

  constructor(index: number, inbound: DatagramRing, outbound: DatagramRing) {
    this.address = `worker:${index}`;
    this.inbound = inbound;
    this.outbound = outbound;
  }

  send(to: string, data: Uint8Array): void {
    this.outbound.write(RING_DATAGRAM, 0, this.peers.get(to) ?? 0, 0, to, data);
  }

  poll(_nowMs: number, onPacket: PacketHandler): void {
    this.handler = onPacket;
    this.inbound.read(this.onRecord);
    this.handler = null;
  }

  hostOf(address: string): string | null {
    if (!address.startsWith('udp:')) return null;
    const colon = address.lastIndexOf(':');
    return colon > 4 ? address.slice(0, colon) : null;
  }

  drop(address: string): void {
    this.outbound.write(RING_DROP, 0, this.peers.get(address) ?? 0, 0, address, null);
  }

  bind(address: string, matchId: number, nonce: number, disconnectToken: Uint8Array): void {
    this.outbound.write(RING_BIND, matchId, this.peers.get(address) ?? 0, nonce, address, disconnectToken);
  }

  unbind(address: string, matchId: number): void {
    this.outbound.write(RING_UNBIND, matchId, this.peers.get(address) ?? 0, 0, address, null);
  }

  close(): void {}
}

async function run(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('match-worker: not started as a worker thread');
  const data = workerData as MatchWorkerData;
  const module = (await import(data.moduleUrl)) as Partial<MatchModule>;
  if (typeof module.createMatch !== 'function') {
    throw new Error(`match-worker: ${data.moduleUrl} exports no createMatch(id, options) function`);
  }
  const createMatch = module.createMatch;
  const heartbeat = new Int32Array(data.heartbeat);
  const endpoint = new RingEndpoint(
    data.index,
    new DatagramRing(data.inbound),
    new DatagramRing(data.outbound),
  );
  const reply = (message: WorkerReply): void => port.postMessage(message);
  const inspectors = new Map<number, () => unknown>();
  const host = new MatchHost(endpoint, {
    queueCapacity: data.queueCapacity,
    protocolId: data.protocolId,
    onEnded: (ended) => {
      inspectors.delete(ended.id);
      reply({
        type: 'ended',
        id: ended.id,
        reason: ended.reason,
        error: ended.error === undefined ? undefined : errorText(ended.error),
        ticks: ended.ticks,
        clients: ended.clients,
      });
    },
    onRunning: (id) => Atomics.store(heartbeat, 1, id | 0),
    onBind: (address, id, nonce, token) => endpoint.bind(address, id, nonce, token),
    onUnbind: (address, id) => endpoint.unbind(address, id),
  });
  port.on('message', (request: WorkerRequest) => {
    switch (request.type) {
      case 'create':
        try {
          const spec = createMatch(request.id, request.options);
          host.create(request.id, spec);
          if (spec.inspect !== undefined) inspectors.set(request.id, spec.inspect);
          reply({ type: 'created', seq: request.seq });
        } catch (error) {
          reply({ type: 'created', seq: request.seq, error: errorText(error) });
        }
        break;
      case 'end':
        host.end(request.id, request.reason);
        break;
      case 'inspect':
        try {
          const inspect = inspectors.get(request.id);
          reply({ type: 'inspected', seq: request.seq, value: inspect?.() });
        } catch (error) {
          reply({ type: 'inspected', seq: request.seq, error: errorText(error) });
        }
        break;
      case 'close':
        clearInterval(timer);
        host.close();
        reply({ type: 'closed' });
        port.close();
        break;
    }
  });
  const timer = setInterval(() => {
    Atomics.add(heartbeat, 0, 1);
    host.update(performance.now());
  }, data.loopMs);
  reply({ type: 'ready' });
}

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

run().catch((error: unknown) => {
  throw error;
});
