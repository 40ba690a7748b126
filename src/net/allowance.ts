// Rate limits the connection layer, the routers and the socket transports share: a token bucket
// on the caller's clock, and the hash by which tables of recent senders key an address.

/** A token bucket: `perSecond` a second, bursts up to a second's worth, on the caller's time (ms). */
export class Allowance {
  /** Tokens left. Set in the constructor; a double from the start (declared bare, V8 would box each value stored). */
  private tokens = 0.5;
  private lastMs = Number.NaN;

  constructor(readonly perSecond: number) {
    this.tokens = perSecond;
  }

  /**
   * Refills up to `nowMs` (never earlier than the last call's; the first finite time refills
   * nothing) and says whether one is left, taking none.
   */
  ready(nowMs: number): boolean {
    if (nowMs > this.lastMs) {
      this.tokens = Math.min(this.perSecond, this.tokens + ((nowMs - this.lastMs) * this.perSecond) / 1000);
    }
    if (!(nowMs <= this.lastMs)) this.lastMs = nowMs;
    return this.tokens >= 1;
  }

  /** Takes one at `nowMs` (never earlier than the last call's); false when none is left. */
  take(nowMs: number): boolean {
    if (!this.ready(nowMs)) return false;
    this.tokens--;
    return true;
  }

  /** Refills up to `nowMs` and says whether the bucket is full again (one that forgets it loses nothing). */
  full(nowMs: number): boolean {
    this.ready(nowMs);
    return this.tokens >= this.perSecond;
  }
}

/**
 * A 32-bit hash of an address (FNV-1a over its UTF-16 units) for tables of recent senders: the
 * slot is `addressSlot(h, slots)` and the tag kept there to tell addresses apart `addressTag(h)`.
 */
export function addressHash(address: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < address.length; i++) h = Math.imul(h ^ address.charCodeAt(i), 0x01000193);
  return h;
}

/** The slot of hash `h` in a table of `slots` (a power of two). */
export function addressSlot(h: number, slots: number): number {
  return (h >>> 0) & (slots - 1);
}

/** The tag a table keeps for hash `h` (never 0, an empty slot's). */
export function addressTag(h: number): number {
  return Math.imul(h, 0x9e3779b1) | 1;
}
