// Reproducible randomness for the benchmarks' recordings and replays.

import type { Random } from '../../src/sim/random.ts';

/**
 * Runs `fn` with crypto.getRandomValues drawing from `random` (the engine's seeded stream). A
 * recording and its replay that run the same code under streams of the same seed draw the same
 * bytes: a client's X25519 key pair, a server's resume tokens.
 */
export function withRandom<T>(random: Random, fn: () => T): T {
  const crypto = globalThis.crypto;
  const real = crypto.getRandomValues;
  crypto.getRandomValues = <A extends ArrayBufferView | null>(array: A): A => {
    if (array === null) return array;
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    for (let i = 0; i < bytes.length; i++) bytes[i] = random.nextU32() & 0xff;
    return array;
  };
  try {
    return fn();
  } finally {
    crypto.getRandomValues = real;
  }
}
