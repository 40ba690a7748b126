// A watchdog for every test file's process. A test that never gives its thread back (a loop that
// does not end, a synchronous call that never returns) stops Vitest's own timeouts, which are
// timers on that thread, and the whole run would wait for it forever. A beat on a shared counter
// shows the thread alive: every second while the event loop turns, and at the start and end of
// every test (Vitest runs synchronous tests one after another without a turn of the loop). A
// worker thread watches it, and when it has not moved for STALL_MS it writes the file and the
// test to standard error (synchronously: the stalled thread cannot pass anything on) and kills
// the process, so Vitest fails that file and goes on.

import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach } from 'vitest';

/**
 * Longer than any test or hook may take (testTimeout, hookTimeout, and the package test's 240 s
 * hook) and than any synchronous call a test makes; BACKSTEP_TEST_STALL_MS sets it (the
 * watchdog's own test).
 */
const STALL_MS = Number(process.env.BACKSTEP_TEST_STALL_MS ?? 300_000);

const WATCHER = `
const { parentPort, workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { performance } = require('node:perf_hooks');
const { beat, stallMs } = workerData;
let test = '(before the first test)';
parentPort.on('message', (name) => { test = name; });
let seen = Atomics.load(beat, 0);
let since = performance.now();
setInterval(() => {
  const now = Atomics.load(beat, 0);
  if (now !== seen) {
    seen = now;
    since = performance.now();
    return;
  }
  const stalled = performance.now() - since;
  if (stalled < stallMs) return;
  writeSync(2, '\\ntest watchdog: ' + test + ' held its thread for ' + Math.round(stalled / 1000) +
    ' s; its process is killed\\n');
  process.kill(process.pid, 'SIGKILL');
}, 1000);
`;

const beat = new Int32Array(new SharedArrayBuffer(4));
const watcher = new Worker(WATCHER, { eval: true, workerData: { beat, stallMs: STALL_MS } });
watcher.unref();
setInterval(() => Atomics.add(beat, 0, 1), 1000).unref();

beforeEach((context) => {
  Atomics.add(beat, 0, 1);
  const file = context.task.file?.name ?? '(unknown file)';
  watcher.postMessage(`${file} > ${context.task.name}`);
});

afterEach(() => {
  Atomics.add(beat, 0, 1);
});
