// The WebSocket client endpoint (browser or Node), and the message-pipe client endpoint it shares with the WebRTC client.
//
// On the wire each datagram is one binary WebSocket message carrying exactly its bytes:
//   +---------+--------------------------------------------------+
//   | message | binary, 1..MAX_PACKET_BYTES bytes: one datagram  |
//   +---------+--------------------------------------------------+
// A text message, or a binary one over MAX_PACKET_BYTES, is not a datagram: it is dropped and
// counted (the server closes the socket that sent it). The WebRTC client's data channel carries
// datagrams the same way, so both clients are a PipeClientEndpoint: one peer (the server), one
// pipe, the same send checks, inbound queue and counters.
//
// Browser-safe: no Node module is imported; the WebSocket constructor is the global one unless
// one is passed in (Node 20 has none: pass the `ws` package's WebSocket).

import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import {
  checkQueueCapacity,
  createTransportStats,
  DatagramQueue,
  DEFAULT_MAX_BUFFERED_BYTES,
} from './queue.ts';

/** What a received message event carries: an ArrayBuffer for binary, a string for text. */
export interface SocketMessageEvent {
  readonly data: unknown;
}

/** What a close event carries. */
export interface SocketCloseEvent {
  readonly code: number;
}

/** The part of the WebSocket API this endpoint uses: the browser's and the `ws` package's both fit. */
export interface ClientWebSocket {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: (event: unknown) => void): void;
  addEventListener(type: 'message', listener: (event: SocketMessageEvent) => void): void;
  addEventListener(type: 'close', listener: (event: SocketCloseEvent) => void): void;
  addEventListener(type: 'error', listener: (event: unknown) => void): void;
}

/** A WebSocket constructor: the global one in a browser, `ws`'s WebSocket in Node. */
export type WebSocketConstructor = new (url: string) => ClientWebSocket;

/** The WebSocket readyState of an open socket. */
export const SOCKET_OPEN = 1;

/** Longest a client's close() waits for its socket or channel to report closed, ms. */
export const CLOSE_WAIT_MS = 2000;

/** Options both client endpoints (WebSocket, WebRTC) take. */
export interface PipeClientOptions {
  /** Give up connecting after this long (default 10 000). */
  connectTimeoutMs?: number;
  /** Received datagrams held between polls (default 1024). */
  queueCapacity?: number;
  /** Bytes waiting to go out above which a send is dropped (default DEFAULT_MAX_BUFFERED_BYTES). */
  maxBufferedBytes?: number;
  /** The address this endpoint gives the server (default "server"). */
  serverAddress?: string;
}

/** PipeClientOptions with their defaults, checked. */
export interface PipeClientSettings {
  connectTimeoutMs: number;
  queueCapacity: number;
  maxBufferedBytes: number;
  serverAddress: string;
}

/**
 * Fills in the defaults of `options` and checks them before anything is opened; throws a
 * RangeError naming `where` and the bad option.
 */
export function pipeClientSettings(where: string, options: PipeClientOptions): PipeClientSettings {
  const settings: PipeClientSettings = {
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    queueCapacity: options.queueCapacity ?? 1024,
    maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    serverAddress: options.serverAddress ?? 'server',
  };
  if (!(settings.connectTimeoutMs > 0) || !Number.isFinite(settings.connectTimeoutMs)) {
    throw new RangeError(`${where}: connectTimeoutMs must be positive, got ${settings.connectTimeoutMs}`);
  }
  checkQueueCapacity(where, settings.queueCapacity);
  if (!Number.isInteger(settings.maxBufferedBytes) || settings.maxBufferedBytes < 1) {
    throw new RangeError(
      `${where}: maxBufferedBytes must be a positive integer, got ${settings.maxBufferedBytes}`,
    );
  }
  return settings;
}

export interface WebSocketClientOptions extends PipeClientOptions {
  /** The server's WebSocket URL, e.g. "ws://127.0.0.1:4000/ws". */
  url: string;
  /** Constructor to use instead of the global WebSocket. */
  WebSocket?: WebSocketConstructor;
}

/** The global WebSocket constructor, or an Error naming what is missing. */
export function globalWebSocket(): WebSocketConstructor {
  const ctor = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof ctor !== 'function') {
    throw new Error('WebSocket: no global WebSocket here; pass options.WebSocket (in Node: the ws package)');
  }
  return ctor;
}

/** Reads a message event's data as bytes: ArrayBuffer or a typed array view; null for anything else. */
export function messageBytes(data: unknown): Uint8Array | null {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return null;
}

/** What a client endpoint sends its datagrams through: the browser's WebSocket and RTCDataChannel both fit. */
export interface MessagePipe {
  readonly bufferedAmount: number;
  send(data: Uint8Array<ArrayBuffer>): void;
}

/**
 * A client endpoint whose only peer is the server, at `serverAddress`, over one message pipe (a
 * WebSocket or a data channel) that carries one datagram per binary message. Sends to any other
 * address are dropped and counted; received messages wait in a bounded queue until poll().
 */
export abstract class PipeClientEndpoint implements DatagramEndpoint {
  readonly address = 'client';
  readonly serverAddress: string;
  readonly stats = createTransportStats();
  /** Messages that were not datagrams (text), dropped. */
  badMessages = 0;
  /** False once close() has begun. */
  protected open = true;
  private readonly queue: DatagramQueue;
  private readonly maxBufferedBytes: number;

  protected constructor(settings: PipeClientSettings) {
    this.serverAddress = settings.serverAddress;
    this.queue = new DatagramQueue(settings.queueCapacity, this.stats);
    this.maxBufferedBytes = settings.maxBufferedBytes;
  }

  /** True until close() or until the pipe closes. */
  abstract get isOpen(): boolean;

  /** Closes the pipe and whatever carries it; resolves once they are closed. Idempotent. */
  abstract close(): Promise<void>;

  /** The pipe, when it is open; null otherwise. */
  protected abstract openPipe(): MessagePipe | null;

  /**
   * Sends one datagram to the server (the pipe copies the bytes). Dropped and counted when over
   * MAX_PACKET_BYTES, not to the server, when the pipe is not open, or when more than
   * maxBufferedBytes are already waiting to go out; ignored after close().
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    if (data.length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    const pipe = to === this.serverAddress ? this.openPipe() : null;
    if (pipe === null) {
      this.stats.droppedNoRoute++;
      return;
    }
    if (pipe.bufferedAmount > this.maxBufferedBytes) {
      this.stats.sendErrors++;
      return;
    }
    try {
      // The engine's buffers are plain ArrayBuffers, never shared.
      pipe.send(data as Uint8Array<ArrayBuffer>);
    } catch {
      this.stats.sendErrors++;
      return;
    }
    this.stats.packetsSent++;
    this.stats.bytesSent += data.length;
  }

  /** Delivers every datagram received since the last poll, in arrival order. */
  poll(_nowMs: number, onPacket: PacketHandler): void {
    if (this.open) this.queue.drain(onPacket);
  }

  /**
   * Takes one received message's data: binary is queued as a datagram from the server (dropped
   * and counted when over MAX_PACKET_BYTES or the queue is full), anything else counted in
   * badMessages; ignored after close().
   */
  protected receive(data: unknown): void {
    if (!this.open) return;
    const bytes = messageBytes(data);
    if (bytes === null) this.badMessages++;
    else this.queue.push(this.serverAddress, bytes);
  }

  /** Stops sending and delivering, and discards what is queued: the first step of close(). */
  protected shut(): void {
    this.open = false;
    this.queue.clear();
  }
}

/** A client endpoint over one WebSocket to a Backstep server. */
export class WebSocketClientEndpoint extends PipeClientEndpoint {
  /** The close code the socket ended with (0 while open). */
  closeCode = 0;
  private readonly socket: ClientWebSocket;
  private closedPromise: Promise<void> | null = null;
  private resolveClosed: () => void = () => {};
  private socketClosed = false;

  private constructor(socket: ClientWebSocket, settings: PipeClientSettings) {
    super(settings);
    this.socket = socket;
    socket.addEventListener('message', (event) => this.receive(event.data));
    socket.addEventListener('close', (event) => {
      this.socketClosed = true;
      this.closeCode = event.code;
      this.resolveClosed();
    });
  }

  /**
   * Opens a WebSocket to `options.url` and resolves with the endpoint once it is open; rejects
   * with an Error, once the socket is closed, if it fails, closes or times out first; or naming a
   * bad option, before opening anything.
   */
  static async connect(options: WebSocketClientOptions): Promise<WebSocketClientEndpoint> {
    const settings = pipeClientSettings('WebSocketClientEndpoint', options);
    const Ctor = options.WebSocket ?? globalWebSocket();
    const timeoutMs = settings.connectTimeoutMs;
    const socket = new Ctor(options.url);
    socket.binaryType = 'arraybuffer';
    const endpoint = new WebSocketClientEndpoint(socket, settings);
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const error = new Error(`WebSocket ${options.url}: ${why}`);
        void endpoint.close().then(() => reject(error));
      };
      const timer = setTimeout(() => fail(`not open after ${timeoutMs} ms`), timeoutMs);
      socket.addEventListener('open', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(endpoint);
      });
      socket.addEventListener('error', () => fail('connection failed'));
      socket.addEventListener('close', (event) => fail(`closed before opening (code ${event.code})`));
    });
  }

  get isOpen(): boolean {
    return this.open && !this.socketClosed;
  }

  /**
   * Closes the socket; resolves once it is closed (or CLOSE_WAIT_MS passed without the socket
   * saying so). Idempotent.
   */
  close(): Promise<void> {
    if (this.closedPromise !== null) return this.closedPromise;
    this.shut();
    this.closedPromise = new Promise<void>((resolve) => {
      if (this.socketClosed) {
        resolve();
        return;
      }
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      this.resolveClosed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    try {
      this.socket.close(1000, 'bye');
    } catch {
      this.socketClosed = true;
      this.resolveClosed();
    }
    return this.closedPromise;
  }

  protected openPipe(): MessagePipe | null {
    return this.socket.readyState === SOCKET_OPEN ? this.socket : null;
  }
}
