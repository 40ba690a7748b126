// The message-pipe client endpoint (browser-safe) that the WebSocket and WebRTC clients share:
// one peer (the server), one pipe carrying one datagram per binary message, the same send
// checks, inbound queue and counters.

import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import {
  checkQueueCapacity,
  createTransportStats,
  DatagramQueue,
  DEFAULT_MAX_BUFFERED_BYTES,
} from './queue.ts';

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
