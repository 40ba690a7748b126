// The WebSocket transport on 127.0.0.1 (server: `ws` on an HTTP server; client: the browser-safe endpoint given `ws`'s WebSocket): the shared link-server suite, hostile sockets on both sides, limits and options.

import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import { hostGroup, remoteHost } from '../../../src/net/transports/link-server.ts';
import {
  WebSocketServerEndpoint,
  type WebSocketServerOptions,
} from '../../../src/net/transports/websocket.ts';
import { WebSocketClientEndpoint } from '../../../src/net/transports/websocket-client.ts';
import { describeLinkServer } from './link-server.ts';
import { closeAll, listenHttp, onCleanup, rawWebSocket, receive, until } from './loopback.ts';

afterEach(closeAll);

async function setup(
  options: WebSocketServerOptions = {},
): Promise<{ server: WebSocketServerEndpoint; url: string }> {
  const { server: httpServer, port } = await listenHttp();
  const server = new WebSocketServerEndpoint(options);
  server.attach(httpServer);
  onCleanup(() => server.close());
  return { server, url: `ws://127.0.0.1:${port}/ws` };
}

async function connect(url: string): Promise<WebSocketClientEndpoint> {
  const client = await WebSocketClientEndpoint.connect({ url, WebSocket });
  onCleanup(() => client.close());
  return client;
}

describe('WebSocket transport', () => {
  it('closes only the socket that sends an oversize or text message, counting it', async () => {
    const { server, url } = await setup();
    const good = await connect(url);
    const big = await rawWebSocket(url);
    big.ws.send(new Uint8Array(MAX_PACKET_BYTES + 1));
    expect(await big.closed).toBe(1009);
    const text = await rawWebSocket(url);
    text.ws.send('hello');
    expect(await text.closed).toBe(1003);
    server.poll(performance.now(), () => {});
    expect(server.stats.closedOversize).toBe(1);
    expect(server.stats.droppedOversizeReceived).toBe(1);
    expect(server.stats.closedBadMessage).toBe(1);
    expect(server.stats.packetsReceived).toBe(0);
    good.send('server', new Uint8Array([42]));
    const got = await receive(server, 1);
    expect(got.map((r) => r.data[0])).toEqual([42]);
    expect(good.isOpen).toBe(true);
  });

  it('the client drops and counts oversize and text messages from a hostile server, and keeps the rest', async () => {
    const { server: httpServer, port } = await listenHttp();
    const hostile = new WebSocketServer({ server: httpServer });
    onCleanup(() => new Promise<void>((r) => hostile.close(() => r())));
    hostile.on('connection', (ws) => {
      ws.send(new Uint8Array(MAX_PACKET_BYTES + 1));
      ws.send('not a datagram');
      ws.send(new Uint8Array([7, 7]));
    });
    const client = await connect(`ws://127.0.0.1:${port}`);
    const got = await receive(client, 1);
    expect(got.map((r) => [r.from, [...r.data]])).toEqual([['server', [7, 7]]]);
    expect(client.stats.droppedOversizeReceived).toBe(1);
    expect(client.badMessages).toBe(1);
    expect(client.stats.packetsReceived).toBe(1);
    expect(client.isOpen).toBe(true);
  });

  it('at maxSockets closes the oldest socket not yet a connection for a new one, refuses one when all are connections, and upgrades on other paths', async () => {
    const { server, url } = await setup({ maxSockets: 2 });
    const a = await connect(url);
    const b = await connect(url);
    // Neither is a connection yet (established): a third socket takes the oldest one's room.
    const c = await connect(url);
    expect(await until(() => !a.isOpen)).toBe(true);
    expect(server.stats.closedEvicted).toBe(1);
    expect(b.isOpen && c.isOpen).toBe(true);
    // The engine takes both as connections: a fourth is refused.
    b.send('server', new Uint8Array([1]));
    c.send('server', new Uint8Array([2]));
    for (const got of await receive(server, 2)) server.established(got.from);
    await expect(WebSocketClientEndpoint.connect({ url, WebSocket })).rejects.toThrow(/WebSocket/);
    expect(server.stats.socketsRefused).toBe(1);
    expect(server.stats.closedEvicted).toBe(1);
    await expect(
      WebSocketClientEndpoint.connect({ url: url.replace('/ws', '/nope'), WebSocket }),
    ).rejects.toThrow(/WebSocket/);
    expect(server.socketCount).toBe(2);
  });

  it('closes a dropped socket normally (1000) after the datagrams sent before, and frees its room at once', async () => {
    const { server, url } = await setup({ maxSockets: 1 });
    const client = await connect(url);
    client.send('server', new Uint8Array([1]));
    const [first] = await receive(server, 1);
    for (let i = 0; i < 50; i++) server.send(first.from, new Uint8Array(MAX_PACKET_BYTES).fill(i));
    server.drop(first.from);
    expect(server.socketCount).toBe(0);
    // The socket still finishes its closing handshake, but takes no room: the next one gets in.
    const next = await connect(url);
    expect(server.socketCount).toBe(1);
    const got = await receive(client, 50);
    expect(got.map((r) => r.data[0])).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(await until(() => client.closeCode !== 0)).toBe(true);
    expect(client.closeCode).toBe(1000);
    expect(client.isOpen).toBe(false);
    expect(await until(() => server.stats.socketsClosed === 1)).toBe(true);
    expect(next.isOpen).toBe(true);
  });

  it('keys hosts as plain IPv4 whether the listener is IPv4 or dual-stack', () => {
    expect(remoteHost('127.0.0.1')).toBe('127.0.0.1');
    expect(remoteHost('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(remoteHost('::ffff:7f00:1')).toBe('::ffff:7f00:1');
    expect(remoteHost('2001:db8::1')).toBe('2001:db8::1');
    expect(remoteHost(undefined)).toBe('');
  });

  it('counts an IPv6 host by its /64 for the per-host limits (one subscriber can take any address in it)', () => {
    expect(hostGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(hostGroup('2001:DB8:1:2:ffff::1')).toBe('2001:db8:1:2::/64');
    expect(hostGroup('2001:0db8:0001:0002::')).toBe('2001:db8:1:2::/64');
    expect(hostGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(hostGroup('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(hostGroup('::1')).toBe('0:0:0:0::/64');
    expect(hostGroup('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(hostGroup('203.0.113.9')).toBe('203.0.113.9');
    // Not an address: kept as it is (counted on its own).
    for (const odd of ['1:2:3', '1::2::3', 'g::1', '1:2:3:4:5:6:7:8:9', '']) expect(hostGroup(odd)).toBe(odd);
  });

  it('names the bad option, before opening anything', async () => {
    expect(() => new WebSocketServerEndpoint({ maxSockets: 0 })).toThrow(/maxSockets/);
    expect(() => new WebSocketServerEndpoint({ answerTimeoutMs: -1 })).toThrow(/answerTimeoutMs/);
    expect(() => new WebSocketServerEndpoint({ idleTimeoutMs: Number.NaN })).toThrow(/idleTimeoutMs/);
    expect(() => new WebSocketServerEndpoint({ queueCapacity: 0 })).toThrow(/queueCapacity/);
    expect(() => new WebSocketServerEndpoint({ maxBufferedBytes: 0.5 })).toThrow(/maxBufferedBytes/);
    expect(() => new WebSocketServerEndpoint({ path: 'ws' })).toThrow(/path/);
    let constructed = 0;
    const Counting = class extends WebSocket {
      constructor(url: string) {
        super(url);
        constructed++;
      }
    };
    const url = 'ws://127.0.0.1:9/ws';
    for (const [option, bad] of [
      ['connectTimeoutMs', { connectTimeoutMs: 0 }],
      ['queueCapacity', { queueCapacity: 70_000 }],
      ['maxBufferedBytes', { maxBufferedBytes: -1 }],
    ] as const) {
      await expect(WebSocketClientEndpoint.connect({ url, WebSocket: Counting, ...bad })).rejects.toThrow(
        new RegExp(`WebSocketClientEndpoint: ${option}`),
      );
    }
    expect(constructed).toBe(0);
  });
});

describeLinkServer({
  name: 'WebSocket',
  prefix: 'ws',
  start: ({ maxPerHost, ...options }) => setup({ ...options, maxSocketsPerHost: maxPerHost }),
  connect,
  links: (server) => server.socketCount,
});
