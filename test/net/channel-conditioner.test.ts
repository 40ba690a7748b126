// Two packet channels over the memory network's conditioner (250 ms +- 100 ms each way, 25% loss,
// 25% duplicates, reordering) for 2,000 simulated seconds: reliable delivery, RTT and loss.

import { describe, expect, it } from 'vitest';
import { DEFAULT_PROTOCOL_ID, PacketChannel } from '../../src/net/channel.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import type { BitStream } from '../../src/protocol/bitstream.ts';
import { Random, sharedRandom } from '../../src/sim/random.ts';

const PROTOCOL_ID = DEFAULT_PROTOCOL_ID;
const SEED = Number(process.env.BACKSTEP_SEED ?? 20240611);
const DURATION_MS = 2_000_000;
const WARMUP_MS = 20_000;
const LOSS = 0.25;
const LATENCY_MS = 250;

/** Length of reliable message `n` of a stream (mostly small, now and then up to 1024 bytes). */
function messageLength(stream: number, n: number): number {
  const r = sharedRandom(stream, n);
  return r < 0.03 ? 4 + Math.floor(sharedRandom(stream + 1, n) * 1021) : 4 + Math.floor(r * 120);
}

function fillMessage(stream: number, n: number): Uint8Array {
  const m = new Uint8Array(messageLength(stream, n));
  m[0] = n & 0xff;
  m[1] = (n >>> 8) & 0xff;
  m[2] = (n >>> 16) & 0xff;
  m[3] = n >>> 24;
  for (let i = 4; i < m.length; i++) m[i] = (n * 31 + i * 7 + stream) & 0xff;
  return m;
}

/** One side: its channel, the reliable stream it sends and the one it checks. */
class Side {
  readonly channel: PacketChannel;
  readonly random: Random;
  nextToQueue = 0;
  nextExpected = 0;
  payloadsRead = 0;
  badPayloads = 0;
  errors: string[] = [];
  private pending: Uint8Array | null = null;
  private sends = 0;

  constructor(
    readonly name: string,
    readonly sendStream: number,
    readonly receiveStream: number,
    readonly intervalMs: number,
    transmit: (data: Uint8Array) => void,
    seed: number,
  ) {
    this.channel = new PacketChannel(transmit, { protocolId: PROTOCOL_ID, lossWindowPackets: 4096 });
    this.random = new Random(seed);
  }

  readonly writePayload = (s: BitStream): void => {
    s.uint(this.sends >>> 0, 32);
    s.uint(0xabcd, 16);
  };

  receive(nowMs: number, data: Uint8Array): void {
    const s = this.channel.receive(nowMs, data);
    if (s !== null) {
      const n = s.uint(0, 32);
      const tag = s.uint(0, 16);
      if (!s.ok || tag !== 0xabcd || n > 1e7) this.badPayloads++;
      this.payloadsRead++;
    }
    for (let m = this.channel.receiveReliable(); m !== null; m = this.channel.receiveReliable())
      this.check(m);
  }

  private check(m: Uint8Array): void {
    const n = (m[0] | (m[1] << 8) | (m[2] << 16) | (m[3] << 24)) >>> 0;
    const expected = fillMessage(this.receiveStream, this.nextExpected);
    if (n !== this.nextExpected || m.length !== expected.length || !m.every((b, i) => b === expected[i])) {
      if (this.errors.length < 5)
        this.errors.push(`${this.name}: got message ${n}, expected ${this.nextExpected}`);
    }
    this.nextExpected = n + 1;
  }

  send(nowMs: number): void {
    // About 0.9 reliable messages per packet (50 a second), many of them in bursts of up to 30.
    const burst = this.random.chance(0.05) ? this.random.int(1, 30) : this.random.chance(0.12) ? 1 : 0;
    for (let i = 0; i < burst || this.pending !== null; i++) {
      const m = this.pending ?? fillMessage(this.sendStream, this.nextToQueue);
      if (!this.channel.sendReliable(m)) {
        this.pending = m;
        break;
      }
      this.pending = null;
      this.nextToQueue++;
    }
    this.sends++;
    this.channel.send(nowMs, this.writePayload);
  }
}

describe('PacketChannel over the network conditioner', () => {
  it('delivers reliable streams exactly once and in order, and measures RTT and loss', () => {
    const seed = SEED;
    const net = new MemoryNetwork({ seed });
    const profile = parseProfile({
      latencyMs: LATENCY_MS,
      jitterMs: 100,
      loss: LOSS,
      duplicate: 0.25,
      reorder: 0.1,
      reorderDelayMs: 50,
    });
    const serverEnd = net.createEndpoint('server');
    const clientEnd = net.createEndpoint('client', profile);
    const server = new Side('server', 1, 2, 1000 / 60, (d) => serverEnd.send('client', d), seed ^ 0x5eed);
    const client = new Side('client', 2, 1, 1000 / 45, (d) => clientEnd.send('server', d), seed ^ 0xc11e);

    let nextServerSend = 0;
    let nextClientSend = 7;
    let nextSampleMs = WARMUP_MS;
    const rtt = { server: 0, client: 0 };
    const loss = { serverOut: 0, serverIn: 0, clientOut: 0, clientIn: 0 };
    let samples = 0;
    const onServerPacket = (_from: string, data: Uint8Array): void => server.receive(serverEnd.nowMs, data);
    const onClientPacket = (_from: string, data: Uint8Array): void => client.receive(clientEnd.nowMs, data);

    let now = 0;
    while (now < DURATION_MS) {
      now = Math.min(
        nextServerSend,
        nextClientSend,
        serverEnd.nextEventMs,
        clientEnd.nextEventMs,
        nextSampleMs,
      );
      serverEnd.poll(now, onServerPacket);
      clientEnd.poll(now, onClientPacket);
      if (now >= nextServerSend) {
        server.send(now);
        nextServerSend += server.intervalMs;
      }
      if (now >= nextClientSend) {
        client.send(now);
        nextClientSend += client.intervalMs;
      }
      if (now >= nextSampleMs) {
        nextSampleMs += 1000;
        rtt.server += server.channel.stats.rttMs;
        rtt.client += client.channel.stats.rttMs;
        loss.serverOut += server.channel.stats.outgoingLoss;
        loss.serverIn += server.channel.stats.incomingLoss;
        loss.clientOut += client.channel.stats.outgoingLoss;
        loss.clientIn += client.channel.stats.incomingLoss;
        samples++;
      }
    }

    const msg = `seed ${seed}`;
    const a = server.channel.stats;
    const b = client.channel.stats;
    console.info(
      `${msg}: server rtt ${(rtt.server / samples).toFixed(1)} ms (last ${a.rttMs.toFixed(1)}), client rtt ` +
        `${(rtt.client / samples).toFixed(1)} ms (last ${b.rttMs.toFixed(1)}); loss server out ` +
        `${(loss.serverOut / samples).toFixed(4)} in ${(loss.serverIn / samples).toFixed(4)}, client out ` +
        `${(loss.clientOut / samples).toFixed(4)} in ${(loss.clientIn / samples).toFixed(4)}; messages ` +
        `${server.nextToQueue} / ${client.nextToQueue}, copies sent ${a.reliableSent} / ${b.reliableSent}; ` +
        `packets ${a.packetsSent} / ${b.packetsSent}; dropped ${JSON.stringify(a.dropped)} ${JSON.stringify(b.dropped)}`,
    );

    expect(server.errors, msg).toEqual([]);
    expect(client.errors, msg).toEqual([]);
    expect(server.badPayloads + client.badPayloads, msg).toBe(0);
    expect(server.nextToQueue, msg).toBeGreaterThan(10_000);
    expect(client.nextToQueue, msg).toBeGreaterThan(10_000);
    // Everything queued more than a few seconds before the end has arrived.
    expect(client.nextExpected, msg).toBeGreaterThan(server.nextToQueue - 300);
    expect(server.nextExpected, msg).toBeGreaterThan(client.nextToQueue - 300);
    expect(a.reliableDelivered, msg).toBe(server.nextExpected);
    expect(b.reliableDelivered, msg).toBe(client.nextExpected);

    // RTT: the mean of once-a-second samples of the smoothed estimate, against the profile's
    // 2 x 250 = 500 ms with nothing subtracted. What moves the estimate off 500 ms:
    //  + the ack waits for the peer's next packet: half its send interval on average, 11.1 ms for
    //    the server (the client sends every 22.2 ms) and 8.3 ms for the client; a lost carrier
    //    adds another interval a quarter of the time;
    //  + 10% of packets are held 50 ms more each way: +10 ms;
    //  - the first ack to arrive wins: with +-100 ms of jitter against a 17-22 ms send interval,
    //    a later packet often overtakes the one that first carried the ack, and a duplicated
    //    packet counts its earlier copy. This outweighs the rest: the estimate lands at about
    //    462-469 ms (-7%) over seeds 1-5 and this one.
    const meanRtt = 2 * LATENCY_MS;
    expect(Math.abs(rtt.server / samples - meanRtt), msg).toBeLessThan(meanRtt * 0.1);
    expect(Math.abs(rtt.client / samples - meanRtt), msg).toBeLessThan(meanRtt * 0.1);
    expect(Math.abs(a.rttMs - meanRtt), msg).toBeLessThan(meanRtt * 0.2);
    expect(Math.abs(b.rttMs - meanRtt), msg).toBeLessThan(meanRtt * 0.2);

    for (const [name, value] of [
      ['server outgoing', loss.serverOut / samples],
      ['server incoming', loss.serverIn / samples],
      ['client outgoing', loss.clientOut / samples],
      ['client incoming', loss.clientIn / samples],
      ['server outgoing (last window)', a.outgoingLoss],
      ['server incoming (last window)', a.incomingLoss],
      ['client outgoing (last window)', b.outgoingLoss],
      ['client incoming (last window)', b.incomingLoss],
    ] as const) {
      expect(Math.abs(value - LOSS), `${msg}: ${name} loss ${value}`).toBeLessThan(LOSS * 0.1);
    }
  });
});
