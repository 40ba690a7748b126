// The client's connection layer: one attempt to connect to a server (connect request, challenge
// with key agreement, response, accepted or refused; a transient refusal starts over), then the
// sealed packet channel of the connection and its timeout. It reports the connection, each
// payload and the end to the game loop above it; a new attempt is a new object, so nothing of an
// earlier connection survives.

import type { BitStream } from '../protocol/bitstream.ts';
import { PacketChannel, PacketType } from './channel.ts';
import type { ConnectToken } from './connect-token.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_CLIENT_LEFT,
  openHandshakePacket,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  PACKET_REFUSED,
  PACKET_SERVER_DISCONNECT,
  peekPacketType,
  readHandshakePacket,
  writeHandshakePacket,
} from './handshake.ts';
import {
  type ClientKeyPair,
  clientPacketKeys,
  createClientKeyPair,
  type PacketCipher,
  type PacketKeys,
} from './packet-crypto.ts';
import { PairArrivals } from './packet-pair.ts';
import type { DatagramEndpoint } from './transport.ts';

export interface ClientConnectionConfig {
  protocolId: number;
  protocolVersion: number;
  /** The client's game schema hash (refused by a server built against other tables). */
  schemaHash: number;
  /** Snapshots per second and bytes per second asked of the server. */
  updateRate: number;
  rateBytesPerSecond: number;
  /** Connection attempts are resent this often until answered. */
  connectRetryMs: number;
  /** Give up connecting after this long. */
  connectTimeoutMs: number;
  /** The server silent this long means the connection is gone. */
  timeoutMs: number;
  /**
   * The resume token of a player this client had on the server (from an earlier connection's
   * `resumeToken`): within the server's grace period it gets that slot and player back. Both
   * halves 0 (the default): a new player.
   */
  resumeHi?: number;
  resumeLo?: number;
  /** Join as a spectator watching this far behind (ms, 0..65535); absent or -1: as a player. */
  spectatorDelayMs?: number;
  /**
   * The server's X25519 public key, when known in advance (from a backend over HTTPS, say): a
   * challenge carrying another key is ignored, so nobody on the path can stand in for the server.
   */
  serverPublicKey?: Uint8Array;
  /**
   * A connect token from the game's backend (connect-token.ts), for a server that takes only
   * those: sent in the challenge response, its client key mixed into the connection's keys.
   */
  connectToken?: ConnectToken;
  /** Makes each direction's packet cipher from its key (default: nobleCipher). */
  packetCipher?: (key: Uint8Array) => PacketCipher;
}

export type ConnectionState =
  | 'connecting'
  | 'challenged'
  | 'connected'
  | 'refused'
  | 'timed out'
  | 'disconnected';

/** The game loop above: told when the connection is made, of each payload, and when it ends. */
export interface ClientConnectionHandler {
  connected(slot: number, tickRate: number, serverTick: number): void;
  /** A data packet's payload (at least a byte: keepalives are not reported). */
  payload(stream: BitStream): void;
  /** The connection ended: refused, timed out or disconnected, with the reason code (0: timed out). */
  ended(state: ConnectionState, reason: number): void;
}

/** One connection to one server, from the first connect request to its end. */
export class ClientConnection {
  readonly config: ClientConnectionConfig;
  state: ConnectionState = 'connecting';
  /** Slot the server gave this client (-1 until accepted). */
  slot = -1;
  tickRate = 0;
  /** The reason code the connection ended with (refused or disconnected). */
  endReason = 0;
  /** The packet channel, once connected. */
  channel: PacketChannel | null = null;
  /** The player's resume token the server gave in Accepted (both 0 until then, or none). */
  readonly resumeToken = { hi: 0, lo: 0 };
  readonly nonce: number;
  /** Transient refusals (server full) this attempt waited out and retried. */
  retries = 0;
  /**
   * When its packets arrived, and the packet-pair gaps to report to the server (packet-pair.ts).
   * @internal
   */
  readonly pairs = new PairArrivals();

  private readonly endpoint: DatagramEndpoint;
  private readonly serverAddress: string;
  private readonly handler: ClientConnectionHandler;
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly cookie = { issuedAt: 0, hi: 0, lo: 0 };
  private readonly keyPair: ClientKeyPair = createClientKeyPair();
  private keys: PacketKeys | null = null;
  /** The reason of the latest transient refusal (0: none). */
  private lastRefusal = 0;
  private readonly startMs: number;
  private lastSendMs = -Infinity;
  /** Set in the constructor; a double from the start (declared bare, V8 would box each time stored). */
  private nowMs = 0.5;

  constructor(
    endpoint: DatagramEndpoint,
    serverAddress: string,
    config: ClientConnectionConfig,
    nonce: number,
    nowMs: number,
    handler: ClientConnectionHandler,
  ) {
    this.endpoint = endpoint;
    this.serverAddress = serverAddress;
    this.config = config;
    this.nonce = nonce;
    this.startMs = nowMs;
    this.nowMs = nowMs;
    this.handler = handler;
  }

  get isConnected(): boolean {
    return this.state === 'connected';
  }

  /**
   * Moves the connection's clock to `nowMs` without doing anything else: the caller does so
   * before reading the packets that arrived by then, so that they are stamped with the time they
   * were read (a round-trip sample taken with the previous frame's time reads a frame short).
   */
  advance(nowMs: number): void {
    if (nowMs > this.nowMs) this.nowMs = nowMs;
  }

  /** Resends handshake packets that are due and checks timeouts, at `nowMs`. */
  update(nowMs: number): void {
    this.advance(nowMs);
    if (this.state === 'connecting' || this.state === 'challenged') {
      if (this.nowMs - this.startMs > this.config.connectTimeoutMs) {
        // Still refused when time ran out (server full): give up with that reason.
        if (this.lastRefusal !== 0) this.end('refused', this.lastRefusal);
        else this.end('timed out', 0);
        return;
      }
      if (this.nowMs - this.lastSendMs < this.config.connectRetryMs) return;
      this.lastSendMs = this.nowMs;
      this.sendHandshake(this.state === 'connecting' ? PACKET_CONNECT_REQUEST : PACKET_CHALLENGE_RESPONSE);
      return;
    }
    const channel = this.channel;
    if (this.state !== 'connected' || channel === null) return;
    if (this.nowMs - channel.lastReceivedMs > this.config.timeoutMs) {
      this.end('timed out', 0);
      return;
    }
    channel.update(this.nowMs);
  }

  /** Handles one packet from the endpoint; packets from anyone but the server are ignored. */
  receive(from: string, data: Uint8Array): void {
    if (from !== this.serverAddress) return;
    const type = peekPacketType(data);
    if (type === PacketType.Data || type === PacketType.Disconnect) {
      const channel = this.channel;
      if (this.state !== 'connected' || channel === null) return;
      const s = channel.receive(this.nowMs, data);
      if (channel.peerDisconnectReason !== 0) {
        this.end('disconnected', channel.peerDisconnectReason);
        return;
      }
      // Null: dropped and counted by the channel. Under a byte of payload: a keepalive.
      if (s === null) return;
      const payload = s.bitsRemaining >= 8;
      this.pairs.arrived(channel.lastReceivedSequence, this.nowMs, payload);
      if (payload) this.handler.payload(s);
      return;
    }
    if (readHandshakePacket(this.hsStream, this.config.protocolId, data, this.hs) !== '') return;
    const p = this.hs;
    if (p.clientNonce !== this.nonce) return;
    switch (p.type) {
      case PACKET_CHALLENGE: {
        if (this.state !== 'connecting') return;
        const pinned = this.config.serverPublicKey;
        if (pinned !== undefined && !equalBytes(pinned, p.publicKey)) return;
        const keys = clientPacketKeys(
          this.keyPair,
          p.publicKey,
          this.config.protocolId,
          this.nonce,
          this.config.connectToken?.clientKey ?? null,
          this.config.packetCipher,
        );
        if (keys === null) return;
        this.keys = keys;
        this.cookie.issuedAt = p.issuedAt;
        this.cookie.hi = p.cookieHi;
        this.cookie.lo = p.cookieLo;
        this.state = 'challenged';
        this.lastSendMs = -Infinity;
        this.update(this.nowMs);
        return;
      }
      case PACKET_ACCEPTED:
        if (this.state !== 'challenged' || this.keys === null) return;
        // Sealed with the new connection's server-to-client key: nobody else can make one.
        if (
          !openHandshakePacket(
            data,
            p,
            this.keys.receive,
            this.cookie.issuedAt,
            this.cookie.hi,
            this.cookie.lo,
          )
        )
          return;
        this.slot = p.slot;
        this.tickRate = p.tickRate;
        this.resumeToken.hi = p.resumeHi;
        this.resumeToken.lo = p.resumeLo;
        this.state = 'connected';
        this.channel = new PacketChannel(
          (bytes) => this.endpoint.send(this.serverAddress, bytes),
          { protocolId: this.config.protocolId },
          this.keys,
        );
        this.channel.lastReceivedMs = this.nowMs;
        this.handler.connected(p.slot, p.tickRate, p.serverTick);
        return;
      case PACKET_REFUSED:
        if (this.state !== 'connecting' && this.state !== 'challenged') return;
        if (p.retry && this.nowMs - this.startMs < this.config.connectTimeoutMs) {
          // Transient (the server is full right now): start over after the retry interval.
          this.retries++;
          this.lastRefusal = p.reason;
          this.state = 'connecting';
          this.keys = null;
          this.lastSendMs = this.nowMs;
          return;
        }
        this.end('refused', p.reason);
        return;
      case PACKET_SERVER_DISCONNECT:
        if (
          this.state === 'connected' &&
          this.keys !== null &&
          equalBytes(p.token, this.keys.disconnectToken)
        )
          this.end('disconnected', p.reason);
        return;
    }
  }

  /** Tells the server this client is leaving (three sealed copies) and ends the connection. */
  disconnect(): void {
    const channel = this.channel;
    if (this.state === 'connected' && channel !== null) {
      for (let i = 0; i < 3; i++) channel.sendDisconnect(this.nowMs, DISCONNECT_CLIENT_LEFT);
    }
    this.state = 'disconnected';
  }

  private end(state: ConnectionState, reason: number): void {
    this.state = state;
    this.endReason = reason;
    this.handler.ended(state, reason);
  }

  private sendHandshake(type: number): void {
    const p = this.hs;
    const c = this.config;
    p.type = type;
    p.clientNonce = this.nonce;
    p.version = c.protocolVersion;
    p.schemaHash = c.schemaHash;
    p.issuedAt = this.cookie.issuedAt;
    p.cookieHi = this.cookie.hi;
    p.cookieLo = this.cookie.lo;
    p.updateRate = c.updateRate;
    p.rate = c.rateBytesPerSecond;
    p.resumeHi = c.resumeHi ?? 0;
    p.resumeLo = c.resumeLo ?? 0;
    const delay = c.spectatorDelayMs ?? -1;
    p.spectator = delay >= 0;
    p.spectatorDelayMs = delay >= 0 ? Math.min(65535, Math.round(delay)) : 0;
    p.publicKey.set(this.keyPair.publicKey);
    const token = c.connectToken?.token;
    p.connectTokenLength = token === undefined ? 0 : token.length;
    if (token !== undefined) p.connectToken.set(token);
    const cipher = type === PACKET_CHALLENGE_RESPONSE ? (this.keys?.send ?? null) : null;
    this.endpoint.send(this.serverAddress, writeHandshakePacket(this.hsStream, c.protocolId, p, cipher));
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}
