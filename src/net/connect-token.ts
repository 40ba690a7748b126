// Connect tokens (optional): a web backend that knows who the player is issues a short-lived
// token naming the user and the servers it may join; a server configured with the backend's key
// accepts only connections that present one. The model is netcode.io's (a symmetric key shared
// by the backend and its servers, the private part sealed with it, an expiry in clear and in the
// additional data, one use per source address); the binding to the connection is Backstep's own:
// the token carries a per-client key that both ends mix into the connection's packet keys, so
// whoever copies a token off the wire without that key can neither finish the handshake nor burn
// the token.
//
// Browser-safe and synchronous (@noble/ciphers): a backend in Node, Deno or a worker issues
// tokens with the same code the server opens them with.
//
// The token, as the client sends it in its challenge response (little-endian):
//   +-----------------+------+------------------------------------------------------------+
//   | version         | 8    | CONNECT_TOKEN_VERSION (1)                                  |
//   | expiresAtMs     | 64   | Unix time in ms after which no server takes it             |
//   | nonce           | 96   | random: the token's id (replay table) and its AEAD nonce   |
//   | sealed          | var  | ChaCha20-Poly1305 under the backend key of the body below, |
//   |                 |      | additional data: the domain string, version, protocolId    |
//   |                 |      | (32), expiresAtMs (64)                                     |
//   | tag             | 128  |                                                            |
//   +-----------------+------+------------------------------------------------------------+
// body: createdAtMs 64 | clientKey 256 | userId (length 8, UTF-8) | servers (count 8, then
//       each: length 8, UTF-8) | userData (length 16, bytes)
//
// The backend hands the client, over HTTPS, the token with its client key, the servers and the
// expiry (`encodeConnectToken`): the client never reads the sealed part.

import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { DEFAULT_PROTOCOL_ID } from './channel.ts';

export const CONNECT_TOKEN_VERSION = 1;
/** Bytes of the backend's key (shared with every server that takes its tokens). */
export const CONNECT_TOKEN_KEY_BYTES = 32;
/** Bytes of the per-client key a token binds the connection to. */
export const TOKEN_CLIENT_KEY_BYTES = 32;
export const MAX_TOKEN_USER_ID_BYTES = 64;
export const MAX_TOKEN_SERVERS = 8;
export const MAX_TOKEN_SERVER_BYTES = 64;
export const MAX_TOKEN_USER_DATA_BYTES = 256;
/** The longest token: every field at its largest. */
export const MAX_CONNECT_TOKEN_BYTES =
  1 +
  8 +
  12 +
  8 +
  TOKEN_CLIENT_KEY_BYTES +
  1 +
  MAX_TOKEN_USER_ID_BYTES +
  1 +
  MAX_TOKEN_SERVERS * (1 + MAX_TOKEN_SERVER_BYTES) +
  2 +
  MAX_TOKEN_USER_DATA_BYTES +
  16;
/** Default lifetime of a token: long enough to connect, too short to trade. */
export const DEFAULT_TOKEN_LIFETIME_MS = 30_000;

const CLEAR_BYTES = 1 + 8 + 12;
const TAG_BYTES = 16;
const DOMAIN = new TextEncoder().encode('backstep connect token');

/** What a backend says about the player it issues a token for. */
export interface ConnectTokenOptions {
  /** The backend's key: 32 secret bytes, the same every server is configured with. */
  key: Uint8Array;
  /** The id of the user this token names (1..64 UTF-8 bytes): the server's game sees it. */
  userId: string;
  /**
   * The servers the token is good for (1..8 names of 1..64 UTF-8 bytes each), as each server is
   * configured (`ServerConfig.connectTokens.server`): an address, a host name, a region and
   * index; any other server refuses the token.
   */
  servers: readonly string[];
  /** Now, as Unix time in ms (time is passed in: `Date.now()` in a backend). */
  nowMs: number;
  /** How long the token is good for, ms (default 30 s). */
  lifetimeMs?: number;
  /** Must match the servers' protocolId (default DEFAULT_PROTOCOL_ID). */
  protocolId?: number;
  /** Up to 256 bytes the server's game receives with the user id (a team, a rank, a match). */
  userData?: Uint8Array;
  /** 12 random bytes and 32 random bytes; drawn from crypto.getRandomValues when omitted (tests pass them). */
  random?: { nonce: Uint8Array; clientKey: Uint8Array };
}

/** What the client holds: the token for the server, and the key only it and the server learn. */
export interface ConnectToken {
  /** The token bytes, sent to the server in the handshake (opaque to the client). */
  token: Uint8Array;
  /** Secret to this client (send it only to the client, over HTTPS): binds the connection to the token. */
  clientKey: Uint8Array;
  /** The servers the token is good for, in the backend's order of preference. */
  servers: string[];
  /** Unix ms after which no server takes it. */
  expiresAtMs: number;
}

/** A token a server opened: who connects, and what the backend said about them. */
export interface OpenedConnectToken {
  userId: string;
  servers: string[];
  userData: Uint8Array;
  createdAtMs: number;
  expiresAtMs: number;
  clientKey: Uint8Array;
  /** The token's nonce as a string: its identity in the replay table. */
  id: string;
}

/** Why a server refused a token. */
export type ConnectTokenRefusal =
  | 'token missing'
  | 'token malformed'
  | 'token expired'
  | 'token forged'
  | 'token wrong server'
  | 'token replayed'
  | 'token unexpected';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function checkKey(key: Uint8Array, where: string): void {
  if (!(key instanceof Uint8Array) || key.length !== CONNECT_TOKEN_KEY_BYTES)
    throw new RangeError(`${where}: key must be a ${CONNECT_TOKEN_KEY_BYTES}-byte Uint8Array`);
}

function utf8(value: unknown, max: number, what: string): Uint8Array {
  if (typeof value !== 'string') throw new TypeError(`issueConnectToken: ${what} must be a string`);
  const bytes = encoder.encode(value);
  if (bytes.length < 1 || bytes.length > max)
    throw new RangeError(`issueConnectToken: ${what} must be 1..${max} UTF-8 bytes, got ${bytes.length}`);
  return bytes;
}

function writeU64(b: Uint8Array, at: number, value: number): void {
  const lo = value >>> 0;
  const hi = Math.floor(value / 0x100000000) >>> 0;
  b[at] = lo & 0xff;
  b[at + 1] = (lo >>> 8) & 0xff;
  b[at + 2] = (lo >>> 16) & 0xff;
  b[at + 3] = lo >>> 24;
  b[at + 4] = hi & 0xff;
  b[at + 5] = (hi >>> 8) & 0xff;
  b[at + 6] = (hi >>> 16) & 0xff;
  b[at + 7] = hi >>> 24;
}

function readU64(b: Uint8Array, at: number): number {
  const lo = (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
  const hi = (b[at + 4] | (b[at + 5] << 8) | (b[at + 6] << 16) | (b[at + 7] << 24)) >>> 0;
  return hi * 0x100000000 + lo;
}

function additionalData(protocolId: number, token: Uint8Array): Uint8Array {
  const aad = new Uint8Array(DOMAIN.length + 1 + 4 + 8);
  aad.set(DOMAIN);
  let at = DOMAIN.length;
  aad[at++] = token[0];
  aad[at++] = protocolId & 0xff;
  aad[at++] = (protocolId >>> 8) & 0xff;
  aad[at++] = (protocolId >>> 16) & 0xff;
  aad[at++] = protocolId >>> 24;
  aad.set(token.subarray(1, 9), at);
  return aad;
}

/**
 * Issues a connect token (in a backend, after it has authenticated the player). Throws a clear
 * error on a bad key, user id, server list, lifetime or user data.
 */
export function issueConnectToken(o: ConnectTokenOptions): ConnectToken {
  checkKey(o.key, 'issueConnectToken');
  const userId = utf8(o.userId, MAX_TOKEN_USER_ID_BYTES, 'userId');
  if (!Array.isArray(o.servers) || o.servers.length < 1 || o.servers.length > MAX_TOKEN_SERVERS)
    throw new RangeError(`issueConnectToken: servers must list 1..${MAX_TOKEN_SERVERS} servers`);
  const servers = o.servers.map((s, i) => utf8(s, MAX_TOKEN_SERVER_BYTES, `servers[${i}]`));
  const userData = o.userData ?? new Uint8Array(0);
  if (!(userData instanceof Uint8Array) || userData.length > MAX_TOKEN_USER_DATA_BYTES)
    throw new RangeError(
      `issueConnectToken: userData must be a Uint8Array of at most ${MAX_TOKEN_USER_DATA_BYTES} bytes`,
    );
  const lifetimeMs = o.lifetimeMs ?? DEFAULT_TOKEN_LIFETIME_MS;
  if (!(lifetimeMs > 0) || !Number.isFinite(lifetimeMs))
    throw new RangeError(`issueConnectToken: lifetimeMs must be a positive number, got ${lifetimeMs}`);
  if (!Number.isSafeInteger(Math.floor(o.nowMs)) || o.nowMs < 0)
    throw new RangeError(`issueConnectToken: nowMs must be Unix time in ms, got ${o.nowMs}`);
  const protocolId = o.protocolId ?? DEFAULT_PROTOCOL_ID;
  if (!Number.isInteger(protocolId) || protocolId < 0 || protocolId > 0xffffffff)
    throw new RangeError(
      `issueConnectToken: protocolId must be an integer in [0, 2^32-1], got ${protocolId}`,
    );
  const nonce = o.random?.nonce ?? globalThis.crypto.getRandomValues(new Uint8Array(12));
  const clientKey =
    o.random?.clientKey ?? globalThis.crypto.getRandomValues(new Uint8Array(TOKEN_CLIENT_KEY_BYTES));
  if (nonce.length !== 12 || clientKey.length !== TOKEN_CLIENT_KEY_BYTES)
    throw new RangeError('issueConnectToken: random.nonce must be 12 bytes and random.clientKey 32');

  const createdAtMs = Math.floor(o.nowMs);
  const expiresAtMs = createdAtMs + Math.ceil(lifetimeMs);
  let bodyBytes = 8 + TOKEN_CLIENT_KEY_BYTES + 1 + userId.length + 1 + 2 + userData.length;
  for (const s of servers) bodyBytes += 1 + s.length;
  const token = new Uint8Array(CLEAR_BYTES + bodyBytes + TAG_BYTES);
  token[0] = CONNECT_TOKEN_VERSION;
  writeU64(token, 1, expiresAtMs);
  token.set(nonce, 9);
  let at = CLEAR_BYTES;
  writeU64(token, at, createdAtMs);
  at += 8;
  token.set(clientKey, at);
  at += TOKEN_CLIENT_KEY_BYTES;
  token[at++] = userId.length;
  token.set(userId, at);
  at += userId.length;
  token[at++] = servers.length;
  for (const s of servers) {
    token[at++] = s.length;
    token.set(s, at);
    at += s.length;
  }
  token[at++] = userData.length & 0xff;
  token[at++] = userData.length >>> 8;
  token.set(userData, at);
  at += userData.length;
  chacha20poly1305(o.key, nonce, additionalData(protocolId, token)).encrypt(
    token.subarray(CLEAR_BYTES, at),
    token.subarray(CLEAR_BYTES, at + TAG_BYTES),
  );
  return { token, clientKey: clientKey.slice(), servers: [...o.servers], expiresAtMs };
}

/**
 * Opens a token a client presented, on the server: checks its form, its expiry against `nowMs`
 * (Unix ms), its seal under `key`, and that it names `server`. Returns the opened token, or why
 * it is refused. Never throws on any bytes.
 */
export function openConnectToken(
  key: Uint8Array,
  protocolId: number,
  token: Uint8Array,
  nowMs: number,
  server: string,
): OpenedConnectToken | ConnectTokenRefusal {
  if (token.length === 0) return 'token missing';
  if (
    token.length < CLEAR_BYTES + 8 + TOKEN_CLIENT_KEY_BYTES + 5 + TAG_BYTES ||
    token.length > MAX_CONNECT_TOKEN_BYTES
  )
    return 'token malformed';
  if (token[0] !== CONNECT_TOKEN_VERSION) return 'token malformed';
  const expiresAtMs = readU64(token, 1);
  if (!(nowMs < expiresAtMs)) return 'token expired';
  const body = new Uint8Array(token.length - CLEAR_BYTES - TAG_BYTES);
  try {
    chacha20poly1305(key, token.subarray(9, CLEAR_BYTES), additionalData(protocolId, token)).decrypt(
      token.subarray(CLEAR_BYTES),
      body,
    );
  } catch {
    return 'token forged';
  }
  // Authentic from here: the backend wrote it. Still read every length against the end.
  const createdAtMs = readU64(body, 0);
  let at = 8;
  const clientKey = body.slice(at, at + TOKEN_CLIENT_KEY_BYTES);
  at += TOKEN_CLIENT_KEY_BYTES;
  const text = (length: number): string | null => {
    if (length < 1 || at + length > body.length) return null;
    try {
      const s = decoder.decode(body.subarray(at, at + length));
      at += length;
      return s;
    } catch {
      return null;
    }
  };
  const userId = text(body[at++]);
  if (userId === null || at >= body.length) return 'token malformed';
  const count = body[at++];
  if (count < 1 || count > MAX_TOKEN_SERVERS) return 'token malformed';
  const servers: string[] = [];
  for (let i = 0; i < count; i++) {
    if (at >= body.length) return 'token malformed';
    const name = text(body[at++]);
    if (name === null) return 'token malformed';
    servers.push(name);
  }
  if (at + 2 > body.length) return 'token malformed';
  const dataLength = body[at] | (body[at + 1] << 8);
  at += 2;
  if (dataLength > MAX_TOKEN_USER_DATA_BYTES || at + dataLength !== body.length) return 'token malformed';
  if (!servers.includes(server)) return 'token wrong server';
  let id = '';
  for (let i = 9; i < CLEAR_BYTES; i++) id += token[i].toString(16).padStart(2, '0');
  return {
    userId,
    servers,
    userData: body.slice(at, at + dataLength),
    createdAtMs,
    expiresAtMs,
    clientKey,
    id,
  };
}

// The form a backend sends to its client: base64url of
//   version 8 | expiresAtMs 64 | clientKey 256 | servers (count 8, each length 8, UTF-8) | token.

function base64url(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const s = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
    const b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  } catch {
    return null;
  }
}

/** The token as one string for the backend's HTTPS answer (the client's part included: keep it private). */
export function encodeConnectToken(t: ConnectToken): string {
  const servers = t.servers.map((s) => encoder.encode(s));
  let length = 1 + 8 + TOKEN_CLIENT_KEY_BYTES + 1 + t.token.length;
  for (const s of servers) length += 1 + s.length;
  const b = new Uint8Array(length);
  b[0] = CONNECT_TOKEN_VERSION;
  writeU64(b, 1, t.expiresAtMs);
  b.set(t.clientKey, 9);
  let at = 9 + TOKEN_CLIENT_KEY_BYTES;
  b[at++] = servers.length;
  for (const s of servers) {
    b[at++] = s.length;
    b.set(s, at);
    at += s.length;
  }
  b.set(t.token, at);
  return base64url(b);
}

/** Reads `encodeConnectToken`'s string on the client; null when it is not one. Never throws. */
export function decodeConnectToken(text: string): ConnectToken | null {
  if (typeof text !== 'string' || text.length > 4 * MAX_CONNECT_TOKEN_BYTES) return null;
  const b = fromBase64url(text);
  if (b === null || b.length < 1 + 8 + TOKEN_CLIENT_KEY_BYTES + 1 || b[0] !== CONNECT_TOKEN_VERSION)
    return null;
  const expiresAtMs = readU64(b, 1);
  const clientKey = b.slice(9, 9 + TOKEN_CLIENT_KEY_BYTES);
  let at = 9 + TOKEN_CLIENT_KEY_BYTES;
  const count = b[at++];
  if (count < 1 || count > MAX_TOKEN_SERVERS) return null;
  const servers: string[] = [];
  for (let i = 0; i < count; i++) {
    if (at >= b.length) return null;
    const length = b[at++];
    if (length < 1 || at + length > b.length) return null;
    try {
      servers.push(decoder.decode(b.subarray(at, at + length)));
    } catch {
      return null;
    }
    at += length;
  }
  const token = b.slice(at);
  if (token.length < CLEAR_BYTES + TAG_BYTES || token.length > MAX_CONNECT_TOKEN_BYTES) return null;
  return { token, clientKey, servers, expiresAtMs };
}

/** A server's connect token settings (`ServerConfig.connectTokens`). */
export interface ConnectTokensConfig {
  /** The backend's key: the same 32 secret bytes it issues tokens with. */
  key: Uint8Array;
  /** This server's name as the backend lists it in tokens' `servers` (an address, a host name, an id). */
  server: string;
  /** Unix time in ms (default Date.now): read once per challenge response that carries a token. */
  now?: () => number;
}

/** How many tokens a server remembers as used (each until it expires): more than any server admits in a token's lifetime. */
const MAX_USED_TOKENS = 65_536;

/**
 * A server's side of connect tokens: its key, its own name, the wall clock, and the tokens it has
 * admitted (each once per source address, remembered until it expires, as netcode.io does).
 */
export class ConnectTokenGate {
  readonly server: string;
  private readonly key: Uint8Array;
  private readonly protocolId: number;
  private readonly now: () => number;
  /** Token id to the address that used it and when the token expires. */
  private readonly used = new Map<string, { address: string; expiresAtMs: number }>();

  constructor(options: ConnectTokensConfig & { protocolId: number }) {
    checkKey(options.key, 'connectTokens');
    const name = typeof options.server === 'string' ? encoder.encode(options.server) : null;
    if (name === null || name.length < 1 || name.length > MAX_TOKEN_SERVER_BYTES)
      throw new RangeError(
        `connectTokens: server must be this server's name as tokens list it, 1..${MAX_TOKEN_SERVER_BYTES} UTF-8 bytes`,
      );
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('connectTokens: now must be a function returning Unix time in ms');
    this.key = options.key.slice();
    this.server = options.server;
    this.protocolId = options.protocolId;
    this.now = options.now ?? Date.now;
  }

  /** Opens a presented token for `address`; refuses one already admitted from another address. */
  check(token: Uint8Array, address: string): OpenedConnectToken | ConnectTokenRefusal {
    const nowMs = this.now();
    const opened = openConnectToken(this.key, this.protocolId, token, nowMs, this.server);
    if (typeof opened === 'string') return opened;
    const seen = this.used.get(opened.id);
    if (seen !== undefined && seen.address !== address && seen.expiresAtMs > nowMs) return 'token replayed';
    return opened;
  }

  /** Remembers an admitted token (the connection was accepted). */
  admit(token: OpenedConnectToken, address: string): void {
    const nowMs = this.now();
    if (this.used.size >= MAX_USED_TOKENS) {
      for (const [id, entry] of this.used) if (entry.expiresAtMs <= nowMs) this.used.delete(id);
      // Still full of live tokens: forget the one admitted first (Map order).
      while (this.used.size >= MAX_USED_TOKENS) {
        const oldest = this.used.keys().next().value;
        if (oldest === undefined) break;
        this.used.delete(oldest);
      }
    }
    this.used.set(token.id, { address, expiresAtMs: token.expiresAtMs });
  }

  /** Tokens remembered as used (expired ones are forgotten when room is needed). */
  get usedCount(): number {
    return this.used.size;
  }
}
