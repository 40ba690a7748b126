// Wrap-safe 16-bit sequence numbers: comparison and distance that survive wrapping past 65535.

export const SEQUENCE_BITS = 16;
export const SEQUENCE_MODULO = 1 << SEQUENCE_BITS;
export const SEQUENCE_MASK = SEQUENCE_MODULO - 1;

/** True when `a` is newer than `b`, treating numbers less than half the space apart as ordered. */
export function seqGreaterThan(a: number, b: number): boolean {
  return (a > b && a - b <= 32768) || (a < b && b - a > 32768);
}

/** True when `a` is older than `b`. */
export function seqLessThan(a: number, b: number): boolean {
  return seqGreaterThan(b, a);
}

/** Signed distance `a - b` in (-32768, 32768]: positive when `a` is newer. */
export function seqDiff(a: number, b: number): number {
  let d = (a - b) & SEQUENCE_MASK;
  if (d > 32768) d -= SEQUENCE_MODULO;
  return d;
}

/** `a + n` wrapped to 16 bits. */
export function seqAdd(a: number, n: number): number {
  return (a + n) & SEQUENCE_MASK;
}
