// The sim's soak option: every interval of the run it samples the process's memory (after a full
// collection when the runtime allows one: `node --expose-gc`) and the server's tick time over the
// interval, and fits a straight line to each after a warm-up, so a leak or a slowdown shows as a
// slope per hour that a short run would never reveal.

import { readFileSync } from 'node:fs';
import { getHeapCodeStatistics, getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { percentile, type Samples } from '../stats.ts';
import type { Figure } from './metrics.ts';

/**
 * Numbers a sample keeps while the run goes (SoakSampler.values): t, heap, code, rss, tick p50,
 * p99, heap committed, external, file-backed resident, V8's malloc peak.
 */
const SAMPLE_FIELDS = 10;

/**
 * The resident pages that map files (the program's and its libraries' code and data, paged in as
 * the run first touches them), MB: Linux's /proc/self/smaps_rollup, its Rss less its Anonymous.
 * NaN where the system has no such file.
 */
function residentFileMB(): number {
  let text: string;
  try {
    text = readFileSync('/proc/self/smaps_rollup', 'latin1');
  } catch {
    return Number.NaN;
  }
  const rss = /^Rss:\s+(\d+) kB/m.exec(text);
  const anonymous = /^Anonymous:\s+(\d+) kB/m.exec(text);
  if (rss === null || anonymous === null) return Number.NaN;
  return (Number(rss[1]) - Number(anonymous[1])) / 1024;
}

/**
 * Which allocator serves the process's malloc, from its memory map (Linux's /proc/self/maps
 * text): a replacement loaded into it (`LD_PRELOAD`: jemalloc, tcmalloc, mimalloc) by name, else
 * "the C library's malloc". The resident set's slope outside V8 is the allocator's: glibc's
 * malloc keeps freed pages (in a two-hour soak of 128 bots its anonymous memory crept up 1.6 MB
 * an hour), jemalloc gives them back within a minute (README, "Long runs").
 */
export function allocatorOf(maps: string): string {
  for (const name of ['jemalloc', 'tcmalloc', 'mimalloc']) {
    if (new RegExp(`/lib${name}[^/\\s]*\\.so`).test(maps)) return name;
  }
  return "the C library's malloc";
}

/** This process's allocator (allocatorOf), or null where the system has no /proc/self/maps. */
function processAllocator(): string | null {
  try {
    return allocatorOf(readFileSync('/proc/self/maps', 'latin1'));
  } catch {
    return null;
  }
}

/**
 * The resident set less the heap V8 holds and the buffers' memory, MB: stacks, the allocator's
 * own heap, the pages of mapped files (V8's compiled code is in its heap).
 */
function restMB(s: SoakSample): number {
  return s.rssMB - s.heapCommittedMB - s.externalMB;
}

/** One sample: when (simulated or real seconds since the start), memory (MB) and tick time (ms). */
export interface SoakSample {
  t: number;
  heapMB: number;
  /**
   * Of the heap, V8's compiled code and bytecode with their metadata (v8.getHeapCodeStatistics:
   * code_and_metadata_size plus bytecode_and_metadata_size), MB. A function first run, or first
   * hot, late in a run is compiled then: the heap rises by its code, once, and that is not a
   * leak. The heap less this is the program's data, where a leak would show.
   */
  codeMB: number;
  rssMB: number;
  /**
   * The memory V8 holds for its heap (process.memoryUsage().heapTotal), MB: the used heap plus the
   * room it keeps. The resident set can grow by this room while the heap's use stays flat.
   */
  heapCommittedMB: number;
  /**
   * Memory outside V8's heap that its objects own (process.memoryUsage().external: the backing
   * stores of ArrayBuffers and typed arrays, native buffers), MB.
   */
  externalMB: number;
  /**
   * Of the resident set, the pages that map files (the program's and its libraries' code and
   * data, paged in as the run first touches them; bounded by their size), MB; NaN where the
   * system does not say (only Linux does: /proc/self/smaps_rollup).
   */
  fileMB: number;
  /**
   * The most memory V8 has had from the allocator outside its heap at once, so far (its compilers'
   * zones and other working memory: v8.getHeapStatistics().peak_malloced_memory), MB: whether
   * anonymous memory that grows is V8's working memory reaching a new high.
   */
  peakMallocedMB: number;
  /**
   * The heap's used size by V8 space (old_space, code_space, large_object_space, ...), MB: which
   * kind of memory a slope comes from (objects kept, compiled code, large arrays). Kept in one
   * array made for the run while it runs (so the soak's own record does not grow by an object a
   * sample) and filled in here when the figures are taken, at the end.
   */
  spacesMB?: Record<string, number>;
  tickP50Ms: number | null;
  tickP99Ms: number | null;
}

/** The soak's result: every sample and the fitted slopes after warm-up. */
export interface SoakReport {
  intervalSeconds: number;
  /** Samples before this time (the first quarter of the run, at least one interval) are left out of the fit. */
  warmUpSeconds: number;
  collected: boolean;
  /** Which allocator serves malloc (allocatorOf), null where the system does not say. */
  allocator: string | null;
  /** Every sample, in time order: filled in when the figures are taken (`figures`), at the end. */
  samples: SoakSample[];
}

/** Least-squares slope of y over x (per unit of x); null with fewer than two points. */
export function slope(xs: readonly number[], ys: readonly number[]): number | null {
  return fitLine(xs, ys)?.slope ?? null;
}

/** A fitted line: see fitLine. */
export interface LineFit {
  slope: number;
  /** The slope's standard error, null when too few samples (or effective samples) are left to measure it. */
  standardError: number | null;
  /** Lag-1 autocorrelation of the residuals in sample order (null with fewer than three samples). */
  lagCorrelation: number | null;
  /** Independent samples the residuals are worth (n, fewer when they are correlated). */
  effectiveSamples: number;
}

/**
 * The least-squares line's slope of y over x (samples in time order) and the slope's standard
 * error: the residuals' spread over the spread of x, sqrt(sum of squared residuals / (m - 2) /
 * sum (x - mean x)^2), where m is the number of independent samples the residuals are worth. A
 * process's heap sampled every half minute wanders for minutes at a time (collections, caches
 * filling and emptying), so neighbouring residuals are alike and n samples say less than n
 * independent ones: with r the residuals' lag-1 autocorrelation, m = n (1 - r) / (1 + r) when r
 * is positive (the usual correction for a trend in autocorrelated data, as in Santer et al. 2000),
 * m = n otherwise. Without it a soak whose heap only wanders reads as growing. Null with fewer than
 * two distinct x; with two points, or two effective samples or fewer, the error is null.
 */
export function fitLine(xs: readonly number[], ys: readonly number[]): LineFit | null {
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
  if (n < 3) return { slope: b, standardError: null, lagCorrelation: null, effectiveSamples: n };
  let ss = 0;
  let lag = 0;
  let previous = 0;
  for (let i = 0; i < n; i++) {
    const r = ys[i] - my - b * (xs[i] - mx);
    ss += r * r;
    if (i > 0) lag += r * previous;
    previous = r;
  }
  const rho = ss > 0 ? lag / ss : 0;
  const effective = rho > 0 ? (n * (1 - rho)) / (1 + rho) : n;
  return {
    slope: b,
    standardError: effective > 2 ? Math.sqrt(ss / (effective - 2) / sxx) : null,
    lagCorrelation: rho,
    effectiveSamples: effective,
  };
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
  /** The V8 heap spaces, and their used sizes (MB) by sample and space, for the samples the run can take. */
  private readonly spaceNames = getHeapSpaceStatistics().map((space) => space.space_name);
  private readonly rows: number;
  private readonly spaces: Float64Array;
  /**
   * Each sample's figures (SAMPLE_FIELDS numbers a row; NaN for none), kept in one array made for
   * the run and made into `report.samples` at the end (figures), so the soak's own record does not
   * grow as it goes.
   */
  private readonly values: Float64Array;
  private count = 0;

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
      allocator: processAllocator(),
      samples: [],
    };
    this.nextT = intervalSeconds;
    this.rows = Math.floor(seconds / intervalSeconds) + 1;
    this.spaces = new Float64Array(this.rows * this.spaceNames.length).fill(Number.NaN);
    this.values = new Float64Array(this.rows * SAMPLE_FIELDS).fill(Number.NaN);
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
    while (this.nextT <= t) this.nextT += this.report.intervalSeconds;
    // The rows are made for every sample the run's length allows.
    const row = this.count;
    if (row >= this.rows) return;
    this.count++;
    for (const space of getHeapSpaceStatistics()) {
      const k = this.spaceNames.indexOf(space.space_name);
      if (k >= 0) this.spaces[row * this.spaceNames.length + k] = space.space_used_size / 2 ** 20;
    }
    const code = getHeapCodeStatistics();
    const v = this.values;
    const at = row * SAMPLE_FIELDS;
    v[at] = t;
    v[at + 1] = m.heapUsed / 2 ** 20;
    v[at + 2] = (code.code_and_metadata_size + code.bytecode_and_metadata_size) / 2 ** 20;
    v[at + 3] = m.rss / 2 ** 20;
    v[at + 4] = percentile(ticks, 0.5) ?? Number.NaN;
    v[at + 5] = percentile(ticks, 0.99) ?? Number.NaN;
    v[at + 6] = m.heapTotal / 2 ** 20;
    v[at + 7] = m.external / 2 ** 20;
    v[at + 8] = residentFileMB();
    v[at + 9] = getHeapStatistics().peak_malloced_memory / 2 ** 20;
  }

  /** The newest sample (a new object each call), or null before the first. */
  latest(): SoakSample | null {
    return this.count === 0 ? null : this.sampleAt(this.count - 1);
  }

  private sampleAt(row: number): SoakSample {
    const v = this.values;
    const at = row * SAMPLE_FIELDS;
    const orNull = (x: number) => (Number.isNaN(x) ? null : x);
    return {
      t: v[at],
      heapMB: v[at + 1],
      codeMB: v[at + 2],
      rssMB: v[at + 3],
      heapCommittedMB: v[at + 6],
      externalMB: v[at + 7],
      fileMB: v[at + 8],
      peakMallocedMB: v[at + 9],
      tickP50Ms: orNull(v[at + 4]),
      tickP99Ms: orNull(v[at + 5]),
    };
  }

  /** The soak figures by plain name: slopes per hour after warm-up, first and last samples. */
  figures(): Record<string, Figure> {
    const r = this.report;
    const names = this.spaceNames;
    r.samples.length = 0;
    for (let row = 0; row < this.count; row++) {
      const sample = this.sampleAt(row);
      const spacesMB: Record<string, number> = {};
      for (let k = 0; k < names.length; k++) {
        const mb = this.spaces[row * names.length + k];
        if (!Number.isNaN(mb)) spacesMB[names[k]] = mb;
      }
      sample.spacesMB = spacesMB;
      r.samples.push(sample);
    }
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
    const code = fitOf((s) => s.codeMB);
    const data = fitOf((s) => s.heapMB - s.codeMB);
    const rss = fitOf((s) => s.rssMB);
    const committed = fitOf((s) => s.heapCommittedMB);
    const external = fitOf((s) => s.externalMB);
    const native = fitOf(restMB);
    // Of the rest: pages of mapped files, and anonymous memory (the allocator's heap, stacks).
    const file = fitOf((s) => (Number.isNaN(s.fileMB) ? null : s.fileMB));
    const anonymous = fitOf((s) => (Number.isNaN(s.fileMB) ? null : restMB(s) - s.fileMB));
    const first = after[0];
    const last = after[after.length - 1];
    const spaces: Record<string, Figure> = {};
    for (const name of names) {
      const fit = fitOf((s) => s.spacesMB?.[name] ?? null);
      spaces[`soak.heapSpaceMBPerHour.${name}`] = fit?.slope ?? null;
      spaces[`soak.heapSpaceMBPerHour.${name}.error`] = fit?.standardError ?? null;
    }
    return {
      ...spaces,
      'soak.samples': r.samples.length,
      'soak.fittedSamples': after.length,
      'soak.warmUpSeconds': r.warmUpSeconds,
      'soak.heapMB.first': first?.heapMB ?? null,
      'soak.heapMB.last': last?.heapMB ?? null,
      'soak.heapMBPerHour': heap?.slope ?? null,
      'soak.heapMBPerHour.error': heap?.standardError ?? null,
      'soak.heapMBPerHour.effectiveSamples': heap?.effectiveSamples ?? null,
      'soak.codeMB.first': first?.codeMB ?? null,
      'soak.codeMB.last': last?.codeMB ?? null,
      'soak.codeMBPerHour': code?.slope ?? null,
      'soak.codeMBPerHour.error': code?.standardError ?? null,
      'soak.dataMB.first': first === undefined ? null : first.heapMB - first.codeMB,
      'soak.dataMB.last': last === undefined ? null : last.heapMB - last.codeMB,
      'soak.dataMBPerHour': data?.slope ?? null,
      'soak.dataMBPerHour.error': data?.standardError ?? null,
      'soak.dataMBPerHour.effectiveSamples': data?.effectiveSamples ?? null,
      'soak.rssMB.first': first?.rssMB ?? null,
      'soak.rssMB.last': last?.rssMB ?? null,
      'soak.rssMBPerHour': rss?.slope ?? null,
      'soak.rssMBPerHour.error': rss?.standardError ?? null,
      'soak.rssMBPerHour.effectiveSamples': rss?.effectiveSamples ?? null,
      'soak.heapCommittedMBPerHour': committed?.slope ?? null,
      'soak.heapCommittedMBPerHour.error': committed?.standardError ?? null,
      'soak.externalMBPerHour': external?.slope ?? null,
      'soak.externalMBPerHour.error': external?.standardError ?? null,
      'soak.nativeMB.first': first === undefined ? null : restMB(first),
      'soak.nativeMB.last': last === undefined ? null : restMB(last),
      'soak.nativeMBPerHour': native?.slope ?? null,
      'soak.nativeMBPerHour.error': native?.standardError ?? null,
      'soak.fileMB.first': first === undefined || Number.isNaN(first.fileMB) ? null : first.fileMB,
      'soak.fileMB.last': last === undefined || Number.isNaN(last.fileMB) ? null : last.fileMB,
      'soak.fileMBPerHour': file?.slope ?? null,
      'soak.fileMBPerHour.error': file?.standardError ?? null,
      'soak.anonymousMBPerHour': anonymous?.slope ?? null,
      'soak.anonymousMBPerHour.error': anonymous?.standardError ?? null,
      'soak.anonymousMBPerHour.effectiveSamples': anonymous?.effectiveSamples ?? null,
      'soak.peakMallocedMB.first': first?.peakMallocedMB ?? null,
      'soak.peakMallocedMB.last': last?.peakMallocedMB ?? null,
      'soak.tickP50MsPerHour': slopeOf((s) => s.tickP50Ms),
      'soak.tickP99MsPerHour': slopeOf((s) => s.tickP99Ms),
    };
  }
}
