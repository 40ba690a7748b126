// Fuzzes PacketChannel.receive with mutated, replayed and random datagrams, checksum kept or re-computed.

import { describe, expect, it } from 'vitest';
import {
  DROP_REASONS,
  type DropReason,
  PACKET_HEADER_BYTES,
  PacketChannel,
  writePacketChecksum,
} from '../../src/net/channel.ts';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import type { BitStream } from '../../src/protocol/bitstream.ts';
import { Random } from '../../src/sim/random.ts';

const PROTOCOL_ID = 0x0badf00d;
const SEED = Number(process.env.BACKSTEP_SEED ?? 77031);
const PACKETS = 100_000;

/** A sender and a target that have talked for a while, and a corpus of the sender's valid packets. */
function setUp(seed: number) {
  const random = new Random(seed);
  const corpus: Uint8Array[] = [];
  const toTarget: Uint8Array[] = [];
  const toSender: Uint8Array[] = [];
  const sender = new PacketChannel((d) => toTarget.push(d.slice()), { protocolId: PROTOCOL_ID });
  const target = new PacketChannel((d) => toSender.push(d.slice()), { protocolId: PROTOCOL_ID });
  let payloadBytes = 0;
  const writePayload = (s: BitStream): void => {
    s.uint(payloadBytes, 16);
    for (let i = 0; i < payloadBytes; i++) s.uint(i & 0xff, 8);
  };
  let now = 0;
  for (let round = 0; round < 400; round++) {
    now += 16;
    if (random.chance(0.3)) {
      const m = new Uint8Array(random.int(1, random.chance(0.1) ? 1024 : 60)).fill(round & 0xff);
      sender.sendReliable(m);
    }
    payloadBytes = random.int(0, 300);
    sender.send(now, writePayload);
    target.send(now);
    // Deliver most packets, a few late, to leave holes and out-of-order state.
    while (toTarget.length > (random.chance(0.2) ? 1 : 0)) {
      const packet = toTarget.shift()!;
      corpus.push(packet);
      if (random.chance(0.9)) target.receive(now, packet);
    }
    while (toSender.length > 0) sender.receive(now, toSender.shift()!);
    while (target.receiveReliable() !== null);
  }
  return { random, corpus, sender, target, toTarget, writePayload, now };
}

function droppedTotal(c: PacketChannel): number {
  let total = 0;
  for (const reason of DROP_REASONS) if (reason !== 'payload overflow') total += c.stats.dropped[reason];
  return total;
}

/** One hostile datagram: a mutation of a valid one, a replay, or random bytes. */
function makePacket(random: Random, corpus: Uint8Array[]): Uint8Array {
  const base = corpus[random.int(0, corpus.length - 1)];
  const kind = random.int(0, 6);
  switch (kind) {
    case 0: {
      const p = base.slice();
      const flips = random.int(1, 8);
      for (let i = 0; i < flips; i++) p[random.int(0, p.length - 1)] ^= 1 << random.int(0, 7);
      return p;
    }
    case 1:
      return base.slice(0, random.int(0, base.length - 1));
    case 2: {
      const p = new Uint8Array(base.length + random.int(1, 200));
      p.set(base);
      for (let i = base.length; i < p.length; i++) p[i] = random.int(0, 255);
      return p;
    }
    case 3: {
      const other = corpus[random.int(0, corpus.length - 1)];
      const cut = random.int(0, Math.min(base.length, other.length));
      const p = new Uint8Array(random.int(cut, other.length));
      p.set(base.subarray(0, cut));
      p.set(other.subarray(cut, p.length), cut);
      return p;
    }
    case 4:
      return base.slice();
    case 5: {
      const p = base.slice();
      const start = random.int(0, p.length - 1);
      const end = Math.min(p.length, start + random.int(1, 16));
      for (let i = start; i < end; i++) p[i] = random.int(0, 255);
      return p;
    }
    default: {
      const p = new Uint8Array(random.int(0, MAX_PACKET_BYTES + 100));
      for (let i = 0; i < p.length; i++) p[i] = random.int(0, 255);
      return p;
    }
  }
}

/** Feeds `count` hostile packets; returns the first exception, if any. */
function barrage(
  target: PacketChannel,
  random: Random,
  corpus: Uint8Array[],
  count: number,
  fixChecksum: boolean,
  now: number,
): string {
  for (let i = 0; i < count; i++) {
    const p = makePacket(random, corpus);
    if (fixChecksum && p.length >= PACKET_HEADER_BYTES) {
      // Mostly a data packet numbered near the receive window, so the checks behind the
      // sequence (acks, reliable section) see most of the mutations.
      if (random.chance(0.5)) p[0] = 0;
      if (random.chance(0.7)) {
        const sequence = (target.remoteSequenceReceived + random.int(-40, 40)) & 0xffff;
        p[5] = sequence & 0xff;
        p[6] = sequence >>> 8;
      }
      writePacketChecksum(PROTOCOL_ID, p);
    }
    try {
      const s = target.receive(now, p);
      if (s !== null) {
        const length = s.uint(0, 16);
        for (let k = 0; k < length && s.ok; k++) s.uint(0, 8);
      }
      while (target.receiveReliable() !== null);
    } catch (e) {
      return `packet ${i} (${Array.from(p.subarray(0, 24)).join(',')}...): ${String(e)}`;
    }
  }
  return '';
}

/** Reads the payload the sender wrote (a 16-bit length, then bytes 0, 1, 2, ...); false if it differs. */
function payloadIntact(s: BitStream): boolean {
  const length = s.uint(0, 16);
  for (let k = 0; k < length; k++) if (s.uint(0, 8) !== (k & 0xff)) return false;
  return s.ok;
}

describe('PacketChannel.receive under fuzzing', () => {
  it('counts every mutated, replayed or random packet as dropped and still takes a valid one', () => {
    const seed = SEED;
    const msg = `seed ${seed}`;
    const { random, corpus, sender, target, toTarget, writePayload, now } = setUp(seed);
    const received = target.stats.packetsReceived;
    const dropped = droppedTotal(target);

    expect(barrage(target, random, corpus, PACKETS, false, now), msg).toBe('');
    const accepted = target.stats.packetsReceived - received;
    expect(accepted + droppedTotal(target) - dropped, msg).toBe(PACKETS);
    // Only the corpus packets the target had missed can be taken (once each): the checksum
    // lets a mutated packet through with odds of 1 in 2^32.
    expect(accepted, msg).toBeLessThanOrEqual(corpus.length - received);
    for (const reason of ['truncated', 'oversized', 'checksum', 'duplicate', 'stale'] as DropReason[]) {
      expect(target.stats.dropped[reason], `${msg}: ${reason}`).toBeGreaterThan(0);
    }

    sender.send(now + 16, writePayload);
    const s = target.receive(now + 16, toTarget.pop()!);
    expect(s, msg).not.toBeNull();
    expect(payloadIntact(s!), msg).toBe(true);
    expect(target.lastReceivedMs, msg).toBe(now + 16);
  });

  it('survives packets mutated behind a re-computed checksum and still takes a valid one', () => {
    const seed = SEED + 1;
    const msg = `seed ${seed}`;
    const { random, corpus, sender, target, toTarget, writePayload, now } = setUp(seed);
    const received = target.stats.packetsReceived;
    const dropped = droppedTotal(target);

    expect(barrage(target, random, corpus, PACKETS, true, now), msg).toBe('');
    const accepted = target.stats.packetsReceived - received;
    expect(accepted + droppedTotal(target) - dropped, msg).toBe(PACKETS);
    const reasons: DropReason[] = [
      'truncated',
      'bad type',
      'duplicate',
      'stale',
      'bad ack',
      'malformed',
      'reliable window',
    ];
    for (const reason of reasons) {
      expect(target.stats.dropped[reason], `${msg}: ${reason}`).toBeGreaterThan(0);
    }
    expect(accepted, msg).toBeGreaterThan(PACKETS / 20);

    // Forged sequences may have moved the receive window anywhere: a genuine packet renumbered
    // just past it (and re-sealed) is taken.
    sender.send(now + 16, writePayload);
    const packet = toTarget.pop()!;
    const next = (target.remoteSequenceReceived + 1) & 0xffff;
    packet[5] = next & 0xff;
    packet[6] = next >>> 8;
    writePacketChecksum(PROTOCOL_ID, packet);
    const s = target.receive(now + 16, packet);
    expect(s, `${msg}: ${JSON.stringify(target.stats.dropped)}`).not.toBeNull();
    expect(payloadIntact(s!), msg).toBe(true);
  });
});
