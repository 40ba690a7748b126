// A single-producer single-consumer ring of datagrams in shared memory, between the thread that
// owns the sockets and a match worker: one copy of each datagram into a fixed slot, no message
// per packet, no allocation once running.
//
// Each slot (SLOT_BYTES) holds one record:
//   +-----------+------+---------------------------------------------------------------+
//   | kind      | 8    | RING_DATAGRAM, RING_BIND, RING_UNBIND or RING_DROP            |
//   | addrLen   | 8    | bytes of the address (ASCII), 1..MAX_RING_ADDRESS_BYTES       |
//   | length    | 16   | bytes of data, 0..MAX_PACKET_BYTES                            |
//   | matchId   | 32   | the match the record belongs to (0: none yet)                 |
//   | peer      | 32   | the address's number, never reused for another address        |
//   | nonce     | 32   | RING_BIND: the connection's client nonce                      |
//   | address   | var  | addrLen bytes                                                 |
//   | data      | var  | length bytes                                                  |
//   +-----------+------+---------------------------------------------------------------+
// The control array holds the producer's and the consumer's counters (Int32, wrapping); a slot
// is `counter & (slots - 1)`. The producer writes the slot, then publishes its counter with
// Atomics.store; the consumer reads the counter with Atomics.load, then the slot.

import { MAX_PACKET_BYTES } from '../net/transport.ts';

export const RING_DATAGRAM = 1;
/** The worker's match accepted the address (routing from now on by address). */
export const RING_BIND = 2;
/** The address's connection in that match ended. */
export const RING_UNBIND = 3;
/** The match is done with a connection-based link: close it. */
export const RING_DROP = 4;

export const MAX_RING_ADDRESS_BYTES = 255;
const HEADER_BYTES = 16;
/** Bytes per slot: a header, the longest address and the longest datagram, rounded up. */
export const SLOT_BYTES = 1536;
const TAIL = 0;
const HEAD = 1;

/** The shared memory of one ring: give both to the other thread (postMessage shares them). */
export interface RingBuffers {
  readonly slots: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
}

/** One record read from a ring (reused by every read: copy what you keep). */
export interface RingRecord {
  kind: number;
  matchId: number;
  peer: number;
  nonce: number;
  address: string;
  data: Uint8Array;
}

/** Shared memory for a ring of `slots` slots (a power of two, 2..65536). */
export function createRingBuffers(slots: number): RingBuffers {
  if (!Number.isInteger(slots) || slots < 2 || slots > 65536 || (slots & (slots - 1)) !== 0) {
    throw new RangeError(`ring: slots must be a power of two in 2..65536, got ${String(slots)}`);
  }
  return { slots: new SharedArrayBuffer(slots * SLOT_BYTES), control: new SharedArrayBuffer(8) };
}

/** One end of a ring: `write` on the producer's side, `read` on the consumer's. */
export class DatagramRing {
  /** Records a full ring refused (the producer's count). */
  full = 0;
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private readonly control: Int32Array;
  private readonly mask: number;
  private readonly slotCount: number;
  /** Address strings by peer number, so that a string is built once per address, not per record. */
  private readonly names = new Map<number, string>();
  private readonly record: RingRecord = {
    kind: 0,
    matchId: 0,
    peer: 0,
    nonce: 0,
    address: '',
    data: new Uint8Array(0),
  };

  constructor(buffers: RingBuffers) {
    this.bytes = new Uint8Array(buffers.slots);
    this.view = new DataView(buffers.slots);
    this.control = new Int32Array(buffers.control);
    this.slotCount = buffers.slots.byteLength / SLOT_BYTES;
    this.mask = this.slotCount - 1;
  }

  /** Records waiting. */
  get size(): number {
    return (Atomics.load(this.control, TAIL) - Atomics.load(this.control, HEAD)) | 0;
  }

  /**
   * Appends a record (producer only). False, counted in `full`, when the ring is full or the
   * address or data is too long.
   */
  write(
    kind: number,
    matchId: number,
    peer: number,
    nonce: number,
    address: string,
    data: Uint8Array | null,
  ): boolean {
    const tail = Atomics.load(this.control, TAIL);
    const length = data === null ? 0 : data.length;
    if (
      ((tail - Atomics.load(this.control, HEAD)) | 0) >= this.slotCount ||
      address.length > MAX_RING_ADDRESS_BYTES ||
      length > MAX_PACKET_BYTES
    ) {
      this.full++;
      return false;
    }
    const at = (tail & this.mask) * SLOT_BYTES;
    const bytes = this.bytes;
    const view = this.view;
    bytes[at] = kind;
    bytes[at + 1] = address.length;
    view.setUint16(at + 2, length, true);
    view.setUint32(at + 4, matchId >>> 0, true);
    view.setUint32(at + 8, peer >>> 0, true);
    view.setUint32(at + 12, nonce >>> 0, true);
    const a = at + HEADER_BYTES;
    for (let i = 0; i < address.length; i++) bytes[a + i] = address.charCodeAt(i) & 0x7f;
    if (data !== null) bytes.set(data, a + address.length);
    Atomics.store(this.control, TAIL, (tail + 1) | 0);
    return true;
  }

  /**
   * Hands `onRecord` every record published when the call began, oldest first (consumer only).
   * The record and its data are valid only during each call.
   */
  read(onRecord: (record: RingRecord) => void): void {
    let head = Atomics.load(this.control, HEAD);
    const tail = Atomics.load(this.control, TAIL);
    const r = this.record;
    const bytes = this.bytes;
    const view = this.view;
    while (head !== tail) {
      const at = (head & this.mask) * SLOT_BYTES;
      const addressLength = bytes[at + 1];
      const length = view.getUint16(at + 2, true);
      r.kind = bytes[at];
      r.matchId = view.getUint32(at + 4, true);
      r.peer = view.getUint32(at + 8, true);
      r.nonce = view.getUint32(at + 12, true);
      const a = at + HEADER_BYTES;
      r.address = this.name(r.peer, a, addressLength);
      r.data = bytes.subarray(a + addressLength, a + addressLength + length);
      head = (head + 1) | 0;
      try {
        onRecord(r);
      } finally {
        Atomics.store(this.control, HEAD, head);
      }
    }
  }

  private name(peer: number, at: number, length: number): string {
    let name = this.names.get(peer);
    if (name === undefined || name.length !== length) {
      name = String.fromCharCode(...this.bytes.subarray(at, at + length));
      if (this.names.size >= 65536) this.names.clear();
      this.names.set(peer, name);
    }
    return name;
  }
}
