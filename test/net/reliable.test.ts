// Tests of the reliable message section codec, the sender's resend window and the receiver's reorder window.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  RELIABLE_MAX_PER_PACKET,
  RELIABLE_WINDOW,
  ReliableReceiver,
  ReliableSection,
  ReliableSender,
  reliableCountBits,
  reliableMessageBits,
  serializeReliableSection,
} from '../../src/net/reliable.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { Random } from '../../src/sim/random.ts';

const MAX_MESSAGE = 1024;

function message(id: number, length: number): Uint8Array {
  const m = new Uint8Array(length);
  for (let i = 0; i < length; i++) m[i] = (id * 13 + i) & 0xff;
  return m;
}

/** Writes `section` into a fresh stream and reads it back into a new section. */
function roundTrip(
  section: ReliableSection,
  maxMessageBytes = MAX_MESSAGE,
): { read: ReliableSection; bits: number } {
  const w = new BitStream(1500).beginWrite();
  expect(serializeReliableSection(w, section, maxMessageBytes)).toBe(true);
  const bits = w.bitsProcessed;
  const read = new ReliableSection();
  const r = new BitStream(0).beginRead(w.bytes);
  expect(serializeReliableSection(r, read, maxMessageBytes)).toBe(true);
  expect(r.bitsProcessed).toBe(bits);
  return { read, bits };
}

describe('reliable section codec', () => {
  it('round-trips random message sets and measures what it writes', () => {
    const messages = fc.array(
      fc.record({ id: fc.integer({ min: 0, max: 0xffff }), length: fc.integer({ min: 1, max: 40 }) }),
      {
        maxLength: RELIABLE_MAX_PER_PACKET,
      },
    );
    fc.assert(
      fc.property(messages, fc.boolean(), (list, consecutive) => {
        const section = new ReliableSection();
        let id = list.length > 0 ? list[0].id : 0;
        let expectedBits = reliableCountBits(list.length);
        let previous = -1;
        for (const m of list) {
          const thisId = consecutive ? id : m.id;
          expect(section.add(thisId, message(thisId, m.length), m.length)).toBe(true);
          expectedBits += reliableMessageBits(
            m.length,
            previous < 0,
            previous >= 0 && thisId === ((previous + 1) & 0xffff),
          );
          previous = thisId;
          id = (id + 1) & 0xffff;
        }
        const measure = new BitStream().beginMeasure();
        serializeReliableSection(measure, section, MAX_MESSAGE);
        const { read, bits } = roundTrip(section);
        expect(bits).toBe(expectedBits);
        expect(measure.bitsProcessed).toBe(expectedBits);
        expect(read.count).toBe(section.count);
        for (let i = 0; i < section.count; i++) {
          expect(read.ids[i]).toBe(section.ids[i]);
          expect(read.lengths[i]).toBe(section.lengths[i]);
          const a = read.bytes.subarray(read.offsets[i], read.offsets[i] + read.lengths[i]);
          expect(Array.from(a)).toEqual(Array.from(message(section.ids[i], section.lengths[i])));
        }
      }),
      { seed: 4101, numRuns: 300 },
    );
  });

  it('an empty section (most packets) costs 1 bit; counts cost their exponential-Golomb length', () => {
    const empty = roundTrip(new ReliableSection());
    expect(empty.bits).toBe(1);
    expect(empty.read.count).toBe(0);
    expect([0, 1, 2, 3, 6, 7, 64].map(reliableCountBits)).toEqual([1, 3, 3, 5, 5, 7, 13]);
  });

  it('carries a consecutive id in one bit and a wrapped one too (65535 -> 0)', () => {
    const section = new ReliableSection();
    section.add(0xfffe, message(1, 3), 3);
    section.add(0xffff, message(2, 3), 3);
    section.add(0, message(3, 3), 3);
    section.add(7, message(4, 3), 3);
    const { read, bits } = roundTrip(section);
    expect(Array.from(read.ids.subarray(0, 4))).toEqual([0xfffe, 0xffff, 0, 7]);
    // The count 4 costs 5 bits (exponential-Golomb: 00 1 01).
    expect(bits).toBe(5 + 16 + 1 + 1 + 17 + 4 * (8 + 24));
  });

  it('fails, without throwing, on a bad count, an empty or oversized message, or a short buffer', () => {
    const bad = (build: (s: BitStream) => void, maxMessageBytes = MAX_MESSAGE): string => {
      const w = new BitStream(1500).beginWrite();
      build(w);
      const r = new BitStream(0).beginRead(w.bytes);
      expect(serializeReliableSection(r, new ReliableSection(), maxMessageBytes)).toBe(false);
      return r.error;
    };
    const count = (s: BitStream, n: number): void => {
      // n as an order-0 exponential-Golomb code, written by hand so that n may exceed the limit.
      const v = n + 1;
      const len = 32 - Math.clz32(v);
      s.uint(2 ** (len - 1), len);
      if (len > 1) s.uint(v - 2 ** (len - 1), len - 1);
    };
    expect(bad((s) => count(s, RELIABLE_MAX_PER_PACKET + 1))).toBe('expGolomb out of range');
    // More zeros than any count up to the limit has.
    expect(bad((s) => s.uint(0, 12))).toBe('malformed');
    expect(
      bad((s) => {
        count(s, 1);
        s.uint(5, 16);
        s.varuint(0);
      }),
    ).toBe('empty reliable message');
    expect(
      bad((s) => {
        count(s, 1);
        s.uint(5, 16);
        s.varuint(101);
      }, 100),
    ).toBe('varuint out of range');
    expect(
      bad((s) => {
        count(s, 1);
        s.uint(5, 16);
        s.varuint(50);
        for (let i = 0; i < 20; i++) s.uint(i, 8);
      }),
    ).toBe('read past end');
  });

  it('refuses to add past the per-packet limits', () => {
    const section = new ReliableSection();
    for (let i = 0; i < RELIABLE_MAX_PER_PACKET; i++) expect(section.add(i, message(i, 1), 1)).toBe(true);
    expect(section.add(99, message(99, 1), 1)).toBe(false);
    section.clear();
    expect(section.add(0, message(0, 1200), 1200)).toBe(true);
    expect(section.add(1, message(1, 1), 1)).toBe(false);
    expect(section.count).toBe(1);
  });
});

describe('ReliableSender', () => {
  it('sends each message once per resend delay, oldest first, until its packet is acknowledged', () => {
    const sender = new ReliableSender();
    const section = new ReliableSection();
    for (let i = 0; i < 3; i++) expect(sender.queue(message(i, 10))).toBe(true);
    expect(sender.pending).toBe(3);
    sender.fill(section, 0, 100, 8000, 9000);
    expect(Array.from(section.ids.subarray(0, section.count))).toEqual([0, 1, 2]);
    const firstPacket = section.ids.slice(0, section.count);
    sender.fill(section, 50, 100, 8000, 9000);
    expect(section.count).toBe(0);
    sender.acknowledge(firstPacket.subarray(1, 2), 1);
    expect(sender.pending).toBe(3);
    sender.fill(section, 100, 100, 8000, 9000);
    expect(Array.from(section.ids.subarray(0, section.count))).toEqual([0, 2]);
    sender.acknowledge(firstPacket, 1);
    expect(sender.pending).toBe(1);
    sender.acknowledge(section.ids, section.count);
    expect(sender.pending).toBe(0);
    expect(sender.sent).toBe(5);
  });

  it('keeps each packet within the budget, except a first message that is larger than it', () => {
    const sender = new ReliableSender();
    const section = new ReliableSection();
    sender.queue(message(0, 1000));
    for (let i = 1; i < 10; i++) sender.queue(message(i, 100));
    const budget = 600 * 8;
    const max = 1187 * 8;
    const bits = sender.fill(section, 0, 100, budget, max);
    expect(section.count).toBe(1);
    expect(bits).toBe(reliableCountBits(1) + reliableMessageBits(1000, true, false));
    const next = sender.fill(section, 0, 100, budget, max);
    expect(section.count).toBe(5);
    expect(next).toBeLessThanOrEqual(budget);
    const w = new BitStream(1500).beginWrite();
    serializeReliableSection(w, section, MAX_MESSAGE);
    expect(w.bitsProcessed).toBe(next);
  });

  it('skips a message that does not fit and takes smaller ones after it', () => {
    const sender = new ReliableSender();
    const section = new ReliableSection();
    sender.queue(message(0, 300));
    sender.queue(message(1, 400));
    sender.queue(message(2, 100));
    sender.fill(section, 0, 100, 600 * 8, 1187 * 8);
    expect(Array.from(section.ids.subarray(0, section.count))).toEqual([0, 2]);
  });

  it('accepts RELIABLE_WINDOW unacknowledged messages and refuses the next', () => {
    const sender = new ReliableSender();
    for (let i = 0; i < RELIABLE_WINDOW; i++) expect(sender.queue(message(i, 1))).toBe(true);
    expect(sender.queue(message(0, 1))).toBe(false);
    const ids = Uint16Array.of(0);
    sender.acknowledge(ids, 1);
    expect(sender.queue(message(0, 1))).toBe(true);
    expect(sender.queued).toBe(RELIABLE_WINDOW + 1);
  });
});

describe('ReliableReceiver', () => {
  it('delivers in order, once, messages that arrive out of order and duplicated', () => {
    const receiver = new ReliableReceiver();
    const section = new ReliableSection();
    const deliver = (...ids: number[]): void => {
      section.clear();
      for (const id of ids) section.add(id, message(id, 5), 5);
      expect(receiver.fits(section)).toBe(true);
      receiver.accept(section);
    };
    deliver(2, 1);
    expect(receiver.next()).toBeNull();
    deliver(1, 0);
    expect(receiver.duplicates).toBe(1);
    for (let id = 0; id < 3; id++) expect(Array.from(receiver.next()!)).toEqual(Array.from(message(id, 5)));
    expect(receiver.next()).toBeNull();
    deliver(0, 2);
    expect(receiver.duplicates).toBe(3);
    expect(receiver.next()).toBeNull();
    expect(receiver.delivered).toBe(3);
  });

  it('does not fit a message RELIABLE_WINDOW or more ahead of the next to deliver', () => {
    const receiver = new ReliableReceiver();
    const section = new ReliableSection();
    section.add(RELIABLE_WINDOW - 1, message(0, 1), 1);
    expect(receiver.fits(section)).toBe(true);
    section.add(RELIABLE_WINDOW, message(0, 1), 1);
    expect(receiver.fits(section)).toBe(false);
  });

  it('streams 70,000 messages across the 16-bit id wrap over a lossy, reordering link', () => {
    const seed = 9120;
    const random = new Random(seed);
    const sender = new ReliableSender();
    const receiver = new ReliableReceiver();
    const section = new ReliableSection();
    const total = 70_000;
    const inFlight: { ids: Uint16Array; count: number; section: ReliableSection; arriveMs: number }[] = [];
    let queued = 0;
    let expected = 0;
    for (let now = 0; expected < total; now += 10) {
      while (queued < total && sender.queue(message(queued, 1 + (queued % 50)))) queued++;
      sender.fill(section, now, 60, 600 * 8, 1187 * 8);
      if (section.count > 0 && random.chance(0.8)) {
        const copy = new ReliableSection();
        for (let i = 0; i < section.count; i++) {
          copy.add(section.ids[i], section.bytes.subarray(section.offsets[i]), section.lengths[i]);
        }
        inFlight.push({
          ids: copy.ids,
          count: copy.count,
          section: copy,
          arriveMs: now + random.int(20, 40),
        });
      }
      for (let i = 0; i < inFlight.length; i++) {
        const p = inFlight[i];
        if (p.arriveMs > now) continue;
        inFlight.splice(i--, 1);
        expect(receiver.fits(p.section), `seed ${seed}`).toBe(true);
        receiver.accept(p.section);
        if (random.chance(0.8)) sender.acknowledge(p.ids, p.count);
      }
      for (let m = receiver.next(); m !== null; m = receiver.next()) {
        expect(m.length, `seed ${seed}: message ${expected}`).toBe(1 + (expected % 50));
        expect(m[0], `seed ${seed}: message ${expected}`).toBe((expected * 13) & 0xff);
        expected++;
      }
    }
    expect(receiver.delivered, `seed ${seed}`).toBe(total);
  });
});
