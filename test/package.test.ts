// The package as a user gets it: `npm pack`, installed from the tarball into a new project
// offline (from the local npm cache), then used with no TypeScript loader (a Node script runs a
// match), type-checked as a TypeScript consumer, and bundled for a browser page by Vite.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = join(ROOT, 'test', 'package', 'consumer');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let work = '';
let project = '';
let packed: { filename: string; version: string; integrity: string; size: number; files: { path: string }[] };

/** package.json's exports: each subpath's conditions, or a file. */
function exportsField(): Record<string, string | Record<string, string>> {
  return (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, string | Record<string, string>>;
    }
  ).exports;
}

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 180_000,
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'backstep-package-'));
  // Builds dist/ (prepack) and packs what `files` lists.
  const out = run(NPM, ['pack', '--json', '--pack-destination', work], ROOT);
  packed = JSON.parse(out.slice(out.indexOf('[')))[0];
  project = join(work, 'consumer');
  cpSync(FIXTURES, project, { recursive: true });
  // A lock file naming every package by version and integrity, taken from the repository's own
  // lock, so `npm ci --offline` finds each tarball in the cache that the repository's install filled.
  const repo = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, Record<string, unknown>>;
  };
  const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const typesNode = repo.packages['node_modules/@types/node'].version as string;
  const tarball = `file:../${packed.filename}`;
  const dependencies = { backstep: tarball, '@types/node': typesNode };
  const packages: Record<string, Record<string, unknown>> = {
    '': { name: 'consumer', dependencies },
    'node_modules/backstep': {
      version: packed.version,
      resolved: tarball,
      integrity: packed.integrity,
      dependencies: own.dependencies,
    },
  };
  // Every package the tarball's dependencies and @types/node reach, followed through the lock.
  const needed = new Set<string>();
  const pending = [...Object.keys(own.dependencies), '@types/node'];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (needed.has(name)) continue;
    needed.add(name);
    const entry = repo.packages[`node_modules/${name}`] as
      | { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }
      | undefined;
    if (entry === undefined) continue;
    pending.push(...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {}));
  }
  for (const [key, entry] of Object.entries(repo.packages)) {
    const name = key.replace(/^node_modules\//, '');
    if (!needed.has(name)) continue;
    const { dev: _dev, devOptional: _devOptional, ...rest } = entry;
    packages[key] = rest;
  }
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies }, null, 2),
  );
  writeFileSync(
    join(project, 'package-lock.json'),
    JSON.stringify({ name: 'consumer', lockfileVersion: 3, requires: true, packages }, null, 2),
  );
  run(NPM, ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], project);
}, 240_000);

afterAll(() => {
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships the built entry points with their types and nothing of the repository else', () => {
    const paths = packed.files.map((f) => f.path);
    const entries = Object.values(exportsField()).filter(
      (target): target is Record<string, string> => typeof target !== 'string',
    );
    expect(entries.length).toBeGreaterThan(8);
    for (const conditions of entries) {
      // "types" before the rest, and a "default" (the same ESM file as "import") for require().
      expect(Object.keys(conditions).filter((c) => c !== 'backstep-source')).toEqual([
        'types',
        'import',
        'default',
      ]);
      expect(conditions.default).toBe(conditions.import);
      expect(paths).toContain(conditions.import.replace(/^\.\//, ''));
      expect(paths).toContain(conditions.types.replace(/^\.\//, ''));
    }
    const shipped = [
      'package.json',
      'README.md',
      'CHANGELOG.md',
      'LICENSE',
      'profiles/README.md',
      'docs/arena.png',
      'src/protocol/SPEC.md',
    ];
    const stray = paths.filter(
      (p) =>
        !p.startsWith('dist/') &&
        !/^profiles\/[a-z-]+\.json$/.test(p) &&
        !/^docs\/[a-z-]+\.md$/.test(p) &&
        !shipped.includes(p),
    );
    expect(stray).toEqual([]);
    // The guides, the picture and the wire format the README links to go with it (the generated
    // API reference does not).
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const linked = [...readme.matchAll(/\]\(((?:docs\/[^)#\s]+)|src\/protocol\/SPEC\.md)\)/g)].map(
      (m) => m[1],
    );
    expect(linked.length).toBeGreaterThan(3);
    for (const file of linked) expect(paths).toContain(file);
    expect(paths.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toEqual([]);
  });

  it('documents every entry point in the API reference', () => {
    const typedoc = JSON.parse(readFileSync(join(ROOT, 'typedoc.json'), 'utf8')) as { entryPoints: string[] };
    const sources = Object.values(exportsField())
      .filter((target): target is Record<string, string> => typeof target !== 'string')
      .map((conditions) => conditions['backstep-source'].replace(/^\.\//, ''));
    expect([...typedoc.entryPoints].sort()).toEqual(sources.sort());
  });

  it("gives require() of every entry point the ES module, or Node's own error for requiring one", () => {
    // Node 20.19 and later load an ES module with require(); earlier ones refuse with ERR_REQUIRE_ESM.
    const script = `const out = {};
for (const name of ${JSON.stringify(Object.keys(exportsField()))}) {
  try { require(name.replace(/^\\./, 'backstep')); out[name] = 'loaded'; } catch (e) { out[name] = e.code; }
}
console.log(JSON.stringify(out));`;
    const outcomes = JSON.parse(run(process.execPath, ['-e', script], project)) as Record<string, string>;
    for (const [name, outcome] of Object.entries(outcomes)) {
      expect(['loaded', 'ERR_REQUIRE_ESM'], name).toContain(outcome);
    }
  });

  it('runs a match over the memory transport from plain Node ESM, no TypeScript loader', () => {
    const out = run(process.execPath, ['smoke.mjs'], project);
    const result = JSON.parse(out) as {
      clients: { state: string; snapshots: number; x: number; corrections: number }[];
      serverClients: number;
      match: { state: string; snapshots: number; corrections: number };
    };
    expect(result.serverClients).toBe(2);
    expect(result.match.state).toBe('connected');
    expect(result.match.snapshots).toBeGreaterThan(40);
    expect(result.match.corrections).toBe(0);
    for (const c of result.clients) {
      expect(c.state).toBe('connected');
      expect(c.snapshots).toBeGreaterThan(60);
      expect(c.x).toBeGreaterThan(20);
      expect(c.corrections).toBe(0);
    }
  });

  it('type-checks a TypeScript consumer of the public types', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    let output = '';
    try {
      output = run(process.execPath, [tsc, '-p', 'tsconfig.json'], project);
    } catch (e) {
      output = String((e as { stdout?: string }).stdout ?? e);
    }
    expect(output).toBe('');
  });

  it('bundles a page importing the browser entry with Vite, with no Node module in it', () => {
    const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
    run(process.execPath, [vite, 'build', '--logLevel', 'error', '--outDir', 'out'], project);
    const assets = readdirSync(join(project, 'out', 'assets')).filter((f) => f.endsWith('.js'));
    expect(assets.length).toBeGreaterThan(0);
    const code = assets.map((f) => readFileSync(join(project, 'out', 'assets', f), 'utf8')).join('\n');
    expect(code).toContain('backstepLoaded');
    // Vite stands a Node built-in in with an empty "__vite-browser-external" module; a package
    // left out of the bundle would stay an import or require of its name.
    expect(code.includes('__vite-browser-external')).toBe(false);
    const loads = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)["']([^"']+)["']/g;
    const loaded = [...code.matchAll(loads)].map((m) => m[1]);
    expect(loaded.filter((m) => !m.startsWith('./') && !m.startsWith('/'))).toEqual([]);
  });
});
