// The pieces every real transport shares: the bounded datagram queue, the send buffer pool and the queue capacity check.

import { describe, expect, it } from 'vitest';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import {
  checkQueueCapacity,
  createTransportStats,
  DatagramQueue,
  SendPool,
} from '../../../src/net/transports/queue.ts';
import { Random } from '../../../src/sim/random.ts';

describe('DatagramQueue', () => {
  it('hands out copies in order, refuses oversize and overflow, and counts', () => {
    const stats = createTransportStats();
    const q = new DatagramQueue(3, stats);
    const scratch = new Uint8Array(4);
    for (let i = 0; i < 5; i++) {
      scratch.fill(i);
      q.push(`a${i}`, scratch);
    }
    expect(q.push('big', new Uint8Array(MAX_PACKET_BYTES + 1))).toBe(false);
    expect(q.push('max', new Uint8Array(MAX_PACKET_BYTES))).toBe(false);
    expect(stats.droppedQueueFull).toBe(3);
    expect(stats.droppedOversizeReceived).toBe(1);
    const got: string[] = [];
    q.drain((from, data) => got.push(`${from}=${data.join(',')}`));
    expect(got).toEqual(['a0=0,0,0,0', 'a1=1,1,1,1', 'a2=2,2,2,2']);
    expect(stats.packetsReceived).toBe(3);
    expect(stats.bytesReceived).toBe(12);
  });

  it('wraps around and delivers only what was queued when the drain began', () => {
    const q = new DatagramQueue(4, createTransportStats());
    const got: number[] = [];
    for (let round = 0; round < 10; round++) {
      q.push('x', new Uint8Array([round]));
      q.push('x', new Uint8Array([round + 100]));
      q.drain((_from, data) => {
        got.push(data[0]);
        if (data[0] < 100) q.push('x', new Uint8Array([data[0] + 200]));
      });
      expect(q.size).toBe(1);
      q.drain((_from, data) => got.push(data[0]));
    }
    expect(got.slice(0, 6)).toEqual([0, 100, 200, 1, 101, 201]);
    expect(got.length).toBe(30);
  });

  it('matches a plain array model under random pushes, drains and clears (seeded)', () => {
    for (const seed of [1, 2, 3]) {
      const rng = new Random(seed);
      const stats = createTransportStats();
      const q = new DatagramQueue(8, stats);
      const model: number[][] = [];
      let full = 0;
      for (let step = 0; step < 2000; step++) {
        const action = rng.int(0, 9);
        if (action < 6) {
          const bytes = Array.from({ length: rng.int(1, 40) }, () => rng.int(0, 255));
          const queued = q.push(`s${step}`, new Uint8Array(bytes));
          expect(queued, `seed ${seed}, step ${step}`).toBe(model.length < 8);
          if (queued) model.push(bytes);
          else full++;
        } else if (action < 9) {
          const got: number[][] = [];
          q.drain((_from, data) => got.push([...data]));
          expect(got, `seed ${seed}, step ${step}`).toEqual(model.splice(0));
        } else {
          q.clear();
          model.length = 0;
        }
        expect(q.size, `seed ${seed}, step ${step}`).toBe(model.length);
      }
      expect(stats.droppedQueueFull, `seed ${seed}`).toBe(full);
    }
  });

  it('leaves the rest queued, in order, when the handler throws', () => {
    const q = new DatagramQueue(4, createTransportStats());
    for (let i = 0; i < 3; i++) q.push('x', new Uint8Array([i]));
    expect(() =>
      q.drain((_from, data) => {
        if (data[0] === 0) throw new Error('handler failed');
      }),
    ).toThrow(/handler failed/);
    const got: number[] = [];
    q.drain((_from, data) => got.push(data[0]));
    expect(got).toEqual([1, 2]);
  });

  it('names a bad capacity', () => {
    expect(() => new DatagramQueue(0, createTransportStats())).toThrow(/queueCapacity/);
    expect(() => new DatagramQueue(1.5, createTransportStats())).toThrow(/queueCapacity/);
    expect(() => checkQueueCapacity('Thing', 65537)).toThrow(/Thing: queueCapacity .* 65537/);
    expect(() => checkQueueCapacity('Thing', 65536)).not.toThrow();
  });
});

describe('SendPool', () => {
  it('copies the bytes, reuses a slot once its send is done, and counts failed sends', () => {
    const stats = createTransportStats();
    const pool = new SendPool(stats);
    const data = new Uint8Array([1, 2, 3]);
    const a = pool.copy(data);
    data.fill(9);
    expect([...a.bytes.subarray(0, 3)]).toEqual([1, 2, 3]);
    const b = pool.copy(data);
    expect(b).not.toBe(a);
    a.done(null);
    expect(pool.copy(data)).toBe(a);
    b.done(new Error('socket closed'));
    expect(stats.sendErrors).toBe(1);
    expect(pool.copy(data)).toBe(b);
  });
});
