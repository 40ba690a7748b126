// Statistical tests of the link conditioner: over many simulated packets, what it does matches its profile.

import { describe, expect, it } from 'vitest';
import { LinkConditioner, WIRE_OVERHEAD_BYTES } from '../../src/net/conditioner.ts';
import { type Direction, parseProfile, profileByName } from '../../src/net/profile.ts';

const N = 100_000;
const SEEDS = [1, 77, 90210];

function link(doc: unknown, seed: number, direction: Direction = 'up'): LinkConditioner {
  return new LinkConditioner({ seed, profile: parseProfile(doc), direction });
}

/** Submits N packets of `bytes` every `intervalMs` and collects first-copy delays (NaN when dropped). */
function run(c: LinkConditioner, intervalMs = 10, bytes = 100): Float64Array {
  const delays = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const now = i * intervalMs;
    const v = c.submit(now, bytes);
    delays[i] = v.copies > 0 ? v.firstMs - now : Number.NaN;
  }
  return delays;
}

function countConsistent(c: LinkConditioner): boolean {
  const s = c.stats;
  return s.sent === s.delivered - s.duplicated + s.droppedRandom + s.droppedBurst + s.droppedQueue;
}

describe('LinkConditioner latency and jitter', () => {
  for (const seed of SEEDS) {
    it(`keeps delays uniform in [latency - jitter, latency + jitter] with the configured mean (seed ${seed})`, () => {
      const c = link({ latencyMs: 60, jitterMs: 20 }, seed);
      const delays = run(c);
      let sum = 0;
      let sumSq = 0;
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const d of delays) {
        sum += d;
        sumSq += d * d;
        min = Math.min(min, d);
        max = Math.max(max, d);
      }
      const mean = sum / N;
      const sd = Math.sqrt(sumSq / N - mean * mean);
      expect(Math.abs(mean - 60), `seed ${seed}: mean ${mean}`).toBeLessThan(0.3);
      expect(Math.abs(sd - 20 / Math.sqrt(3)), `seed ${seed}: sd ${sd}`).toBeLessThan(0.3);
      expect(min, `seed ${seed}`).toBeGreaterThanOrEqual(40);
      expect(max, `seed ${seed}`).toBeLessThanOrEqual(80);
      expect(min, `seed ${seed}`).toBeLessThan(40.1);
      expect(max, `seed ${seed}`).toBeGreaterThan(79.9);
      expect(c.stats.delivered, `seed ${seed}`).toBe(N);
    });
  }

  it('never delivers before the send time when jitter exceeds latency', () => {
    const seed = 5;
    const delays = run(link({ latencyMs: 5, jitterMs: 20 }, seed));
    let zeros = 0;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const d of delays) {
      min = Math.min(min, d);
      max = Math.max(max, d);
      if (d === 0) zeros++;
    }
    expect(min, `seed ${seed}`).toBe(0);
    expect(max, `seed ${seed}`).toBeLessThanOrEqual(25);
    expect(zeros / N, `seed ${seed}`).toBeGreaterThan(0.3);
  });
});

describe('LinkConditioner loss', () => {
  for (const seed of SEEDS) {
    it(`drops the configured share at random (seed ${seed})`, () => {
      const c = link({ loss: 0.02, latencyMs: 10 }, seed);
      run(c);
      const rate = c.stats.droppedRandom / N;
      expect(Math.abs(rate - 0.02), `seed ${seed}: rate ${rate}`).toBeLessThan(0.0015);
      expect(c.stats.droppedBurst, `seed ${seed}`).toBe(0);
      expect(countConsistent(c), `seed ${seed}`).toBe(true);
    });

    it(`averages the Gilbert-Elliott steady-state loss, in bursts (seed ${seed})`, () => {
      const loss = 0.01;
      const burst = { enter: 0.01, exit: 0.2, loss: 0.6 };
      const c = link({ loss, burst }, seed);
      let badPackets = 0;
      let runs = 0;
      let lost = 0;
      let previousLost = false;
      for (let i = 0; i < N; i++) {
        const dropped = c.submit(i * 10, 100).copies === 0;
        if (c.inBurst) badPackets++;
        if (dropped) {
          lost++;
          if (!previousLost) runs++;
        }
        previousLost = dropped;
      }
      const badShare = burst.enter / (burst.enter + burst.exit);
      const expected = (1 - badShare) * loss + badShare * burst.loss;
      const rate = lost / N;
      expect(Math.abs(badPackets / N - badShare), `seed ${seed}: bad share ${badPackets / N}`).toBeLessThan(
        0.006,
      );
      expect(Math.abs(rate - expected), `seed ${seed}: rate ${rate} vs ${expected}`).toBeLessThan(0.004);
      expect(c.stats.droppedRandom + c.stats.droppedBurst, `seed ${seed}`).toBe(lost);
      expect(
        Math.abs(c.stats.droppedBurst / N - badShare * burst.loss),
        `seed ${seed}: burst share ${c.stats.droppedBurst / N}`,
      ).toBeLessThan(0.004);
      // Independent loss at this rate would give runs of about 1 / (1 - rate) = 1.04 packets.
      expect(lost / runs, `seed ${seed}: mean run ${lost / runs}`).toBeGreaterThan(1.4);
    });
  }

  it('drops everything at loss 1 and nothing at loss 0', () => {
    const all = link({ loss: 1 }, 3);
    run(all);
    expect(all.stats.droppedRandom).toBe(N);
    expect(all.stats.delivered).toBe(0);
    const none = link({ loss: 0, jitterMs: 5, latencyMs: 10 }, 3);
    run(none);
    expect(none.stats.delivered).toBe(N);
  });
});

describe('LinkConditioner duplication and reordering', () => {
  for (const seed of SEEDS) {
    it(`duplicates the configured share, each copy with its own latency (seed ${seed})`, () => {
      const c = link({ latencyMs: 50, jitterMs: 10, duplicate: 0.05 }, seed);
      let twice = 0;
      let sameTime = 0;
      let outOfRange = 0;
      for (let i = 0; i < N; i++) {
        const now = i * 10;
        const v = c.submit(now, 100);
        if (v.copies === 2) {
          twice++;
          if (v.secondMs === v.firstMs) sameTime++;
          if (v.secondMs - now < 40 || v.secondMs - now > 60) outOfRange++;
        }
      }
      expect(outOfRange, `seed ${seed}`).toBe(0);
      expect(Math.abs(twice / N - 0.05), `seed ${seed}: rate ${twice / N}`).toBeLessThan(0.003);
      expect(c.stats.duplicated, `seed ${seed}`).toBe(twice);
      expect(c.stats.delivered, `seed ${seed}`).toBe(N + twice);
      expect(c.stats.bytesDelivered, `seed ${seed}`).toBe((N + twice) * 100);
      expect(sameTime, `seed ${seed}`).toBe(0);
    });

    it(`holds back the configured share so later packets overtake it (seed ${seed})`, () => {
      const c = link({ latencyMs: 50, reorder: 0.02, reorderDelayMs: 40 }, seed);
      const delays = run(c);
      let held = 0;
      let overtaken = 0;
      let other = 0;
      for (let i = 0; i < N; i++) {
        if (delays[i] === 90) held++;
        else if (delays[i] !== 50) other++;
        if (i + 1 < N && i * 10 + delays[i] > (i + 1) * 10 + delays[i + 1]) overtaken++;
      }
      expect(other, `seed ${seed}`).toBe(0);
      expect(Math.abs(held / N - 0.02), `seed ${seed}: rate ${held / N}`).toBeLessThan(0.0015);
      expect(overtaken, `seed ${seed}`).toBeGreaterThan(0.9 * held);
    });
  }

  it('keeps packets in order with neither jitter nor reordering', () => {
    const delays = run(link({ latencyMs: 50, reorder: 0, reorderDelayMs: 40 }, 8));
    expect(delays.every((d) => d === 50)).toBe(true);
  });
});

describe('LinkConditioner bandwidth', () => {
  const bytes = 100;
  const kbps = 100; // 100 bits per ms
  const serializeMs = ((bytes + WIRE_OVERHEAD_BYTES) * 8) / kbps;

  it('adds serialization time and never queue-drops below the rate', () => {
    const c = link({ latencyMs: 20, bandwidthKbps: kbps, queueMs: 50 }, 4);
    const delays = run(c, 2 * serializeMs, bytes);
    expect(delays.every((d) => Math.abs(d - (20 + serializeMs)) < 1e-9)).toBe(true);
    expect(c.stats.droppedQueue).toBe(0);
  });

  for (const seed of SEEDS) {
    it(`caps throughput at the rate and drops at the queue limit when overdriven (seed ${seed})`, () => {
      const queueMs = 100;
      const c = link({ bandwidthKbps: kbps, queueMs, jitterMs: 0, loss: 0.01 }, seed);
      const intervalMs = serializeMs / 2;
      let previousDepart = Number.NEGATIVE_INFINITY;
      let departures = 0;
      let lastDepart = 0;
      let violations = 0;
      for (let i = 0; i < N / 10; i++) {
        const now = i * intervalMs;
        const busyBefore = c.busyUntilMs;
        const v = c.submit(now, bytes);
        if (v.drop === 'queue') {
          if (busyBefore - now <= queueMs) violations++;
          continue;
        }
        const depart = c.busyUntilMs;
        if (depart - serializeMs - now > queueMs + 1e-9) violations++;
        if (depart - previousDepart < serializeMs - 1e-9) violations++;
        if (v.copies > 0 && v.firstMs !== depart) violations++;
        previousDepart = depart;
        lastDepart = depart;
        departures++;
      }
      expect(violations, `seed ${seed}`).toBe(0);
      const bitsPerMs = (departures * (bytes + WIRE_OVERHEAD_BYTES) * 8) / lastDepart;
      expect(bitsPerMs, `seed ${seed}`).toBeLessThanOrEqual(kbps + 1e-9);
      expect(bitsPerMs, `seed ${seed}`).toBeGreaterThan(0.99 * kbps);
      const queueShare = c.stats.droppedQueue / (N / 10);
      expect(Math.abs(queueShare - 0.5), `seed ${seed}: queue drops ${queueShare}`).toBeLessThan(0.01);
      expect(c.stats.droppedRandom, `seed ${seed}`).toBeGreaterThan(0);
      expect(countConsistent(c), `seed ${seed}`).toBe(true);
    });
  }
});

describe('LinkConditioner events', () => {
  it('changes conditions only for packets sent within the window', () => {
    const doc = {
      latencyMs: 50,
      events: [{ atMs: 1000, durationMs: 500, latencyMs: 400, up: { loss: 0.5 } }],
    };
    for (const direction of ['up', 'down'] as const) {
      const c = link(doc, 11, direction);
      let lostInside = 0;
      let lostOutside = 0;
      let wrongDelay = 0;
      for (let now = 0; now < 3000; now += 0.5) {
        const v = c.submit(now, 100);
        const inside = now >= 1000 && now < 1500;
        if (v.copies === 0) {
          if (inside) lostInside++;
          else lostOutside++;
        } else if (v.firstMs - now !== (inside ? 400 : 50)) {
          wrongDelay++;
        }
      }
      expect(wrongDelay, direction).toBe(0);
      expect(lostOutside, direction).toBe(0);
      if (direction === 'up') expect(Math.abs(lostInside / 1000 - 0.5)).toBeLessThan(0.06);
      else expect(lostInside).toBe(0);
    }
  });
});

describe('LinkConditioner determinism', () => {
  function schedule(seed: number, direction: Direction): number[] {
    const c = new LinkConditioner({ seed, profile: profileByName('terrible'), direction });
    const out: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const v = c.submit(i * 7, 200);
      out.push(v.copies, v.firstMs, v.secondMs);
    }
    return out;
  }

  for (const seed of SEEDS) {
    it(`gives the same schedule for the same seed and another for another seed (seed ${seed})`, () => {
      expect(schedule(seed, 'up'), `seed ${seed}`).toEqual(schedule(seed, 'up'));
      expect(schedule(seed, 'up'), `seed ${seed}`).not.toEqual(schedule(seed + 1, 'up'));
    });
  }

  it('rejects bad arguments, naming them', () => {
    const profile = profileByName('lan');
    expect(() => new LinkConditioner({ seed: 1.5, profile, direction: 'up' })).toThrow(
      'seed must be an integer, got 1.5',
    );
    const c = new LinkConditioner({ seed: 1, profile, direction: 'down' });
    expect(() => c.submit(Number.NaN, 10)).toThrow('nowMs must be finite, got NaN');
    expect(() => c.submit(0, -1)).toThrow('byteLength must be a non-negative integer, got -1');
    expect(() => c.submit(0, 1.5)).toThrow('byteLength must be a non-negative integer, got 1.5');
  });
});
