// The UDP transport (Node only): a DatagramEndpoint over one node:dgram IPv4 socket, for Node clients, bots and servers.
//
// Each datagram is one UDP payload carrying exactly its bytes (1..MAX_PACKET_BYTES). Addresses
// are "udp:IP:PORT" (e.g. "udp:127.0.0.1:4000"), and the host behind one is "udp:IP"
// (hostOf); UDP is connectionless, so there is no link to drop. Received datagrams wait in a
// bounded queue (new ones are dropped and counted when it is full) until poll() hands them out.
// The socket's kernel buffers are asked to be large (4 MB each by default): a burst on loopback
// otherwise overflows them before the event loop gets to read.

import dgram from 'node:dgram';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import { checkQueueCapacity, createTransportStats, DatagramQueue, SendPool } from './queue.ts';

export interface UdpEndpointOptions {
  /** IPv4 address to bind (default "127.0.0.1"). */
  host?: string;
  /** Port to bind; 0 (the default) picks a free one (a client). */
  port?: number;
  /** Kernel receive and send buffer sizes asked for, bytes (default 4 MB each). */
  recvBufferBytes?: number;
  sendBufferBytes?: number;
  /** Received datagrams held between polls (default 4096). */
  queueCapacity?: number;
}

export const DEFAULT_UDP_BUFFER_BYTES = 4 * 1024 * 1024;

/** Most remembered "udp:IP:PORT" strings, each way; the caches start over when full. */
const ADDRESS_CACHE_LIMIT = 4096;

/** A parsed destination. */
interface Route {
  ip: string;
  port: number;
}

/**
 * Parses "udp:IP:PORT" (dotted IPv4, port 1..65535) into a route, or null. Used on addresses
 * given to send(), which come from the engine (a client's `from`) or the caller.
 */
export function parseUdpAddress(address: string): Route | null {
  if (!address.startsWith('udp:')) return null;
  const colon = address.lastIndexOf(':');
  if (colon <= 4) return null;
  const ip = address.slice(4, colon);
  const portText = address.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText)) return null;
  const port = Number(portText);
  if (port < 1 || port > 65535) return null;
  const parts = ip.split('.');
  if (parts.length !== 4) return null;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null;
  }
  return { ip, port };
}

/** The address string of an IPv4 socket address. */
export function udpAddress(ip: string, port: number): string {
  return `udp:${ip}:${port}`;
}

/** A UDP endpoint; create it with UdpEndpoint.open(). */
export class UdpEndpoint implements DatagramEndpoint {
  /** "udp:IP:PORT" of the bound socket. */
  readonly address: string;
  readonly port: number;
  readonly stats = createTransportStats();
  /** The kernel buffer sizes actually granted, bytes. */
  readonly recvBufferBytes: number;
  readonly sendBufferBytes: number;
  private readonly socket: dgram.Socket;
  private readonly queue: DatagramQueue;
  private readonly routes = new Map<string, Route | null>();
  /** "udp:IP:PORT" strings of senders, by IP then port: no string is built per datagram. */
  private readonly senders = new Map<string, Map<number, string>>();
  private senderCount = 0;
  private readonly sendPool = new SendPool(this.stats);
  private open = true;
  private readonly closed: Promise<void>;

  private constructor(socket: dgram.Socket, queueCapacity: number) {
    this.socket = socket;
    const bound = socket.address();
    this.port = bound.port;
    this.address = udpAddress(bound.address, bound.port);
    this.recvBufferBytes = socket.getRecvBufferSize();
    this.sendBufferBytes = socket.getSendBufferSize();
    this.queue = new DatagramQueue(queueCapacity, this.stats);
    this.closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('message', (msg, rinfo) => {
      if (this.open) this.queue.push(this.senderAddress(rinfo.address, rinfo.port), msg);
    });
    socket.on('error', () => {
      this.stats.sendErrors++;
    });
  }

  /**
   * Binds a UDP socket and resolves with the endpoint. Throws (rejects) with an Error naming the
   * bad option, or the bind failure (e.g. the port is in use).
   */
  static async open(options: UdpEndpointOptions = {}): Promise<UdpEndpoint> {
    const host = options.host ?? '127.0.0.1';
    const port = options.port ?? 0;
    const recvBufferSize = options.recvBufferBytes ?? DEFAULT_UDP_BUFFER_BYTES;
    const sendBufferSize = options.sendBufferBytes ?? DEFAULT_UDP_BUFFER_BYTES;
    const queueCapacity = options.queueCapacity ?? 4096;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new RangeError(`UdpEndpoint: port must be an integer in 0..65535, got ${port}`);
    }
    checkQueueCapacity('UdpEndpoint', queueCapacity);
    if (parseUdpAddress(`udp:${host}:1`) === null) {
      throw new RangeError(`UdpEndpoint: host must be a dotted IPv4 address, got ${JSON.stringify(host)}`);
    }
    for (const [name, value] of [
      ['recvBufferBytes', recvBufferSize],
      ['sendBufferBytes', sendBufferSize],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) {
        throw new RangeError(`UdpEndpoint: ${name} must be a positive integer, got ${value}`);
      }
    }
    const socket = dgram.createSocket({ type: 'udp4', recvBufferSize, sendBufferSize });
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => {
        socket.close();
        reject(new Error(`UdpEndpoint: cannot bind ${host}:${port}: ${error.message}`));
      };
      socket.once('error', onError);
      socket.bind(port, host, () => {
        socket.off('error', onError);
        resolve();
      });
    });
    return new UdpEndpoint(socket, queueCapacity);
  }

  /** True until close(). */
  get isOpen(): boolean {
    return this.open;
  }

  /**
   * Copies `data` into a pooled buffer and sends it to `to` ("udp:IP:PORT"). Dropped and counted
   * when over MAX_PACKET_BYTES or when `to` is not a UDP address; ignored after close().
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    const length = data.length;
    if (length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    const route = this.route(to);
    if (route === null) {
      this.stats.droppedNoRoute++;
      return;
    }
    const slot = this.sendPool.copy(data);
    try {
      this.socket.send(slot.bytes, 0, length, route.port, route.ip, slot.done);
    } catch {
      this.sendPool.release(slot, null);
      this.stats.sendErrors++;
      return;
    }
    this.stats.packetsSent++;
    this.stats.bytesSent += length;
  }

  /** "udp:IP" for a UDP address "udp:IP:PORT" (any port: the host, for bans); null for anything else. */
  hostOf(address: string): string | null {
    const route = this.route(address);
    return route === null ? null : `udp:${route.ip}`;
  }

  /** Delivers every datagram received since the last poll, in arrival order. */
  poll(_nowMs: number, onPacket: PacketHandler): void {
    if (this.open) this.queue.drain(onPacket);
  }

  /** Closes the socket (queued datagrams are discarded); resolves once it is closed. Idempotent. */
  close(): Promise<void> {
    if (this.open) {
      this.open = false;
      this.queue.clear();
      this.socket.close();
    }
    return this.closed;
  }

  private route(to: string): Route | null {
    let route = this.routes.get(to);
    if (route === undefined) {
      route = parseUdpAddress(to);
      if (this.routes.size >= ADDRESS_CACHE_LIMIT) this.routes.clear();
      this.routes.set(to, route);
    }
    return route;
  }

  private senderAddress(ip: string, port: number): string {
    let byPort = this.senders.get(ip);
    if (byPort === undefined) {
      if (this.senderCount >= ADDRESS_CACHE_LIMIT) {
        this.senders.clear();
        this.senderCount = 0;
      }
      byPort = new Map();
      this.senders.set(ip, byPort);
    }
    let address = byPort.get(port);
    if (address === undefined) {
      if (this.senderCount >= ADDRESS_CACHE_LIMIT) {
        byPort.clear();
        this.senders.clear();
        this.senders.set(ip, byPort);
        this.senderCount = 0;
      }
      address = udpAddress(ip, port);
      byPort.set(port, address);
      this.senderCount++;
    }
    return address;
  }
}
