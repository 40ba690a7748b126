// The browser entry point of Backstep's real transports: connectBrowser() for a client by URL, over WebRTC or WebSocket.

import { WebRtcClientEndpoint } from './net/transports/webrtc-client.ts';
import { WebSocketClientEndpoint } from './net/transports/websocket-client.ts';

export type { TransportStats } from './net/transports/queue.ts';
export {
  type ClientPeerConnection,
  type PeerConnectionConstructor,
  WebRtcClientEndpoint,
  type WebRtcClientOptions,
} from './net/transports/webrtc-client.ts';
export {
  type ClientWebSocket,
  type SocketCloseEvent,
  type SocketMessageEvent,
  WebSocketClientEndpoint,
  type WebSocketClientOptions,
  type WebSocketConstructor,
} from './net/transports/websocket-client.ts';

/** A browser client endpoint: WebRTC or WebSocket, with the address it knows its server by. */
export type BrowserEndpoint = WebRtcClientEndpoint | WebSocketClientEndpoint;

export interface BrowserConnectOptions {
  /** Give up connecting after this long (default 10 000). */
  connectTimeoutMs?: number;
  /** Received datagrams held between polls. */
  queueCapacity?: number;
  /** WebRTC: STUN/TURN servers (default none). */
  iceServers?: RTCIceServer[];
  /** WebRTC: accept only server candidates on these addresses (default: any). */
  allowedCandidateAddresses?: readonly string[] | null;
}

/**
 * Connects to a Backstep server by URL: "webrtc://HOST:PORT[/PATH]" (signalling over ws:// on
 * PATH, default "/rtc"; "webrtcs://" signals over wss://), or "ws://" / "wss://HOST:PORT[/PATH]"
 * (default "/ws"). Resolves once datagrams can flow; rejects with an Error naming the URL or the
 * failure. Give the result and its serverAddress to GameClient.
 */
export function connectBrowser(url: string, options: BrowserConnectOptions = {}): Promise<BrowserEndpoint> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.reject(new Error(`connectBrowser: not a URL: ${JSON.stringify(url)}`));
  }
  const path = parsed.pathname === '' || parsed.pathname === '/' ? null : parsed.pathname;
  const origin = parsed.host;
  switch (parsed.protocol) {
    case 'webrtc:':
    case 'webrtcs:':
      return WebRtcClientEndpoint.connect({
        signallingUrl: `${parsed.protocol === 'webrtcs:' ? 'wss' : 'ws'}://${origin}${path ?? '/rtc'}`,
        rtcConfig: { iceServers: options.iceServers ?? [] },
        allowedCandidateAddresses: options.allowedCandidateAddresses ?? null,
        connectTimeoutMs: options.connectTimeoutMs,
        queueCapacity: options.queueCapacity,
      });
    case 'ws:':
    case 'wss:':
      return WebSocketClientEndpoint.connect({
        url: `${parsed.protocol}//${origin}${path ?? '/ws'}`,
        connectTimeoutMs: options.connectTimeoutMs,
        queueCapacity: options.queueCapacity,
      });
    default:
      return Promise.reject(
        new Error(
          `connectBrowser: unsupported scheme ${parsed.protocol} in ${JSON.stringify(url)} (webrtc:, ws:)`,
        ),
      );
  }
}
