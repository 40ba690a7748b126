// The test watchdog (setup/watchdog.ts): a test file whose thread never comes back is killed with
// its name on standard error, and the run ends failed instead of waiting for ever.
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

it('kills a file whose test holds its thread, naming the test, and the run fails', () => {
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/setup/fixtures/vitest.config.ts'],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, CI: 'true', BACKSTEP_TEST_STALL_MS: '3000' },
    },
  );
  const output = `${r.stdout}\n${r.stderr}`;
  expect(r.signal, output).toBeNull();
  expect(r.status, output).not.toBe(0);
  expect(output).toMatch(
    /test watchdog: test\/setup\/fixtures\/stall\.ts > spins forever held its thread for \d+ s; its process is killed/,
  );
  // Killed within seconds of the stall, not at the spawn's 90 s limit.
  expect(Date.now() - started, output).toBeLessThan(60_000);
});
