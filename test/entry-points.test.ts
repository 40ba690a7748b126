// The package entry points: each exists where package.json says, exports its area's public API (and not its internals), and the browser-safe ones reach no Node-only module.
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Entry points a browser may load: protocol, sim, client (DESIGN.md), net (the memory network, channel, codes) and the browser transports. */
const BROWSER_ENTRIES = [
  'src/protocol/index.ts',
  'src/sim/index.ts',
  'src/client/index.ts',
  'src/net/index.ts',
  'src/browser.ts',
  'src/token.ts',
];

/**
 * Packages a browser bundle may carry: the audited, synchronous, pure-JavaScript cryptography the
 * client seals its packets with (WebCrypto is asynchronous). The bundle test checks they reach
 * nothing of Node's.
 */
const BROWSER_PACKAGES = ['@noble/ciphers', '@noble/curves', '@noble/hashes'];

function isBrowserPackage(specifier: string): boolean {
  return BROWSER_PACKAGES.some((p) => specifier === p || specifier.startsWith(`${p}/`));
}

/** Packages that exist only in Node (beyond the built-in modules). */
const NODE_ONLY_PACKAGES = ['ws', 'node-datachannel'];

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** A module specifier that is not a relative path: a package or a built-in. */
function isBare(specifier: string): boolean {
  return !specifier.startsWith('./') && !specifier.startsWith('../') && !specifier.startsWith('/');
}

function isNodeOnly(specifier: string): boolean {
  if (specifier.startsWith('node:') || BUILTINS.has(specifier) || BUILTINS.has(specifier.split('/')[0])) {
    return true;
  }
  return NODE_ONLY_PACKAGES.some((p) => specifier === p || specifier.startsWith(`${p}/`));
}

const importsOf = new Map<string, string[]>();

/**
 * The modules `file` loads at run time: its imports and re-exports after TypeScript erases the
 * type-only ones (as `verbatimModuleSyntax` emits them), plus dynamic imports and requires.
 */
function runtimeImports(file: string): string[] {
  if (file.endsWith('.json')) return [];
  const known = importsOf.get(file);
  if (known !== undefined) return known;
  const source = readFileSync(file, 'utf8');
  const js = ts.transpileModule(source, {
    fileName: file,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
    },
  }).outputText;
  const imports = ts.preProcessFile(js, true, true).importedFiles.map((f) => f.fileName);
  importsOf.set(file, imports);
  return imports;
}

interface Reach {
  /** Every bare specifier reached, with the chain of files that leads to it. */
  bare: { specifier: string; chain: string[] }[];
  /** Relative imports that name no file. */
  missing: string[];
  files: number;
  /** Every file reached, relative to the repository. */
  paths: string[];
}

/** Walks the run-time import graph of `entry` through relative imports. */
function reach(entry: string): Reach {
  const result: Reach = { bare: [], missing: [], files: 0, paths: [] };
  const parent = new Map<string, string | null>([[resolve(ROOT, entry), null]]);
  const queue = [resolve(ROOT, entry)];
  const chain = (file: string): string[] => {
    const out: string[] = [];
    for (let f: string | null | undefined = file; f; f = parent.get(f)) out.unshift(relative(ROOT, f));
    return out;
  };
  while (queue.length > 0) {
    const file = queue.shift() as string;
    result.files++;
    result.paths.push(relative(ROOT, file));
    for (const specifier of runtimeImports(file)) {
      if (isBare(specifier)) {
        result.bare.push({ specifier, chain: chain(file) });
        continue;
      }
      const target = resolve(dirname(file), specifier);
      if (!existsSync(target)) {
        result.missing.push(`${relative(ROOT, file)} -> ${specifier}`);
        continue;
      }
      if (!parent.has(target)) {
        parent.set(target, file);
        queue.push(target);
      }
    }
  }
  return result;
}

function describeBare(r: Reach): string {
  return r.bare.map((b) => `${b.chain.join(' -> ')} -> ${b.specifier}`).join('\n');
}

describe('package entry points', () => {
  const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | Record<string, string>>;
  };
  /** Each entry point's source file (its `backstep-source` condition). */
  const sources = Object.entries(pkg.exports).flatMap(([name, target]) =>
    typeof target === 'string' ? [] : [[name, target['backstep-source']] as const],
  );

  it('package.json exports point at source files that exist, the browser-safe areas among them', () => {
    expect(sources.length).toBe(10);
    for (const [name, target] of sources) {
      expect(existsSync(resolve(ROOT, target)), `${name} -> ${target}`).toBe(true);
    }
    const targets = sources.map(([, t]) => t.replace(/^\.\//, ''));
    for (const entry of ['src/protocol/index.ts', 'src/sim/index.ts', 'src/client/index.ts']) {
      expect(targets, entry).toContain(entry);
    }
  });

  for (const entry of BROWSER_ENTRIES) {
    it(`${entry} reaches no Node-only module (static scan of its run-time imports)`, () => {
      const r = reach(entry);
      expect(r.missing, `${entry}: relative imports that name no file`).toEqual([]);
      expect(r.files, entry).toBeGreaterThan(1);
      expect(
        r.paths.filter((p) => p.startsWith('src/testing/') || p.startsWith('src/server/')),
        `${entry} reaches the Node-only testing or server code`,
      ).toEqual([]);
      const nodeOnly = r.bare.filter((b) => isNodeOnly(b.specifier));
      expect(nodeOnly.length, `${entry} reaches Node-only modules:\n${describeBare(r)}`).toBe(0);
      expect(
        r.bare.filter((b) => !isBrowserPackage(b.specifier)).length,
        `${entry} reaches packages a browser bundle would have to carry:\n${describeBare(r)}`,
      ).toBe(0);
    });

    it(`${entry} bundles for the browser with nothing external`, async () => {
      const result = await build({
        absWorkingDir: ROOT,
        entryPoints: [entry],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      expect(result.errors, entry).toEqual([]);
      const inputs = Object.keys(result.metafile.inputs);
      expect(
        inputs.filter(
          (f) =>
            !f.startsWith('src/') &&
            !f.startsWith('profiles/') &&
            !BROWSER_PACKAGES.some((p) => f.includes(`node_modules/${p}/`)),
        ),
        `${entry} bundles files from outside src/ (and the browser-safe cryptography)`,
      ).toEqual([]);
    });
  }

  it('the scan sees through to Node-only modules where they are (the server and Node entry points)', () => {
    const server = reach('src/server/index.ts');
    expect(
      server.bare.map((b) => b.specifier),
      describeBare(server),
    ).toContain('node:crypto');
    const node = reach('src/node.ts');
    const found = node.bare.map((b) => b.specifier);
    for (const specifier of ['ws', 'node-datachannel', 'node:dgram'])
      expect(found, specifier).toContain(specifier);
  });

  it('the scan ignores type-only imports and keeps side-effect ones', () => {
    const js = ts.transpileModule(
      [
        "import type { Server } from 'node:http';",
        "import { type Duplex } from 'node:stream';",
        "import { x } from './x.ts';",
        "export type { Socket } from 'node:net';",
        "export { y } from './y.ts';",
      ].join('\n'),
      { compilerOptions: { module: ts.ModuleKind.ESNext, verbatimModuleSyntax: true } },
    ).outputText;
    expect(ts.preProcessFile(js, true, true).importedFiles.map((f) => f.fileName)).toEqual([
      'node:stream',
      './x.ts',
      './y.ts',
    ]);
  });
});

describe('entry point contents', () => {
  it('protocol exports the codec API and keeps the entry codec internal', async () => {
    const m: Record<string, unknown> = await import('../src/protocol/index.ts');
    for (const name of [
      'BitStream',
      'bitsRequired',
      'quantize',
      'quantizeAngle',
      'quantizeAngles',
      'quantizeValues',
      'seqGreaterThan',
      'seqDiff',
      'serializeUserCommand',
      'quantizeUserCommand',
      'serializeCommandRun',
      'serializeServerFrame',
      'defineEntityType',
      'defineGameSchema',
      'encodeField',
      'decodeNumber',
      'DEFAULT_TELEPORT_DISTANCE',
      'SNAPSHOT_DROP_REASONS',
    ]) {
      expect(m[name], name).toBeDefined();
    }
    for (const name of ['serializeEntry', 'createEntryHeader', 'varuintBits'])
      expect(m[name], name).toBeUndefined();
  });

  it('sim exports the shared building blocks', async () => {
    const m: Record<string, unknown> = await import('../src/sim/index.ts');
    for (const name of [
      'blendEntity',
      'drawEntity',
      'gameSchemaHash',
      'dsin',
      'dcos',
      'dsinCos',
      'dsinCosInPlace',
      'lerpAngle',
      'Random',
      'sharedRandom',
      'SequenceBuffer',
      'NO_EVENTS',
      'judgeView',
      'DEFAULT_VIEW_ACCEPTANCE_LIMITS',
    ]) {
      expect(m[name], name).toBeDefined();
    }
  });

  it('client exports the game client and its parts', async () => {
    const m: Record<string, unknown> = await import('../src/client/index.ts');
    for (const name of [
      'GameClient',
      'createInputSample',
      'Predictor',
      'ServerClock',
      'RemoteView',
      'SnapshotReader',
      'AdaptiveDelay',
      'defaultInterpolationDelayMs',
      'VIEW_INTERPOLATED',
    ]) {
      expect(m[name], name).toBeDefined();
    }
  });

  it('server exports the game server and its parts, not the cookie jar', async () => {
    const m: Record<string, unknown> = await import('../src/server/index.ts');
    for (const name of [
      'GameServer',
      'EntityStore',
      'SnapshotWriter',
      'CommandQueue',
      'DEFAULT_SERVER_CONFIG',
    ]) {
      expect(m[name], name).toBeDefined();
    }
    expect(m.CookieJar).toBeUndefined();
  });

  it('testing exports the match, the conditioned endpoint, bot drivers and the shot ledger', async () => {
    const m: Record<string, unknown> = await import('../src/testing/index.ts');
    for (const name of [
      'Match',
      'ConditionedEndpoint',
      'wanderBot',
      'nearestEntity',
      'aimAngles',
      'ShotLedger',
    ])
      expect(m[name], name).toBeDefined();
    const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, Record<string, string>>;
    };
    expect(pkg.exports['./testing']).toEqual({
      'backstep-source': './src/testing/index.ts',
      types: './dist/testing/index.d.ts',
      import: './dist/testing/index.js',
      default: './dist/testing/index.js',
    });
  });

  it('net exports the channel, lifecycle codes, memory network and profiles under distinct names', async () => {
    const m: Record<string, unknown> = await import('../src/net/index.ts');
    for (const name of [
      'PacketChannel',
      'PacketType',
      'CHANNEL_DROP_REASONS',
      'PACKET_CONNECT_REQUEST',
      'REFUSE_SERVER_FULL',
      'DISCONNECT_TIMED_OUT',
      'MAX_PACKET_BYTES',
      'MemoryNetwork',
      'LinkConditioner',
      'parseProfile',
      'profileByName',
      'NAMED_PROFILES',
    ]) {
      expect(m[name], name).toBeDefined();
    }
    for (const name of ['DROP_REASONS', 'crc32', 'UdpEndpoint']) expect(m[name], name).toBeUndefined();
  });
});
