// What the WebSocket and WebRTC transports both promise (a LinkServerEndpoint serving PipeClientEndpoints), as one suite that each transport's test file runs with its own harness.

import { describe, expect, it } from 'vitest';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import type { PipeClientEndpoint } from '../../../src/net/transports/pipe-client.ts';
import type { TransportStats } from '../../../src/net/transports/queue.ts';
import { type Received, rawWebSocket, receive, until } from './loopback.ts';

/** The server endpoint under test, as far as this suite looks at it. */
export interface LinkServer {
  readonly stats: TransportStats & {
    closedUnanswered: number;
    closedIdle: number;
    closedDropped: number;
    droppedRate: number;
    closedFlood: number;
    closedUnestablished: number;
  };
  established(address: string): void;
  send(to: string, data: Uint8Array): void;
  hostOf(address: string): string | null;
  drop(address: string): void;
  poll(nowMs: number, onPacket: (from: string, data: Uint8Array) => void): void;
  close(): Promise<void>;
}

export interface LinkServerOptions {
  answerTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** The transport's per-host limit (maxSocketsPerHost, maxPeersPerHost). */
  maxPerHost?: number;
  maxDatagramsPerSecond?: number;
  establishTimeoutMs?: number;
}

export interface LinkServerHarness<S extends LinkServer> {
  /** The transport's name, for the suite's title. */
  name: string;
  /** Its links' address prefix ("ws", "rtc"). */
  prefix: string;
  /** Starts a server on a fresh HTTP server, both closed after the test; resolves with the client URL. */
  start(options: LinkServerOptions): Promise<{ server: S; url: string }>;
  /** Connects a client, closed after the test. */
  connect(url: string): Promise<PipeClientEndpoint>;
  /** Links the server holds, connecting or open. */
  links(server: S): number;
}

/** Defines the suite for one transport. */
export function describeLinkServer<S extends LinkServer>(h: LinkServerHarness<S>): void {
  describe(`${h.name} transport: what every link server does`, () => {
    it(`carries datagrams both ways with exact bytes, each client at its own ${h.prefix}:N address`, async () => {
      const { server, url } = await h.start({});
      const a = await h.connect(url);
      const b = await h.connect(url);
      expect(a.isOpen).toBe(true);
      a.send('server', new Uint8Array([1, 2, 3]));
      b.send('server', new Uint8Array(MAX_PACKET_BYTES).fill(7));
      const got = await receive(server, 2);
      expect(got).toHaveLength(2);
      const fromA = got.find((r) => r.data.length === 3)!;
      const fromB = got.find((r) => r.data.length === MAX_PACKET_BYTES)!;
      expect(fromA.data).toEqual(new Uint8Array([1, 2, 3]));
      expect(fromB.data.every((v) => v === 7)).toBe(true);
      const address = new RegExp(`^${h.prefix}:\\d+$`);
      expect(fromA.from).toMatch(address);
      expect(fromB.from).toMatch(address);
      expect(fromA.from).not.toBe(fromB.from);
      expect(h.links(server)).toBe(2);
      const reply = new Uint8Array([9, 8, 7, 6]);
      server.send(fromA.from, reply);
      reply.fill(0);
      server.send(fromB.from, new Uint8Array([5]));
      const atA = await receive(a, 1);
      const atB = await receive(b, 1);
      expect(atA.map((r) => [r.from, [...r.data]])).toEqual([['server', [9, 8, 7, 6]]]);
      expect(atB.map((r) => [r.from, [...r.data]])).toEqual([['server', [5]]]);
      expect(server.stats.packetsSent).toBe(2);
      expect(server.stats.packetsReceived).toBe(2);
    });

    it('drops and counts oversize sends both ways, and sends with no route', async () => {
      const { server, url } = await h.start({});
      const client = await h.connect(url);
      client.send('server', new Uint8Array(MAX_PACKET_BYTES + 1));
      client.send('elsewhere', new Uint8Array(4));
      expect(client.stats.droppedOversize).toBe(1);
      expect(client.stats.droppedNoRoute).toBe(1);
      expect(client.stats.packetsSent).toBe(0);
      client.send('server', new Uint8Array([1]));
      const [first] = await receive(server, 1);
      server.send(first.from, new Uint8Array(MAX_PACKET_BYTES + 1));
      server.send(`${h.prefix}:999`, new Uint8Array(4));
      server.send('udp:127.0.0.1:9', new Uint8Array(4));
      expect(server.stats.droppedOversize).toBe(1);
      expect(server.stats.droppedNoRoute).toBe(2);
      expect(server.stats.packetsSent).toBe(0);
    });

    it('stops routing to a client that closed', async () => {
      const { server, url } = await h.start({});
      const client = await h.connect(url);
      client.send('server', new Uint8Array([1]));
      const [first] = await receive(server, 1);
      await client.close();
      expect(client.isOpen).toBe(false);
      expect(await until(() => h.links(server) === 0)).toBe(true);
      server.send(first.from, new Uint8Array([2]));
      expect(server.stats.droppedNoRoute).toBe(1);
      let delivered = 0;
      client.poll(performance.now(), () => delivered++);
      client.send('server', new Uint8Array([3]));
      expect(delivered).toBe(0);
      expect(client.stats.packetsSent).toBe(1);
    });

    it(`names the host behind a link, "${h.prefix}:127.0.0.1", while the link exists`, async () => {
      const { server, url } = await h.start({});
      const client = await h.connect(url);
      client.send('server', new Uint8Array([1]));
      const [first] = await receive(server, 1);
      expect(server.hostOf(first.from)).toBe(`${h.prefix}:127.0.0.1`);
      expect(server.hostOf(`${h.prefix}:999`)).toBeNull();
      expect(server.hostOf('udp:127.0.0.1:9')).toBeNull();
      expect(server.hostOf('')).toBeNull();
      await client.close();
      expect(await until(() => h.links(server) === 0)).toBe(true);
      expect(server.hostOf(first.from)).toBeNull();
    });

    it('drops a link the engine is done with: gone at once, its host has room again, closed after what was sent to it', async () => {
      const { server, url } = await h.start({ maxPerHost: 2 });
      const a = await h.connect(url);
      const b = await h.connect(url);
      a.send('server', new Uint8Array([1]));
      b.send('server', new Uint8Array([2]));
      const got = await receive(server, 2);
      const atA = got.find((r) => r.data[0] === 1)!.from;
      const atB = got.find((r) => r.data[0] === 2)!.from;
      // The engine's goodbye, then drop (as GameServer.disconnect does).
      server.send(atA, new Uint8Array([7, 7]));
      server.send(atA, new Uint8Array([8]));
      server.drop(atA);
      expect(h.links(server)).toBe(1);
      expect(server.stats.closedDropped).toBe(1);
      expect(server.hostOf(atA)).toBeNull();
      server.send(atA, new Uint8Array([9]));
      expect(server.stats.droppedNoRoute).toBe(1);
      server.drop(atA);
      server.drop(`${h.prefix}:999`);
      server.drop('udp:127.0.0.1:9');
      expect(server.stats.closedDropped).toBe(1);
      const goodbye = await receive(a, 2);
      expect(goodbye.map((r) => [...r.data]).sort((x, y) => y.length - x.length)).toEqual([[7, 7], [8]]);
      expect(await until(() => !a.isOpen)).toBe(true);
      // The host's room came back with the drop: a third link from it is not refused (429).
      const c = await h.connect(url);
      expect(h.links(server)).toBe(2);
      c.send('server', new Uint8Array([3]));
      b.send('server', new Uint8Array([4]));
      const after = await receive(server, 2);
      expect(after.map((r) => r.data[0]).sort()).toEqual([3, 4]);
      expect(after.find((r) => r.data[0] === 4)!.from).toBe(atB);
      server.send(atB, new Uint8Array([5]));
      expect((await receive(b, 1)).map((r) => [...r.data])).toEqual([[5]]);
      expect(b.isOpen).toBe(true);
    });

    it('close resolves after a link dropped just before it has closed', async () => {
      const { server, url } = await h.start({});
      const client = await h.connect(url);
      client.send('server', new Uint8Array([1]));
      const [first] = await receive(server, 1);
      server.send(first.from, new Uint8Array([2]));
      server.drop(first.from);
      await server.close();
      expect(await until(() => !client.isOpen)).toBe(true);
      server.drop(first.from);
      expect(server.stats.closedDropped).toBe(1);
    });

    it('closes links the engine never answers, and silent ones, by the engine time given to poll', async () => {
      const { server, url } = await h.start({ answerTimeoutMs: 1000, idleTimeoutMs: 3000 });
      const unanswered = await h.connect(url);
      const answered = await h.connect(url);
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
      server.send(got.find((r) => r.data[0] === 1)!.from, new Uint8Array([3]));
      server.poll(900, () => {});
      expect(h.links(server)).toBe(2);
      server.poll(1200, () => {});
      expect(server.stats.closedUnanswered).toBe(1);
      expect(h.links(server)).toBe(1);
      expect(await until(() => !unanswered.isOpen)).toBe(true);
      server.poll(2500, () => {});
      expect(h.links(server)).toBe(1);
      server.poll(3100, () => {});
      expect(server.stats.closedIdle).toBe(1);
      expect(h.links(server)).toBe(0);
      expect(await until(() => !answered.isOpen)).toBe(true);
    });

    it('closes a link the engine answers but never takes as a connection after establishTimeoutMs, and keeps one it takes', async () => {
      const { server, url } = await h.start({ establishTimeoutMs: 2000, idleTimeoutMs: 60_000 });
      const handshaking = await h.connect(url);
      const connected = await h.connect(url);
      handshaking.send('server', new Uint8Array([1]));
      connected.send('server', new Uint8Array([2]));
      const got: Received[] = [];
      await until(() => {
        server.poll(0, (from, data) => got.push({ from, data: data.slice() }));
        return got.length === 2;
      });
      expect(got).toHaveLength(2);
      // Both answered (as challenges answer connect requests); the engine takes one as a connection.
      for (const r of got) server.send(r.from, new Uint8Array([3]));
      server.established(got.find((r) => r.data[0] === 2)!.from);
      // Both keep sending, as a client retrying its handshake does.
      for (const at of [500, 1000, 1500, 1900]) {
        handshaking.send('server', new Uint8Array([1]));
        connected.send('server', new Uint8Array([2]));
        let arrived = 0;
        await until(() => {
          server.poll(at, () => arrived++);
          return arrived === 2;
        });
      }
      expect(h.links(server)).toBe(2);
      server.poll(2200, () => {});
      expect(server.stats.closedUnestablished).toBe(1);
      expect(h.links(server)).toBe(1);
      expect(await until(() => !handshaking.isOpen)).toBe(true);
      expect(connected.isOpen).toBe(true);
    });

    it('holds each link to maxDatagramsPerSecond and closes one that floods, while another link loses nothing', async () => {
      const { server, url } = await h.start({ maxDatagramsPerSecond: 100 });
      const honest = await h.connect(url);
      const flooder = await h.connect(url);
      const got: Received[] = [];
      // Engine time stands still at 1 s: no allowance refills during the test.
      const collect = () => server.poll(1000, (from, data) => got.push({ from, data: data.slice() }));
      collect();
      for (let i = 0; i < 300; i++) flooder.send('server', new Uint8Array([1, i & 0xff]));
      for (let i = 0; i < 20; i++) honest.send('server', new Uint8Array([2, i]));
      const fromHonest = () => got.filter((r) => r.data[0] === 2).length;
      const settled = await until(() => {
        collect();
        return fromHonest() === 20 && server.stats.closedFlood === 1 && !flooder.isOpen;
      });
      expect(settled, JSON.stringify(server.stats)).toBe(true);
      // A second's worth passed, a second's worth past it dropped, then the link was closed.
      expect(got.filter((r) => r.data[0] === 1)).toHaveLength(100);
      expect(server.stats.droppedRate).toBe(100);
      expect(server.stats.droppedQueueFull).toBe(0);
      expect(honest.isOpen).toBe(true);
    });

    it('refuses a host its links over the per-host limit (429), until one of them closes', async () => {
      const { server, url } = await h.start({ maxPerHost: 2 });
      const first = await h.connect(url);
      await h.connect(url);
      await expect(rawWebSocket(url)).rejects.toThrow(/429/);
      expect(h.links(server)).toBe(2);
      await first.close();
      expect(await until(() => h.links(server) === 1)).toBe(true);
      await h.connect(url);
      expect(h.links(server)).toBe(2);
    });

    it('closes cleanly: close resolves once every link is closed, clients see it, nothing is sent after', async () => {
      const { server, url } = await h.start({});
      const a = await h.connect(url);
      const b = await h.connect(url);
      await server.close();
      await server.close();
      expect(h.links(server)).toBe(0);
      expect(await until(() => !a.isOpen && !b.isOpen)).toBe(true);
      server.send(`${h.prefix}:1`, new Uint8Array([1]));
      expect(server.stats.packetsSent).toBe(0);
      await a.close();
      await a.close();
      await b.close();
    });
  });
}
