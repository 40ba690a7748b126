// A Vitest reporter that names a test file still running long after it started (5, 15, 30 and
// 60 minutes, to standard error). The `dot` report CI prints says nothing of which files are
// running, so a run that stops moving (and is ended by .ci/run's time limit) would otherwise
// leave no name. Quiet in a run where every file ends in time. BACKSTEP_LONG_FILE_MS sets the
// first mark (the watchdog's test).

import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const FIRST_MS = Number(process.env.BACKSTEP_LONG_FILE_MS ?? 300_000);
/** The marks, as multiples of the first. */
const MARKS = [1, 3, 6, 12];

export default class LongFilesReporter implements Reporter {
  private readonly running = new Map<string, { startedMs: number; marks: number }>();
  private timer: ReturnType<typeof setInterval> | null = null;

  onTestModuleStart(module: TestModule): void {
    this.running.set(module.moduleId, { startedMs: performance.now(), marks: 0 });
    this.timer ??= setInterval(() => this.check(), Math.min(10_000, FIRST_MS / 4));
    this.timer.unref();
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(module.moduleId);
  }

  onTestRunEnd(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private check(): void {
    const now = performance.now();
    for (const [id, file] of this.running) {
      const mark = MARKS[file.marks];
      if (mark === undefined || now - file.startedMs < mark * FIRST_MS) continue;
      file.marks++;
      const seconds = Math.round((now - file.startedMs) / 1000);
      process.stderr.write(`\nstill running after ${seconds} s: ${relative(process.cwd(), id)}\n`);
    }
  }
}
