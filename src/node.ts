// The Node entry point of Backstep's real transports: listen() for a server on every transport, connectNode() for a client by URL.

import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { cleanup } from 'node-datachannel';
import { RTCPeerConnection } from 'node-datachannel/polyfill';
import { WebSocket } from 'ws';
import type { DatagramEndpoint, PacketHandler } from './net/transport.ts';
import { type MultiTransportOptions, MultiTransportServer } from './net/transports/multi.ts';
import { UdpEndpoint, type UdpEndpointOptions, udpAddress } from './net/transports/udp.ts';
import { WebRtcClientEndpoint } from './net/transports/webrtc-client.ts';
import { WebSocketClientEndpoint } from './net/transports/websocket-client.ts';

export { nodeCipher, serverCipher } from './net/node-packet-crypto.ts';
export type { PacketCipher } from './net/packet-crypto.ts';
export { sodiumAvailable, sodiumCipher } from './net/sodium-packet-crypto.ts';
export type { HttpGuardOptions, HttpGuardStats } from './net/transports/http-guard.ts';
export { routeUpgrades, type UpgradeHandler } from './net/transports/link-server.ts';
export { type MultiTransportOptions, MultiTransportServer } from './net/transports/multi.ts';
export type { TransportStats } from './net/transports/queue.ts';
export { UdpEndpoint, type UdpEndpointOptions } from './net/transports/udp.ts';
export {
  WebRtcServerEndpoint,
  type WebRtcServerOptions,
  type WebRtcServerStats,
} from './net/transports/webrtc.ts';
export {
  type ClientPeerConnection,
  type PeerConnectionConstructor,
  WebRtcClientEndpoint,
  type WebRtcClientOptions,
} from './net/transports/webrtc-client.ts';
export {
  WebSocketServerEndpoint,
  type WebSocketServerOptions,
  type WebSocketServerStats,
} from './net/transports/websocket.ts';
export {
  type ClientWebSocket,
  type SocketCloseEvent,
  type SocketMessageEvent,
  WebSocketClientEndpoint,
  type WebSocketClientOptions,
  type WebSocketConstructor,
} from './net/transports/websocket-client.ts';
export {
  type MatchModule,
  MatchWorkers,
  type MatchWorkersOptions,
  type MatchWorkersStats,
  type WorkerMatchSpec,
} from './node/match-workers.ts';

/**
 * Starts a server on UDP, WebSocket ("/ws") and WebRTC (signalling on "/rtc") at one port
 * number (default 127.0.0.1, port 0: a free one). Give the result to GameServer as its endpoint;
 * close it (and await that) when done.
 */
export function listen(options: MultiTransportOptions = {}): Promise<MultiTransportServer> {
  return MultiTransportServer.listen(options);
}

/** A client endpoint and the address it knows its server by (give both to GameClient). */
export interface ConnectedEndpoint extends DatagramEndpoint {
  readonly serverAddress: string;
  close(): Promise<void>;
}

export interface NodeConnectOptions {
  /** Give up connecting after this long (WebSocket, WebRTC; default 10 000). */
  connectTimeoutMs?: number;
  /** Received datagrams held between polls. */
  queueCapacity?: number;
  /**
   * Local IPv4 address to use (UDP bind, WebRTC candidates). Default: 127.0.0.1 when the server
   * is on loopback, else any.
   */
  bindAddress?: string;
  /** WebRTC: accept only server candidates on these addresses (default: the server's own IP when on loopback, else any). */
  allowedCandidateAddresses?: readonly string[] | null;
  /** WebRTC: STUN/TURN servers (default none). */
  iceServers?: RTCIceServer[];
  /** UDP: kernel buffer sizes. */
  udp?: Pick<UdpEndpointOptions, 'recvBufferBytes' | 'sendBufferBytes'>;
}

/** A UDP client: a UdpEndpoint and its server's "udp:IP:PORT". */
class UdpClientEndpoint implements ConnectedEndpoint {
  constructor(
    readonly udp: UdpEndpoint,
    readonly serverAddress: string,
  ) {}

  get address(): string {
    return this.udp.address;
  }

  send(to: string, data: Uint8Array): void {
    this.udp.send(to, data);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.udp.poll(nowMs, onPacket);
  }

  close(): Promise<void> {
    return this.udp.close();
  }
}

async function resolveIPv4(host: string): Promise<string> {
  if (isIPv4(host)) return host;
  try {
    return (await lookup(host, { family: 4 })).address;
  } catch (error) {
    throw new Error(
      `connectNode: cannot resolve ${JSON.stringify(host)} to an IPv4 address: ${String(error)}`,
    );
  }
}

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.');
}

/**
 * Connects a Node client to a Backstep server by URL, choosing the transport by scheme:
 * "udp://HOST:PORT", "ws://HOST:PORT[/PATH]" (path default "/ws"), or "webrtc://HOST:PORT[/PATH]"
 * (signalling over ws:// on that path, default "/rtc"; the data channel from node-datachannel's
 * polyfill). Resolves once the endpoint can carry datagrams (UDP: bound; WebSocket: open; WebRTC:
 * channel open); rejects with an Error naming the URL or the failure.
 */
export async function connectNode(url: string, options: NodeConnectOptions = {}): Promise<ConnectedEndpoint> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`connectNode: not a URL: ${JSON.stringify(url)}`);
  }
  const port = Number(parsed.port);
  if (parsed.port === '' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`connectNode: ${JSON.stringify(url)} needs a port`);
  }
  const host = parsed.hostname;
  const ip = await resolveIPv4(host);
  const loopback = isLoopback(ip);
  const bindAddress = options.bindAddress ?? (loopback ? '127.0.0.1' : undefined);
  const path = parsed.pathname === '' || parsed.pathname === '/' ? null : parsed.pathname;
  switch (parsed.protocol) {
    case 'udp:': {
      const udp = await UdpEndpoint.open({
        ...options.udp,
        host: bindAddress ?? '0.0.0.0',
        port: 0,
        queueCapacity: options.queueCapacity,
      });
      return new UdpClientEndpoint(udp, udpAddress(ip, port));
    }
    case 'ws:':
      return WebSocketClientEndpoint.connect({
        url: `ws://${ip}:${port}${path ?? '/ws'}`,
        WebSocket,
        connectTimeoutMs: options.connectTimeoutMs,
        queueCapacity: options.queueCapacity,
      });
    case 'webrtc:': {
      const rtcConfig = {
        iceServers: options.iceServers ?? [],
        ...(bindAddress === undefined ? {} : { bindAddress }),
      };
      return WebRtcClientEndpoint.connect({
        signallingUrl: `ws://${ip}:${port}${path ?? '/rtc'}`,
        RTCPeerConnection,
        WebSocket,
        rtcConfig,
        allowedCandidateAddresses: options.allowedCandidateAddresses ?? (loopback ? [ip] : null),
        connectTimeoutMs: options.connectTimeoutMs,
        queueCapacity: options.queueCapacity,
      });
    }
    default:
      throw new Error(
        `connectNode: unsupported scheme ${parsed.protocol} in ${JSON.stringify(url)} (udp:, ws:, webrtc:)`,
      );
  }
}

export { connectNode as connect };

/**
 * Releases node-datachannel's threads. Call once, when the process is done with WebRTC and
 * every WebRTC endpoint's close() has resolved: calling it with a peer connection still open
 * can abort the process.
 */
export function closeWebRtc(): void {
  cleanup();
}
