// Packet authentication on the server (Node only): ChaCha20-Poly1305 and X25519 from Node's own
// crypto (OpenSSL), the same construction as packet-crypto.ts and interchangeable with it.

import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
} from 'node:crypto';
import {
  KEY_MATERIAL_BYTES,
  keyMaterialInput,
  keySalt,
  openableRange,
  PACKET_KEY_BYTES,
  PACKET_TAG_BYTES,
  type PacketCipher,
  type PacketKeys,
  PUBLIC_KEY_BYTES,
  splitKeyMaterial,
  ViewCache,
} from './packet-crypto.ts';
import { sodiumAvailable, sodiumCipher } from './sodium-packet-crypto.ts';

/**
 * ChaCha20-Poly1305 from Node's crypto. node:crypto has no one-shot AEAD into a caller's buffer:
 * each packet makes a cipher object, and its output and tag come back as new Buffers, copied into
 * `out`; the input and tag views are cached (ViewCache).
 */
export function nodeCipher(key: Uint8Array): PacketCipher {
  if (key.length !== PACKET_KEY_BYTES)
    throw new RangeError(`packet key must be ${PACKET_KEY_BYTES} bytes, got ${key.length}`);
  const k = Buffer.from(key);
  const bodies = new ViewCache();
  const tags = new ViewCache();
  return {
    seal(nonce, aad, data, start, end, out) {
      const c = createCipheriv('chacha20-poly1305', k, nonce, { authTagLength: PACKET_TAG_BYTES });
      c.setAAD(aad, { plaintextLength: end - start });
      out.set(c.update(bodies.get(data, start, end)), start);
      c.final();
      out.set(c.getAuthTag(), end);
    },
    open(nonce, aad, data, start, end, out) {
      if (!openableRange(data, out, start, end)) return false;
      const bodyEnd = end - PACKET_TAG_BYTES;
      try {
        const d = createDecipheriv('chacha20-poly1305', k, nonce, { authTagLength: PACKET_TAG_BYTES });
        d.setAAD(aad, { plaintextLength: bodyEnd - start });
        d.setAuthTag(tags.get(data, bodyEnd, end));
        const body = d.update(bodies.get(data, start, bodyEnd));
        d.final();
        out.set(body, start);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * The fastest packet cipher this process has: libsodium's (`sodiumCipher`) where the optional
 * sodium-native loaded, else node:crypto's (`nodeCipher`). The server seals and opens every
 * packet with it; a client in Node may give it as `packetCipher`.
 */
export function serverCipher(key: Uint8Array): PacketCipher {
  return sodiumAvailable() ? sodiumCipher(key) : nodeCipher(key);
}

const INFO = Buffer.from('backstep packet keys v1');
/** Bytes of an X25519 secret key. */
const SECRET_KEY_BYTES = 32;
/** The DER (PKCS #8, RFC 8410) that precedes a raw X25519 secret key. */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

/**
 * The server's X25519 key pair (one per server, drawn at start, like the cookie secret) and the
 * key agreement with each client that proved its address.
 */
export class ServerKeyExchange {
  /** Sent in every challenge. */
  readonly publicKey: Uint8Array;
  private readonly privateKey: KeyObject;

  /** `secretKey`: the 32-byte X25519 secret key to use (a fresh pair when omitted). */
  constructor(secretKey?: Uint8Array) {
    let publicKey: KeyObject;
    if (secretKey === undefined) {
      const pair = generateKeyPairSync('x25519');
      this.privateKey = pair.privateKey;
      publicKey = pair.publicKey;
    } else {
      if (!(secretKey instanceof Uint8Array) || secretKey.length !== SECRET_KEY_BYTES) {
        throw new RangeError(
          `server config: secretKey must be a Uint8Array of ${SECRET_KEY_BYTES} bytes, got ${
            secretKey instanceof Uint8Array ? `${secretKey.length} bytes` : typeof secretKey
          }`,
        );
      }
      this.privateKey = createPrivateKey({
        key: Buffer.concat([X25519_PKCS8_PREFIX, secretKey]),
        format: 'der',
        type: 'pkcs8',
      });
      publicKey = createPublicKey(this.privateKey);
    }
    const jwk = publicKey.export({ format: 'jwk' });
    this.publicKey = new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url'));
    if (this.publicKey.length !== PUBLIC_KEY_BYTES) throw new Error('x25519 public key export failed');
  }

  /** The server's packet keys for a client's public key, or null when that key is unusable. */
  packetKeys(
    clientPublicKey: Uint8Array,
    protocolId: number,
    clientNonce: number,
    tokenKey: Uint8Array | null = null,
  ): PacketKeys | null {
    let shared: Buffer;
    try {
      const publicKey = createPublicKey({
        key: { kty: 'OKP', crv: 'X25519', x: Buffer.from(clientPublicKey).toString('base64url') },
        format: 'jwk',
      });
      shared = diffieHellman({ privateKey: this.privateKey, publicKey });
    } catch {
      return null;
    }
    if (shared.every((b) => b === 0)) return null;
    const salt = keySalt(protocolId, clientNonce, clientPublicKey, this.publicKey);
    const { c2s, s2c, token } = splitKeyMaterial(
      new Uint8Array(hkdfSync('sha256', keyMaterialInput(shared, tokenKey), salt, INFO, KEY_MATERIAL_BYTES)),
    );
    return { send: serverCipher(s2c), receive: serverCipher(c2s), disconnectToken: token };
  }
}
