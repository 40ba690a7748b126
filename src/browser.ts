// The browser entry point: connectBrowser() for a client by URL over WebRTC or WebSocket,
// connectBrowserAuto() that falls back from one to the other by itself, and the pieces every
// browser game's client reuses: input sampling (keys, mouse, pointer lock) and the frame loop.

import { type AutoConnection, type AutoConnectOptions, connectAuto } from './browser/connect.ts';
import { WebRtcClientEndpoint } from './net/transports/webrtc-client.ts';
import { WebSocketClientEndpoint } from './net/transports/websocket-client.ts';

export {
  type AutoConnection,
  type AutoConnectOptions,
  type BrowserTransportChoice,
  DEFAULT_AUTO_CONNECT_OPTIONS,
  transportUrls,
} from './browser/connect.ts';
export {
  DEFAULT_FRAME_LOOP_OPTIONS,
  FrameLoop,
  type FrameLoopOptions,
  SampleRing,
} from './browser/frame-loop.ts';
export {
  DEFAULT_INPUT_SAMPLER_OPTIONS,
  type InputBindings,
  InputSampler,
  type InputSamplerOptions,
} from './browser/input.ts';
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

/**
 * Connects to the Backstep server at `host` ("HOST:PORT") over the transport `options.transport`
 * names: 'auto' (the default) tries WebRTC and falls back to WebSocket by itself when the data
 * channel does not open within `webRtcTimeoutMs`; the result says which one it got and why it
 * fell back. Rejects with an Error naming every transport tried and its failure.
 */
export function connectBrowserAuto(
  host: string,
  options: Partial<AutoConnectOptions> = {},
): Promise<AutoConnection> {
  return connectAuto(
    host,
    (url, timeoutMs) =>
      connectBrowser(url, {
        connectTimeoutMs: timeoutMs,
        iceServers: options.iceServers,
        allowedCandidateAddresses: options.allowedCandidateAddresses,
      }),
    options,
  );
}
