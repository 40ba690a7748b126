// Delay-based rate control against a simulated bottleneck: a sender that wants more than the
// link carries, one packet every 1000/64 ms, through a drop-tail queue.

import { describe, expect, it } from 'vitest';
import { RateController } from '../../src/net/rate-control.ts';
import { Random } from '../../src/sim/random.ts';

/**
 * Runs `seconds` of a sender wanting `wantBytesPerSecond` over a link of `linkBytesPerSecond`
 * whose round trip without a queue is `baseRttMs` (or `pathMs(sentMs)`, a path that changes);
 * `minRate` is the least rate the controller allowed from `minFromMs` on.
 */
function run(
  linkBytesPerSecond: number | ((nowMs: number) => number),
  wantBytesPerSecond: number | ((nowMs: number) => number),
  baseRttMs: number,
  seconds: number,
  pathMs: (sentMs: number) => number = () => baseRttMs,
  minFromMs = 0,
) {
  const control = new RateController({ maxBytesPerSecond: 80_000 });
  const packetMs = 1000 / 64;
  let linkFreeMs = 0;
  let sendFreeMs = 0;
  const acks: { atMs: number; rttMs: number; bytes: number }[] = [];
  const queueSamples: number[] = [];
  let minRate = Number.POSITIVE_INFINITY;
  /** The longest queue a packet met, per second of the run. */
  const maxQueueBySecond: number[] = [];
  for (let now = 0; now < seconds * 1000; now += packetMs) {
    while (acks.length > 0 && acks[0].atMs <= now) {
      const a = acks.shift() as { atMs: number; rttMs: number; bytes: number };
      control.onAck(a.atMs, a.rttMs, a.bytes);
    }
    control.update(now, 0);
    if (now >= minFromMs) minRate = Math.min(minRate, control.rateBytesPerSecond);
    if (now < sendFreeMs) continue;
    const want = typeof wantBytesPerSecond === 'number' ? wantBytesPerSecond : wantBytesPerSecond(now);
    const bytes = Math.min(1200, (want * packetMs) / 1000);
    sendFreeMs = now + (bytes * 1000) / control.rateBytesPerSecond;
    const start = Math.max(now, linkFreeMs);
    const link = typeof linkBytesPerSecond === 'number' ? linkBytesPerSecond : linkBytesPerSecond(now);
    linkFreeMs = start + (bytes * 1000) / link;
    const queueMs = start - now;
    if (now > (seconds - 20) * 1000) queueSamples.push(queueMs);
    const second = Math.floor(now / 1000);
    maxQueueBySecond[second] = Math.max(maxQueueBySecond[second] ?? 0, queueMs);
    const rtt = pathMs(now) + queueMs + (bytes * 1000) / link;
    acks.push({ atMs: now + rtt, rttMs: rtt, bytes });
    acks.sort((x, y) => x.atMs - y.atMs);
  }
  const meanQueue = queueSamples.reduce((a, b) => a + b, 0) / queueSamples.length;
  return { control, meanQueue, minRate, maxQueueBySecond };
}

describe('RateController', () => {
  it('finds a slow link and keeps its queue short, where sending at the configured rate would queue for seconds', () => {
    const { control, meanQueue } = run(8000, 20_000, 600, 60);
    expect(control.stats.delayDecreases).toBeGreaterThan(0);
    expect(control.rateBytesPerSecond).toBeLessThan(10_000);
    expect(control.rateBytesPerSecond).toBeGreaterThan(4000);
    expect(meanQueue).toBeLessThan(100);
  });

  it('keeps no standing queue when the sender wants just over the link', () => {
    // Acknowledgements come back spaced as the packets went (the link carries about what is sent):
    // with no jump of the round trip before, that is the sender's own queue, not a longer route.
    const { control, meanQueue } = run(8000, 9000, 600, 60);
    expect(control.stats.latencySteps).toBe(0);
    expect(control.stats.delayDecreases).toBeGreaterThan(0);
    expect(meanQueue).toBeLessThan(100);
  });

  it('leaves a fast link alone: the rate climbs to its upper bound', () => {
    const { control, meanQueue } = run(1_000_000, 20_000, 40, 30);
    expect(control.stats.delayDecreases).toBe(0);
    expect(control.rateBytesPerSecond).toBe(80_000);
    expect(meanQueue).toBeLessThan(1);
  });

  it('tells a longer route from a queue: latency steps and spikes move the base, the rate stays', () => {
    // 40 ms, then 400 ms from 10 s on, and a 1.2 s spike each way from 20 to 21.5 s.
    const path = (t: number) => (t >= 20_000 && t < 21_500 ? 2440 : t >= 10_000 ? 400 : 40);
    const { control } = run(1_000_000, 20_000, 40, 30, path);
    expect(control.stats.latencySteps).toBeGreaterThan(0);
    expect(control.stats.delayDecreases + control.stats.lossDecreases).toBe(0);
    expect(control.rateBytesPerSecond).toBe(80_000);
    expect(control.baseRttMs).toBeGreaterThan(300);
  });

  it('takes a handover for a longer route, not a queue: both legs step up at once, each with its jitter', () => {
    // A phone's handover: 60 ms each way with 20 ms of jitter, then for 2 s from 20 s on 300 ms
    // each way with 50 ms of jitter, then back. A packet sent just before the step comes back
    // over the new up-leg, so the round trip climbs in two jumps: taken together they look like
    // acknowledgements spreading at a bottleneck. The sender wants a tenth of the link: the rate
    // may be trimmed while the route is jittery, never to less than it sends, and keeps room for
    // the game's bursts after (a trim is grown back only as the sender uses the room).
    for (const seed of [1, 2, 3, 4, 5]) {
      const rng = new Random(seed);
      const leg = (t: number) =>
        t >= 20_000 && t < 22_000 ? 300 + rng.range(-50, 50) : 60 + rng.range(-20, 20);
      const path = (t: number) => {
        const down = leg(t);
        return down + leg(t + down);
      };
      // The least rate from 15 s on: the startup is long over, the handover to come.
      const { control, minRate } = run(200_000, 20_000, 120, 40, path, 15_000);
      expect(minRate, `seed ${seed}`).toBeGreaterThan(20_000);
      expect(control.rateBytesPerSecond, `seed ${seed}`).toBeGreaterThanOrEqual(40_000);
    }
  });

  it('takes a route about 100 ms longer on both legs for a route: one cut at most, then the rate comes back', () => {
    // Each leg 20 ms, then 20 + step / 2 from 10 s on: the round trip climbs in two jumps, each
    // within what jitter could make, to a queue past the standing-queue thresholds. A cut that
    // leaves the queue where it was shows it is not the sender's.
    for (const step of [95, 110, 120]) {
      const leg = (t: number) => (t >= 10_000 ? 20 + step / 2 : 20);
      const path = (t: number) => {
        const down = leg(t);
        return down + leg(t + down);
      };
      const { control, minRate } = run(1_000_000, 20_000, 40, 30, path, 9000);
      expect(minRate, `step ${step}`).toBeGreaterThanOrEqual(40_000);
      expect(control.stats.latencySteps, `step ${step}`).toBeGreaterThan(0);
      expect(control.rateBytesPerSecond, `step ${step}`).toBe(80_000);
      expect(control.baseRttMs, `step ${step}`).toBeGreaterThan(40 + step - 10);
    }
  });

  it('cuts a queue that climbs with every acknowledgement, though each is a jump and leaves no dispersion to measure', () => {
    // A slow link's acknowledgements, 100 ms apart, each 62.5 ms later than the one before from
    // 3 s on (the sender sends far more than the link carries; the round trips step by the
    // server's tick): every one is a jump, which restarts the dispersion. A route changes in one or
    // two jumps; a climb that goes on is a queue.
    const control = new RateController({ maxBytesPerSecond: 80_000 });
    let rtt = 600;
    let nextAckMs = 0;
    let cutAtMs = -1;
    for (let now = 0; now < 6000; now += 1000 / 64) {
      if (now >= nextAckMs) {
        if (now >= 3000) rtt += 62.5;
        control.onAck(now, rtt, 300);
        nextAckMs = now + 100;
      }
      control.update(now, 0);
      if (cutAtMs < 0 && control.stats.delayDecreases > 0) cutAtMs = now;
    }
    expect(cutAtMs).toBeGreaterThan(3000);
    expect(cutAtMs).toBeLessThan(4500);
    expect(control.stats.latencySteps).toBe(0);
  });

  it('does not let a rate the sender left unused build a queue when the game sends more (a jittery slow link)', () => {
    // A game on a slow link sends less than the link carries for a while (a quiet scene), then
    // 15 % more (a fight). A rate grown unused meanwhile would let the fight queue at the link;
    // the queue climbs through the route's jitter too slowly for the short trend to tell, and
    // acknowledgements keeping about the packets' spacing would pass it for a standing queue.
    for (const seed of [1, 2, 3]) {
      const rng = new Random(seed);
      const want = (t: number) => (t < 10_000 ? 20_000 : t < 30_000 ? 5000 : 9200);
      const path = () => 600 + rng.range(-15, 15) + rng.range(-15, 15);
      const { control, maxQueueBySecond } = run(8000, want, 600, 50, path);
      const worst = Math.max(...maxQueueBySecond.slice(31));
      expect(worst, `seed ${seed}`).toBeLessThan(100);
      expect(control.stats.latencySteps, `seed ${seed}`).toBe(0);
    }
  });

  it('cuts a queue that climbs slowly through jitter: a slow link loses a tenth of its capacity', () => {
    // The sender wants 7,600 B/s, which the link carried; from 30 s on it carries 7,200 (someone
    // else's traffic). The queue then climbs about 55 ms a second under 20 ms of jitter each way:
    // too slowly for the short trend to tell, with acknowledgements keeping about the packets'
    // spacing (a standing queue, or, after a jump, a longer route).
    for (const seed of [1, 2, 3]) {
      const rng = new Random(seed);
      const link = (t: number) => (t < 30_000 ? 8000 : 7200);
      const path = () => 600 + rng.range(-20, 20) + rng.range(-20, 20);
      const { control, maxQueueBySecond } = run(link, 7600, 600, 50, path);
      // Each second's longest queue from the drop on: cut within about two seconds, then short.
      const tail = maxQueueBySecond.slice(31);
      expect(Math.max(...tail), `seed ${seed}`).toBeLessThan(300);
      expect(tail.reduce((x, y) => x + y, 0) / tail.length, `seed ${seed}`).toBeLessThan(60);
      expect(control.stats.latencySteps, `seed ${seed}`).toBe(0);
    }
  });

  it('climbs back after cuts forced by a queue not its own while frames paced at whole ticks were held back', () => {
    // A game wants 40,000 B/s in 32 frames a second over a fast link (80,000 B/s). The server sends
    // only on its ticks and each frame's rate wait runs from a little after the tick, so a frame the
    // size of its budget waits a third tick: a sender the rate holds back delivers about three
    // quarters of it. At 20 s and again at 24 s someone else's queue climbs 150 ms in a second and
    // is gone: each reads as the sender's and is cut. The second cut comes while the first holds
    // frames back, and what the link delivered then (three quarters of the cut rate) taken for the
    // link's capacity kept the rate near it: the unused-rate rule reads a choked sender as one
    // that leaves its rate unused. The link carried 40,000 without a queue seconds before.
    const control = new RateController({ maxBytesPerSecond: 80_000 });
    const tickMs = 1000 / 64;
    const foreignQueueMs = (t: number) => {
      for (const at of [20_000, 24_000]) if (t >= at && t < at + 1000) return ((t - at) / 1000) * 150;
      return 0;
    };
    let linkFreeMs = 0;
    let nextFrameMs = 0;
    let rateFreeMs = 0;
    const acks: { atMs: number; rttMs: number; bytes: number }[] = [];
    let lowest = Number.POSITIVE_INFINITY;
    const rateAt: number[] = [];
    for (let now = 0; now < 60_000; now += tickMs) {
      while (acks.length > 0 && acks[0].atMs <= now) {
        const a = acks.shift() as { atMs: number; rttMs: number; bytes: number };
        control.onAck(a.atMs, a.rttMs, a.bytes);
      }
      control.update(now, 0);
      if (now >= 20_000) lowest = Math.min(lowest, control.rateBytesPerSecond);
      rateAt[Math.floor(now / 1000)] = control.rateBytesPerSecond;
      if (now < nextFrameMs || now < rateFreeMs) continue;
      const bytes = Math.min(1200, 40_000 / 32, control.rateBytesPerSecond / 32);
      nextFrameMs = Math.max(nextFrameMs + 1000 / 32, now);
      rateFreeMs = now + 0.5 + (bytes * 1000) / control.rateBytesPerSecond;
      const start = Math.max(now, linkFreeMs);
      linkFreeMs = start + (bytes * 1000) / 80_000;
      const rtt = 100 + foreignQueueMs(now) + (start - now) + (bytes * 1000) / 80_000;
      acks.push({ atMs: now + rtt, rttMs: rtt, bytes });
      acks.sort((x, y) => x.atMs - y.atMs);
    }
    expect(control.stats.delayDecreases).toBeGreaterThanOrEqual(2);
    expect(lowest).toBeLessThan(25_000);
    // Within 15 s of the last cut the rate is back above what the game wants.
    expect(rateAt[40]).toBeGreaterThan(40_000);
  });

  it('still finds a slow link behind a route that got longer', () => {
    const { control, meanQueue } = run(8000, 20_000, 100, 60, (t) => (t >= 5000 ? 600 : 100));
    expect(control.stats.delayDecreases).toBeGreaterThan(0);
    expect(control.rateBytesPerSecond).toBeLessThan(10_000);
    expect(meanQueue).toBeLessThan(100);
  });

  it('names a bad setting', () => {
    expect(() => new RateController({ maxBytesPerSecond: 0 })).toThrow(
      'rate control: maxBytesPerSecond must be a finite number > 0, got 0',
    );
    expect(() => new RateController({ maxBytesPerSecond: 1000, decreaseFactor: 2 })).toThrow(
      /decreaseFactor/,
    );
  });
});
