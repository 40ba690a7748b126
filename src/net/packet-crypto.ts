// Packet authentication (browser-safe): the AEAD every connected packet is sealed with, and the
// key agreement of the handshake. ChaCha20-Poly1305 (RFC 8439) keyed per connection and
// direction, the packet's extended sequence number as nonce; X25519 and HKDF-SHA256 for the keys.
// Synchronous and audited (@noble/ciphers, @noble/curves, @noble/hashes): WebCrypto is async.
//
// Nonce (12 bytes): 4 zero bytes, then the packet's 64-bit sequence number, little-endian. Each
// direction has its own key and each packet its own sequence number, so no nonce repeats.
//
// Packet keys: HKDF-SHA256 with
//   ikm  = X25519(client secret, server public) = X25519(server secret, client public),
//          followed by the connect token's client key when the client presented a token
//          (connect-token.ts): only the holder of that key can then use the connection
//   salt = protocolId 32 LE | clientNonce 32 LE | client public key 256 | server public key 256
//   info = "backstep packet keys v1"
// gives 80 bytes: the client-to-server key, the server-to-client key, the disconnect token.

import { _poly1305_aead, chacha20 } from '@noble/ciphers/chacha.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** Bytes of the authentication tag appended to every sealed packet. */
export const PACKET_TAG_BYTES = 16;
/** Bytes of an X25519 public key. */
export const PUBLIC_KEY_BYTES = 32;
/** Bytes of each direction's packet key. */
export const PACKET_KEY_BYTES = 32;
export const NONCE_BYTES = 12;

/**
 * One direction's AEAD. `seal` encrypts `data[start..end)` into `out` at the same offsets and
 * writes the tag at `out[end..end+PACKET_TAG_BYTES)`; `open` checks the tag at the end of
 * `data[start..end)` and writes the plaintext (end - start - PACKET_TAG_BYTES bytes) into `out`
 * at `start`, returning false (and leaving `out` unspecified) when the packet is not authentic.
 * `aad` is authenticated but not encrypted. Neither throws on any bytes.
 */
export interface PacketCipher {
  seal(
    nonce: Uint8Array,
    aad: Uint8Array,
    data: Uint8Array,
    start: number,
    end: number,
    out: Uint8Array,
  ): void;
  open(
    nonce: Uint8Array,
    aad: Uint8Array,
    data: Uint8Array,
    start: number,
    end: number,
    out: Uint8Array,
  ): boolean;
}

/** A connection's two ciphers as one end sees them, and its disconnect token. */
export interface PacketKeys {
  send: PacketCipher;
  receive: PacketCipher;
  /**
   * A secret both ends hold and no packet carries until it is used: a server that cannot seal
   * (its match's loop stalled) ends the connection with it (handshake.ts, PACKET_SERVER_DISCONNECT).
   */
  disconnectToken: Uint8Array;
}

/** Bytes of the disconnect token. */
export const DISCONNECT_TOKEN_BYTES = 16;

/**
 * Writes the nonce of the sealed part of a challenge response (client key) or of an Accepted
 * (server key): the challenge's cookie (its low bit set) and issuedAt. Packet nonces start with a
 * zero byte, so the two never meet; a new challenge (a new cookie) gives a new nonce, and a packet
 * resent under one challenge is resent identical.
 */
export function writeHandshakeNonce(
  nonce: Uint8Array,
  issuedAt: number,
  cookieHi: number,
  cookieLo: number,
): void {
  const lo = (cookieLo | 1) >>> 0;
  for (let i = 0; i < 4; i++) {
    nonce[i] = (lo >>> (8 * i)) & 0xff;
    nonce[4 + i] = (cookieHi >>> (8 * i)) & 0xff;
    nonce[8 + i] = (issuedAt >>> (8 * i)) & 0xff;
  }
}

/** Writes the nonce of the packet with 64-bit sequence number `sequence` (an integer below 2^53). */
export function writeNonce(nonce: Uint8Array, sequence: number): void {
  const lo = sequence >>> 0;
  const hi = Math.floor(sequence / 0x100000000) >>> 0;
  nonce[0] = 0;
  nonce[1] = 0;
  nonce[2] = 0;
  nonce[3] = 0;
  nonce[4] = lo & 0xff;
  nonce[5] = (lo >>> 8) & 0xff;
  nonce[6] = (lo >>> 16) & 0xff;
  nonce[7] = lo >>> 24;
  nonce[8] = hi & 0xff;
  nonce[9] = (hi >>> 8) & 0xff;
  nonce[10] = (hi >>> 16) & 0xff;
  nonce[11] = hi >>> 24;
}

/**
 * Whether `open` may read `data[start..end)` (a body and its tag) and write the body into `out`
 * at `start`: whole, non-negative offsets within both arrays, room for the tag. Every cipher
 * checks this first, so no range is read from the end (as a negative subarray offset would) or
 * rounded.
 */
export function openableRange(data: Uint8Array, out: Uint8Array, start: number, end: number): boolean {
  return (
    Number.isInteger(start) &&
    Number.isInteger(end) &&
    start >= 0 &&
    end - start >= PACKET_TAG_BYTES &&
    end <= data.length &&
    end - PACKET_TAG_BYTES <= out.length
  );
}

/**
 * Exact-length views of one buffer, made once per (start, end) and reused: the AEAD takes its
 * input and output as whole arrays, and a packet's bytes always sit in the same preallocated
 * buffer (the channels' shared send and receive buffers, channel.ts), so packets of a length seen
 * lately make no view. The views sit in a fixed number of slots, one slot per range (its start
 * and end hashed): a new range takes its slot's place, so lengths that wander widely make at
 * worst one view per packet, never an ever larger cache, and a look-up is one array read and two
 * compares (no hash map: looked at a few times a packet, a map's look-up cost about 0.7 us). Each
 * call also looks at one slot in turn and lets its view go if no call used it for `idleGets`
 * calls (`slots` x IDLE_FACTOR unless given), so what the slots hold depends only on the packets of late: a rare length
 * does not stay for good, and a steady one is never made again.
 */
export class ViewCache {
  /** Slots of a cache made with no size: one connection's packets. */
  static readonly MAX_VIEWS = 64;
  /** A view unused for this many times the slots' number of calls is let go. */
  static readonly IDLE_FACTOR = 64;
  private buffer: Uint8Array | null = null;
  private readonly views: (Uint8Array | null)[];
  /** The range of each slot's view, and the call count when it was last used. */
  private readonly starts: Int32Array;
  private readonly ends: Int32Array;
  private readonly used: Uint32Array;
  private readonly mask: number;
  private readonly idleGets: number;
  private count = 0;
  private gets = 0;
  private sweep = 0;

  /**
   * `slots`: how many views it holds at most, a power of two (a cache the channels share holds
   * more); `idleGets`: calls after which a view no call used is let go (by default `slots` x
   * IDLE_FACTOR).
   */
  constructor(slots = ViewCache.MAX_VIEWS, idleGets = slots * ViewCache.IDLE_FACTOR) {
    if (!(Number.isInteger(slots) && slots >= 1 && slots <= 65_536 && (slots & (slots - 1)) === 0)) {
      throw new RangeError(`ViewCache: slots must be a power of two in [1, 65536], got ${slots}`);
    }
    if (!(Number.isInteger(idleGets) && idleGets >= 1 && idleGets <= 0x7fffffff)) {
      throw new RangeError(`ViewCache: idleGets must be an integer in [1, 2^31 - 1], got ${idleGets}`);
    }
    this.views = new Array<Uint8Array | null>(slots).fill(null);
    this.starts = new Int32Array(slots);
    this.ends = new Int32Array(slots);
    this.used = new Uint32Array(slots);
    this.mask = slots - 1;
    this.idleGets = idleGets;
  }

  /** Views held now (at most the slots). */
  get size(): number {
    return this.count;
  }

  get(buffer: Uint8Array, start: number, end: number): Uint8Array {
    // Only ranges the slots can tell apart are kept (packets are at most 1,200 bytes).
    if (!(start >= 0 && start <= 0xffff && end >= 0 && end <= 0xffff)) return buffer.subarray(start, end);
    const views = this.views;
    if (buffer !== this.buffer) {
      this.buffer = buffer;
      views.fill(null);
      this.count = 0;
    }
    this.gets = (this.gets + 1) >>> 0;
    const now = this.gets;
    const j = this.sweep;
    this.sweep = (j + 1) & this.mask;
    if (views[j] !== null && (now - this.used[j]) >>> 0 > this.idleGets) {
      views[j] = null;
      this.count--;
    }
    // start + end: one slot per length for a buffer's bodies (one start) and for its tags (one
    // length), where a hash of both put lengths of a thousand packets in each other's slots.
    const i = (start + end) & this.mask;
    const held = views[i];
    this.used[i] = now;
    if (held !== null && this.starts[i] === start && this.ends[i] === end) return held;
    const view = buffer.subarray(start, end);
    if (held === null) this.count++;
    views[i] = view;
    this.starts[i] = start;
    this.ends[i] = end;
    return view;
  }
}

/**
 * ChaCha20-Poly1305 in JavaScript (@noble/ciphers): for browsers, and anywhere. One AEAD instance
 * per direction and length of additional data, built once over this cipher's own nonce and AAD
 * buffers (noble reads them by reference at each call: they are refilled per packet), sealing and
 * opening in place into the caller's buffer through cached views. What noble allocates inside a
 * call (the one-time Poly1305 key and state) remains.
 */
export function nobleCipher(key: Uint8Array): PacketCipher {
  if (key.length !== PACKET_KEY_BYTES)
    throw new RangeError(`packet key must be ${PACKET_KEY_BYTES} bytes, got ${key.length}`);
  const k = key.slice();
  const nonceBuffer = new Uint8Array(NONCE_BYTES);
  const aeads = new Map<number, { aad: Uint8Array; aead: ReturnType<ReturnType<typeof _poly1305_aead>> }>();
  const inputs = new ViewCache();
  const outputs = new ViewCache();
  const prepare = (nonce: Uint8Array, aad: Uint8Array) => {
    nonceBuffer.set(nonce);
    let entry = aeads.get(aad.length);
    if (entry === undefined) {
      const aadBuffer = new Uint8Array(aad.length);
      entry = { aad: aadBuffer, aead: _poly1305_aead(chacha20)(k, nonceBuffer, aadBuffer) };
      aeads.set(aad.length, entry);
    }
    entry.aad.set(aad);
    return entry.aead;
  };
  return {
    seal(nonce, aad, data, start, end, out) {
      prepare(nonce, aad).encrypt(
        inputs.get(data, start, end),
        outputs.get(out, start, end + PACKET_TAG_BYTES),
      );
    },
    open(nonce, aad, data, start, end, out) {
      if (!openableRange(data, out, start, end)) return false;
      try {
        prepare(nonce, aad).decrypt(
          inputs.get(data, start, end),
          outputs.get(out, start, end - PACKET_TAG_BYTES),
        );
        return true;
      } catch {
        return false;
      }
    },
  };
}

const INFO = new TextEncoder().encode('backstep packet keys v1');

/** The HKDF salt binding the keys to this handshake (see the top of this file). */
export function keySalt(
  protocolId: number,
  clientNonce: number,
  clientPublicKey: Uint8Array,
  serverPublicKey: Uint8Array,
): Uint8Array {
  const salt = new Uint8Array(8 + 2 * PUBLIC_KEY_BYTES);
  const v = new DataView(salt.buffer);
  v.setUint32(0, protocolId >>> 0, true);
  v.setUint32(4, clientNonce >>> 0, true);
  salt.set(clientPublicKey, 8);
  salt.set(serverPublicKey, 8 + PUBLIC_KEY_BYTES);
  return salt;
}

/** The HKDF input key material: the shared secret, then the token's client key if any. */
export function keyMaterialInput(shared: Uint8Array, tokenKey: Uint8Array | null): Uint8Array {
  if (tokenKey === null) return shared;
  const ikm = new Uint8Array(shared.length + tokenKey.length);
  ikm.set(shared);
  ikm.set(tokenKey, shared.length);
  return ikm;
}

/** Splits HKDF output into (client-to-server, server-to-client) keys. */
export function derivePacketKeyBytes(
  shared: Uint8Array,
  salt: Uint8Array,
  tokenKey: Uint8Array | null = null,
): { c2s: Uint8Array; s2c: Uint8Array; token: Uint8Array } {
  return splitKeyMaterial(hkdf(sha256, keyMaterialInput(shared, tokenKey), salt, INFO, KEY_MATERIAL_BYTES));
}

/** HKDF output: both directions' keys and the disconnect token. */
export const KEY_MATERIAL_BYTES = 2 * PACKET_KEY_BYTES + DISCONNECT_TOKEN_BYTES;

/** Splits the key material into (client-to-server key, server-to-client key, disconnect token). */
export function splitKeyMaterial(okm: Uint8Array): { c2s: Uint8Array; s2c: Uint8Array; token: Uint8Array } {
  return {
    c2s: okm.slice(0, PACKET_KEY_BYTES),
    s2c: okm.slice(PACKET_KEY_BYTES, 2 * PACKET_KEY_BYTES),
    token: okm.slice(2 * PACKET_KEY_BYTES, KEY_MATERIAL_BYTES),
  };
}

/** A client's ephemeral X25519 key pair, fresh for each connection attempt. */
export interface ClientKeyPair {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export function createClientKeyPair(): ClientKeyPair {
  const { secretKey, publicKey } = x25519.keygen();
  return { secretKey, publicKey };
}

/**
 * The client's packet keys from the server's public key (in its challenge), or null when that
 * key is unusable (a low-order point: the shared secret would be zero).
 */
export function clientPacketKeys(
  pair: ClientKeyPair,
  serverPublicKey: Uint8Array,
  protocolId: number,
  clientNonce: number,
  tokenKey: Uint8Array | null = null,
  cipher: (key: Uint8Array) => PacketCipher = nobleCipher,
): PacketKeys | null {
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(pair.secretKey, serverPublicKey);
  } catch {
    return null;
  }
  const { c2s, s2c, token } = derivePacketKeyBytes(
    shared,
    keySalt(protocolId, clientNonce, pair.publicKey, serverPublicKey),
    tokenKey,
  );
  return { send: cipher(c2s), receive: cipher(s2c), disconnectToken: token };
}
