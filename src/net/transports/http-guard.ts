// Bounds on the HTTP surface of a game server (Node only): the TCP connections that carry the
// page, WebRTC signalling and WebSocket upgrades are state the server keeps before any challenge,
// so their number is capped in all and per remote host, and a connection that is slow to send
// its request (slow headers) or its body is closed within seconds instead of Node's defaults.
//
// A connection over its host's cap is destroyed at once, before Node parses a byte of it. At the
// total cap, the oldest connection that has not yet sent a whole request (the kind a slow-header
// flood holds open) makes room for the new one, or else the one idle longest between requests (a
// kept-alive connection with no request in flight: the kind a flood of cheap requests every few
// seconds holds open), so a flood from many hosts cannot shut the door on a real client; only
// when every connection is upgraded or busy with a request is the newcomer refused. Every
// closed connection is counted by reason. Upgraded sockets (WebSocket, signalling) keep counting
// against the caps while they live: the link servers have their own limits on top.

import type http from 'node:http';
import type { Socket } from 'node:net';
import { hostGroup, remoteHost } from './link-server.ts';

export interface HttpGuardOptions {
  /** Most open TCP connections in all (default 2048). */
  maxConnections?: number;
  /** Most open TCP connections from one remote IP address (default 64). */
  maxConnectionsPerHost?: number;
  /** A request's headers must arrive within this long of the connection (default 5000 ms). */
  headersTimeoutMs?: number;
  /** A whole request must arrive within this long (default 10 000 ms). */
  requestTimeoutMs?: number;
  /** An idle kept-alive connection is closed after this long (default 5000 ms). */
  keepAliveTimeoutMs?: number;
}

/** What the guard has refused and closed. */
export interface HttpGuardStats {
  /** Connections open now. */
  open: number;
  /** Connections destroyed on arrival: over maxConnections, or over maxConnectionsPerHost. */
  refusedTotal: number;
  refusedPerHost: number;
  /** Connections without a whole request closed to make room at maxConnections. */
  evicted: number;
  /** Kept-alive connections idle between requests closed to make room at maxConnections. */
  evictedIdle: number;
  /** Connections closed for slow headers or a slow request (408), or a malformed request (400). */
  timedOut: number;
  badRequests: number;
}

/** The http.createServer options that make Node enforce the timeouts, checked every quarter second. */
export function guardedServerOptions(options: HttpGuardOptions): http.ServerOptions {
  const headersTimeout = options.headersTimeoutMs ?? 5000;
  const requestTimeout = options.requestTimeoutMs ?? 10_000;
  checkMs('headersTimeoutMs', headersTimeout);
  checkMs('requestTimeoutMs', requestTimeout);
  if (requestTimeout < headersTimeout) {
    throw new RangeError(
      `HTTP guard: requestTimeoutMs (${requestTimeout}) must be at least headersTimeoutMs (${headersTimeout})`,
    );
  }
  const keepAliveTimeout = options.keepAliveTimeoutMs ?? 5000;
  checkMs('keepAliveTimeoutMs', keepAliveTimeout);
  return {
    headersTimeout,
    requestTimeout,
    keepAliveTimeout,
    connectionsCheckingInterval: Math.min(250, headersTimeout),
  };
}

/**
 * Caps `server`'s connections in all and per remote host, and counts what Node's timeouts close
 * (create the server with `guardedServerOptions`). Returns the live counters.
 */
export function guardHttpServer(server: http.Server, options: HttpGuardOptions = {}): HttpGuardStats {
  const maxConnections = options.maxConnections ?? 2048;
  const maxPerHost = options.maxConnectionsPerHost ?? 64;
  checkCount('maxConnections', maxConnections);
  checkCount('maxConnectionsPerHost', maxPerHost);
  const stats: HttpGuardStats = {
    open: 0,
    refusedTotal: 0,
    refusedPerHost: 0,
    evicted: 0,
    evictedIdle: 0,
    timedOut: 0,
    badRequests: 0,
  };
  const perHost = new Map<string, number>();
  /** Connections that have not sent a whole request yet, oldest first (a Set keeps insertion order). */
  const waiting = new Set<Socket>();
  /** Kept-alive connections between requests (not upgraded, no request in flight), idle longest first. */
  const idle = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    const host = hostGroup(remoteHost(socket.remoteAddress));
    const fromHost = perHost.get(host) ?? 0;
    if (fromHost >= maxPerHost) {
      stats.refusedPerHost++;
      socket.destroy();
      return;
    }
    if (stats.open >= maxConnections) {
      const oldest = waiting.values().next();
      const longestIdle = idle.values().next();
      if (oldest.done !== true) {
        waiting.delete(oldest.value);
        stats.evicted++;
        oldest.value.destroy();
      } else if (longestIdle.done !== true) {
        idle.delete(longestIdle.value);
        stats.evictedIdle++;
        longestIdle.value.destroy();
      } else {
        stats.refusedTotal++;
        socket.destroy();
        return;
      }
    }
    stats.open++;
    perHost.set(host, fromHost + 1);
    waiting.add(socket);
    socket.once('close', () => {
      waiting.delete(socket);
      idle.delete(socket);
      stats.open--;
      const left = (perHost.get(host) ?? 1) - 1;
      if (left > 0) perHost.set(host, left);
      else perHost.delete(host);
    });
  });
  // A whole request (or an upgrade) arrived: the connection is no longer one a slow-header flood
  // holds open; it is busy until its response has gone, then idle until its next request.
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket as Socket;
    waiting.delete(socket);
    idle.delete(socket);
    response.once('finish', () => {
      if (!socket.destroyed) idle.add(socket);
    });
  });
  server.on('upgrade', (request: http.IncomingMessage) => {
    waiting.delete(request.socket as Socket);
    idle.delete(request.socket as Socket);
  });
  // A request that missed headersTimeout or requestTimeout gets 408, a malformed one 400; both close.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (timedOut) stats.timedOut++;
    else stats.badRequests++;
    if (socket.writable) {
      socket.end(
        timedOut
          ? 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n'
          : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n',
      );
    }
    socket.destroy();
  });
  return stats;
}

function checkMs(field: string, value: number): void {
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(`HTTP guard: ${field} must be a positive number of milliseconds, got ${value}`);
  }
}

function checkCount(field: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`HTTP guard: ${field} must be a positive integer, got ${value}`);
  }
}
