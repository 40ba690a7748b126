// Tests of the interpolation delay: the paper's default and the adaptive delay.

import { describe, expect, it } from 'vitest';
import {
  AdaptiveDelay,
  DEFAULT_ADAPTIVE_DELAY_CONFIG,
  defaultInterpolationDelayMs,
} from '../../src/client/delay.ts';
import { Random } from '../../src/sim/random.ts';

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
      const c = DEFAULT_ADAPTIVE_DELAY_CONFIG;
      const maxRise = (c.maxRiseMsPerSecond * 10) / 1000 + 1e-9;
      const maxFall = (c.maxChangeMsPerSecond * 10) / 1000 + 1e-9;
      const jittery = run(delay, seed, 0, 30_000, 50, 100);
      const calm = run(delay, seed, 30_000, 70_000, 50, 0);
      const all = [...jittery, ...calm];
      for (let i = 1; i < all.length; i++) {
        const step = all[i] - all[i - 1];
        expect(step, `seed ${seed} frame ${i}`).toBeLessThanOrEqual(maxRise);
        expect(-step, `seed ${seed} frame ${i}`).toBeLessThanOrEqual(maxFall);
      }
      // Uniform jitter over 100 ms has a standard deviation of 28.9 ms: target about 100 + 2 * 28.9.
      const peak = jittery[jittery.length - 1];
      expect(peak, `seed ${seed}`).toBeGreaterThan(140);
      expect(peak, `seed ${seed}`).toBeLessThan(180);
      // Back within 2 ms of the floor 40 s later (the held jitter peak decays over 10 s).
      const end = calm[calm.length - 1];
      expect(end, `seed ${seed}`).toBeGreaterThanOrEqual(100);
      expect(end, `seed ${seed}`).toBeLessThan(102);
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
    expect(() => new AdaptiveDelay({ minDelayMs: 100, maxDelayMs: 50 })).toThrow(/maxDelayMs/);
    expect(() => new AdaptiveDelay({ jitterDeviations: Number.NaN })).toThrow(/jitterDeviations/);
    expect(() => new AdaptiveDelay({ smoothingFactor: 2 })).toThrow(/smoothingFactor/);
    expect(() => new AdaptiveDelay({ maxChangeMsPerSecond: 0 })).toThrow(/maxChangeMsPerSecond/);
    expect(() => new AdaptiveDelay({ maxRiseMsPerSecond: 0 })).toThrow(/maxRiseMsPerSecond/);
    expect(() => new AdaptiveDelay({ jitterHoldMs: Number.NaN })).toThrow(/jitterHoldMs/);
  });
});
