// The WebSocket transport on 127.0.0.1 (server: `ws` on an HTTP server; client: the browser-safe endpoint given `ws`'s WebSocket), and the shared datagram queue.

import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import {
  WebSocketServerEndpoint,
  type WebSocketServerOptions,
} from '../../../src/net/transports/websocket.ts';
import {
  createTransportStats,
  DatagramQueue,
  WebSocketClientEndpoint,
} from '../../../src/net/transports/websocket-client.ts';

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
    expect(stats.droppedQueueFull).toBe(2);
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

  it('names a bad capacity', () => {
    expect(() => new DatagramQueue(0, createTransportStats())).toThrow(/capacity/);
    expect(() => new DatagramQueue(1.5, createTransportStats())).toThrow(/capacity/);
  });
});

interface Setup {
  http: http.Server;
  server: WebSocketServerEndpoint;
  url: string;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: WebSocketServerOptions = {}): Promise<Setup> {
  const httpServer = http.createServer((_req, res) => {
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const server = new WebSocketServerEndpoint(options);
  server.attach(httpServer);
  const address = httpServer.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  cleanups.push(async () => {
    await server.close();
    await new Promise<void>((r) => {
      httpServer.close(() => r());
      httpServer.closeAllConnections();
    });
  });
  return { http: httpServer, server, url: `ws://127.0.0.1:${port}/ws` };
}

async function connect(url: string): Promise<WebSocketClientEndpoint> {
  const client = await WebSocketClientEndpoint.connect({ url, WebSocket });
  cleanups.push(() => client.close());
  return client;
}

interface Received {
  from: string;
  data: Uint8Array;
}

interface Pollable {
  poll(nowMs: number, onPacket: (from: string, data: Uint8Array) => void): void;
}

/** Polls in real time until `count` datagrams arrived or `timeoutMs` passed. */
async function receive(endpoint: Pollable, count: number, timeoutMs = 5000): Promise<Received[]> {
  const got: Received[] = [];
  const start = performance.now();
  while (got.length < count && performance.now() - start < timeoutMs) {
    endpoint.poll(performance.now(), (from, data) => got.push({ from, data: data.slice() }));
    if (got.length < count) await new Promise((r) => setTimeout(r, 5));
  }
  return got;
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<boolean> {
  const start = performance.now();
  while (!condition() && performance.now() - start < timeoutMs) await new Promise((r) => setTimeout(r, 5));
  return condition();
}

/** A raw `ws` socket, for sending what the endpoint would not. */
async function rawSocket(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  cleanups.push(async () => {
    if (ws.readyState !== ws.CLOSED) {
      const closed = new Promise<void>((r) => ws.once('close', () => r()));
      ws.terminate();
      await closed;
    }
  });
  return ws;
}

describe('WebSocket transport', () => {
  it('carries datagrams both ways, each client at its own ws:N address', async () => {
    const { server, url } = await setup();
    const a = await connect(url);
    const b = await connect(url);
    a.send('server', new Uint8Array([1, 2, 3]));
    b.send('server', new Uint8Array(MAX_PACKET_BYTES).fill(7));
    const got = await receive(server, 2);
    expect(got).toHaveLength(2);
    const fromA = got.find((r) => r.data.length === 3)!;
    const fromB = got.find((r) => r.data.length === MAX_PACKET_BYTES)!;
    expect(fromA.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(fromB.data.every((v) => v === 7)).toBe(true);
    expect(fromA.from).toMatch(/^ws:\d+$/);
    expect(fromB.from).toMatch(/^ws:\d+$/);
    expect(fromA.from).not.toBe(fromB.from);
    expect(server.socketCount).toBe(2);
    const reply = new Uint8Array([9, 8, 7, 6]);
    server.send(fromA.from, reply);
    reply.fill(0);
    server.send(fromB.from, new Uint8Array([5]));
    const atA = await receive(a, 1);
    const atB = await receive(b, 1);
    expect(atA.map((r) => [r.from, [...r.data]])).toEqual([['server', [9, 8, 7, 6]]]);
    expect(atB.map((r) => [r.from, [...r.data]])).toEqual([['server', [5]]]);
  });

  it('drops oversize sends, and closes only the socket that sends an oversize or text message', async () => {
    const { server, url } = await setup();
    const good = await connect(url);
    good.send('server', new Uint8Array(MAX_PACKET_BYTES + 1));
    good.send('elsewhere', new Uint8Array(4));
    expect(good.stats.droppedOversize).toBe(1);
    expect(good.stats.droppedNoRoute).toBe(1);
    const big = await rawSocket(url);
    const bigClosed = new Promise<number>((r) => big.once('close', (code) => r(code)));
    big.send(new Uint8Array(MAX_PACKET_BYTES + 1));
    expect(await bigClosed).toBe(1009);
    const text = await rawSocket(url);
    const textClosed = new Promise<number>((r) => text.once('close', (code) => r(code)));
    text.send('hello');
    expect(await textClosed).toBe(1003);
    server.poll(performance.now(), () => {});
    expect(server.stats.closedOversize).toBe(1);
    expect(server.stats.closedBadMessage).toBe(1);
    good.send('server', new Uint8Array([42]));
    const got = await receive(server, 1);
    expect(got.map((r) => r.data[0])).toEqual([42]);
    expect(good.isOpen).toBe(true);
  });

  it('stops routing to a closed socket', async () => {
    const { server, url } = await setup();
    const client = await connect(url);
    client.send('server', new Uint8Array([1]));
    const [first] = await receive(server, 1);
    await client.close();
    expect(await until(() => server.socketCount === 0)).toBe(true);
    server.send(first.from, new Uint8Array([2]));
    expect(server.stats.droppedNoRoute).toBe(1);
    expect(server.stats.socketsClosed).toBe(1);
  });

  it('refuses sockets over maxSockets and upgrades on other paths', async () => {
    const { server, url } = await setup({ maxSockets: 2 });
    await connect(url);
    await connect(url);
    await expect(WebSocketClientEndpoint.connect({ url, WebSocket })).rejects.toThrow(/WebSocket/);
    expect(server.stats.socketsRefused).toBe(1);
    await expect(
      WebSocketClientEndpoint.connect({ url: url.replace('/ws', '/nope'), WebSocket }),
    ).rejects.toThrow(/WebSocket/);
    expect(server.socketCount).toBe(2);
  });

  it('closes sockets the engine never answers, and silent ones, by the engine time given to poll', async () => {
    const { server, url } = await setup({ answerTimeoutMs: 1000, idleTimeoutMs: 3000 });
    const unanswered = await connect(url);
    const answered = await connect(url);
    answered.send('server', new Uint8Array([1]));
    unanswered.send('server', new Uint8Array([2]));
    // Engine time starts at 0 here, whatever the wall clock says.
    const got: Received[] = [];
    await until(() => {
      server.poll(0, (from, data) => got.push({ from, data: data.slice() }));
      return got.length === 2;
    });
    expect(got).toHaveLength(2);
    // The engine answers one of them (as GameServer answers a valid connection request).
    const answeredAddress = got.find((r) => r.data[0] === 1)!.from;
    server.send(answeredAddress, new Uint8Array([3]));
    server.poll(900, () => {});
    expect(server.socketCount).toBe(2);
    server.poll(1200, () => {});
    expect(server.stats.closedUnanswered).toBe(1);
    expect(server.socketCount).toBe(1);
    expect(await until(() => !unanswered.isOpen)).toBe(true);
    expect(unanswered.closeCode).toBe(1008);
    server.poll(2500, () => {});
    expect(server.socketCount).toBe(1);
    server.poll(3100, () => {});
    expect(server.stats.closedIdle).toBe(1);
    expect(server.socketCount).toBe(0);
    expect(await until(() => !answered.isOpen)).toBe(true);
  });

  it('closes cleanly: every client sees the server go away and close resolves', async () => {
    const { server, url } = await setup();
    const a = await connect(url);
    const b = await connect(url);
    await server.close();
    expect(await until(() => !a.isOpen && !b.isOpen)).toBe(true);
    expect(a.closeCode).toBe(1001);
    server.send('ws:1', new Uint8Array([1]));
    expect(server.stats.packetsSent).toBe(0);
    await a.close();
    await a.close();
  });

  it('names the bad option', () => {
    expect(() => new WebSocketServerEndpoint({ maxSockets: 0 })).toThrow(/maxSockets/);
    expect(() => new WebSocketServerEndpoint({ answerTimeoutMs: -1 })).toThrow(/answerTimeoutMs/);
    expect(() => new WebSocketServerEndpoint({ path: 'ws' })).toThrow(/path/);
  });
});
