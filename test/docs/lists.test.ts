// The lists the docs keep by hand, against what the code has: the named network profiles in the
// harness's README and the README's table, and the package's entry points in the README (the
// package test checks them against the API reference's configuration).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NAMED_PROFILES } from '../../src/net/profile.ts';
import { runTool } from './run-tool.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The paragraph or table row of `text` that contains `marker`. */
function around(text: string, marker: string): string {
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`no ${JSON.stringify(marker)}`);
  const start = text.lastIndexOf('\n\n', at);
  const end = text.indexOf('\n\n', at);
  return text.slice(Math.max(start, 0), end < 0 ? text.length : end);
}

describe('docs', () => {
  const profiles = Object.keys(NAMED_PROFILES);

  it('name every named network profile where they list them', () => {
    const sim = read('tools/sim/README.md');
    const places = {
      'tools/sim/README.md, --profile': sim.split('\n').find((l) => l.startsWith('| `--profile')) ?? '',
      'tools/sim/README.md, profile reference': around(sim, 'A **profile reference**'),
      'README.md, profiles/':
        read('README.md')
          .split('\n')
          .find((l) => l.startsWith('| `profiles/`')) ?? '',
    };
    for (const [place, text] of Object.entries(places)) {
      const missing = profiles.filter((name) => !text.includes(`\`${name}\``));
      expect(missing, place).toEqual([]);
    }
  });

  it('name every entry point of the package in the README', () => {
    const pkg = JSON.parse(read('package.json')) as { exports: Record<string, unknown> };
    const entries = Object.keys(pkg.exports).filter((k) => k.startsWith('./') && !k.endsWith('.json'));
    const readme = around(read('README.md'), 'Entry points:');
    for (const entry of entries) {
      expect(readme, `README.md, Entry points: ${entry}`).toContain(`\`backstep/${entry.slice(2)}\``);
    }
  });
});

describe('npm run docs', () => {
  it('builds the API reference of every entry point with no warning (typedoc.json treats warnings as errors)', () => {
    const out = mkdtempSync(join(tmpdir(), 'backstep-api-'));
    try {
      const failure = runTool(ROOT, 'typedoc/bin/typedoc', ['--out', out]);
      expect(failure).toBe('');
      expect(existsSync(join(out, 'index.html'))).toBe(true);
      expect(existsSync(join(out, 'modules', 'token.html'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
