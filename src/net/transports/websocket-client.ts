// The WebSocket client endpoint (browser or Node), and the bounded datagram queue and counters every real transport shares.
//
// On the wire each datagram is one binary WebSocket message carrying exactly its bytes:
//   +---------+--------------------------------------------------+
//   | message | binary, 1..MAX_PACKET_BYTES bytes: one datagram  |
//   +---------+--------------------------------------------------+
// A text message, or a binary one over MAX_PACKET_BYTES, is not a datagram: it is dropped and
// counted (the server closes the socket that sent it).
//
// Browser-safe: no Node module is imported; the WebSocket constructor is the global one unless
// one is passed in (Node 20 has none: pass the `ws` package's WebSocket).

import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';

/** Counters of one real-transport endpoint; bytes are payload bytes. */
export interface TransportStats {
  /** Datagrams handed to the network by send(). */
  packetsSent: number;
  bytesSent: number;
  /** Datagrams handed to poll()'s handler. */
  packetsReceived: number;
  bytesReceived: number;
  /** Sends over MAX_PACKET_BYTES, dropped. */
  droppedOversize: number;
  /** Received datagrams over MAX_PACKET_BYTES (or not binary), dropped. */
  droppedOversizeReceived: number;
  /** Received datagrams dropped because the inbound queue was full. */
  droppedQueueFull: number;
  /** Sends to an address with no open connection, or before the connection is open, dropped. */
  droppedNoRoute: number;
  /** Sends the network refused or that failed (an error, or too much already buffered). */
  sendErrors: number;
}

/** Fresh zeroed counters. */
export function createTransportStats(): TransportStats {
  return {
    packetsSent: 0,
    bytesSent: 0,
    packetsReceived: 0,
    bytesReceived: 0,
    droppedOversize: 0,
    droppedOversizeReceived: 0,
    droppedQueueFull: 0,
    droppedNoRoute: 0,
    sendErrors: 0,
  };
}

/**
 * A bounded first-in first-out queue of received datagrams, drained by an endpoint's poll().
 * Slots hold MAX_PACKET_BYTES each and are allocated on first use, then reused: pushing copies
 * the bytes and allocates nothing once the queue has grown to the traffic. When full, a new
 * datagram is dropped and counted (those already queued keep their order).
 */
export class DatagramQueue {
  readonly capacity: number;
  private readonly slots: Uint8Array[] = [];
  private readonly lengths: Uint16Array;
  private readonly froms: string[];
  private head = 0;
  private count = 0;
  private readonly stats: TransportStats;

  /** Throws if `capacity` is not an integer in 1..65536. */
  constructor(capacity: number, stats: TransportStats) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 65536) {
      throw new RangeError(`DatagramQueue: capacity must be an integer in 1..65536, got ${capacity}`);
    }
    this.capacity = capacity;
    this.lengths = new Uint16Array(capacity);
    this.froms = new Array<string>(capacity).fill('');
    this.stats = stats;
  }

  /** Datagrams waiting. */
  get size(): number {
    return this.count;
  }

  /**
   * Copies one received datagram in. One over MAX_PACKET_BYTES is dropped and counted in
   * droppedOversizeReceived, one that finds the queue full in droppedQueueFull; returns whether
   * it was queued.
   */
  push(from: string, data: Uint8Array): boolean {
    if (data.length > MAX_PACKET_BYTES) {
      this.stats.droppedOversizeReceived++;
      return false;
    }
    if (this.count === this.capacity) {
      this.stats.droppedQueueFull++;
      return false;
    }
    let index = this.head + this.count;
    if (index >= this.capacity) index -= this.capacity;
    let slot = this.slots[index];
    if (slot === undefined) {
      slot = new Uint8Array(MAX_PACKET_BYTES);
      this.slots[index] = slot;
    }
    slot.set(data);
    this.lengths[index] = data.length;
    this.froms[index] = from;
    this.count++;
    return true;
  }

  /**
   * Hands `onPacket` every datagram queued when the call began, oldest first, and counts them as
   * received. The bytes are valid only during each call.
   */
  drain(onPacket: PacketHandler): void {
    let remaining = this.count;
    const stats = this.stats;
    while (remaining-- > 0 && this.count > 0) {
      const index = this.head;
      const length = this.lengths[index];
      const from = this.froms[index];
      stats.packetsReceived++;
      stats.bytesReceived += length;
      try {
        onPacket(from, this.slots[index].subarray(0, length));
      } finally {
        this.froms[index] = '';
        this.head = index + 1 === this.capacity ? 0 : index + 1;
        this.count--;
      }
    }
  }

  /** Drops everything queued (not counted: the endpoint is closing). */
  clear(): void {
    this.froms.fill('');
    this.head = 0;
    this.count = 0;
  }
}

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

/** Bytes a socket may have waiting to go out before a send is dropped rather than buffered. */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;

export interface WebSocketClientOptions {
  /** The server's WebSocket URL, e.g. "ws://127.0.0.1:4000/ws". */
  url: string;
  /** Constructor to use instead of the global WebSocket. */
  WebSocket?: WebSocketConstructor;
  /** Give up opening after this long (default 10 000). */
  connectTimeoutMs?: number;
  /** Received datagrams held between polls (default 1024). */
  queueCapacity?: number;
  /** Bytes waiting to go out above which a send is dropped (default DEFAULT_MAX_BUFFERED_BYTES). */
  maxBufferedBytes?: number;
  /** The address this endpoint gives the server (default "server"). */
  serverAddress?: string;
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

/**
 * A client endpoint over one WebSocket to a Backstep server. Its only peer is the server, at
 * `serverAddress`; sends to any other address are dropped and counted.
 */
export class WebSocketClientEndpoint implements DatagramEndpoint {
  readonly address = 'client';
  readonly serverAddress: string;
  readonly stats = createTransportStats();
  /** Messages that were not datagrams (text). */
  badMessages = 0;
  /** The close code the socket ended with (0 while open). */
  closeCode = 0;
  private readonly socket: ClientWebSocket;
  private readonly queue: DatagramQueue;
  private readonly maxBufferedBytes: number;
  private open = true;
  private closedPromise: Promise<void> | null = null;
  private resolveClosed: () => void = () => {};
  private socketClosed = false;

  private constructor(socket: ClientWebSocket, options: WebSocketClientOptions) {
    this.socket = socket;
    this.serverAddress = options.serverAddress ?? 'server';
    this.queue = new DatagramQueue(options.queueCapacity ?? 1024, this.stats);
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    socket.addEventListener('message', (event) => this.onMessage(event));
    socket.addEventListener('close', (event) => {
      this.socketClosed = true;
      this.closeCode = event.code;
      this.resolveClosed();
    });
  }

  /**
   * Opens a WebSocket to `options.url` and resolves with the endpoint once it is open; rejects
   * with an Error if it fails, closes or times out first, or naming a bad option.
   */
  static async connect(options: WebSocketClientOptions): Promise<WebSocketClientEndpoint> {
    const Ctor = options.WebSocket ?? globalWebSocket();
    const timeoutMs = options.connectTimeoutMs ?? 10_000;
    if (!(timeoutMs > 0)) {
      throw new RangeError(`WebSocketClientEndpoint: connectTimeoutMs must be positive, got ${timeoutMs}`);
    }
    const socket = new Ctor(options.url);
    socket.binaryType = 'arraybuffer';
    const endpoint = new WebSocketClientEndpoint(socket, options);
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        void endpoint.close();
        reject(new Error(`WebSocket ${options.url}: ${why}`));
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

  /** True until close() or until the server closes the socket. */
  get isOpen(): boolean {
    return this.open && !this.socketClosed;
  }

  /**
   * Sends one datagram to the server (the browser and `ws` copy the bytes). Dropped and counted
   * when over MAX_PACKET_BYTES, not to the server, when the socket is not open, or when more than
   * maxBufferedBytes are already waiting to go out.
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    if (data.length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    if (to !== this.serverAddress || this.socket.readyState !== SOCKET_OPEN) {
      this.stats.droppedNoRoute++;
      return;
    }
    if (this.socket.bufferedAmount > this.maxBufferedBytes) {
      this.stats.sendErrors++;
      return;
    }
    try {
      this.socket.send(data);
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

  /** Closes the socket; resolves once it is closed. Idempotent. */
  close(): Promise<void> {
    if (this.closedPromise !== null) return this.closedPromise;
    this.open = false;
    this.queue.clear();
    this.closedPromise = new Promise<void>((resolve) => {
      this.resolveClosed = resolve;
      if (this.socketClosed) resolve();
    });
    try {
      this.socket.close(1000, 'bye');
    } catch {
      this.socketClosed = true;
      this.resolveClosed();
    }
    return this.closedPromise;
  }

  private onMessage(event: SocketMessageEvent): void {
    if (!this.open) return;
    const bytes = messageBytes(event.data);
    if (bytes === null) {
      this.badMessages++;
      return;
    }
    this.queue.push(this.serverAddress, bytes);
  }
}
