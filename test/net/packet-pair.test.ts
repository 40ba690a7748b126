// Packet pairs in parts: the client flags that carry a pair's gap (and refuse a gap out of
// range), the client's arrival record that makes the reports, and the rate controller's verdict
// on a set of gaps (a bottleneck shown and followed; jitter and a fast link left alone).

import { describe, expect, it } from 'vitest';
import { PairArrivals } from '../../src/net/packet-pair.ts';
import { RateController } from '../../src/net/rate-control.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { createClientFlags, PAIR_GAP_LIMIT, serializeClientFlags } from '../../src/protocol/frames.ts';
import { Random } from '../../src/sim/random.ts';

describe('client flags: the pair report', () => {
  it('round-trips a report and its absence, and costs one bit without one', () => {
    const s = new BitStream(16);
    for (const [pair, sequence, gap] of [
      [true, 0xab, 140],
      [true, 0, -PAIR_GAP_LIMIT],
      [true, 255, PAIR_GAP_LIMIT],
      [false, 0, 0],
    ] as const) {
      const f = createClientFlags();
      f.resetBaseline = true;
      f.pair = pair;
      f.pairSequence = sequence;
      f.pairGap = gap;
      s.beginWrite();
      expect(serializeClientFlags(s, f)).toBe(true);
      expect(s.bitsProcessed).toBe(pair ? 2 + 8 + 13 : 2);
      const bytes = s.buffer.slice(0, Math.ceil(s.bitsProcessed / 8));
      const g = createClientFlags();
      g.pairSequence = 9;
      g.pairGap = 9;
      s.beginRead(bytes);
      expect(serializeClientFlags(s, g)).toBe(true);
      expect(g).toEqual({ resetBaseline: true, pair, pairSequence: sequence, pairGap: gap });
    }
  });

  it('refuses a gap past the limit, and a report cut short', () => {
    // The gap's 13 bits hold 0..8191 for -4095..4095: the raw 8191 is past it.
    const s = new BitStream(8);
    s.beginWrite();
    s.bool(false);
    s.bool(true);
    s.uint(7, 8);
    s.uint(8191, 13);
    const bytes = s.buffer.slice(0, 3);
    const f = createClientFlags();
    s.beginRead(bytes);
    expect(serializeClientFlags(s, f)).toBe(false);
    s.beginRead(bytes.subarray(0, 1));
    expect(serializeClientFlags(s, createClientFlags())).toBe(false);
  });
});

describe('PairArrivals', () => {
  it('reports a frame and the keepalive just before it, in either order of arrival', () => {
    const a = new PairArrivals();
    const f = createClientFlags();
    a.arrived(100, 1000, false);
    a.arrived(101, 1035.3, true);
    // Arrived the other way round: the frame first, the keepalive 12 ms later.
    a.arrived(0xffff, 2000, true);
    a.arrived(0xfffe, 2012, false);
    a.take(f);
    expect(f).toMatchObject({ pair: true, pairSequence: 101, pairGap: Math.round(35.3 * 4) });
    a.take(f);
    expect(f).toMatchObject({ pair: true, pairSequence: 0xff, pairGap: -48 });
    a.take(f);
    expect(f.pair).toBe(false);
    expect([a.reported, a.taken]).toEqual([2, 2]);
  });

  it('reports a pair across the sequence wrap: the keepalive 0xffff, the frame 0', () => {
    const a = new PairArrivals();
    const f = createClientFlags();
    a.arrived(0xffff, 3000, false);
    a.arrived(0, 3020, true);
    a.take(f);
    expect(f).toMatchObject({ pair: true, pairSequence: 0, pairGap: 80 });
  });

  it('reports nothing for packets that are not a keepalive and the frame after it', () => {
    const a = new PairArrivals();
    const f = createClientFlags();
    a.arrived(10, 0, true);
    a.arrived(11, 5, true); // two frames
    a.arrived(20, 10, false);
    a.arrived(22, 15, true); // not adjacent
    a.arrived(30, 20, false);
    a.arrived(31, 25, false); // two keepalives
    a.arrived(40 + 64, 30, false);
    a.arrived(41, 35, true); // the slot held another sequence
    a.take(f);
    expect(f.pair).toBe(false);
    expect(a.reported).toBe(0);
  });

  it('clamps a gap to the limit and keeps the newest reports when more wait than it holds', () => {
    const a = new PairArrivals();
    const f = createClientFlags();
    a.arrived(1, 0, false);
    a.arrived(2, 5000, true);
    a.take(f);
    expect(f.pairGap).toBe(PAIR_GAP_LIMIT);
    for (let i = 0; i < 40; i++) {
      a.arrived((2 * i + 10) & 0xffff, i * 100, false);
      a.arrived((2 * i + 11) & 0xffff, i * 100 + i, true);
    }
    const gaps: number[] = [];
    for (a.take(f); f.pair; a.take(f)) gaps.push(f.pairGap / 4);
    expect(gaps).toEqual(Array.from({ length: 32 }, (_, k) => k + 8));
  });
});

describe('RateController: packet pairs', () => {
  const tickMs = 1000 / 64;

  /** A controller fed `n` pairs of `bytes` with gaps from `gap(i)`. */
  function fed(n: number, bytes: number, gap: (i: number) => number) {
    const control = new RateController({ maxBytesPerSecond: 80_000 });
    control.pairsStarted(0);
    for (let i = 0; i < n; i++) control.onPair(gap(i), bytes);
    return control;
  }

  it('shows a slow hop once enough gaps agree, and keeps the rate within its share of it', () => {
    // 250-byte frames 35 ms apart, read to a 60 Hz client's frames (0, 16.7, 33.3 or 50 ms).
    const random = new Random(3);
    const read = () => {
      const phase = random.range(0, 1000 / 60);
      return Math.floor((phase + 35 + random.range(-10, 10)) / (1000 / 60)) * (1000 / 60);
    };
    const control = fed(24, 250, read);
    expect(control.pairBytesPerSecond).toBeGreaterThan(0.85 * (250 / 35) * 1000);
    expect(control.pairBytesPerSecond).toBeLessThan(1.15 * (250 / 35) * 1000);
    expect(control.rateBytesPerSecond).toBeLessThanOrEqual(0.9 * control.pairBytesPerSecond);
    expect(control.pairsLeaning).toBe(true);
    // The rate never climbs past it.
    for (let t = 0; t < 20_000; t += tickMs) {
      control.onAck(t, 600, 250);
      control.update(t, 0);
    }
    expect(control.rateBytesPerSecond).toBeLessThanOrEqual(0.9 * control.pairBytesPerSecond + 1e-9);
    expect(control.stats.pairs).toBe(24);
  });

  it('shows nothing for jitter, however the gaps come out on their own', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const random = new Random(seed);
      const control = new RateController({ maxBytesPerSecond: 80_000 });
      // Two packets each ±60 ms: the second is as likely to come first. Every window of them.
      for (let i = 0; i < 120; i++) {
        control.onPair(random.range(-60, 60) - random.range(-60, 60), 300);
        expect(control.pairBytesPerSecond, `seed ${seed}, pair ${i}`).toBe(Number.POSITIVE_INFINITY);
      }
    }
    // A fast link: both packets read in the same client frame.
    expect(fed(24, 1200, () => 0).pairBytesPerSecond).toBe(Number.POSITIVE_INFINITY);
  });

  it('takes the bottleneck from the pairs that came in order, and lifts its cap when the pairs stop showing it', () => {
    // Two pairs reversed by far among 21 spaced by a slow hop: still shown, at the hop's rate.
    const reversed = fed(23, 250, (i) => (i === 5 || i === 12 ? -1023 : 35));
    expect(reversed.pairBytesPerSecond).toBeCloseTo((250 / 35) * 1000, 6);
    const control = fed(16, 300, () => 60);
    expect(control.pairBytesPerSecond).toBeCloseTo(5000, 6);
    expect(control.rateBytesPerSecond).toBeCloseTo(4500, 6);
    // The link is fast now: gaps of either sign. The cap goes; the rate climbs from where it was.
    for (let i = 0; i < 16; i++) control.onPair(i % 2 === 0 ? -5 : 5, 300);
    expect(control.pairBytesPerSecond).toBe(Number.POSITIVE_INFINITY);
    expect(control.rateBytesPerSecond).toBeCloseTo(4500, 6);
    for (let t = 0; t < 3000; t += tickMs) {
      control.onAck(t, 40, 300);
      control.update(t, 0);
    }
    expect(control.rateBytesPerSecond).toBeGreaterThan(6000);
  });

  it('waits for the pairs before the start-up climb, a while at most', () => {
    const control = new RateController({ maxBytesPerSecond: 80_000 });
    control.pairsStarted(0);
    let t = 0;
    for (; t < 500; t += tickMs) {
      control.onAck(t, 40, 250);
      control.update(t, 0);
    }
    expect(control.rateBytesPerSecond).toBe(8000);
    // No verdict within a second and two round trips: it climbs.
    for (; t < 3000; t += tickMs) {
      control.onAck(t, 40, 250);
      control.update(t, 0);
    }
    expect(control.rateBytesPerSecond).toBeGreaterThan(8000);
    // Without pairs it climbs from the first acknowledgement.
    const plain = new RateController({ maxBytesPerSecond: 80_000 });
    for (let u = 0; u < 500; u += tickMs) {
      plain.onAck(u, 40, 250);
      plain.update(u, 0);
    }
    expect(plain.rateBytesPerSecond).toBeGreaterThan(8000);
  });

  it('names a bad packetPairs setting', () => {
    expect(
      () => new RateController({ maxBytesPerSecond: 1000, packetPairs: 1 as unknown as boolean }),
    ).toThrow(/packetPairs must be true or false, got 1/);
  });
});
