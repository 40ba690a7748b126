// Simulation scenarios: the document that says who plays and how (bots, aim, per-bot network
// profiles, rates, lag compensation), its validator, and the named built-ins. Schema: tools/sim/README.md.

import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { NAMED_PROFILES, type NetworkProfile, parseProfile } from '../../src/net/profile.ts';
import { LAG_COMPENSATION_MODES, type LagCompensationMode } from '../../src/server/lag-compensation.ts';
import {
  describeValue,
  expectObject,
  type JsonObject,
  readString,
  rejectUnknown,
} from '../../src/sim/json-checks.ts';

/** Aim bots aim at the players they drew and fire; runner bots only move. */
export type BotKind = 'aim' | 'runner';
export const BOT_KINDS: readonly BotKind[] = ['aim', 'runner'];

/** A network profile, or null for no conditioner (instant delivery in memory, the bare loopback over UDP). */
export type ProfileChoice = NetworkProfile | null;

/** The profile name that means "no conditioner". */
export const NO_PROFILE = 'none';

export interface BotGroup {
  count: number;
  profile: ProfileChoice;
  bot: BotKind;
  /** This group's aim error, or null for the scenario's. */
  aimErrorUnits: number | null;
}

export interface Scenario {
  name: string;
  description: string;
  /** Bots in all (when there are no groups), and the share of them that are runners (rounded). */
  bots: number;
  runnerShare: number;
  /** Standard deviation of the aim bots' aim point error, units per axis. */
  aimErrorUnits: number;
  /** Chance per second an aim bot switches weapon. */
  switchPerSecond: number;
  /** The arena's rules (damage, death, respawn after respawnMs); off: nobody is hurt. */
  damage: boolean;
  respawnMs: number;
  /** Profiles assigned round-robin to the bots (one for all when there is one); null with groups. */
  profiles: ProfileChoice[] | null;
  groups: BotGroup[] | null;
  tickRate: number;
  updateRate: number;
  rateBytesPerSecond: number;
  /** The mode whose verdict decides the game; all three are always measured. */
  lagCompensation: LagCompensationMode;
  maxUnlagMs: number;
  /** 0: the engine's default (max of 100 ms and two snapshot intervals); or 'adaptive'. */
  interpolationDelayMs: number | 'adaptive';
  /** Client frames per second, and the random extra added to each frame's interval, ms. */
  frameRate: number;
  frameJitterMs: number;
  seconds: number;
}

export const MAX_BOTS = 512;
export const MAX_SECONDS = 24 * 3600;

interface Range {
  readonly min: number;
  readonly max: number;
  readonly integer?: boolean;
  /** True when `min` itself is not allowed. */
  readonly minExclusive?: boolean;
}

/** Every numeric field a scenario (or the command line) can set, with its range. */
export const RANGES = {
  bots: { min: 1, max: MAX_BOTS, integer: true },
  runnerShare: { min: 0, max: 1 },
  aimErrorUnits: { min: 0, max: 1000 },
  switchPerSecond: { min: 0, max: 100 },
  respawnMs: { min: 0, max: 60_000 },
  tickRate: { min: 1, max: 255, integer: true },
  updateRate: { min: 1, max: 255, integer: true },
  rateBytesPerSecond: { min: 1000, max: 100_000_000, integer: true },
  maxUnlagMs: { min: 0, max: 10_000 },
  interpolationDelayMs: { min: 0, max: 1000 },
  frameRate: { min: 1, max: 1000 },
  frameJitterMs: { min: 0, max: 1000 },
  seconds: { min: 0, max: MAX_SECONDS, minExclusive: true },
  count: { min: 1, max: MAX_BOTS, integer: true },
} as const satisfies Record<string, Range>;

const TOP_KEYS = new Set([
  'name',
  'description',
  'bots',
  'runnerShare',
  'aimErrorUnits',
  'switchPerSecond',
  'damage',
  'respawnMs',
  'profile',
  'profiles',
  'groups',
  'tickRate',
  'updateRate',
  'rateBytesPerSecond',
  'lagCompensation',
  'maxUnlagMs',
  'interpolationDelayMs',
  'frameRate',
  'frameJitterMs',
  'seconds',
]);
const GROUP_KEYS = new Set(['count', 'profile', 'bot', 'aimErrorUnits']);

/** The range in words: "an integer in [1, 512]", "a number in (0, 86400]". */
export function describeRange(range: Range): string {
  return `${range.integer ? 'an integer' : 'a number'} in ${range.minExclusive ? '(' : '['}${range.min}, ${range.max}]`;
}

/** True when `value` is a finite number within `range`. */
export function inRange(value: unknown, range: Range): value is number {
  return (
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (!range.integer || Number.isInteger(value)) &&
    (range.minExclusive ? value > range.min : value >= range.min) &&
    value <= range.max
  );
}

function readNumber(obj: JsonObject, key: keyof typeof RANGES, path: string): number {
  const value = obj[key];
  const range: Range = RANGES[key];
  if (!inRange(value, range)) {
    throw new Error(`${path}.${key}: must be ${describeRange(range)}, got ${describeValue(value)}`);
  }
  return value;
}

function readChoice<T extends string>(obj: JsonObject, key: string, path: string, choices: readonly T[]): T {
  const value = obj[key];
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw new Error(`${path}.${key}: must be one of ${choices.join(', ')}, got ${describeValue(value)}`);
  }
  return value as T;
}

/** Parses a JSON file's text, or throws naming the file. */
export function readJsonFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${what}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what}: ${file} is not valid JSON (${(e as Error).message})`);
  }
}

/**
 * A profile reference: a named profile (lan, dsl, mobile, congested, terrible), "none" (no
 * conditioner), a path to a profile file (relative to `baseDir`), or an inline profile object.
 * Throws an Error starting with `path` that names what is wrong.
 */
export function resolveProfile(ref: unknown, path: string, baseDir: string): ProfileChoice {
  if (typeof ref === 'string') {
    if (ref === NO_PROFILE) return null;
    if (Object.hasOwn(NAMED_PROFILES, ref)) return NAMED_PROFILES[ref];
    if (ref.length === 0 || !/[/\\.]/.test(ref)) {
      throw new Error(
        `${path}: ${describeValue(ref)} is not a named profile (${Object.keys(NAMED_PROFILES).join(', ')}, ${NO_PROFILE}) nor a file path`,
      );
    }
    const file = resolve(baseDir, ref);
    let profile: NetworkProfile;
    try {
      profile = parseProfile(readJsonFile(file, path));
    } catch (e) {
      const message = (e as Error).message;
      throw new Error(message.startsWith(path) ? message : `${path}: ${file}: ${message}`);
    }
    // profiles/README.md: the file NAME.json is named by its profile.
    const stem = basename(file).replace(/\.json$/, '');
    if (profile.name !== stem) {
      throw new Error(
        `${path}: ${file}: the profile is named ${JSON.stringify(profile.name)} but its file ${JSON.stringify(stem)}; a profile file NAME.json must say "name": "NAME"`,
      );
    }
    return profile;
  }
  if (typeof ref === 'object' && ref !== null && !Array.isArray(ref)) {
    try {
      return parseProfile(ref);
    } catch (e) {
      throw new Error(`${path}: ${(e as Error).message}`);
    }
  }
  throw new Error(
    `${path}: must be a profile name, a file path or a profile object, got ${describeValue(ref)}`,
  );
}

function readGroup(value: unknown, path: string, baseDir: string): BotGroup {
  const obj = expectObject(value, path);
  rejectUnknown(obj, path, GROUP_KEYS);
  if (!Object.hasOwn(obj, 'count')) throw new Error(`${path}.count: missing (how many bots in the group)`);
  return {
    count: readNumber(obj, 'count', path),
    profile: Object.hasOwn(obj, 'profile')
      ? resolveProfile(obj.profile, `${path}.profile`, baseDir)
      : NAMED_PROFILES.dsl,
    bot: Object.hasOwn(obj, 'bot') ? readChoice(obj, 'bot', path, BOT_KINDS) : 'aim',
    aimErrorUnits: Object.hasOwn(obj, 'aimErrorUnits') ? readNumber(obj, 'aimErrorUnits', path) : null,
  };
}

/** The default scenario: every field a scenario file leaves out takes its value from here. */
export const DEATHMATCH: Readonly<Scenario> = Object.freeze({
  name: 'deathmatch',
  description: 'Aim bots fight with damage and respawn, all on one profile.',
  bots: 8,
  runnerShare: 0,
  aimErrorUnits: 12,
  switchPerSecond: 0.2,
  damage: true,
  respawnMs: 2000,
  profiles: [NAMED_PROFILES.dsl],
  groups: null,
  tickRate: 64,
  updateRate: 32,
  rateBytesPerSecond: 80_000,
  lagCompensation: 'exact',
  maxUnlagMs: 1000,
  interpolationDelayMs: 0,
  frameRate: 60,
  frameJitterMs: 2,
  seconds: 30,
});

/** The named scenarios, written as scenario documents (the same schema as a file). */
export const BUILT_IN_SCENARIOS: Readonly<Record<string, JsonObject>> = Object.freeze({
  deathmatch: { name: 'deathmatch', description: DEATHMATCH.description },
  runners: {
    name: 'runners',
    description: 'Movement only: runner bots that run, strafe, jump and crouch; nobody shoots.',
    runnerShare: 1,
  },
  duel: {
    name: 'duel',
    description: 'Two aim bots, one on DSL and one on a mobile network.',
    bots: 2,
    aimErrorUnits: 8,
    profiles: ['dsl', 'mobile'],
  },
  mixed: {
    name: 'mixed',
    description: 'Sixteen players on every kind of network, two of them runners.',
    groups: [
      { count: 4, profile: 'lan' },
      { count: 4, profile: 'dsl' },
      { count: 4, profile: 'mobile' },
      { count: 2, profile: 'terrible' },
      { count: 2, profile: 'dsl', bot: 'runner' },
    ],
  },
});

/**
 * Validates a scenario document (parsed JSON) and returns it with defaults (DEATHMATCH's) filled
 * in. Profile paths inside are relative to `baseDir`. Throws an Error whose message starts with
 * the path of the offending field (`scenario.groups[1].count: must be an integer in [1, 512], got 0`).
 */
export function parseScenario(json: unknown, baseDir: string): Scenario {
  const path = 'scenario';
  const obj = expectObject(json, path);
  rejectUnknown(obj, path, TOP_KEYS);
  const s: Scenario = { ...DEATHMATCH, profiles: DEATHMATCH.profiles, name: 'custom', description: '' };
  if (Object.hasOwn(obj, 'name')) s.name = readString(obj, 'name', path, 64);
  if (Object.hasOwn(obj, 'description')) s.description = readString(obj, 'description', path, 1000);
  for (const key of [
    'bots',
    'runnerShare',
    'aimErrorUnits',
    'switchPerSecond',
    'respawnMs',
    'tickRate',
    'updateRate',
    'rateBytesPerSecond',
    'maxUnlagMs',
    'frameRate',
    'frameJitterMs',
    'seconds',
  ] as const) {
    if (Object.hasOwn(obj, key)) s[key] = readNumber(obj, key, path);
  }
  if (Object.hasOwn(obj, 'damage')) {
    if (typeof obj.damage !== 'boolean') {
      throw new Error(`${path}.damage: must be true or false, got ${describeValue(obj.damage)}`);
    }
    s.damage = obj.damage;
  }
  if (Object.hasOwn(obj, 'lagCompensation')) {
    s.lagCompensation = readChoice(obj, 'lagCompensation', path, LAG_COMPENSATION_MODES);
  }
  if (Object.hasOwn(obj, 'interpolationDelayMs')) {
    s.interpolationDelayMs =
      obj.interpolationDelayMs === 'adaptive' ? 'adaptive' : readInterpolation(obj, path);
  }
  const given = ['profile', 'profiles', 'groups'].filter((k) => Object.hasOwn(obj, k));
  if (given.length > 1) {
    throw new Error(`${path}: give only one of profile, profiles and groups, got ${given.join(' and ')}`);
  }
  if (Object.hasOwn(obj, 'profile')) s.profiles = [resolveProfile(obj.profile, `${path}.profile`, baseDir)];
  if (Object.hasOwn(obj, 'profiles')) {
    const list = obj.profiles;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BOTS) {
      throw new Error(
        `${path}.profiles: must be an array of 1 to ${MAX_BOTS} profiles, got ${describeValue(list)}`,
      );
    }
    s.profiles = list.map((ref, i) => resolveProfile(ref, `${path}.profiles[${i}]`, baseDir));
  }
  if (Object.hasOwn(obj, 'groups')) {
    const list = obj.groups;
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BOTS) {
      throw new Error(
        `${path}.groups: must be an array of 1 to ${MAX_BOTS} groups, got ${describeValue(list)}`,
      );
    }
    for (const key of ['bots', 'runnerShare'] as const) {
      if (Object.hasOwn(obj, key)) {
        throw new Error(`${path}.${key}: not allowed with groups (each group gives its count and bot)`);
      }
    }
    s.groups = list.map((g, i) => readGroup(g, `${path}.groups[${i}]`, baseDir));
    s.profiles = null;
    const total = s.groups.reduce((sum, g) => sum + g.count, 0);
    if (total > MAX_BOTS) throw new Error(`${path}.groups: ${total} bots in all, more than ${MAX_BOTS}`);
    s.bots = total;
  }
  if (s.updateRate > s.tickRate) {
    throw new Error(
      `${path}.updateRate: ${s.updateRate} snapshots per second is more than the tick rate (${s.tickRate})`,
    );
  }
  return s;
}

function readInterpolation(obj: JsonObject, path: string): number {
  const value = obj.interpolationDelayMs;
  if (!inRange(value, RANGES.interpolationDelayMs)) {
    throw new Error(
      `${path}.interpolationDelayMs: must be "adaptive" or ${describeRange(RANGES.interpolationDelayMs)} (0: the default), got ${describeValue(value)}`,
    );
  }
  return value;
}

/**
 * A named built-in scenario, or a scenario file (its profile paths relative to the file). Throws
 * an Error naming the scenario and the offending field.
 */
export function loadScenario(nameOrPath: string, baseDir: string): Scenario {
  if (Object.hasOwn(BUILT_IN_SCENARIOS, nameOrPath)) {
    return parseScenario(BUILT_IN_SCENARIOS[nameOrPath], baseDir);
  }
  if (!/[/\\.]/.test(nameOrPath)) {
    throw new Error(
      `--scenario ${nameOrPath}: not a built-in scenario (${Object.keys(BUILT_IN_SCENARIOS).join(', ')}) nor a file path`,
    );
  }
  const file = resolve(baseDir, nameOrPath);
  const json = readJsonFile(file, `--scenario ${nameOrPath}`);
  try {
    return parseScenario(json, dirname(file));
  } catch (e) {
    throw new Error(`--scenario ${nameOrPath}: ${(e as Error).message}`);
  }
}
