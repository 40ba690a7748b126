// Tests of the position history (interpolation, extrapolation, teleports) and the interpolation delay.

import { describe, expect, it } from 'vitest';
import {
  AdaptiveDelay,
  DEFAULT_ADAPTIVE_DELAY_CONFIG,
  defaultInterpolationDelayMs,
  InterpolationHistory,
  interpolateField,
  SampleResult,
} from '../../src/client/interpolation.ts';
import { wrapDegrees180 } from '../../src/sim/math.ts';
import { Random } from '../../src/sim/random.ts';

const LAYOUT = [
  { name: 'x', kind: 'linear' },
  { name: 'y', kind: 'linear' },
  { name: 'yaw', kind: 'angle' },
  { name: 'ducked', kind: 'step' },
] as const;

function history(capacity = 64, teleportDistance = Number.POSITIVE_INFINITY): InterpolationHistory {
  return new InterpolationHistory({ fields: LAYOUT, capacity, teleportDistance });
}

describe('InterpolationHistory', () => {
  it('reproduces linear motion exactly between ticks, over uneven spacing', () => {
    const h = history();
    const xAt = (tick: number) => 3 + 2.5 * tick;
    const yAt = (tick: number) => -40 + 0.75 * tick;
    for (const tick of [100, 103, 104, 108, 109, 115]) h.push(tick, [xAt(tick), yAt(tick), 0, 0], false);
    const out = new Float64Array(4);
    for (let r = 100; r <= 115; r += 0.125) {
      expect(h.sample(r, out, 0), `render tick ${r}`).toBe(SampleResult.INTERPOLATED);
      expect(out[0], `render tick ${r}`).toBeCloseTo(xAt(r), 10);
      expect(out[1], `render tick ${r}`).toBeCloseTo(yAt(r), 10);
      expect(h.lastTickA, `render tick ${r}`).toBeLessThanOrEqual(r);
      expect(h.lastTickB, `render tick ${r}`).toBeGreaterThanOrEqual(r);
      expect(h.lastFraction, `render tick ${r}`).toBeGreaterThanOrEqual(0);
      expect(h.lastFraction, `render tick ${r}`).toBeLessThan(1);
    }
    h.sample(105, out, 0);
    expect([h.lastTickA, h.lastTickB, h.lastFraction]).toEqual([104, 108, 0.25]);
    h.sample(115, out, 0);
    expect([h.lastTickA, h.lastTickB, h.lastFraction, out[0]]).toEqual([115, 115, 0, xAt(115)]);
  });

  it('turns angles along the short arc: 350 to 10 passes through 0, not 180', () => {
    const h = history();
    h.push(10, [0, 0, 350, 0], false);
    h.push(11, [0, 0, 10, 0], false);
    h.push(12, [0, 0, 170, 0], false);
    h.push(13, [0, 0, -170, 0], false);
    const out = new Float64Array(4);
    h.sample(10.5, out, 0);
    expect(wrapDegrees180(out[2])).toBe(0);
    let previous = -10;
    for (let r = 10; r <= 11; r += 1 / 16) {
      h.sample(r, out, 0);
      const yaw = wrapDegrees180(out[2]);
      expect(yaw, `render tick ${r}`).toBeGreaterThanOrEqual(previous);
      expect(Math.abs(yaw), `render tick ${r}`).toBeLessThanOrEqual(10);
      previous = yaw;
    }
    h.sample(12.5, out, 0);
    expect(wrapDegrees180(out[2])).toBe(180);
    expect(interpolateField('angle', 350, 10, 0.25)).toBe(355);
  });

  it('holds a step field at the older value until the newer tick is reached', () => {
    const h = history();
    h.push(10, [0, 0, 0, 0], false);
    h.push(12, [2, 0, 0, 1], false);
    h.push(14, [4, 0, 0, 0], false);
    const out = new Float64Array(4);
    h.sample(11.999, out, 0);
    expect(out[3]).toBe(0);
    h.sample(12, out, 0);
    expect(out[3]).toBe(1);
    h.sample(13.999, out, 0);
    expect(out[3]).toBe(1);
    h.sample(14.5, out, 4);
    expect(out[3]).toBe(0);
  });

  it('keeps the bounce of a bouncing ball that a move-toward-the-latest scheme flattens', () => {
    // The paper's example: a ball bouncing 100 units high once a second, built by a 60 Hz server,
    // sent at 20 Hz over a steady 50 ms link, drawn at 100 frames per second 100 ms in the past.
    const tickMs = 1000 / 60;
    const heightAt = (tick: number) => {
      const u = (tick % 60) / 60;
      return 400 * u * (1 - u);
    };
    const latencyMs = 50;
    const delayMs = 100;
    const h = new InterpolationHistory({ fields: [{ name: 'z', kind: 'linear' }], capacity: 32 });
    const out = new Float64Array(1);
    let nextSnapshotTick = 0;
    let historyTop = Number.NEGATIVE_INFINITY;
    let historyBottom = Number.POSITIVE_INFINITY;
    let naiveFrom = 0;
    let naiveTo = 0;
    let naiveSince = 0;
    let naive = 0;
    let naiveTop = Number.NEGATIVE_INFINITY;
    let naiveBottom = Number.POSITIVE_INFINITY;
    for (let frame = 0; frame <= 1000; frame++) {
      const now = frame * 10;
      while (nextSnapshotTick * tickMs + latencyMs <= now) {
        const z = heightAt(nextSnapshotTick);
        h.push(nextSnapshotTick, [z], false);
        naiveFrom = naive;
        naiveTo = z;
        naiveSince = nextSnapshotTick * tickMs + latencyMs;
        nextSnapshotTick += 3;
      }
      naive = naiveFrom + (naiveTo - naiveFrom) * Math.min(1, (now - naiveSince) / delayMs);
      if (now < 2000) continue;
      h.sample((now - latencyMs - delayMs) / tickMs, out, 0);
      historyTop = Math.max(historyTop, out[0]);
      historyBottom = Math.min(historyBottom, out[0]);
      naiveTop = Math.max(naiveTop, naive);
      naiveBottom = Math.min(naiveBottom, naive);
    }
    expect(historyTop).toBeGreaterThan(99.5);
    expect(historyBottom).toBeLessThan(0.5);
    // Chasing the latest update lags the curve: the ball never comes within 10 units of the ground.
    expect(naiveTop).toBeLessThan(99);
    expect(naiveBottom).toBeGreaterThan(10);
  });

  it('clears the history on a teleport flag instead of sliding across the map', () => {
    const h = history();
    for (let tick = 1; tick <= 5; tick++) h.push(tick, [tick, 0, 0, 0], false);
    expect(h.push(6, [5000, 0, 0, 0], true)).toBe(true);
    expect(h.length).toBe(1);
    expect(h.teleports).toBe(1);
    expect(h.lastTeleportTick).toBe(6);
    const out = new Float64Array(4);
    expect(h.sample(5.5, out, 0)).toBe(SampleResult.HELD);
    expect(out[0]).toBe(5000);
    h.push(7, [5010, 0, 0, 0], false);
    expect(h.sample(6.5, out, 0)).toBe(SampleResult.INTERPOLATED);
    expect(out[0]).toBe(5005);
  });

  it('treats a jump beyond teleportDistance on the position fields as a teleport', () => {
    const h = history(64, 100);
    h.push(1, [0, 0, 0, 0], false);
    h.push(2, [60, 79, 0, 0], false);
    expect(h.length).toBe(2);
    h.push(3, [60, 179, 0, 0], false);
    expect(h.length).toBe(3);
    h.push(4, [60 + 80, 179 + 61, 0, 0], false);
    expect(h.length).toBe(1);
    expect(h.teleports).toBe(1);
    h.push(5, [140, 240.5, 179, 0], false);
    expect(h.length).toBe(2);
    const only = new InterpolationHistory({
      fields: LAYOUT,
      teleportDistance: 10,
      positionFields: ['x'],
    });
    only.push(1, [0, 0, 0, 0], false);
    only.push(2, [5, 1000, 0, 0], false);
    expect(only.length).toBe(2);
    only.push(3, [16, 1000, 0, 0], false);
    expect(only.length).toBe(1);
  });

  it('extrapolates along the last two entries, caps it, then holds the capped position', () => {
    const h = history();
    h.push(10, [0, 100, 0, 0], false);
    h.push(12, [20, 100, 90, 1], false);
    const out = new Float64Array(4);
    expect(h.sample(13, out, 3)).toBe(SampleResult.EXTRAPOLATED);
    expect(Array.from(out)).toEqual([30, 100, 135, 1]);
    expect([h.lastTickA, h.lastTickB, h.lastFraction]).toEqual([10, 12, 1.5]);
    expect(h.sample(15, out, 3)).toBe(SampleResult.EXTRAPOLATED);
    expect(out[0]).toBe(50);
    for (const r of [15.01, 20, 1000]) {
      expect(h.sample(r, out, 3), `render tick ${r}`).toBe(SampleResult.HELD);
      expect(out[0], `render tick ${r}`).toBe(50);
      expect(h.lastFraction, `render tick ${r}`).toBe(2.5);
    }
    expect(h.sample(12.5, out, 0)).toBe(SampleResult.HELD);
    expect(out[0]).toBe(20);
  });

  it('holds before the oldest entry, holds a lone entry, and reports an empty history', () => {
    const h = history();
    const out = new Float64Array([7, 7, 7, 7]);
    expect(h.sample(5, out, 10)).toBe(SampleResult.EMPTY);
    expect(Array.from(out)).toEqual([7, 7, 7, 7]);
    expect([h.lastTickA, h.lastTickB]).toEqual([-1, -1]);
    h.push(20, [1, 2, 3, 0], false);
    expect(h.sample(25, out, 10)).toBe(SampleResult.HELD);
    expect(Array.from(out)).toEqual([1, 2, 3, 0]);
    expect(h.sample(20, out, 10)).toBe(SampleResult.INTERPOLATED);
    h.push(22, [3, 2, 3, 0], false);
    expect(h.sample(5, out, 10)).toBe(SampleResult.HELD);
    expect(Array.from(out)).toEqual([1, 2, 3, 0]);
    expect([h.lastTickA, h.lastTickB, h.lastFraction]).toEqual([20, 20, 0]);
  });

  it('ignores out-of-order and duplicate ticks and rejects malformed entries', () => {
    const h = history();
    expect(h.push(10, [0, 0, 0, 0], false)).toBe(true);
    expect(h.push(12, [2, 0, 0, 0], false)).toBe(true);
    expect(h.push(11, [1, 0, 0, 0], false)).toBe(false);
    expect(h.push(12, [9, 0, 0, 0], false)).toBe(false);
    expect(h.push(11, [0, 0, 0, 0], true)).toBe(false);
    expect(h.ignoredPushes).toBe(3);
    expect(h.teleports).toBe(0);
    expect(h.push(13, [Number.NaN, 0, 0, 0], false)).toBe(false);
    expect(h.push(13, [0, Number.POSITIVE_INFINITY, 0, 0], false)).toBe(false);
    expect(h.push(-1, [0, 0, 0, 0], false)).toBe(false);
    expect(h.push(13.5, [0, 0, 0, 0], false)).toBe(false);
    expect(h.rejectedPushes).toBe(4);
    expect([h.length, h.oldestTick, h.newestTick]).toEqual([2, 10, 12]);
    const out = new Float64Array(4);
    h.sample(11, out, 0);
    expect(out[0]).toBe(1);
  });

  it('keeps the newest entries exactly across thousands of pushes around the ring', () => {
    const h = history(16);
    const out = new Float64Array(4);
    const xAt = (tick: number) => tick * 0.5 - 100;
    for (let i = 0; i < 5000; i++) {
      const tick = 1000 + 3 * i;
      h.push(tick, [xAt(tick), -xAt(tick), (tick * 7) % 360, i & 1], false);
      if (i < 16) expect(h.length).toBe(i + 1);
      else expect(h.length).toBe(16);
      expect(h.oldestTick, `push ${i}`).toBe(1000 + 3 * Math.max(0, i - 15));
      if (i < 20) continue;
      const r = tick - 40.25;
      expect(h.sample(r, out, 0), `push ${i}`).toBe(SampleResult.INTERPOLATED);
      expect(out[0], `push ${i}`).toBeCloseTo(xAt(r), 9);
      expect(h.sample(tick - 100, out, 0), `push ${i}`).toBe(SampleResult.HELD);
      expect(out[0], `push ${i}`).toBe(xAt(h.oldestTick));
    }
  });

  for (const seed of [101, 102, 103]) {
    it(`reproduces every sampled value exactly from the reported pair and fraction (seed ${seed})`, () => {
      const rng = new Random(seed);
      const h = history(32, 500);
      const out = new Float64Array(4);
      const again = new Float64Array(4);
      let tick = rng.int(0, 1000);
      for (let step = 0; step < 3000; step++) {
        tick += rng.int(1, 6);
        const teleported = rng.chance(0.01);
        h.push(
          tick,
          [rng.range(-4000, 4000), rng.range(-4000, 4000), rng.range(0, 360), rng.int(0, 1)],
          teleported,
        );
        const r = tick + rng.range(-40, 8);
        const result = h.sample(r, out, rng.range(0, 5));
        expect(result, `seed ${seed} step ${step}`).not.toBe(SampleResult.EMPTY);
        expect(h.resample(h.lastTickA, h.lastTickB, h.lastFraction, again), `seed ${seed} step ${step}`).toBe(
          true,
        );
        for (let k = 0; k < 4; k++) expect(again[k], `seed ${seed} step ${step} field ${k}`).toBe(out[k]);
      }
    });
  }

  it('refuses to resample entries it no longer holds', () => {
    const h = history(4);
    for (let tick = 1; tick <= 10; tick++) h.push(tick, [tick, 0, 0, 0], false);
    const out = new Float64Array([9, 9, 9, 9]);
    expect(h.resample(2, 3, 0.5, out)).toBe(false);
    expect(h.resample(8, 11, 0.5, out)).toBe(false);
    expect(h.resample(9, 8, 0.5, out)).toBe(false);
    expect(Array.from(out)).toEqual([9, 9, 9, 9]);
    expect(h.resample(8, 9, 0.5, out)).toBe(true);
    expect(out[0]).toBe(8.5);
    expect(h.resample(8, 10, 0.25, out)).toBe(true);
    expect(out[0]).toBe(8.5);
  });

  it('looks fields up by name and clears on request', () => {
    const h = history();
    expect(h.fieldIndex('yaw')).toBe(2);
    expect(() => h.fieldIndex('pitch')).toThrow(/pitch/);
    h.push(1, [0, 0, 0, 0], false);
    h.clear();
    expect([h.length, h.newestTick, h.oldestTick]).toEqual([0, -1, -1]);
    expect(h.push(0, [0, 0, 0, 0], false)).toBe(true);
  });

  it('names the offending field or argument of a bad configuration or call', () => {
    expect(() => new InterpolationHistory({ fields: [] })).toThrow(/fields/);
    expect(() => new InterpolationHistory({ fields: LAYOUT, capacity: 48 })).toThrow(/capacity/);
    expect(() => new InterpolationHistory({ fields: LAYOUT, teleportDistance: 0 })).toThrow(
      /teleportDistance/,
    );
    expect(
      () =>
        new InterpolationHistory({
          fields: [
            { name: 'x', kind: 'linear' },
            { name: 'x', kind: 'angle' },
          ],
        }),
    ).toThrow(/fields\[1\]\.name/);
    expect(
      () =>
        new InterpolationHistory({
          // @ts-expect-error: not a field kind
          fields: [{ name: 'x', kind: 'cubic' }],
        }),
    ).toThrow(/fields\[0\]\.kind/);
    expect(() => new InterpolationHistory({ fields: LAYOUT, positionFields: ['yaw'] })).toThrow(
      /positionFields\[0\]/,
    );
    expect(
      () => new InterpolationHistory({ fields: [{ name: 'yaw', kind: 'angle' }], teleportDistance: 10 }),
    ).toThrow(/teleportDistance/);
    const h = history();
    expect(() => h.push(1, [0, 0, 0], false)).toThrow(/values/);
    h.push(1, [0, 0, 0, 0], false);
    expect(() => h.sample(Number.NaN, new Float64Array(4), 0)).toThrow(/renderTick/);
    expect(() => h.sample(1, new Float64Array(4), -1)).toThrow(/maxExtrapolationTicks/);
    expect(() => h.sample(1, new Float64Array(3), 0)).toThrow(/out/);
  });
});

describe('defaultInterpolationDelayMs', () => {
  it('is the larger of 100 ms and two snapshot intervals', () => {
    expect(defaultInterpolationDelayMs(20)).toBe(100);
    expect(defaultInterpolationDelayMs(64)).toBe(100);
    expect(defaultInterpolationDelayMs(10)).toBe(200);
    expect(defaultInterpolationDelayMs(4)).toBe(500);
    expect(() => defaultInterpolationDelayMs(0)).toThrow(/updateRate/);
    expect(() => defaultInterpolationDelayMs(Number.NaN)).toThrow(/updateRate/);
  });
});

describe('AdaptiveDelay', () => {
  /** Feeds snapshots every intervalMs with uniform one-way jitter; returns the delay at each 10 ms frame. */
  function run(
    delay: AdaptiveDelay,
    seed: number,
    fromMs: number,
    toMs: number,
    intervalMs: number,
    jitterMs: number,
    keep = (_index: number) => true,
  ): number[] {
    const rng = new Random(seed);
    const arrivals: { at: number; server: number }[] = [];
    for (let sent = fromMs, i = 0; sent < toMs; sent += intervalMs, i++) {
      if (keep(i)) arrivals.push({ at: sent + 40 + rng.range(0, jitterMs), server: sent });
    }
    arrivals.sort((a, b) => a.at - b.at);
    const delays: number[] = [];
    let next = 0;
    for (let t = fromMs; t < toMs; t += 10) {
      while (next < arrivals.length && arrivals[next].at <= t) {
        delay.onSnapshot(arrivals[next].at, arrivals[next].server);
        next++;
      }
      delays.push(delay.delayMs(t));
    }
    return delays;
  }

  it('starts at the default delay for the expected rate and stays there on a steady link', () => {
    expect(new AdaptiveDelay({ updateRateHz: 10 }).delayMs(0)).toBe(200);
    const delay = new AdaptiveDelay();
    const delays = run(delay, 1, 0, 10_000, 50, 0);
    for (const d of delays) expect(d).toBeCloseTo(100, 9);
    expect(delay.jitterMs).toBeCloseTo(0, 9);
    expect(delay.intervalMs).toBeCloseTo(50, 9);
  });

  for (const seed of [61, 62]) {
    it(`rises slowly to cover +-50 ms of jitter, then comes back when it ends (seed ${seed})`, () => {
      const delay = new AdaptiveDelay();
      const maxStep = (DEFAULT_ADAPTIVE_DELAY_CONFIG.maxChangeMsPerSecond * 10) / 1000 + 1e-9;
      const jittery = run(delay, seed, 0, 30_000, 50, 100);
      const calm = run(delay, seed, 30_000, 70_000, 50, 0);
      const all = [...jittery, ...calm];
      for (let i = 1; i < all.length; i++) {
        expect(Math.abs(all[i] - all[i - 1]), `seed ${seed} frame ${i}`).toBeLessThanOrEqual(maxStep);
      }
      // Uniform jitter over 100 ms has a standard deviation of 28.9 ms: target about 100 + 2 * 28.9.
      const peak = jittery[jittery.length - 1];
      expect(peak, `seed ${seed}`).toBeGreaterThan(140);
      expect(peak, `seed ${seed}`).toBeLessThan(180);
      expect(calm[calm.length - 1], `seed ${seed}`).toBeCloseTo(100, 6);
    });
  }

  it('widens when every other snapshot is lost', () => {
    const delay = new AdaptiveDelay();
    const delays = run(delay, 71, 0, 40_000, 50, 0, (i) => i % 2 === 0);
    expect(delay.intervalMs).toBeCloseTo(100, 6);
    expect(delays[delays.length - 1]).toBeCloseTo(200, 6);
  });

  it('stays within its bounds and rejects non-finite samples without throwing', () => {
    const delay = new AdaptiveDelay({ maxDelayMs: 250 });
    for (let i = 0; i < 200; i++) delay.onSnapshot(i * 1000, i * 3000);
    expect(delay.targetDelayMs).toBe(250);
    expect(delay.onSnapshot(Number.NaN, 0)).toBe(false);
    expect(delay.onSnapshot(0, Number.NEGATIVE_INFINITY)).toBe(false);
    expect(delay.rejectedSamples).toBe(2);
  });

  it('names the offending field of a bad configuration', () => {
    expect(() => new AdaptiveDelay({ updateRateHz: 0 })).toThrow(/updateRateHz/);
    expect(() => new AdaptiveDelay({ minDelayMs: -1 })).toThrow(/minDelayMs/);
    expect(() => new AdaptiveDelay({ maxDelayMs: 50 })).toThrow(/maxDelayMs/);
    expect(() => new AdaptiveDelay({ jitterDeviations: Number.NaN })).toThrow(/jitterDeviations/);
    expect(() => new AdaptiveDelay({ smoothingFactor: 2 })).toThrow(/smoothingFactor/);
    expect(() => new AdaptiveDelay({ maxChangeMsPerSecond: 0 })).toThrow(/maxChangeMsPerSecond/);
  });
});
