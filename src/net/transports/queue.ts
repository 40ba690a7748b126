// The pieces every real transport (udp, websocket, webrtc) shares: its counters, the bounded queue received datagrams wait in until poll(), and pooled send buffers; browser-safe.

import { MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';

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
  /** Received datagrams (or messages) over MAX_PACKET_BYTES, dropped. */
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

/** Bytes a socket or channel may have waiting to go out before a send is dropped rather than buffered. */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;

/** Largest queue capacity: its slots, MAX_PACKET_BYTES each once used, would hold about 79 MB. */
export const MAX_QUEUE_CAPACITY = 65536;

/** Checks a queue capacity (an integer in 1..MAX_QUEUE_CAPACITY); the RangeError names `where` and the value. */
export function checkQueueCapacity(where: string, capacity: number): void {
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_QUEUE_CAPACITY) {
    throw new RangeError(
      `${where}: queueCapacity must be an integer in 1..${MAX_QUEUE_CAPACITY}, got ${capacity}`,
    );
  }
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

  /** Throws a RangeError naming queueCapacity if `capacity` is not an integer in 1..MAX_QUEUE_CAPACITY. */
  constructor(capacity: number, stats: TransportStats) {
    checkQueueCapacity('DatagramQueue', capacity);
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

/** One pooled send buffer: holds a datagram until the network reports it sent, then `done` returns it to its pool. */
export class SendSlot {
  readonly bytes = new Uint8Array(MAX_PACKET_BYTES);
  /** The send callback (dgram's and ws's both fit): an error is counted in sendErrors. */
  readonly done: (error?: Error | null) => void;

  constructor(pool: SendPool) {
    this.done = (error) => pool.release(this, error);
  }
}

/**
 * Send buffers for sockets whose send completes later (dgram, ws), so that send() can copy the
 * caller's bytes and return: a slot is reused once its send is done, and one is allocated only
 * when every slot is in flight.
 */
export class SendPool {
  private readonly free: SendSlot[] = [];
  private readonly stats: TransportStats;

  constructor(stats: TransportStats) {
    this.stats = stats;
  }

  /** A slot holding a copy of `data` (at most MAX_PACKET_BYTES); give its `done` to the socket's send. */
  copy(data: Uint8Array): SendSlot {
    const slot = this.free.pop() ?? new SendSlot(this);
    slot.bytes.set(data);
    return slot;
  }

  /** Takes a slot back; counts `error` in sendErrors. */
  release(slot: SendSlot, error?: Error | null): void {
    if (error) this.stats.sendErrors++;
    this.free.push(slot);
  }
}
