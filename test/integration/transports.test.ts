// Real transports end to end, in real time on 127.0.0.1: one GameServer (the arena) on a MultiTransportServer, Node clients over UDP, WebRTC and WebSocket; a silent client timed out; a spoofed connect flood.

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { connectBrowser } from '../../src/browser.ts';
import { createInputSample, GameClient, type InputSample } from '../../src/client/client.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_TIMED_OUT,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import type { DatagramEndpoint, PacketHandler } from '../../src/net/transport.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { type ConnectedEndpoint, closeWebRtc, connectNode, listen } from '../../src/node.ts';
import { DEFAULT_SERVER_CONFIG, GameServer } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

/** A scripted player: runs, strafes, turns and jumps, from a seed. */
function scriptedDriver(seed: number) {
  const rng = new Random(seed);
  let until = 0;
  let yawRate = 0;
  return (nowMs: number, input: InputSample) => {
    if (nowMs >= until) {
      until = nowMs + rng.range(200, 800);
      input.forwardMove = rng.int(-1, 1) * 127;
      input.sideMove = rng.int(-1, 1) * 127;
      yawRate = rng.range(-0.3, 0.3);
      input.buttons = rng.chance(0.3) ? BUTTON_JUMP : 0;
    }
    input.yaw += yawRate * 8;
    input.pitch = 5;
  };
}

interface Player {
  name: string;
  client: Client;
  endpoint: ConnectedEndpoint;
  input: InputSample;
  drive: (nowMs: number, input: InputSample) => void;
  /** False: the client stops running frames (it goes silent). */
  active: boolean;
}

function addPlayer(name: string, endpoint: ConnectedEndpoint, seed: number, nowMs: number): Player {
  const client = new GameClient(arenaGame, endpoint, endpoint.serverAddress, { seed });
  client.connect(nowMs);
  cleanups.push(() => endpoint.close());
  return { name, client, endpoint, input: createInputSample(), drive: scriptedDriver(seed), active: true };
}

/** Runs the server and every active player in real time for `ms`, a frame every few ms. */
async function run(server: GameServer<ArenaPlayerState, ArenaWorld>, players: Player[], ms: number) {
  const end = performance.now() + ms;
  for (;;) {
    const now = performance.now();
    server.update(now);
    for (const p of players) {
      if (!p.active) continue;
      p.drive(now, p.input);
      p.client.update(now, p.input);
    }
    if (now >= end) return;
    await new Promise((r) => setTimeout(r, 4));
  }
}

async function runUntil(
  server: GameServer<ArenaPlayerState, ArenaWorld>,
  players: Player[],
  condition: () => boolean,
  timeoutMs: number,
): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  while (!condition() && performance.now() < end) await run(server, players, 20);
  return condition();
}

describe('a match over real transports', () => {
  it('plays with UDP, WebRTC and WebSocket clients, predicts without corrections, times out a silent client and reuses its slot', async () => {
    const seed = 6;
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    });
    cleanups.push(() => multi.close());
    const executed = new Map<number, number>();
    const server = new GameServer(
      arenaGame,
      multi,
      { maxClients: 4, timeoutMs: 1500, cookieSecret: new Uint8Array(32).fill(3) },
      {
        onCommand: (_server, client) => executed.set(client.slot, (executed.get(client.slot) ?? 0) + 1),
      },
    );
    const base = `127.0.0.1:${multi.port}`;
    const now = performance.now();
    const players = [
      addPlayer('udp', await connectNode(`udp://${base}`), seed + 1, now),
      addPlayer('webrtc', await connectNode(`webrtc://${base}`), seed + 2, now),
      addPlayer('websocket', await connectNode(`ws://${base}`), seed + 3, now),
    ];
    const msg = (p: Player) => `seed ${seed}, ${p.name} client`;
    const allConnected = () => players.every((p) => p.client.state === 'connected' && p.client.isSpawned);
    expect(await runUntil(server, players, allConnected, 10_000), `seed ${seed}`).toBe(true);
    expect(server.clientCount).toBe(3);
    expect(new Set(players.map((p) => server.clients[p.client.slot]?.address.split(':')[0]))).toEqual(
      new Set(['udp', 'rtc', 'ws']),
    );
    await run(server, players, 2500);
    for (const p of players) {
      expect(p.client.state, msg(p)).toBe('connected');
      expect(p.client.predictor.stats.corrections, msg(p)).toBe(0);
      expect(p.client.predictor.stats.replays, msg(p)).toBeGreaterThan(10);
      expect(p.client.stats.framesReceived, msg(p)).toBeGreaterThan(20);
      expect(executed.get(p.client.slot) ?? 0, msg(p)).toBeGreaterThan(100);
      const stats = server.clients[p.client.slot]!.commandStats;
      expect(stats.overBudget, msg(p)).toBe(0);
    }

    // A fourth client fills the server, then goes silent: the server times it out.
    const silent = addPlayer('silent', await connectNode(`udp://${base}`), seed + 4, performance.now());
    players.push(silent);
    expect(
      await runUntil(server, players, () => silent.client.state === 'connected', 5000),
      msg(silent),
    ).toBe(true);
    const silentSlot = silent.client.slot;
    expect(server.clientCount).toBe(4);
    let timedOutSlot = -1;
    server.hooks.onDisconnect = (_server, client, reason) => {
      if (reason === DISCONNECT_TIMED_OUT) timedOutSlot = client.slot;
    };
    silent.active = false;
    expect(await runUntil(server, players, () => timedOutSlot >= 0, 5000), msg(silent)).toBe(true);
    expect(timedOutSlot).toBe(silentSlot);
    expect(server.clientCount).toBe(3);

    // Its slot goes to the next client.
    const late = addPlayer('late', await connectNode(`ws://${base}`), seed + 5, performance.now());
    players.push(late);
    expect(await runUntil(server, players, () => late.client.state === 'connected', 5000), msg(late)).toBe(
      true,
    );
    expect(late.client.slot).toBe(silentSlot);
    await run(server, players, 500);
    for (const p of players) {
      if (!p.active) continue;
      expect(p.client.state, msg(p)).toBe('connected');
      expect(p.client.predictor.stats.corrections, msg(p)).toBe(0);
    }

    // Everyone leaves cleanly.
    for (const p of players) if (p.active) p.client.disconnect();
    expect(await runUntil(server, [], () => server.clientCount === 0, 3000), `seed ${seed}`).toBe(true);
    expect(server.stats.disconnects).toBe(5);
    server.close();
    await multi.close();
    for (const p of players) await p.endpoint.close();
  });
});

/** An endpoint that delivers injected datagrams, each from any address it names, then the real ones. */
class InjectingEndpoint implements DatagramEndpoint {
  readonly injected: { from: string; data: Uint8Array }[] = [];

  constructor(private readonly inner: DatagramEndpoint) {}

  get address(): string {
    return this.inner.address;
  }

  send(to: string, data: Uint8Array): void {
    this.inner.send(to, data);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    for (const d of this.injected.splice(0)) onPacket(d.from, d.data);
    this.inner.poll(nowMs, onPacket);
  }

  close(): void {
    this.inner.close();
  }
}

describe('a spoofed connect flood', () => {
  it('keeps no per-client state for thousands of forged requests and bad cookies, and a real client still connects', () => {
    const seed = 61;
    const rng = new Random(seed);
    const network = new MemoryNetwork({ seed });
    const endpoint = new InjectingEndpoint(network.createEndpoint('server'));
    const server = new GameServer(arenaGame, endpoint, { cookieSecret: new Uint8Array(32).fill(5) });
    const protocolId = DEFAULT_SERVER_CONFIG.protocolId;
    const stream = createHandshakeStream();
    const p = createHandshakePacket();
    const fakeAddress = () =>
      `udp:10.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}:${rng.int(1024, 65535)}`;
    let requests = 0;
    let responses = 0;
    let garbage = 0;
    let nowMs = 0;
    for (let step = 0; step < 20; step++) {
      for (let i = 0; i < 250; i++) {
        p.type = PACKET_CONNECT_REQUEST;
        p.version = DEFAULT_SERVER_CONFIG.protocolVersion;
        p.clientNonce = rng.nextU32();
        endpoint.injected.push({
          from: fakeAddress(),
          data: writeHandshakePacket(stream, protocolId, p).slice(),
        });
        requests++;
        p.type = PACKET_CHALLENGE_RESPONSE;
        p.issuedAt = Math.floor(nowMs) >>> 0;
        p.cookieHi = rng.nextU32();
        p.cookieLo = rng.nextU32();
        p.updateRate = 32;
        p.rate = 80_000;
        endpoint.injected.push({
          from: fakeAddress(),
          data: writeHandshakePacket(stream, protocolId, p).slice(),
        });
        responses++;
        const junk = new Uint8Array(rng.int(0, 64));
        for (let j = 0; j < junk.length; j++) junk[j] = rng.int(0, 255);
        endpoint.injected.push({ from: fakeAddress(), data: junk });
        garbage++;
      }
      nowMs += 50;
      network.setTime(nowMs);
      server.update(nowMs);
      expect(server.clientCount, `seed ${seed}, step ${step}`).toBe(0);
    }
    const msg = `seed ${seed}: ${JSON.stringify(server.stats.rejected)}`;
    expect(server.stats.connects, msg).toBe(0);
    expect(
      server.clients.every((c) => c === null),
      msg,
    ).toBe(true);
    const rejected = server.stats.rejected;
    const rejectedTotal = Object.values(rejected).reduce((a, b) => a + b, 0);
    // Every forged datagram was either refused and counted, or answered (a challenge to a
    // request, a refusal to a response over its address's attempt limit) with no state kept.
    const answered = network.stats('server')!.packetsSent;
    expect(rejectedTotal + answered, msg).toBe(requests + responses + garbage);
    expect(rejected['bad cookie'] ?? 0, msg).toBeGreaterThan(responses / 2);
    expect(rejectedTotal, msg).toBeGreaterThanOrEqual(garbage);

    // A real client (its address passes the challenge) still gets in.
    const clientEndpoint = network.createEndpoint('client');
    const client = new GameClient(arenaGame, clientEndpoint, 'server', { seed });
    client.connect(nowMs);
    for (let i = 0; i < 200 && client.state !== 'connected'; i++) {
      nowMs += 10;
      network.setTime(nowMs);
      server.update(nowMs);
      client.update(nowMs, createInputSample());
    }
    expect(client.state, msg).toBe('connected');
    expect(server.clientCount, msg).toBe(1);
    server.close();
    clientEndpoint.close();
  });
});

describe('entry points', () => {
  it('refuse bad URLs and options with an Error that names them', async () => {
    await expect(connectNode('nonsense')).rejects.toThrow(/not a URL/);
    await expect(connectNode('udp://127.0.0.1')).rejects.toThrow(/needs a port/);
    await expect(connectNode('http://127.0.0.1:8080')).rejects.toThrow(/unsupported scheme http:/);
    await expect(listen({ port: -1 })).rejects.toThrow(/port/);
    await expect(connectBrowser('udp://127.0.0.1:4000')).rejects.toThrow(/unsupported scheme udp:/);
    // Node 20 has neither global: a browser entry point says which is missing.
    if (typeof (globalThis as { RTCPeerConnection?: unknown }).RTCPeerConnection !== 'function') {
      await expect(connectBrowser('webrtc://127.0.0.1:4000')).rejects.toThrow(/RTCPeerConnection/);
    }
  });
});
