// Server tick A/B: the server benchmark's scene built from two source trees in one process, run in
// alternating half-seconds of simulated time, every server update of each timed.
//
//   git worktree add --detach /tmp/backstep-a REV && ln -s "$PWD/node_modules" /tmp/backstep-a/
//   npm run ab -- /tmp/backstep-a . [arena|large|mobile] [bots] [chunks]
//
// On a shared machine whose speed moves by a third from minute to minute, two benchmark runs one
// after the other compare the machine's moments more than the code. Here the two matches take
// turns within seconds of each other, in the same process and heap, so each chunk's ratio (B's
// mean update over A's, the order swapped every chunk) sees the same machine; the median of the
// chunks' ratios is the figure to quote. Both trees must export `tickScene` from
// tools/bench/server-tick.ts (every tree from the commit that added this tool on); the bots run
// beside each server as in `npm run bench -- server`, and the same seed gives both the same match
// when their wire bytes are the same.

import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { tickScene as TickScene } from './bench/server-tick.ts';
import { mean, percentile, Samples } from './stats.ts';

const CHUNK_MS = 500;

interface Side {
  name: string;
  run: (ms: number) => void;
  close: () => void;
  all: Samples;
  /** Sum and count of update times in the current chunk. */
  sum: number;
  count: number;
}

function usage(message: string): never {
  console.error(`ab: ${message}`);
  console.error('usage: npm run ab -- TREE_A TREE_B [arena|large|mobile] [bots] [chunks]');
  process.exit(2);
}

async function side(tree: string, scene: 'arena' | 'large' | 'mobile', bots: number): Promise<Side> {
  const path = resolve(tree, 'tools/bench/server-tick.ts');
  let build: typeof TickScene;
  try {
    ({ tickScene: build } = await import(path));
  } catch (e) {
    usage(`cannot load ${path}: ${(e as Error).message}`);
  }
  if (typeof build !== 'function')
    usage(`${path} does not export tickScene (a tree from before tools/ab.ts)`);
  let match: ReturnType<typeof TickScene>;
  try {
    match = build(scene, bots);
  } catch (e) {
    usage(`${path} cannot build the ${scene} scene: ${(e as Error).message}`);
  }
  const server = match.server;
  const s: Side = {
    name: tree,
    run: (ms) => match.run(ms),
    close: () => match.close(),
    all: new Samples(),
    sum: 0,
    count: 0,
  };
  const update = server.update.bind(server);
  server.update = (nowMs: number) => {
    const t0 = performance.now();
    update(nowMs);
    const ms = performance.now() - t0;
    s.all.add(ms);
    s.sum += ms;
    s.count++;
  };
  return s;
}

async function main(): Promise<void> {
  const [treeA, treeB, sceneArg = 'large', botsArg = '512', chunksArg = '16'] = process.argv.slice(2);
  if (treeA === undefined || treeB === undefined) usage('two source trees are needed');
  if (sceneArg !== 'arena' && sceneArg !== 'large' && sceneArg !== 'mobile') {
    usage(`scene must be arena, large or mobile, got ${sceneArg}`);
  }
  const bots = Number(botsArg);
  if (!(Number.isInteger(bots) && bots >= 1 && bots <= 1024))
    usage(`bots must be a whole number in 1..1024, got ${botsArg}`);
  const chunks = Number(chunksArg);
  if (!(Number.isInteger(chunks) && chunks >= 2 && chunks <= 1000))
    usage(`chunks must be a whole number in 2..1000, got ${chunksArg}`);
  const a = await side(treeA, sceneArg, bots);
  const b = await side(treeB, sceneArg, bots);
  const ratios = new Samples();
  let bFaster = 0;
  for (let c = 0; c < chunks; c++) {
    for (const s of c % 2 === 0 ? [a, b] : [b, a]) {
      s.sum = 0;
      s.count = 0;
      s.run(CHUNK_MS);
    }
    const ratio = b.sum / b.count / (a.sum / a.count);
    ratios.add(ratio);
    if (ratio < 1) bFaster++;
  }
  a.close();
  b.close();
  const line = (s: Side) => {
    const sorted = s.all.sorted();
    const f = (x: number | null) => (x ?? 0).toFixed(2);
    return `${s.name}: update mean ${f(mean(sorted))} ms, p50 ${f(percentile(sorted, 0.5))}, p99 ${f(percentile(sorted, 0.99))} (${sorted.length} updates)`;
  };
  const r = ratios.sorted();
  console.log(
    `A/B, ${sceneArg} scene, ${bots} bots, ${chunks} chunks of ${CHUNK_MS} ms simulated each, alternating`,
  );
  console.log(`  A ${line(a)}`);
  console.log(`  B ${line(b)}`);
  console.log(
    `  B / A, mean update per chunk: median ${(percentile(r, 0.5) ?? 0).toFixed(3)}, from ${r[0].toFixed(3)} to ${r[r.length - 1].toFixed(3)}; B faster in ${bFaster} of ${chunks}`,
  );
}

await main();
