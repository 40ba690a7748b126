// The sim's command line: every option parsed and checked, the scenario and profiles loaded and
// merged into one plan, all before anything runs; any bad input is refused naming it.

import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { NAMED_PROFILES } from '../../src/net/profile.ts';
import { LAG_COMPENSATION_MODES, type LagCompensationMode } from '../../src/server/lag-compensation.ts';
import { describeValue } from '../../src/sim/json-checks.ts';
import { lockstepWindowMs } from './lockstep.ts';
import {
  type BotKind,
  BUILT_IN_SCENARIOS,
  describeRange,
  inRange,
  loadScenario,
  NO_PROFILE,
  type ProfileChoice,
  RANGES,
  resolveProfile,
  type Scenario,
} from './scenario.ts';

export type Transport = 'memory' | 'udp';
export const TRANSPORTS: readonly Transport[] = ['memory', 'udp'];

/** One bot as it will play. */
export interface BotPlan {
  kind: BotKind;
  profile: ProfileChoice;
  /** The profile's name as given ("none" for no conditioner). */
  profileName: string;
  aimErrorUnits: number;
}

/** Everything a run needs, resolved and checked. */
export interface SimPlan {
  /** The scenario with the command line's overrides applied. */
  scenario: Scenario;
  bots: BotPlan[];
  seed: number;
  transport: Transport;
  /** Output files (absolute), or null. */
  json: string | null;
  chart: string | null;
  /** Demo file to record the match into (absolute), or null. */
  record: string | null;
  /** Progress lines while it runs. */
  progress: boolean;
  /** Exit non-zero when the report flags a figure (see verdict.ts). */
  strict: boolean;
  /** Seconds between soak samples (memory and tick time, with their slopes), or null: no soak. */
  soakSeconds: number | null;
  /**
   * Threads the bots run on over memory (the server and some bots on the main one, the rest on
   * workers in lockstep): the figures are the same for any number.
   */
  threads: number;
}

/** The command line as given: null for what was not. */
export interface SimArgs {
  scenario: string | null;
  bots: number | null;
  profile: string | null;
  seconds: number | null;
  seed: number | null;
  transport: Transport | null;
  lagCompensation: LagCompensationMode | null;
  aimErrorUnits: number | null;
  runnerShare: number | null;
  tickRate: number | null;
  updateRate: number | null;
  rateBytesPerSecond: number | null;
  interpolationDelayMs: number | 'adaptive' | null;
  frameRate: number | null;
  soak: number | null;
  threads: number | null;
  json: string | null;
  chart: string | null;
  record: string | null;
  quiet: boolean;
  strict: boolean;
  help: boolean;
}

const SEED_RANGE = { min: 0, max: 0xffffffff, integer: true } as const;
const SOAK_RANGE = { min: 1, max: 3600 } as const;
const THREADS_RANGE = { min: 1, max: 16, integer: true } as const;
/** Below this many bots, or windows shorter than this (ms), one thread is faster. */
const MIN_THREADED_BOTS = 16;
const MIN_WINDOW_MS = 5;

export const USAGE = `usage: npm run sim -- [options]

  --scenario NAME|FILE    ${Object.keys(BUILT_IN_SCENARIOS).join(', ')} (default deathmatch), or a scenario JSON file
  --bots N                number of bots (1..512)
  --profile NAME|FILE     every bot's network profile: ${Object.keys(NAMED_PROFILES).join(', ')}, ${NO_PROFILE}, or a JSON file
  --seconds S             how long to run (simulated seconds; real seconds over udp)
  --seed N                seed of everything random (0..4294967295, default 1)
  --transport memory|udp  memory: simulated time, reproducible; udp: real sockets on 127.0.0.1, real time
  --lag-comp MODE         the lag compensation mode that decides: exact, estimate, off (all three are measured)
  --aim-error UNITS       aim bots' aim error, standard deviation per axis (default 12)
  --runner-share SHARE    share of the bots that only move (0..1)
  --tick-rate HZ          server ticks per second (default 64)
  --update-rate HZ        snapshots per second each client asks for (default 32)
  --rate BYTES            bytes per second each client lets the server send (default 80000)
  --interp-delay MS       interpolation delay, ms, or "adaptive" (default 0: adaptive, at most max(100, two intervals) raised by the jitter and loss bursts)
  --frame-rate FPS        client frames per second (default 60)
  --soak S                every S seconds sample memory (after a full collection) and tick time; report
                          their slopes per hour after a warm-up (the first quarter of the run)
  --threads N             memory transport: run the bots on N threads in lockstep with the server (the
                          same figures as on one); default 2 from 16 bots when the profiles' least
                          one-way delay allows windows of 5 ms or more, else 1
  --json FILE             write every figure, the options and the per-second series as JSON
  --chart FILE.svg        draw the figures over time
  --record FILE.demo      record the match as a demo (world, events, shots with their views, kills, killcams)
  --quiet                 no progress lines
  --strict                exit 1 when the report flags a figure (agreement below 100 %, guessed views, choke, refused views)
  --help                  this text

Scenario files and the figures are described in tools/sim/README.md; profiles in profiles/README.md.`;

type Kind =
  | 'string'
  | 'flag'
  | {
      range:
        | typeof SEED_RANGE
        | typeof SOAK_RANGE
        | typeof THREADS_RANGE
        | (typeof RANGES)[keyof typeof RANGES];
    };

const OPTIONS: Readonly<Record<string, { key: keyof SimArgs; kind: Kind }>> = {
  '--scenario': { key: 'scenario', kind: 'string' },
  '--bots': { key: 'bots', kind: { range: RANGES.bots } },
  '--profile': { key: 'profile', kind: 'string' },
  '--seconds': { key: 'seconds', kind: { range: RANGES.seconds } },
  '--seed': { key: 'seed', kind: { range: SEED_RANGE } },
  '--transport': { key: 'transport', kind: 'string' },
  '--lag-comp': { key: 'lagCompensation', kind: 'string' },
  '--aim-error': { key: 'aimErrorUnits', kind: { range: RANGES.aimErrorUnits } },
  '--runner-share': { key: 'runnerShare', kind: { range: RANGES.runnerShare } },
  '--tick-rate': { key: 'tickRate', kind: { range: RANGES.tickRate } },
  '--update-rate': { key: 'updateRate', kind: { range: RANGES.updateRate } },
  '--rate': { key: 'rateBytesPerSecond', kind: { range: RANGES.rateBytesPerSecond } },
  '--interp-delay': { key: 'interpolationDelayMs', kind: 'string' },
  '--frame-rate': { key: 'frameRate', kind: { range: RANGES.frameRate } },
  '--soak': { key: 'soak', kind: { range: SOAK_RANGE } },
  '--threads': { key: 'threads', kind: { range: THREADS_RANGE } },
  '--json': { key: 'json', kind: 'string' },
  '--chart': { key: 'chart', kind: 'string' },
  '--record': { key: 'record', kind: 'string' },
  '--quiet': { key: 'quiet', kind: 'flag' },
  '--strict': { key: 'strict', kind: 'flag' },
  '--help': { key: 'help', kind: 'flag' },
};

function emptyArgs(): SimArgs {
  return {
    scenario: null,
    bots: null,
    profile: null,
    seconds: null,
    seed: null,
    transport: null,
    lagCompensation: null,
    aimErrorUnits: null,
    runnerShare: null,
    tickRate: null,
    updateRate: null,
    rateBytesPerSecond: null,
    interpolationDelayMs: null,
    frameRate: null,
    soak: null,
    threads: null,
    json: null,
    chart: null,
    record: null,
    quiet: false,
    strict: false,
    help: false,
  };
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

function unknownOption(flag: string): Error {
  let best = '';
  let bestD = Infinity;
  for (const name of Object.keys(OPTIONS)) {
    const d = distance(flag, name);
    if (d < bestD) {
      bestD = d;
      best = name;
    }
  }
  const hint = bestD <= 3 ? ` (did you mean ${best}?)` : '';
  return new Error(`unknown option ${describeValue(flag)}${hint}; see --help`);
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function parseNumber(flag: string, text: string, range: Parameters<typeof inRange>[1]): number {
  const n = NUMBER.test(text) ? Number(text) : Number.NaN;
  if (!inRange(n, range))
    throw new Error(`${flag}: must be ${describeRange(range)}, got ${describeValue(text)}`);
  return n;
}

function parseChoice<T extends string>(flag: string, text: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(text)) {
    throw new Error(`${flag}: must be one of ${choices.join(', ')}, got ${describeValue(text)}`);
  }
  return text as T;
}

/**
 * Parses the command line (`--name value` or `--name=value`) and checks each value's syntax and
 * range. Throws an Error naming the option: unknown, missing its value, or out of range.
 */
export function parseSimArgs(argv: readonly string[]): SimArgs {
  const args = emptyArgs();
  const set = args as unknown as Record<keyof SimArgs, SimArgs[keyof SimArgs]>;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (!word.startsWith('--')) throw new Error(`unexpected argument ${describeValue(word)}; see --help`);
    const eq = word.indexOf('=');
    const flag = eq < 0 ? word : word.slice(0, eq);
    const spec = Object.hasOwn(OPTIONS, flag) ? OPTIONS[flag] : undefined;
    if (spec === undefined) throw unknownOption(flag);
    if (spec.kind === 'flag') {
      if (eq >= 0) throw new Error(`${flag}: takes no value, got ${describeValue(word.slice(eq + 1))}`);
      set[spec.key] = true;
      continue;
    }
    let text: string;
    if (eq >= 0) {
      text = word.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new Error(`${flag}: needs a value; see --help`);
      text = next;
      i++;
    }
    if (text.length === 0) throw new Error(`${flag}: needs a value; see --help`);
    if (spec.kind === 'string') set[spec.key] = text;
    else set[spec.key] = parseNumber(flag, text, spec.kind.range);
  }
  if (args.transport !== null) args.transport = parseChoice('--transport', args.transport, TRANSPORTS);
  if (args.lagCompensation !== null) {
    args.lagCompensation = parseChoice('--lag-comp', args.lagCompensation, LAG_COMPENSATION_MODES);
  }
  if (typeof args.interpolationDelayMs === 'string' && args.interpolationDelayMs !== 'adaptive') {
    const text = args.interpolationDelayMs;
    const range = RANGES.interpolationDelayMs;
    const n = NUMBER.test(text) ? Number(text) : Number.NaN;
    if (!inRange(n, range)) {
      throw new Error(
        `--interp-delay: must be "adaptive" or ${describeRange(range)} (0: the default), got ${describeValue(text)}`,
      );
    }
    args.interpolationDelayMs = n;
  }
  return args;
}

/** Where relative paths on the command line are resolved: the directory `npm run` was started in. */
export function commandDirectory(): string {
  return process.env.INIT_CWD ?? process.cwd();
}

function outputFile(flag: string, path: string, baseDir: string, extension: string): string {
  const file = resolve(baseDir, path);
  if (!file.toLowerCase().endsWith(extension)) {
    throw new Error(`${flag}: must name a ${extension} file, got ${describeValue(path)}`);
  }
  let isDirectory = false;
  try {
    isDirectory = statSync(dirname(file)).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) throw new Error(`${flag}: the directory of ${file} does not exist`);
  return file;
}

/**
 * Loads the scenario (default deathmatch) and any profile file, applies the command line over
 * the scenario field by field, checks the combination, and lists the bots. Relative paths are
 * resolved against `baseDir`. Throws an Error naming the offending option or field.
 */
export function planSim(args: SimArgs, baseDir: string): SimPlan {
  const scenario = loadScenario(args.scenario ?? 'deathmatch', baseDir);
  const profileOverride =
    args.profile === null ? undefined : resolveProfile(args.profile, `--profile ${args.profile}`, baseDir);
  if (args.bots !== null && scenario.groups !== null) {
    throw new Error(
      `--bots: scenario ${describeValue(scenario.name)} sets its bots in groups (${scenario.bots} in all); leave out --bots or use a scenario without groups`,
    );
  }
  if (args.runnerShare !== null && scenario.groups !== null) {
    throw new Error(
      `--runner-share: scenario ${describeValue(scenario.name)} sets each group's bot kind; leave out --runner-share`,
    );
  }
  const s: Scenario = { ...scenario };
  if (args.bots !== null) s.bots = args.bots;
  if (args.seconds !== null) s.seconds = args.seconds;
  if (args.lagCompensation !== null) s.lagCompensation = args.lagCompensation;
  if (args.aimErrorUnits !== null) s.aimErrorUnits = args.aimErrorUnits;
  if (args.runnerShare !== null) s.runnerShare = args.runnerShare;
  if (args.tickRate !== null) s.tickRate = args.tickRate;
  if (args.updateRate !== null) s.updateRate = args.updateRate;
  if (args.rateBytesPerSecond !== null) s.rateBytesPerSecond = args.rateBytesPerSecond;
  if (args.interpolationDelayMs !== null) s.interpolationDelayMs = args.interpolationDelayMs;
  if (args.frameRate !== null) s.frameRate = args.frameRate;
  if (s.updateRate > s.tickRate) {
    throw new Error(
      `--update-rate: ${s.updateRate} snapshots per second is more than the tick rate (${s.tickRate}); the server cannot send more often than it ticks`,
    );
  }
  const bots: BotPlan[] = [];
  const nameOf = (p: ProfileChoice) =>
    profileOverride !== undefined ? (args.profile as string) : nameOfProfile(p);
  if (s.groups !== null) {
    for (const g of s.groups) {
      for (let i = 0; i < g.count; i++) {
        const profile = profileOverride !== undefined ? profileOverride : g.profile;
        bots.push({
          kind: g.bot,
          profile,
          profileName: nameOf(profile),
          aimErrorUnits: args.aimErrorUnits ?? g.aimErrorUnits ?? s.aimErrorUnits,
        });
      }
    }
  } else {
    const profiles = s.profiles ?? [];
    const runners = Math.round(s.bots * s.runnerShare);
    for (let i = 0; i < s.bots; i++) {
      const profile = profileOverride !== undefined ? profileOverride : profiles[i % profiles.length];
      bots.push({
        kind: i >= s.bots - runners ? 'runner' : 'aim',
        profile,
        profileName: nameOf(profile),
        aimErrorUnits: s.aimErrorUnits,
      });
    }
  }
  const json = args.json === null ? null : outputFile('--json', args.json, baseDir, '.json');
  const chart = args.chart === null ? null : outputFile('--chart', args.chart, baseDir, '.svg');
  const record = args.record === null ? null : outputFile('--record', args.record, baseDir, '.demo');
  const transport = args.transport ?? 'memory';
  return {
    scenario: s,
    bots,
    seed: args.seed ?? 1,
    transport,
    json,
    chart,
    record,
    progress: !args.quiet,
    strict: args.strict,
    soakSeconds: args.soak,
    threads: planThreads(args, transport, s, bots),
  };
}

/** --threads checked against the run, or the default (see USAGE). */
function planThreads(args: SimArgs, transport: Transport, s: Scenario, bots: BotPlan[]): number {
  const asked = args.threads;
  const windowMs = lockstepWindowMs(s, bots);
  if (asked === null) {
    const threaded =
      transport === 'memory' &&
      args.soak === null &&
      bots.length >= MIN_THREADED_BOTS &&
      windowMs >= MIN_WINDOW_MS;
    return threaded ? Math.min(2, availableParallelism()) : 1;
  }
  if (asked === 1) return 1;
  if (transport !== 'memory') throw new Error('--threads: only the memory transport runs on threads');
  if (args.soak !== null) {
    throw new Error("--threads: a soak measures one thread's heap; leave out --threads or --soak");
  }
  if (asked > bots.length) throw new Error(`--threads: ${asked} threads for ${bots.length} bots`);
  if (windowMs <= 0) {
    throw new Error(
      `--threads: the bots' profiles allow no lockstep window (a datagram may arrive within a frame of being sent: the least one-way delay must exceed 1000 / frame rate + frame jitter = ${(1000 / s.frameRate + s.frameJitterMs).toFixed(1)} ms)`,
    );
  }
  return asked;
}

function nameOfProfile(p: ProfileChoice): string {
  return p === null ? NO_PROFILE : p.name;
}

/** parseSimArgs then planSim: the whole command line checked, or an Error naming what is wrong. */
export function resolveSimPlan(argv: readonly string[], baseDir: string = commandDirectory()): SimPlan {
  return planSim(parseSimArgs(argv), baseDir);
}

/** A run's options as plain data: the JSON's `options` and the header line. */
export interface SimOptionsSummary {
  scenario: string;
  bots: number;
  aimBots: number;
  runnerBots: number;
  /** Bots per profile name. */
  profiles: Record<string, number>;
  seconds: number;
  seed: number;
  transport: Transport;
  /** The mode that decides; every shot is judged in all of `measuredModes`. */
  lagCompensation: LagCompensationMode;
  measuredModes: readonly LagCompensationMode[];
  aimErrorUnits: number;
  switchPerSecond: number;
  damage: boolean;
  respawnMs: number;
  tickRate: number;
  updateRate: number;
  rateBytesPerSecond: number;
  maxUnlagMs: number;
  interpolationDelayMs: number | 'adaptive';
  frameRate: number;
  frameJitterMs: number;
  /** Threads the bots ran on (the figures do not depend on it). */
  threads: number;
}

/** The plan as plain data, for the JSON output and the header line. */
export function describePlan(plan: SimPlan): SimOptionsSummary {
  const s = plan.scenario;
  const profiles: Record<string, number> = {};
  let runners = 0;
  for (const b of plan.bots) {
    profiles[b.profileName] = (profiles[b.profileName] ?? 0) + 1;
    if (b.kind === 'runner') runners++;
  }
  return {
    scenario: s.name,
    bots: plan.bots.length,
    aimBots: plan.bots.length - runners,
    runnerBots: runners,
    profiles,
    seconds: s.seconds,
    seed: plan.seed,
    transport: plan.transport,
    lagCompensation: s.lagCompensation,
    measuredModes: LAG_COMPENSATION_MODES,
    aimErrorUnits: s.aimErrorUnits,
    switchPerSecond: s.switchPerSecond,
    damage: s.damage,
    respawnMs: s.respawnMs,
    tickRate: s.tickRate,
    updateRate: s.updateRate,
    rateBytesPerSecond: s.rateBytesPerSecond,
    maxUnlagMs: s.maxUnlagMs,
    interpolationDelayMs: s.interpolationDelayMs,
    frameRate: s.frameRate,
    frameJitterMs: s.frameJitterMs,
    threads: plan.threads,
  };
}
