// Challenge cookies: a keyed hash of the client's address, a time, its nonce and its public key,
// so the server can check a challenge response without having kept any state for that address.

import { createHmac, randomBytes } from 'node:crypto';

export class CookieJar {
  private readonly secret: Buffer;

  /** `secret`: at least 16 bytes; omitted, a random one is drawn (cookies die with the server). */
  constructor(secret?: Uint8Array) {
    if (secret !== undefined && secret.length < 16) {
      throw new RangeError(`cookie secret must be at least 16 bytes, got ${secret.length}`);
    }
    this.secret = secret === undefined ? randomBytes(32) : Buffer.from(secret);
  }

  /** The 64-bit cookie for (address, issuedAt, nonce, publicKey) as two 32-bit halves in `out`. */
  make(
    address: string,
    issuedAt: number,
    nonce: number,
    publicKey: Uint8Array,
    out: { hi: number; lo: number },
  ): void {
    const mac = createHmac('sha256', this.secret)
      .update(`${address}|${issuedAt}|${nonce}|`)
      .update(publicKey)
      .digest();
    out.hi = mac.readUInt32LE(0);
    out.lo = mac.readUInt32LE(4);
  }

  /** True when the cookie matches; compares in constant time for equal-length inputs. */
  check(
    address: string,
    issuedAt: number,
    nonce: number,
    publicKey: Uint8Array,
    hi: number,
    lo: number,
  ): boolean {
    this.make(address, issuedAt, nonce, publicKey, scratch);
    return ((scratch.hi ^ hi) | (scratch.lo ^ lo)) === 0;
  }
}

const scratch = { hi: 0, lo: 0 };
