// Shared pieces of the benchmarks: the machine header, tables with units in their column names,
// percentiles, and real-clock timing of CPU work (simulated time drives everything else).

import { cpus, loadavg, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Samples } from '../stats.ts';

/** The heap and the ArrayBuffers in use after two full collections (bytes). */
export function heldMemory(): { heap: number; buffers: number } {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers };
}

/** A table row: column name (with its unit) to value. */
export type Row = Record<string, string | number>;

/**
 * One line naming node, the OS, the CPU and the load average at the start (other work on the
 * machine shows in the CPU timings), so figures from different runs are not mixed up.
 */
export function machineHeader(): string {
  const cpu = cpus();
  const model = cpu.length > 0 ? cpu[0].model.trim() : 'unknown CPU';
  const memoryGiB = (totalmem() / 2 ** 30).toFixed(1);
  const load = loadavg()[0].toFixed(2);
  return `node ${process.version}, ${process.platform} ${process.arch}, ${model}, ${cpu.length} cores, ${memoryGiB} GiB, load average ${load}`;
}

/** Prints a titled table whose rows are keyed by their label, then any notes, one per line. */
export function table(title: string, rows: Record<string, Row>, notes: readonly string[] = []): void {
  console.log(`\n${title}`);
  console.table(rows);
  for (const note of notes) console.log(`  ${note}`);
}

/** `value` rounded to `digits` decimals, as a number (console.table prints it unquoted). */
export function round(value: number, digits: number): number {
  if (!Number.isFinite(value)) return value;
  return Number(value.toFixed(digits));
}

/** Runs `fn` until `minMs` have passed (after a warm-up) and returns milliseconds per call. */
export function timePerCall(fn: () => void, minMs = 500): number {
  for (let i = 0; i < 200; i++) fn();
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < 50; i++) fn();
    calls += 50;
    elapsed = performance.now() - start;
  }
  return elapsed / calls;
}

/** `fn` wrapped so that each call's real CPU time, in milliseconds, lands in `samples`. */
export function timed<A extends unknown[], R>(fn: (...args: A) => R, samples: Samples): (...args: A) => R {
  return (...args: A) => {
    const t0 = performance.now();
    const r = fn(...args);
    samples.add(performance.now() - t0);
    return r;
  };
}
