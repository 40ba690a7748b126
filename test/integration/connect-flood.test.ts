// The door stays open under a flood: connect requests at 50,000 a second from random spoofed
// addresses, and a real client still connects within a second on every try, while the server
// answers a bounded number of them.

import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { createInputSample, GameClient } from '../../src/client/client.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CONNECT_REQUEST,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import type { DatagramEndpoint, PacketHandler } from '../../src/net/transport.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { DEFAULT_SERVER_CONFIG, GameServer } from '../../src/server/server.ts';
import { gameSchemaHash } from '../../src/sim/game.ts';
import { Random } from '../../src/sim/random.ts';

/** The server's endpoint, also delivering datagrams from any address the flood names. */
class FloodedEndpoint implements DatagramEndpoint {
  readonly injected: { from: string; data: Uint8Array }[] = [];
  constructor(private readonly inner: DatagramEndpoint) {}
  get address(): string {
    return this.inner.address;
  }
  send(to: string, data: Uint8Array): void {
    this.inner.send(to, data);
  }
  poll(nowMs: number, onPacket: PacketHandler): void {
    // Spoofed and real datagrams interleave: the flood arrives around the real ones.
    const flood = this.injected.splice(0);
    const half = flood.length >> 1;
    for (let i = 0; i < half; i++) onPacket(flood[i].from, flood[i].data);
    this.inner.poll(nowMs, onPacket);
    for (let i = half; i < flood.length; i++) onPacket(flood[i].from, flood[i].data);
  }
  close(): void | Promise<void> {
    return this.inner.close();
  }
}

describe('a spoofed connect flood at 50,000 a second', () => {
  it('lets a real client connect within a second on every try, at a bounded cost', () => {
    const seed = 71;
    const msg = `seed ${seed}`;
    const rng = new Random(seed);
    const network = new MemoryNetwork({ seed });
    const endpoint = new FloodedEndpoint(network.createEndpoint('server'));
    const server = new GameServer(arenaGame, endpoint, { cookieSecret: new Uint8Array(32).fill(5) });
    const protocolId = DEFAULT_SERVER_CONFIG.protocolId;
    const stream = createHandshakeStream();
    const p = createHandshakePacket();
    p.type = PACKET_CONNECT_REQUEST;
    p.version = DEFAULT_SERVER_CONFIG.protocolVersion;
    p.schemaHash = gameSchemaHash(arenaGame);
    const stepMs = 10;
    const perStep = 500;
    let nowMs = 0;
    let flooded = 0;
    const step = () => {
      for (let i = 0; i < perStep; i++) {
        p.clientNonce = rng.nextU32();
        for (let k = 0; k < 32; k++) p.publicKey[k] = rng.int(0, 255);
        const from = `udp:${rng.int(1, 223)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}:${rng.int(1024, 65535)}`;
        endpoint.injected.push({ from, data: writeHandshakePacket(stream, protocolId, p).slice() });
      }
      flooded += perStep;
      nowMs += stepMs;
      network.setTime(nowMs);
      server.update(nowMs);
    };
    // The flood runs a second before the first try, and through every try.
    for (let i = 0; i < 100; i++) step();
    const tries = 6;
    const times: number[] = [];
    for (let t = 0; t < tries; t++) {
      const clientEndpoint = network.createEndpoint(`client${t}`);
      const client = new GameClient(arenaGame, clientEndpoint, 'server', { seed: seed + t });
      const start = nowMs;
      client.connect(nowMs);
      while (client.state !== 'connected' && nowMs - start < 3000) {
        step();
        client.update(nowMs, createInputSample());
      }
      times.push(nowMs - start);
      expect(client.state, `${msg}, try ${t}: ${JSON.stringify(server.stats.rejected)}`).toBe('connected');
      // Play on for a moment, then leave.
      for (let i = 0; i < 20; i++) {
        step();
        client.update(nowMs, createInputSample());
      }
      client.disconnect();
      step();
      clientEndpoint.close();
    }
    expect(Math.max(...times), `${msg}: ${times.join(', ')} ms`).toBeLessThanOrEqual(1000);
    // Challenges are bounded: at most the two allowances (a second's worth each, and their
    // refill), whatever the flood; the rest are dropped and counted.
    const seconds = nowMs / 1000;
    const challenges = flooded - (server.stats.rejected['handshake rate'] ?? 0);
    expect(challenges, msg).toBeLessThanOrEqual(
      2 * DEFAULT_SERVER_CONFIG.maxHandshakesPerSecond * (seconds + 1),
    );
    expect(server.stats.rejected['handshake rate'] ?? 0, msg).toBeGreaterThan(flooded * 0.4);
    expect(server.clientCount, msg).toBe(0);
    server.close();
  });
});
