// Helpers for the real-transport tests on 127.0.0.1: polling in real time until datagrams arrive, an HTTP server to upgrade from, raw sockets that send what an endpoint never would, and one list of cleanups that closes everything a test opened.

import http from 'node:http';
import { WebSocket } from 'ws';
import type { PacketHandler } from '../../../src/net/transport.ts';

export interface Received {
  from: string;
  data: Uint8Array;
}

export interface Pollable {
  poll(nowMs: number, onPacket: PacketHandler): void;
}

const cleanups: (() => Promise<void> | void)[] = [];

/** Registers something to close after the test (closed in reverse order by closeAll). */
export function onCleanup(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

/** Closes everything registered, newest first, waiting for each; give it to afterEach. */
export async function closeAll(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** Sleeps `ms` of real time. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `endpoint` in real time until `count` datagrams arrived or `timeoutMs` passed; copies each. */
export async function receive(endpoint: Pollable, count: number, timeoutMs = 5000): Promise<Received[]> {
  const got: Received[] = [];
  const start = performance.now();
  while (got.length < count && performance.now() - start < timeoutMs) {
    endpoint.poll(performance.now(), (from, data) => got.push({ from, data: data.slice() }));
    if (got.length < count) await sleep(5);
  }
  return got;
}

/** Waits in real time until `condition` holds or `timeoutMs` passed; returns whether it holds. */
export async function until(condition: () => boolean, timeoutMs = 5000): Promise<boolean> {
  const start = performance.now();
  while (!condition() && performance.now() - start < timeoutMs) await sleep(5);
  return condition();
}

/** `length` bytes that differ with `seed`. */
export function pattern(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (seed + i * 31) & 0xff;
  return bytes;
}

/** An HTTP server on 127.0.0.1 at a free port answering 404, closed after the test (its connections cut). */
export async function listenHttp(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((_request, response) => {
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

/**
 * A raw `ws` socket to `url`, open, with a promise of the code it closes with; cut after the
 * test. Rejects if it cannot open (e.g. refused with 503).
 */
export async function rawWebSocket(
  url: string,
  localAddress?: string,
): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(url, localAddress === undefined ? {} : { localAddress });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  onCleanup(async () => {
    ws.terminate();
    await closed;
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, closed };
}
