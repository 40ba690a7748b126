// The every-transport server endpoint on 127.0.0.1: hostOf and drop go to the transport an address's prefix names.

import { createConnection, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PipeClientEndpoint } from '../../../src/net/transports/pipe-client.ts';
import { type ConnectedEndpoint, closeWebRtc, connectNode, listen } from '../../../src/node.ts';
import { closeAll, onCleanup, receive, until } from './loopback.ts';

afterEach(closeAll);

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

/** Whether a WebSocket or WebRTC client's link has ended. */
function linkEnded(client: ConnectedEndpoint): boolean {
  return client instanceof PipeClientEndpoint && !client.isOpen;
}

describe('MultiTransportServer', () => {
  it('routes hostOf and drop by address prefix: UDP has no link to drop, WebSocket and WebRTC links close', async () => {
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    });
    onCleanup(() => multi.close());
    const base = `127.0.0.1:${multi.port}`;
    const clients: ConnectedEndpoint[] = [];
    for (const scheme of ['udp', 'ws', 'webrtc']) {
      const client = await connectNode(`${scheme}://${base}`);
      onCleanup(() => client.close());
      clients.push(client);
    }
    clients.forEach((client, i) => {
      client.send(client.serverAddress, new Uint8Array([i]));
    });
    const got = await receive(multi, 3);
    const [udp, ws, rtc] = [0, 1, 2].map((i) => got.find((r) => r.data[0] === i)!.from);
    expect([udp, ws, rtc].map((a) => a.split(':')[0])).toEqual(['udp', 'ws', 'rtc']);
    expect(multi.hostOf(udp)).toBe('udp:127.0.0.1');
    expect(multi.hostOf(ws)).toBe('ws:127.0.0.1');
    expect(multi.hostOf(rtc)).toBe('rtc:127.0.0.1');
    for (const unknown of ['ws:999', 'rtc:999', 'tcp:127.0.0.1:80', '']) {
      expect(multi.hostOf(unknown), unknown).toBeNull();
    }

    multi.drop(udp);
    multi.drop(ws);
    multi.drop(rtc);
    expect(multi.websocket.socketCount).toBe(0);
    expect(multi.webrtc.peerCount).toBe(0);
    expect(multi.hostOf(ws)).toBeNull();
    expect(multi.hostOf(rtc)).toBeNull();
    expect(await until(() => linkEnded(clients[1]) && linkEnded(clients[2]))).toBe(true);
    expect(multi.websocket.stats.closedDropped).toBe(1);
    expect(multi.webrtc.stats.closedDropped).toBe(1);
    // UDP is connectionless: the address still routes.
    multi.send(udp, new Uint8Array([5]));
    expect((await receive(clients[0], 1)).map((r) => [...r.data])).toEqual([[5]]);
  });
});

/** When each slow socket closed (Date.now()), recorded from the moment it is made. */
const closedAt = new WeakMap<Socket, Promise<number>>();

/** Opens a TCP connection from `localAddress` that sends half a request line and then nothing. */
function slowHeaders(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port, localAddress }, () => {
      socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      socket.resume(); // read what the server answers, so its close is seen
      resolve(socket);
    });
    closedAt.set(socket, new Promise((done) => socket.once('close', () => done(Date.now()))));
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

/**
 * Opens a kept-alive TCP connection from `localAddress` and makes one whole request on it; resolves
 * once the answer has come (the connection then idles between requests).
 */
function keptAlive(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port, localAddress }, () => {
      socket.write('GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    });
    socket.once('data', () => resolve(socket));
    closedAt.set(socket, new Promise((done) => socket.once('close', () => done(Date.now()))));
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

describe('MultiTransportServer HTTP surface', () => {
  it('at the connection cap closes the kept-alive connection idle longest, so cheap requests cannot hold every connection', async () => {
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
      http: { maxConnectionsPerHost: 40, maxConnections: 60, keepAliveTimeoutMs: 30_000 },
    });
    onCleanup(() => multi.close());
    // 60 connections from 127.0.0.2 and 127.0.0.3, each past one whole request and kept alive.
    const held: Socket[] = [];
    for (let i = 0; i < 60; i++) held.push(await keptAlive(multi.port, `127.0.0.${2 + (i % 2)}`));
    onCleanup(() => {
      for (const s of held) s.destroy();
    });
    expect(multi.httpStats.open).toBe(60);
    // A real client connects over WebSocket and is heard: the idle connection longest made room.
    const client = await connectNode(`ws://127.0.0.1:${multi.port}`);
    onCleanup(() => client.close());
    client.send(client.serverAddress, new Uint8Array([7]));
    expect((await receive(multi, 1)).map((r) => [...r.data])).toEqual([[7]]);
    expect(multi.httpStats.evictedIdle).toBe(1);
    expect(
      await Promise.race([closedAt.get(held[0]), new Promise((r) => setTimeout(() => r(null), 2000))]),
    ).not.toBeNull();
    expect(multi.httpStats.refusedTotal).toBe(0);
  });

  it('closes slow-header connections within the headers timeout, caps each host, and a real client connects meanwhile', async () => {
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
      http: {
        headersTimeoutMs: 1000,
        requestTimeoutMs: 2000,
        maxConnectionsPerHost: 40,
        maxConnections: 200,
      },
    });
    onCleanup(() => multi.close());
    // 300 slow connections from 10 other loopback hosts (127.0.0.2 .. 127.0.0.11), 30 each: past
    // the total cap of 200, each new one makes room by closing the oldest that sent no request.
    const slow: Socket[] = [];
    for (let h = 0; h < 10; h++) {
      for (let i = 0; i < 30; i++) slow.push(await slowHeaders(multi.port, `127.0.0.${h + 2}`));
    }
    onCleanup(() => {
      for (const s of slow) s.destroy();
    });
    const closed = slow.map((s) => closedAt.get(s) as Promise<number>);
    const start = Date.now();
    // Meanwhile a real client, from 127.0.0.1, connects over WebSocket and is heard.
    const client = await connectNode(`ws://127.0.0.1:${multi.port}`);
    onCleanup(() => client.close());
    client.send(client.serverAddress, new Uint8Array([7]));
    expect((await receive(multi, 1)).map((r) => [...r.data])).toEqual([[7]]);
    // Every slow connection is closed by the server within the timeout and a check interval.
    const times = await Promise.all(closed);
    expect(Math.max(...times) - start).toBeLessThan(3000);
    // 100 evicted by the slow ones after them, one by the real client; the rest timed out.
    expect(multi.httpStats.evicted).toBe(101);
    expect(multi.httpStats.timedOut).toBe(199);
    expect(multi.httpStats.refusedTotal).toBe(0);
    // A host over its cap is refused at once.
    const burst: Socket[] = [];
    for (let i = 0; i < 45; i++) burst.push(await slowHeaders(multi.port, '127.0.0.20'));
    onCleanup(() => {
      for (const s of burst) s.destroy();
    });
    expect(await until(() => multi.httpStats.refusedPerHost === 5)).toBe(true);
    expect(client instanceof PipeClientEndpoint && client.isOpen).toBe(true);
  });

  it('refuses bad HTTP guard options, naming them', async () => {
    await expect(listen({ http: { headersTimeoutMs: 0 } })).rejects.toThrow(/headersTimeoutMs/);
    await expect(listen({ http: { headersTimeoutMs: 5000, requestTimeoutMs: 1000 } })).rejects.toThrow(
      /requestTimeoutMs/,
    );
    await expect(listen({ http: { maxConnectionsPerHost: 1.5 } })).rejects.toThrow(/maxConnectionsPerHost/);
  });
});
