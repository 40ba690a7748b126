// The engine/game line, enforced: the engine never imports a game; a game (the reference game and
// the examples) reaches the engine only through the package's public entry points; an example
// reaches nothing else outside its folder; shared game code (run by both sides) imports nothing
// but its own folder and the engine's pure entry points.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The engine's entry points shared game code may use: pure, deterministic, no I/O. */
const PURE_ENTRIES = new Set(['backstep/protocol', 'backstep/sim']);

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Every module specifier a file names (imports, re-exports, dynamic imports), type-only ones included. */
function specifiers(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** The repository-relative path a relative specifier of `file` points at; null for a bare one. */
function target(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  return relative(ROOT, resolve(dirname(file), specifier));
}

/** The `(file, specifier)` pairs of `files` that `bad` flags. */
function offenders(files: string[], bad: (file: string, specifier: string) => boolean): string[] {
  const out: string[] = [];
  for (const file of files) {
    for (const s of specifiers(file)) if (bad(file, s)) out.push(`${relative(ROOT, file)} imports ${s}`);
  }
  return out;
}

/** Every game: the reference game's folder under games/, the examples' under examples/. */
const games = ['games', 'examples'].flatMap((root) =>
  readdirSync(join(ROOT, root), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `${root}/${d.name}`),
);

describe('the engine/game line', () => {
  it('the engine (src/) never imports a game or an example', () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(30);
    const bad = offenders(
      files,
      (f, s) => /^(games|examples)\//.test(target(f, s) ?? '') || /\/(games|examples)\//.test(s),
    );
    expect(bad).toEqual([]);
  });

  it('games reach the engine only through its public entry points (backstep/...), never by a src/ path', () => {
    for (const root of ['games', 'examples']) {
      const files = tsFiles(join(ROOT, root));
      expect(files.length, root).toBeGreaterThan(4);
      const bad = offenders(files, (f, s) => (target(f, s) ?? '').startsWith('src/') || s.includes('/src/'));
      expect(bad, root).toEqual([]);
    }
  });

  it('an example reaches nothing outside its own folder but the public entry points and its test runner', () => {
    for (const game of games.filter((g) => g.startsWith('examples/'))) {
      const files = tsFiles(join(ROOT, game));
      expect(files.length, game).toBeGreaterThan(3);
      const bad = offenders(files, (f, s) => {
        const t = target(f, s);
        if (t !== null) return !t.startsWith(`${game}/`);
        return !s.startsWith('backstep/') && s !== 'vitest';
      });
      expect(bad, game).toEqual([]);
    }
  });

  it('shared game code imports only its own folder and the pure entry points (protocol, sim)', () => {
    expect(games.length).toBeGreaterThan(0);
    for (const game of games) {
      const shared = join(ROOT, game, 'shared');
      const files = tsFiles(shared);
      const bad = offenders(files, (f, s) => {
        const t = target(f, s);
        if (t !== null) return !t.startsWith(relative(ROOT, shared));
        return !PURE_ENTRIES.has(s);
      });
      expect(bad, `${game}/shared`).toEqual([]);
    }
  });

  it('the checks see a violation when there is one', () => {
    const probe = join(ROOT, 'games', 'arena', 'shared', 'movement.ts');
    expect(specifiers(probe).some((s) => PURE_ENTRIES.has(s))).toBe(true);
    expect(target(probe, '../../../src/sim/math.ts')).toBe('src/sim/math.ts');
    expect(target(join(ROOT, 'src', 'sim', 'game.ts'), '../../games/arena/shared/game.ts')).toBe(
      'games/arena/shared/game.ts',
    );
  });
});
