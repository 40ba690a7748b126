// Network profiles: the document that configures the conditioner, its validator, and the named profiles.
//
// The schema, with every field's unit, default and range, is documented in profiles/README.md.

import bursty from '../../profiles/bursty.json' with { type: 'json' };
import congested from '../../profiles/congested.json' with { type: 'json' };
import dsl from '../../profiles/dsl.json' with { type: 'json' };
import flapping from '../../profiles/flapping.json' with { type: 'json' };
import lan from '../../profiles/lan.json' with { type: 'json' };
import mobile from '../../profiles/mobile.json' with { type: 'json' };
import slowlink from '../../profiles/slowlink.json' with { type: 'json' };
import spikes from '../../profiles/spikes.json' with { type: 'json' };
import terrible from '../../profiles/terrible.json' with { type: 'json' };
import {
  describeValue,
  expectObject,
  type JsonObject,
  readString,
  rejectUnknown,
} from '../sim/json-checks.ts';

/** "up" is what the endpoint holding the profile sends (client to server); "down" what it receives. */
export type Direction = 'up' | 'down';

/** Gilbert-Elliott burst loss: per-packet probabilities of good->bad and bad->good, and the loss while bad. */
export interface BurstLoss {
  enter: number;
  exit: number;
  loss: number;
}

/** The conditions of one direction of a link at one moment. `burst.enter` 0 means no bursts. */
export interface LinkConditions {
  /** One-way base latency, ms. */
  latencyMs: number;
  /** Each packet's latency gets a uniform extra in [-jitterMs, +jitterMs] (total never below 0). */
  jitterMs: number;
  /** Loss probability in the good state, 0..1. */
  loss: number;
  burst: BurstLoss;
  /** Probability a packet is delivered twice, 0..1. */
  duplicate: number;
  /** Probability a packet is held back `reorderDelayMs` more, so later packets overtake it. */
  reorder: number;
  reorderDelayMs: number;
  /** Link rate in kilobits per second (= bits per ms); 0 is unlimited. */
  bandwidthKbps: number;
  /** Drop-tail: a packet that would wait longer than this in the bandwidth queue is dropped. */
  queueMs: number;
}

/** Fields an event (or a layer of a document) sets; absent fields keep the value beneath. */
export type ConditionOverrides = { readonly [K in keyof LinkConditions]?: Readonly<LinkConditions[K]> };

/** A time window, relative to the network's start (time 0), during which some conditions change. */
export interface ProfileEvent {
  readonly atMs: number;
  readonly durationMs: number;
  readonly up: ConditionOverrides;
  readonly down: ConditionOverrides;
}

/** Conditions as a resolved profile holds them: every field present, immutable. */
export type ResolvedConditions = Readonly<LinkConditions> & { readonly burst: Readonly<BurstLoss> };

/** A fully resolved profile: defaults filled in and each direction's conditions merged. */
export interface NetworkProfile {
  readonly name: string;
  readonly description: string;
  readonly up: ResolvedConditions;
  readonly down: ResolvedConditions;
  readonly events: readonly ProfileEvent[];
}

interface NumberRange {
  readonly min: number;
  readonly max: number;
  /** True when `min` itself is not allowed. */
  readonly minExclusive?: boolean;
}

const MAX_DELAY_MS = 60_000;
const MAX_EVENTS = 1000;
const MAX_NAME_LENGTH = 64;

const SCALAR_FIELDS = {
  latencyMs: { min: 0, max: MAX_DELAY_MS },
  jitterMs: { min: 0, max: MAX_DELAY_MS },
  loss: { min: 0, max: 1 },
  duplicate: { min: 0, max: 1 },
  reorder: { min: 0, max: 1 },
  reorderDelayMs: { min: 0, max: MAX_DELAY_MS },
  bandwidthKbps: { min: 0, max: 10_000_000 },
  queueMs: { min: 0, max: MAX_DELAY_MS },
} as const satisfies Record<Exclude<keyof LinkConditions, 'burst'>, NumberRange>;

type ScalarField = keyof typeof SCALAR_FIELDS;
const SCALAR_NAMES = Object.keys(SCALAR_FIELDS) as ScalarField[];
const BURST_FIELDS = ['enter', 'exit', 'loss'] as const satisfies readonly (keyof BurstLoss)[];
const PROBABILITY: NumberRange = { min: 0, max: 1 };

const CONDITION_KEYS = [...SCALAR_NAMES, 'burst'];
const TOP_KEYS = new Set(['name', 'description', ...CONDITION_KEYS, 'up', 'down', 'events']);
const DIRECTION_KEYS = new Set(CONDITION_KEYS);
const EVENT_KEYS = new Set(['atMs', 'durationMs', ...CONDITION_KEYS, 'up', 'down']);

/** The conditions of a document that sets nothing: a perfect link. */
export const DEFAULT_CONDITIONS: ResolvedConditions = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  loss: 0,
  burst: Object.freeze({ enter: 0, exit: 1, loss: 0 }),
  duplicate: 0,
  reorder: 0,
  reorderDelayMs: 50,
  bandwidthKbps: 0,
  queueMs: 1000,
});

/** A fresh, mutable copy of DEFAULT_CONDITIONS (an `out` object for conditionsAt). */
export function createLinkConditions(): LinkConditions {
  return { ...DEFAULT_CONDITIONS, burst: { ...DEFAULT_CONDITIONS.burst } };
}

function formatRange(range: NumberRange): string {
  return `${range.minExclusive ? '(' : '['}${range.min}, ${range.max}]`;
}

function readNumber(obj: JsonObject, key: string, path: string, range: NumberRange): number {
  if (!Object.hasOwn(obj, key))
    throw new Error(`${path}.${key}: missing (a number in ${formatRange(range)})`);
  const value = obj[key];
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (range.minExclusive ? value > range.min : value >= range.min) &&
    value <= range.max;
  if (!ok)
    throw new Error(`${path}.${key}: must be a number in ${formatRange(range)}, got ${describeValue(value)}`);
  return value;
}

/** Reads the condition fields present in `obj` (checked and unknown keys rejected by the caller). */
function readConditions(obj: JsonObject, path: string): ConditionOverrides {
  const out: { -readonly [K in keyof LinkConditions]?: LinkConditions[K] } = {};
  for (const key of SCALAR_NAMES) {
    if (Object.hasOwn(obj, key)) out[key] = readNumber(obj, key, path, SCALAR_FIELDS[key]);
  }
  if (Object.hasOwn(obj, 'burst')) {
    const burstPath = `${path}.burst`;
    const burst = expectObject(obj.burst, burstPath);
    rejectUnknown(burst, burstPath, new Set(BURST_FIELDS));
    out.burst = {
      enter: readNumber(burst, 'enter', burstPath, PROBABILITY),
      exit: readNumber(burst, 'exit', burstPath, PROBABILITY),
      loss: readNumber(burst, 'loss', burstPath, PROBABILITY),
    };
  }
  return out;
}

function readLayer(parent: JsonObject, key: Direction, path: string): ConditionOverrides {
  if (!Object.hasOwn(parent, key)) return {};
  const layerPath = `${path}.${key}`;
  const layer = expectObject(parent[key], layerPath);
  rejectUnknown(layer, layerPath, DIRECTION_KEYS);
  return readConditions(layer, layerPath);
}

function merge(...layers: ConditionOverrides[]): ConditionOverrides {
  return Object.assign({}, ...layers) as ConditionOverrides;
}

function freezeConditions(overrides: ConditionOverrides): ResolvedConditions {
  const resolved = createLinkConditions();
  applyOverrides(resolved, overrides);
  Object.freeze(resolved.burst);
  return Object.freeze(resolved);
}

function applyOverrides(out: LinkConditions, o: ConditionOverrides): void {
  if (o.latencyMs !== undefined) out.latencyMs = o.latencyMs;
  if (o.jitterMs !== undefined) out.jitterMs = o.jitterMs;
  if (o.loss !== undefined) out.loss = o.loss;
  if (o.burst !== undefined) {
    out.burst.enter = o.burst.enter;
    out.burst.exit = o.burst.exit;
    out.burst.loss = o.burst.loss;
  }
  if (o.duplicate !== undefined) out.duplicate = o.duplicate;
  if (o.reorder !== undefined) out.reorder = o.reorder;
  if (o.reorderDelayMs !== undefined) out.reorderDelayMs = o.reorderDelayMs;
  if (o.bandwidthKbps !== undefined) out.bandwidthKbps = o.bandwidthKbps;
  if (o.queueMs !== undefined) out.queueMs = o.queueMs;
}

function readEvent(value: unknown, path: string): ProfileEvent {
  const obj = expectObject(value, path);
  rejectUnknown(obj, path, EVENT_KEYS);
  const atMs = readNumber(obj, 'atMs', path, { min: 0, max: Number.MAX_SAFE_INTEGER });
  const durationMs = readNumber(obj, 'durationMs', path, {
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    minExclusive: true,
  });
  const both = readConditions(obj, path);
  const up = Object.freeze(merge(both, readLayer(obj, 'up', path)));
  const down = Object.freeze(merge(both, readLayer(obj, 'down', path)));
  return Object.freeze({ atMs, durationMs, up, down });
}

/**
 * Validates a network profile document (already parsed from JSON) and returns it fully
 * resolved: defaults filled in, top-level conditions applied to both directions and "up"/"down"
 * applied over them field by field. Throws an Error whose message starts with the path of the
 * offending field (`profile.up.loss: must be a number in [0, 1], got 1.5`); unknown fields are
 * rejected by name. The result is frozen.
 */
export function parseProfile(json: unknown): NetworkProfile {
  const path = 'profile';
  const obj = expectObject(json, path);
  rejectUnknown(obj, path, TOP_KEYS);
  const name = Object.hasOwn(obj, 'name') ? readString(obj, 'name', path, MAX_NAME_LENGTH) : 'custom';
  const description = Object.hasOwn(obj, 'description') ? readString(obj, 'description', path, 1000) : '';
  const both = readConditions(obj, path);
  const up = freezeConditions(merge(both, readLayer(obj, 'up', path)));
  const down = freezeConditions(merge(both, readLayer(obj, 'down', path)));
  const events: ProfileEvent[] = [];
  if (Object.hasOwn(obj, 'events')) {
    const list = obj.events;
    if (!Array.isArray(list) || list.length > MAX_EVENTS) {
      throw new Error(
        `${path}.events: must be an array of at most ${MAX_EVENTS} events, got ${describeValue(list)}`,
      );
    }
    for (let i = 0; i < list.length; i++) events.push(readEvent(list[i], `${path}.events[${i}]`));
  }
  return Object.freeze({ name, description, up, down, events: Object.freeze(events) });
}

/**
 * Writes into `out` the conditions of `direction` at `nowMs` (ms since the network's start):
 * the profile's base conditions with every event whose window [atMs, atMs + durationMs)
 * contains `nowMs` applied over them, in the order the events are listed (a later event wins
 * field by field). Allocates nothing. Returns `out`.
 */
export function conditionsAt(
  profile: NetworkProfile,
  direction: Direction,
  nowMs: number,
  out: LinkConditions,
): LinkConditions {
  applyOverrides(out, direction === 'up' ? profile.up : profile.down);
  const events = profile.events;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (nowMs >= e.atMs && nowMs < e.atMs + e.durationMs)
      applyOverrides(out, direction === 'up' ? e.up : e.down);
  }
  return out;
}

/**
 * The profiles shipped in profiles/*.json, by name: lan, dsl, mobile, congested, terrible, and the
 * hard cases slowlink, spikes, bursty, flapping.
 */
export const NAMED_PROFILES: Readonly<Record<string, NetworkProfile>> = Object.freeze(
  Object.fromEntries(
    [lan, dsl, mobile, congested, terrible, slowlink, spikes, bursty, flapping].map((doc) => [
      doc.name,
      parseProfile(doc),
    ]),
  ),
);

/** The named profile `name`; throws an Error listing the known names if there is none. */
export function profileByName(name: string): NetworkProfile {
  if (!Object.hasOwn(NAMED_PROFILES, name)) {
    throw new Error(
      `unknown network profile ${JSON.stringify(name)} (known: ${Object.keys(NAMED_PROFILES).join(', ')})`,
    );
  }
  return NAMED_PROFILES[name];
}
