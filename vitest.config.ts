import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// The repository runs the engine from its sources: `backstep/...` (the games' imports) resolves
// through package.json's `backstep-source` condition to src/, so nothing needs building first.
const SOURCE = 'backstep-source';

// In CI (`.ci/run`), a short report: a dot per test, then every failure with its output, and the
// name of any test file still running after 5 minutes (test/setup/long-files.ts). The printed
// figures of passing tests show locally.
const ci = process.env.CI === 'true';

export default defineConfig({
  resolve: { conditions: [SOURCE, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [SOURCE, ...defaultServerConditions] } },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    setupFiles: ['test/setup/watchdog.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    ...(ci ? { reporters: ['dot', './test/setup/long-files.ts'], silent: 'passed-only' as const } : {}),
  },
});
