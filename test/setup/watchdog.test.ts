// The test watchdog (setup/watchdog.ts) and the long-file reporter (setup/long-files.ts): a test
// file whose thread never comes back is named while it runs, then killed with its test's name on
// standard error, and the run ends failed instead of waiting for ever; synchronous tests one after
// another are not a stall.
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Vitest on one fixture with the watchdog's limit and the reporter's first mark given (ms). */
function runFixture(file: string, stallMs: number, longFileMs: number) {
  const r = spawnSync(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/setup/fixtures/vitest.config.ts', file],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 90_000,
      env: {
        ...process.env,
        CI: 'true',
        NO_COLOR: '1',
        BACKSTEP_TEST_STALL_MS: String(stallMs),
        BACKSTEP_LONG_FILE_MS: String(longFileMs),
      },
    },
  );
  return { ...r, output: `${r.stdout}\n${r.stderr}` };
}

it('names a file whose test holds its thread, kills it naming the test, and the run fails', () => {
  const r = runFixture('test/setup/fixtures/stall.ts', 3000, 1000);
  expect(r.signal, r.output).toBeNull();
  expect(r.status, r.output).not.toBe(0);
  expect(r.output).toMatch(/still running after \d+ s: test\/setup\/fixtures\/stall\.ts/);
  expect(r.output).toMatch(
    /test watchdog: test\/setup\/fixtures\/stall\.ts > spins held its thread for \d+ s; its process is killed/,
  );
});

it('lets synchronous tests run one after another past the limit, each within it', () => {
  const r = runFixture('test/setup/fixtures/busy.ts', 2500, 60_000);
  expect(r.output).not.toMatch(/test watchdog/);
  expect(r.status, r.output).toBe(0);
  expect(r.output).toMatch(/Tests {2}5 passed/);
});
