// Connection lifecycle packets (connect request, challenge, response, accepted, refused): their
// wire form, shared by client and server and by every transport. The Disconnect of a connection
// is not one of them: it is sealed with the connection's packet keys (channel.ts).
//
// Every lifecycle packet:
//   +-------------+------+--------------------------------------------------------------+
//   | type        | 8    | PacketType (1..5)                                            |
//   | checksum    | 32   | as in every packet: see channel.ts                           |
//   | body        | var  | per type, below                                              |
//   +-------------+------+--------------------------------------------------------------+
// connect request (1):    clientNonce 32 | version 32 | schemaHash 32 | clientKey 256
//                         | zero padding to REQUEST_BYTES
// challenge (2):          clientNonce 32 | issuedAt 32 | cookie 64 | serverKey 256
// challenge response (3): clientNonce 32 | issuedAt 32 | cookie 64 | updateRate 8 | rate 32
//                         | role 8 | spectatorDelayMs 16 | clientKey 256
//                         | connectTokenLength 16 | connectToken (connect-token.ts; 0 bytes: none)
//                         | sealed resumeToken 64 | tag 128
// accepted (4):           clientNonce 32 | slot 16 | tickRate 8 | serverTick 32
//                         | sealed resumeToken 64 | tag 128
// The resume token (0: none) is the server's for one player: a client that comes back with it
// within the server's grace period takes its slot and player back. It never travels in clear:
// both packets seal it with the new connection's keys (the response with the client-to-server
// key, Accepted with the server-to-client one; nonce: packet-crypto.ts writeHandshakeNonce),
// the additional data being SHA-256 of the packet's type and every byte between the checksum and
// the sealed field. So an observer reads no token, nobody without the keys forges an Accepted or
// changes a field of either packet, and a response that opens proves the client holds the secret
// of its key (and, with a connect token, the token's client key).
// refused (5):            clientNonce 32 | reason 8 | retry 1
// server disconnect (7):  clientNonce 32 | reason 8 | disconnectToken 128 (server to client only:
//                         for a server that cannot seal, e.g. its match's loop stalled)
// clientKey, serverKey: X25519 public keys (the client's fresh for each attempt, the server's for
// its lifetime); both ends derive the connection's packet keys from them (packet-crypto.ts).
// A request is padded to at least the size of the answer it can cause, so a spoofed source
// address never gets more bytes sent to it than the attacker sent.

import { sha256 } from '@noble/hashes/sha2.js';
import { BitStream } from '../protocol/bitstream.ts';
import { PACKET_CHECKSUM_OFFSET, PacketType, packetChecksum, writePacketChecksum } from './channel.ts';
import { MAX_CONNECT_TOKEN_BYTES } from './connect-token.ts';
import {
  DISCONNECT_TOKEN_BYTES,
  NONCE_BYTES,
  PACKET_TAG_BYTES,
  type PacketCipher,
  PUBLIC_KEY_BYTES,
  writeHandshakeNonce,
} from './packet-crypto.ts';
import { MAX_PACKET_BYTES } from './transport.ts';

// The lifecycle's packet types: the same numbers as the channel's PacketType, by name.
export const PACKET_CONNECT_REQUEST = PacketType.ConnectRequest;
export const PACKET_CHALLENGE = PacketType.Challenge;
export const PACKET_CHALLENGE_RESPONSE = PacketType.ChallengeResponse;
export const PACKET_ACCEPTED = PacketType.Accepted;
export const PACKET_REFUSED = PacketType.Refused;
export const PACKET_DISCONNECT = PacketType.Disconnect;
/** The server's Disconnect proven by the connection's disconnect token instead of a seal. */
export const PACKET_SERVER_DISCONNECT = PacketType.Reserved;

/** Requests are padded to this many bytes (at least the size of any answer). */
export const REQUEST_BYTES = 64;

/** The longest lifecycle packet: a challenge response with the longest connect token. */
const HANDSHAKE_STREAM_BYTES = MAX_PACKET_BYTES;
/** Bytes of the sealed field of a challenge response or Accepted: the resume token and its tag. */
const SEALED_RESUME_BYTES = 8 + PACKET_TAG_BYTES;

// Why a connection was refused (1..15) or ended (16..31): one set of codes, disjoint, so a
// reason names itself wherever it travels.
export const REFUSE_SERVER_FULL = 1;
export const REFUSE_WRONG_VERSION = 2;
export const REFUSE_BANNED = 3;
/** The client was built against other entity or event tables (its schema hash differs). */
export const REFUSE_WRONG_SCHEMA = 5;
/** The server hosts no match of the id the client's route header named (src/net/match-route.ts). */
export const REFUSE_NO_SUCH_MATCH = 6;
/** The client asked to watch, and the server takes no spectators (final: a full one is REFUSE_SERVER_FULL). */
export const REFUSE_NO_SPECTATORS = 7;
/** The client's connect token has expired (final: ask the backend for a new one). */
export const REFUSE_TOKEN_EXPIRED = 8;
/** The server takes only connect tokens, and the client's is missing, forged, for another server or used (final). */
export const REFUSE_TOKEN_INVALID = 9;

export const DISCONNECT_CLIENT_LEFT = 16;
export const DISCONNECT_SERVER_SHUTDOWN = 17;
export const DISCONNECT_TIMED_OUT = 18;
export const DISCONNECT_KICKED = 19;
/** The match the client played in was ended by its host (the server process goes on). */
export const DISCONNECT_MATCH_ENDED = 20;
/** The match failed (its code threw, or its loop stalled) and was ended; the server process goes on. */
export const DISCONNECT_MATCH_FAILED = 21;

export const REASON_NAMES: Readonly<Record<number, string>> = {
  [REFUSE_SERVER_FULL]: 'server full',
  [REFUSE_WRONG_VERSION]: 'wrong protocol version',
  [REFUSE_BANNED]: 'banned',
  [REFUSE_WRONG_SCHEMA]: 'built against another game schema',
  [REFUSE_NO_SUCH_MATCH]: 'no such match',
  [REFUSE_NO_SPECTATORS]: 'takes no spectators',
  [REFUSE_TOKEN_EXPIRED]: 'connect token expired',
  [REFUSE_TOKEN_INVALID]: 'connect token refused',
  [DISCONNECT_CLIENT_LEFT]: 'client left',
  [DISCONNECT_SERVER_SHUTDOWN]: 'server shut down',
  [DISCONNECT_TIMED_OUT]: 'timed out',
  [DISCONNECT_KICKED]: 'kicked',
  [DISCONNECT_MATCH_ENDED]: 'match ended',
  [DISCONNECT_MATCH_FAILED]: 'match failed',
};

/** A reason's name, or 'reason N' for a code this build does not know. */
export function reasonName(reason: number): string {
  return REASON_NAMES[reason] ?? `reason ${reason}`;
}

export interface HandshakePacket {
  type: number;
  /** The sender's X25519 public key (request, response: the client's; challenge: the server's). */
  publicKey: Uint8Array;
  /** Refused: whether the refusal is transient (try again shortly) or final. */
  retry: boolean;
  /** Server disconnect: the connection's disconnect token. */
  token: Uint8Array;
  version: number;
  schemaHash: number;
  clientNonce: number;
  issuedAt: number;
  cookieHi: number;
  cookieLo: number;
  updateRate: number;
  rate: number;
  /** Challenge response: the client joins as a spectator (no player, no commands), watching this far behind. */
  spectator: boolean;
  spectatorDelayMs: number;
  slot: number;
  tickRate: number;
  serverTick: number;
  /** The player's resume token, two 32-bit halves (both 0: none); sealed on the wire. */
  resumeHi: number;
  resumeLo: number;
  reason: number;
  /** Challenge response: the connect token (its first `connectTokenLength` bytes; 0: none). */
  connectToken: Uint8Array;
  connectTokenLength: number;
  /** Challenge response, Accepted: the byte offset of the sealed field (set by write and read). */
  sealedOffset: number;
}

export function createHandshakePacket(): HandshakePacket {
  return {
    type: 0,
    publicKey: new Uint8Array(PUBLIC_KEY_BYTES),
    retry: false,
    token: new Uint8Array(DISCONNECT_TOKEN_BYTES),
    version: 0,
    schemaHash: 0,
    clientNonce: 0,
    issuedAt: 0,
    cookieHi: 0,
    cookieLo: 0,
    updateRate: 0,
    rate: 0,
    spectator: false,
    spectatorDelayMs: 0,
    slot: 0,
    tickRate: 0,
    serverTick: 0,
    resumeHi: 0,
    resumeLo: 0,
    reason: 0,
    connectToken: new Uint8Array(MAX_CONNECT_TOKEN_BYTES),
    connectTokenLength: 0,
    sealedOffset: 0,
  };
}

/** The sealed field: the resume token, then room for the tag (written zero; read and skipped). */
function serializeSealed(s: BitStream, p: HandshakePacket): void {
  // Every field before it is whole bytes: the field starts on a byte.
  p.sealedOffset = s.bytesProcessed;
  p.resumeHi = s.uint(p.resumeHi, 32);
  p.resumeLo = s.uint(p.resumeLo, 32);
  for (let i = 0; i < PACKET_TAG_BYTES; i++) s.uint(0, 8);
}

function serializeKey(s: BitStream, key: Uint8Array): void {
  for (let i = 0; i < PUBLIC_KEY_BYTES; i++) key[i] = s.uint(key[i], 8);
}

function serializeBody(s: BitStream, p: HandshakePacket): boolean {
  const lifecycle = p.type >= PACKET_CONNECT_REQUEST && p.type <= PACKET_REFUSED;
  if (!lifecycle && p.type !== PACKET_SERVER_DISCONNECT) return s.fail('not a lifecycle packet');
  p.clientNonce = s.uint(p.clientNonce, 32);
  switch (p.type) {
    case PACKET_CONNECT_REQUEST:
      p.version = s.uint(p.version, 32);
      p.schemaHash = s.uint(p.schemaHash, 32);
      serializeKey(s, p.publicKey);
      break;
    case PACKET_CHALLENGE:
    case PACKET_CHALLENGE_RESPONSE:
      p.issuedAt = s.uint(p.issuedAt, 32);
      p.cookieHi = s.uint(p.cookieHi, 32);
      p.cookieLo = s.uint(p.cookieLo, 32);
      if (p.type === PACKET_CHALLENGE_RESPONSE) {
        p.updateRate = s.int(p.updateRate, 1, 255);
        p.rate = s.uint(p.rate, 32);
        const role = s.uint(p.spectator ? 1 : 0, 8);
        if (role > 1) return s.fail('unknown role');
        p.spectator = role === 1;
        p.spectatorDelayMs = s.uint(p.spectatorDelayMs, 16);
      }
      serializeKey(s, p.publicKey);
      if (p.type === PACKET_CHALLENGE_RESPONSE) {
        const length = s.uint(p.connectTokenLength, 16);
        if (length > MAX_CONNECT_TOKEN_BYTES) return s.fail('connect token too long');
        p.connectTokenLength = length;
        const token = p.connectToken;
        for (let i = 0; i < length; i++) token[i] = s.uint(token[i], 8);
        serializeSealed(s, p);
      }
      break;
    case PACKET_ACCEPTED:
      p.slot = s.uint(p.slot, 16);
      p.tickRate = s.int(p.tickRate, 1, 255);
      p.serverTick = s.uint(p.serverTick, 32);
      serializeSealed(s, p);
      break;
    case PACKET_SERVER_DISCONNECT:
      p.reason = s.uint(p.reason, 8);
      for (let i = 0; i < DISCONNECT_TOKEN_BYTES; i++) p.token[i] = s.uint(p.token[i], 8);
      break;
    default:
      p.reason = s.uint(p.reason, 8);
      p.retry = s.bool(p.retry);
  }
  return s.ok;
}

/** Whether packets of `type` carry a sealed field (and need the connection's cipher to write or read). */
export function isSealedHandshake(type: number): boolean {
  return type === PACKET_CHALLENGE_RESPONSE || type === PACKET_ACCEPTED;
}

const sealNonce = new Uint8Array(NONCE_BYTES);
const sealAadInput = new Uint8Array(HANDSHAKE_STREAM_BYTES);
const sealPlain = new Uint8Array(HANDSHAKE_STREAM_BYTES);

/** The additional data of a sealed field: SHA-256 of the type byte and the bytes after the checksum up to the field. */
function sealAad(data: Uint8Array, sealedOffset: number): Uint8Array {
  sealAadInput[0] = data[0];
  const from = PACKET_CHECKSUM_OFFSET + 4;
  sealAadInput.set(data.subarray(from, sealedOffset), 1);
  return sha256(sealAadInput.subarray(0, 1 + sealedOffset - from));
}

/**
 * Writes a lifecycle packet into `s` (which must be fresh for writing) and returns its bytes (a
 * view of the stream's buffer, valid until the stream is reused). A challenge response or an
 * Accepted is sealed with `cipher` (the sender's direction of the new connection's keys); without
 * one its sealed field is left in clear with a zero tag, which no receiver opens (tools that forge
 * packets write them so).
 */
export function writeHandshakePacket(
  s: BitStream,
  protocolId: number,
  p: HandshakePacket,
  cipher: PacketCipher | null = null,
): Uint8Array {
  s.beginWrite(HANDSHAKE_STREAM_BYTES);
  s.uint(p.type, 8);
  s.uint(0, 32);
  serializeBody(s, p);
  const padded = p.type === PACKET_CONNECT_REQUEST || p.type === PACKET_CHALLENGE_RESPONSE;
  const length = padded ? Math.max(REQUEST_BYTES, s.bytesProcessed) : s.bytesProcessed;
  if (isSealedHandshake(p.type) && cipher !== null) {
    const at = p.sealedOffset;
    writeHandshakeNonce(sealNonce, p.issuedAt, p.cookieHi, p.cookieLo);
    cipher.seal(sealNonce, sealAad(s.buffer, at), s.buffer, at, at + 8, s.buffer);
  }
  writePacketChecksum(protocolId, s.buffer, length);
  return s.buffer.subarray(0, length);
}

/**
 * Opens the sealed field of a challenge response or Accepted that `readHandshakePacket` read from
 * `data` into `p`, with the receiver's direction of the keys and the challenge's issuedAt and
 * cookie (for Accepted, the client's own). True: authentic, and `p.resumeHi/Lo` hold the token.
 * False: forged or altered (`p` is then unspecified). Never throws.
 */
export function openHandshakePacket(
  data: Uint8Array,
  p: HandshakePacket,
  cipher: PacketCipher,
  issuedAt: number,
  cookieHi: number,
  cookieLo: number,
): boolean {
  const at = p.sealedOffset;
  if (!isSealedHandshake(p.type) || at < PACKET_CHECKSUM_OFFSET + 4 || at + SEALED_RESUME_BYTES > data.length)
    return false;
  writeHandshakeNonce(sealNonce, issuedAt, cookieHi, cookieLo);
  if (!cipher.open(sealNonce, sealAad(data, at), data, at, at + SEALED_RESUME_BYTES, sealPlain)) return false;
  p.resumeHi =
    (sealPlain[at] | (sealPlain[at + 1] << 8) | (sealPlain[at + 2] << 16) | (sealPlain[at + 3] << 24)) >>> 0;
  p.resumeLo =
    (sealPlain[at + 4] | (sealPlain[at + 5] << 8) | (sealPlain[at + 6] << 16) | (sealPlain[at + 7] << 24)) >>>
    0;
  return true;
}

/**
 * The packet type of any Backstep packet, or -1 if too short: PacketType.Data or Disconnect for
 * connected packets (the low 3 bits of a sealed header's prefix, whose other bits are its forms),
 * else the first byte (a lifecycle type, or anything else, which no layer takes).
 */
export function peekPacketType(data: Uint8Array): number {
  if (data.length < 1) return -1;
  const type = data[0] & 7;
  return type === PacketType.Data || type === PacketType.Disconnect ? type : data[0];
}

/**
 * Reads a lifecycle packet. Returns an error reason ('' when valid); `p` is filled only when
 * valid. A request shorter than REQUEST_BYTES is refused (anti-amplification).
 */
export function readHandshakePacket(
  s: BitStream,
  protocolId: number,
  data: Uint8Array,
  p: HandshakePacket,
): string {
  if (data.length < 9) return 'truncated';
  if (data.length > HANDSHAKE_STREAM_BYTES) return 'oversized';
  const o = PACKET_CHECKSUM_OFFSET;
  const sum = (data[o] | (data[o + 1] << 8) | (data[o + 2] << 16) | (data[o + 3] << 24)) >>> 0;
  if (sum !== packetChecksum(protocolId, data, data.length)) return 'checksum';
  s.beginRead(data);
  p.type = s.uint(0, 8);
  s.uint(0, 32);
  if (!serializeBody(s, p)) return 'malformed';
  if (
    (p.type === PACKET_CONNECT_REQUEST || p.type === PACKET_CHALLENGE_RESPONSE) &&
    data.length < REQUEST_BYTES
  ) {
    return 'unpadded request';
  }
  return '';
}

/** A stream sized for lifecycle packets. */
export function createHandshakeStream(): BitStream {
  return new BitStream(HANDSHAKE_STREAM_BYTES);
}
