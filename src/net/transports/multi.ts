// One server endpoint over every real transport at once (Node only): UDP, WebSocket and WebRTC on one port number.
//
// An HTTP server on TCP port P carries the WebSocket transport (path "/ws") and WebRTC
// signalling (path "/rtc"); any other HTTP request goes to `httpHandler` (404 by default). UDP
// binds the same port number P. Addresses keep their transport's prefix ("udp:", "ws:", "rtc:"),
// so send(), hostOf() and drop() route by prefix and the engine sees one DatagramEndpoint.

import http from 'node:http';
import type { DatagramEndpoint, PacketHandler } from '../transport.ts';
import {
  guardedServerOptions,
  guardHttpServer,
  type HttpGuardOptions,
  type HttpGuardStats,
} from './http-guard.ts';
import { routeUpgrades } from './link-server.ts';
import { UdpEndpoint, type UdpEndpointOptions } from './udp.ts';
import { WebRtcServerEndpoint, type WebRtcServerOptions } from './webrtc.ts';
import { WebSocketServerEndpoint, type WebSocketServerOptions } from './websocket.ts';

export interface MultiTransportOptions {
  /** Port for HTTP (TCP) and UDP alike; 0 (the default) picks one free for both. */
  port?: number;
  /** IPv4 address to listen on (default "127.0.0.1"). */
  host?: string;
  udp?: Omit<UdpEndpointOptions, 'host' | 'port'>;
  websocket?: WebSocketServerOptions;
  webrtc?: WebRtcServerOptions;
  /** Answers HTTP requests that are not upgrades (default: 404 to everything). */
  httpHandler?: (request: http.IncomingMessage, response: http.ServerResponse) => void;
  /** Caps on TCP connections (in all, per host) and HTTP timeouts (headers, request, keep-alive). */
  http?: HttpGuardOptions;
}

/** Attempts at finding a port number free for both TCP and UDP when the port is 0. */
const PORT_ATTEMPTS = 8;

function notFound(_request: http.IncomingMessage, response: http.ServerResponse): void {
  response.writeHead(404, { 'content-type': 'text/plain' });
  response.end('not found\n');
}

function listenHttp(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

function closeHttp(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A server endpoint over UDP, WebSocket and WebRTC; create it with MultiTransportServer.listen(). */
export class MultiTransportServer implements DatagramEndpoint {
  /** "multi:P". */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly httpServer: http.Server;
  /** TCP connections open, refused by the caps, and closed for slow or malformed requests. */
  readonly httpStats: HttpGuardStats;
  readonly udp: UdpEndpoint;
  readonly websocket: WebSocketServerEndpoint;
  readonly webrtc: WebRtcServerEndpoint;
  private readonly detach: () => void;
  private closing: Promise<void> | null = null;

  private constructor(
    host: string,
    port: number,
    httpServer: http.Server,
    httpStats: HttpGuardStats,
    udp: UdpEndpoint,
    websocket: WebSocketServerEndpoint,
    webrtc: WebRtcServerEndpoint,
  ) {
    this.host = host;
    this.port = port;
    this.address = `multi:${port}`;
    this.httpServer = httpServer;
    this.httpStats = httpStats;
    this.udp = udp;
    this.websocket = websocket;
    this.webrtc = webrtc;
    this.detach = routeUpgrades(httpServer, [websocket, webrtc]);
  }

  /**
   * Listens for HTTP and UDP on one port number and resolves with the server. Rejects with an
   * Error naming the bad option, or the port that could not be bound.
   */
  static async listen(options: MultiTransportOptions = {}): Promise<MultiTransportServer> {
    const host = options.host ?? '127.0.0.1';
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new RangeError(`MultiTransportServer: port must be an integer in 0..65535, got ${port}`);
    }
    const websocket = new WebSocketServerEndpoint(options.websocket);
    const webrtc = new WebRtcServerEndpoint(options.webrtc);
    const handler = options.httpHandler ?? notFound;
    const serverOptions = guardedServerOptions(options.http ?? {});
    for (let attempt = 1; ; attempt++) {
      const httpServer = http.createServer(serverOptions, handler);
      const httpStats = guardHttpServer(httpServer, options.http);
      let bound: number;
      try {
        bound = await listenHttp(httpServer, port, host);
      } catch (error) {
        await Promise.all([websocket.close(), webrtc.close()]);
        throw new Error(`MultiTransportServer: cannot listen on ${host}:${port}: ${String(error)}`);
      }
      try {
        const udp = await UdpEndpoint.open({ ...options.udp, host, port: bound });
        return new MultiTransportServer(host, bound, httpServer, httpStats, udp, websocket, webrtc);
      } catch (error) {
        await closeHttp(httpServer);
        if (port !== 0 || attempt === PORT_ATTEMPTS) {
          await Promise.all([websocket.close(), webrtc.close()]);
          throw error;
        }
      }
    }
  }

  /** Sends by the address's transport prefix; an address of none of them is dropped and counted by UDP. */
  send(to: string, data: Uint8Array): void {
    if (to.startsWith('rtc:')) this.webrtc.send(to, data);
    else if (to.startsWith('ws:')) this.websocket.send(to, data);
    else this.udp.send(to, data);
  }

  /** The host behind `address`, by its transport ("udp:IP", "ws:IP", "rtc:IP"); null when unknown. */
  hostOf(address: string): string | null {
    if (address.startsWith('rtc:')) return this.webrtc.hostOf(address);
    if (address.startsWith('ws:')) return this.websocket.hostOf(address);
    return this.udp.hostOf(address);
  }

  /** Closes the WebSocket or WebRTC link at `address` (see each); nothing for UDP, which has no link. */
  drop(address: string): void {
    if (address.startsWith('rtc:')) this.webrtc.drop(address);
    else if (address.startsWith('ws:')) this.websocket.drop(address);
  }

  established(address: string): void {
    if (address.startsWith('rtc:')) this.webrtc.established(address);
    else if (address.startsWith('ws:')) this.websocket.established(address);
  }

  /** Delivers what every transport received since the last poll: UDP first, then WebRTC, then WebSocket. */
  poll(nowMs: number, onPacket: PacketHandler): void {
    this.udp.poll(nowMs, onPacket);
    this.webrtc.poll(nowMs, onPacket);
    this.websocket.poll(nowMs, onPacket);
  }

  /** Closes every transport and the HTTP server; resolves once all are closed. Idempotent. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.detach();
    this.closing = Promise.all([this.udp.close(), this.websocket.close(), this.webrtc.close()]).then(() =>
      closeHttp(this.httpServer),
    );
    return this.closing;
  }
}
