// Reliable ordered messages in channel packets: wire section, sender's resend window, receiver's reorder window.
//
// Every data packet carries a reliable section right after its header (see channel.ts), then
// the unreliable payload. Layout, bits packed least significant first:
//
//   +------------------+--------+--------------------------------------------------------+
//   | count            | 1+     | messages in this packet, 0..64, exp-Golomb (0: 1 bit)  |
//   | per message:     |        |                                                        |
//   |   id             | 16     | first message of the packet: its 16-bit id             |
//   |   next           | 1      | later messages: 1 = id of the previous message + 1,    |
//   |   id             | 16     |   0 = the full 16-bit id follows                       |
//   |   length         | 8/16   | varuint, 1..maxReliableMessageBytes                    |
//   |   bytes          | 8*len  | the message                                            |
//   +------------------+--------+--------------------------------------------------------+
//
// The sender numbers messages with 16-bit ids and keeps each one, at most RELIABLE_WINDOW at a
// time, until a packet that carried it is acknowledged. A message goes into a packet (oldest
// first, within the packet's reliable budget) unless it was put in one less than a resend delay
// ago, so a fast packet rate does not repeat it in every packet. The receiver buffers messages
// that arrive early in a window of RELIABLE_WINDOW ids starting at the next one to deliver,
// ignores copies it already has, and delivers strictly in id order.

import { type BitStream, expGolombBits, serializeExpGolomb } from '../protocol/bitstream.ts';
import { seqAdd, seqDiff } from '../protocol/sequence.ts';
import { nextPowerOfTwo, SequenceBuffer } from '../sim/ring.ts';
import { MAX_PACKET_BYTES } from './transport.ts';

/** Messages a sender may have in flight (unacknowledged) and a receiver may hold out of order. */
export const RELIABLE_WINDOW = 256;
/** Most messages one packet carries. */
export const RELIABLE_MAX_PER_PACKET = 64;
/**
 * Bits of the count that opens every reliable section, an order-0 exponential-Golomb code: 1 for
 * an empty section (most packets), 3 for 1 or 2 messages, 13 at most (64).
 */
export function reliableCountBits(count: number): number {
  return expGolombBits(count);
}

/** The reliable messages of one packet, flattened into preallocated arrays (read or written in place). */
export class ReliableSection {
  count = 0;
  readonly ids = new Uint16Array(RELIABLE_MAX_PER_PACKET);
  readonly lengths = new Uint16Array(RELIABLE_MAX_PER_PACKET);
  /** Where each message starts in `bytes`. */
  readonly offsets = new Uint16Array(RELIABLE_MAX_PER_PACKET);
  /** The messages' bytes, back to back. */
  readonly bytes = new Uint8Array(MAX_PACKET_BYTES);

  /** Bytes of `bytes` in use. */
  get byteLength(): number {
    return this.count === 0 ? 0 : this.offsets[this.count - 1] + this.lengths[this.count - 1];
  }

  clear(): void {
    this.count = 0;
  }

  /**
   * Appends message `id` (the first `length` bytes of `data`). Returns false, changing nothing,
   * when the section already holds RELIABLE_MAX_PER_PACKET messages or the bytes do not fit.
   */
  add(id: number, data: Uint8Array, length: number): boolean {
    const offset = this.byteLength;
    if (this.count >= RELIABLE_MAX_PER_PACKET || offset + length > this.bytes.length) return false;
    const i = this.count++;
    this.ids[i] = id;
    this.lengths[i] = length;
    this.offsets[i] = offset;
    for (let k = 0; k < length; k++) this.bytes[offset + k] = data[k];
    return true;
  }
}

/**
 * Bits one message costs in a reliable section: its id (16 bits for the first message of the
 * packet, 1 when it follows the previous message's id, else 17), its varuint length and bytes.
 */
export function reliableMessageBits(length: number, first: boolean, consecutive: boolean): number {
  const idBits = first ? 16 : consecutive ? 1 : 17;
  return idBits + (length < 128 ? 8 : 16) + length * 8;
}

/**
 * Writes, reads or measures a reliable section. Reading fails (`s.ok` false) on a count over
 * RELIABLE_MAX_PER_PACKET or a count code longer than any up to it ('malformed'), a length outside [1, maxMessageBytes], or bytes past the end; it
 * never throws. Writing expects lengths within [1, maxMessageBytes].
 */
export function serializeReliableSection(
  s: BitStream,
  section: ReliableSection,
  maxMessageBytes: number,
): boolean {
  const count = serializeExpGolomb(s, section.count, RELIABLE_MAX_PER_PACKET);
  if (s.isReading) section.count = 0;
  let previous = 0;
  let offset = 0;
  for (let i = 0; i < count && s.ok; i++) {
    let id = section.ids[i];
    if (i === 0) {
      id = s.uint(id, 16);
    } else {
      const next = seqAdd(previous, 1);
      id = s.bool(id === next) ? next : s.uint(id, 16);
    }
    const length = s.varuint(section.lengths[i], maxMessageBytes);
    if (length < 1) return s.fail('empty reliable message');
    if (s.isReading) {
      if (offset + length > section.bytes.length) return s.fail('reliable section too long');
      for (let k = 0; k < length; k++) section.bytes[offset + k] = s.uint(0, 8);
      if (!s.ok) return false;
      section.ids[i] = id;
      section.lengths[i] = length;
      section.offsets[i] = offset;
      section.count = i + 1;
    } else {
      const start = section.offsets[i];
      for (let k = 0; k < length; k++) s.uint(section.bytes[start + k], 8);
    }
    offset += length;
    previous = id;
  }
  return s.ok;
}

interface OutgoingMessage {
  data: Uint8Array;
  length: number;
  lastSentMs: number;
  acked: boolean;
}

/** The sending half: queues messages, picks which go into each packet, and retires acknowledged ones. */
export class ReliableSender {
  /** Messages accepted by `queue`. */
  queued = 0;
  /** Copies of messages put into packets (first sends and resends). */
  sent = 0;
  private readonly messages = new SequenceBuffer<OutgoingMessage>(RELIABLE_WINDOW, () => ({
    data: new Uint8Array(0),
    length: 0,
    lastSentMs: Number.NEGATIVE_INFINITY,
    acked: false,
  }));
  /** Oldest unacknowledged id. */
  private oldest = 0;
  /** Id the next queued message gets. */
  private nextId = 0;

  /** Messages queued and not yet acknowledged. */
  get pending(): number {
    return seqDiff(this.nextId, this.oldest);
  }

  /**
   * Copies `message` into the send window under the next id. Returns false, queuing nothing,
   * when RELIABLE_WINDOW messages are already unacknowledged. The caller checks the length.
   * Allocates only when a slot meets a longer message than it held before.
   */
  queue(message: Uint8Array): boolean {
    if (this.pending >= RELIABLE_WINDOW) return false;
    const length = message.length;
    const m = this.messages.insert(this.nextId);
    if (m.data.length < length) m.data = new Uint8Array(nextPowerOfTwo(length));
    m.data.set(message);
    m.length = length;
    m.lastSentMs = Number.NEGATIVE_INFINITY;
    m.acked = false;
    this.nextId = seqAdd(this.nextId, 1);
    this.queued++;
    return true;
  }

  /**
   * Fills `section` with the messages to send now: oldest first, each unacknowledged one that
   * was not put in a packet in the last `resendDelayMs`, while the section stays within
   * `budgetBits` (count field included). The first message may exceed the budget up to
   * `maxBits`, so a message larger than the budget still goes out alone. Marks the chosen
   * messages sent at `nowMs` and returns the section's size in bits.
   */
  fill(
    section: ReliableSection,
    nowMs: number,
    resendDelayMs: number,
    budgetBits: number,
    maxBits: number,
  ): number {
    section.clear();
    let used = reliableCountBits(0);
    let previous = -1;
    const pending = this.pending;
    for (let k = 0; k < pending && section.count < RELIABLE_MAX_PER_PACKET; k++) {
      const id = seqAdd(this.oldest, k);
      const m = this.messages.get(id);
      if (m === undefined || m.acked || nowMs - m.lastSentMs < resendDelayMs) continue;
      const first = section.count === 0;
      const bits =
        reliableMessageBits(m.length, first, previous === seqAdd(id, -1)) +
        reliableCountBits(section.count + 1) -
        reliableCountBits(section.count);
      if (used + bits > (first ? maxBits : budgetBits)) continue;
      section.add(id, m.data, m.length);
      m.lastSentMs = nowMs;
      used += bits;
      previous = id;
      this.sent++;
    }
    return used;
  }

  /**
   * A packet carrying these message ids (`count` of them from `ids[from]`, the index masked by
   * `mask` when the ids sit in a ring) was acknowledged: retires them.
   */
  acknowledge(ids: Uint16Array, count: number, from = 0, mask = -1): void {
    for (let i = 0; i < count; i++) {
      const m = this.messages.get(ids[(from + i) & mask]);
      if (m !== undefined) m.acked = true;
    }
    while (this.oldest !== this.nextId) {
      const m = this.messages.get(this.oldest);
      if (m !== undefined && !m.acked) break;
      this.messages.remove(this.oldest);
      this.oldest = seqAdd(this.oldest, 1);
    }
  }
}

/** The receiving half: buffers messages that arrive early and hands them out in id order, once each. */
export class ReliableReceiver {
  /** Messages handed to the application. */
  delivered = 0;
  /** Copies ignored because the message was already delivered or buffered. */
  duplicates = 0;
  private readonly buffered = new SequenceBuffer<{ message: Uint8Array | null }>(RELIABLE_WINDOW, () => ({
    message: null,
  }));
  /** Id of the next message to deliver. */
  private nextId = 0;

  /**
   * True when every message of `section` can be taken: each id is either one already delivered
   * (a copy, to ignore) or inside the window of RELIABLE_WINDOW ids from the next to deliver.
   * A packet with a message beyond the window must not be accepted (nor acknowledged): the
   * sender will send the message again once the application has drained the window.
   */
  fits(section: ReliableSection): boolean {
    for (let i = 0; i < section.count; i++) {
      if (seqDiff(section.ids[i], this.nextId) >= RELIABLE_WINDOW) return false;
    }
    return true;
  }

  /**
   * Takes the messages of a section that `fits`: stores each new one (one allocation of its
   * length, bounded by the section) and counts copies of ones already delivered or buffered.
   */
  accept(section: ReliableSection): void {
    for (let i = 0; i < section.count; i++) {
      const id = section.ids[i];
      const ahead = seqDiff(id, this.nextId);
      if (ahead < 0 || ahead >= RELIABLE_WINDOW || this.buffered.has(id)) {
        this.duplicates++;
        continue;
      }
      const start = section.offsets[i];
      this.buffered.insert(id).message = section.bytes.slice(start, start + section.lengths[i]);
    }
  }

  /** The next message in order, exactly once, or null if it has not arrived. The caller owns it. */
  next(): Uint8Array | null {
    const slot = this.buffered.get(this.nextId);
    if (slot === undefined || slot.message === null) return null;
    const message = slot.message;
    slot.message = null;
    this.buffered.remove(this.nextId);
    this.nextId = seqAdd(this.nextId, 1);
    this.delivered++;
    return message;
  }
}
