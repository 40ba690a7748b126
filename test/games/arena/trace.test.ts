// Tests of the arena's level description and box trace: hits, fractions, normals, solids, tunnelling.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ARENA_LEVEL,
  boxBrush,
  createLevel,
  type Level,
  rampBrush,
} from '../../../games/arena/shared/level.ts';
import { createTraceResult, TRACE_EPSILON, traceLevel } from '../../../games/arena/shared/trace.ts';
import { type Vec3, vec3 } from '../../../src/sim/math.ts';
import { Random } from '../../../src/sim/random.ts';

/** Run by `node --import tsx`: the heap a traceLevel call leaves behind, once optimized. */
const TRACE_ALLOCATION_PROGRAM = `
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { ARENA_LEVEL } from './games/arena/shared/level.ts';
import { createTraceResult, traceLevel } from './games/arena/shared/trace.ts';
import { vec3 } from './src/sim/math.ts';
const out = createTraceResult();
const start = vec3(0, 0, 40);
const end = vec3(0, 0, 40);
const mins = vec3(-8, -8, -8);
const maxs = vec3(8, 8, 8);
const run = (n) => {
  for (let i = 0; i < n; i++) {
    start.x = (i % 97) * 3.7 - 150;
    start.y = (i % 89) * 2.9 - 120;
    end.x = start.x + 13.3;
    end.y = start.y - 7.1;
    end.z = 40 - (i % 7) * 0.9;
    traceLevel(ARENA_LEVEL, start, end, mins, maxs, out);
  }
};
run(200000);
for (let attempt = 0; attempt < 5; attempt++) {
  const gc = new GCProfiler();
  gc.start();
  const before = getHeapStatistics().used_heap_size;
  run(20000);
  const after = getHeapStatistics().used_heap_size;
  if (gc.stop().statistics.length === 0) {
    process.stdout.write('bytes per trace ' + (after - before) / 20000 + '\\n');
    break;
  }
}
`;

const SPAWN = [{ origin: vec3(0, 0, 0), yaw: 0 }];
const HULL_MINS = vec3(-8, -8, -8);
const HULL_MAXS = vec3(8, 8, 8);

function levelOf(...brushes: ReturnType<typeof boxBrush>[]): Level {
  return createLevel('test', brushes, SPAWN);
}

describe('traceLevel against a box brush', () => {
  const level = levelOf(boxBrush(vec3(0, 0, 0), vec3(64, 64, 64)));
  const tr = createTraceResult();

  it('stops TRACE_EPSILON short of the face it hits, with the face normal', () => {
    traceLevel(level, vec3(-100, 32, 32), vec3(100, 32, 32), HULL_MINS, HULL_MAXS, tr);
    // The hull's +x face (8) meets the brush's -x face (0) when the origin is at -8.
    expect(tr.fraction).toBeCloseTo((92 - TRACE_EPSILON) / 200, 12);
    expect(tr.endPos.x).toBeCloseTo(-8 - TRACE_EPSILON, 9);
    expect(tr.endPos.y).toBe(32);
    expect(tr.normal).toEqual({ x: -1, y: 0, z: 0 });
    expect(tr.startSolid).toBe(false);
    expect(tr.allSolid).toBe(false);
  });

  it('hits the top face from above and reports an upward normal', () => {
    traceLevel(level, vec3(10, 50, 200), vec3(10, 50, 0), HULL_MINS, HULL_MAXS, tr);
    expect(tr.endPos.z).toBeCloseTo(72 + TRACE_EPSILON, 9);
    expect(tr.normal).toEqual({ x: 0, y: 0, z: 1 });
  });

  it('reports a clean miss with fraction 1 and the end position', () => {
    traceLevel(level, vec3(-100, 100, 32), vec3(100, 100, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBe(1);
    expect(tr.endPos).toEqual({ x: 100, y: 100, z: 32 });
    expect(tr.normal).toEqual({ x: 0, y: 0, z: 0 });
  });

  it('reports startSolid and allSolid inside, startSolid only when the move leaves', () => {
    traceLevel(level, vec3(32, 32, 32), vec3(40, 32, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.startSolid).toBe(true);
    expect(tr.allSolid).toBe(true);
    expect(tr.fraction).toBe(0);
    traceLevel(level, vec3(32, 32, 32), vec3(200, 32, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.startSolid).toBe(true);
    expect(tr.allSolid).toBe(false);
    expect(tr.fraction).toBe(1);
  });

  it('tests a position when start equals end: touching counts as solid', () => {
    traceLevel(level, vec3(-8, 32, 32), vec3(-8, 32, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.startSolid).toBe(true);
    traceLevel(level, vec3(-8.01, 32, 32), vec3(-8.01, 32, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.startSolid).toBe(false);
    expect(tr.fraction).toBe(1);
  });

  it('does not move closer to a face it is already within TRACE_EPSILON of', () => {
    traceLevel(level, vec3(-8.05, 32, 32), vec3(0, 32, 32), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBe(0);
    expect(tr.endPos.x).toBe(-8.05);
    traceLevel(level, vec3(-8.05, 32, 32), vec3(-8.05, 32, 100), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction, 'moving along the face is free').toBe(1);
  });

  it('does not tunnel through a thin wall at any speed', () => {
    const thin = levelOf(boxBrush(vec3(0, -512, -512), vec3(1, 512, 512)));
    traceLevel(thin, vec3(-4000, 3, 7), vec3(4000, 5, 9), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBeLessThan(1);
    expect(tr.endPos.x).toBeCloseTo(-8 - TRACE_EPSILON, 6);
    traceLevel(thin, vec3(4000, 3, 7), vec3(-4000, 5, 9), HULL_MINS, HULL_MAXS, tr);
    expect(tr.endPos.x).toBeCloseTo(9 + TRACE_EPSILON, 6);
    expect(tr.normal).toEqual({ x: 1, y: 0, z: 0 });
  });

  it('keeps the nearest of several brushes', () => {
    const two = levelOf(
      boxBrush(vec3(100, -50, -50), vec3(120, 50, 50)),
      boxBrush(vec3(50, -50, -50), vec3(60, 50, 50)),
    );
    traceLevel(two, vec3(0, 0, 0), vec3(200, 0, 0), HULL_MINS, HULL_MAXS, tr);
    expect(tr.endPos.x).toBeCloseTo(42 - TRACE_EPSILON, 9);
  });
});

describe('traceLevel against a ramp', () => {
  // Rises toward +x from z=0 at x=0 to z=64 at x=128.
  const level = levelOf(rampBrush(vec3(0, -64, 0), vec3(128, 64, 64), '+x'));
  const tr = createTraceResult();
  const len = Math.sqrt(64 * 64 + 128 * 128);

  it('reports the slope normal and stops on the slope surface', () => {
    traceLevel(level, vec3(64, 0, 200), vec3(64, 0, -100), HULL_MINS, HULL_MAXS, tr);
    expect(tr.normal.x).toBeCloseTo(-64 / len, 12);
    expect(tr.normal.y).toBe(0);
    expect(tr.normal.z).toBeCloseTo(128 / len, 12);
    // The hull's bottom corner on the uphill side, (+8, -8) from the origin, touches the surface
    // z = x / 2 at x = 72: the origin rests at 36 + 8, plus the epsilon along the normal.
    const restZ = 44 + TRACE_EPSILON / tr.normal.z;
    expect(tr.endPos.z).toBeCloseTo(restZ, 9);
  });

  it('is bevelled: a box passing just beyond the low edge and over the high edge is not stopped', () => {
    traceLevel(level, vec3(-9, 0, 7.9), vec3(-9, 0, -7.9), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBe(1);
    traceLevel(level, vec3(-200, 0, 72.2), vec3(300, 0, 72.2), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBe(1);
    traceLevel(level, vec3(-200, 0, 71.9), vec3(300, 0, 71.9), HULL_MINS, HULL_MAXS, tr);
    expect(tr.fraction).toBeLessThan(1);
  });
});

/** Slab test of the segment a-b against the box [lo - grow, hi + grow]. */
function slab(a: Vec3, b: Vec3, lo: Vec3, hi: Vec3, grow: number) {
  const p = [a.x, a.y, a.z];
  const d = [b.x - a.x, b.y - a.y, b.z - a.z];
  const e0 = [lo.x - grow, lo.y - grow, lo.z - grow];
  const e1 = [hi.x + grow, hi.y + grow, hi.z + grow];
  let tEnter = 0;
  let tLeave = 1;
  for (let i = 0; i < 3; i++) {
    if (d[i] === 0) {
      if (p[i] <= e0[i] || p[i] >= e1[i]) tEnter = 2;
      continue;
    }
    const t0 = (e0[i] - p[i]) / d[i];
    const t1 = (e1[i] - p[i]) / d[i];
    tEnter = Math.max(tEnter, Math.min(t0, t1));
    tLeave = Math.min(tLeave, Math.max(t0, t1));
  }
  const startInside = p.every((v, i) => v > e0[i] && v < e1[i]);
  return { startInside, hits: tEnter < tLeave, tEnter, tLeave };
}

describe('traceLevel randomized against box brushes', () => {
  it('agrees with a slab test of the enlarged box and never ends inside it', () => {
    const seed = 0x7ace;
    const rng = new Random(seed);
    const tr = createTraceResult();
    let hitCount = 0;
    let missCount = 0;
    for (let n = 0; n < 3000; n++) {
      const lo = vec3(rng.range(-100, 100), rng.range(-100, 100), rng.range(-100, 100));
      const hi = vec3(lo.x + rng.range(1, 80), lo.y + rng.range(1, 80), lo.z + rng.range(1, 80));
      const level = levelOf(boxBrush(lo, hi));
      const a = vec3(rng.range(-300, 300), rng.range(-300, 300), rng.range(-300, 300));
      // Aim at the box's neighbourhood so that hits, misses and grazes all occur.
      const b = vec3(
        (lo.x + hi.x) / 2 + rng.range(-100, 100),
        (lo.y + hi.y) / 2 + rng.range(-100, 100),
        (lo.z + hi.z) / 2 + rng.range(-100, 100),
      );
      // The box enlarged by the hull (their Minkowski sum), and by the hull and twice the epsilon.
      const exact = slab(a, b, lo, hi, 8);
      const grown = slab(a, b, lo, hi, 8 + 2 * TRACE_EPSILON);
      traceLevel(level, a, b, HULL_MINS, HULL_MAXS, tr);
      const msg = `seed ${seed} case ${n}`;
      if (exact.startInside) {
        expect(tr.startSolid, msg).toBe(true);
        continue;
      }
      expect(tr.startSolid, msg).toBe(false);
      if (exact.hits && exact.tLeave - exact.tEnter > 1e-6) {
        expect(tr.fraction, msg).toBeLessThan(1);
        expect(tr.fraction, msg).toBeLessThanOrEqual(exact.tEnter + 1e-9);
        hitCount++;
      }
      if (!grown.hits) {
        expect(tr.fraction, msg).toBe(1);
        missCount++;
      }
      const e0 = [lo.x - 8, lo.y - 8, lo.z - 8];
      const e1 = [hi.x + 8, hi.y + 8, hi.z + 8];
      const q = tr.endPos;
      const inside = q.x > e0[0] && q.x < e1[0] && q.y > e0[1] && q.y < e1[1] && q.z > e0[2] && q.z < e1[2];
      expect(inside, msg).toBe(false);
    }
    expect(hitCount, `seed ${seed}`).toBeGreaterThan(300);
    expect(missCount, `seed ${seed}`).toBeGreaterThan(300);
  });
});

describe('level construction', () => {
  it('names the offending field of a bad brush', () => {
    expect(() => boxBrush(vec3(0, 0, 10), vec3(5, 5, 5))).toThrow(/mins\.z \(10\).*maxs\.z \(5\)/);
    expect(() => boxBrush(vec3(0, 0, 0), vec3(5, Number.NaN, 5))).toThrow(/maxs\.y/);
    expect(() => boxBrush(vec3(0, 0, 0), vec3(5000, 5, 5))).toThrow(/x range/);
    expect(() => rampBrush(vec3(0, 0, 0), vec3(5, 5, 5), 'up' as '+x')).toThrow(/rise must be/);
    expect(() => createLevel('empty', [], SPAWN)).toThrow(/brushes is empty/);
    expect(() => createLevel('nospawn', [boxBrush(vec3(0, 0, 0), vec3(1, 1, 1))], [])).toThrow(
      /spawns is empty/,
    );
  });

  it('builds the example arena inside the origin range', () => {
    expect(ARENA_LEVEL.brushes.length).toBeGreaterThan(10);
    expect(ARENA_LEVEL.spawns.length).toBeGreaterThan(3);
    expect(ARENA_LEVEL.mins.x).toBeGreaterThanOrEqual(-4096);
    expect(ARENA_LEVEL.maxs.z).toBeLessThanOrEqual(4096);
  });
});

describe('traceLevel broad phase', () => {
  // The grid (createLevel's) must give exactly what testing every brush gives, for short moves
  // and long shots, through clutter where brushes share cells, edges and faces.
  it('the grid and a scan of every brush give the same result on 20,000 random traces', () => {
    const rng = new Random(404);
    const rises = ['+x', '-x', '+y', '-y'] as const;
    const a = createTraceResult();
    const b = createTraceResult();
    let hits = 0;
    let solids = 0;
    for (let l = 0; l < 20; l++) {
      const brushes = [boxBrush(vec3(-1600, -1600, -32), vec3(1600, 1600, 0))];
      for (let i = 0; i < 60; i++) {
        // On a 64-unit lattice, so brushes touch and ties between them are common.
        const lo = vec3(
          64 * rng.int(-25, 23),
          64 * rng.int(-25, 23),
          rng.chance(0.6) ? 0 : 32 * rng.int(0, 4),
        );
        const hi = vec3(lo.x + 64 * rng.int(1, 6), lo.y + 64 * rng.int(1, 6), lo.z + 32 * rng.int(1, 5));
        brushes.push(rng.chance(0.3) ? rampBrush(lo, hi, rises[rng.int(0, 3)]) : boxBrush(lo, hi));
      }
      const level = createLevel(`broad ${l}`, brushes, SPAWN);
      expect(level.grid).toBeDefined();
      const scan: Level = { ...level, grid: undefined };
      for (let t = 0; t < 1000; t++) {
        const start = vec3(rng.range(-1700, 1700), rng.range(-1700, 1700), rng.range(-40, 200));
        const reach = rng.chance(0.8) ? rng.range(0, 40) : rng.range(0, 4000);
        const yaw = rng.range(0, 2 * Math.PI);
        const end = vec3(
          start.x + reach * Math.cos(yaw),
          start.y + reach * Math.sin(yaw),
          start.z + rng.range(-reach, reach) * 0.3,
        );
        const box = rng.chance(0.5);
        const mins = box ? HULL_MINS : vec3(0, 0, 0);
        const maxs = box ? HULL_MAXS : vec3(0, 0, 0);
        traceLevel(level, start, end, mins, maxs, a);
        traceLevel(scan, start, end, mins, maxs, b);
        const msg = `level ${l}, trace ${t}`;
        expect([a.fraction, a.startSolid, a.allSolid], msg).toEqual([b.fraction, b.startSolid, b.allSolid]);
        expect([a.endPos.x, a.endPos.y, a.endPos.z], msg).toEqual([b.endPos.x, b.endPos.y, b.endPos.z]);
        expect([a.normal.x, a.normal.y, a.normal.z], msg).toEqual([b.normal.x, b.normal.y, b.normal.z]);
        if (a.fraction < 1) hits++;
        if (a.startSolid) solids++;
      }
    }
    expect(hits).toBeGreaterThan(2000);
    expect(solids).toBeGreaterThan(200);
  });

  it('allocates nothing per trace once optimized (the broad phase takes its box from scratch, not as arguments)', async () => {
    // Numbers passed to a function V8 does not inline are boxed on the heap: passing the swept
    // box to the grid's broad phase as six arguments cost 73 bytes a trace, a fifth of what a
    // 512-player server tick allocated. Measured in a process of its own (the shapes other tests
    // feed traceLevel would change how V8 optimizes it), across 20,000 traces after a warm-up that
    // gets it optimized; a try during which a collection ran is repeated.
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          '--conditions=backstep-source',
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          TRACE_ALLOCATION_PROGRAM,
        ],
        { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      child.on('error', reject);
      child.on('close', () => resolve(out));
    });
    const match = /bytes per trace (\S+)/.exec(output);
    expect(match, output).not.toBeNull();
    expect(Number((match as RegExpExecArray)[1]), output).toBeLessThan(4);
  });
});
