// Tests of the in-process transport: addressing, time, conditioning in series, delivery order and never early.

import { describe, expect, it } from 'vitest';
import { parseProfile, profileByName } from '../../../src/net/profile.ts';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import { type MemoryEndpoint, MemoryNetwork } from '../../../src/net/transports/memory.ts';
import { Random } from '../../../src/sim/random.ts';

interface Received {
  from: string;
  atMs: number;
  bytes: number[];
}

function collect(endpoint: MemoryEndpoint, nowMs: number, into: Received[]): void {
  endpoint.poll(nowMs, (from, data) => into.push({ from, atMs: nowMs, bytes: [...data] }));
}

/** A datagram whose first four bytes are `id` and whose body is derived from it. */
function packet(id: number, length: number): Uint8Array {
  const data = new Uint8Array(length);
  new DataView(data.buffer).setUint32(0, id);
  for (let i = 4; i < length; i++) data[i] = (id * 31 + i) & 0xff;
  return data;
}

function packetId(bytes: readonly number[]): number {
  return ((bytes[0] << 24) | (bytes[1] << 16) | (bytes[2] << 8) | bytes[3]) >>> 0;
}

function intact(bytes: readonly number[]): boolean {
  const expected = packet(packetId(bytes), bytes.length);
  return bytes.every((b, i) => b === expected[i]);
}

describe('MemoryNetwork addressing', () => {
  it('gives free automatic addresses and refuses a duplicate', () => {
    const net = new MemoryNetwork({ seed: 1 });
    expect(net.createEndpoint().address).toBe('mem:1');
    expect(net.createEndpoint('mem:2').address).toBe('mem:2');
    expect(net.createEndpoint().address).toBe('mem:3');
    expect(() => net.createEndpoint('mem:1')).toThrow('address "mem:1" is already in use');
    expect(() => net.createEndpoint('')).toThrow('address must be a non-empty string');
    expect(() => new MemoryNetwork({ seed: 0.5 })).toThrow('seed must be an integer, got 0.5');
  });

  it('delivers a copy of the bytes with the sender address', () => {
    const net = new MemoryNetwork({ seed: 1 });
    const a = net.createEndpoint('a');
    const b = net.createEndpoint('b');
    const data = packet(7, 40);
    a.send('b', data);
    data.fill(0);
    const got: Received[] = [];
    collect(b, 0, got);
    expect(got).toEqual([{ from: 'a', atMs: 0, bytes: [...packet(7, 40)] }]);
    expect(b.pending).toBe(0);
    expect(net.stats('a')).toMatchObject({ packetsSent: 1, bytesSent: 40, up: null, down: null });
    expect(net.stats('b')).toMatchObject({ packetsReceived: 1, bytesReceived: 40 });
  });

  it('drops and counts oversize datagrams and sends to unknown or closed addresses', () => {
    const net = new MemoryNetwork({ seed: 1 });
    const a = net.createEndpoint('a');
    const b = net.createEndpoint('b');
    a.send('b', new Uint8Array(MAX_PACKET_BYTES + 1));
    a.send('b', new Uint8Array(MAX_PACKET_BYTES));
    a.send('nowhere', new Uint8Array(10));
    a.send('b', packet(1, 10));
    b.close();
    expect(b.isOpen).toBe(false);
    expect(b.pending).toBe(0);
    a.send('b', packet(2, 10));
    expect(a.stats).toMatchObject({ packetsSent: 4, droppedOversize: 1, droppedNoRoute: 2 });
    expect(net.stats('b')).toBeUndefined();

    const got: Received[] = [];
    collect(b, 100, got);
    expect(got).toEqual([]);
    b.send('a', packet(3, 10));
    expect(a.pending).toBe(0);

    const reborn = net.createEndpoint('b');
    a.send('b', packet(4, 10));
    collect(reborn, 100, got);
    expect(got.map((r) => packetId(r.bytes))).toEqual([4]);
  });

  it('stops delivering when the handler closes the endpoint, and lets the handler send', () => {
    const net = new MemoryNetwork({ seed: 1 });
    const a = net.createEndpoint('a');
    const b = net.createEndpoint('b');
    for (let i = 0; i < 5; i++) a.send('b', packet(i, 8));
    const seen: number[] = [];
    b.poll(0, (from, data) => {
      const id = packetId([...data]);
      seen.push(id);
      b.send(from, packet(100 + id, 8));
      if (id === 2) b.close();
    });
    expect(seen).toEqual([0, 1, 2]);
    const echoes: Received[] = [];
    collect(a, 0, echoes);
    expect(echoes.map((r) => packetId(r.bytes))).toEqual([100, 101, 102]);
  });
});

describe('MemoryNetwork time', () => {
  it('stamps sends with the sender clock, which never goes backwards', () => {
    const net = new MemoryNetwork({ seed: 1 });
    const client = net.createEndpoint('client', parseProfile({ latencyMs: 50 }));
    const server = net.createEndpoint('server');
    const got: Received[] = [];

    client.poll(100, () => {});
    client.poll(40, () => {});
    expect(client.nowMs).toBe(100);
    client.send('server', packet(1, 8));
    expect(server.nextEventMs).toBe(150);
    collect(server, 149.999, got);
    expect(got).toEqual([]);
    collect(server, 150, got);
    expect(got.map((r) => [packetId(r.bytes), r.atMs])).toEqual([[1, 150]]);

    client.setTime(120);
    client.send('server', packet(2, 8));
    net.setTime(300);
    expect(client.nowMs).toBe(300);
    client.send('server', packet(3, 8));
    net.setTime(200);
    expect(net.nowMs).toBe(300);
    collect(server, 170, got);
    collect(server, 349, got);
    collect(server, 350, got);
    expect(got.map((r) => [packetId(r.bytes), r.atMs])).toEqual([
      [1, 150],
      [2, 170],
      [3, 350],
    ]);
    expect(server.nextEventMs).toBe(Number.POSITIVE_INFINITY);
    expect(() => client.poll(Number.NaN, () => {})).toThrow(
      'MemoryEndpoint.poll: nowMs must be a finite number, got NaN',
    );
    expect(() => net.setTime(Number.POSITIVE_INFINITY)).toThrow(
      'MemoryNetwork.setTime: nowMs must be a finite number',
    );
  });
});

describe('MemoryNetwork conditioning', () => {
  it("applies the client's up then the server's down in series, and the reverse path too", () => {
    const net = new MemoryNetwork({ seed: 2 });
    const client = net.createEndpoint('client', parseProfile({ latencyMs: 30, down: { latencyMs: 10 } }));
    const server = net.createEndpoint('server', parseProfile({ latencyMs: 20, up: { latencyMs: 5 } }));
    const atServer: Received[] = [];
    const atClient: Received[] = [];
    client.send('server', packet(1, 8));
    server.send('client', packet(2, 8));
    for (let t = 0; t <= 100; t += 0.5) {
      collect(server, t, atServer);
      collect(client, t, atClient);
    }
    expect(atServer.map((r) => r.atMs)).toEqual([50]);
    expect(atClient.map((r) => r.atMs)).toEqual([15]);
    expect(server.stats.down).toMatchObject({ sent: 1, delivered: 1 });
    expect(client.stats.up).toMatchObject({ sent: 1, delivered: 1 });
  });

  it('compounds the loss of both ends', () => {
    const seed = 12;
    const net = new MemoryNetwork({ seed });
    const client = net.createEndpoint('client', parseProfile({ loss: 0.5, latencyMs: 5 }));
    const server = net.createEndpoint('server', parseProfile({ loss: 0.5, latencyMs: 5 }));
    const count = 20_000;
    let received = 0;
    for (let i = 0; i < count; i++) {
      net.setTime(i);
      client.send('server', packet(i, 20));
      server.poll(i, () => received++);
    }
    server.poll(count + 100, () => received++);
    expect(Math.abs(received / count - 0.25), `seed ${seed}: ${received / count}`).toBeLessThan(0.015);
    expect(server.stats.down!.sent, `seed ${seed}`).toBe(client.stats.up!.delivered);
    expect(server.stats.packetsReceived, `seed ${seed}`).toBe(received);
  });

  it('delivers duplicates as separate datagrams', () => {
    const net = new MemoryNetwork({ seed: 3 });
    const a = net.createEndpoint('a', parseProfile({ duplicate: 1, latencyMs: 10, jitterMs: 5 }));
    const b = net.createEndpoint('b', parseProfile({ duplicate: 1 }));
    a.send('b', packet(9, 100));
    const got: Received[] = [];
    collect(b, 1000, got);
    expect(got.length).toBe(4);
    expect(got.every((r) => packetId(r.bytes) === 9 && intact(r.bytes))).toBe(true);
  });
});

describe('MemoryNetwork delivery order', () => {
  interface Traffic {
    atMs: number;
    id: number;
    length: number;
  }

  function traffic(seed: number, count: number): Traffic[] {
    const random = new Random(seed);
    const out: Traffic[] = [];
    let t = 0;
    for (let id = 0; id < count; id++) {
      t += random.chance(0.3) ? 0 : random.range(0, 8);
      out.push({ atMs: t, id, length: random.int(4, MAX_PACKET_BYTES) });
    }
    return out;
  }

  /**
   * Sends `plan` from a conditioned sender and polls the receiver either at each next event
   * (exact delivery times) or every `stepMs`.
   */
  function deliver(seed: number, plan: Traffic[], stepMs: number | null): Received[] {
    const net = new MemoryNetwork({ seed });
    const profile = parseProfile({
      latencyMs: 80,
      jitterMs: 60,
      duplicate: 0.2,
      reorder: 0.1,
      reorderDelayMs: 50,
      loss: 0.1,
    });
    const sender = net.createEndpoint('sender', profile);
    const receiver = net.createEndpoint('receiver');
    const got: Received[] = [];
    let next = 0;
    let pollAt = stepMs ?? 0;
    while (next < plan.length || receiver.pending > 0) {
      const sendAt = next < plan.length ? plan[next].atMs : Number.POSITIVE_INFINITY;
      if (stepMs === null) pollAt = receiver.nextEventMs;
      if (sendAt <= pollAt) {
        sender.setTime(sendAt);
        sender.send('receiver', packet(plan[next].id, plan[next].length));
        next++;
      } else {
        collect(receiver, pollAt, got);
        if (stepMs !== null) pollAt += stepMs;
      }
    }
    return got;
  }

  for (const seed of [1, 2, 3]) {
    it(`delivers in delivery-time order, never early and on time for any polling (seed ${seed})`, () => {
      const plan = traffic(seed, 3000);
      const exact = deliver(seed, plan, null);
      const sentAt = new Map(plan.map((p) => [p.id, p.atMs]));
      expect(exact.length, `seed ${seed}`).toBeGreaterThan(2500);
      let early = 0;
      let broken = 0;
      let outOfOrder = 0;
      for (let i = 0; i < exact.length; i++) {
        const r = exact[i];
        if (r.atMs < sentAt.get(packetId(r.bytes))! + 20) early++;
        if (!intact(r.bytes)) broken++;
        if (i > 0 && r.atMs < exact[i - 1].atMs) outOfOrder++;
      }
      expect(early, `seed ${seed}`).toBe(0);
      expect(broken, `seed ${seed}`).toBe(0);
      expect(outOfOrder, `seed ${seed}`).toBe(0);
      let overtaken = 0;
      for (let i = 1; i < exact.length; i++)
        if (packetId(exact[i].bytes) < packetId(exact[i - 1].bytes)) overtaken++;
      expect(overtaken, `seed ${seed}`).toBeGreaterThan(100);

      for (const stepMs of [1, 16.5, 50]) {
        const coarse = deliver(seed, plan, stepMs);
        expect(
          coarse.map((r) => packetId(r.bytes)),
          `seed ${seed} step ${stepMs}`,
        ).toEqual(exact.map((r) => packetId(r.bytes)));
        let late = 0;
        for (let i = 0; i < coarse.length; i++) {
          const delay = coarse[i].atMs - exact[i].atMs;
          if (delay < 0 || delay >= stepMs) late++;
        }
        expect(late, `seed ${seed} step ${stepMs}`).toBe(0);
      }
    });
  }

  it('gives the same deliveries for the same seed and different ones for another', () => {
    const plan = traffic(9, 1000);
    const run = (seed: number) => deliver(seed, plan, 10).map((r) => [packetId(r.bytes), r.atMs]);
    expect(run(9)).toEqual(run(9));
    expect(run(9)).not.toEqual(run(10));
  });

  it('survives the terrible profile on both ends with intact datagrams', () => {
    const seed = 21;
    const net = new MemoryNetwork({ seed });
    const client = net.createEndpoint('client', profileByName('terrible'));
    const server = net.createEndpoint('server', profileByName('congested'));
    const plan = traffic(seed, 2000);
    const got: Received[] = [];
    for (const p of plan) {
      net.setTime(p.atMs);
      client.send('server', packet(p.id, Math.min(p.length, 200)));
      collect(server, p.atMs, got);
    }
    collect(server, plan[plan.length - 1].atMs + 10_000, got);
    expect(server.pending, `seed ${seed}`).toBe(0);
    expect(got.length, `seed ${seed}`).toBeGreaterThan(1000);
    expect(
      got.every((r) => intact(r.bytes)),
      `seed ${seed}`,
    ).toBe(true);
    const up = client.stats.up!;
    const down = server.stats.down!;
    expect(down.sent, `seed ${seed}`).toBe(up.delivered);
    expect(got.length, `seed ${seed}`).toBe(down.delivered);
  });
});

describe('MemoryNetwork split between two networks by relays', () => {
  it('delivers what crosses a relay exactly as one network would, both ways, under the mobile profile', () => {
    const seed = 31;
    const msg = `seed ${seed}`;
    const mobile = profileByName('mobile');
    const seeds = { up: 101, down: 202 };
    const random = new Random(seed);
    const plan: { atMs: number; id: number; length: number }[] = [];
    for (let id = 0, t = 0; id < 1500; id++) {
      t += random.chance(0.3) ? 0 : random.range(0, 8);
      plan.push({ atMs: t, id, length: random.int(4, 300) });
    }
    // One network: a conditioned client and an unconditioned server.
    const whole = new MemoryNetwork({ seed });
    const client = whole.createEndpoint('client', mobile, seeds);
    const server = whole.createEndpoint('server');
    // The same two on two networks: each side's peer is a relay whose datagrams the test hands
    // over late (at the next 20 ms boundary, within the profile's least delay), as a thread would.
    const left = new MemoryNetwork({ seed: 0 });
    const right = new MemoryNetwork({ seed: 0 });
    const client2 = left.createEndpoint('client', mobile, seeds);
    const server2 = right.createEndpoint('server');
    const toServer: [string, Uint8Array, number][] = [];
    const toClient: [string, Uint8Array, number][] = [];
    left.createRelay('server', (from, data, atMs) => toServer.push([from, data.slice(), atMs]));
    right.createRelay('client', (from, data, atMs) => toClient.push([from, data.slice(), atMs]));
    const got: Received[][] = [[], [], [], []];
    let boundary = 0;
    for (const p of plan) {
      while (p.atMs > boundary) {
        for (const [from, data, atMs] of toServer.splice(0)) server2.deliver(from, data, atMs);
        for (const [from, data, atMs] of toClient.splice(0)) client2.deliver(from, data, atMs);
        boundary += 20;
      }
      collect(client, p.atMs, got[0]);
      collect(server, p.atMs, got[1]);
      collect(client2, p.atMs, got[2]);
      collect(server2, p.atMs, got[3]);
      const data = packet(p.id, p.length);
      client.send('server', data);
      server.send('client', data);
      client2.send('server', data);
      server2.send('client', data);
    }
    expect(got[0].length, msg).toBeGreaterThan(1000);
    expect(got[1].length, msg).toBeGreaterThan(1000);
    expect(got[2], msg).toEqual(got[0]);
    expect(got[3], msg).toEqual(got[1]);
    expect(() => left.createRelay('client', () => {})).toThrow(/address "client" is already in use/);
    expect(left.stats('server'), msg).toBeUndefined();
  });
});
