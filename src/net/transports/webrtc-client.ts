// The WebRTC client endpoint (browser, or Node with node-datachannel's polyfill): datagrams over one unreliable, unordered data channel.
//
// Connecting: open the signalling WebSocket, create the peer connection and its data channel
// ("backstep", ordered: false, maxRetransmits: 0), send the offer without candidates, and once
// the server's answer is set send this side's candidates (so the server's connectivity checks
// start only when this side can answer them: otherwise the first ones are lost and ICE waits a
// retransmission, about a second); the server trickles its own (messages: signalling.ts). The
// signalling socket is closed once the channel opens.
// On the channel each datagram is one binary message carrying exactly its bytes:
//   +---------+--------------------------------------------------+
//   | message | binary, 1..MAX_PACKET_BYTES bytes: one datagram  |
//   +---------+--------------------------------------------------+
//
// Browser-safe: no Node module is imported; RTCPeerConnection and WebSocket are the globals
// unless constructors are passed in.

import {
  CLOSE_WAIT_MS,
  type MessagePipe,
  PipeClientEndpoint,
  type PipeClientOptions,
  type PipeClientSettings,
  pipeClientSettings,
} from './pipe-client.ts';
import { candidateAllowed, encodeSignal, filterSdpCandidates, parseSignal } from './signalling.ts';
import {
  type ClientWebSocket,
  globalWebSocket,
  SOCKET_OPEN,
  type WebSocketConstructor,
} from './websocket-client.ts';

/** The part of RTCPeerConnection this endpoint uses: the browser's and node-datachannel's polyfill both fit. */
export type ClientPeerConnection = Pick<
  RTCPeerConnection,
  | 'addEventListener'
  | 'removeEventListener'
  | 'dispatchEvent'
  | 'createDataChannel'
  | 'createOffer'
  | 'setLocalDescription'
  | 'setRemoteDescription'
  | 'addIceCandidate'
  | 'close'
  | 'connectionState'
  | 'localDescription'
  | 'remoteDescription'
>;

/** An RTCPeerConnection constructor: the global one in a browser, node-datachannel's polyfill in Node. */
export type PeerConnectionConstructor = new (config?: RTCConfiguration) => ClientPeerConnection;

/** The data channel's label and options: unreliable and unordered, like UDP. */
export const DATA_CHANNEL_LABEL = 'backstep';
export const DATA_CHANNEL_OPTIONS: RTCDataChannelInit = { ordered: false, maxRetransmits: 0 };

/** Remote candidates held until the remote description is set, at most. */
const MAX_PENDING_CANDIDATES = 64;

export interface WebRtcClientOptions extends PipeClientOptions {
  /** The server's signalling URL, e.g. "ws://127.0.0.1:4000/rtc". */
  signallingUrl: string;
  /** Constructor to use instead of the global RTCPeerConnection. */
  RTCPeerConnection?: PeerConnectionConstructor;
  /** Constructor to use instead of the global WebSocket (for signalling). */
  WebSocket?: WebSocketConstructor;
  /**
   * Peer connection configuration (default `{ iceServers: [] }`). node-datachannel's polyfill
   * also reads its own keys here, such as `bindAddress`.
   */
  rtcConfig?: RTCConfiguration;
  /** Accept only remote candidates on these addresses (null, the default: any). */
  allowedCandidateAddresses?: readonly string[] | null;
}

/** A client endpoint over one WebRTC data channel to a Backstep server. */
export class WebRtcClientEndpoint extends PipeClientEndpoint {
  private readonly pc: ClientPeerConnection;
  private readonly channel: RTCDataChannel;
  private closing: Promise<void> | null = null;

  private constructor(pc: ClientPeerConnection, channel: RTCDataChannel, settings: PipeClientSettings) {
    super(settings);
    this.pc = pc;
    this.channel = channel;
    channel.binaryType = 'arraybuffer';
    channel.addEventListener('message', (event) => this.receive(event.data));
  }

  /**
   * Signals with the server and resolves with the endpoint once the data channel is open;
   * rejects with an Error, once everything it opened is closed, if signalling fails, the server
   * sends a malformed message, the connection fails or the time runs out, or naming a bad option
   * (before opening anything).
   */
  static async connect(options: WebRtcClientOptions): Promise<WebRtcClientEndpoint> {
    const settings = pipeClientSettings('WebRtcClientEndpoint', options);
    const PeerConnection = options.RTCPeerConnection ?? globalPeerConnection();
    const SignalSocket = options.WebSocket ?? globalWebSocket();
    const timeoutMs = settings.connectTimeoutMs;
    const allowed = options.allowedCandidateAddresses ?? null;
    const pc = new PeerConnection(options.rtcConfig ?? { iceServers: [] });
    let signal: ClientWebSocket;
    let endpoint: WebRtcClientEndpoint;
    try {
      endpoint = new WebRtcClientEndpoint(
        pc,
        pc.createDataChannel(DATA_CHANNEL_LABEL, DATA_CHANNEL_OPTIONS),
        settings,
      );
      signal = new SignalSocket(options.signallingUrl);
    } catch (error) {
      pc.close();
      throw error;
    }
    const channel = endpoint.channel;
    return new Promise((resolve, reject) => {
      let settled = false;
      let answered = false;
      let haveAnswer = false;
      const localCandidates: string[] = [];
      const remoteCandidates: RTCIceCandidateInit[] = [];
      const closeSignal = () => {
        try {
          signal.close(1000, 'done');
        } catch {
          // Already closed.
        }
      };
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        closeSignal();
        const error = new Error(`WebRTC ${options.signallingUrl}: ${why}`);
        void endpoint.close().then(() => reject(error));
      };
      const timer = setTimeout(() => fail(`data channel not open after ${timeoutMs} ms`), timeoutMs);
      const sendSignal = (text: string) => {
        if (signal.readyState === SOCKET_OPEN) signal.send(text);
      };
      const sendCandidate = (candidate: string, mid: string) => {
        sendSignal(encodeSignal({ type: 'candidate', candidate, mid }));
      };
      pc.addEventListener('icecandidate', (event) => {
        const c = event.candidate;
        if (settled || c === null || c.candidate === '') return;
        if (answered) sendCandidate(c.candidate, c.sdpMid ?? '0');
        else localCandidates.push(c.candidate, c.sdpMid ?? '0');
      });
      pc.addEventListener('connectionstatechange', () => {
        if (pc.connectionState === 'failed') fail('connection failed');
      });
      channel.addEventListener('open', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        closeSignal();
        resolve(endpoint);
      });
      const addRemote = (init: RTCIceCandidateInit) => {
        pc.addIceCandidate(init).catch(() => fail('the server sent a candidate that was refused'));
      };
      signal.addEventListener('message', (event) => {
        if (settled) return;
        const parsed = parseSignal(typeof event.data === 'string' ? event.data : null);
        if (!parsed.ok) {
          fail(`malformed signalling message: ${parsed.error}`);
          return;
        }
        const m = parsed.message;
        if (m.type === 'answer' && !haveAnswer) {
          haveAnswer = true;
          pc.setRemoteDescription({ type: 'answer', sdp: filterSdpCandidates(m.sdp, allowed) })
            .then(() => {
              answered = true;
              for (const init of remoteCandidates) addRemote(init);
              remoteCandidates.length = 0;
              for (let i = 0; i < localCandidates.length; i += 2) {
                sendCandidate(localCandidates[i], localCandidates[i + 1]);
              }
              localCandidates.length = 0;
            })
            .catch(() => fail('the server sent an answer that was refused'));
        } else if (m.type === 'candidate') {
          if (!candidateAllowed(m.candidate, allowed)) return;
          const init = { candidate: m.candidate.replace(/^a=/, ''), sdpMid: m.mid };
          if (pc.remoteDescription !== null) addRemote(init);
          else if (remoteCandidates.length < MAX_PENDING_CANDIDATES) remoteCandidates.push(init);
          else fail('the server sent too many candidates before its answer');
        } else {
          fail(`unexpected ${m.type} from the server`);
        }
      });
      signal.addEventListener('close', (event) => {
        // 1000: the server saw the channel open (this side may see it a moment later).
        if (event.code !== 1000) fail(`signalling closed (code ${event.code})`);
      });
      signal.addEventListener('error', () => fail('signalling connection failed'));
      signal.addEventListener('open', () => {
        pc.createOffer()
          .then((offer) => pc.setLocalDescription(offer))
          .then(() => {
            const sdp = pc.localDescription?.sdp;
            if (sdp === undefined) throw new Error('no local description');
            sendSignal(encodeSignal({ type: 'offer', sdp: filterSdpCandidates(sdp, []) }));
          })
          .catch((error: unknown) => fail(`cannot make an offer: ${String(error)}`));
      });
    });
  }

  get isOpen(): boolean {
    return this.open && this.channel.readyState === 'open';
  }

  /**
   * Closes the data channel, waits for it to close, then closes the peer connection and waits
   * for that (each wait bounded); resolves when done. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.shut();
    this.closing = this.closeAll();
    return this.closing;
  }

  protected openPipe(): MessagePipe | null {
    return this.channel.readyState === 'open' ? this.channel : null;
  }

  private async closeAll(): Promise<void> {
    const channel = this.channel;
    if (channel.readyState !== 'closed') {
      await waitFor(
        channel,
        'close',
        () => channel.readyState === 'closed',
        CLOSE_WAIT_MS,
        () => channel.close(),
      );
    }
    const pc = this.pc;
    await waitFor(
      pc,
      'connectionstatechange',
      () => pc.connectionState === 'closed',
      CLOSE_WAIT_MS,
      () => pc.close(),
    );
  }
}

/**
 * Runs `start`, then resolves once `done()` holds (checked at once and on each `event` of
 * `target`) or after `timeoutMs`, whichever is first.
 */
function waitFor(
  target: EventTarget,
  event: string,
  done: () => boolean,
  timeoutMs: number,
  start: () => void,
): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      target.removeEventListener(event, check);
      resolve();
    };
    const check = () => {
      if (done()) finish();
    };
    const timer = setTimeout(finish, timeoutMs);
    target.addEventListener(event, check);
    try {
      start();
    } catch {
      finish();
      return;
    }
    check();
  });
}

/** The global RTCPeerConnection constructor, or an Error naming what is missing. */
export function globalPeerConnection(): PeerConnectionConstructor {
  const ctor = (globalThis as { RTCPeerConnection?: PeerConnectionConstructor }).RTCPeerConnection;
  if (typeof ctor !== 'function') {
    throw new Error(
      'WebRTC: no global RTCPeerConnection here; pass options.RTCPeerConnection (in Node: node-datachannel/polyfill)',
    );
  }
  return ctor;
}
