// What the harness and the benchmarks share to summarise measurements: one growable sample
// buffer, nearest-rank percentiles and the mean.

/**
 * Samples (milliseconds, say) in a preallocated buffer that doubles when full. The buffer is
 * written through when made, so the system gives it its pages then: a new typed array's pages
 * are the kernel's zero page until first written, and a buffer sized for a whole run (the sim's
 * tick times, 512 bytes a second at 64 Hz) would otherwise grow the resident set page by page as
 * it fills, which a soak reads as a leak.
 */
export class Samples {
  private data: Float64Array;
  count = 0;

  constructor(capacity = 4096) {
    this.data = new Float64Array(Math.min(1 << 20, Math.max(64, Math.ceil(capacity)))).fill(0);
  }

  add(value: number): void {
    if (this.count === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      grown.fill(0, this.data.length);
      this.data = grown;
    }
    this.data[this.count++] = value;
  }

  /** The samples from index `from` on, ascending (a copy). */
  sorted(from = 0): Float64Array {
    return this.data.slice(from, this.count).sort();
  }
}

/** Nearest-rank percentile `p` (0..1) of ascending `sorted`; null when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
}

/** Mean of `values`; null when empty. */
export function mean(values: ArrayLike<number>): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum / values.length;
}
