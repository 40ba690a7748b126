// The live per-destination conditioner: shaped sends are delayed, lost and duplicated as set,
// unshaped ones pass straight through, and bad shapes are refused by name.

import { describe, expect, it } from 'vitest';
import { checkLinkShape, ShapedEndpoint } from '../../src/net/shaped-endpoint.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';

function setup(seed: number) {
  const network = new MemoryNetwork({ seed });
  const server = network.createEndpoint('server');
  const a = network.createEndpoint('a');
  const b = network.createEndpoint('b');
  const shaped = new ShapedEndpoint(server, seed);
  const arrivals = { a: [] as number[], b: [] as number[] };
  const step = (nowMs: number) => {
    network.setTime(nowMs);
    shaped.pump(nowMs);
    a.poll(nowMs, () => arrivals.a.push(nowMs));
    b.poll(nowMs, () => arrivals.b.push(nowMs));
  };
  return { network, shaped, arrivals, step };
}

describe('ShapedEndpoint', () => {
  it('delays sends to a shaped address by its latency and leaves the others alone', () => {
    const seed = 5;
    const { shaped, arrivals, step } = setup(seed);
    shaped.shape('a', { latencyMs: 200, jitterMs: 0, loss: 0, duplicate: 0 });
    step(0);
    shaped.send('a', new Uint8Array([1]));
    shaped.send('b', new Uint8Array([2]));
    for (let t = 1; t <= 400; t++) step(t);
    expect(arrivals.b, `seed ${seed}`).toEqual([1]);
    expect(arrivals.a, `seed ${seed}`).toEqual([200]);
    expect(shaped.shapeOf('a')?.latencyMs).toBe(200);
    expect(shaped.shapeOf('b')).toBeNull();
  });

  it('loses and duplicates about the shares set, and a perfect shape removes shaping', () => {
    const seed = 11;
    const { shaped, arrivals, step } = setup(seed);
    shaped.shape('a', { latencyMs: 10, jitterMs: 5, loss: 0.25, duplicate: 0.25 });
    for (let t = 0; t < 4000; t++) {
      step(t);
      shaped.send('a', new Uint8Array([t & 0xff]));
    }
    for (let t = 4000; t < 4100; t++) step(t);
    // Each send arrives 0, 1 or 2 times: expected 0.75 * 1.25 = 0.9375 copies per send.
    const perSend = arrivals.a.length / 4000;
    expect(perSend, `seed ${seed}`).toBeGreaterThan(0.9);
    expect(perSend, `seed ${seed}`).toBeLessThan(0.975);
    shaped.shape('a', { latencyMs: 0, jitterMs: 0, loss: 0, duplicate: 0 });
    expect(shaped.shapeOf('a')).toBeNull();
    expect(shaped.heldCount).toBe(0);
  });

  it("passes the engine's word on an address to the endpoint under it: drop and established", () => {
    const { network } = setup(3);
    const told: string[] = [];
    const inner = network.createEndpoint('inner');
    Object.assign(inner, {
      drop: (address: string) => told.push(`drop ${address}`),
      established: (address: string) => told.push(`established ${address}`),
    });
    const over = new ShapedEndpoint(inner, 3);
    over.established('a');
    over.drop('a');
    expect(told).toEqual(['established a', 'drop a']);
  });

  it('refuses out-of-range shapes by field name', () => {
    const { shaped } = setup(1);
    expect(() => shaped.shape('a', { latencyMs: -1, jitterMs: 0, loss: 0, duplicate: 0 })).toThrow(
      /latencyMs/,
    );
    expect(() => shaped.shape('a', { latencyMs: 0, jitterMs: 0, loss: 2, duplicate: 0 })).toThrow(/loss/);
    expect(checkLinkShape({ latencyMs: 0, jitterMs: Number.NaN, loss: 0, duplicate: 0 })).toMatch(/jitterMs/);
    expect(checkLinkShape({ latencyMs: 5000, jitterMs: 0, loss: 0, duplicate: 0 })).toMatch(/latencyMs/);
    expect(checkLinkShape({ latencyMs: 100, jitterMs: 10, loss: 0.1, duplicate: 0.1 })).toBeNull();
  });
});
