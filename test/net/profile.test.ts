// Tests of the network profile validator, the named profiles and event resolution.

import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  conditionsAt,
  createLinkConditions,
  DEFAULT_CONDITIONS,
  NAMED_PROFILES,
  parseProfile,
  profileByName,
} from '../../src/net/profile.ts';

const PROFILES_DIR = new URL('../../profiles/', import.meta.url);

describe('named profiles', () => {
  it('ships every profiles/*.json file, parsed, under its own name', () => {
    const files = readdirSync(PROFILES_DIR).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const file of files) {
      const doc: unknown = JSON.parse(readFileSync(new URL(file, PROFILES_DIR), 'utf8'));
      const profile = parseProfile(doc);
      expect(profile.name, file).toBe(file.replace(/\.json$/, ''));
      expect(NAMED_PROFILES[profile.name], file).toEqual(profile);
    }
    expect(Object.keys(NAMED_PROFILES).sort()).toEqual([
      'bursty',
      'congested',
      'dsl',
      'flapping',
      'lan',
      'mobile',
      'slowlink',
      'spikes',
      'terrible',
    ]);
  });

  it('resolves per-direction values of the named profiles', () => {
    const dsl = profileByName('dsl');
    expect(dsl.up.bandwidthKbps).toBe(1000);
    expect(dsl.down.bandwidthKbps).toBe(8000);
    expect(dsl.up.latencyMs).toBe(30);
    expect(dsl.down.loss).toBe(0.005);
    const mobile = profileByName('mobile');
    expect(mobile.up.burst).toEqual({ enter: 0.005, exit: 0.2, loss: 0.5 });
    expect(mobile.events.length).toBe(1);
    expect(profileByName('lan').up.loss).toBe(0);
    expect(profileByName('terrible').down.duplicate).toBe(0.25);
  });

  it('rejects an unknown name, listing the known ones', () => {
    expect(() => profileByName('dialup')).toThrow(
      'unknown network profile "dialup" (known: lan, dsl, mobile, congested, terrible, slowlink, spikes, bursty, flapping)',
    );
    expect(() => profileByName('toString')).toThrow('unknown network profile');
  });

  it('returns frozen profiles', () => {
    const p = profileByName('mobile');
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.up)).toBe(true);
    expect(Object.isFrozen(p.up.burst)).toBe(true);
    expect(Object.isFrozen(p.events)).toBe(true);
    expect(Object.isFrozen(p.events[0].up)).toBe(true);
  });
});

describe('parseProfile', () => {
  it('fills defaults for an empty document', () => {
    const p = parseProfile({});
    expect(p.name).toBe('custom');
    expect(p.description).toBe('');
    expect(p.up).toEqual(DEFAULT_CONDITIONS);
    expect(p.down).toEqual(DEFAULT_CONDITIONS);
    expect(p.events).toEqual([]);
  });

  it('applies top-level fields to both directions and up/down over them, field by field', () => {
    const p = parseProfile({
      name: 'x',
      latencyMs: 50,
      loss: 0.1,
      burst: { enter: 0.1, exit: 0.5, loss: 0.9 },
      up: { latencyMs: 80, burst: { enter: 0, exit: 1, loss: 0 } },
      down: { bandwidthKbps: 300 },
    });
    expect(p.up.latencyMs).toBe(80);
    expect(p.up.loss).toBe(0.1);
    expect(p.up.burst).toEqual({ enter: 0, exit: 1, loss: 0 });
    expect(p.up.bandwidthKbps).toBe(0);
    expect(p.down.latencyMs).toBe(50);
    expect(p.down.burst).toEqual({ enter: 0.1, exit: 0.5, loss: 0.9 });
    expect(p.down.bandwidthKbps).toBe(300);
    expect(p.down.queueMs).toBe(DEFAULT_CONDITIONS.queueMs);
  });

  const malformed: [string, unknown, string][] = [
    ['not an object', null, 'profile: must be an object, got null'],
    ['an array', [], 'profile: must be an object, got an array'],
    ['a string', 'lan', 'profile: must be an object, got "lan"'],
    ['negative latency', { latencyMs: -1 }, 'profile.latencyMs: must be a number in [0, 60000], got -1'],
    [
      'infinite latency',
      { latencyMs: Infinity },
      'profile.latencyMs: must be a number in [0, 60000], got Infinity',
    ],
    ['NaN jitter', { jitterMs: Number.NaN }, 'profile.jitterMs: must be a number in [0, 60000], got NaN'],
    ['loss over 1', { up: { loss: 1.5 } }, 'profile.up.loss: must be a number in [0, 1], got 1.5'],
    [
      'negative duplicate',
      { down: { duplicate: -0.1 } },
      'profile.down.duplicate: must be a number in [0, 1], got -0.1',
    ],
    [
      'negative bandwidth',
      { bandwidthKbps: -5 },
      'profile.bandwidthKbps: must be a number in [0, 10000000], got -5',
    ],
    [
      'latency as a string',
      { latencyMs: '60' },
      'profile.latencyMs: must be a number in [0, 60000], got "60"',
    ],
    ['null reorder', { reorder: null }, 'profile.reorder: must be a number in [0, 1], got null'],
    ['boolean queue', { queueMs: true }, 'profile.queueMs: must be a number in [0, 60000], got true'],
    ['unknown field', { lose: 0.1 }, 'profile: unknown field "lose"'],
    ['unknown field in a direction', { up: { events: [] } }, 'profile.up: unknown field "events"'],
    ['nested direction', { down: { up: {} } }, 'profile.down: unknown field "up"'],
    ['direction not an object', { up: 5 }, 'profile.up: must be an object, got 5'],
    ['burst not an object', { burst: 0.1 }, 'profile.burst: must be an object, got 0.1'],
    [
      'burst missing a field',
      { burst: { enter: 0.1, exit: 0.2 } },
      'profile.burst.loss: missing (a number in [0, 1])',
    ],
    [
      'burst with an unknown field',
      { burst: { enter: 0, exit: 1, loss: 0, p: 1 } },
      'profile.burst: unknown field "p"',
    ],
    [
      'burst exit over 1',
      { up: { burst: { enter: 0, exit: 2, loss: 0 } } },
      'profile.up.burst.exit: must be a number in [0, 1], got 2',
    ],
    ['empty name', { name: '' }, 'profile.name: must be a string of 1 to 64 characters, got ""'],
    ['numeric name', { name: 5 }, 'profile.name: must be a string of 1 to 64 characters, got 5'],
    [
      'description not a string',
      { description: {} },
      'profile.description: must be a string of 1 to 1000 characters, got an object',
    ],
    [
      'events not an array',
      { events: {} },
      'profile.events: must be an array of at most 1000 events, got an object',
    ],
    ['event not an object', { events: [5] }, 'profile.events[0]: must be an object, got 5'],
    [
      'event without atMs',
      { events: [{ durationMs: 100 }] },
      'profile.events[0].atMs: missing (a number in [0, ',
    ],
    [
      'event with negative atMs',
      { events: [{ atMs: -1, durationMs: 1 }] },
      'profile.events[0].atMs: must be a number in [0, ',
    ],
    [
      'event of zero duration',
      { events: [{ atMs: 0, durationMs: 0 }] },
      'profile.events[0].durationMs: must be a number in (0, ',
    ],
    [
      'event with a profile field',
      { events: [{ atMs: 0, durationMs: 1, name: 'x' }] },
      'profile.events[0]: unknown field "name"',
    ],
    [
      'event nesting events',
      { events: [{ atMs: 0, durationMs: 1, events: [] }] },
      'profile.events[0]: unknown field "events"',
    ],
    [
      'bad value in an event',
      {
        events: [
          { atMs: 0, durationMs: 1 },
          { atMs: 0, durationMs: 1, latencyMs: -5 },
        ],
      },
      'profile.events[1].latencyMs: must be a number in [0, 60000], got -5',
    ],
    [
      'bad value in an event direction',
      { events: [{ atMs: 0, durationMs: 1, up: { loss: 2 } }] },
      'profile.events[0].up.loss: must be a number in [0, 1], got 2',
    ],
    ['__proto__ key', JSON.parse('{"__proto__": {"latencyMs": 1}}'), 'profile: unknown field "__proto__"'],
  ];

  for (const [what, doc, message] of malformed) {
    it(`rejects ${what}`, () => {
      expect(() => parseProfile(doc)).toThrow(message);
    });
  }
});

describe('conditionsAt', () => {
  const profile = parseProfile({
    latencyMs: 50,
    loss: 0.01,
    down: { latencyMs: 40 },
    events: [
      { atMs: 1000, durationMs: 500, latencyMs: 400, up: { loss: 0.5 } },
      { atMs: 1200, durationMs: 100, latencyMs: 700, burst: { enter: 0.2, exit: 0.2, loss: 1 } },
    ],
  });

  it('changes conditions only within each event window [atMs, atMs + durationMs)', () => {
    const out = createLinkConditions();
    const cases: [number, number, number, number, number][] = [
      // nowMs, up latency, up loss, down latency, down loss
      [0, 50, 0.01, 40, 0.01],
      [999.999, 50, 0.01, 40, 0.01],
      [1000, 400, 0.5, 400, 0.01],
      [1199, 400, 0.5, 400, 0.01],
      [1200, 700, 0.5, 700, 0.01],
      [1299.5, 700, 0.5, 700, 0.01],
      [1300, 400, 0.5, 400, 0.01],
      [1499.9, 400, 0.5, 400, 0.01],
      [1500, 50, 0.01, 40, 0.01],
      [100000, 50, 0.01, 40, 0.01],
    ];
    for (const [nowMs, upLatency, upLoss, downLatency, downLoss] of cases) {
      conditionsAt(profile, 'up', nowMs, out);
      expect(out.latencyMs, `up latency at ${nowMs}`).toBe(upLatency);
      expect(out.loss, `up loss at ${nowMs}`).toBe(upLoss);
      expect(conditionsAt(profile, 'down', nowMs, out), `down at ${nowMs}`).toBe(out);
      expect(out.latencyMs, `down latency at ${nowMs}`).toBe(downLatency);
      expect(out.loss, `down loss at ${nowMs}`).toBe(downLoss);
      expect(out.burst.enter, `burst at ${nowMs}`).toBe(nowMs >= 1200 && nowMs < 1300 ? 0.2 : 0);
    }
  });

  it('leaves the profile untouched when the out object is written', () => {
    const out = createLinkConditions();
    conditionsAt(profile, 'up', 1250, out);
    expect(profile.up.burst.enter).toBe(0);
    expect(profile.up.latencyMs).toBe(50);
    expect(DEFAULT_CONDITIONS.burst.enter).toBe(0);
  });

  it('applies the named mobile profile spike only within its window', () => {
    const mobile = profileByName('mobile');
    const out = createLinkConditions();
    expect(conditionsAt(mobile, 'down', 19_999, out).latencyMs).toBe(60);
    expect(conditionsAt(mobile, 'down', 20_000, out).latencyMs).toBe(300);
    expect(conditionsAt(mobile, 'up', 21_999, out).loss).toBe(0.05);
    expect(conditionsAt(mobile, 'up', 22_000, out).loss).toBe(0.01);
  });
});
