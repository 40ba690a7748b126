// The WebSocket server transport (Node only, `ws`): datagrams as binary messages on WebSockets upgraded from an existing HTTP server.
//
// Wire form: one binary message per datagram (table in websocket-client.ts). Each accepted
// socket gets the address "ws:N" (N counts up from 1 and is never reused); once it closes, sends
// to its address are dropped. WebSocket is TCP, so a socket is state the server keeps before any
// challenge: their number is bounded (maxSockets, more are refused with 503 before the upgrade),
// and the endpoint closes a socket that
//   - sends a text message (not a datagram) or a message over MAX_PACKET_BYTES,
//   - has not been sent anything by the engine within answerTimeoutMs of opening (it never
//     sent a valid connection request), or
//   - has sent nothing for idleTimeoutMs,
// each counted. Time is the engine's: the times given to poll().

import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import {
  createTransportStats,
  DatagramQueue,
  DEFAULT_MAX_BUFFERED_BYTES,
  type TransportStats,
} from './websocket-client.ts';

export interface WebSocketServerOptions {
  /** URL path the WebSocket is upgraded on (default "/ws"). */
  path?: string;
  /** Most open sockets (default 256). */
  maxSockets?: number;
  /** A socket the engine has sent nothing to this long after it opened is closed (default 5000). */
  answerTimeoutMs?: number;
  /** A socket silent this long is closed (default 30 000). */
  idleTimeoutMs?: number;
  /** Received datagrams held between polls (default 4096). */
  queueCapacity?: number;
  /** Bytes a socket may have waiting to go out before a send to it is dropped (default 256 KB). */
  maxBufferedBytes?: number;
}

export interface WebSocketServerStats extends TransportStats {
  socketsOpened: number;
  /** Upgrades refused because maxSockets were open. */
  socketsRefused: number;
  socketsClosed: number;
  /** Sockets closed for a message over MAX_PACKET_BYTES. */
  closedOversize: number;
  /** Sockets closed for a text message or a protocol error. */
  closedBadMessage: number;
  /** Sockets closed because the engine never answered them within answerTimeoutMs. */
  closedUnanswered: number;
  /** Sockets closed after idleTimeoutMs of silence. */
  closedIdle: number;
}

/** Something that may take an HTTP upgrade request: true when it did (the socket is then its own). */
export interface UpgradeHandler {
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
}

/**
 * Routes `server`'s upgrade requests to the first handler that takes each; one nobody takes is
 * answered 404 and its socket destroyed. Returns a function that removes the routing.
 */
export function routeUpgrades(server: Server, handlers: readonly UpgradeHandler[]): () => void {
  const listener = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    for (const handler of handlers) if (handler.handleUpgrade(request, socket, head)) return;
    refuseUpgrade(socket, 404, 'Not Found');
  };
  server.on('upgrade', listener);
  return () => {
    server.off('upgrade', listener);
  };
}

/** Answers an upgrade request with an HTTP error and closes its socket. */
export function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  if (socket.writable)
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  socket.destroy();
}

/** The path of a request URL (what precedes any "?"). */
export function requestPath(request: IncomingMessage): string {
  const url = request.url ?? '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** Checks that `value` is a positive integer; names `field` otherwise. */
export function checkCount(where: string, field: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${where}: ${field} must be a positive integer, got ${value}`);
  }
}

/** Checks that `value` is a positive finite number of milliseconds; names `field` otherwise. */
export function checkMs(where: string, field: string, value: number): void {
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(`${where}: ${field} must be a positive finite number of ms, got ${value}`);
  }
}

/** How often poll() looks for sockets to time out, ms of engine time. */
export const SWEEP_INTERVAL_MS = 250;

/** One pooled send buffer; released when `ws` reports the send written. */
class SendSlot {
  readonly bytes = Buffer.allocUnsafe(MAX_PACKET_BYTES);
  readonly done: (error?: Error) => void;

  constructor(release: (slot: SendSlot) => void) {
    this.done = () => release(this);
  }
}

class Socket {
  /** Engine time it opened (NaN until the first poll after). */
  openedMs = Number.NaN;
  lastReceivedMs = Number.NaN;
  answered = false;
  constructor(
    readonly address: string,
    readonly ws: WebSocket,
  ) {}
}

/** The server side of the WebSocket transport; give it upgrades with attach() or routeUpgrades(). */
export class WebSocketServerEndpoint implements DatagramEndpoint, UpgradeHandler {
  readonly address = 'ws';
  readonly path: string;
  readonly stats: WebSocketServerStats = {
    ...createTransportStats(),
    socketsOpened: 0,
    socketsRefused: 0,
    socketsClosed: 0,
    closedOversize: 0,
    closedBadMessage: 0,
    closedUnanswered: 0,
    closedIdle: 0,
  };
  private readonly maxSockets: number;
  private readonly answerTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly maxBufferedBytes: number;
  private readonly wss: WebSocketServer;
  private readonly queue: DatagramQueue;
  private readonly sockets = new Map<string, Socket>();
  private readonly freeSlots: SendSlot[] = [];
  private readonly releaseSlot = (slot: SendSlot): void => {
    this.freeSlots.push(slot);
  };
  private upgrading = 0;
  private nextId = 1;
  private nowMs = Number.NaN;
  private nextSweepMs = Number.NEGATIVE_INFINITY;
  private open = true;
  private closing: Promise<void> | null = null;
  private detach: (() => void) | null = null;

  /** Throws a RangeError naming the bad option. */
  constructor(options: WebSocketServerOptions = {}) {
    const where = 'WebSocketServerEndpoint';
    this.path = options.path ?? '/ws';
    if (!this.path.startsWith('/'))
      throw new RangeError(`${where}: path must start with "/", got ${this.path}`);
    this.maxSockets = options.maxSockets ?? 256;
    this.answerTimeoutMs = options.answerTimeoutMs ?? 5000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    checkCount(where, 'maxSockets', this.maxSockets);
    checkMs(where, 'answerTimeoutMs', this.answerTimeoutMs);
    checkMs(where, 'idleTimeoutMs', this.idleTimeoutMs);
    checkCount(where, 'maxBufferedBytes', this.maxBufferedBytes);
    this.queue = new DatagramQueue(options.queueCapacity ?? 4096, this.stats);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_PACKET_BYTES,
      clientTracking: false,
      perMessageDeflate: false,
    });
  }

  /** Open sockets. */
  get socketCount(): number {
    return this.sockets.size;
  }

  /** Takes this endpoint's upgrades from `server` (any other path is answered 404). */
  attach(server: Server): void {
    this.detach?.();
    this.detach = routeUpgrades(server, [this]);
  }

  /**
   * Takes an upgrade request on this endpoint's path: refused with 503 when maxSockets are open
   * (counted), else upgraded to a WebSocket. False (untouched) for another path.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (requestPath(request) !== this.path) return false;
    if (!this.open || this.sockets.size + this.upgrading >= this.maxSockets) {
      this.stats.socketsRefused++;
      refuseUpgrade(socket, 503, 'Service Unavailable');
      return true;
    }
    this.upgrading++;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      this.upgrading--;
    };
    socket.once('close', finish);
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      finish();
      this.accept(ws);
    });
    return true;
  }

  /**
   * Copies `data` and sends it as one binary message to the socket at `to`. Dropped and counted
   * when over MAX_PACKET_BYTES, when `to` is not an open socket, or when the socket already has
   * more than maxBufferedBytes waiting; ignored after close().
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    const length = data.length;
    if (length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    const socket = this.sockets.get(to);
    if (socket === undefined || socket.ws.readyState !== socket.ws.OPEN) {
      this.stats.droppedNoRoute++;
      return;
    }
    if (socket.ws.bufferedAmount > this.maxBufferedBytes) {
      this.stats.sendErrors++;
      return;
    }
    const slot = this.freeSlots.pop() ?? new SendSlot(this.releaseSlot);
    slot.bytes.set(data);
    socket.ws.send(slot.bytes.subarray(0, length), slot.done);
    socket.answered = true;
    this.stats.packetsSent++;
    this.stats.bytesSent += length;
  }

  /**
   * Delivers every datagram received since the last poll, in arrival order, then closes sockets
   * past their answer or idle timeout (checked every SWEEP_INTERVAL_MS of `nowMs`).
   */
  poll(nowMs: number, onPacket: PacketHandler): void {
    if (!this.open) return;
    if (Number.isFinite(nowMs) && !(nowMs <= this.nowMs)) this.nowMs = nowMs;
    this.queue.drain(onPacket);
    if (this.nowMs >= this.nextSweepMs) {
      this.nextSweepMs = this.nowMs + SWEEP_INTERVAL_MS;
      this.sweep(this.nowMs);
    }
  }

  /**
   * Refuses new sockets, closes every open one (going away) and resolves once all have closed
   * (a socket that does not finish its closing handshake within 2 s is cut). Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.open = false;
    this.queue.clear();
    this.detach?.();
    const waits: Promise<void>[] = [];
    for (const socket of this.sockets.values()) {
      const ws = socket.ws;
      waits.push(
        new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) {
            resolve();
            return;
          }
          const timer = setTimeout(() => ws.terminate(), 2000);
          ws.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
          ws.close(1001, 'server closing');
        }),
      );
    }
    this.closing = Promise.all(waits).then(
      () =>
        new Promise<void>((resolve) => {
          this.wss.close(() => resolve());
        }),
    );
    return this.closing;
  }

  private accept(ws: WebSocket): void {
    if (!this.open) {
      ws.terminate();
      return;
    }
    const socket = new Socket(`ws:${this.nextId++}`, ws);
    socket.openedMs = this.nowMs;
    this.sockets.set(socket.address, socket);
    this.stats.socketsOpened++;
    ws.on('message', (data, isBinary) => {
      if (!this.open || this.sockets.get(socket.address) !== socket) return;
      if (!isBinary || !Buffer.isBuffer(data)) {
        this.stats.closedBadMessage++;
        this.drop(socket, 1003, 'binary datagrams only');
        return;
      }
      socket.lastReceivedMs = this.nowMs;
      this.queue.push(socket.address, data);
    });
    ws.on('error', (error: Error & { code?: string }) => {
      if (this.sockets.get(socket.address) !== socket) return;
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.stats.closedOversize++;
      else this.stats.closedBadMessage++;
      this.drop(socket, 1009, 'message too big');
    });
    ws.on('close', () => {
      if (this.sockets.get(socket.address) === socket) this.sockets.delete(socket.address);
      this.stats.socketsClosed++;
    });
  }

  /** Forgets a socket at once (its address stops receiving) and closes it. */
  private drop(socket: Socket, code: number, reason: string): void {
    this.sockets.delete(socket.address);
    const ws = socket.ws;
    if (ws.readyState === ws.OPEN) ws.close(code, reason);
    else ws.terminate();
  }

  private sweep(nowMs: number): void {
    for (const socket of this.sockets.values()) {
      if (Number.isNaN(socket.openedMs)) socket.openedMs = nowMs;
      if (Number.isNaN(socket.lastReceivedMs)) socket.lastReceivedMs = socket.openedMs;
      if (!socket.answered && nowMs - socket.openedMs > this.answerTimeoutMs) {
        this.stats.closedUnanswered++;
        this.drop(socket, 1008, 'no valid request');
      } else if (nowMs - socket.lastReceivedMs > this.idleTimeoutMs) {
        this.stats.closedIdle++;
        this.drop(socket, 1000, 'idle');
      }
    }
  }
}
