// Tests of PacketChannel: round trips, acks, RTT, loss, drops, keepalive, reliable messages, sequence wrap.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CHANNEL_CONFIG,
  MIN_PACKET_BYTES,
  PACKET_HEADER_BYTES,
  PacketChannel,
  type PacketChannelConfig,
  type PacketHeader,
  PacketType,
  packetChecksum,
  RELIABLE_MESSAGE_BYTES_LIMIT,
  serializePacketHeader,
  writePacketChecksum,
} from '../../src/net/channel.ts';
import { crc32 } from '../../src/net/crc32.ts';
import { RELIABLE_WINDOW, reliableCountBits } from '../../src/net/reliable.ts';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { Random } from '../../src/sim/random.ts';

const PROTOCOL_ID = 0x12345678;

/** Two channels wired to each other through queues the test delivers (or not) by hand. */
class Loopback {
  readonly toB: Uint8Array[] = [];
  readonly toA: Uint8Array[] = [];
  readonly a: PacketChannel;
  readonly b: PacketChannel;

  constructor(config: Partial<PacketChannelConfig> = {}) {
    this.a = new PacketChannel((d) => this.toB.push(d.slice()), { protocolId: PROTOCOL_ID, ...config });
    this.b = new PacketChannel((d) => this.toA.push(d.slice()), { protocolId: PROTOCOL_ID, ...config });
  }

  /** Delivers everything queued both ways at `nowMs`. */
  flush(nowMs: number): void {
    while (this.toB.length > 0) this.b.receive(nowMs, this.toB.shift()!);
    while (this.toA.length > 0) this.a.receive(nowMs, this.toA.shift()!);
  }
}

function readHeader(data: Uint8Array): PacketHeader {
  const h: PacketHeader = { type: 0, checksum: 0, sequence: 0, ack: 0, ackBits: 0 };
  serializePacketHeader(new BitStream(0).beginRead(data), h);
  return h;
}

/**
 * Gives `d` to `link.a`; when a accepts it, checks that every packet of a's the datagram names
 * (its ack and ack bits) among the last 400 sent has been acknowledged by then.
 */
function deliverToA(
  link: Loopback,
  now: number,
  d: Uint8Array,
  sent: number[],
  seen: Map<number, number>,
  seed: number,
): void {
  const before = link.a.stats.packetsReceived;
  link.a.receive(now, d);
  if (link.a.stats.packetsReceived === before) return;
  const h = readHeader(d);
  const recent = new Set(sent.slice(-400));
  for (let i = -1; i < 32; i++) {
    if (i >= 0 && ((h.ackBits >>> i) & 1) === 0) continue;
    const seq = (h.ack - 1 - i + 0x10000) & 0xffff;
    if (recent.has(seq))
      expect(seen.has(seq), `seed ${seed}: packet ${seq} named but not acknowledged`).toBe(true);
  }
}

/**
 * Runs `link` on a 1 ms clock until `untilMs`, both ends sending every 10 ms (right after
 * receiving). a's packets reach b `delayMs` later; each of b's goes to `returnPath`, which
 * delivers it to a at the time it chooses (`deliver`), later or never. `each` runs every ms.
 */
function runDelayed(
  link: Loopback,
  untilMs: number,
  delayMs: number,
  returnPath: (now: number, data: Uint8Array, deliver: (at: number, data: Uint8Array) => void) => void,
  each: (now: number) => void = () => {},
): void {
  const queueB: { at: number; data: Uint8Array }[] = [];
  const queueA: { at: number; data: Uint8Array }[] = [];
  const deliver = (at: number, data: Uint8Array) => {
    queueA.push({ at, data });
    queueA.sort((x, y) => x.at - y.at);
  };
  for (let now = 0; now < untilMs; now++) {
    while (queueB.length > 0 && queueB[0].at <= now) link.b.receive(now, queueB.shift()!.data);
    while (queueA.length > 0 && queueA[0].at <= now) link.a.receive(now, queueA.shift()!.data);
    if (now % 10 === 0) {
      link.a.send(now);
      link.b.send(now);
      for (const d of link.toB.splice(0)) queueB.push({ at: now + delayMs, data: d });
      for (const d of link.toA.splice(0)) returnPath(now, d, deliver);
    }
    each(now);
  }
}

function bytes(length: number, salt: number): Uint8Array {
  const m = new Uint8Array(length);
  for (let i = 0; i < length; i++) m[i] = (salt * 7 + i * 3) & 0xff;
  return m;
}

describe('crc32', () => {
  it('matches the standard check value and chains', () => {
    const text = new TextEncoder().encode('123456789');
    expect(crc32(text)).toBe(0xcbf43926);
    expect(crc32(text, 4, 9, crc32(text, 0, 4))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });
});

describe('packet header', () => {
  it('round-trips any header in PACKET_HEADER_BYTES bytes', () => {
    const u = (bits: number) => fc.integer({ min: 0, max: 2 ** bits - 1 });
    fc.assert(
      fc.property(u(8), u(32), u(16), u(16), u(32), (type, checksum, sequence, ack, ackBits) => {
        const h: PacketHeader = { type, checksum, sequence, ack, ackBits };
        const w = new BitStream(64).beginWrite();
        expect(serializePacketHeader(w, { ...h })).toBe(true);
        expect(w.bytesProcessed).toBe(PACKET_HEADER_BYTES);
        expect(readHeader(w.bytes)).toEqual(h);
      }),
      { seed: 1201, numRuns: 500 },
    );
  });
});

describe('PacketChannel round trip', () => {
  it('delivers header, reliable messages and payload as written (random state, sizes and message sets)', () => {
    const scenario = fc.record({
      warmup: fc.integer({ min: 0, max: 80 }),
      lossEvery: fc.integer({ min: 2, max: 9 }),
      payload: fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 200 }),
      messages: fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 12 }),
    });
    fc.assert(
      fc.property(scenario, ({ warmup, lossEvery, payload, messages }) => {
        const link = new Loopback();
        let now = 0;
        for (let i = 0; i < warmup; i++) {
          now += 10;
          link.a.send(now);
          link.b.send(now);
          if (i % lossEvery === 0) link.toB.length = 0;
          link.flush(now);
        }
        for (let i = 0; i < messages.length; i++)
          expect(link.a.sendReliable(bytes(messages[i], i))).toBe(true);
        const writePayload = (s: BitStream): void => {
          s.int(payload.length, 0, 200);
          for (const v of payload) s.uint(v, 16);
        };
        const sequence = link.a.send(now, writePayload);
        const packet = link.toB[0];
        expect(packet.length).toBeLessThanOrEqual(MAX_PACKET_BYTES);
        const h = readHeader(packet);
        expect(h.type).toBe(PacketType.Data);
        expect(h.sequence).toBe(sequence);
        expect(h.checksum).toBe(packetChecksum(PROTOCOL_ID, packet));
        const bNewest = link.a.remoteSequenceReceived;
        expect(h.ack).toBe(bNewest === -1 ? 0xffff : bNewest);

        const s = link.b.receive(now, link.toB.shift()!);
        expect(s).not.toBeNull();
        const count = s!.int(0, 0, 200);
        const read: number[] = [];
        for (let i = 0; i < count; i++) read.push(s!.uint(0, 16));
        expect(s!.ok).toBe(true);
        expect(read).toEqual(payload);
        expect(s!.bitsRemaining).toBeLessThan(8);
        const got: number[][] = [];
        let carried = 0;
        for (let m = link.b.receiveReliable(); m !== null; m = link.b.receiveReliable())
          got.push(Array.from(m));
        carried = got.length;
        // What did not fit the reliable budget follows in the next packets.
        for (let i = 0; carried < messages.length && i < 10; i++) {
          now += 200;
          link.b.send(now);
          link.flush(now);
          link.a.send(now);
          link.flush(now);
          for (let m = link.b.receiveReliable(); m !== null; m = link.b.receiveReliable())
            got.push(Array.from(m));
          carried = got.length;
        }
        expect(got).toEqual(messages.map((length, i) => Array.from(bytes(length, i))));
        expect(link.b.stats.reliableDelivered).toBe(messages.length);
      }),
      { seed: 2202, numRuns: 150 },
    );
  });

  it('counts packets and bytes, headers included', () => {
    const link = new Loopback();
    let sentBytes = 0;
    for (let i = 0; i < 5; i++) {
      link.a.send(i, (s) => s.uint(i, 32));
      sentBytes += link.toB[link.toB.length - 1].length;
    }
    link.flush(10);
    expect(link.a.stats.packetsSent).toBe(5);
    expect(link.a.stats.bytesSent).toBe(sentBytes);
    expect(sentBytes).toBe(5 * (MIN_PACKET_BYTES + 4));
    expect(link.b.stats.packetsReceived).toBe(5);
    expect(link.b.stats.bytesReceived).toBe(sentBytes);
  });
});

describe('PacketChannel send views', () => {
  it('hands the transport one view per packet length, and lets go of one not used for thousands of packets', () => {
    const seen: Uint8Array[] = [];
    const channel = new PacketChannel((data) => seen.push(data), { protocolId: PROTOCOL_ID });
    const send = (words: number): Uint8Array => {
      channel.send(0, (s) => {
        for (let i = 0; i < words; i++) s.uint(i, 32);
      });
      return seen[seen.length - 1];
    };
    const rare = send(7);
    const common = send(1);
    expect(rare.length).toBe(common.length + 24);
    // A length in use keeps its view for as long as it is used.
    for (let i = 0; i < 12_000; i++) expect(send(1)).toBe(common);
    // One sent once, long ago, holds no memory: its view is made again.
    const again = send(7);
    expect(again).not.toBe(rare);
    expect(again.length).toBe(rare.length);
    // Recently used: kept.
    for (let i = 0; i < 1000; i++) send(1);
    expect(send(7)).toBe(again);
  });
});

describe('PacketChannel acks', () => {
  it('fires onAck once per packet, in sequence order, with acks repeated in later packets', () => {
    const link = new Loopback();
    const acked: number[] = [];
    link.a.onAck = (seq) => acked.push(seq);
    for (let i = 0; i < 10; i++) link.a.send(i);
    link.toB.splice(2, 1);
    link.toB.splice(5, 1);
    link.flush(10);
    link.b.send(20);
    link.b.send(21);
    link.toA.shift();
    link.flush(30);
    expect(acked).toEqual([0, 1, 3, 4, 5, 7, 8, 9]);
    link.b.send(40);
    link.flush(50);
    expect(acked).toHaveLength(8);
    expect(link.a.stats.packetsAcked).toBe(8);
    expect(link.a.stats.rttMs).toBeGreaterThan(0);
  });

  it('every packet an accepted packet acknowledges is acknowledged once, over loss, duplicates and reordering', () => {
    // The channel skips ack bits an earlier packet already brought: none that was not may be skipped.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), (seed) => {
        const rng = new Random(seed);
        const link = new Loopback();
        const seen = new Map<number, number>();
        link.a.onAck = (seq) => seen.set(seq, (seen.get(seq) ?? 0) + 1);
        const sent: number[] = [];
        let held: Uint8Array[] = [];
        let heldForB: Uint8Array[] = [];
        for (let now = 0; now < 600; now += 5) {
          sent.push(link.a.send(now));
          // a's packets: lost, held back (so b's later acks fill holes its earlier ones left), or on time.
          while (link.toB.length > 0) {
            const d = link.toB.shift() as Uint8Array;
            if (rng.chance(0.15)) continue;
            if (rng.chance(0.2)) heldForB.push(d);
            else link.b.receive(now, d);
          }
          if (rng.chance(0.2) && heldForB.length > 0) {
            for (const d of heldForB) link.b.receive(now, d);
            heldForB = [];
          }
          if (rng.chance(0.7)) link.b.send(now);
          // b's packets: lost, held back (delivered later, overtaken), duplicated, or on time.
          const out = link.toA.splice(0);
          for (const d of out) {
            if (rng.chance(0.25)) continue;
            if (rng.chance(0.2)) held.push(d);
            else {
              deliverToA(link, now, d, sent, seen, seed);
              if (rng.chance(0.1)) deliverToA(link, now, d, sent, seen, seed);
            }
          }
          if (rng.chance(0.15) && held.length > 0) {
            for (const d of held) deliverToA(link, now, d, sent, seen, seed);
            held = [];
          }
        }
        for (const [seq, n] of seen) expect(n, `seed ${seed}: packet ${seq} acknowledged ${n} times`).toBe(1);
      }),
      { seed: 0xac4, numRuns: 60 },
    );
  });

  it('samples RTT from first acks and converges on a fixed-delay link', () => {
    const link = new Loopback();
    const delayMs = 60;
    runDelayed(link, 5000, delayMs, (now, d, deliver) => deliver(now + delayMs, d));
    // Both sides send every 10 ms, right after receiving, and the delay is a multiple of 10 ms:
    // every ack leaves at once, so every sample is exactly 2 x 60 ms.
    expect(link.a.stats.rttMs).toBeCloseTo(2 * delayMs, 5);
    expect(link.a.stats.rttVarianceMs).toBeLessThan(1);
    expect(link.a.stats.outgoingLoss).toBe(0);
    expect(link.b.stats.incomingLoss).toBe(0);
  });

  it('a loss burst on the return path or a packet overtaken is no round-trip sample; the ack delay counts them', () => {
    // A fixed 60 ms each way; every 500 ms, the return path (b to a) loses 200 ms of packets, and
    // every 700 ms one packet from b is held 45 ms more (overtaken by the next ones). The
    // acknowledgements those packets carried arrive late in later packets' ack bits.
    const link = new Loopback();
    const delayMs = 60;
    let rttMax = 0;
    let rttVarianceMax = 0;
    let ackDelayMax = 0;
    let ackDelayVarianceMax = 0;
    runDelayed(
      link,
      10_000,
      delayMs,
      (now, d, deliver) => {
        if (now % 500 < 300) deliver(now + delayMs + (now % 700 === 100 ? 45 : 0), d);
      },
      (now) => {
        if (now < 1000) return;
        const st = link.a.stats;
        rttMax = Math.max(rttMax, st.rttMs);
        rttVarianceMax = Math.max(rttVarianceMax, st.rttVarianceMs);
        ackDelayMax = Math.max(ackDelayMax, st.ackDelayMs);
        ackDelayVarianceMax = Math.max(ackDelayVarianceMax, st.ackDelayVarianceMs);
      },
    );
    // Every in-order packet's acknowledgements left at once: the round trip stays 2 x 60 ms.
    expect(rttMax).toBeCloseTo(2 * delayMs, 5);
    expect(rttVarianceMax).toBeLessThan(1);
    // Taking every first acknowledgement, as the ack delay does, reads the bursts and the held
    // packets as a longer and more variable trip (the packets a's loss count then restores).
    expect(ackDelayMax).toBeGreaterThan(2 * delayMs + 20);
    expect(ackDelayVarianceMax).toBeGreaterThan(10);
    expect(link.a.stats.outgoingLoss).toBe(0);
  });

  it('still measures the round trip where no packet follows its predecessor (every pair swapped)', () => {
    // b's packets arrive in pairs, the second of each pair first: no packet from b ever comes
    // right after its predecessor. The return path's delay grows from 60 to 140 ms at 3 s: a
    // still follows it, taking a sample every FORCED_SAMPLE_ACKS acknowledgements (without them
    // the round trip would stay at its first sample, about 120 ms).
    const link = new Loopback();
    const delayMs = 60;
    let held: Uint8Array | null = null;
    runDelayed(link, 10_000, delayMs, (now, d, deliver) => {
      const back = now < 3000 ? 60 : 140;
      if (held === null) held = d;
      else {
        deliver(now + back, d);
        deliver(now + back, held);
        held = null;
      }
    });
    // A sample every 64 acknowledgements (about 0.6 s here), each moving the estimate 1/8 of the
    // way: 7 s after the change it has come most of the way from 120 to 200-210 ms (an
    // acknowledgement waits up to one more packet of b's, 10 ms, for its pair).
    expect(link.a.stats.rttMs).toBeGreaterThan(170);
    expect(link.a.stats.rttMs).toBeLessThanOrEqual(delayMs + 140 + 10);
  });

  it('measures loss both ways, and a late packet fills its hole', () => {
    const link = new Loopback({ lossWindowPackets: 256 });
    let now = 0;
    let late: Uint8Array | undefined;
    for (let i = 0; i < 2000; i++) {
      now += 10;
      link.a.send(now);
      link.b.send(now);
      if (i % 4 === 0) link.toB.length = 0;
      const held = i % 5 === 0 ? link.toA.shift() : undefined;
      link.flush(now);
      if (late !== undefined) expect(link.a.receive(now, late)).not.toBeNull();
      late = held;
    }
    expect(link.a.stats.outgoingLoss).toBeCloseTo(0.25, 5);
    expect(link.b.stats.incomingLoss).toBeCloseTo(0.25, 5);
    expect(link.a.stats.incomingLoss).toBe(0);
    expect(link.b.stats.outgoingLoss).toBe(0);
  });

  it('keeps acking correctly across the 65535 -> 0 sequence wrap (72,000 packets each way, 10% loss)', () => {
    const seed = 6502;
    const random = new Random(seed);
    const link = new Loopback();
    const total = 72_000;
    const delivered = new Uint8Array(total);
    const acked = new Uint8Array(total);
    let sent = 0;
    let errors = 0;
    link.a.onAck = (seq) => {
      const index = sent - 1 - ((link.a.sequence - 1 - seq) & 0xffff);
      if (index < 0 || acked[index] || !delivered[index]) errors++;
      else acked[index] = 1;
    };
    for (let now = 0; sent < total; now += 10) {
      const seq = link.a.send(now);
      expect(seq, `seed ${seed}`).toBe(sent & 0xffff);
      sent++;
      link.b.send(now);
      if (random.chance(0.1)) link.toB.length = 0;
      else delivered[sent - 1] = 1;
      if (random.chance(0.1)) link.toA.length = 0;
      link.flush(now);
    }
    expect(errors, `seed ${seed}`).toBe(0);
    // Every delivered packet but the newest few has been acknowledged, exactly once.
    let missing = 0;
    for (let i = 0; i < total - 40; i++) if (delivered[i] !== acked[i]) missing++;
    expect(missing, `seed ${seed}`).toBe(0);
    expect(link.b.stats.dropped.stale + link.b.stats.dropped['bad ack'], `seed ${seed}`).toBe(0);
    expect(link.a.stats.outgoingLoss, `seed ${seed}`).toBeGreaterThan(0.05);
    expect(link.a.stats.outgoingLoss, `seed ${seed}`).toBeLessThan(0.15);
  });
});

describe('PacketChannel drops', () => {
  it('drops and counts truncated, oversized, garbled, foreign, duplicate, stale, bad-type and bad-ack packets', () => {
    const link = new Loopback();
    for (let i = 0; i < 40; i++) link.a.send(i);
    const packets = link.toB.splice(0);
    const b = link.b;
    expect(b.receive(50, packets[39])).not.toBeNull();
    expect(b.receive(50, packets[39])).toBeNull();
    expect(b.receive(50, packets[7])).not.toBeNull(); // 32 behind: the oldest the window holds
    expect(b.receive(50, packets[7])).toBeNull();
    expect(b.receive(50, packets[6])).toBeNull();
    expect(b.stats.dropped.duplicate).toBe(2);
    expect(b.stats.dropped.stale).toBe(1);
    expect(b.receive(50, packets[8].subarray(0, MIN_PACKET_BYTES - 1))).toBeNull();
    expect(b.stats.dropped.truncated).toBe(1);
    expect(b.receive(50, new Uint8Array(MAX_PACKET_BYTES + 1))).toBeNull();
    expect(b.stats.dropped.oversized).toBe(1);
    const garbled = packets[8].slice();
    garbled[garbled.length - 1] ^= 0x10;
    expect(b.receive(50, garbled)).toBeNull();
    const foreign = new PacketChannel(
      (d) => {
        expect(b.receive(50, d)).toBeNull();
      },
      { protocolId: PROTOCOL_ID + 1 },
    );
    foreign.send(0);
    expect(b.stats.dropped.checksum).toBe(2);
    const lifecycle = packets[9].slice();
    lifecycle[0] = PacketType.Challenge;
    writePacketChecksum(PROTOCOL_ID, lifecycle);
    expect(b.receive(50, lifecycle)).toBeNull();
    expect(b.stats.dropped['bad type']).toBe(1);
    const forgedAck = packets[10].slice();
    forgedAck[7] = 5; // acks sequence 5, which b never sent
    forgedAck[8] = 0;
    writePacketChecksum(PROTOCOL_ID, forgedAck);
    expect(b.receive(50, forgedAck)).toBeNull();
    expect(b.stats.dropped['bad ack']).toBe(1);
    expect(b.stats.packetsReceived).toBe(2);
    expect(b.receive(50, packets[10])).not.toBeNull();
  });

  it('drops a packet too far ahead without moving any window; takes a jump within maxSequenceJump', () => {
    const link = new Loopback();
    for (let i = 0; i < 4; i++) link.a.send(i);
    const [first, second, third, fourth] = link.toB.splice(0);
    expect(link.b.receive(5, first)).not.toBeNull();
    const farAhead = third.slice();
    farAhead[5] = 0x30;
    farAhead[6] = 0x75; // sequence 30000: a forged packet far ahead, with a valid checksum
    writePacketChecksum(PROTOCOL_ID, farAhead);
    expect(link.b.receive(5, farAhead)).toBeNull();
    expect(link.b.stats.dropped['too far ahead']).toBe(1);
    expect(link.b.remoteSequenceReceived).toBe(0);
    // The real packets after it are taken as if it never came.
    expect(link.b.receive(6, second)).not.toBeNull();
    expect(link.b.remoteSequenceReceived).toBe(1);
    third[5] = 0x00;
    third[6] = 0x04; // sequence 1024: 1023 ahead of 1, within maxSequenceJump (1024)
    writePacketChecksum(PROTOCOL_ID, third);
    expect(link.b.receive(7, third)).not.toBeNull();
    expect(link.b.remoteSequenceReceived).toBe(0x400);
    fourth[5] = 0x02;
    fourth[6] = 0x08; // sequence 0x802: 1026 ahead of 1024
    writePacketChecksum(PROTOCOL_ID, fourth);
    expect(link.b.receive(8, fourth)).toBeNull();
    expect(link.b.stats.dropped['too far ahead']).toBe(2);
    expect(link.b.stats.packetsReceived).toBe(3);
  });

  it('sends the packet without a payload that overflows it, and counts it', () => {
    const link = new Loopback();
    link.a.sendReliable(bytes(50, 1));
    let room = 0;
    link.a.send(0, (s) => {
      room = s.bitsRemaining;
      for (let i = 0; i < MAX_PACKET_BYTES; i++) s.uint(0xff, 8);
    });
    // MIN_PACKET_BYTES holds the header and one byte for the reliable count, which for one
    // message takes 3 bits (exponential-Golomb).
    expect(room).toBe((MAX_PACKET_BYTES - MIN_PACKET_BYTES) * 8 + 8 - reliableCountBits(1) - (16 + 8 + 400));
    expect(link.a.stats.dropped['payload overflow']).toBe(1);
    const s = link.b.receive(0, link.toB.shift()!);
    expect(s).not.toBeNull();
    expect(s!.bitsRemaining).toBeLessThan(8);
    expect(Array.from(link.b.receiveReliable()!)).toEqual(Array.from(bytes(50, 1)));
  });
});

describe('PacketChannel keepalive', () => {
  it('sends an empty packet only when nothing was sent for keepaliveIntervalMs', () => {
    const link = new Loopback({ keepaliveIntervalMs: 100 });
    expect(link.a.update(0)).toBe(true);
    expect(link.a.update(99)).toBe(false);
    link.a.send(150);
    expect(link.a.update(200)).toBe(false);
    expect(link.a.update(250)).toBe(true);
    expect(link.toB).toHaveLength(3);
    expect(link.toB[2].length).toBe(MIN_PACKET_BYTES);
    link.flush(260);
    expect(link.b.lastReceivedMs).toBe(260);
    expect(link.b.update(260)).toBe(true);
    link.flush(270);
    expect(link.a.stats.packetsAcked).toBe(3);
  });
});

describe('PacketChannel reliable messages', () => {
  it('checks message lengths and the send window', () => {
    const link = new Loopback({ maxReliableMessageBytes: 100 });
    expect(() => link.a.sendReliable(new Uint8Array(0))).toThrow(/maxReliableMessageBytes = 100/);
    expect(() => link.a.sendReliable(new Uint8Array(101))).toThrow(RangeError);
    for (let i = 0; i < RELIABLE_WINDOW; i++) expect(link.a.sendReliable(bytes(1, i))).toBe(true);
    expect(link.a.sendReliable(bytes(1, 0))).toBe(false);
    expect(link.a.reliablePending).toBe(RELIABLE_WINDOW);
    expect(link.a.stats.reliableQueued).toBe(RELIABLE_WINDOW);
  });

  it('acknowledged after its message ids were written over by later packets, a packet retires nothing, and every message still arrives once', () => {
    const link = new Loopback({ reliableBudgetBytes: 1000 });
    for (let i = 0; i < RELIABLE_WINDOW; i++) expect(link.a.sendReliable(bytes(1, i))).toBe(true);
    // b hears a's first packet (the first 64 messages); its acknowledgement waits while a sends
    // 200 packets that are all lost, each carrying the 64 messages longest unsent again: 12,800
    // message ids recorded after the first packet's.
    let now = 0;
    link.a.send(now);
    expect(link.b.receive(now, link.toB.shift()!)).not.toBeNull();
    let first = 0;
    for (let m = link.b.receiveReliable(); m !== null; m = link.b.receiveReliable()) first++;
    expect(first).toBe(64);
    for (let i = 0; i < 200; i++) {
      now += 1000;
      link.a.send(now);
    }
    link.toB.length = 0;
    // The acknowledgement of the first packet comes now: its ids are gone from the record, so it
    // retires nothing (reading the ring where they were would retire whatever ids lie there now).
    link.b.send(now);
    expect(link.a.receive(now, link.toA.shift()!)).not.toBeNull();
    expect(link.a.reliablePending).toBe(RELIABLE_WINDOW);
    // The rest arrive in order, none twice, and every one is retired.
    const got: number[][] = [];
    for (let i = 0; i < 40 && link.a.reliablePending > 0; i++) {
      now += 1000;
      link.a.send(now);
      link.b.send(now);
      link.flush(now);
      for (let m = link.b.receiveReliable(); m !== null; m = link.b.receiveReliable())
        got.push(Array.from(m));
    }
    expect(got).toEqual(Array.from({ length: RELIABLE_WINDOW - 64 }, (_, i) => Array.from(bytes(1, i + 64))));
    expect(link.a.reliablePending).toBe(0);
    expect(link.b.stats.reliableDelivered).toBe(RELIABLE_WINDOW);
  });

  it('sends a maximum-size message with a payload in one packet', () => {
    const link = new Loopback();
    const big = bytes(DEFAULT_CHANNEL_CONFIG.maxReliableMessageBytes, 3);
    link.a.sendReliable(big);
    link.a.sendReliable(bytes(10, 4));
    link.a.send(0, (s) => s.uint(0xbeef, 16));
    expect(link.toB[0].length).toBeLessThanOrEqual(MAX_PACKET_BYTES);
    const s = link.b.receive(0, link.toB.shift()!);
    expect(s!.uint(0, 16)).toBe(0xbeef);
    expect(Array.from(link.b.receiveReliable()!)).toEqual(Array.from(big));
    expect(link.b.receiveReliable()).toBeNull();
    link.a.send(1);
    link.b.receive(1, link.toB.shift()!);
    expect(Array.from(link.b.receiveReliable()!)).toEqual(Array.from(bytes(10, 4)));
  });

  it('does not resend a message before max(1.1 x RTT, reliableResendMinMs)', () => {
    const link = new Loopback({ reliableResendMinMs: 30 });
    const copiesAt = (now: number): number => {
      link.a.send(now);
      expect(link.b.receive(now, link.toB.pop()!)).not.toBeNull();
      while (link.b.receiveReliable() !== null);
      return link.b.stats.reliableDuplicates + link.b.stats.reliableDelivered;
    };
    link.a.sendReliable(bytes(20, 1));
    expect(copiesAt(0)).toBe(1);
    expect(copiesAt(50)).toBe(1); // before any RTT sample the delay is 1.1 x 100 ms
    expect(copiesAt(111)).toBe(2);

    // An RTT of 10 ms: the 30 ms floor applies.
    const fast = new Loopback({ reliableResendMinMs: 30 });
    fast.a.send(1000);
    fast.flush(1005);
    fast.b.send(1005);
    fast.flush(1010);
    expect(fast.a.stats.rttMs).toBe(10);
    fast.a.sendReliable(bytes(20, 2));
    let copies = 0;
    for (const now of [1020, 1049, 1050, 1079, 1080]) {
      fast.a.send(now);
      fast.b.receive(now, fast.toB.pop()!);
      copies += fast.b.receiveReliable() !== null ? 1 : 0;
    }
    expect(copies + fast.b.stats.reliableDuplicates).toBe(3);
    expect(fast.a.stats.reliableSent).toBe(3);
  });

  it('refuses (without acking) a packet whose message lies beyond an undrained receive window', () => {
    const link = new Loopback();
    let now = 0;
    for (let i = 0; i < RELIABLE_WINDOW + 10; i++) {
      while (!link.a.sendReliable(bytes(4, i))) {
        now += 50;
        link.a.send(now);
        link.flush(now);
        link.b.send(now);
        link.flush(now);
      }
    }
    for (let i = 0; i < 20; i++) {
      now += 200;
      link.a.send(now);
      link.b.send(now);
      link.flush(now);
    }
    expect(link.b.stats.dropped['reliable window']).toBeGreaterThan(0);
    const got: number[] = [];
    for (let i = 0; i < 40 && got.length < RELIABLE_WINDOW + 10; i++) {
      for (let m = link.b.receiveReliable(); m !== null; m = link.b.receiveReliable()) got.push(m[0]);
      now += 200;
      link.a.send(now);
      link.b.send(now);
      link.flush(now);
    }
    expect(got).toEqual(Array.from({ length: RELIABLE_WINDOW + 10 }, (_, i) => bytes(4, i)[0]));
  });
});

describe('PacketChannel config', () => {
  it('names the offending field', () => {
    const make = (c: Partial<PacketChannelConfig>) => () =>
      new PacketChannel(() => {}, { protocolId: 1, ...c });
    expect(make({ protocolId: -1 })).toThrow(/protocolId/);
    expect(make({ protocolId: 2 ** 32 })).toThrow(/protocolId/);
    expect(make({ keepaliveIntervalMs: 0 })).toThrow(/keepaliveIntervalMs/);
    expect(make({ maxReliableMessageBytes: RELIABLE_MESSAGE_BYTES_LIMIT + 1 })).toThrow(
      /maxReliableMessageBytes/,
    );
    expect(make({ reliableBudgetBytes: 0 })).toThrow(/reliableBudgetBytes/);
    expect(make({ reliableResendMinMs: Number.NaN })).toThrow(/reliableResendMinMs/);
    expect(make({ lossWindowPackets: 100 })).toThrow(/lossWindowPackets/);
    expect(make({ maxReliableMessageBytes: RELIABLE_MESSAGE_BYTES_LIMIT })).not.toThrow();
  });
});
