// Real transports end to end, in real time on 127.0.0.1: one GameServer (the arena) on a MultiTransportServer, Node clients over UDP, WebRTC and WebSocket playing together; a silent client timed out; links closed as soon as their clients leave; a ban by host; a spoofed connect flood; a Node process that exits on its own.

import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { connectBrowser } from '../../src/browser.ts';
import { createInputSample, GameClient, type InputSample } from '../../src/client/client.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_CLIENT_LEFT,
  DISCONNECT_KICKED,
  DISCONNECT_TIMED_OUT,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  REFUSE_BANNED,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../../src/net/transport.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { PipeClientEndpoint } from '../../src/net/transports/pipe-client.ts';
import { type ConnectedEndpoint, closeWebRtc, connectNode, listen } from '../../src/node.ts';
import { DEFAULT_SERVER_CONFIG, GameServer } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';

import { closeAll, onCleanup, rawWebSocket, until } from '../net/transports/loopback.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;
type Server = GameServer<ArenaPlayerState, ArenaWorld>;

afterEach(closeAll);

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

/** The server entities of the other connected players, sorted. */
function othersOf(server: Server, p: Player, players: Player[]): number[] {
  const entities: number[] = [];
  for (const q of players) {
    if (q === p || !q.active || q.client.state !== 'connected') continue;
    const sc = server.clients[q.client.slot];
    if (sc) entities.push(sc.entity);
  }
  return entities.sort((a, b) => a - b);
}

/** Those of othersOf(...) that `p` draws in its view this frame, sorted. */
function othersInView(server: Server, p: Player, players: Player[]): number[] {
  const drawn = new Set(p.client.view.list.subarray(0, p.client.view.count));
  return othersOf(server, p, players).filter((e) => drawn.has(e));
}

/** Whether a WebSocket or WebRTC client's link has ended (the server closed it, or it did). */
function linkEnded(endpoint: ConnectedEndpoint): boolean {
  return endpoint instanceof PipeClientEndpoint && !endpoint.isOpen;
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
  onCleanup(() => endpoint.close());
  return { name, client, endpoint, input: createInputSample(), drive: scriptedDriver(seed), active: true };
}

/** Runs the server and every active player in real time for `ms`, a frame every few ms. */
async function run(server: Server, players: Player[], ms: number) {
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
  server: Server,
  players: Player[],
  condition: () => boolean,
  timeoutMs: number,
): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  while (!condition() && performance.now() < end) await run(server, players, 20);
  return condition();
}

describe('a match over real transports', () => {
  it('plays with UDP, WebRTC and WebSocket clients (predictions, snapshots, each sees the others), times out a silent client, reuses its slot, and lets everyone leave', async () => {
    const seed = 6;
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    });
    onCleanup(() => multi.close());
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
      expect(p.client.predictor.stats.confirmations, msg(p)).toBeGreaterThan(10);
      expect(p.client.stats.framesReceived, msg(p)).toBeGreaterThan(20);
      expect(executed.get(p.client.slot) ?? 0, msg(p)).toBeGreaterThan(100);
      const stats = server.clients[p.client.slot]!.commandStats;
      expect(stats.overBudget, msg(p)).toBe(0);
      expect(p.client.snapshots.stats.framesRead, msg(p)).toBeGreaterThan(20);
      expect(othersInView(server, p, players), msg(p)).toEqual(othersOf(server, p, players));
      expect(othersOf(server, p, players), msg(p)).toHaveLength(2);
    }

    // Hostile traffic on the same port number hurts no one: an oversize UDP datagram is dropped and
    // counted; an oversize WebSocket message and a malformed signalling message each close only
    // the socket that sent it.
    const raw = dgram.createSocket('udp4');
    onCleanup(() => new Promise<void>((r) => raw.close(() => r())));
    await new Promise<void>((r) => raw.bind(0, '127.0.0.1', r));
    await new Promise<void>((r) =>
      raw.send(Buffer.alloc(MAX_PACKET_BYTES + 1), multi.port, '127.0.0.1', () => r()),
    );
    const bigMessage = await rawWebSocket(`ws://${base}/ws`);
    bigMessage.ws.send(new Uint8Array(MAX_PACKET_BYTES + 1));
    const badSignal = await rawWebSocket(`ws://${base}/rtc`);
    badSignal.ws.send('{"type":"hello"}');
    expect([await bigMessage.closed, await badSignal.closed], `seed ${seed}`).toEqual([1009, 1008]);
    const dropped = () => multi.udp.stats.droppedOversizeReceived === 1;
    expect(await runUntil(server, players, dropped, 2000), `seed ${seed}`).toBe(true);
    expect(multi.websocket.stats.closedOversize, `seed ${seed}`).toBe(1);
    expect(multi.webrtc.stats.closedMalformed, `seed ${seed}`).toBe(1);
    await run(server, players, 300);
    for (const p of players) {
      expect(p.client.state, msg(p)).toBe('connected');
      expect(p.client.predictor.stats.corrections, msg(p)).toBe(0);
    }
    expect(server.clientCount).toBe(3);

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
    const lateFrames = late.client.snapshots.stats.framesRead;
    await run(server, players, 500);
    for (const p of players) {
      if (!p.active) continue;
      expect(p.client.state, msg(p)).toBe('connected');
      expect(p.client.predictor.stats.corrections, msg(p)).toBe(0);
      expect(othersInView(server, p, players), msg(p)).toEqual(othersOf(server, p, players));
      expect(othersOf(server, p, players), msg(p)).toHaveLength(3);
    }
    expect(late.client.snapshots.stats.framesRead, msg(late)).toBeGreaterThan(lateFrames);

    // Everyone leaves cleanly: the server lets each go at once and closes its link then (not
    // after the links' 30 s of silence): each client sees its connection end.
    for (const p of players) if (p.active) p.client.disconnect();
    expect(await runUntil(server, [], () => server.clientCount === 0, 3000), `seed ${seed}`).toBe(true);
    expect(server.stats.disconnects).toBe(5);
    expect([multi.websocket.socketCount, multi.webrtc.peerCount], `seed ${seed}`).toEqual([0, 0]);
    expect([multi.websocket.stats.closedDropped, multi.webrtc.stats.closedDropped], `seed ${seed}`).toEqual([
      2, 1,
    ]);
    const linked = players.filter((p) => p.name !== 'udp' && p.name !== 'silent');
    expect(await until(() => linked.every((p) => linkEnded(p.endpoint)), 3000), `seed ${seed}`).toBe(true);
    for (const p of players) await p.endpoint.close();
    server.close();
    await multi.close();
  });
});

describe('a ban by host', () => {
  it('kicks the WebSocket client of a banned host and refuses it when it comes back, while the UDP and WebRTC clients keep playing; a client that leaves has its link closed at once', async () => {
    const seed = 14;
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    });
    onCleanup(() => multi.close());
    const server = new GameServer(arenaGame, multi, {
      maxClients: 4,
      cookieSecret: new Uint8Array(32).fill(9),
    });
    const links = () => [multi.websocket.socketCount, multi.webrtc.peerCount];
    const ended: { reason: number; links: number[] }[] = [];
    server.hooks.onDisconnect = (_server, _client, reason) => ended.push({ reason, links: links() });
    const base = `127.0.0.1:${multi.port}`;
    const now = performance.now();
    const udp = addPlayer('udp', await connectNode(`udp://${base}`), seed + 1, now);
    const webrtc = addPlayer('webrtc', await connectNode(`webrtc://${base}`), seed + 2, now);
    const websocket = addPlayer('websocket', await connectNode(`ws://${base}`), seed + 3, now);
    const players = [udp, webrtc, websocket];
    const msg = (p: Player) => `seed ${seed}, ${p.name} client`;
    const allConnected = () => players.every((p) => p.client.state === 'connected' && p.client.isSpawned);
    expect(await runUntil(server, players, allConnected, 10_000), `seed ${seed}`).toBe(true);
    await run(server, players, 300);
    const wsAddress = server.clients[websocket.client.slot]!.address;
    expect(multi.hostOf(wsAddress), `seed ${seed}`).toBe('ws:127.0.0.1');
    expect(links(), `seed ${seed}`).toEqual([1, 1]);

    // The ban kicks the WebSocket client at once: its slot and its socket are free before the
    // server runs again, and the client reads why before its connection ends.
    server.ban('ws:127.0.0.1');
    expect(ended, `seed ${seed}`).toEqual([{ reason: DISCONNECT_KICKED, links: [0, 1] }]);
    expect(server.clientCount, `seed ${seed}`).toBe(2);
    expect(multi.hostOf(wsAddress), `seed ${seed}`).toBeNull();
    const kicked = () => websocket.client.state === 'disconnected';
    expect(await runUntil(server, players, kicked, 3000), msg(websocket)).toBe(true);
    expect(websocket.client.endReason, msg(websocket)).toBe(DISCONNECT_KICKED);
    expect(await until(() => linkEnded(websocket.endpoint), 3000), msg(websocket)).toBe(true);
    websocket.active = false;

    // It comes back on a new socket (a new ws:N address, the same host): refused as banned.
    const again = addPlayer(
      'websocket again',
      await connectNode(`ws://${base}`),
      seed + 4,
      performance.now(),
    );
    players.push(again);
    const refused = () => again.client.state === 'refused';
    expect(await runUntil(server, players, refused, 5000), msg(again)).toBe(true);
    expect(again.client.endReason, msg(again)).toBe(REFUSE_BANNED);
    expect(server.clientCount, `seed ${seed}`).toBe(2);
    // Refusing a banned host also ends its link: it cannot hold sockets open by retrying.
    expect(links()[0], `seed ${seed}`).toBe(0);
    again.active = false;

    // The UDP and WebRTC clients (same IP, other transports) play on.
    const framesBefore = [udp, webrtc].map((p) => p.client.snapshots.stats.framesRead);
    await run(server, players, 1000);
    for (const [i, p] of [udp, webrtc].entries()) {
      expect(p.client.state, msg(p)).toBe('connected');
      expect(p.client.predictor.stats.corrections, msg(p)).toBe(0);
      expect(p.client.snapshots.stats.framesRead, msg(p)).toBeGreaterThan(framesBefore[i] + 10);
      expect(othersOf(server, p, players), msg(p)).toHaveLength(1);
    }

    // The WebRTC client leaves: its link is gone when the server lets it go, and the client sees
    // its channel close soon after (not after the link's 30 s of silence).
    webrtc.client.disconnect();
    const left = () => ended.length === 2;
    expect(await runUntil(server, players, left, 3000), msg(webrtc)).toBe(true);
    expect(ended[1], msg(webrtc)).toEqual({ reason: DISCONNECT_CLIENT_LEFT, links: [0, 0] });
    expect(await until(() => linkEnded(webrtc.endpoint), 3000), msg(webrtc)).toBe(true);
    expect(udp.client.state, msg(udp)).toBe('connected');
    server.close();
    await multi.close();
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

  close(): void | Promise<void> {
    return this.inner.close();
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
    // Forged responses are turned away by their cookie, or before any hashing by the server-wide
    // handshake allowance once the flood has spent it.
    expect((rejected['bad cookie'] ?? 0) + (rejected['handshake rate'] ?? 0), msg).toBeGreaterThan(
      responses / 2,
    );
    expect(rejected['bad cookie'] ?? 0, msg).toBeGreaterThan(0);
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

/** A Node program (run by `node --import tsx`) that plays briefly over all three transports, then closes everything it opened and ends without process.exit(). */
const EXITING_PROGRAM = `
import { arenaGame } from ${JSON.stringify(fileURLToPath(new URL('../../games/arena/shared/game.ts', import.meta.url)))};
import { createInputSample, GameClient } from ${JSON.stringify(fileURLToPath(new URL('../../src/client/client.ts', import.meta.url)))};
import { closeWebRtc, connectNode, listen } from ${JSON.stringify(fileURLToPath(new URL('../../src/node.ts', import.meta.url)))};
import { GameServer } from ${JSON.stringify(fileURLToPath(new URL('../../src/server/server.ts', import.meta.url)))};
const multi = await listen({ webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] } });
const server = new GameServer(arenaGame, multi, { cookieSecret: new Uint8Array(32).fill(7) });
const base = '127.0.0.1:' + multi.port;
const endpoints = [];
for (const scheme of ['udp', 'webrtc', 'ws']) endpoints.push(await connectNode(scheme + '://' + base));
const clients = endpoints.map((e, i) => new GameClient(arenaGame, e, e.serverAddress, { seed: i + 1 }));
const input = createInputSample();
for (const c of clients) c.connect(performance.now());
async function runUntil(condition) {
  const end = performance.now() + 10000;
  while (!condition() && performance.now() < end) {
    const now = performance.now();
    server.update(now);
    for (const c of clients) c.update(now, input);
    await new Promise((resolve) => setTimeout(resolve, 4));
  }
}
await runUntil(() => clients.every((c) => c.state === 'connected'));
const connected = server.clientCount;
for (const c of clients) c.disconnect();
await runUntil(() => server.clientCount === 0);
await Promise.all(endpoints.map((e) => e.close()));
server.close();
await multi.close();
closeWebRtc();
process.stdout.write('connected ' + connected + ', left ' + server.clientCount + '\\n');
`;

describe('a Node process', () => {
  it('that plays over UDP, WebRTC and WebSocket and closes what it opened exits on its own', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const child = spawn(
      process.execPath,
      ['--conditions=backstep-source', '--import', 'tsx', '--input-type=module', '-e', EXITING_PROGRAM],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    let exitCode: number | null = null;
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code) => {
        exitCode = code;
        resolve();
      }),
    );
    onCleanup(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    // A process that keeps a socket or a timer open never exits: it is killed after the cleanups above.
    const ended = await until(() => child.exitCode !== null || child.signalCode !== null, 60_000);
    expect(ended, `still running after 60 s; output: ${output}`).toBe(true);
    await exited;
    expect(exitCode, output).toBe(0);
    expect(output).toBe('connected 3, left 0\n');
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
