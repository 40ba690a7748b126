// Tests of the client's server-clock estimate against a simulated server clock and a jittery, seeded network.

import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_CLOCK_CONFIG, ServerClock } from '../../src/client/clock.ts';
import { Random } from '../../src/sim/random.ts';

interface Scenario {
  seed: number;
  durationMs: number;
  /** One-way latency floor, ms. */
  baseLatencyMs: number;
  /** Extra one-way delay, uniform in [0, jitterMs). */
  jitterMs: number;
  /** Server clock rate minus 1 (0.01: the server runs 1% fast). */
  drift?: number;
  /** At this real time the server clock jumps by shiftMs. */
  shiftAtMs?: number;
  shiftMs?: number;
}

const SNAPSHOT_INTERVAL_MS = 50;
const FRAME_MS = 10;
const SERVER_EPOCH_MS = 5000;

interface Frame {
  t: number;
  received: number;
  server: number;
  /** Server time of a snapshot that took the latency floor to arrive: what receivedNow should read. */
  truthReceived: number;
  /** Server time now. */
  truthServer: number;
  resyncs: number;
}

function serverTime(s: Scenario, t: number): number {
  const shift = s.shiftAtMs !== undefined && t >= s.shiftAtMs ? (s.shiftMs ?? 0) : 0;
  return SERVER_EPOCH_MS + t * (1 + (s.drift ?? 0)) + shift;
}

/** Runs the scenario at 100 frames per second; snapshots are built every 50 ms of real time. */
function simulate(s: Scenario, clock = new ServerClock()): Frame[] {
  const rng = new Random(s.seed);
  const arrivals: { at: number; server: number }[] = [];
  for (let sent = 0; sent < s.durationMs; sent += SNAPSHOT_INTERVAL_MS) {
    arrivals.push({ at: sent + s.baseLatencyMs + rng.range(0, s.jitterMs), server: serverTime(s, sent) });
  }
  arrivals.sort((a, b) => a.at - b.at);
  const frames: Frame[] = [];
  let next = 0;
  for (let t = 0; t < s.durationMs; t += FRAME_MS) {
    while (next < arrivals.length && arrivals[next].at <= t) {
      clock.onServerTime(arrivals[next].at, arrivals[next].server, 2 * s.baseLatencyMs);
      next++;
    }
    if (!clock.synced) continue;
    frames.push({
      t,
      received: clock.receivedNow(t),
      server: clock.serverNow(t),
      truthReceived: serverTime(s, t - s.baseLatencyMs),
      truthServer: serverTime(s, t),
      resyncs: clock.resyncs,
    });
  }
  return frames;
}

/** Largest |advance over one second - expected advance| of the estimate, over frames after fromMs. */
function wobblePerSecond(frames: Frame[], fromMs: number, rate: number): number {
  const perSecond = 1000 / FRAME_MS;
  let worst = 0;
  for (let i = perSecond; i < frames.length; i++) {
    if (frames[i - perSecond].t < fromMs) continue;
    const advance = frames[i].received - frames[i - perSecond].received;
    worst = Math.max(worst, Math.abs(advance - 1000 * rate));
  }
  return worst;
}

describe('ServerClock', () => {
  it('reads 0 until the first sample, then adopts the server time at once', () => {
    const clock = new ServerClock();
    expect(clock.synced).toBe(false);
    expect(clock.receivedNow(123)).toBe(0);
    expect(clock.serverNow(123)).toBe(0);
    expect(clock.onServerTime(1000, 70_000, 80)).toBe(true);
    expect(clock.synced).toBe(true);
    expect(clock.resyncs).toBe(0);
    expect(clock.receivedNow(1000)).toBe(70_000);
    expect(clock.receivedNow(1250)).toBe(70_250);
    expect(clock.serverNow(1250)).toBe(70_290);
  });

  it('tracks a jitter-free server exactly', () => {
    const s: Scenario = { seed: 1, durationMs: 5000, baseLatencyMs: 40, jitterMs: 0 };
    for (const f of simulate(s)) {
      expect(f.received, `t ${f.t}`).toBeCloseTo(f.truthReceived, 9);
      expect(f.server, `t ${f.t}`).toBeCloseTo(f.truthServer, 9);
    }
  });

  for (const seed of [11, 12, 13]) {
    it(`converges to within a few ms of the server clock under jitter and stays there (seed ${seed})`, () => {
      const s: Scenario = { seed, durationMs: 30_000, baseLatencyMs: 40, jitterMs: 20 };
      const frames = simulate(s);
      for (const f of frames) {
        if (f.t < 3000) continue;
        expect(f.received - f.truthReceived, `seed ${seed} t ${f.t}`).toBeLessThanOrEqual(1);
        expect(f.received - f.truthReceived, `seed ${seed} t ${f.t}`).toBeGreaterThanOrEqual(-6);
        expect(Math.abs(f.server - f.truthServer), `seed ${seed} t ${f.t}`).toBeLessThanOrEqual(6);
      }
      expect(frames[frames.length - 1].resyncs, `seed ${seed}`).toBe(0);
    });
  }

  for (const seed of [21, 22]) {
    it(`never decreases across calls, even when packets say the server is behind (seed ${seed})`, () => {
      const rng = new Random(seed);
      const clock = new ServerClock();
      let last = -Infinity;
      let lastServer = -Infinity;
      let t = 0;
      for (let i = 0; i < 3000; i++) {
        t += rng.range(0, 20);
        if (rng.chance(0.3)) {
          // A server time anywhere from 200 ms behind to 200 ms ahead of the clock's belief.
          const claimed = clock.synced ? clock.receivedNow(t) + rng.range(-200, 200) : 10_000;
          clock.onServerTime(t, claimed, rng.range(0, 300));
        }
        const now = clock.receivedNow(t);
        const server = clock.serverNow(t);
        expect(now, `seed ${seed} step ${i}`).toBeGreaterThanOrEqual(last);
        expect(server, `seed ${seed} step ${i}`).toBeGreaterThanOrEqual(lastServer);
        last = now;
        lastServer = server;
      }
      expect(clock.resyncs, `seed ${seed}`).toBe(0);
    });
  }

  it('does not let one late packet slow the clock', () => {
    const clock = new ServerClock();
    const arrivals: { at: number; server: number }[] = [];
    for (let i = 0; i <= 60; i++)
      arrivals.push({ at: i * 50 + 40 + (i === 41 ? 200 : 0), server: 10_000 + i * 50 });
    arrivals.sort((a, b) => a.at - b.at);
    for (const a of arrivals) {
      clock.onServerTime(a.at, a.server, 80);
      expect(clock.receivedNow(a.at), `arrival at ${a.at}`).toBe(a.at + 10_000 - 40);
    }
    expect(clock.resyncs).toBe(0);
  });

  it('reports as targetMs the server time its least delayed recent packet gives, ahead of a settling estimate', () => {
    const clock = new ServerClock();
    expect(clock.targetMs).toBe(0);
    // The first packet waited 100 ms more than the next (40 ms on the way): the estimate starts
    // that far behind and catches up at its rate, while the target is right at once.
    clock.onServerTime(140, 10_000, 80);
    expect(clock.targetMs).toBe(10_000);
    clock.onServerTime(190, 10_150, 80);
    expect(clock.targetMs).toBe(10_150);
    expect(clock.receivedNow(190)).toBeLessThan(clock.targetMs - 90);
    clock.onServerTime(240, 10_200, 80);
    expect(clock.targetMs).toBe(10_200);
    clock.reset();
    expect(clock.targetMs).toBe(0);
  });

  for (const seed of [31, 32]) {
    it(`follows a server running 1% fast smoothly (seed ${seed})`, () => {
      const s: Scenario = { seed, durationMs: 40_000, baseLatencyMs: 60, jitterMs: 10, drift: 0.01 };
      const clock = new ServerClock();
      const frames = simulate(s, clock);
      const lag = 0.01 * DEFAULT_SERVER_CLOCK_CONFIG.catchUpTimeMs;
      for (const f of frames) {
        if (f.t < 5000) continue;
        const error = f.received - f.truthReceived;
        expect(error, `seed ${seed} t ${f.t}`).toBeLessThanOrEqual(1);
        expect(error, `seed ${seed} t ${f.t}`).toBeGreaterThanOrEqual(-lag - 8);
      }
      expect(wobblePerSecond(frames, 5000, 1.01), `seed ${seed}`).toBeLessThanOrEqual(5);
      expect(clock.resyncs, `seed ${seed}`).toBe(0);
    });
  }

  it('follows a server running 1% slow without resyncing', () => {
    const seed = 33;
    const s: Scenario = { seed, durationMs: 40_000, baseLatencyMs: 60, jitterMs: 10, drift: -0.01 };
    const clock = new ServerClock();
    const frames = simulate(s, clock);
    for (const f of frames) {
      if (f.t < 5000) continue;
      expect(Math.abs(f.received - f.truthReceived), `seed ${seed} t ${f.t}`).toBeLessThanOrEqual(40);
    }
    expect(wobblePerSecond(frames, 5000, 0.99), `seed ${seed}`).toBeLessThanOrEqual(5);
    expect(clock.resyncs, `seed ${seed}`).toBe(0);
  });

  for (const shiftMs of [1000, -1000]) {
    it(`resynchronises exactly once when the server clock shifts by ${shiftMs} ms`, () => {
      const seed = 41;
      const s: Scenario = {
        seed,
        durationMs: 12_000,
        baseLatencyMs: 40,
        jitterMs: 20,
        shiftAtMs: 6000,
        shiftMs,
      };
      const frames = simulate(s);
      expect(frames[frames.length - 1].resyncs, `seed ${seed}`).toBe(1);
      const jump = frames.findIndex((f) => f.resyncs === 1);
      for (let i = 1; i < frames.length; i++) {
        if (i === jump) continue;
        expect(frames[i].received, `seed ${seed} t ${frames[i].t}`).toBeGreaterThanOrEqual(
          frames[i - 1].received,
        );
      }
      const end = frames[frames.length - 1];
      expect(Math.abs(end.received - end.truthReceived), `seed ${seed}`).toBeLessThanOrEqual(6);
    });
  }

  for (const seed of [51, 52, 53]) {
    it(`keeps the estimate steady through +-50 ms of jitter (seed ${seed})`, () => {
      const s: Scenario = { seed, durationMs: 40_000, baseLatencyMs: 50, jitterMs: 100 };
      const frames = simulate(s);
      expect(wobblePerSecond(frames, 5000, 1), `seed ${seed}`).toBeLessThanOrEqual(8);
      for (const f of frames) {
        if (f.t < 5000) continue;
        const error = f.received - f.truthReceived;
        expect(error, `seed ${seed} t ${f.t}`).toBeLessThanOrEqual(1);
        expect(error, `seed ${seed} t ${f.t}`).toBeGreaterThanOrEqual(-15);
      }
    });
  }

  it('never changes rate by more than maxRateAdjustFraction', () => {
    const clock = new ServerClock({ offsetWindowMs: 0 });
    clock.onServerTime(0, 10_000, 0);
    clock.onServerTime(100, 10_300, 0);
    expect(clock.rateAdjustAt(100)).toBe(DEFAULT_SERVER_CLOCK_CONFIG.maxRateAdjustFraction);
    expect(clock.receivedNow(1100)).toBeCloseTo(10_100 + 1000 * 1.05, 9);
    clock.onServerTime(1100, 11_000, 0);
    expect(clock.lastErrorMs).toBeCloseTo(-150, 9);
    expect(clock.rateAdjustAt(1100)).toBe(-DEFAULT_SERVER_CLOCK_CONFIG.maxRateAdjustFraction);
    expect(clock.receivedNow(2100)).toBeCloseTo(11_150 + 1000 * 0.95, 9);
  });

  it('works off exactly the measured error, then runs at the local rate', () => {
    const clock = new ServerClock({ catchUpTimeMs: 1000 });
    clock.onServerTime(0, 10_000, 0);
    clock.onServerTime(100, 10_120, 0);
    expect(clock.lastErrorMs).toBe(20);
    expect(clock.rateAdjustAt(100)).toBeCloseTo(0.02, 12);
    expect(clock.receivedNow(1100)).toBeCloseTo(11_120, 9);
    expect(clock.rateAdjustAt(1100)).toBe(0);
    expect(clock.receivedNow(2100)).toBeCloseTo(12_120, 9);
  });

  it('ignores errors inside the dead band', () => {
    const clock = new ServerClock({ deadBandMs: 2 });
    clock.onServerTime(0, 10_000, 0);
    clock.onServerTime(100, 10_101.5, 0);
    expect(clock.rateAdjustAt(100)).toBe(0);
    expect(clock.receivedNow(200)).toBe(10_200);
  });

  it('rejects non-finite times and negative round trips without throwing', () => {
    const clock = new ServerClock();
    expect(clock.onServerTime(Number.NaN, 1, 1)).toBe(false);
    expect(clock.onServerTime(0, Number.POSITIVE_INFINITY, 1)).toBe(false);
    expect(clock.onServerTime(0, 1, -5)).toBe(false);
    expect(clock.onServerTime(0, 1, Number.NaN)).toBe(false);
    expect(clock.rejectedSamples).toBe(4);
    expect(clock.synced).toBe(false);
  });

  it('smooths the round-trip time it adds for serverNow', () => {
    const clock = new ServerClock({ rttSmoothingFactor: 0.5 });
    clock.onServerTime(0, 10_000, 100);
    clock.onServerTime(50, 10_050, 200);
    expect(clock.smoothedRttMs).toBe(150);
    expect(clock.serverNow(50)).toBe(10_125);
  });

  it('names the offending field of a bad configuration', () => {
    expect(() => new ServerClock({ maxRateAdjustFraction: 1 })).toThrow(/maxRateAdjustFraction/);
    expect(() => new ServerClock({ catchUpTimeMs: 0 })).toThrow(/catchUpTimeMs/);
    expect(() => new ServerClock({ slowDownTimeMs: Number.NaN })).toThrow(/slowDownTimeMs/);
    expect(() => new ServerClock({ deadBandMs: -1 })).toThrow(/deadBandMs/);
    expect(() => new ServerClock({ resyncThresholdMs: 1 })).toThrow(/resyncThresholdMs/);
    expect(() => new ServerClock({ offsetWindowMs: Number.POSITIVE_INFINITY })).toThrow(/offsetWindowMs/);
    expect(() => new ServerClock({ offsetDecayMsPerSecond: -3 })).toThrow(/offsetDecayMsPerSecond/);
    expect(() => new ServerClock({ rttSmoothingFactor: 0 })).toThrow(/rttSmoothingFactor/);
  });
});
