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
//                         | resumeToken 64 | role 8 | spectatorDelayMs 16 | clientKey 256
//                         | zero padding to REQUEST_BYTES
// accepted (4):           clientNonce 32 | slot 16 | tickRate 8 | serverTick 32 | resumeToken 64
// The resume token (0: none) is the server's for one player: a client that comes back with it
// within the server's grace period takes its slot and player back.
// refused (5):            clientNonce 32 | reason 8 | retry 1
// server disconnect (7):  clientNonce 32 | reason 8 | disconnectToken 128 (server to client only:
//                         for a server that cannot seal, e.g. its match's loop stalled)
// clientKey, serverKey: X25519 public keys (the client's fresh for each attempt, the server's for
// its lifetime); both ends derive the connection's packet keys from them (packet-crypto.ts).
// A request is padded to at least the size of the answer it can cause, so a spoofed source
// address never gets more bytes sent to it than the attacker sent.

import { BitStream } from '../protocol/bitstream.ts';
import { PACKET_CHECKSUM_OFFSET, PacketType, packetChecksum, writePacketChecksum } from './channel.ts';
import { DISCONNECT_TOKEN_BYTES, PUBLIC_KEY_BYTES } from './packet-crypto.ts';

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

const HANDSHAKE_STREAM_BYTES = REQUEST_BYTES + 16;

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
  /** The player's resume token, two 32-bit halves (both 0: none). */
  resumeHi: number;
  resumeLo: number;
  reason: number;
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
  };
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
        p.resumeHi = s.uint(p.resumeHi, 32);
        p.resumeLo = s.uint(p.resumeLo, 32);
        // In the padding: a client that predates spectators sends zeros (a player).
        const role = s.uint(p.spectator ? 1 : 0, 8);
        if (role > 1) return s.fail('unknown role');
        p.spectator = role === 1;
        p.spectatorDelayMs = s.uint(p.spectatorDelayMs, 16);
      }
      serializeKey(s, p.publicKey);
      break;
    case PACKET_ACCEPTED:
      p.slot = s.uint(p.slot, 16);
      p.tickRate = s.int(p.tickRate, 1, 255);
      p.serverTick = s.uint(p.serverTick, 32);
      p.resumeHi = s.uint(p.resumeHi, 32);
      p.resumeLo = s.uint(p.resumeLo, 32);
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

/**
 * Writes a lifecycle packet into `s` (which must be fresh for writing) and returns its bytes (a
 * view of the stream's buffer, valid until the stream is reused).
 */
export function writeHandshakePacket(s: BitStream, protocolId: number, p: HandshakePacket): Uint8Array {
  s.beginWrite(HANDSHAKE_STREAM_BYTES);
  s.uint(p.type, 8);
  s.uint(0, 32);
  serializeBody(s, p);
  const padded = p.type === PACKET_CONNECT_REQUEST || p.type === PACKET_CHALLENGE_RESPONSE;
  const length = padded ? Math.max(REQUEST_BYTES, s.bytesProcessed) : s.bytesProcessed;
  writePacketChecksum(protocolId, s.buffer, length);
  return s.buffer.subarray(0, length);
}

/** The packet type byte of any Backstep packet (PacketType.Data for connected data), or -1 if too short. */
export function peekPacketType(data: Uint8Array): number {
  return data.length < 1 ? -1 : data[0];
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
