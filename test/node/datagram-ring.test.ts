// The shared-memory datagram ring between the socket thread and a match worker: records come out
// in order and intact across many wraps, a full ring refuses and counts, and a bad size is refused.

import { describe, expect, it } from 'vitest';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import {
  createRingBuffers,
  DatagramRing,
  MAX_RING_ADDRESS_BYTES,
  RING_BIND,
  RING_DATAGRAM,
} from '../../src/node/datagram-ring.ts';
import { Random } from '../../src/sim/random.ts';

describe('the datagram ring', () => {
  it('hands records over in order and intact, across many wraps of the ring', () => {
    const seed = 9;
    const rng = new Random(seed);
    const buffers = createRingBuffers(8);
    const producer = new DatagramRing(buffers);
    const consumer = new DatagramRing(buffers);
    const sent: {
      kind: number;
      matchId: number;
      peer: number;
      nonce: number;
      address: string;
      data: number[];
    }[] = [];
    const got: typeof sent = [];
    for (let round = 0; round < 200; round++) {
      const n = rng.int(0, 8);
      for (let i = 0; i < n; i++) {
        const peer = rng.int(1, 5);
        const record = {
          kind: rng.chance(0.9) ? RING_DATAGRAM : RING_BIND,
          matchId: rng.int(1, 0x7fffffff) * 2,
          peer,
          nonce: rng.nextU32(),
          address: `udp:127.0.0.${peer}:${4000 + peer}`,
          data: Array.from({ length: rng.int(0, MAX_PACKET_BYTES) }, () => rng.int(0, 255)),
        };
        expect(
          producer.write(
            record.kind,
            record.matchId,
            record.peer,
            record.nonce,
            record.address,
            new Uint8Array(record.data),
          ),
          `seed ${seed}`,
        ).toBe(true);
        sent.push(record);
      }
      consumer.read((r) => got.push({ ...r, data: [...r.data] }));
      expect(consumer.size).toBe(0);
    }
    expect(got.length, `seed ${seed}`).toBe(sent.length);
    expect(got, `seed ${seed}`).toEqual(sent);
    expect(producer.full).toBe(0);
  });

  it('refuses and counts a record when the ring is full, or its address or data is too long', () => {
    const buffers = createRingBuffers(4);
    const producer = new DatagramRing(buffers);
    const consumer = new DatagramRing(buffers);
    for (let i = 0; i < 4; i++)
      expect(producer.write(RING_DATAGRAM, 1, 1, 0, 'a', new Uint8Array([i]))).toBe(true);
    expect(producer.write(RING_DATAGRAM, 1, 1, 0, 'a', new Uint8Array([9]))).toBe(false);
    expect(producer.write(RING_DATAGRAM, 1, 1, 0, 'x'.repeat(MAX_RING_ADDRESS_BYTES + 1), null)).toBe(false);
    const seen: number[] = [];
    consumer.read((r) => seen.push(r.data[0]));
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(producer.write(RING_DATAGRAM, 1, 1, 0, 'a', new Uint8Array(MAX_PACKET_BYTES + 1))).toBe(false);
    expect(producer.full).toBe(3);
    expect(() => createRingBuffers(6)).toThrow(/power of two/);
  });
});
