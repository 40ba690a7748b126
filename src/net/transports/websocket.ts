// The WebSocket server transport (Node only, `ws`): datagrams as binary messages on WebSockets upgraded from an existing HTTP server, as a LinkServerEndpoint (link-server.ts).
//
// Wire form: one binary message per datagram (table in websocket-client.ts). Each accepted
// socket gets the address "ws:N" (N counts up from 1 and is never reused); once it closes, sends
// to its address are dropped. WebSocket is TCP, so a socket is state the server keeps before any
// challenge: their number is bounded (maxSockets in all and maxSocketsPerHost from one IP
// address; more are refused with 503 or 429 before the upgrade), and the endpoint closes a
// socket that
//   - sends a text message (not a datagram) or a message over MAX_PACKET_BYTES,
//   - has not been sent anything by the engine within answerTimeoutMs of opening (it never
//     sent a valid connection request), or
//   - has sent nothing for idleTimeoutMs,
// each counted. Time is the engine's: the times given to poll(). The engine ends a link with
// drop(): its address stops routing at once and its room is free, and the socket is closed
// after the datagrams already sent on it (a WebSocket sends its close frame after them).
// hostOf("ws:N") is "ws:IP", the remote address the socket came from (an IPv4-mapped IPv6
// address as plain IPv4), while the link exists.

import type { Server } from 'node:http';
import type { Allowance } from '../allowance.ts';
import { MAX_PACKET_BYTES } from '../transport.ts';
import {
  type ClientLink,
  LINK_IDLE,
  LINK_UNANSWERED,
  LINK_UNESTABLISHED,
  LinkServerEndpoint,
  type LinkServerOptions,
  type LinkServerStats,
  routeUpgrades,
  type ServerWebSocket,
} from './link-server.ts';
import { createTransportStats, SendPool } from './queue.ts';

export interface WebSocketServerOptions extends LinkServerOptions {
  /** URL path the WebSocket is upgraded on (default "/ws"). */
  path?: string;
  /** Most open sockets (default 256). */
  maxSockets?: number;
  /** Most open sockets from one IP address (default 16). */
  maxSocketsPerHost?: number;
}

export interface WebSocketServerStats extends LinkServerStats {
  socketsOpened: number;
  /** Upgrades refused because maxSockets were open, or maxSocketsPerHost from that host. */
  socketsRefused: number;
  socketsClosed: number;
  /** Sockets closed for a message over MAX_PACKET_BYTES (each also counted in droppedOversizeReceived). */
  closedOversize: number;
  /** Sockets closed for a text message or a protocol error. */
  closedBadMessage: number;
  /** Sockets closed because the engine never answered them within answerTimeoutMs. */
  closedUnanswered: number;
  /** Sockets closed after idleTimeoutMs of silence. */
  closedIdle: number;
  /** Sockets closed because the engine dropped them (drop()). */
  closedDropped: number;
}

/** Longest a socket the server closes may take over its closing handshake before it is cut, ms. */
const CLOSE_HANDSHAKE_MS = 2000;

/** One accepted WebSocket, as a client link; sends go through the endpoint's pooled buffers. */
class SocketLink implements ClientLink {
  linkOpenedMs = Number.NaN;
  lastReceivedMs = Number.NaN;
  answered = false;
  allowance: Allowance | null = null;
  overAllowance = 0;
  established = false;

  constructor(
    readonly address: string,
    readonly host: string,
    readonly ws: ServerWebSocket,
    private readonly pool: SendPool,
  ) {}

  writable(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  write(data: Uint8Array): boolean {
    const slot = this.pool.copy(data);
    this.ws.send(slot.bytes.subarray(0, data.length), slot.done);
    return true;
  }
}

/** The server side of the WebSocket transport; give it upgrades with attach() or routeUpgrades(). */
export class WebSocketServerEndpoint extends LinkServerEndpoint<SocketLink, WebSocketServerStats> {
  private readonly sendPool = new SendPool(this.stats);
  private closing: Promise<void> | null = null;
  private detach: (() => void) | null = null;
  /** Sockets the server is closing, until each reports closed. */
  private readonly closingSockets = new Map<ServerWebSocket, Promise<void>>();

  /** Throws a RangeError naming the bad option. */
  constructor(options: WebSocketServerOptions = {}) {
    super(
      {
        where: 'WebSocketServerEndpoint',
        prefix: 'ws',
        defaultPath: '/ws',
        maxLinksOption: 'maxSockets',
        maxLinks: options.maxSockets ?? 256,
        maxPerHostOption: 'maxSocketsPerHost',
        maxPerHost: options.maxSocketsPerHost ?? 16,
        maxPayload: MAX_PACKET_BYTES,
      },
      options,
      {
        ...createTransportStats(),
        socketsOpened: 0,
        socketsRefused: 0,
        socketsClosed: 0,
        closedOversize: 0,
        closedBadMessage: 0,
        closedUnanswered: 0,
        closedIdle: 0,
        closedDropped: 0,
        droppedRate: 0,
        closedFlood: 0,
        closedUnestablished: 0,
        closedEvicted: 0,
      },
    );
  }

  /** Open sockets. */
  get socketCount(): number {
    return this.links.size;
  }

  /** Takes this endpoint's upgrades from `server` (any other path is answered 404). */
  attach(server: Server): void {
    this.detach?.();
    this.detach = routeUpgrades(server, [this]);
  }

  /**
   * Refuses new sockets, closes every open one (going away) and resolves once all have closed,
   * those already closing too (a socket that does not finish its closing handshake within 2 s
   * is cut). Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.shut();
    this.detach?.();
    for (const link of this.links.values()) this.closeSocket(link.ws, 1001, 'server closing');
    this.closing = Promise.all(this.closingSockets.values()).then(() => this.closeServer());
    return this.closing;
  }

  protected accept(ws: ServerWebSocket, host: string): void {
    const link = new SocketLink(this.nextAddress(), host, ws, this.sendPool);
    link.linkOpenedMs = this.nowMs;
    this.links.set(link.address, link);
    this.stats.socketsOpened++;
    ws.on('message', (data, isBinary) => {
      if (!this.open || this.links.get(link.address) !== link) return;
      if (!isBinary || !Buffer.isBuffer(data)) {
        this.stats.closedBadMessage++;
        this.closeLink(link, 1003, 'binary datagrams only');
        return;
      }
      this.receive(link, data);
    });
    ws.on('error', (error: Error & { code?: string }) => {
      if (this.links.get(link.address) !== link) return;
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        this.stats.droppedOversizeReceived++;
        this.stats.closedOversize++;
        this.closeLink(link, 1009, 'message too big');
      } else {
        this.stats.closedBadMessage++;
        this.closeLink(link, 1002, 'protocol error');
      }
    });
    ws.on('close', () => {
      this.forget(link);
      this.stats.socketsClosed++;
    });
  }

  protected sweep(nowMs: number): void {
    for (const link of this.links.values()) {
      const expiry = this.expiry(link, nowMs);
      if (expiry === LINK_UNANSWERED) {
        this.stats.closedUnanswered++;
        this.closeLink(link, 1008, 'no valid request');
      } else if (expiry === LINK_IDLE) {
        this.stats.closedIdle++;
        this.closeLink(link, 1000, 'idle');
      } else if (expiry === LINK_UNESTABLISHED) {
        this.stats.closedUnestablished++;
        this.closeExpired(link);
      }
    }
  }

  protected countRefused(): void {
    this.stats.socketsRefused++;
  }

  protected closeExpired(link: SocketLink): void {
    this.closeLink(link, 1008, 'no connection');
  }

  /** Cut at once, with no closing handshake: what it sent is still being parsed on this thread. */
  protected closeFlooding(link: SocketLink): void {
    this.forget(link);
    link.ws.terminate();
  }

  /** The socket's close frame follows the datagrams already sent on it, so they are delivered first. */
  protected dismiss(link: SocketLink): void {
    this.stats.closedDropped++;
    this.closeLink(link, 1000, 'dropped');
  }

  /** Forgets a socket at once (its address stops receiving) and closes it. */
  private closeLink(link: SocketLink, code: number, reason: string): void {
    this.forget(link);
    this.closeSocket(link.ws, code, reason);
  }

  /**
   * Closes `ws` with `code` when it is open (cut otherwise, or when its closing handshake takes
   * over CLOSE_HANDSHAKE_MS); close() waits for it. Nothing for a socket closed or being closed.
   */
  private closeSocket(ws: ServerWebSocket, code: number, reason: string): void {
    if (ws.readyState === ws.CLOSED || this.closingSockets.has(ws)) return;
    const closed = new Promise<void>((resolve) => {
      const timer = setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS);
      ws.once('close', () => {
        clearTimeout(timer);
        this.closingSockets.delete(ws);
        resolve();
      });
    });
    this.closingSockets.set(ws, closed);
    if (ws.readyState === ws.OPEN) ws.close(code, reason);
    else ws.terminate();
  }
}
