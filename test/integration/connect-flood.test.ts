// The door stays open under a flood: connect requests at 50,000 a second from random spoofed
// addresses, and a real client still connects within a second on every try, while the server
// answers a bounded number of them; the same through the router of a server hosting matches.

import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { createInputSample, GameClient } from '../../src/client/client.ts';
import { writePacketChecksum } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { MATCH_ROUTE_HEADER_BYTES, MatchClientEndpoint, writeMatchRoute } from '../../src/net/match-route.ts';
import type { DatagramEndpoint, PacketHandler } from '../../src/net/transport.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { MatchHost } from '../../src/server/matches.ts';
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

/** What serves the flooded port: one GameServer, or a MatchHost whose match 1 the client joins. */
type Served = 'server' | 'match';

/**
 * The flood runs a second, then through six tries of a real client to connect (and play a moment,
 * then leave): how long each try took, the flood's size and what the server side counted.
 */
function floodAndJoin(seed: number, served: Served) {
  const rng = new Random(seed);
  const network = new MemoryNetwork({ seed });
  const endpoint = new FloodedEndpoint(network.createEndpoint('server'));
  const cookieSecret = new Uint8Array(32).fill(5);
  const host = served === 'match' ? new MatchHost(endpoint) : null;
  const server =
    host === null
      ? new GameServer(arenaGame, endpoint, { cookieSecret })
      : host.create(1, { game: arenaGame, config: { cookieSecret } });
  const update = (nowMs: number) => (host === null ? server.update(nowMs) : host.update(nowMs));
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
      const inner = writeHandshakePacket(stream, protocolId, p);
      let data = inner.slice();
      if (host !== null) {
        data = new Uint8Array(MATCH_ROUTE_HEADER_BYTES + inner.length);
        writeMatchRoute(data, 1);
        data.set(inner, MATCH_ROUTE_HEADER_BYTES);
      }
      endpoint.injected.push({ from, data });
    }
    flooded += perStep;
    nowMs += stepMs;
    network.setTime(nowMs);
    update(nowMs);
  };
  // The flood runs a second before the first try, and through every try.
  for (let i = 0; i < 100; i++) step();
  const tries = 6;
  const times: number[] = [];
  const connected: boolean[] = [];
  for (let t = 0; t < tries; t++) {
    const clientEndpoint = network.createEndpoint(`client${t}`);
    const client = new GameClient(
      arenaGame,
      host === null ? clientEndpoint : new MatchClientEndpoint(clientEndpoint, 1),
      'server',
      { seed: seed + t },
    );
    const start = nowMs;
    client.connect(nowMs);
    while (client.state !== 'connected' && nowMs - start < 3000) {
      step();
      client.update(nowMs, createInputSample());
    }
    times.push(nowMs - start);
    connected.push(client.state === 'connected');
    // Play on for a moment, then leave.
    for (let i = 0; i < 20; i++) {
      step();
      client.update(nowMs, createInputSample());
    }
    client.disconnect();
    step();
    clientEndpoint.close();
  }
  const clientCount = server.clientCount;
  host?.close();
  if (host === null) server.close();
  return {
    times,
    connected,
    flooded,
    seconds: nowMs / 1000,
    rejected: server.stats.rejected,
    router: host?.router.stats.rejected,
    clientCount,
  };
}

describe('a spoofed connect flood at 50,000 a second', () => {
  it('lets a real client connect within a second on every try, at a bounded cost', () => {
    const seed = 71;
    const msg = `seed ${seed}`;
    const r = floodAndJoin(seed, 'server');
    for (const [t, ok] of r.connected.entries())
      expect(ok, `${msg}, try ${t}: ${JSON.stringify(r.rejected)}`).toBe(true);
    expect(Math.max(...r.times), `${msg}: ${r.times.join(', ')} ms`).toBeLessThanOrEqual(1000);
    // Challenges are bounded: at most the two allowances (a second's worth each, and their
    // refill), whatever the flood; the rest are dropped and counted.
    const challenges = r.flooded - (r.rejected['handshake rate'] ?? 0);
    expect(challenges, msg).toBeLessThanOrEqual(
      2 * DEFAULT_SERVER_CONFIG.maxHandshakesPerSecond * (r.seconds + 1),
    );
    expect(r.rejected['handshake rate'] ?? 0, msg).toBeGreaterThan(r.flooded * 0.4);
    expect(r.clientCount, msg).toBe(0);
  });

  it('aimed at a hosted match: its router lets a real client in within a second on every try, and passes a bounded number', () => {
    const seed = 72;
    const msg = `seed ${seed}`;
    const r = floodAndJoin(seed, 'match');
    const counts = `router ${JSON.stringify(r.router)}, match ${JSON.stringify(r.rejected)}`;
    for (const [t, ok] of r.connected.entries()) expect(ok, `${msg}, try ${t}: ${counts}`).toBe(true);
    expect(Math.max(...r.times), `${msg}: ${r.times.join(', ')} ms`).toBeLessThanOrEqual(1000);
    // The router passes at most its two allowances (500 a second each, a second's burst each);
    // the match's own allowances bound its challenges under that.
    const passed = r.flooded - (r.router?.['join rate'] ?? 0);
    expect(passed, `${msg}: ${counts}`).toBeLessThanOrEqual(2 * 500 * (r.seconds + 1));
    expect(r.router?.['join rate'] ?? 0, msg).toBeGreaterThan(r.flooded * 0.9);
    expect(r.clientCount, msg).toBe(0);
  });
});

describe('a challenge response replayed with its sealed field garbled', () => {
  it('costs one key agreement per address every 100 ms however many copies come, and its client still gets in', () => {
    const seed = 73;
    const msg = `seed ${seed}`;
    const network = new MemoryNetwork({ seed });
    const serverEndpoint = network.createEndpoint('server');
    const server = new GameServer(arenaGame, serverEndpoint, { cookieSecret: new Uint8Array(32).fill(5) });
    const endpoint = network.createEndpoint('player');
    // The player's first challenge response is held back (and copied) until the replays are done.
    let held: Uint8Array | null = null;
    const send = endpoint.send.bind(endpoint);
    let holding = true;
    endpoint.send = (to: string, data: Uint8Array) => {
      if (holding && data[0] === PACKET_CHALLENGE_RESPONSE) {
        held ??= data.slice();
        return;
      }
      send(to, data);
    };
    const client = new GameClient(arenaGame, endpoint, 'server', { seed });
    let nowMs = 0;
    client.connect(nowMs);
    while (held === null && nowMs < 2000) {
      nowMs += 10;
      network.setTime(nowMs);
      server.update(nowMs);
      client.update(nowMs, createInputSample());
    }
    if (held === null) throw new Error(`${msg}: no challenge response`);
    const garbled = (held as Uint8Array).slice();
    garbled[garbled.length - 1] ^= 1; // the sealed field's tag
    writePacketChecksum(DEFAULT_SERVER_CONFIG.protocolId, garbled);
    // 2,000 copies from the player's own address in each of five updates 50 ms apart.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 2000; i++) serverEndpoint.deliver('player', garbled, nowMs);
      nowMs += 50;
      network.setTime(nowMs);
      server.update(nowMs);
    }
    const rejected = server.stats.rejected;
    // At most one key agreement per 100 ms from this address: 3 in 250 ms (at 0, 100 and 200).
    expect(rejected['bad seal'] ?? 0, `${msg}: ${JSON.stringify(rejected)}`).toBeLessThanOrEqual(3);
    expect(rejected['key exchange rate'] ?? 0, msg).toBeGreaterThanOrEqual(10_000 - 3);
    // The player's own responses go through again: it connects.
    holding = false;
    const start = nowMs;
    while (client.state !== 'connected' && nowMs - start < 2000) {
      nowMs += 10;
      network.setTime(nowMs);
      server.update(nowMs);
      client.update(nowMs, createInputSample());
    }
    expect(client.state, `${msg}: ${JSON.stringify(rejected)}`).toBe('connected');
    expect(
      () => new GameServer(arenaGame, network.createEndpoint('bad'), { maxKeyExchangesPerSecond: 0 }),
    ).toThrow(/maxKeyExchangesPerSecond/);
    server.close();
  });
});
