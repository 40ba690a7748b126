// Connecting a browser client to a server by host, over WebRTC when it can and WebSocket when it
// cannot: WebRTC is tried first, and if its data channel does not open in time (blocked UDP, no
// ICE path) the same server is reached over WebSocket, with the reason kept for the page to show.

import { WebRtcClientEndpoint } from '../net/transports/webrtc-client.ts';
import type { WebSocketClientEndpoint } from '../net/transports/websocket-client.ts';

/** 'auto' tries WebRTC, then WebSocket. */
export type BrowserTransportChoice = 'auto' | 'webrtc' | 'websocket';

export interface AutoConnectOptions {
  transport: BrowserTransportChoice;
  /** Connect over wss:// (and webrtcs://): the page is served over https. */
  secure: boolean;
  /** How long WebRTC may take before 'auto' falls back, ms. */
  webRtcTimeoutMs: number;
  /** How long the WebSocket may take, ms. */
  webSocketTimeoutMs: number;
  /** WebRTC: STUN/TURN servers (default none). */
  iceServers: RTCIceServer[];
  /** WebRTC: accept only server candidates on these addresses (default: any). */
  allowedCandidateAddresses: readonly string[] | null;
}

export const DEFAULT_AUTO_CONNECT_OPTIONS: AutoConnectOptions = {
  transport: 'auto',
  secure: false,
  webRtcTimeoutMs: 5000,
  webSocketTimeoutMs: 10_000,
  iceServers: [],
  allowedCandidateAddresses: null,
};

export interface AutoConnection {
  endpoint: WebRtcClientEndpoint | WebSocketClientEndpoint;
  transport: 'webrtc' | 'websocket';
  /** Why WebRTC was not used when 'auto' fell back (null otherwise). */
  fallbackReason: string | null;
}

/** The URLs connectBrowser takes for `host` ("HOST:PORT"). */
export function transportUrls(host: string, secure: boolean): { webrtc: string; websocket: string } {
  return {
    webrtc: `${secure ? 'webrtcs' : 'webrtc'}://${host}`,
    websocket: `${secure ? 'wss' : 'ws'}://${host}`,
  };
}

/**
 * Connects to the Backstep server at `host` ("HOST:PORT", the page's own `location.host` when
 * it serves the page). Resolves once datagrams can flow; rejects with an Error that names each
 * transport tried and why it failed.
 */
export async function connectAuto(
  host: string,
  connect: (url: string, timeoutMs: number) => Promise<WebRtcClientEndpoint | WebSocketClientEndpoint>,
  options: Partial<AutoConnectOptions> = {},
): Promise<AutoConnection> {
  const o = { ...DEFAULT_AUTO_CONNECT_OPTIONS, ...options };
  const urls = transportUrls(host, o.secure);
  let fallbackReason: string | null = null;
  if (o.transport !== 'websocket') {
    try {
      const endpoint = await connect(urls.webrtc, o.webRtcTimeoutMs);
      return {
        endpoint,
        transport: endpoint instanceof WebRtcClientEndpoint ? 'webrtc' : 'websocket',
        fallbackReason,
      };
    } catch (error) {
      fallbackReason = `WebRTC: ${error instanceof Error ? error.message : String(error)}`;
      if (o.transport === 'webrtc') throw new Error(fallbackReason);
    }
  }
  try {
    const endpoint = await connect(urls.websocket, o.webSocketTimeoutMs);
    return { endpoint, transport: 'websocket', fallbackReason };
  } catch (error) {
    const reason = `WebSocket: ${error instanceof Error ? error.message : String(error)}`;
    throw new Error(fallbackReason === null ? reason : `${fallbackReason}; ${reason}`);
  }
}
