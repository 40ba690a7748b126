// The simulation harness: a memory run is reproducible from its seed (but for the real-clock
// figures), another seed changes the figures, bad options, profiles and scenarios are refused
// naming the problem before anything runs, scenarios resolve to the right bots, the conditioner
// in front of a socket delays, drops and duplicates, a UDP run finishes and closes its sockets.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConditionedEndpoint } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { DemoPlayer } from '../../src/client/demo-player.ts';
import { NAMED_PROFILES, parseProfile } from '../../src/net/profile.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { Random } from '../../src/sim/random.ts';
import { renderChart } from '../../tools/sim/chart.ts';
import { FrameQueue } from '../../tools/sim/lockstep.ts';
import {
  OUTAGE_RECOVERY_MS,
  REAL_CLOCK_FIGURES,
  REAL_CLOCK_SERIES,
  SimMetrics,
  type SimSources,
  STEADY_AFTER_MS,
  steadyBetween,
} from '../../tools/sim/metrics.ts';
import { resolveSimPlan } from '../../tools/sim/options.ts';
import { formatReport } from '../../tools/sim/report.ts';
import { runSim, type SimResult } from '../../tools/sim/runner.ts';
import { BUILT_IN_SCENARIOS } from '../../tools/sim/scenario.ts';
import { allocatorOf, fitLine, slope } from '../../tools/sim/soak.ts';
import { formatFlags, judgeRun } from '../../tools/sim/verdict.ts';

const dir = mkdtempSync(join(tmpdir(), 'backstep-sim-'));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function reproducible(r: SimResult) {
  const figures = { ...r.figures };
  for (const name of REAL_CLOCK_FIGURES) delete figures[name];
  const series: Record<string, unknown> = { ...r.series };
  for (const name of REAL_CLOCK_SERIES) delete series[name];
  return { options: r.options, figures, series };
}

const run = (argv: string[]) => runSim(resolveSimPlan([...argv, '--quiet'], dir));

describe('sim: reproducible from the seed', () => {
  it('gives the same figures twice for one seed, other figures for another', async () => {
    const seed = 11;
    const argv = ['--bots', '4', '--profile', 'mobile', '--seconds', '4', '--aim-error', '8'];
    const a = await run([...argv, '--seed', String(seed)]);
    const b = await run([...argv, '--seed', String(seed)]);
    const c = await run([...argv, '--seed', String(seed + 1)]);
    const msg = `seed ${seed}`;
    expect(reproducible(b), msg).toEqual(reproducible(a));
    expect(reproducible(c).figures, msg).not.toEqual(reproducible(a).figures);
    // The run measured real fights: every mode judged the same rays.
    const f = a.figures;
    expect(f['hitAgreement.exact.compared'], msg).toBeGreaterThan(20);
    expect(f['hitAgreement.estimate.compared'], msg).toBe(f['hitAgreement.exact.compared']);
    expect(f['hitAgreement.off.compared'], msg).toBe(f['hitAgreement.exact.compared']);
    expect(f['hitAgreement.exact'], msg).toBe(
      (f['hitAgreement.exact.agreed'] as number) / (f['hitAgreement.exact.compared'] as number),
    );
    expect(f['bytesPerClientPerSecond.down'], msg).toBeGreaterThan(0);
    expect(f['bytesPerClientPerSecond.up'], msg).toBeGreaterThan(0);
    expect(f['clients.connectedAtEnd'], msg).toBe(4);
    expect(f['serverTickMs.p99'], msg).toBeGreaterThanOrEqual(f['serverTickMs.p50'] as number);
    for (const name of [
      'shots.rays',
      'shots.clientHits',
      'shots.aroundCorner',
      'shots.mispredictedCommands',
      'shots.unjudged',
      'shots.unjudgedHitsShown',
      'prediction.correctionsPerMinute',
      'prediction.meanCorrectionUnits',
      'prediction.maxVisibleErrorUnits',
      'choke.share',
      'choke.steadyShare',
      'rtt.queueMs',
      'view.extrapolatedShare',
      'view.heldShare',
      'view.steadyGuessedShare',
      'view.meanAgeMs',
      'disagreements.honoured',
      'disagreements.pastUnlagServerTime',
      'serverTickMs.max',
      'commands.lost',
      'commands.late',
      'commands.overBudget',
      'kills',
    ]) {
      expect(Object.hasOwn(f, name), `${msg}: ${name}`).toBe(true);
    }
    // One value per second in every series.
    for (const [name, values] of Object.entries(a.series)) expect(values.length, `${msg}: ${name}`).toBe(4);
    expect(a.series.t, msg).toEqual([1, 2, 3, 4]);
    // The report names every figure it shows; the chart is a complete SVG with numbers only.
    expect(formatReport(a), msg).toContain('hitAgreement.exact');
    const svg = renderChart(a);
    expect(svg.startsWith('<svg'), msg).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>'), msg).toBe(true);
    expect(svg, msg).not.toMatch(/NaN|undefined|Infinity/);
    expect(svg.match(/<path /g)?.length, msg).toBeGreaterThanOrEqual(9);
  });

  it('keeps the series in storage made for the run, and refuses a size that is not a bucket count', () => {
    const sources = { profiles: [] } as unknown as SimSources;
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => new SimMetrics(sources, bad), String(bad)).toThrow(/capacity must be a whole number/);
    }
    const metrics = new SimMetrics(sources, 4);
    expect(metrics.latest('t')).toBe(null);
    expect(metrics.series().t).toEqual([]);
  });

  it('runs every built-in scenario, the runners with no shots', async () => {
    const seed = 3;
    for (const name of Object.keys(BUILT_IN_SCENARIOS)) {
      const msg = `scenario ${name}, seed ${seed}`;
      const r = await run(['--scenario', name, '--seconds', '3', '--seed', String(seed)]);
      expect(r.options.scenario, msg).toBe(name);
      expect(r.figures['clients.connectedAtEnd'], msg).toBe(r.figures.bots);
      if (name === 'runners') {
        expect(r.figures['shots.rays'], msg).toBe(0);
        expect(r.figures['hitAgreement.exact'], msg).toBe(null);
        // A bucket with no ray has no share: null in the report, not NaN or 0.
        expect(r.series['hitAgreement.exact'], msg).toEqual([null, null, null]);
        expect(r.series.t, msg).toEqual([1, 2, 3]);
      } else {
        expect(r.figures['shots.rays'], msg).toBeGreaterThan(0);
      }
    }
  });
});

describe('sim: threads', () => {
  it('gives the same figures on one, two and three threads, the bots in lockstep with the server', async () => {
    const seed = 7;
    const msg = `seed ${seed}`;
    const argv = ['--bots', '16', '--profile', 'mobile', '--seconds', '3', '--seed', String(seed)];
    const runs = [];
    for (const threads of [1, 2, 3]) runs.push(await run([...argv, '--threads', String(threads)]));
    const [one, two, three] = runs.map((r) => {
      const { options, ...rest } = reproducible(r);
      return { options: { ...options, threads: 0 }, ...rest };
    });
    expect(
      runs.map((r) => r.options.threads),
      msg,
    ).toEqual([1, 2, 3]);
    expect(two, msg).toEqual(one);
    expect(three, msg).toEqual(one);
    // A real fight: every bot connected, shot and was judged.
    expect(runs[0].figures['clients.connectedAtEnd'], msg).toBe(16);
    expect(runs[0].figures['hitAgreement.exact.compared'], msg).toBeGreaterThan(100);
    expect(runs[0].figures['hitAgreement.exact'], msg).toBe(1);
    expect(runs[0].figures['prediction.corrections'], msg).toBeGreaterThan(0);
  });

  it("a group's frame queue gives its bots' frames earliest first, in bot order at equal times", () => {
    // Against a scan of every bot, as the group looked before: times on a coarse grid, so that
    // many bots are due at once, and each bot's next frame a few steps after its last.
    const seed = 11;
    const rng = new Random(seed);
    const count = 37;
    const queue = new FrameQueue(count);
    const times = new Float64Array(count);
    for (let step = 0; step < 5000; step++) {
      let due = -1;
      for (let i = 0; i < count; i++) if (due < 0 || times[i] < times[due]) due = i;
      expect(queue.nextTime, `seed ${seed}, step ${step}`).toBe(times[due]);
      expect(queue.next, `seed ${seed}, step ${step}`).toBe(due);
      times[due] += rng.int(1, 4) * 0.5;
      queue.delayNext(times[due]);
    }
    expect(new FrameQueue(0).nextTime).toBe(Number.POSITIVE_INFINITY);
  });

  it('runs on two threads by default from 16 bots with room for a window, else on one', () => {
    const threads = (argv: string[]) => resolveSimPlan(argv, dir).threads;
    expect(threads(['--bots', '4', '--profile', 'mobile'])).toBe(1);
    expect(threads(['--bots', '32', '--profile', 'lan'])).toBe(1);
    expect(threads(['--bots', '32', '--profile', 'mobile', '--soak', '5'])).toBe(1);
    expect(threads(['--bots', '32', '--profile', 'mobile'])).toBe(Math.min(2, availableParallelism()));
  });
});

describe('sim: soak', () => {
  it('samples memory and tick time every interval and fits their slopes after the warm-up', async () => {
    const seed = 5;
    const msg = `seed ${seed}`;
    const r = await run(['--bots', '4', '--seconds', '8', '--soak', '2', '--seed', String(seed)]);
    const soak = r.soak as NonNullable<SimResult['soak']>;
    expect(
      soak.samples.map((s) => s.t),
      msg,
    ).toEqual([2, 4, 6, 8]);
    expect(soak.warmUpSeconds, msg).toBe(2);
    for (const s of soak.samples) {
      expect(s.heapMB, msg).toBeGreaterThan(1);
      expect(s.rssMB, msg).toBeGreaterThanOrEqual(s.heapMB);
      expect(s.tickP99Ms, msg).toBeGreaterThanOrEqual(s.tickP50Ms as number);
      // The heap by V8 space (filled in at the end): the spaces' used sizes add up to the heap used.
      const bySpace = s.spacesMB ?? {};
      expect(bySpace.old_space, msg).toBeGreaterThan(0);
      const spaces = Object.values(bySpace).reduce((a, b) => a + b, 0);
      expect(spaces, msg).toBeCloseTo(s.heapMB, 0);
      // The compiled code and bytecode are part of the heap, and most of it is data.
      expect(s.codeMB, msg).toBeGreaterThan(0.1);
      expect(s.codeMB, msg).toBeLessThan(s.heapMB / 2);
    }
    const f = r.figures;
    expect(f['soak.samples'], msg).toBe(4);
    expect(f['soak.fittedSamples'], msg).toBe(4);
    expect(Number.isFinite(f['soak.heapMBPerHour']), msg).toBe(true);
    expect(Number.isFinite(f['soak.tickP99MsPerHour']), msg).toBe(true);
    expect(f['soak.heapMBPerHour.error'], msg).toBeGreaterThanOrEqual(0);
    expect(formatReport(r), msg).toContain('soak.heapMBPerHour');
    expect(Number.isFinite(f['soak.heapSpaceMBPerHour.old_space']), msg).toBe(true);
    expect(formatReport(r), msg).toMatch(/heap by space .*soak\.heapSpaceMBPerHour\.\*/);
    expect(formatReport(r), msg).toMatch(/(flat within noise|not flat) .*soak\.heapMBPerHour/);
    // The heap's slope split into its code's and the rest's (data), which add up to it.
    const code = f['soak.codeMBPerHour'] as number;
    const data = f['soak.dataMBPerHour'] as number;
    expect(code + data, msg).toBeCloseTo(f['soak.heapMBPerHour'] as number, 6);
    expect(f['soak.dataMB.first'], msg).toBeCloseTo(
      (f['soak.heapMB.first'] as number) - (f['soak.codeMB.first'] as number),
      9,
    );
    expect(formatReport(r), msg).toMatch(
      /(flat within noise|not flat).*; the heap less its code.*soak\.dataMBPerHour/,
    );
    expect(formatReport(r), msg).toMatch(/compiled code and bytecode .*soak\.codeMBPerHour/);
    // The resident set's slope split into the heap V8 holds, the buffers' and the rest, and the
    // rest into mapped files and anonymous memory: least-squares slopes over the same samples add.
    for (const s of soak.samples) {
      expect(s.heapCommittedMB, msg).toBeGreaterThanOrEqual(s.heapMB);
      expect(s.externalMB, msg).toBeGreaterThan(0);
      expect(s.peakMallocedMB, msg).toBeGreaterThan(0);
      if (process.platform === 'linux') {
        expect(s.fileMB, msg).toBeGreaterThan(1);
        expect(s.fileMB, msg).toBeLessThan(s.rssMB - s.heapCommittedMB);
      }
    }
    const rest = f['soak.nativeMBPerHour'] as number;
    expect(
      (f['soak.heapCommittedMBPerHour'] as number) + (f['soak.externalMBPerHour'] as number) + rest,
      msg,
    ).toBeCloseTo(f['soak.rssMBPerHour'] as number, 6);
    if (process.platform === 'linux') {
      expect((f['soak.fileMBPerHour'] as number) + (f['soak.anonymousMBPerHour'] as number), msg).toBeCloseTo(
        rest,
        6,
      );
      expect(formatReport(r), msg).toMatch(/mapped files .*soak\.fileMBPerHour/);
      expect(formatReport(r), msg).toMatch(
        /anonymous .*(flat within noise|not flat).*soak\.anonymousMBPerHour/,
      );
      // The allocator whose pages the resident set's slope outside V8 is: this process's, named.
      expect(soak.allocator, msg).toBe(allocatorOf(readFileSync('/proc/self/maps', 'latin1')));
      expect(formatReport(r), msg).toContain(`of warm-up; malloc: ${soak.allocator}`);
    }
    // Without --soak there is none.
    expect((await run(['--bots', '2', '--seconds', '1', '--seed', String(seed)])).soak, msg).toBe(null);
  });

  it('names the allocator a replacement loaded into the process, else the C library', () => {
    const glibc = [
      '7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6',
      '7f1c2b000000-7f1c2b010000 r-xp 00000000 08:01 1235 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30',
    ].join('\n');
    expect(allocatorOf(glibc)).toBe("the C library's malloc");
    expect(allocatorOf('')).toBe("the C library's malloc");
    expect(
      allocatorOf(
        `${glibc}\n7f1c2c000000-7f1c2c090000 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2`,
      ),
    ).toBe('jemalloc');
    expect(allocatorOf('7f00-7f01 r-xp 00000000 08:01 7 /opt/lib/libtcmalloc_minimal.so.4.5.9')).toBe(
      'tcmalloc',
    );
    expect(allocatorOf('7f00-7f01 r-xp 00000000 08:01 7 /usr/local/lib/libmimalloc.so.2.1')).toBe('mimalloc');
    // A name in a directory, not a library file, is not the allocator.
    expect(allocatorOf('7f00-7f01 r--p 00000000 08:01 7 /home/jemalloc/data.bin')).toBe(
      "the C library's malloc",
    );
  });

  it('fits the least-squares slope', () => {
    expect(slope([0, 1, 2, 3], [5, 7, 9, 11])).toBe(2);
    expect(slope([0, 1, 2, 3], [4, 4, 4, 4])).toBe(0);
    expect(slope([1], [3])).toBe(null);
    expect(slope([2, 2], [1, 5])).toBe(null);
    // The slope's standard error: 0 on a straight line, sqrt(0.8 / 2 / 5) for these residuals
    // (alternating: negatively correlated, so every sample counts).
    expect(fitLine([0, 1, 2, 3], [5, 7, 9, 11])).toEqual({
      slope: 2,
      standardError: 0,
      lagCorrelation: 0,
      effectiveSamples: 4,
    });
    const zigzag = fitLine([0, 1, 2, 3], [0, 1, 0, 1]);
    expect(zigzag?.slope).toBeCloseTo(0.2, 12);
    expect(zigzag?.lagCorrelation).toBeLessThan(0);
    expect(zigzag?.effectiveSamples).toBe(4);
    expect(zigzag?.standardError).toBeCloseTo(Math.sqrt(0.08), 12);
    expect(fitLine([0, 1], [0, 3])).toEqual({
      slope: 3,
      standardError: null,
      lagCorrelation: null,
      effectiveSamples: 2,
    });
  });

  it("widens the slope's error when neighbouring samples are alike (a wandering heap)", () => {
    // No trend, a slow wave: residuals that stay on one side for many samples at a time.
    const xs = Array.from({ length: 48 }, (_, i) => i);
    const ys = xs.map((x) => Math.sin(x / 4));
    const fit = fitLine(xs, ys);
    if (fit === null) throw new Error('no fit');
    expect(fit.lagCorrelation).toBeGreaterThan(0.9);
    expect(fit.effectiveSamples).toBeLessThan(3);
    // Under three independent samples' worth: no error can be claimed.
    expect(fit.standardError).toBe(null);
    // A faster wave (lag-1 correlation cos 1.3, about 0.27): the error is that of independent
    // samples times sqrt((n - 2) / (m - 2)).
    const zs = xs.map((x) => Math.sin(x * 1.3));
    const faster = fitLine(xs, zs);
    if (faster === null || faster.standardError === null) throw new Error('no error');
    const mx = xs.reduce((a, x) => a + x, 0) / xs.length;
    const mz = zs.reduce((a, z) => a + z, 0) / zs.length;
    let sxx = 0;
    let ss = 0;
    for (let i = 0; i < xs.length; i++) {
      sxx += (xs[i] - mx) ** 2;
      ss += (zs[i] - mz - faster.slope * (xs[i] - mx)) ** 2;
    }
    const independent = Math.sqrt(ss / (xs.length - 2) / sxx);
    // The residuals' lag-1 autocorrelation, computed here, and what it makes of 48 samples.
    let lag = 0;
    let prev = 0;
    for (let i = 0; i < xs.length; i++) {
      const r = zs[i] - mz - faster.slope * (xs[i] - mx);
      if (i > 0) lag += r * prev;
      prev = r;
    }
    const rho = lag / ss;
    expect(rho).toBeGreaterThan(0.2);
    expect(faster.lagCorrelation).toBeCloseTo(rho, 12);
    expect(faster.effectiveSamples).toBeCloseTo((48 * (1 - rho)) / (1 + rho), 12);
    expect(faster.standardError).toBeCloseTo(
      independent * Math.sqrt((xs.length - 2) / (faster.effectiveSamples - 2)),
      12,
    );
    expect(faster.standardError).toBeGreaterThan(independent);
  });
});

describe('sim: bad input is refused before anything runs', () => {
  const badProfile = file('bad-profile.json', { name: 'bad', latencyMs: -5 });
  const lossy = file('lossy.json', { name: 'lossy', loss: 1.5 });
  const broken = file('broken.json', '{ "latencyMs": 5,');
  const misnamed = file('slow-link.json', { name: 'fast-link', latencyMs: 5 });
  const halfBurst = file('bursty.json', { name: 'bursty', burst: { enter: 0.1 } });
  const scenarios = {
    unknownField: file('s1.json', { botz: 3 }),
    groupCount: file('s2.json', { groups: [{ count: 2 }, { count: 0 }] }),
    inlineProfile: file('s3.json', { profiles: ['lan', { loss: 2 }] }),
    mode: file('s4.json', { lagCompensation: 'fast' }),
    both: file('s5.json', { profile: 'lan', groups: [{ count: 2 }] }),
    groups: file('s6.json', { groups: [{ count: 3, profile: 'lan' }] }),
    badFile: file('s7.json', { profile: 'bad-profile.json' }),
    rates: file('s8.json', { tickRate: 20, updateRate: 30 }),
    kind: file('s9.json', { groups: [{ count: 1, bot: 'sniper' }] }),
  };
  const cases: [string[], RegExp][] = [
    [['--bost', '3'], /unknown option "--bost" \(did you mean --bots\?\)/],
    [['extra'], /unexpected argument "extra"/],
    [['--bots', '-3'], /--bots: must be an integer in \[1, 512\], got "-3"/],
    [['--bots', '2.5'], /--bots: must be an integer/],
    [['--seconds', 'abc'], /--seconds: must be a number in \(0, 86400\], got "abc"/],
    [['--seconds', '0'], /--seconds: must be a number in \(0, 86400\]/],
    [['--seed'], /--seed: needs a value/],
    [['--seed', '--bots', '3'], /--seed: needs a value/],
    [['--transport', 'tcp'], /--transport: must be one of memory, udp, got "tcp"/],
    [['--lag-comp', 'maybe'], /--lag-comp: must be one of exact, estimate, off/],
    [['--aim-error=-1'], /--aim-error: must be a number in \[0, 1000\], got "-1"/],
    [['--runner-share', '1.5'], /--runner-share: must be a number in \[0, 1\]/],
    [['--interp-delay', 'soon'], /--interp-delay: must be "adaptive" or a number/],
    [['--soak', '0'], /--soak: must be a number in \[1, 3600\], got "0"/],
    [['--quiet=yes'], /--quiet: takes no value/],
    [
      ['--update-rate', '128', '--tick-rate', '64'],
      /--update-rate: 128 snapshots per second is more than the tick rate \(64\)/,
    ],
    [['--profile', 'nosuch'], /--profile nosuch: "nosuch" is not a named profile/],
    [['--profile', 'missing.json'], /--profile missing.json: cannot read .*missing\.json/],
    [['--profile', badProfile], /profile\.latencyMs: must be a number in \[0, 60000\], got -5/],
    [['--profile', lossy], /profile\.loss: must be a number in \[0, 1\], got 1\.5/],
    [['--profile', broken], /is not valid JSON/],
    [['--profile', misnamed], /the profile is named "fast-link" but its file "slow-link"/],
    [['--profile', halfBurst], /profile\.burst\.exit: missing \(a number in \[0, 1\]\)/],
    [['--strict=yes'], /--strict: takes no value/],
    [
      ['--scenario', 'nosuch'],
      /--scenario nosuch: not a built-in scenario \(deathmatch, runners, duel, mixed\)/,
    ],
    [['--scenario', scenarios.unknownField], /scenario: unknown field "botz"/],
    [
      ['--scenario', scenarios.groupCount],
      /scenario\.groups\[1\]\.count: must be an integer in \[1, 512\], got 0/,
    ],
    [
      ['--scenario', scenarios.inlineProfile],
      /scenario\.profiles\[1\]: profile\.loss: must be a number in \[0, 1\], got 2/,
    ],
    [
      ['--scenario', scenarios.mode],
      /scenario\.lagCompensation: must be one of exact, estimate, off, got "fast"/,
    ],
    [['--scenario', scenarios.both], /scenario: give only one of profile, profiles and groups/],
    [['--scenario', scenarios.groups, '--bots', '4'], /--bots: scenario "custom" sets its bots in groups/],
    [
      ['--scenario', scenarios.badFile],
      /scenario\.profile: .*profile\.latencyMs: must be a number in \[0, 60000\], got -5/,
    ],
    [
      ['--scenario', scenarios.rates],
      /scenario\.updateRate: 30 snapshots per second is more than the tick rate \(20\)/,
    ],
    [['--scenario', scenarios.kind], /scenario\.groups\[0\]\.bot: must be one of aim, runner, got "sniper"/],
    [['--json', join(dir, 'no-such-dir', 'out.json')], /--json: the directory of .* does not exist/],
    [['--chart', 'out.png'], /--chart: must name a \.svg file, got "out\.png"/],
    [['--record', 'out.json'], /--record: must name a \.demo file, got "out\.json"/],
    [['--threads', '0'], /--threads: must be an integer in \[1, 16\], got "0"/],
    [['--threads', '2', '--transport', 'udp'], /--threads: only the memory transport runs on threads/],
    [['--threads', '2', '--soak', '5'], /--threads: a soak measures one thread's heap/],
    [['--threads', '3', '--bots', '2'], /--threads: 3 threads for 2 bots/],
    [['--threads', '2', '--profile', 'lan'], /--threads: the bots' profiles allow no lockstep window/],
  ];
  for (const [argv, message] of cases) {
    it(`refuses ${argv.join(' ').replace(dir, '<dir>')}`, () => {
      expect(() => resolveSimPlan(argv, dir)).toThrow(message);
    });
  }

  it('exits with status 2 and the message from the command line, writing nothing', () => {
    const out = join(dir, 'never.json');
    const r = spawnSync(
      process.execPath,
      [
        '--conditions=backstep-source',
        '--import',
        'tsx',
        'tools/sim.ts',
        '--bots',
        '4',
        '--profile',
        lossy,
        '--json',
        out,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^sim: --profile .*profile\.loss: must be a number in \[0, 1\], got 1\.5/);
    expect(r.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });
});

describe('sim: --record', () => {
  it('writes the match as a demo that opens and holds every tick, its shots and kills', async () => {
    const out = join(dir, 'match.demo');
    const r = await run([
      '--bots',
      '4',
      '--profile',
      'dsl',
      '--seconds',
      '6',
      '--seed',
      '3',
      '--record',
      out,
    ]);
    const bytes = new Uint8Array(readFileSync(out));
    expect(r.demo?.bytes).toBe(bytes.length);
    const player = DemoPlayer.open(bytes, arenaGame);
    if (!(player instanceof DemoPlayer)) throw new Error(player.message);
    expect(player.ticks.length).toBe(r.demo?.ticks);
    expect(player.ticks.length).toBeGreaterThanOrEqual(6 * 64);
    expect(player.ticks.reduce((n, t) => n + t.head.shots.length, 0)).toBe(r.demo?.shots);
    expect(r.demo?.shots).toBeGreaterThan(20);
    expect(player.killcams.length).toBe(r.demo?.killcams);
  });
});

describe('sim: the verdict', () => {
  const base = (figures: Record<string, number | null>, lagCompensation = 'exact') =>
    ({ figures, options: { lagCompensation } }) as unknown as SimResult;

  it('flags agreement below 100 %, guessed views over 1 %, choke and refused views, each with a cause', () => {
    expect(
      judgeRun(base({ 'hitAgreement.exact': 1, 'view.extrapolatedShare': 0.004, 'choke.share': 0 })),
    ).toEqual([]);
    const bad = judgeRun(
      base({
        'hitAgreement.exact': 0.47,
        'lagCompensation.viewsRefused': 900,
        'lagCompensation.tooOld': 12,
        'view.extrapolatedShare': 0.2,
        'view.heldShare': 0.05,
        'choke.share': 0,
      }),
    );
    expect(bad.map((f) => f.figure)).toEqual([
      'hitAgreement.exact',
      'view.extrapolatedShare + view.heldShare',
    ]);
    expect(bad[0].cause).toMatch(/refused 900 named views the client expected it to honour/);
    const refusedOnly = judgeRun(
      base({ 'hitAgreement.exact': 1, 'lagCompensation.viewsRefused': 3, 'choke.share': 0.02 }),
    );
    expect(refusedOnly.map((f) => f.figure)).toEqual(['lagCompensation.viewsRefused', 'choke.share']);
    expect(formatFlags(refusedOnly)).toMatch(
      /verdict: 2 figures flagged\n {2}lagCompensation\.viewsRefused = 3/,
    );
    expect(formatFlags([])).toMatch(/no figure past its threshold/);
    // Outside outages is what counts when it is measured; a disagreement on an honoured view is a bug.
    const steady = judgeRun(
      base({
        'hitAgreement.exact': 0.999,
        'disagreements.honoured': 2,
        'view.extrapolatedShare': 0.2,
        'view.steadyGuessedShare': 0.004,
      }),
    );
    expect(steady.map((f) => f.figure)).toEqual(['hitAgreement.exact']);
    // Choke while the rate control climbs from its start is not flagged; after it, it is.
    const start = base({ 'hitAgreement.exact': 1, 'choke.share': 0.01, 'choke.steadyShare': 0 });
    expect(judgeRun(start)).toEqual([]);
    const late = base({ 'hitAgreement.exact': 1, 'choke.share': 0.01, 'choke.steadyShare': 0.005 });
    expect(judgeRun(late).map((f) => f.figure)).toEqual(['choke.steadyShare']);
    expect(steady[0].cause).toMatch(/2 rays disagree on views the server honoured/);
    // A hit shown for a shot whose command never reached the server is flagged; such shots alone are not.
    const lostShots = base({ 'hitAgreement.exact': 1, 'shots.unjudged': 3, 'shots.unjudgedHitsShown': 2 });
    expect(judgeRun(lostShots).map((f) => f.figure)).toEqual(['shots.unjudgedHitsShown']);
    expect(judgeRun(lostShots)[0].cause).toMatch(/for 3 shooting commands the server never ran/);
    expect(
      judgeRun(base({ 'hitAgreement.exact': 1, 'shots.unjudged': 3, 'shots.unjudgedHitsShown': 0 })),
    ).toEqual([]);
    expect(judgeRun(base({ 'view.steadyGuessedShare': 0.02 })).map((f) => f.figure)).toEqual([
      'view.steadyGuessedShare',
    ]);
  });

  it('counts guessed views outside outages only: not the start, not an event and the second after it', () => {
    const spikes = NAMED_PROFILES.spikes;
    const first = spikes.events[0];
    expect(steadyBetween(null, 0, 1000)).toBe(false);
    expect(steadyBetween(null, STEADY_AFTER_MS, STEADY_AFTER_MS + 1000)).toBe(true);
    expect(steadyBetween(spikes, first.atMs - 1000, first.atMs)).toBe(true);
    expect(steadyBetween(spikes, first.atMs - 1000, first.atMs + 1)).toBe(false);
    const over = first.atMs + first.durationMs + OUTAGE_RECOVERY_MS;
    expect(steadyBetween(spikes, over - 1, over + 999)).toBe(false);
    expect(steadyBetween(spikes, over, over + 1000)).toBe(true);
  });

  it('--strict makes a flagged run exit 1, and a clean one 0', () => {
    const sim = (...args: string[]) =>
      spawnSync(
        process.execPath,
        ['--conditions=backstep-source', '--import', 'tsx', 'tools/sim.ts', ...args, '--quiet', '--strict'],
        { encoding: 'utf8', timeout: 60_000 },
      );
    // A rate far below what 4 players' snapshots need: frames held back (choke), flagged.
    const bad = sim('--bots', '4', '--seconds', '4', '--profile', 'lan', '--rate', '3000');
    expect(bad.stdout).toMatch(/verdict: \d+ figures? flagged/);
    expect(bad.stdout).toMatch(/choke\.share = /);
    expect(bad.status).toBe(1);
    const clean = sim('--scenario', 'runners', '--bots', '4', '--seconds', '20', '--profile', 'lan');
    expect(clean.stdout).toMatch(/verdict: no figure past its threshold/);
    expect(clean.status).toBe(0);
  });
});

describe('sim: scenarios resolve to bots', () => {
  it('assigns groups, round-robin profiles, runner shares and command-line overrides', () => {
    const groups = resolveSimPlan(['--scenario', 'mixed'], dir);
    expect(groups.bots.map((b) => `${b.profileName}:${b.kind}`)).toEqual([
      ...Array(4).fill('lan:aim'),
      ...Array(4).fill('dsl:aim'),
      ...Array(4).fill('mobile:aim'),
      ...Array(2).fill('terrible:aim'),
      ...Array(2).fill('dsl:runner'),
    ]);
    const roundRobin = resolveSimPlan(
      ['--scenario', file('rr.json', { profiles: ['lan', 'none'], bots: 5, runnerShare: 0.4 })],
      dir,
    );
    expect(roundRobin.bots.map((b) => `${b.profileName}:${b.kind}`)).toEqual([
      'lan:aim',
      'none:aim',
      'lan:aim',
      'none:runner',
      'lan:runner',
    ]);
    expect(roundRobin.bots[1].profile).toBe(null);
    const override = resolveSimPlan(
      ['--scenario', 'mixed', '--profile', 'congested', '--aim-error', '3'],
      dir,
    );
    expect(new Set(override.bots.map((b) => `${b.profileName}:${b.aimErrorUnits}`))).toEqual(
      new Set(['congested:3']),
    );
    const defaults = resolveSimPlan([], dir);
    expect(defaults.bots.length).toBe(8);
    expect(defaults.scenario.lagCompensation).toBe('exact');
    expect(defaults.transport).toBe('memory');
  });
});

describe('sim: the conditioner in front of a socket', () => {
  function pair(profile: unknown, seed: number) {
    const network = new MemoryNetwork({ seed });
    const server = network.createEndpoint('server');
    const inner = network.createEndpoint('client');
    return { server, client: new ConditionedEndpoint(inner, parseProfile(profile), seed) };
  }

  it('holds sends for the latency, and arrivals too', () => {
    const seed = 5;
    const msg = `seed ${seed}`;
    const { server, client } = pair({ latencyMs: 40 }, seed);
    const got: number[] = [];
    client.send('server', new Uint8Array([1, 2, 3]));
    server.poll(39, () => got.push(-1));
    client.pump(39);
    server.poll(39, () => got.push(-1));
    expect(got, msg).toEqual([]);
    client.pump(40);
    server.poll(40, (_from, data) => got.push(data.length));
    expect(got, msg).toEqual([3]);
    server.send('client', new Uint8Array([9]));
    const back: string[] = [];
    client.poll(41, (from) => back.push(from));
    client.poll(80, (from) => back.push(from));
    expect(back, msg).toEqual([]);
    client.poll(81, (from, data) => back.push(`${from}:${data[0]}`));
    expect(back, msg).toEqual(['server:9']);
  });

  it('drops everything at loss 1 and doubles everything at duplicate 1', () => {
    const seed = 6;
    const msg = `seed ${seed}`;
    const lost = pair({ loss: 1 }, seed);
    for (let i = 0; i < 10; i++) lost.client.send('server', new Uint8Array([i]));
    let count = 0;
    lost.client.pump(1);
    lost.server.poll(1, () => count++);
    expect(count, msg).toBe(0);
    expect(lost.client.up.stats.droppedRandom, msg).toBe(10);
    const doubled = pair({ duplicate: 1 }, seed);
    for (let i = 0; i < 10; i++) doubled.client.send('server', new Uint8Array([i]));
    doubled.client.pump(1);
    doubled.server.poll(1, () => count++);
    expect(count, msg).toBe(20);
  });
});

describe('sim: real UDP on loopback', () => {
  it('runs bots over conditioned sockets in real time, then closes every socket', async () => {
    const r = await run(['--transport', 'udp', '--bots', '3', '--seconds', '2', '--profile', 'lan']);
    expect(r.options.transport).toBe('udp');
    expect(r.figures['clients.connectedAtEnd']).toBe(3);
    expect(r.figures['snapshots.sent']).toBeGreaterThan(50);
    expect(r.figures['bytesPerClientPerSecond.down']).toBeGreaterThan(0);
    expect(r.series.t).toEqual([1, 2]);
  });
});
