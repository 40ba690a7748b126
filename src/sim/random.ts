// Seeded, deterministic random numbers: the only randomness the engine and shared game code use.

/** A small fast PRNG (mulberry32) with explicit state, for the conditioner, bots and tests. */
export class Random {
  /**
   * Set in the constructor; declared with a fraction so it is laid out as a double from the start:
   * half its values are past the small integers, and a field declared bare (undefined at first)
   * would hold each of those in a new heap box.
   */
  private state = 0.5;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Next 32-bit unsigned integer. */
  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform in [min, max). */
  range(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** Integer uniform in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/**
 * Stateless shared random (Half-Life's UTIL_SharedRandomFloat): the same (seed, index) gives the
 * same value on client and server, so spread carried by a command's seed can be predicted.
 * Returns a uniform value in [0, 1) built only from integer operations.
 */
export function sharedRandom(seed: number, index: number): number {
  let h =
    Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((index >>> 0) + 0x27d4eb2f, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

/** Shared random in [min, max). */
export function sharedRandomRange(seed: number, index: number, min: number, max: number): number {
  return min + (max - min) * sharedRandom(seed, index);
}
