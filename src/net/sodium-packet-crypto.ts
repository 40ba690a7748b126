// Packet authentication through libsodium (Node only, optional): the same ChaCha20-Poly1305
// (IETF, 12-byte nonce) as packet-crypto.ts and node-packet-crypto.ts, interchangeable with both
// on the wire. libsodium seals into the caller's buffer with no object per packet, where
// node:crypto makes a cipher object and two Buffers for each one: 0.9-1.4 us per packet of 100 to
// 1,150 bytes against 5.7-6.9 (`npm run bench -- crypto`). `sodium-native` is an optional
// dependency with prebuilt binaries; where it cannot load, the server uses node:crypto's
// (`serverCipher` in node-packet-crypto.ts).

import { createRequire } from 'node:module';
import {
  openableRange,
  PACKET_KEY_BYTES,
  PACKET_TAG_BYTES,
  type PacketCipher,
  ViewCache,
} from './packet-crypto.ts';

/** The part of sodium-native used here. */
interface SodiumAead {
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(
    ciphertext: Uint8Array,
    mac: Uint8Array,
    message: Uint8Array,
    additionalData: Uint8Array | null,
    nsec: null,
    nonce: Uint8Array,
    key: Uint8Array,
  ): void;
  /** Throws when the tag does not match. */
  crypto_aead_chacha20poly1305_ietf_decrypt_detached(
    message: Uint8Array,
    nsec: null,
    ciphertext: Uint8Array,
    mac: Uint8Array,
    additionalData: Uint8Array | null,
    nonce: Uint8Array,
    key: Uint8Array,
  ): void;
}

let loaded: SodiumAead | null | undefined;

/** sodium-native, or null where it is not installed or has no binary for this platform. */
function sodium(): SodiumAead | null {
  if (loaded === undefined) {
    try {
      const mod = createRequire(import.meta.url)('sodium-native') as Partial<SodiumAead>;
      loaded =
        typeof mod.crypto_aead_chacha20poly1305_ietf_encrypt_detached === 'function' &&
        typeof mod.crypto_aead_chacha20poly1305_ietf_decrypt_detached === 'function'
          ? (mod as SodiumAead)
          : null;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/** Whether libsodium (sodium-native) loaded, so `sodiumCipher` can be made. */
export function sodiumAvailable(): boolean {
  return sodium() !== null;
}

// Shared by every cipher of this thread (libsodium reads them in each call, and a server holds
// hundreds of ciphers): the key is copied in before each call, so the native code reads one
// array that stays in the processor's cache instead of one per connection fetched from memory;
// and the views of the buffers packets are sealed and opened in (the channels of a thread share
// one of each, channel.ts) are one set for all.
const keyScratch = new Uint8Array(PACKET_KEY_BYTES);
/** Slots of the shared view caches: every length any connection's packets take (up to 1,200 ends). */
const SHARED_VIEWS = 4096;
const inputs = new ViewCache(SHARED_VIEWS);
const outputs = new ViewCache(SHARED_VIEWS);
const tags = new ViewCache(SHARED_VIEWS);
const openInputs = new ViewCache(SHARED_VIEWS);
const openOutputs = new ViewCache(SHARED_VIEWS);
const openTags = new ViewCache(SHARED_VIEWS);

/**
 * ChaCha20-Poly1305 from libsodium, sealing and opening in place through cached exact-length
 * views (ViewCache: a packet's bytes sit in the same preallocated buffer each time). Throws when
 * sodium-native is not available (see `sodiumAvailable`, or use `serverCipher`).
 */
export function sodiumCipher(key: Uint8Array): PacketCipher {
  if (key.length !== PACKET_KEY_BYTES)
    throw new RangeError(`packet key must be ${PACKET_KEY_BYTES} bytes, got ${key.length}`);
  const lib = sodium();
  if (lib === null) throw new Error('sodiumCipher: sodium-native is not installed or did not load');
  const k = key.slice();
  return {
    seal(nonce, aad, data, start, end, out) {
      // In place (the channel's way) the input and output are one view: libsodium allows it.
      const body = outputs.get(out, start, end);
      keyScratch.set(k);
      lib.crypto_aead_chacha20poly1305_ietf_encrypt_detached(
        body,
        tags.get(out, end, end + PACKET_TAG_BYTES),
        data === out ? body : inputs.get(data, start, end),
        aad,
        null,
        nonce,
        keyScratch,
      );
    },
    open(nonce, aad, data, start, end, out) {
      if (!openableRange(data, out, start, end)) return false;
      const bodyEnd = end - PACKET_TAG_BYTES;
      try {
        const body = openOutputs.get(out, start, bodyEnd);
        keyScratch.set(k);
        lib.crypto_aead_chacha20poly1305_ietf_decrypt_detached(
          body,
          null,
          data === out ? body : openInputs.get(data, start, bodyEnd),
          openTags.get(data, bodyEnd, end),
          aad,
          nonce,
          keyScratch,
        );
        return true;
      } catch {
        return false;
      }
    },
  };
}
