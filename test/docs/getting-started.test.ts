// The getting-started guide's code as a reader copies it: sections 1 to 4 (the dot game) and the
// test of section 7, taken from docs/getting-started.md into one module, type-checked with the
// repository's compiler settings and run: three wandering bots over a lossy link, no prediction
// error. The game with section 5's server and with section 6's page are type-checked too. A guide
// that drifts from the API, or uses a name it never defines, fails here.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, type test } from 'vitest';
import { runTool } from './run-tool.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GUIDE = join(ROOT, 'docs', 'getting-started.md');
// Inside the repository, so that `backstep/...` resolves as in the games (gitignored: /tmp/).
const WORK = join(ROOT, 'tmp', 'guide-test');

/** The ```ts blocks of the section whose heading starts with `## N.`. */
function blocksOf(markdown: string, section: number): string[] {
  const start = markdown.indexOf(`\n## ${section}. `);
  if (start < 0) throw new Error(`docs/getting-started.md: no section ${section}`);
  const next = markdown.indexOf('\n## ', start + 1);
  const text = markdown.slice(start, next < 0 ? markdown.length : next);
  const blocks: string[] = [];
  for (const m of text.matchAll(/```ts\n([\s\S]*?)```/g)) blocks.push(m[1]);
  return blocks;
}

/**
 * One module: the dot game (sections 1-4, every block) and section 7's first block as an exported
 * function taking the test runner's `test` and `expect`, its imports moved to the top.
 */
function guideModule(markdown: string): string {
  const game = [1, 2, 3, 4].flatMap((n) => blocksOf(markdown, n));
  const [testBlock] = blocksOf(markdown, 7);
  if (testBlock === undefined) throw new Error('docs/getting-started.md: section 7 has no code');
  const lines = testBlock.split('\n');
  const imports = lines.filter((l) => l.startsWith('import ') && !l.includes("from 'vitest'"));
  const body = lines.filter((l) => !l.startsWith('import '));
  return [
    ...game,
    ...imports,
    "import type { expect as Expect, test as Test } from 'vitest';",
    'export function guideTest(test: typeof Test, expect: typeof Expect): void {',
    ...body,
    '}',
    '',
  ].join('\n');
}

/**
 * The server and the page as a reader assembles them: the dot game (sections 1-4) with section 5's
 * first block (the server), and with section 6's (the page).
 */
function programModules(markdown: string): { server: string; page: string } {
  const game = [1, 2, 3, 4].flatMap((n) => blocksOf(markdown, n)).join('\n');
  const first = (n: number) => {
    const [block] = blocksOf(markdown, n);
    if (block === undefined) throw new Error(`docs/getting-started.md: section ${n} has no code`);
    return block;
  };
  return { server: `${game}\n${first(5)}\nexport {};\n`, page: `${game}\n${first(6)}\nexport {};\n` };
}

describe('docs/getting-started.md', () => {
  const markdown = readFileSync(GUIDE, 'utf8');
  const source = guideModule(markdown);
  mkdirSync(WORK, { recursive: true });
  const file = join(WORK, 'guide.ts');
  writeFileSync(file, source);
  const programs = programModules(markdown);
  writeFileSync(join(WORK, 'server.ts'), programs.server);
  writeFileSync(join(WORK, 'page.ts'), programs.page);
  afterAll(() => rmSync(WORK, { recursive: true, force: true }));

  it('type-checks as written: the game with its test, the server (section 5) and the page (section 6)', () => {
    const tsconfig = join(WORK, 'tsconfig.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: '../../tsconfig.json',
        include: ['guide.ts', 'server.ts', 'page.ts'],
        compilerOptions: { noEmit: true },
      }),
    );
    const output = runTool(ROOT, 'typescript/bin/tsc', ['-p', tsconfig]);
    expect(output).toBe('');
  });

  it("runs section 7's test: three bots, 150 ms round trip, 5 % loss, no prediction error", async () => {
    const guide = (await import(pathToFileURL(file).href)) as {
      guideTest: (t: typeof test, e: typeof expect) => void;
    };
    let ran = 0;
    // The guide's own `test(name, fn)` is run in place, inside this test.
    guide.guideTest(
      ((_name: string, fn: () => void) => {
        ran++;
        fn();
      }) as unknown as typeof test,
      expect,
    );
    expect(ran).toBe(1);
  });
});
