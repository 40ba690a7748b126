// The server's connection layer: the handshake with challenge cookies and key agreement,
// refusals, bans, the server-wide challenge allowance, per-connection packet allowances, timeouts
// and authenticated disconnects. It owns one sealed packet channel per connected slot and reports
// connect, payload and disconnect by slot to the game loop above it; it knows nothing of games.

import type { BitStream } from '../protocol/bitstream.ts';
import { Allowance, addressHash, addressSlot, addressTag } from './allowance.ts';
import { PacketChannel, type PacketChannelConfig, PacketType, resolveChannelConfig } from './channel.ts';
import { ConnectTokenGate, type ConnectTokensConfig, type OpenedConnectToken } from './connect-token.ts';
import { CookieJar } from './cookie.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_CLIENT_LEFT,
  DISCONNECT_KICKED,
  DISCONNECT_SERVER_SHUTDOWN,
  DISCONNECT_TIMED_OUT,
  openHandshakePacket,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  PACKET_REFUSED,
  peekPacketType,
  REFUSE_BANNED,
  REFUSE_SERVER_FULL,
  REFUSE_TOKEN_EXPIRED,
  REFUSE_TOKEN_INVALID,
  REFUSE_WRONG_SCHEMA,
  REFUSE_WRONG_VERSION,
  readHandshakePacket,
  writeHandshakePacket,
} from './handshake.ts';
import { ServerKeyExchange } from './node-packet-crypto.ts';
import type { PacketKeys } from './packet-crypto.ts';
import type { DatagramEndpoint } from './transport.ts';

export interface ServerConnectionsConfig {
  maxClients: number;
  /** The game loop's ticks per second, told to each client it accepts. */
  tickRate: number;
  /** Packets of another protocol id are rejected by checksum. */
  protocolId: number;
  /** Clients of another version are refused with a reason. */
  protocolVersion: number;
  /** Clients whose game schema hashes differently are refused with a reason. */
  schemaHash: number;
  /** A client silent this long is disconnected. */
  timeoutMs: number;
  /** A challenge cookie is honoured for this long. */
  cookieLifetimeMs: number;
  /**
   * Challenges (each a keyed hash and a packet) the whole server sends per second, whatever the
   * source addresses: a flood of connect requests from spoofed addresses costs at most this much.
   * Past it, an address that asked within the last two seconds (a client retrying) is still
   * answered, from a second allowance of the same size. A challenge response is always checked:
   * a client that returns a valid cookie has proved its address and is refused for no rate but
   * maxKeyExchangesPerSecond's.
   */
  maxHandshakesPerSecond: number;
  /**
   * Key agreements (an X25519 and a key derivation, about a hundred times a cookie's keyed hash;
   * with connect tokens, the token's open too) the whole server makes per second for challenge
   * responses with valid cookies, bursts up to a second's worth; and each address at most one
   * every KEY_EXCHANGE_GAP_MS. A response past either is dropped ('key exchange rate') before
   * any of it: its client sends it again.
   */
  maxKeyExchangesPerSecond: number;
  /** Data packets per second one connection may send (bursts up to a second's worth); the rest are dropped and counted. */
  maxPacketsPerSecond: number;
  /** Secret for challenge cookies (random when omitted). */
  cookieSecret?: Uint8Array;
  /** The server's X25519 secret key, 32 bytes (ServerConfig.secretKey; a fresh one when omitted). */
  secretKey?: Uint8Array;
  /**
   * Connect tokens (off when absent): the server then takes only clients presenting a token its
   * backend issued (connect-token.ts) for this server, unexpired and not used from another
   * address; each refusal is counted by reason ('token expired', 'token forged', ...).
   */
  connectTokens?: ConnectTokensConfig;
}

/** What the connection layer counts: refused and rejected packets by reason, connects, disconnects. */
export interface ConnectionStats {
  /** Packets from unknown addresses that were not valid lifecycle packets, by reason. */
  rejected: Record<string, number>;
  connects: number;
  disconnects: number;
}

/**
 * Every datagram the connection layer took and what became of it, so that none goes uncounted:
 * `datagrams` equals the sum of `ConnectionStats.rejected`, `answered` and `data`.
 */
export interface TrafficStats {
  datagrams: number;
  /** Lifecycle packets acted on, by outcome: 'challenge', 'refused', 'accepted', 'accepted again'. */
  answered: Record<string, number>;
  /**
   * Packets from connected addresses, by what their channel made of them: 'accepted', 'disconnect'
   * (an authentic Disconnect), or the channel's drop reason ('forged', 'duplicate', ...).
   */
  data: Record<string, number>;
}

/** One connected client as the connection layer sees it. */
export class ServerConnection {
  readonly slot: number;
  readonly address: string;
  readonly nonce: number;
  readonly channel: PacketChannel;
  /** Snapshots per second and bytes per second the client asked for in its challenge response. */
  readonly requestedUpdateRate: number;
  readonly requestedRateBytesPerSecond: number;
  /** The client asked to watch as a spectator (no player, no commands), this far behind (ms); -1: a player. */
  readonly spectatorDelayMs: number;
  /** Packets dropped for coming faster than maxPacketsPerSecond. */
  packetsThrottled = 0;
  /** The client's X25519 public key (a repeated challenge response must carry the same). */
  readonly publicKey: Uint8Array;
  /** The secret that proves a PACKET_SERVER_DISCONNECT to this client (see PacketKeys). */
  readonly disconnectToken: Uint8Array;
  /** Data packets this connection may still send before its allowance refills. */
  packetAllowance: number;
  /** The user its connect token named (null: the server takes no tokens). */
  userId: string | null = null;
  /** What the backend put in the token for the game (null: no token). */
  userData: Uint8Array | null = null;
  /** The connection's packet keys (Accepted is sealed with them). */
  keys: PacketKeys | null = null;
  /** The challenge it answered (issuedAt and cookie): the nonce of Accepted's sealed field. */
  readonly challenge = { issuedAt: 0, hi: 0, lo: 0 };
  /** The server tick told in its Accepted (a resent Accepted is the same packet). */
  acceptedTick = 0;

  constructor(
    slot: number,
    address: string,
    nonce: number,
    channel: PacketChannel,
    updateRate: number,
    rate: number,
    allowance: number,
    publicKey: Uint8Array,
    disconnectToken: Uint8Array,
    spectatorDelayMs = -1,
  ) {
    this.slot = slot;
    this.publicKey = publicKey;
    this.disconnectToken = disconnectToken;
    this.address = address;
    this.nonce = nonce;
    this.channel = channel;
    this.requestedUpdateRate = updateRate;
    this.requestedRateBytesPerSecond = rate;
    this.spectatorDelayMs = spectatorDelayMs;
    this.packetAllowance = allowance;
  }
}

/** The game loop above the connection layer: told of every connect, payload and disconnect. */
export interface ConnectionHandler {
  /**
   * A client proved its address and has a free slot: return 0 to take it, or a refusal reason
   * (the connection is then refused and forgotten).
   */
  accept(connection: ServerConnection): number;
  /** A data packet's payload (at least a byte: keepalives go to `keepalive`). */
  payload(connection: ServerConnection, stream: BitStream): void;
  /**
   * An authentic packet with no payload (a keepalive): what it acknowledged is the channel's
   * (`lastReceivedSequence`, `lastReceivedAck`). Spends no packet allowance.
   */
  keepalive?(connection: ServerConnection): void;
  /** The connection ended (the slot is already free); `reason` is a DISCONNECT_* code. */
  disconnected(connection: ServerConnection, reason: number): void;
}

/** Slots of the table of recent requesters (hashes of addresses that asked lately). */
const REQUESTER_SLOTS = 65536;
/** A requester asking again within this long counts as a client retrying. */
const RETRY_WINDOW_MS = 2000;
/**
 * The retry allowance answers one address at most this often, so a flood from one real address
 * (which repeats, like a retrying client) cannot spend it.
 */
const RETRY_ANSWER_GAP_MS = 100;
/**
 * One address gets a key agreement at most this often: a valid cookie, replayed with its sealed
 * field garbled, would otherwise cost one each time until the cookie expires.
 */
const KEY_EXCHANGE_GAP_MS = 100;

/** Every connection of one server: the handshake in front, a channel per slot behind. */
export class ServerConnections {
  readonly config: ServerConnectionsConfig;
  readonly stats: ConnectionStats;
  /** Connections by slot (null: free). */
  readonly slots: (ServerConnection | null)[];
  /**
   * Refused with REFUSE_BANNED: exact addresses, an address without its port ("udp:203.0.113.9"
   * bans every port of that host), or a host as the transport names it (`hostOf`).
   */
  readonly banned = new Set<string>();
  /** The game loop's newest tick, told to each client it accepts. */
  serverTick = 0;
  readonly traffic: TrafficStats = { datagrams: 0, answered: {}, data: {} };
  /**
   * Slots the game loop holds for a player whose client may come back (1: reserved): no new
   * client gets them; a client presenting the slot's resume token does.
   */
  readonly reserved: Uint8Array;
  /**
   * Each slot's resume token (two 32-bit halves at 2 * slot), drawn from a cryptographic source
   * at every accept and told to the client in Accepted. A client whose challenge response carries
   * the token of a reserved or connected slot takes that slot (the old connection, if any, is
   * forgotten without a `disconnected` call: the game loop sees its accept on an occupied slot).
   */
  readonly resumeTokens: Uint32Array;
  /**
   * Connect tokens: null when the server takes anyone.
   * @internal
   */
  readonly tokens: ConnectTokenGate | null;

  private readonly endpoint: DatagramEndpoint;
  private readonly handler: ConnectionHandler;
  private readonly byAddress = new Map<string, ServerConnection>();
  private readonly cookies: CookieJar;
  private readonly keyExchange: ServerKeyExchange;
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly cookie = { hi: 0, lo: 0 };
  /** The lifecycle datagram being handled (its sealed field is opened from it). */
  private hsData: Uint8Array = new Uint8Array(0);
  /** The user each slot was last given to (a resume token takes a slot back only for the same user). */
  private readonly slotUsers: (string | null)[];
  /** Recent requesters: a 32-bit hash of the address and when it last asked, per slot. */
  private readonly requesterHash = new Int32Array(REQUESTER_SLOTS);
  private readonly requesterMs = new Float64Array(REQUESTER_SLOTS).fill(Number.NEGATIVE_INFINITY);
  /** When each requester was last answered: the retry allowance answers one at most every RETRY_ANSWER_GAP_MS. */
  private readonly answeredMs = new Float64Array(REQUESTER_SLOTS).fill(Number.NEGATIVE_INFINITY);
  private handshakeAllowance: number;
  private retryAllowance: number;
  private handshakeRefillMs = 0;
  /** Key agreements left this second, and when each address (by its requester slot and hash) last had one. */
  private readonly keyAllowance: Allowance;
  private readonly keyedHash = new Int32Array(REQUESTER_SLOTS);
  private readonly keyedMs = new Float64Array(REQUESTER_SLOTS).fill(Number.NEGATIVE_INFINITY);
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array) => this.handle(from, data);
  /** Every connection's channel configuration: one object for all (see resolveChannelConfig). */
  private readonly channelConfig: Readonly<PacketChannelConfig>;

  /** `stats` is filled in place (the game loop may share it with its own figures). */
  constructor(
    endpoint: DatagramEndpoint,
    config: ServerConnectionsConfig,
    handler: ConnectionHandler,
    stats: ConnectionStats = { rejected: {}, connects: 0, disconnects: 0 },
  ) {
    validateConnectionsConfig(config);
    this.config = config;
    this.endpoint = endpoint;
    this.handler = handler;
    this.stats = stats;
    this.slots = new Array(config.maxClients).fill(null);
    this.reserved = new Uint8Array(config.maxClients);
    this.resumeTokens = new Uint32Array(2 * config.maxClients);
    this.slotUsers = new Array(config.maxClients).fill(null);
    this.tokens =
      config.connectTokens === undefined
        ? null
        : new ConnectTokenGate({ ...config.connectTokens, protocolId: config.protocolId });
    this.cookies = new CookieJar(config.cookieSecret);
    this.keyExchange = new ServerKeyExchange(config.secretKey);
    this.handshakeAllowance = config.maxHandshakesPerSecond;
    this.retryAllowance = config.maxHandshakesPerSecond;
    this.keyAllowance = new Allowance(config.maxKeyExchangesPerSecond);
    this.channelConfig = resolveChannelConfig({ protocolId: config.protocolId });
  }

  /** The server's X25519 public key (a backend may hand it to clients to pin: ClientConfig.serverPublicKey). */
  get publicKey(): Uint8Array {
    return this.keyExchange.publicKey;
  }

  get count(): number {
    return this.byAddress.size;
  }

  /** Reads every packet waiting at `nowMs`: lifecycle packets here, payloads to the handler. */
  receive(nowMs: number): void {
    if (nowMs > this.nowMs) this.nowMs = nowMs;
    this.endpoint.poll(this.nowMs, this.onPacket);
  }

  /**
   * Real time `elapsedMs` passed (a server tick): refills each connection's packet allowance and
   * disconnects any silent for longer than timeoutMs.
   */
  advance(nowMs: number, elapsedMs: number): void {
    if (nowMs > this.nowMs) this.nowMs = nowMs;
    const perSecond = this.config.maxPacketsPerSecond;
    const refill = (perSecond * elapsedMs) / 1000;
    for (const c of this.slots) {
      if (c === null) continue;
      if (this.nowMs - c.channel.lastReceivedMs > this.config.timeoutMs) {
        this.disconnect(c, DISCONNECT_TIMED_OUT);
        continue;
      }
      c.packetAllowance = Math.min(perSecond, c.packetAllowance + refill);
    }
  }

  /** Ends a connection, telling the client why (three sealed copies, since packets may be lost). */
  disconnect(connection: ServerConnection, reason: number): void {
    if (this.slots[connection.slot] !== connection) return;
    for (let i = 0; i < 3; i++) connection.channel.sendDisconnect(this.nowMs, reason);
    this.slots[connection.slot] = null;
    this.byAddress.delete(connection.address);
    this.endpoint.drop?.(connection.address);
    this.stats.disconnects++;
    this.handler.disconnected(connection, reason);
  }

  /** Disconnects everyone (server shutdown) and closes the endpoint. */
  close(): void | Promise<void> {
    for (const c of this.slots) if (c !== null) this.disconnect(c, DISCONNECT_SERVER_SHUTDOWN);
    return this.endpoint.close();
  }

  /** Bans an address (or a host: an address without its port) and disconnects whoever matches. */
  ban(address: string): void {
    this.banned.add(address);
    for (const c of this.slots)
      if (c !== null && this.isBanned(c.address)) this.disconnect(c, DISCONNECT_KICKED);
  }

  isBanned(address: string): boolean {
    if (this.banned.size === 0) return false;
    if (this.banned.has(address)) return true;
    const host = this.endpoint.hostOf?.(address);
    if (host !== undefined && host !== null && this.banned.has(host)) return true;
    const port = address.lastIndexOf(':');
    return port > 0 && this.banned.has(address.slice(0, port));
  }

  private handle(from: string, data: Uint8Array): void {
    this.traffic.datagrams++;
    const connection = this.byAddress.get(from);
    const type = peekPacketType(data);
    if (connection !== undefined && (type === PacketType.Data || type === PacketType.Disconnect)) {
      this.receiveData(connection, data);
      return;
    }
    if (type < PACKET_CONNECT_REQUEST || type > PACKET_REFUSED) {
      this.reject(connection === undefined ? 'unknown address' : 'bad type');
      return;
    }
    // Under a flood most connect requests go unanswered: the allowance is taken before the
    // checksum and the parse, so a dropped one costs an address hash and nothing more. (A
    // garbled request that takes an allowance spends no more than a well-formed one would.)
    if (connection === undefined && type === PACKET_CONNECT_REQUEST && !this.allowChallenge(from)) return;
    const error = readHandshakePacket(this.hsStream, this.config.protocolId, data, this.hs);
    this.hsData = data;
    if (error !== '') {
      this.reject(error);
      return;
    }
    const p = this.hs;
    if (connection !== undefined) {
      if (p.clientNonce !== connection.nonce) this.reject('wrong nonce');
      else if (p.type === PACKET_CHALLENGE_RESPONSE && sameKey(p.publicKey, connection.publicKey)) {
        this.tally(this.traffic.answered, 'accepted again');
        this.sendAccepted(connection);
      } else this.reject('lifecycle packet while connected');
      return;
    }
    if (p.type === PACKET_CONNECT_REQUEST) this.onConnectRequest(from);
    else if (p.type === PACKET_CHALLENGE_RESPONSE) this.onChallengeResponse(from);
    else this.reject('unexpected lifecycle packet');
  }

  private tally(counters: Record<string, number>, outcome: string): void {
    counters[outcome] = (counters[outcome] ?? 0) + 1;
  }

  private reject(reason: string): void {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
  }

  /**
   * Takes one challenge from the server-wide allowance; when it is spent, an address that asked
   * within RETRY_WINDOW_MS (a client retrying: a spoofed flood rarely repeats an address) and was
   * not answered within RETRY_ANSWER_GAP_MS takes one from the retry allowance. False (and
   * counted) when neither has any.
   */
  private allowChallenge(address: string): boolean {
    const perSecond = this.config.maxHandshakesPerSecond;
    const refill = ((this.nowMs - this.handshakeRefillMs) * perSecond) / 1000;
    this.handshakeAllowance = Math.min(perSecond, this.handshakeAllowance + refill);
    this.retryAllowance = Math.min(perSecond, this.retryAllowance + refill);
    this.handshakeRefillMs = this.nowMs;
    const h = addressHash(address);
    const slot = addressSlot(h, REQUESTER_SLOTS);
    const tag = addressTag(h);
    const known = this.requesterHash[slot] === tag;
    const retrying = known && this.nowMs - this.requesterMs[slot] <= RETRY_WINDOW_MS;
    if (!known) this.answeredMs[slot] = Number.NEGATIVE_INFINITY;
    this.requesterHash[slot] = tag;
    this.requesterMs[slot] = this.nowMs;
    if (this.handshakeAllowance >= 1) {
      this.handshakeAllowance--;
      this.answeredMs[slot] = this.nowMs;
      return true;
    }
    if (retrying && this.retryAllowance >= 1 && this.nowMs - this.answeredMs[slot] >= RETRY_ANSWER_GAP_MS) {
      this.retryAllowance--;
      this.answeredMs[slot] = this.nowMs;
      return true;
    }
    this.reject('handshake rate');
    return false;
  }

  /**
   * Takes a key agreement for a challenge response with a valid cookie from `address`: one from
   * the server-wide allowance, and none if the address had one within KEY_EXCHANGE_GAP_MS. False
   * (and counted) otherwise.
   */
  private allowKeyExchange(address: string): boolean {
    const h = addressHash(address);
    const slot = addressSlot(h, REQUESTER_SLOTS);
    const tag = addressTag(h);
    if (
      (this.keyedHash[slot] === tag && this.nowMs - this.keyedMs[slot] < KEY_EXCHANGE_GAP_MS) ||
      !this.keyAllowance.take(this.nowMs)
    ) {
      this.reject('key exchange rate');
      return false;
    }
    this.keyedHash[slot] = tag;
    this.keyedMs[slot] = this.nowMs;
    return true;
  }

  /** A connect request that was given a challenge from the allowance (see `handle`). */
  private onConnectRequest(from: string): void {
    const p = this.hs;
    if (this.isBanned(from)) {
      this.refuse(from, p.clientNonce, REFUSE_BANNED);
      this.endpoint.drop?.(from);
      return;
    }
    if (p.version !== this.config.protocolVersion) {
      this.refuse(from, p.clientNonce, REFUSE_WRONG_VERSION);
      return;
    }
    if (p.schemaHash !== this.config.schemaHash) {
      this.refuse(from, p.clientNonce, REFUSE_WRONG_SCHEMA);
      return;
    }
    const issuedAt = Math.floor(this.nowMs) >>> 0;
    this.cookies.make(from, issuedAt, p.clientNonce, p.publicKey, this.cookie);
    const out = this.hs;
    out.type = PACKET_CHALLENGE;
    out.publicKey.set(this.keyExchange.publicKey);
    this.tally(this.traffic.answered, 'challenge');
    out.issuedAt = issuedAt;
    out.cookieHi = this.cookie.hi;
    out.cookieLo = this.cookie.lo;
    this.endpoint.send(from, writeHandshakePacket(this.hsStream, this.config.protocolId, out));
  }

  private onChallengeResponse(from: string): void {
    const p = this.hs;
    // A valid cookie proves the address: no rate applies from here on. Checking one costs a keyed
    // hash, the same as answering a request.
    // issuedAt is server time in ms modulo 2^32; the difference is taken modulo 2^32 as well.
    const age = ((Math.floor(this.nowMs) >>> 0) - p.issuedAt) >>> 0;
    if (age > this.config.cookieLifetimeMs) {
      this.reject('cookie expired');
      return;
    }
    if (!this.cookies.check(from, p.issuedAt, p.clientNonce, p.publicKey, p.cookieHi, p.cookieLo)) {
      this.reject('bad cookie');
      return;
    }
    if (this.isBanned(from)) {
      this.refuse(from, p.clientNonce, REFUSE_BANNED);
      this.endpoint.drop?.(from);
      return;
    }
    // The costly part from here (a token's AEAD open, the key agreement) at most once per address
    // every KEY_EXCHANGE_GAP_MS and maxKeyExchangesPerSecond in all.
    if (!this.allowKeyExchange(from)) return;
    // Connect tokens: checked once the address is proven, so a refusal goes to its real sender.
    let token: OpenedConnectToken | null = null;
    const tokens = this.tokens;
    if (tokens !== null || p.connectTokenLength > 0) {
      const checked =
        tokens === null
          ? 'token unexpected'
          : tokens.check(p.connectToken.subarray(0, p.connectTokenLength), from);
      if (typeof checked === 'string') {
        this.reject(checked);
        this.refuse(
          from,
          p.clientNonce,
          checked === 'token expired' ? REFUSE_TOKEN_EXPIRED : REFUSE_TOKEN_INVALID,
        );
        return;
      }
      token = checked;
    }
    const keys = this.keyExchange.packetKeys(
      p.publicKey,
      this.config.protocolId,
      p.clientNonce,
      token === null ? null : token.clientKey,
    );
    if (keys === null) {
      this.reject('bad key');
      return;
    }
    // The sealed field opens only for the holder of the client's secret key (and the token's
    // client key): a response copied off the wire, or a token without its key, goes no further.
    if (!openHandshakePacket(this.hsData, p, keys.receive, p.issuedAt, p.cookieHi, p.cookieLo)) {
      this.reject('bad seal');
      return;
    }
    let slot = this.resumedSlot(p.resumeHi, p.resumeLo);
    if (slot >= 0 && tokens !== null && this.slotUsers[slot] !== token?.userId) slot = -1;
    const old = slot >= 0 ? this.slots[slot] : null;
    if (slot < 0) {
      slot = 0;
      while (slot < this.slots.length && (this.slots[slot] !== null || this.reserved[slot] !== 0)) slot++;
      if (slot === this.slots.length) {
        this.refuse(from, p.clientNonce, REFUSE_SERVER_FULL);
        return;
      }
    }
    const channel = new PacketChannel((bytes) => this.endpoint.send(from, bytes), this.channelConfig, keys);
    channel.lastReceivedMs = this.nowMs;
    const connection = new ServerConnection(
      slot,
      from,
      p.clientNonce,
      channel,
      p.updateRate,
      p.rate,
      this.config.maxPacketsPerSecond,
      p.publicKey.slice(),
      keys.disconnectToken,
      p.spectator ? p.spectatorDelayMs : -1,
    );
    connection.keys = keys;
    connection.challenge.issuedAt = p.issuedAt;
    connection.challenge.hi = p.cookieHi;
    connection.challenge.lo = p.cookieLo;
    connection.acceptedTick = this.serverTick;
    if (token !== null) {
      connection.userId = token.userId;
      connection.userData = token.userData;
    }
    const refusal = this.handler.accept(connection);
    if (refusal !== 0) {
      this.refuse(from, p.clientNonce, refusal);
      return;
    }
    if (old !== null) {
      this.byAddress.delete(old.address);
      if (old.address !== from) this.endpoint.drop?.(old.address);
    }
    globalThis.crypto.getRandomValues(this.resumeTokens.subarray(2 * slot, 2 * slot + 2));
    if (token !== null) tokens?.admit(token, from);
    this.slotUsers[slot] = connection.userId;
    this.slots[slot] = connection;
    this.byAddress.set(from, connection);
    this.endpoint.established?.(from);
    this.stats.connects++;
    this.tally(this.traffic.answered, 'accepted');
    this.sendAccepted(connection);
  }

  /**
   * A Data or Disconnect packet from a connected address. The channel authenticates it first: a
   * forged one is dropped and counted there ('forged') and costs the client nothing, not even its
   * packet allowance, which only authentic packets spend.
   */
  private receiveData(connection: ServerConnection, data: Uint8Array): void {
    const channel = connection.channel;
    const s = channel.receive(this.nowMs, data);
    if (channel.peerDisconnectReason !== 0) {
      this.tally(this.traffic.data, 'disconnect');
      this.disconnect(connection, DISCONNECT_CLIENT_LEFT);
      return;
    }
    // Null: dropped and counted by the channel. Under a byte of payload: a keepalive.
    this.tally(this.traffic.data, s === null ? (channel.lastDropReason ?? 'dropped') : 'accepted');
    if (s === null) return;
    if (s.bitsRemaining < 8) {
      this.handler.keepalive?.(connection);
      return;
    }
    if (connection.packetAllowance < 1) {
      connection.packetsThrottled++;
      return;
    }
    connection.packetAllowance--;
    this.handler.payload(connection, s);
  }

  /** The slot a resume token names (-1: none): one that is reserved or connected, never token 0. */
  private resumedSlot(hi: number, lo: number): number {
    if ((hi | lo) === 0) return -1;
    const t = this.resumeTokens;
    for (let slot = 0; slot < this.slots.length; slot++) {
      if (t[2 * slot] !== hi >>> 0 || t[2 * slot + 1] !== lo >>> 0) continue;
      return this.reserved[slot] !== 0 || this.slots[slot] !== null ? slot : -1;
    }
    return -1;
  }

  /** Accepted, sealed with the connection's keys (resent identical: same tick, same nonce). */
  private sendAccepted(connection: ServerConnection): void {
    const out = this.hs;
    out.type = PACKET_ACCEPTED;
    out.clientNonce = connection.nonce;
    out.slot = connection.slot;
    out.resumeHi = this.resumeTokens[2 * connection.slot];
    out.resumeLo = this.resumeTokens[2 * connection.slot + 1];
    out.tickRate = this.config.tickRate;
    out.serverTick = connection.acceptedTick;
    out.issuedAt = connection.challenge.issuedAt;
    out.cookieHi = connection.challenge.hi;
    out.cookieLo = connection.challenge.lo;
    const keys = connection.keys;
    if (keys === null) return;
    this.endpoint.send(
      connection.address,
      writeHandshakePacket(this.hsStream, this.config.protocolId, out, keys.send),
    );
  }

  /** Refuses a connection attempt, saying whether trying again later may succeed. */
  private refuse(to: string, nonce: number, reason: number): void {
    this.tally(this.traffic.answered, 'refused');
    const out = this.hs;
    out.type = PACKET_REFUSED;
    out.clientNonce = nonce;
    out.reason = reason;
    out.retry = reason === REFUSE_SERVER_FULL;
    this.endpoint.send(to, writeHandshakePacket(this.hsStream, this.config.protocolId, out));
  }
}

function sameKey(a: Uint8Array, b: Uint8Array): boolean {
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0 && a.length === b.length;
}

function validateConnectionsConfig(c: ServerConnectionsConfig): void {
  for (const key of [
    'maxClients',
    'timeoutMs',
    'cookieLifetimeMs',
    'maxHandshakesPerSecond',
    'maxKeyExchangesPerSecond',
    'maxPacketsPerSecond',
  ] as const) {
    const v = c[key];
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
      throw new RangeError(`server config: ${key} must be a positive number, got ${String(v)}`);
    }
  }
  if (!Number.isInteger(c.maxClients) || c.maxClients > 65535) {
    throw new RangeError(`server config: maxClients must be an integer in 1..65535, got ${c.maxClients}`);
  }
}
