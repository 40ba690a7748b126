// The sim's soak option: every interval of the run it samples the process's memory (after a full
// collection when the runtime allows one: `node --expose-gc`) and the server's tick time over the
// interval, and fits a straight line to each after a warm-up, so a leak or a slowdown shows as a
// slope per hour that a short run would never reveal.

import { percentile, type Samples } from '../stats.ts';
import type { Figure } from './metrics.ts';

/** One sample: when (simulated or real seconds since the start), memory (MB) and tick time (ms). */
export interface SoakSample {
  t: number;
  heapMB: number;
  rssMB: number;
  tickP50Ms: number | null;
  tickP99Ms: number | null;
}

/** The soak's result: every sample and the fitted slopes after warm-up. */
export interface SoakReport {
  intervalSeconds: number;
  /** Samples before this time (the first quarter of the run, at least one interval) are left out of the fit. */
  warmUpSeconds: number;
  collected: boolean;
  samples: SoakSample[];
}

/** Least-squares slope of y over x (per unit of x); null with fewer than two points. */
export function slope(xs: readonly number[], ys: readonly number[]): number | null {
  return fitLine(xs, ys)?.slope ?? null;
}

/**
 * The least-squares line's slope of y over x and the slope's standard error (the residuals'
 * spread over the spread of x: sqrt(sum of squared residuals / (n - 2) / sum (x - mean x)^2));
 * null with fewer than two distinct x. With two points the error is null (nothing is left to
 * measure it).
 */
export function fitLine(
  xs: readonly number[],
  ys: readonly number[],
): { slope: number; standardError: number | null } | null {
  const n = xs.length;
  if (n < 2 || ys.length !== n) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += xs[i];
    my += ys[i];
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) * (xs[i] - mx);
  }
  if (!(sxx > 0)) return null;
  const b = sxy / sxx;
  if (n < 3) return { slope: b, standardError: null };
  let ss = 0;
  for (let i = 0; i < n; i++) {
    const r = ys[i] - my - b * (xs[i] - mx);
    ss += r * r;
  }
  return { slope: b, standardError: Math.sqrt(ss / (n - 2) / sxx) };
}

/**
 * Samples memory and tick time every `intervalSeconds` of a run `seconds` long. Call `due(t)`
 * at the end of every bucket and `sample(t)` when it says so.
 */
export class SoakSampler {
  readonly report: SoakReport;
  private nextT: number;
  private firstTick = 0;
  private readonly gc: (() => void) | null;

  constructor(
    intervalSeconds: number,
    seconds: number,
    private readonly tickTimes: Samples,
  ) {
    if (!(intervalSeconds > 0)) throw new RangeError(`soak interval must be > 0 s, got ${intervalSeconds}`);
    const collect = (globalThis as { gc?: () => void }).gc;
    this.gc = typeof collect === 'function' ? collect : null;
    this.report = {
      intervalSeconds,
      warmUpSeconds: Math.max(intervalSeconds, seconds / 4),
      collected: this.gc !== null,
      samples: [],
    };
    this.nextT = intervalSeconds;
  }

  /** Whether a sample is due at `t` seconds. */
  due(t: number): boolean {
    return t >= this.nextT;
  }

  /** Takes a sample at `t` seconds: memory now, tick time since the last sample. */
  sample(t: number): void {
    this.gc?.();
    const m = process.memoryUsage();
    const ticks = this.tickTimes.sorted(this.firstTick);
    this.firstTick = this.tickTimes.count;
    this.report.samples.push({
      t,
      heapMB: m.heapUsed / 2 ** 20,
      rssMB: m.rss / 2 ** 20,
      tickP50Ms: percentile(ticks, 0.5),
      tickP99Ms: percentile(ticks, 0.99),
    });
    while (this.nextT <= t) this.nextT += this.report.intervalSeconds;
  }

  /** The soak figures by plain name: slopes per hour after warm-up, first and last samples. */
  figures(): Record<string, Figure> {
    const r = this.report;
    const after = r.samples.filter((s) => s.t >= r.warmUpSeconds);
    const hours = after.map((s) => s.t / 3600);
    const fitOf = (pick: (s: SoakSample) => number | null) => {
      const xs: number[] = [];
      const ys: number[] = [];
      for (let i = 0; i < after.length; i++) {
        const y = pick(after[i]);
        if (y !== null) {
          xs.push(hours[i]);
          ys.push(y);
        }
      }
      return fitLine(xs, ys);
    };
    const slopeOf = (pick: (s: SoakSample) => number | null): Figure => fitOf(pick)?.slope ?? null;
    const heap = fitOf((s) => s.heapMB);
    const rss = fitOf((s) => s.rssMB);
    const first = after[0];
    const last = after[after.length - 1];
    return {
      'soak.samples': r.samples.length,
      'soak.fittedSamples': after.length,
      'soak.warmUpSeconds': r.warmUpSeconds,
      'soak.heapMB.first': first?.heapMB ?? null,
      'soak.heapMB.last': last?.heapMB ?? null,
      'soak.heapMBPerHour': heap?.slope ?? null,
      'soak.heapMBPerHour.error': heap?.standardError ?? null,
      'soak.rssMB.first': first?.rssMB ?? null,
      'soak.rssMB.last': last?.rssMB ?? null,
      'soak.rssMBPerHour': rss?.slope ?? null,
      'soak.rssMBPerHour.error': rss?.standardError ?? null,
      'soak.tickP50MsPerHour': slopeOf((s) => s.tickP50Ms),
      'soak.tickP99MsPerHour': slopeOf((s) => s.tickP99Ms),
    };
  }
}
