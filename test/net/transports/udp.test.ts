// The UDP transport on 127.0.0.1: datagrams both ways, oversize and unroutable sends, a 1000-datagram burst, a full queue, closing.

import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import { parseUdpAddress, UdpEndpoint } from '../../../src/net/transports/udp.ts';
import { closeAll, onCleanup, pattern, receive, sleep } from './loopback.ts';

afterEach(closeAll);

async function open(options: Parameters<typeof UdpEndpoint.open>[0] = {}): Promise<UdpEndpoint> {
  const endpoint = await UdpEndpoint.open(options);
  onCleanup(() => endpoint.close());
  return endpoint;
}

describe('parseUdpAddress', () => {
  it('reads udp:IP:PORT and refuses anything else', () => {
    expect(parseUdpAddress('udp:127.0.0.1:4000')).toEqual({ ip: '127.0.0.1', port: 4000 });
    for (const bad of [
      '',
      'udp:',
      '127.0.0.1:4000',
      'ws:1',
      'udp:127.0.0.1',
      'udp:127.0.0.1:0',
      'udp:127.0.0.1:65536',
      'udp:127.0.0.1:40a0',
      'udp:256.0.0.1:4000',
      'udp:1.2.3:4000',
      'udp::4000',
      'udp:host:4000',
    ]) {
      expect(parseUdpAddress(bad), bad).toBeNull();
    }
  });
});

describe('UdpEndpoint', () => {
  it('names the host behind an address, "udp:IP" for every port of it, and null for anything else', async () => {
    const endpoint = await open();
    expect(endpoint.hostOf('udp:203.0.113.9:4000')).toBe('udp:203.0.113.9');
    expect(endpoint.hostOf('udp:203.0.113.9:4001')).toBe('udp:203.0.113.9');
    expect(endpoint.hostOf(endpoint.address)).toBe('udp:127.0.0.1');
    for (const bad of ['', 'ws:1', 'rtc:2', 'udp:127.0.0.1', 'udp:999.0.0.1:5', 'udp:127.0.0.1:0']) {
      expect(endpoint.hostOf(bad), bad).toBeNull();
    }
  });

  it('carries datagrams both ways with exact bytes and addresses', async () => {
    const server = await open();
    const client = await open();
    expect(server.address).toMatch(/^udp:127\.0\.0\.1:\d+$/);
    expect(server.recvBufferBytes).toBeGreaterThanOrEqual(1024 * 1024);
    const sizes = [1, 48, 500, MAX_PACKET_BYTES];
    for (let i = 0; i < sizes.length; i++) client.send(server.address, pattern(sizes[i], i));
    const atServer = await receive(server, sizes.length);
    expect(atServer.map((r) => r.data.length)).toEqual(sizes);
    for (let i = 0; i < sizes.length; i++) {
      expect(atServer[i].from).toBe(client.address);
      expect(atServer[i].data).toEqual(pattern(sizes[i], i));
    }
    server.send(client.address, pattern(700, 9));
    const atClient = await receive(client, 1);
    expect(atClient).toHaveLength(1);
    expect(atClient[0].from).toBe(server.address);
    expect(atClient[0].data).toEqual(pattern(700, 9));
    expect(client.stats.packetsSent).toBe(sizes.length);
    expect(server.stats.packetsReceived).toBe(sizes.length);
  });

  it('copies the bytes on send: reusing the buffer at once changes nothing', async () => {
    const server = await open();
    const client = await open();
    const scratch = new Uint8Array(64);
    for (let i = 0; i < 50; i++) {
      scratch.fill(i);
      client.send(server.address, scratch);
    }
    scratch.fill(255);
    const got = await receive(server, 50);
    expect(got.map((r) => r.data[0])).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it('drops and counts oversize datagrams both ways, and sends to addresses it cannot route', async () => {
    const server = await open();
    const client = await open();
    client.send(server.address, new Uint8Array(MAX_PACKET_BYTES + 1));
    expect(client.stats.droppedOversize).toBe(1);
    client.send('ws:1', new Uint8Array(10));
    client.send('udp:999.0.0.1:5', new Uint8Array(10));
    expect(client.stats.droppedNoRoute).toBe(2);
    expect(client.stats.packetsSent).toBe(0);
    // A raw socket sends a datagram the endpoint must refuse, then a good one.
    const raw = dgram.createSocket('udp4');
    onCleanup(() => new Promise<void>((r) => raw.close(() => r())));
    await new Promise<void>((r) => raw.bind(0, '127.0.0.1', r));
    const port = server.port;
    await new Promise<void>((r) => raw.send(Buffer.alloc(1500, 1), port, '127.0.0.1', () => r()));
    await new Promise<void>((r) => raw.send(Buffer.alloc(10, 2), port, '127.0.0.1', () => r()));
    const got = await receive(server, 1);
    expect(got.map((r) => r.data.length)).toEqual([10]);
    expect(server.stats.droppedOversizeReceived).toBe(1);
  });

  it('receives a burst of 1000 datagrams without loss, in order', async () => {
    const server = await open();
    const client = await open();
    const payload = new Uint8Array(MAX_PACKET_BYTES);
    const view = new DataView(payload.buffer);
    for (let i = 0; i < 1000; i++) {
      view.setUint32(0, i, true);
      client.send(server.address, payload);
    }
    const got = await receive(server, 1000, 10_000);
    expect(got.length).toBe(1000);
    expect(server.stats.droppedQueueFull).toBe(0);
    let inOrder = 0;
    for (let i = 0; i < got.length; i++) {
      if (new DataView(got[i].data.buffer).getUint32(0, true) === i) inOrder++;
    }
    expect(inOrder).toBe(1000);
  });

  it('keeps at most queueCapacity datagrams between polls and counts the rest', async () => {
    const server = await open({ queueCapacity: 16 });
    const client = await open();
    for (let i = 0; i < 100; i++) client.send(server.address, pattern(20, i));
    // Wait for every datagram to have arrived (the socket reads them into the queue), then poll once.
    const start = performance.now();
    while (server.stats.droppedQueueFull < 84 && performance.now() - start < 5000) {
      await sleep(5);
    }
    const got: number[] = [];
    server.poll(performance.now(), (_from, data) => got.push(data[0]));
    expect(got).toEqual(Array.from({ length: 16 }, (_, i) => pattern(20, i)[0]));
    expect(server.stats.droppedQueueFull).toBe(84);
  });

  it('closes cleanly: close resolves, then nothing is sent or delivered and the port is free again', async () => {
    const server = await open();
    const client = await open();
    const port = server.port;
    client.send(server.address, pattern(10, 1));
    await sleep(50);
    await server.close();
    expect(server.isOpen).toBe(false);
    let delivered = 0;
    server.poll(performance.now(), () => delivered++);
    server.send(client.address, pattern(10, 2));
    expect(delivered).toBe(0);
    expect(server.stats.packetsSent).toBe(0);
    await server.close();
    const again = await open({ port });
    expect(again.port).toBe(port);
  });

  it('names the bad option', async () => {
    await expect(UdpEndpoint.open({ port: 70000 })).rejects.toThrow(/port/);
    await expect(UdpEndpoint.open({ host: 'localhost' })).rejects.toThrow(/host/);
    await expect(UdpEndpoint.open({ recvBufferBytes: 0 })).rejects.toThrow(/recvBufferBytes/);
    await expect(UdpEndpoint.open({ queueCapacity: 0 })).rejects.toThrow(/queueCapacity/);
  });
});
