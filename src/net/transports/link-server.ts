// The client-link server endpoint (Node only) that the WebSocket and WebRTC servers share: a
// bounded set of client links by address, taken from HTTP upgrades, feeding one datagram queue,
// sent to with the same checks, and timed out by the same rules; and the HTTP upgrade routing
// both use.

import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { Allowance } from '../allowance.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import {
  checkQueueCapacity,
  DatagramQueue,
  DEFAULT_MAX_BUFFERED_BYTES,
  type TransportStats,
} from './queue.ts';

/**
 * The part of an upgraded WebSocket (the `ws` package's) that the server endpoints use: declared
 * here so that Backstep's types do not depend on `ws`'s.
 */
export interface ServerWebSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  readonly OPEN: number;
  readonly CLOSED: number;
  readonly bufferedAmount: number;
  send(data: string | Uint8Array, done?: (error?: Error) => void): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  on(event: 'close', listener: () => void): this;
  once(event: 'close', listener: () => void): this;
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

/**
 * The host a remote socket address names, as bans and per-host limits key it: an IPv4-mapped
 * IPv6 address ("::ffff:203.0.113.9", what a dual-stack listener reports) as plain IPv4; an
 * unknown address as "".
 */
export function remoteHost(address: string | undefined): string {
  if (address === undefined) return '';
  if (address.startsWith('::ffff:') && address.includes('.', 7)) return address.slice(7);
  return address;
}

/**
 * What per-host limits count a remote host as: an IPv4 address itself; an IPv6 address by its /64
 * ("2001:db8:1:2::/64"), the block one subscriber is given (one host can take any address in
 * it); anything else as it is. Bans and hostOf keep the whole address.
 */
export function hostGroup(host: string): string {
  if (!host.includes(':')) return host;
  const zone = host.indexOf('%');
  const address = (zone < 0 ? host : host.slice(0, zone)).toLowerCase();
  const halves = address.split('::');
  if (halves.length > 2) return host;
  const head = halves[0] === '' ? [] : halves[0].split(':');
  const tail = halves.length === 1 || halves[1] === '' ? [] : halves[1].split(':');
  // A dotted IPv4 tail takes two groups.
  const groups = head.length + tail.length + (tail.length > 0 && tail[tail.length - 1].includes('.') ? 1 : 0);
  if (groups > 8 || (halves.length === 1 && groups !== 8)) return host;
  const full = [...head, ...new Array<string>(8 - groups).fill('0'), ...tail];
  const prefix = full.slice(0, 4).map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? g.replace(/^0+(?=.)/, '') : ''));
  if (prefix.includes('')) return host;
  return `${prefix.join(':')}::/64`;
}

/** How often poll() looks for links to time out, ms of engine time. */
export const SWEEP_INTERVAL_MS = 250;

/** One client's datagram link on a server endpoint with a socket per client (a WebSocket, or a WebRTC data channel). */
export interface ClientLink {
  /** "prefix:N", never reused. */
  readonly address: string;
  /** The remote IP address its WebSocket came from (see remoteHost). */
  readonly host: string;
  /** Engine time the link began carrying datagrams (NaN until the first poll after). */
  linkOpenedMs: number;
  /** Engine time of the newest datagram from it (NaN until one arrived, or the first sweep). */
  lastReceivedMs: number;
  /** The engine has sent it a datagram: it passed the engine's first check (a valid connection request). */
  answered: boolean;
  /** What it may still send (LinkServerOptions.maxDatagramsPerSecond; null until its first datagram). */
  allowance: Allowance | null;
  /** Datagrams it sent past its allowance (dropped): a second's worth closes it. */
  overAllowance: number;
  /** The engine took it as a connection (established()). */
  established: boolean;
  /** True while datagrams can go out on it. */
  writable(): boolean;
  /** Bytes waiting to go out on it. */
  bufferedAmount(): number;
  /** Sends one datagram, copying its bytes; false (or a throw) when the network refused it. */
  write(data: Uint8Array): boolean;
}

/** What LinkServerEndpoint.expiry() finds: the link may live, or why it must close. */
export const LINK_ALIVE = 0;
export const LINK_UNANSWERED = 1;
export const LINK_IDLE = 2;
export const LINK_UNESTABLISHED = 3;
export type LinkExpiry =
  | typeof LINK_ALIVE
  | typeof LINK_UNANSWERED
  | typeof LINK_IDLE
  | typeof LINK_UNESTABLISHED;

/** The options both socket-per-client server endpoints (WebSocket, WebRTC) take. */
export interface LinkServerOptions {
  /** URL path the WebSocket is upgraded on (default: the endpoint's). */
  path?: string;
  /** A link the engine has sent nothing to this long after it opened is closed (default 5000). */
  answerTimeoutMs?: number;
  /** A link silent this long is closed (default 30 000). */
  idleTimeoutMs?: number;
  /** Received datagrams held between polls (default 4096). */
  queueCapacity?: number;
  /** Bytes a link may have waiting to go out before a send to it is dropped (default 256 KB). */
  maxBufferedBytes?: number;
  /**
   * Datagrams one link may deliver per second of engine time, bursts up to a second's worth
   * (default 500: twice what the game server takes from a connection, maxPacketsPerSecond). The
   * rest are dropped and counted (droppedRate) before they take room in the queue every link
   * shares; a link that sends a second's worth past it is closed (closedFlood): one socket
   * cannot fill the queue and crowd out the others' datagrams.
   */
  maxDatagramsPerSecond?: number;
  /**
   * A link the engine has not taken as a connection (DatagramEndpoint.established) this long
   * after it opened is closed (default 10 000, a client's connectTimeoutMs); and when the links
   * fill their limit, a new one closes the oldest such link to make room. A link answered with a
   * challenge is not yet a connection: addresses that keep sending connect requests cannot hold
   * every link while real clients are refused.
   */
  establishTimeoutMs?: number;
}

/** What every socket-per-client endpoint counts, beyond TransportStats. */
export interface LinkServerStats extends TransportStats {
  /** Datagrams dropped because their link was past its maxDatagramsPerSecond. */
  droppedRate: number;
  /** Links closed for sending a second's worth of datagrams past maxDatagramsPerSecond. */
  closedFlood: number;
  /** Links closed because the engine did not take them as connections within establishTimeoutMs. */
  closedUnestablished: number;
  /** Links not yet connections closed (the oldest) to make room for a new one at the limit. */
  closedEvicted: number;
}

/** What a LinkServerEndpoint is, beyond its options. */
export interface LinkServerSetup {
  /** The endpoint's name, for errors. */
  where: string;
  /** Links get the addresses "prefix:1", "prefix:2", ...; the endpoint's own address is "prefix". */
  prefix: string;
  defaultPath: string;
  /** The endpoint's options that bound its links, in all and from one host (for errors), and their values. */
  maxLinksOption: string;
  maxLinks: number;
  maxPerHostOption: string;
  maxPerHost: number;
  /** Largest message the upgraded WebSockets accept: a bigger one is an error that closes its socket. */
  maxPayload: number;
}

/**
 * What the WebSocket and WebRTC server endpoints share: client links by address (at most
 * maxLinks, counting upgrades in progress and links still closing, and at most maxPerHost from
 * one remote IP address, counting its upgrades in progress), taken from WebSocket upgrades on one path, feeding one datagram queue, sent to with the same checks, timed out
 * by the same rules on engine time, and dropped by the engine the same way (hostOf, drop). A subclass accepts each upgraded WebSocket (making its link),
 * sweeps its links when poll() says, and closes them.
 */
export abstract class LinkServerEndpoint<L extends ClientLink, S extends LinkServerStats>
  implements DatagramEndpoint, UpgradeHandler
{
  readonly address: string;
  readonly path: string;
  readonly stats: S;
  /** The links, signalling or open, by address. */
  protected readonly links = new Map<string, L>();
  /** Engine time: the newest finite time given to poll() (NaN before the first). */
  protected nowMs = Number.NaN;
  /** False once shut() was called. */
  protected open = true;
  private readonly prefix: string;
  private readonly maxLinks: number;
  private readonly maxPerHost: number;
  /** Links and upgrades in progress by remote IP address (no entry: none). */
  private readonly perHost = new Map<string, number>();
  private readonly answerTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly maxBufferedBytes: number;
  private readonly maxDatagramsPerSecond: number;
  private readonly establishTimeoutMs: number;
  private readonly queue: DatagramQueue;
  private readonly wss: WebSocketServer;
  private upgrading = 0;
  private nextId = 1;
  private nextSweepMs = Number.NEGATIVE_INFINITY;

  /** Throws a RangeError naming the bad option. */
  protected constructor(setup: LinkServerSetup, options: LinkServerOptions, stats: S) {
    const where = setup.where;
    this.prefix = setup.prefix;
    this.address = setup.prefix;
    this.path = options.path ?? setup.defaultPath;
    if (!this.path.startsWith('/'))
      throw new RangeError(`${where}: path must start with "/", got ${this.path}`);
    this.maxLinks = setup.maxLinks;
    this.maxPerHost = setup.maxPerHost;
    this.answerTimeoutMs = options.answerTimeoutMs ?? 5000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.maxDatagramsPerSecond = options.maxDatagramsPerSecond ?? 500;
    this.establishTimeoutMs = options.establishTimeoutMs ?? 10_000;
    const queueCapacity = options.queueCapacity ?? 4096;
    checkCount(where, setup.maxLinksOption, this.maxLinks);
    checkCount(where, setup.maxPerHostOption, this.maxPerHost);
    checkMs(where, 'answerTimeoutMs', this.answerTimeoutMs);
    checkMs(where, 'idleTimeoutMs', this.idleTimeoutMs);
    checkCount(where, 'maxBufferedBytes', this.maxBufferedBytes);
    checkCount(where, 'maxDatagramsPerSecond', this.maxDatagramsPerSecond);
    checkMs(where, 'establishTimeoutMs', this.establishTimeoutMs);
    checkQueueCapacity(where, queueCapacity);
    this.stats = stats;
    this.queue = new DatagramQueue(queueCapacity, stats);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: setup.maxPayload,
      clientTracking: false,
      perMessageDeflate: false,
    });
  }

  /**
   * Takes an upgrade request on this endpoint's path: refused (and counted) with 503 when the
   * endpoint is closed or when its links, those still closing and the upgrades in progress
   * reach maxLinks, with 429 when the request's host already has maxPerHost; else upgraded and
   * accepted. False (untouched) for another path.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (requestPath(request) !== this.path) return false;
    if (this.open && this.links.size + this.closingCount() + this.upgrading >= this.maxLinks)
      this.evictOldest();
    if (!this.open || this.links.size + this.closingCount() + this.upgrading >= this.maxLinks) {
      this.countRefused();
      refuseUpgrade(socket, 503, 'Service Unavailable');
      return true;
    }
    const host = remoteHost(request.socket.remoteAddress);
    const fromHost = this.perHost.get(hostGroup(host)) ?? 0;
    if (fromHost >= this.maxPerHost) {
      this.countRefused();
      refuseUpgrade(socket, 429, 'Too Many Requests');
      return true;
    }
    this.perHost.set(hostGroup(host), fromHost + 1);
    this.upgrading++;
    let done = false;
    const finish = (accepted: boolean) => {
      if (done) return;
      done = true;
      this.upgrading--;
      if (!accepted) this.releaseHost(host);
    };
    socket.once('close', () => finish(false));
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      finish(this.open);
      if (this.open) this.accept(ws, host);
      else ws.terminate();
    });
    return true;
  }

  /**
   * Sends one datagram to the link at `to` (copying the bytes). Dropped and counted when over
   * MAX_PACKET_BYTES, when `to` is not an open link, or when the link already has more than
   * maxBufferedBytes waiting or refuses it; ignored after close(). A datagram sent marks the
   * link answered.
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    const length = data.length;
    if (length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    const link = this.links.get(to);
    if (link === undefined || !link.writable()) {
      this.stats.droppedNoRoute++;
      return;
    }
    try {
      if (link.bufferedAmount() > this.maxBufferedBytes || !link.write(data)) {
        this.stats.sendErrors++;
        return;
      }
    } catch {
      this.stats.sendErrors++;
      return;
    }
    link.answered = true;
    this.stats.packetsSent++;
    this.stats.bytesSent += length;
  }

  /**
   * Delivers every datagram received since the last poll, in arrival order, then closes links
   * past their timeouts (swept every SWEEP_INTERVAL_MS of `nowMs`; engine time never goes back).
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

  /** The engine took the link at `address` as a connection: it no longer times out or is evicted for want of one. */
  established(address: string): void {
    const link = this.links.get(address);
    if (link !== undefined) link.established = true;
  }

  /**
   * The network host behind the link at `address`: "prefix:IP", the remote address its
   * WebSocket came from; null when no link has that address (never had, or no longer has).
   */
  hostOf(address: string): string | null {
    const link = this.links.get(address);
    return link === undefined ? null : `${this.prefix}:${link.host}`;
  }

  /**
   * The engine is done with the link at `address`: it is forgotten at once (sends to it are
   * dropped, it no longer counts against its host or the link limit) and closed once what was
   * already sent to it has gone out (see each endpoint); counted in closedDropped. Nothing for
   * an address with no link, or after close().
   */
  drop(address: string): void {
    if (!this.open) return;
    const link = this.links.get(address);
    if (link !== undefined) this.dismiss(link);
  }

  /** Closes every link and resolves once all are closed (see each endpoint). Idempotent. */
  abstract close(): Promise<void>;

  /** Forgets `link` at once, counts it in closedDropped, and closes it after what was sent to it (drop()). */
  protected abstract dismiss(link: L): void;

  /** Makes a link of a WebSocket upgraded from `host` (only called while open). */
  protected abstract accept(ws: ServerWebSocket, host: string): void;

  /** Closes the links past their timeouts at `nowMs` (see expiry()). */
  protected abstract sweep(nowMs: number): void;

  /** Forgets and closes a link closed by expiry() or evicted for room (counted already). */
  protected abstract closeExpired(link: L): void;

  /** Forgets and closes a link that sent a second's worth of datagrams past its allowance (counted already). */
  protected abstract closeFlooding(link: L): void;

  /** Counts an upgrade refused for want of room. */
  protected abstract countRefused(): void;

  /** Links forgotten but still closing, which still take room (none by default). */
  protected closingCount(): number {
    return 0;
  }

  /** The address for a new link: "prefix:N", N never reused. */
  protected nextAddress(): string {
    return `${this.prefix}:${this.nextId++}`;
  }

  /**
   * Removes `link` (if it is still the one at its address): sends to it are dropped from now on,
   * and it no longer counts against its host.
   */
  protected forget(link: L): void {
    if (this.links.get(link.address) !== link) return;
    this.links.delete(link.address);
    this.releaseHost(link.host);
  }

  /**
   * Queues one datagram received on `link` (dropped and counted when oversize, past the link's
   * allowance, or when the queue is full) and notes the time.
   */
  protected receive(link: L, data: Uint8Array): void {
    link.lastReceivedMs = this.nowMs;
    link.allowance ??= new Allowance(this.maxDatagramsPerSecond);
    if (!link.allowance.take(this.nowMs)) {
      this.stats.droppedRate++;
      if (++link.overAllowance >= this.maxDatagramsPerSecond) {
        this.stats.closedFlood++;
        this.closeFlooding(link);
      }
      return;
    }
    this.queue.push(link.address, data);
  }

  /**
   * Whether `link` may live at `nowMs`: LINK_UNANSWERED when the engine has sent it nothing
   * within answerTimeoutMs of its opening, LINK_IDLE when it has been silent for idleTimeoutMs.
   * Times still unknown (NaN) are taken as `nowMs`.
   */
  protected expiry(link: L, nowMs: number): LinkExpiry {
    if (Number.isNaN(link.linkOpenedMs)) link.linkOpenedMs = nowMs;
    if (Number.isNaN(link.lastReceivedMs)) link.lastReceivedMs = link.linkOpenedMs;
    if (!link.answered && nowMs - link.linkOpenedMs > this.answerTimeoutMs) return LINK_UNANSWERED;
    if (!link.established && nowMs - link.linkOpenedMs > this.establishTimeoutMs) return LINK_UNESTABLISHED;
    if (nowMs - link.lastReceivedMs > this.idleTimeoutMs) return LINK_IDLE;
    return LINK_ALIVE;
  }

  /** Closes the oldest link the engine has not taken as a connection, if any (the links' map keeps opening order). */
  private evictOldest(): void {
    for (const link of this.links.values()) {
      if (link.established || !this.evictable(link)) continue;
      this.stats.closedEvicted++;
      this.closeExpired(link);
      return;
    }
  }

  /** Whether `link` may be evicted for room (true unless a subclass says; WebRTC's pending peers have their own limits). */
  protected evictable(_link: L): boolean {
    return true;
  }

  /** Refuses new links, stops sending and delivering, and discards what is queued: the first step of close(). */
  protected shut(): void {
    this.open = false;
    this.queue.clear();
  }

  private releaseHost(host: string): void {
    const group = hostGroup(host);
    const count = (this.perHost.get(group) ?? 0) - 1;
    if (count > 0) this.perHost.set(group, count);
    else this.perHost.delete(group);
  }

  /** Closes the WebSocket server (once the links' sockets are closed); resolves when done. */
  protected closeServer(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wss.close(() => resolve());
    });
  }
}
