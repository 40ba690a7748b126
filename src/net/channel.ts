// Packet channel: one end of a connection: sequence, acks, RTT, loss, reliable messages, and
// (with packet keys, as every connection has) authentication.
//
// A sealed packet (the channel has packet keys: every connection's channel) has a compact header
// and no checksum: its Poly1305 tag authenticates it and detects any corruption. Bytes in order,
// each field little-endian:
//
//   +---------+------------+---------+-------------------------------------------------------+
//   | bytes   | field      | bits    |                                                       |
//   +---------+------------+---------+-------------------------------------------------------+
//   | 0       | prefix     | 8       | bits 0-2 type: Data (0) or Disconnect (6);            |
//   |         |            |         | bit 3 sequence form: 0 long (16 bits), 1 short (8);   |
//   |         |            |         | bits 4-5 ack form: 0 none, 1 short (8), 2 long (16);  |
//   |         |            |         | bits 6-7 ack bits bytes: 0, 1, 2 or 4 (code 0-3)      |
//   | 1-2     | sequence   | 8 or 16 | this packet's number (its low 8 bits when short)      |
//   |         | ack        | 0/8/16  | newest sequence received from the peer                |
//   |         | ack bits   | 0-32    | bit i set: sequence ack-1-i was received too; the     |
//   |         |            |         | bytes left out are all ones                           |
//   | 2-9..   | reliable   | 1+      | sealed: count, then the reliable messages (reliable.ts) |
//   |         | payload    | rest    | sealed: the caller's unreliable data                  |
//   | end-16  | tag        | 128     | the Poly1305 tag                                      |
//   +---------+------------+---------+-------------------------------------------------------+
//
// Short forms are read near what the receiver holds, within [-64, +191] of it: a short sequence
// near the newest sequence it took, a short ack near the newest ack it took. The sender uses one
// only when it knows that reference is close enough: a short sequence when the packet is at most
// 191 after the newest of its packets the peer acknowledged (the peer's newest is at least that);
// a short ack when the ack is at most 191 after an ack value the peer is known to have taken (one
// carried by a packet the peer acknowledged). A short form misread (a packet reordered by more
// than 64) cannot pass: the nonce is the extended sequence and the additional data holds the
// header's full values (type and flags, 16-bit sequence, 16-bit ack or 0xFFFF, 32 ack bits), so
// the tag fails and the packet is dropped ('forged') having moved nothing.
//
// Body: the bytes after the header up to the tag are encrypted with ChaCha20-Poly1305 under the
// sender's direction key, the nonce being the packet's 64-bit sequence number (the 16-bit one
// extended by the receiver from the newest it took). A Disconnect carries one sealed byte, the
// reason. A packet whose tag does not verify is dropped ('forged') before it can move anything:
// no window, ack, RTT or message.
//
// An unsealed packet (a channel without keys: a building block for tests and tools) keeps the
// fixed 13-byte header with a CRC-32 and only long forms (nothing else would catch a misread):
//
//   +-------+------------+------+----------------------------------------------------------+
//   | byte  | field      | bits |                                                          |
//   +-------+------------+------+----------------------------------------------------------+
//   | 0     | type       | 8    | PacketType.Data (0)                                      |
//   | 1-4   | checksum   | 32   | CRC-32 of protocolId (4 bytes, little-endian), byte 0    |
//   |       |            |      | and bytes 5..end                                         |
//   | 5-6   | sequence   | 16   | this packet's number, +1 per packet, wrapping            |
//   | 7-8   | ack        | 16   | newest sequence received from the peer (0xFFFF: none)    |
//   | 9-12  | ack bits   | 32   | bit i set: sequence ack-1-i was received too             |
//   | 13-   | reliable   | 1+   | count, then the reliable messages (layout: reliable.ts)  |
//   |       | payload    | rest | the caller's unreliable data, up to MAX_PACKET_BYTES     |
//   +-------+------------+------+----------------------------------------------------------+
//
// Lifecycle packets (handshake.ts) keep their CRC-32 too: they are not sealed.
//
// Each acknowledgement rides in the next 33 packets the peer sends, so a lost packet loses no
// ack. A packet's first acknowledgement gives an RTT sample (RFC 6298 smoothing) and fires
// `onAck` once. The receiver takes each sequence once and only within the last 33 (newer
// ones move the window: anything up to maxSequenceJump ahead).

import { BitStream } from '../protocol/bitstream.ts';
import { seqAdd, seqDiff, seqGreaterThan } from '../protocol/sequence.ts';
import { SequenceRecords } from '../sim/ring.ts';
import { crc32 } from './crc32.ts';
import { NONCE_BYTES, PACKET_TAG_BYTES, type PacketKeys, ViewCache, writeNonce } from './packet-crypto.ts';
import { ReliableReceiver, ReliableSection, ReliableSender, serializeReliableSection } from './reliable.ts';
import { MAX_PACKET_BYTES } from './transport.ts';

/** The first byte of every Backstep packet. The channel handles Data; 1..7 belong to the connection lifecycle. */
export const PacketType = {
  /** Connected traffic: header, reliable messages, payload. An empty one is a keepalive. */
  Data: 0,
  ConnectRequest: 1,
  Challenge: 2,
  ChallengeResponse: 3,
  Accepted: 4,
  Refused: 5,
  Disconnect: 6,
  /** The server's Disconnect proven by the disconnect token (handshake.ts), for a server that cannot seal. */
  Reserved: 7,
} as const;
export type PacketTypeValue = (typeof PacketType)[keyof typeof PacketType];

/** The protocol id both ends use unless configured otherwise ("BSTP"): it salts every checksum. */
export const DEFAULT_PROTOCOL_ID = 0x42535450;
/** The protocol version both ends use unless configured otherwise: another version is refused. */
export const DEFAULT_PROTOCOL_VERSION = 5;

/** Bytes of the fixed header: type, checksum, sequence, ack, ack bits. */
export const PACKET_HEADER_BYTES = 13;
/** The shortest valid data packet: the header and the reliable count. */
export const MIN_PACKET_BYTES = PACKET_HEADER_BYTES + 1;
/** Byte offset of the 32-bit checksum. */
export const PACKET_CHECKSUM_OFFSET = 1;
/** Older packets acknowledged in each header besides the newest one. */
export const ACK_BITS = 32;
/** The largest `maxReliableMessageBytes`: one such message with its id and length fills a packet. */
export const RELIABLE_MESSAGE_BYTES_LIMIT = MAX_PACKET_BYTES - MIN_PACKET_BYTES - 4;

/** Why a packet (or, for 'payload overflow', an outgoing payload) was dropped. */
export type DropReason =
  | 'truncated'
  | 'oversized'
  | 'checksum'
  | 'bad type'
  | 'duplicate'
  | 'stale'
  | 'too far ahead'
  | 'forged'
  | 'bad ack'
  | 'malformed'
  | 'reliable window'
  | 'payload overflow';

export const DROP_REASONS: readonly DropReason[] = [
  'truncated',
  'oversized',
  'checksum',
  'bad type',
  'duplicate',
  'stale',
  'too far ahead',
  'forged',
  'bad ack',
  'malformed',
  'reliable window',
  'payload overflow',
];

export interface PacketChannelConfig {
  /** 32-bit id salted into every checksum: builds with different ids never accept each other's packets. */
  protocolId: number;
  /** `update` sends an empty packet when nothing was sent for this long. */
  keepaliveIntervalMs: number;
  /** Largest reliable message, 1..RELIABLE_MESSAGE_BYTES_LIMIT. Both ends must agree. */
  maxReliableMessageBytes: number;
  /** Bytes of reliable messages per packet (a single larger message may still go alone). */
  reliableBudgetBytes: number;
  /** A message is put in a packet again only after max(1.1 * RTT, this). */
  reliableResendMinMs: number;
  /** Packets in each loss estimate's sliding window: a power of two, 32..16384. */
  lossWindowPackets: number;
  /**
   * A packet more than this many sequence numbers ahead of the newest received is dropped
   * ('too far ahead') and moves no window: more than a peer loses in a row before it times out,
   * far less than the half of the 16-bit space that would make "ahead" ambiguous.
   */
  maxSequenceJump: number;
}

export const DEFAULT_CHANNEL_CONFIG: Readonly<Omit<PacketChannelConfig, 'protocolId'>> = {
  keepaliveIntervalMs: 100,
  maxReliableMessageBytes: 1024,
  reliableBudgetBytes: 600,
  reliableResendMinMs: 30,
  lossWindowPackets: 256,
  maxSequenceJump: 1024,
};

/** Counters and estimates of one channel, plain numbers (read them, do not write them). */
export interface ChannelStats {
  packetsSent: number;
  /** Packets accepted by `receive`. */
  packetsReceived: number;
  /** Sent packets the peer acknowledged (each counted once). */
  packetsAcked: number;
  /** Bytes sent and accepted, headers included. */
  bytesSent: number;
  bytesReceived: number;
  /**
   * Smoothed round-trip time and its variance (RFC 6298); 0 until the first sample. Sampled only
   * from packets whose predecessor had arrived (see `receive`): a loss burst or reordering on the
   * return path does not read as a longer round trip.
   */
  rttMs: number;
  rttVarianceMs: number;
  /**
   * Smoothed time from sending a packet to its first acknowledgement, and its variance, every
   * packet counted: unlike rttMs, which samples only in-order acknowledgements of the newest
   * packet, this includes acknowledgements carried late after a loss burst or overtaken on a
   * reordering route: how long evidence of what arrived can take.
   */
  ackDelayMs: number;
  ackDelayVarianceMs: number;
  /** Share of sent packets never acknowledged, over the last `lossWindowPackets` old enough to tell. */
  outgoingLoss: number;
  /** Share of the peer's sequence numbers that never arrived, over the last `lossWindowPackets`. */
  incomingLoss: number;
  /** Reliable messages accepted by `sendReliable`. */
  reliableQueued: number;
  /** Reliable message copies put into packets (first sends and resends). */
  reliableSent: number;
  /** Reliable messages handed out by `receiveReliable`. */
  reliableDelivered: number;
  /** Received reliable message copies ignored as already delivered or buffered. */
  reliableDuplicates: number;
  /** Packets dropped by `receive`, and payloads dropped by `send`, per reason. */
  dropped: Record<DropReason, number>;
}

/** The fixed header of a packet. */
export interface PacketHeader {
  type: number;
  checksum: number;
  sequence: number;
  ack: number;
  ackBits: number;
}

/** Writes, reads or measures the fixed header (PACKET_HEADER_BYTES bytes). Reads fail only past the end. */
export function serializePacketHeader(s: BitStream, h: PacketHeader): boolean {
  h.type = s.uint(h.type, 8);
  h.checksum = s.uint(h.checksum, 32);
  h.sequence = s.uint(h.sequence, 16);
  h.ack = s.uint(h.ack, 16);
  h.ackBits = s.uint(h.ackBits, 32);
  return s.ok;
}

/** The ack field of a packet that acknowledges nothing (unsealed header). */
const NO_ACK = 0xffff;
/** Sealed header prefix: bit 3 set, the sequence is in its short form (8 bits). */
const SHORT_SEQUENCE_FLAG = 0x08;
const ACK_FORM_SHIFT = 4;
const ACK_NONE = 0;
const ACK_SHORT = 1;
const ACK_LONG = 2;
const ACK_BYTES_SHIFT = 6;
/** Bytes of ack bits for each code of prefix bits 6-7. */
const ACK_BITS_BYTES = [0, 1, 2, 4] as const;
/** A short form is read as the value within [reference - SHORT_BEHIND, reference + SHORT_AHEAD]. */
const SHORT_BEHIND = 64;
const SHORT_AHEAD = 255 - SHORT_BEHIND;
/** Bytes of the longest sealed header: prefix, long sequence, long ack, 4 bytes of ack bits. */
export const SEALED_HEADER_MAX_BYTES = 9;
/** Bytes of the shortest sealed header: prefix and short sequence (nothing acknowledged). */
export const SEALED_HEADER_MIN_BYTES = 2;

/** A sealed header's fields with its short forms read (`ack` 0xFFFF and `ackBits` 0 when it acks nothing). */
export interface SealedHeader {
  prefix: number;
  type: number;
  sequence: number;
  hasAck: boolean;
  ack: number;
  ackBits: number;
}

/** The code (0-3) of the fewest ack-bit bytes that carry `bits` (the bytes left out are all ones). */
function ackBitsCode(bits: number): number {
  if (bits === 0xffffffff) return 0;
  if (bits >>> 8 === 0xffffff) return 1;
  if (bits >>> 16 === 0xffff) return 2;
  return 3;
}

/** A value of 16-bit sequence space from its low 8 bits, read within [-SHORT_BEHIND, +SHORT_AHEAD] of `reference`. */
function nearSequence(low: number, reference: number): number {
  let d = (low - reference) & 0xff;
  if (d > SHORT_AHEAD) d -= 256;
  return seqAdd(reference, d);
}

/** Whether `value` can go short against a `reference` the reader holds at least (-1: none). */
function shortFits(value: number, reference: number): boolean {
  if (reference < 0) return false;
  const d = seqDiff(value, reference);
  return d >= 0 && d <= SHORT_AHEAD;
}

/**
 * Writes a sealed header at the start of `out`; returns its length. `shortSequenceFrom` and
 * `shortAckFrom` are the references the reader is known to hold at least (-1: unknown, long form).
 */
export function writeSealedHeader(
  out: Uint8Array,
  h: SealedHeader,
  shortSequenceFrom: number,
  shortAckFrom: number,
): number {
  const shortSequence = shortFits(h.sequence, shortSequenceFrom) && h.sequence !== shortSequenceFrom;
  const ackForm = !h.hasAck ? ACK_NONE : shortFits(h.ack, shortAckFrom) ? ACK_SHORT : ACK_LONG;
  const bitsCode = h.hasAck ? ackBitsCode(h.ackBits) : 0;
  const prefix =
    (h.type & 7) |
    (shortSequence ? SHORT_SEQUENCE_FLAG : 0) |
    (ackForm << ACK_FORM_SHIFT) |
    (bitsCode << ACK_BYTES_SHIFT);
  h.prefix = prefix;
  let o = 0;
  out[o++] = prefix;
  out[o++] = h.sequence & 0xff;
  if (!shortSequence) out[o++] = h.sequence >>> 8;
  if (ackForm !== ACK_NONE) {
    out[o++] = h.ack & 0xff;
    if (ackForm === ACK_LONG) out[o++] = h.ack >>> 8;
    const n = ACK_BITS_BYTES[bitsCode];
    for (let i = 0; i < n; i++) out[o++] = (h.ackBits >>> (8 * i)) & 0xff;
  }
  return o;
}

/**
 * Reads a sealed header from the first `length` bytes of `data`, short forms near `sequenceFrom`
 * (the newest sequence taken, -1: none) and `ackFrom` (the newest ack taken, -1: none). Returns
 * its length, or 0 when it is malformed (`h.type` is then -1 for a type the channel does not take).
 */
export function readSealedHeader(
  data: Uint8Array,
  length: number,
  h: SealedHeader,
  sequenceFrom: number,
  ackFrom: number,
): number {
  if (length < SEALED_HEADER_MIN_BYTES) return 0;
  const prefix = data[0];
  h.prefix = prefix;
  h.type = prefix & 7;
  if (h.type !== PacketType.Data && h.type !== PacketType.Disconnect) {
    h.type = -1;
    return 0;
  }
  const shortSequence = (prefix & SHORT_SEQUENCE_FLAG) !== 0;
  const ackForm = (prefix >>> ACK_FORM_SHIFT) & 3;
  const bitsCode = prefix >>> ACK_BYTES_SHIFT;
  if (ackForm === 3 || (ackForm === ACK_NONE && bitsCode !== 0)) return 0;
  if ((shortSequence && sequenceFrom < 0) || (ackForm === ACK_SHORT && ackFrom < 0)) return 0;
  const bitsBytes = ackForm === ACK_NONE ? 0 : ACK_BITS_BYTES[bitsCode];
  const total =
    1 + (shortSequence ? 1 : 2) + (ackForm === ACK_NONE ? 0 : ackForm === ACK_SHORT ? 1 : 2) + bitsBytes;
  if (length < total) return 0;
  let o = 1;
  if (shortSequence) h.sequence = nearSequence(data[o++], sequenceFrom);
  else {
    h.sequence = data[o] | (data[o + 1] << 8);
    o += 2;
  }
  h.hasAck = ackForm !== ACK_NONE;
  if (!h.hasAck) {
    h.ack = NO_ACK;
    h.ackBits = 0;
    return o;
  }
  if (ackForm === ACK_SHORT) h.ack = nearSequence(data[o++], ackFrom);
  else {
    h.ack = data[o] | (data[o + 1] << 8);
    o += 2;
  }
  let bits = 0;
  for (let i = 0; i < bitsBytes; i++) bits |= data[o++] << (8 * i);
  if (bitsBytes < 4) bits |= ~0 << (8 * bitsBytes);
  h.ackBits = bits >>> 0;
  return o;
}

/** The additional authenticated data of a sealed packet: prefix, then the header's full values (9 bytes). */
function writeSealedAad(aad: Uint8Array, h: SealedHeader): void {
  aad[0] = h.prefix;
  aad[1] = h.sequence & 0xff;
  aad[2] = h.sequence >>> 8;
  aad[3] = h.ack & 0xff;
  aad[4] = h.ack >>> 8;
  aad[5] = h.ackBits & 0xff;
  aad[6] = (h.ackBits >>> 8) & 0xff;
  aad[7] = (h.ackBits >>> 16) & 0xff;
  aad[8] = h.ackBits >>> 24;
}

const saltBytes = new Uint8Array(4);

/** CRC-32 of protocolId's 4 little-endian bytes: where every packet checksum of that protocol starts. */
function protocolSalt(protocolId: number): number {
  writeU32(saltBytes, 0, protocolId);
  return crc32(saltBytes);
}

function checksumFromSalt(salt: number, data: Uint8Array, length: number): number {
  return crc32(data, PACKET_CHECKSUM_OFFSET + 4, length, crc32(data, 0, PACKET_CHECKSUM_OFFSET, salt));
}

/** The checksum the first `length` bytes of a packet must carry under `protocolId` (its own field excluded). */
export function packetChecksum(protocolId: number, data: Uint8Array, length = data.length): number {
  return checksumFromSalt(protocolSalt(protocolId), data, length);
}

/** Stores the correct checksum into a packet of at least PACKET_HEADER_BYTES bytes (after editing it). */
export function writePacketChecksum(protocolId: number, data: Uint8Array, length = data.length): void {
  writeU32(data, PACKET_CHECKSUM_OFFSET, packetChecksum(protocolId, data, length));
}

function writeU32(data: Uint8Array, offset: number, value: number): void {
  data[offset] = value & 0xff;
  data[offset + 1] = (value >>> 8) & 0xff;
  data[offset + 2] = (value >>> 16) & 0xff;
  data[offset + 3] = value >>> 24;
}

/** Share of lost items among the last `size` finalized ones, indexed by 16-bit sequence. */
class LossWindow {
  lost = 0;
  counted = 0;
  private readonly mask: number;
  /** By sequence modulo size: the sequence recorded there times two plus its outcome (1: lost), or -1. */
  private readonly entries: Int32Array;

  constructor(size: number) {
    this.mask = size - 1;
    this.entries = new Int32Array(size).fill(-1);
  }

  get ratio(): number {
    return this.counted === 0 ? 0 : this.lost / this.counted;
  }

  /** Records the final outcome of `sequence`, pushing out the one `size` sequences older. */
  record(sequence: number, lost: boolean): void {
    const i = sequence & this.mask;
    const old = this.entries[i];
    if (old === -1) this.counted++;
    else this.lost -= old & 1;
    this.entries[i] = sequence * 2 + (lost ? 1 : 0);
    if (lost) this.lost++;
  }

  /** `sequence`, recorded as lost, turned out delivered (a very late ack): corrects it. */
  correct(sequence: number): void {
    const i = sequence & this.mask;
    if (this.entries[i] === sequence * 2 + 1) {
      this.entries[i] = sequence * 2;
      this.lost--;
    }
  }
}

/** Sent packets remembered for acks and RTT; older ones are settled for the loss estimate first. */
const SENT_BUFFER_SIZE = 512;
/**
 * Reliable message ids the sent packets' records hold, at most (a power of two): 128 packets of
 * the most a packet carries (64, reliable.ts) in flight. The acknowledgement of a packet whose ids the ring has
 * since written over retires nothing, and its messages go again and are retired by the packet
 * that carries them then.
 */
const MESSAGE_ID_RING = 8192;
const MESSAGE_ID_MASK = MESSAGE_ID_RING - 1;

/** A sent packet's record in `SentPackets.records` (after its sequence): its numbers, and their places. */
const SENT_STRIDE = 8;
const SENT_TIME_MS = 1;
/** 1 once acknowledged. */
const SENT_ACKED = 2;
/** The ack the packet carried (-1: none): once it is acknowledged, the peer holds an ack at least this new. */
const SENT_ACK_CARRIED = 3;
const SENT_MESSAGE_COUNT = 4;
/**
 * Where the packet's reliable message ids start in `messageIds` (counted from the channel's first
 * id, so a start the ring has since written over is told apart).
 */
const SENT_MESSAGE_START = 5;

/**
 * The packets a channel sent, by sequence modulo SENT_BUFFER_SIZE: a record of SENT_STRIDE numbers
 * each (64 bytes: one or two cache lines, as the array's start falls) in one array, instead of an object (and a message id array) per packet or
 * an array per field. A server holds hundreds of channels, and every packet it receives looks up
 * to 33 of them up (its acknowledgements): each look-up is one place in memory.
 */
class SentPackets extends SequenceRecords {
  /**
   * The reliable message ids the packets carried, one after another in a ring. Most packets carry
   * none; a slot of the most a packet carries (64 ids) for each packet was 64 KB a connection.
   */
  readonly messageIds = new Uint16Array(MESSAGE_ID_RING);
  /** Ids written to the ring so far. */
  idsWritten = 0;

  constructor() {
    super(SENT_BUFFER_SIZE, SENT_STRIDE);
  }

  /** Records `count` ids from `ids` for the packet whose record starts at `slot`. */
  recordIds(slot: number, ids: Uint16Array, count: number): void {
    const start = this.idsWritten;
    const ring = this.messageIds;
    for (let i = 0; i < count; i++) ring[(start + i) & MESSAGE_ID_MASK] = ids[i];
    this.records[slot + SENT_MESSAGE_START] = start;
    this.records[slot + SENT_MESSAGE_COUNT] = count;
    this.idsWritten = start + count;
  }

  /** Whether the ids of the packet whose record starts at `slot` are still in the ring (not written over since). */
  idsHeld(slot: number): boolean {
    return this.idsWritten - this.records[slot + SENT_MESSAGE_START] <= MESSAGE_ID_RING;
  }
}

/** RTT assumed for reliable resends before the first sample. */
const INITIAL_RTT_MS = 100;
/** Before the first RTT sample, a sent packet unacknowledged this long counts as lost. */
const INITIAL_LOSS_TIMEOUT_MS = 1000;
/**
 * First acknowledgements without a round-trip sample after which one is taken anyway (about a
 * second of packets): see PacketChannel.acknowledge.
 */
const FORCED_SAMPLE_ACKS = 64;
/**
 * A delay smoothed as RFC 6298 smooths the round trip: the first sample is the mean and half of
 * it the deviation; each later one moves the mean by 1/8 and the deviation by 1/4 of the way.
 */
class SmoothedDelay {
  has = false;
  ms = 0;
  deviationMs = 0;

  add(sample: number): void {
    if (this.has) {
      this.deviationMs += (Math.abs(sample - this.ms) - this.deviationMs) / 4;
      this.ms += (sample - this.ms) / 8;
    } else {
      this.has = true;
      this.ms = sample;
      this.deviationMs = sample / 2;
    }
  }
}

/** Whether an acknowledgement is a round-trip sample: see PacketChannel.acknowledge. */
const NO_SAMPLE = 0;
const SAMPLE = 1;
const SAMPLE_IF_OVERDUE = 2;
type SampleMode = typeof NO_SAMPLE | typeof SAMPLE | typeof SAMPLE_IF_OVERDUE;
/** Additional authenticated data of a sealed packet: prefix, sequence, ack, ack bits. */
const AAD_BYTES = 9;

// Scratch every channel of this thread shares, as Quake's net_message is one buffer: the
// nonce and authenticated data are written just before each seal or open, and a received packet
// is opened into `opened` and read from there before the next one is taken. A server holds
// hundreds of channels, each touched once or twice a tick: the cipher reads these in every call,
// and one set stays in the processor's cache where one per channel would be fetched from memory
// each time (with 512 channels, opening a packet took about 5 us in the server against 1 us in a
// loop over one channel).
const scratchNonce = new Uint8Array(NONCE_BYTES);
const scratchAad = new Uint8Array(AAD_BYTES);
const opened = new Uint8Array(MAX_PACKET_BYTES);
/** The stream `receive` returns, positioned at the payload: one for all channels, as `opened`. */
const reader = new BitStream(0);
/** What `receive` reads a packet's header and reliable section into, as `opened`. */
const rxHeader = createPacketHeader();
const rxSealedHeader = createSealedHeader();
const rxSection = new ReliableSection();

/** The configurations `resolveChannelConfig` made. */
const resolved = new WeakSet<object>();

/**
 * `config` over the defaults, checked and frozen, for channels to share: a channel made with it
 * takes it as it is instead of a copy of its own (a server's hundreds of channels read one
 * configuration, which stays in the processor's cache, on every packet). Throws a RangeError
 * naming a field out of range.
 */
export function resolveChannelConfig(
  config: Partial<PacketChannelConfig> & { protocolId: number },
): Readonly<PacketChannelConfig> {
  const c: PacketChannelConfig = { ...DEFAULT_CHANNEL_CONFIG, ...config };
  checkConfig(c);
  Object.freeze(c);
  resolved.add(c);
  return c;
}

function checkConfig(c: PacketChannelConfig): void {
  const fail = (field: string, rule: string, value: number): never => {
    throw new RangeError(`PacketChannel: ${field} must be ${rule}, got ${value}`);
  };
  if (!Number.isInteger(c.protocolId) || c.protocolId < 0 || c.protocolId > 0xffffffff) {
    fail('protocolId', 'an integer in [0, 2^32-1]', c.protocolId);
  }
  if (!(c.keepaliveIntervalMs > 0) || !Number.isFinite(c.keepaliveIntervalMs)) {
    fail('keepaliveIntervalMs', 'a finite number > 0', c.keepaliveIntervalMs);
  }
  const m = c.maxReliableMessageBytes;
  if (!Number.isInteger(m) || m < 1 || m > RELIABLE_MESSAGE_BYTES_LIMIT) {
    fail('maxReliableMessageBytes', `an integer in [1, ${RELIABLE_MESSAGE_BYTES_LIMIT}]`, m);
  }
  const b = c.reliableBudgetBytes;
  if (!Number.isInteger(b) || b < 1 || b > MAX_PACKET_BYTES - PACKET_HEADER_BYTES) {
    fail('reliableBudgetBytes', `an integer in [1, ${MAX_PACKET_BYTES - PACKET_HEADER_BYTES}]`, b);
  }
  if (!(c.reliableResendMinMs >= 0) || !Number.isFinite(c.reliableResendMinMs)) {
    fail('reliableResendMinMs', 'a finite number >= 0', c.reliableResendMinMs);
  }
  const w = c.lossWindowPackets;
  if (!Number.isInteger(w) || w < 32 || w > 16384 || (w & (w - 1)) !== 0) {
    fail('lossWindowPackets', 'a power of two in [32, 16384]', w);
  }
  const j = c.maxSequenceJump;
  if (!Number.isInteger(j) || j < ACK_BITS || j > 16384)
    fail('maxSequenceJump', `an integer in [${ACK_BITS}, 16384]`, j);
}

function createSealedHeader(): SealedHeader {
  return { prefix: 0, type: 0, sequence: 0, hasAck: false, ack: 0, ackBits: 0 };
}

function createPacketHeader(): PacketHeader {
  return { type: 0, checksum: 0, sequence: 0, ack: 0, ackBits: 0 };
}

/** Packets sent without using an exact-length send view before it is let go (SendBuffer.view). */
const SEND_VIEW_IDLE = 4096;

/**
 * A writer for packets, exact-length views of its buffer for the transport, and the header and
 * reliable section of the packet being written.
 */
class SendBuffer {
  readonly writer = new BitStream(MAX_PACKET_BYTES);
  readonly header = createPacketHeader();
  readonly sealedHeader = createSealedHeader();
  readonly section = new ReliableSection();
  /**
   * Exact-length views of the writer's buffer for the transport: one per length (2,048 slots
   * hold every length apart), each let go once SEND_VIEW_IDLE packets went without it, so the
   * views held are those of the lengths sent lately and memory does not creep up over hours as
   * rarer lengths come by.
   */
  private readonly views = new ViewCache(2048, SEND_VIEW_IDLE);
  /** True while a channel writes a packet into it. */
  busy = false;

  /** The writer's first `length` bytes, as a view made once per length. */
  view(length: number): Uint8Array {
    return this.views.get(this.writer.buffer, 0, length);
  }
}

/**
 * The send buffer every channel of this thread writes its packets into (one at a time: a packet
 * is begun, written, sealed and handed to the transport within one call), as received packets
 * are opened into `opened`. A server writes a packet for each of hundreds of channels a tick; one
 * buffer, its views and the cipher's views of it stay in the processor's cache, where one set per
 * channel was fetched from memory for each packet.
 */
const sharedSend = new SendBuffer();

/**
 * One end of one connection. The transport is outside: packets leave through `transmit` (the
 * bytes are only valid during the call) and come in through `receive`. Time comes in as `nowMs`.
 * Nothing here throws on network data; every rejected packet is counted in `stats.dropped`.
 */
export class PacketChannel {
  /**
   * A sent packet was acknowledged for the first time, `rttSampleMs` after it was sent: called
   * once per packet, in sequence order within one received packet.
   */
  onAck: ((sequence: number, rttSampleMs: number) => void) | null = null;
  /** The sequence of the packet `receive` accepted last (-1 before any). */
  lastReceivedSequence = -1;
  /**
   * The ack field of the packet `receive` accepted last (-1 when it acknowledged nothing): the
   * newest of our packets the peer had received when it sent that one.
   */
  lastReceivedAck = -1;
  readonly stats: ChannelStats;
  /** When the last packet was accepted (-Infinity: never). For timeouts. */
  lastReceivedMs = Number.NEGATIVE_INFINITY;
  /** When the last packet was sent (-Infinity: never). */
  lastSentMs = Number.NEGATIVE_INFINITY;
  readonly config: Readonly<PacketChannelConfig>;

  /**
   * The reason of an authenticated Disconnect received from the peer (0: none): set by `receive`,
   * which then returns null. The connection layer ends the connection on it.
   */
  peerDisconnectReason = 0;
  /** Why `receive` last dropped a packet (null: it has dropped none). */
  lastDropReason: DropReason | null = null;

  private readonly transmit: (data: Uint8Array) => void;
  private readonly salt: number;
  private readonly keys: PacketKeys | null;
  /** Room for the tag at the end of sealed packets (0 unsealed). */
  private readonly tagBytes: number;
  /** Packets sent so far: the 64-bit sequence number of the next one. */
  private sendCounter = 0;
  /** The 64-bit sequence number of the newest packet received. */
  private remoteExtended = 0;
  /**
   * The writer and send views this channel uses when a packet is begun while another channel's
   * send is still under way on this thread (a payload writer that sends on another channel):
   * made then, and kept.
   */
  private ownSend: SendBuffer | null = null;
  /** Bytes of the header of the packet being written. */
  private headerBytes = PACKET_HEADER_BYTES;
  /** Newest of our packets the peer acknowledged (-1: none): its newest received is at least this. */
  private newestAcked = -1;
  /** Newest ack value the peer is known to hold (carried by a packet it acknowledged; -1: none). */
  private peerHoldsAck = -1;
  /** Newest ack value taken from the peer (-1: none): short acks are read near it. */
  private newestAckTaken = -1;
  /**
   * The newest ack whose bits were processed (-1: none) and which of the ACK_BITS packets before
   * it were (bit i: ackedThrough - 1 - i), so a packet's ack bits already taken from an earlier
   * packet are not looked up again (`acknowledge` would find each acknowledged already).
   */
  private ackedThrough = -1;
  private ackedMask = 0;
  private readonly sender = new ReliableSender();
  private readonly receiver = new ReliableReceiver();
  private readonly sent = new SentPackets();
  private readonly outgoing: LossWindow;
  private readonly incoming: LossWindow;

  private nextSequence = 0;
  /** Oldest sent sequence not yet settled (acked or counted lost) for the outgoing loss window. */
  private lossCursor = 0;
  /** Round-trip samples (rttMs) and every first acknowledgement's delay (ackDelayMs). */
  private readonly rtt = new SmoothedDelay();
  private readonly ackDelay = new SmoothedDelay();
  /** First acknowledgements since the last round-trip sample (see acknowledge). */
  private acksWithoutSample = 0;

  private hasReceived = false;
  /** Newest sequence received and bit i = sequence remoteSequence-1-i received. */
  private remoteSequence = 0;
  private receivedBits = 0;
  /** How many of the 33 sequences in the ack window are at or after the first one received. */
  private windowFill = 0;

  /**
   * `keys`: the connection's packet keys; with them every packet is sealed and every received
   * packet must verify. Without them packets are only checksummed (a building block for tests
   * and tools; the connection layer always gives keys).
   */
  constructor(
    transmit: (data: Uint8Array) => void,
    config: Partial<PacketChannelConfig> & { protocolId: number },
    keys: PacketKeys | null = null,
  ) {
    const c = resolved.has(config) ? (config as PacketChannelConfig) : resolveChannelConfig(config);
    this.config = c;
    this.transmit = transmit;
    this.keys = keys;
    this.tagBytes = keys === null ? 0 : PACKET_TAG_BYTES;
    this.salt = protocolSalt(c.protocolId);
    this.outgoing = new LossWindow(c.lossWindowPackets);
    this.incoming = new LossWindow(c.lossWindowPackets);
    const dropped = {} as Record<DropReason, number>;
    for (const reason of DROP_REASONS) dropped[reason] = 0;
    this.stats = {
      packetsSent: 0,
      packetsReceived: 0,
      packetsAcked: 0,
      bytesSent: 0,
      bytesReceived: 0,
      rttMs: 0,
      rttVarianceMs: 0,
      ackDelayMs: 0,
      ackDelayVarianceMs: 0,
      outgoingLoss: 0,
      incomingLoss: 0,
      reliableQueued: 0,
      reliableSent: 0,
      reliableDelivered: 0,
      reliableDuplicates: 0,
      dropped,
    };
  }

  /** Sequence the next sent packet will carry. */
  get sequence(): number {
    return this.nextSequence;
  }

  /** Newest sequence received from the peer, or -1 before the first packet. */
  get remoteSequenceReceived(): number {
    return this.hasReceived ? this.remoteSequence : -1;
  }

  /** Reliable messages queued and not yet acknowledged (at most RELIABLE_WINDOW). */
  get reliablePending(): number {
    return this.sender.pending;
  }

  /**
   * Sends one packet: header, the reliable messages due (see reliable.ts), then the payload
   * `writePayload` writes into the stream it is given, whose remaining room (`s.bitsRemaining`)
   * is this packet's budget. A payload that overflows it (`!s.ok`) is left out and counted as
   * 'payload overflow'; the packet still goes. Returns the packet's sequence. Allocates nothing.
   */
  send(nowMs: number, writePayload?: (s: BitStream) => void): number {
    const b = this.takeSend();
    try {
      return this.sendIn(b, nowMs, writePayload);
    } finally {
      b.busy = false;
    }
  }

  private sendIn(b: SendBuffer, nowMs: number, writePayload?: (s: BitStream) => void): number {
    const s = this.beginPacket(nowMs, PacketType.Data, b);
    const rtt = this.rtt.has ? this.stats.rttMs : INITIAL_RTT_MS;
    const resendDelayMs = Math.max(rtt * 1.1, this.config.reliableResendMinMs);
    const maxBits = (MAX_PACKET_BYTES - this.headerBytes - this.tagBytes) * 8;
    const section = b.section;
    this.sender.fill(section, nowMs, resendDelayMs, this.config.reliableBudgetBytes * 8, maxBits);
    serializeReliableSection(s, section, this.config.maxReliableMessageBytes);

    if (writePayload !== undefined) {
      const start = s.bitsProcessed;
      writePayload(s);
      if (!s.ok) {
        s.rewind(start);
        this.stats.dropped['payload overflow']++;
      }
    }
    return this.finishPacket(nowMs, b, section.count, section.ids);
  }

  /**
   * Sends an authenticated Disconnect carrying `reason` (a sealed channel only: an unsealed one
   * has no way to prove who sent it). Returns its sequence. Send a few: packets may be lost.
   */
  sendDisconnect(nowMs: number, reason: number): number {
    if (this.keys === null) throw new Error('sendDisconnect: the channel has no packet keys');
    const b = this.takeSend();
    try {
      const s = this.beginPacket(nowMs, PacketType.Disconnect, b);
      s.uint(reason & 0xff, 8);
      return this.finishPacket(nowMs, b, 0, null);
    } finally {
      b.busy = false;
    }
  }

  /**
   * The send buffer for a packet about to be begun: the thread's shared one, or this channel's
   * own while another send holds the shared one. The caller sets `busy` false when done.
   */
  private takeSend(): SendBuffer {
    if (!sharedSend.busy) {
      sharedSend.busy = true;
      return sharedSend;
    }
    if (this.ownSend === null) this.ownSend = new SendBuffer();
    return this.ownSend;
  }

  /** Starts a packet of `type` in `b`: its header, into the writer, room left for the tag. */
  private beginPacket(nowMs: number, type: number, b: SendBuffer): BitStream {
    this.settleOutgoing(nowMs);
    while (seqDiff(this.nextSequence, this.lossCursor) >= SENT_BUFFER_SIZE) this.settleOne();
    const s = b.writer.beginWrite(MAX_PACKET_BYTES - this.tagBytes);
    if (this.keys !== null) {
      const h = b.sealedHeader;
      h.type = type;
      h.sequence = this.nextSequence;
      h.hasAck = this.hasReceived;
      h.ack = this.hasReceived ? this.remoteSequence : NO_ACK;
      h.ackBits = this.hasReceived ? this.receivedBits : 0;
      const n = writeSealedHeader(s.buffer, h, this.newestAcked, this.peerHoldsAck);
      for (let i = 0; i < n; i++) s.uint(s.buffer[i], 8);
      this.headerBytes = n;
      return s;
    }
    const h = b.header;
    h.type = type;
    h.checksum = 0;
    h.sequence = this.nextSequence;
    h.ack = this.hasReceived ? this.remoteSequence : NO_ACK;
    h.ackBits = this.hasReceived ? this.receivedBits : 0;
    serializePacketHeader(s, h);
    this.headerBytes = PACKET_HEADER_BYTES;
    return s;
  }

  /** Seals (with keys) or checksums (without) the packet in `b`'s writer, records and transmits it. */
  private finishPacket(
    nowMs: number,
    b: SendBuffer,
    messageCount: number,
    messageIds: Uint16Array | null,
  ): number {
    const s = b.writer;
    const sequence = this.nextSequence;
    let length = s.bytesProcessed;
    const data = s.buffer;
    if (this.keys !== null) {
      writeNonce(scratchNonce, this.sendCounter);
      writeSealedAad(scratchAad, b.sealedHeader);
      this.keys.send.seal(scratchNonce, scratchAad, data, this.headerBytes, length, data);
      length += PACKET_TAG_BYTES;
    } else {
      writeU32(data, PACKET_CHECKSUM_OFFSET, checksumFromSalt(this.salt, data, length));
    }

    const sent = this.sent;
    const slot = sent.insert(sequence);
    const records = sent.records;
    records[slot + SENT_TIME_MS] = nowMs;
    records[slot + SENT_ACKED] = 0;
    records[slot + SENT_ACK_CARRIED] = this.hasReceived ? this.remoteSequence : -1;
    if (messageIds !== null) sent.recordIds(slot, messageIds, messageCount);
    else records[slot + SENT_MESSAGE_COUNT] = 0;

    this.nextSequence = seqAdd(sequence, 1);
    this.sendCounter++;
    this.lastSentMs = nowMs;
    this.stats.packetsSent++;
    this.stats.bytesSent += length;
    this.stats.reliableSent = this.sender.sent;
    this.transmit(b.view(length));
    return sequence;
  }

  /**
   * Sends an empty packet (acks, plus any reliable messages due) if nothing was sent for
   * keepaliveIntervalMs, and settles the loss estimate. Returns whether it sent.
   */
  update(nowMs: number): boolean {
    if (nowMs - this.lastSentMs < this.config.keepaliveIntervalMs) {
      this.settleOutgoing(nowMs);
      return false;
    }
    this.send(nowMs);
    return true;
  }

  /**
   * Takes one datagram from the peer. Checks its length, checksum (unsealed) or header form,
   * type, sequence (each once, within the ack window), ack (not newer than anything sent) and
   * reliable section; then processes its acks (RTT, `onAck`, reliable retirements), stores its
   * reliable messages and returns the stream positioned at its payload, valid until the next
   * `receive` of any channel of this thread (they share one stream and open packets into one
   * buffer; the reader checks `s.ok`). Anything rejected returns null and counts
   * `stats.dropped[reason]`, with no other effect. Never throws on any bytes.
   */
  receive(nowMs: number, data: Uint8Array): BitStream | null {
    const length = data.length;
    if (length > MAX_PACKET_BYTES) return this.drop('oversized');
    const keys = this.keys;
    let s: BitStream;
    let type: number;
    let sequence: number;
    let ack: number;
    let ackBits: number;
    let acksNothing: boolean;
    let headerBytes = PACKET_HEADER_BYTES;
    const sh = rxSealedHeader;
    if (keys !== null) {
      if (length < SEALED_HEADER_MIN_BYTES + 1 + PACKET_TAG_BYTES) return this.drop('truncated');
      headerBytes = readSealedHeader(
        data,
        length,
        sh,
        this.hasReceived ? this.remoteSequence : -1,
        this.newestAckTaken,
      );
      if (headerBytes === 0) return this.drop(sh.type === -1 ? 'bad type' : 'malformed');
      if (length < headerBytes + 1 + PACKET_TAG_BYTES) return this.drop('truncated');
      type = sh.type;
      sequence = sh.sequence;
      ack = sh.ack;
      ackBits = sh.ackBits;
      acksNothing = !sh.hasAck;
      s = reader;
    } else {
      if (length < MIN_PACKET_BYTES) return this.drop('truncated');
      s = reader.beginRead(data);
      const h = rxHeader;
      serializePacketHeader(s, h);
      if (h.checksum !== checksumFromSalt(this.salt, data, length)) return this.drop('checksum');
      if (h.type !== PacketType.Data) return this.drop('bad type');
      type = h.type;
      sequence = h.sequence;
      ack = h.ack;
      ackBits = h.ackBits;
      acksNothing = ack === NO_ACK && ackBits === 0;
    }
    let ahead = 0;
    if (this.hasReceived) {
      ahead = seqDiff(sequence, this.remoteSequence);
      if (ahead === 0) return this.drop('duplicate');
      if (ahead < 0) {
        if (ahead < -ACK_BITS) return this.drop('stale');
        if ((this.receivedBits >>> (-ahead - 1)) & 1) return this.drop('duplicate');
      } else if (ahead > this.config.maxSequenceJump) {
        return this.drop('too far ahead');
      }
    }
    const extended = this.hasReceived ? this.remoteExtended + ahead : sequence;
    if (keys !== null) {
      // Nothing above changed any state: a packet that fails here moves nothing.
      if (extended < 0) return this.drop('forged');
      writeNonce(scratchNonce, extended);
      writeSealedAad(scratchAad, sh);
      // Opened in place in the thread's shared buffer (the datagram's bytes are left as they came).
      const plain = opened;
      plain.set(data);
      if (!keys.receive.open(scratchNonce, scratchAad, plain, headerBytes, length, plain))
        return this.drop('forged');
      s = reader.beginRead(plain, length - PACKET_TAG_BYTES);
      s.skip(8 * headerBytes);
    }
    if (!acksNothing && seqGreaterThan(ack, seqAdd(this.nextSequence, -1))) return this.drop('bad ack');
    if (type === PacketType.Disconnect) {
      const reason = s.uint(0, 8);
      if (!s.ok) return this.drop('malformed');
      this.peerDisconnectReason = reason === 0 ? 0xff : reason;
      return null;
    }
    const section = rxSection;
    if (!serializeReliableSection(s, section, this.config.maxReliableMessageBytes))
      return this.drop('malformed');
    if (!this.receiver.fits(section)) return this.drop('reliable window');

    const wasReceived = this.hasReceived;
    this.markReceived(sequence, extended);
    if (!acksNothing && (this.newestAckTaken < 0 || seqGreaterThan(ack, this.newestAckTaken)))
      this.newestAckTaken = ack;
    this.lastReceivedSequence = sequence;
    this.lastReceivedAck = acksNothing ? -1 : ack;
    this.lastReceivedMs = nowMs;
    this.stats.packetsReceived++;
    this.stats.bytesReceived += length;
    // Round-trip samples only from a packet whose predecessor arrived before it: any
    // acknowledgement it is the first to carry could not have been carried by an earlier packet.
    // After a loss (the predecessor lost) or overtaken on the route, the first acknowledgements
    // it carries may have waited in packets that never came or came late, and would read the
    // loss or the reordering as a longer, more variable round trip (ackDelayMs counts them).
    const sampling = ahead === 1 || !wasReceived;
    let bits = ackBits;
    if (!acksNothing) {
      // Bits an earlier packet with an ack at most ACK_BITS older brought are done.
      const d = this.ackedThrough < 0 ? ACK_BITS : seqDiff(ack, this.ackedThrough);
      if (d >= 0 && d < ACK_BITS) {
        const done = d === 0 ? this.ackedMask : (this.ackedMask << d) | (1 << (d - 1));
        bits = ackBits & ~done;
        this.ackedMask = (done | ackBits) >>> 0;
        this.ackedThrough = ack;
      } else if (d >= ACK_BITS) {
        this.ackedMask = ackBits;
        this.ackedThrough = ack;
      }
      // d < 0: an older ack (the packet was overtaken): every bit is looked up; the window stays.
    }
    for (let i = ACK_BITS - 1; i >= 0; i--) {
      if ((bits >>> i) & 1) this.acknowledge(nowMs, seqAdd(ack, -1 - i), sampling ? SAMPLE : NO_SAMPLE);
    }
    this.acknowledge(nowMs, ack, sampling ? SAMPLE : SAMPLE_IF_OVERDUE);
    this.receiver.accept(section);
    this.stats.reliableDuplicates = this.receiver.duplicates;
    this.settleOutgoing(nowMs);
    return s;
  }

  /**
   * Queues a reliable message (copied), delivered to the peer exactly once and in order.
   * Returns false when RELIABLE_WINDOW messages are still unacknowledged (try again later).
   * Throws a RangeError if its length is not within [1, maxReliableMessageBytes].
   */
  sendReliable(message: Uint8Array): boolean {
    const max = this.config.maxReliableMessageBytes;
    if (!(message.length >= 1 && message.length <= max)) {
      throw new RangeError(
        `sendReliable: message length ${message.length} is outside [1, maxReliableMessageBytes = ${max}]`,
      );
    }
    if (!this.sender.queue(message)) return false;
    this.stats.reliableQueued = this.sender.queued;
    return true;
  }

  /** The next reliable message from the peer in order, exactly once, or null. The caller owns the array. */
  receiveReliable(): Uint8Array | null {
    const message = this.receiver.next();
    if (message !== null) this.stats.reliableDelivered = this.receiver.delivered;
    return message;
  }

  private drop(reason: DropReason): null {
    this.stats.dropped[reason]++;
    this.lastDropReason = reason;
    return null;
  }

  /** First acknowledgement of a packet we sent: RTT sample, loss correction, reliable retirement, onAck. */
  private acknowledge(nowMs: number, sequence: number, mode: SampleMode): void {
    const sent = this.sent;
    const slot = sent.slot(sequence);
    const records = sent.records;
    if (slot < 0 || records[slot + SENT_ACKED] !== 0) return;
    records[slot + SENT_ACKED] = 1;
    if (this.newestAcked < 0 || seqGreaterThan(sequence, this.newestAcked)) this.newestAcked = sequence;
    const carried = records[slot + SENT_ACK_CARRIED];
    if (carried >= 0 && (this.peerHoldsAck < 0 || seqGreaterThan(carried, this.peerHoldsAck)))
      this.peerHoldsAck = carried;
    const st = this.stats;
    st.packetsAcked++;
    const sample = Math.max(0, nowMs - records[slot + SENT_TIME_MS]);
    this.ackDelay.add(sample);
    st.ackDelayMs = this.ackDelay.ms;
    st.ackDelayVarianceMs = this.ackDelay.deviationMs;
    // The first acknowledgement is always a sample. A route where no packet follows its
    // predecessor (every other one lost, or pairs swapped) would give no more: after
    // FORCED_SAMPLE_ACKS first acknowledgements without one, the next newest acknowledgement of
    // a packet (its ack field, the least likely to have waited) is taken whatever came before it.
    const rtt = this.rtt;
    if (mode !== SAMPLE && rtt.has) this.acksWithoutSample++;
    if (
      mode === SAMPLE ||
      !rtt.has ||
      (mode === SAMPLE_IF_OVERDUE && this.acksWithoutSample >= FORCED_SAMPLE_ACKS)
    ) {
      this.acksWithoutSample = 0;
      rtt.add(sample);
      st.rttMs = rtt.ms;
      st.rttVarianceMs = rtt.deviationMs;
    }
    this.outgoing.correct(sequence);
    st.outgoingLoss = this.outgoing.ratio;
    const count = records[slot + SENT_MESSAGE_COUNT];
    if (count > 0 && sent.idsHeld(slot)) {
      this.sender.acknowledge(
        sent.messageIds,
        count,
        records[slot + SENT_MESSAGE_START] % MESSAGE_ID_RING,
        MESSAGE_ID_MASK,
      );
    }
    this.onAck?.(sequence, sample);
  }

  /** Settles every sent packet at least ACK_BITS behind the newest whose ack is overdue. */
  private settleOutgoing(nowMs: number): void {
    const st = this.stats;
    const timeoutMs = this.rtt.has ? st.rttMs + 4 * st.rttVarianceMs + 100 : INITIAL_LOSS_TIMEOUT_MS;
    const newest = seqAdd(this.nextSequence, -1);
    while (this.lossCursor !== this.nextSequence && seqDiff(newest, this.lossCursor) >= ACK_BITS) {
      const slot = this.sent.slot(this.lossCursor);
      const records = this.sent.records;
      if (slot >= 0 && records[slot + SENT_ACKED] === 0 && nowMs - records[slot + SENT_TIME_MS] <= timeoutMs)
        break;
      this.settleOne();
    }
  }

  private settleOne(): void {
    const slot = this.sent.slot(this.lossCursor);
    this.outgoing.record(this.lossCursor, slot < 0 || this.sent.records[slot + SENT_ACKED] === 0);
    this.stats.outgoingLoss = this.outgoing.ratio;
    this.lossCursor = seqAdd(this.lossCursor, 1);
  }

  /** Moves the receive window to take `sequence`, settling the sequences that leave it. */
  private markReceived(sequence: number, extended: number): void {
    if (!this.hasReceived) {
      this.hasReceived = true;
      this.remoteSequence = sequence;
      this.remoteExtended = extended;
      this.receivedBits = 0;
      this.windowFill = 1;
      return;
    }
    const ahead = seqDiff(sequence, this.remoteSequence);
    if (ahead < 0) {
      this.receivedBits = (this.receivedBits | (1 << (-ahead - 1))) >>> 0;
      return;
    }
    const span = ACK_BITS + 1;
    const oldest = seqAdd(this.remoteSequence, -ACK_BITS);
    const leaving = Math.min(ahead, span);
    for (let j = span - this.windowFill; j < leaving; j++) {
      const received = j === ACK_BITS || ((this.receivedBits >>> (ACK_BITS - 1 - j)) & 1) === 1;
      this.incoming.record(seqAdd(oldest, j), !received);
    }
    const lossWindow = this.config.lossWindowPackets;
    for (let j = Math.max(span, ahead - lossWindow); j < ahead; j++)
      this.incoming.record(seqAdd(oldest, j), true);
    this.stats.incomingLoss = this.incoming.ratio;
    if (ahead < ACK_BITS) this.receivedBits = ((this.receivedBits << ahead) | (1 << (ahead - 1))) >>> 0;
    else this.receivedBits = ahead === ACK_BITS ? 0x80000000 : 0;
    this.remoteSequence = sequence;
    this.remoteExtended = extended;
    this.windowFill = Math.min(span, this.windowFill + ahead);
  }
}
