// The WebRTC server transport (Node only, node-datachannel): one peer connection per client, datagrams on its unreliable, unordered data channel, signalling over a WebSocket.
//
// A client opens a WebSocket on `path` (default "/rtc") of the HTTP server and sends its offer,
// then candidates; the server answers and trickles its own candidates (messages:
// signalling.ts). The client's data channel (label "backstep", ordered: false,
// maxRetransmits: 0) then carries one datagram per binary message (table in webrtc-client.ts),
// and the server closes the signalling socket. Each client gets the address "rtc:N" (never
// reused); once its channel or connection closes, sends to it are dropped.
//
// Bounds, each counted when hit: at most maxPeers clients, signalling or connected (more are
// refused with 503 before the upgrade); a signalling message that is binary, over
// MAX_SIGNAL_BYTES, malformed or out of turn, or more than maxSignalMessages of them, closes that
// client; so does a channel not open within connectTimeoutMs, one the engine has sent nothing
// to within answerTimeoutMs of opening, and one silent for idleTimeoutMs. Remote candidates (in
// messages or in the offer) on an address outside allowedCandidateAddresses are ignored.
// Time is the engine's: the times given to poll().
//
// Closing waits for every data channel and peer connection to report closed; only then may
// node-datachannel's cleanup() be called (see closeWebRtc in src/node.ts).

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type DataChannel, type IceServer, PeerConnection } from 'node-datachannel';
import { type WebSocket, WebSocketServer } from 'ws';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';
import {
  candidateAllowed,
  encodeSignal,
  filterSdpCandidates,
  MAX_SIGNAL_BYTES,
  parseSignal,
  type SignalMessage,
} from './signalling.ts';
import {
  checkCount,
  checkMs,
  refuseUpgrade,
  requestPath,
  SWEEP_INTERVAL_MS,
  type UpgradeHandler,
} from './websocket.ts';
import {
  createTransportStats,
  DatagramQueue,
  DEFAULT_MAX_BUFFERED_BYTES,
  type TransportStats,
} from './websocket-client.ts';

export type { IceServer } from 'node-datachannel';

export interface WebRtcServerOptions {
  /** URL path of the signalling WebSocket (default "/rtc"). */
  path?: string;
  /** STUN/TURN servers, node-datachannel style ("stun:host:port", or objects); default none. */
  iceServers?: (string | IceServer)[];
  /** Local address the peer connections gather candidates on (default: every interface). */
  bindAddress?: string;
  /** Accept only remote candidates on these addresses (null, the default: any). */
  allowedCandidateAddresses?: readonly string[] | null;
  /** Most clients, signalling or connected (default 256). */
  maxPeers?: number;
  /** Most signalling messages one client may send (default 64). */
  maxSignalMessages?: number;
  /** A client whose data channel is not open this long after it connected is closed (default 10 000). */
  connectTimeoutMs?: number;
  /** A channel the engine has sent nothing to this long after it opened is closed (default 5000). */
  answerTimeoutMs?: number;
  /** A channel silent this long is closed (default 30 000). */
  idleTimeoutMs?: number;
  /** Received datagrams held between polls (default 4096). */
  queueCapacity?: number;
  /** Bytes a channel may have waiting to go out before a send to it is dropped (default 256 KB). */
  maxBufferedBytes?: number;
}

export interface WebRtcServerStats extends TransportStats {
  peersOpened: number;
  /** Signalling upgrades refused because maxPeers were open. */
  peersRefused: number;
  peersClosed: number;
  channelsOpened: number;
  /** Clients closed for a bad signalling message (binary, oversize, malformed, out of turn, too many). */
  closedMalformed: number;
  /** Clients whose channel did not open within connectTimeoutMs. */
  closedTimeout: number;
  /** Channels the engine never answered within answerTimeoutMs. */
  closedUnanswered: number;
  /** Channels silent for idleTimeoutMs. */
  closedIdle: number;
  /** Remote candidates ignored for their address. */
  candidatesRefused: number;
  /** Messages on a channel that were not datagrams (text), dropped. */
  badMessages: number;
}

/** How long closing waits for a channel and connection to report closed before giving up, ms. */
const CLOSE_WAIT_MS = 3000;

class Peer {
  pc: PeerConnection | null = null;
  channel: DataChannel | null = null;
  /** Engine times (NaN until the first poll after the event). */
  openedMs = Number.NaN;
  channelOpenedMs = Number.NaN;
  lastReceivedMs = Number.NaN;
  channelOpen = false;
  answered = false;
  messages = 0;
  gone = false;
  /** Resolves once the peer connection (if any) has reported closed. */
  closed: Promise<void> | null = null;
  pcClosed = false;
  resolvePcClosed: () => void = () => {};

  constructor(
    readonly address: string,
    public signal: WebSocket | null,
  ) {}
}

/** The server side of the WebRTC transport; give it upgrades with routeUpgrades() (websocket.ts). */
export class WebRtcServerEndpoint implements DatagramEndpoint, UpgradeHandler {
  readonly address = 'rtc';
  readonly path: string;
  readonly stats: WebRtcServerStats = {
    ...createTransportStats(),
    peersOpened: 0,
    peersRefused: 0,
    peersClosed: 0,
    channelsOpened: 0,
    closedMalformed: 0,
    closedTimeout: 0,
    closedUnanswered: 0,
    closedIdle: 0,
    candidatesRefused: 0,
    badMessages: 0,
  };
  private readonly iceServers: (string | IceServer)[];
  private readonly bindAddress: string | undefined;
  private readonly allowed: readonly string[] | null;
  private readonly maxPeers: number;
  private readonly maxSignalMessages: number;
  private readonly connectTimeoutMs: number;
  private readonly answerTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly maxBufferedBytes: number;
  private readonly wss: WebSocketServer;
  private readonly queue: DatagramQueue;
  private readonly peers = new Map<string, Peer>();
  /** Peers being torn down, until their connection reports closed. */
  private readonly closingPeers = new Set<Peer>();
  private upgrading = 0;
  private nextId = 1;
  private nowMs = Number.NaN;
  private nextSweepMs = Number.NEGATIVE_INFINITY;
  private open = true;
  private closing: Promise<void> | null = null;

  /** Throws a RangeError naming the bad option. */
  constructor(options: WebRtcServerOptions = {}) {
    const where = 'WebRtcServerEndpoint';
    this.path = options.path ?? '/rtc';
    if (!this.path.startsWith('/'))
      throw new RangeError(`${where}: path must start with "/", got ${this.path}`);
    this.iceServers = options.iceServers ?? [];
    this.bindAddress = options.bindAddress;
    this.allowed = options.allowedCandidateAddresses ?? null;
    this.maxPeers = options.maxPeers ?? 256;
    this.maxSignalMessages = options.maxSignalMessages ?? 64;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.answerTimeoutMs = options.answerTimeoutMs ?? 5000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    checkCount(where, 'maxPeers', this.maxPeers);
    checkCount(where, 'maxSignalMessages', this.maxSignalMessages);
    checkMs(where, 'connectTimeoutMs', this.connectTimeoutMs);
    checkMs(where, 'answerTimeoutMs', this.answerTimeoutMs);
    checkMs(where, 'idleTimeoutMs', this.idleTimeoutMs);
    checkCount(where, 'maxBufferedBytes', this.maxBufferedBytes);
    this.queue = new DatagramQueue(options.queueCapacity ?? 4096, this.stats);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_SIGNAL_BYTES,
      clientTracking: false,
      perMessageDeflate: false,
    });
  }

  /** Clients signalling or connected. */
  get peerCount(): number {
    return this.peers.size;
  }

  /** Clients whose data channel is open. */
  get connectedCount(): number {
    let n = 0;
    for (const peer of this.peers.values()) if (peer.channelOpen) n++;
    return n;
  }

  /**
   * Takes a signalling upgrade request on this endpoint's path: refused with 503 when maxPeers
   * are open (counted), else upgraded. False (untouched) for another path.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    if (requestPath(request) !== this.path) return false;
    if (!this.open || this.peers.size + this.closingPeers.size + this.upgrading >= this.maxPeers) {
      this.stats.peersRefused++;
      refuseUpgrade(socket, 503, 'Service Unavailable');
      return true;
    }
    this.upgrading++;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      this.upgrading--;
    };
    socket.once('close', finish);
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      finish();
      this.accept(ws);
    });
    return true;
  }

  /**
   * Sends one datagram on the data channel of the client at `to` (node-datachannel copies the
   * bytes). Dropped and counted when over MAX_PACKET_BYTES, when `to` has no open channel, or
   * when more than maxBufferedBytes already wait to go out; ignored after close().
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    if (data.length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    const peer = this.peers.get(to);
    const channel = peer?.channel ?? null;
    if (peer === undefined || channel === null || !peer.channelOpen) {
      this.stats.droppedNoRoute++;
      return;
    }
    try {
      if (channel.bufferedAmount() > this.maxBufferedBytes || !channel.sendMessageBinary(data)) {
        this.stats.sendErrors++;
        return;
      }
    } catch {
      this.stats.sendErrors++;
      return;
    }
    peer.answered = true;
    this.stats.packetsSent++;
    this.stats.bytesSent += data.length;
  }

  /**
   * Delivers every datagram received since the last poll, in arrival order, then closes clients
   * past their timeouts (checked every SWEEP_INTERVAL_MS of `nowMs`).
   */
  poll(nowMs: number, onPacket: PacketHandler): void {
    if (!this.open) return;
    if (Number.isFinite(nowMs) && !(nowMs <= this.nowMs)) this.nowMs = nowMs;
    this.queue.drain(onPacket);
    if (this.nowMs >= this.nextSweepMs) {
      this.nextSweepMs = this.nowMs + SWEEP_INTERVAL_MS;
      this.sweep(this.nowMs);
    }
  }

  /**
   * Refuses new clients, closes every channel and peer connection and resolves once each has
   * reported closed (or CLOSE_WAIT_MS passed), and the signalling server is closed. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.open = false;
    this.queue.clear();
    for (const peer of [...this.peers.values()]) this.teardown(peer);
    const waits: Promise<void>[] = [];
    for (const peer of this.closingPeers) if (peer.closed !== null) waits.push(peer.closed);
    this.closing = Promise.all(waits).then(
      () =>
        new Promise<void>((resolve) => {
          this.wss.close(() => resolve());
        }),
    );
    return this.closing;
  }

  private accept(ws: WebSocket): void {
    if (!this.open) {
      ws.terminate();
      return;
    }
    const peer = new Peer(`rtc:${this.nextId++}`, ws);
    peer.openedMs = this.nowMs;
    this.peers.set(peer.address, peer);
    this.stats.peersOpened++;
    ws.on('message', (data, isBinary) => {
      if (peer.gone) return;
      if (++peer.messages > this.maxSignalMessages || isBinary) {
        this.malformed(peer);
        return;
      }
      const parsed = parseSignal(Buffer.isBuffer(data) ? data.toString('utf8') : null);
      if (!parsed.ok) {
        this.malformed(peer);
        return;
      }
      this.onSignal(peer, parsed.message);
    });
    ws.on('error', () => {
      if (!peer.gone && !peer.channelOpen) this.malformed(peer);
    });
    ws.on('close', () => {
      peer.signal = null;
      if (!peer.gone && !peer.channelOpen) this.teardown(peer);
    });
  }

  private malformed(peer: Peer): void {
    this.stats.closedMalformed++;
    this.teardown(peer);
  }

  private onSignal(peer: Peer, m: SignalMessage): void {
    if (m.type === 'offer') {
      if (peer.pc !== null) {
        this.malformed(peer);
        return;
      }
      const pc = this.createPeerConnection(peer);
      try {
        pc.setRemoteDescription(filterSdpCandidates(m.sdp, this.allowed), 'offer');
      } catch {
        this.malformed(peer);
      }
      return;
    }
    if (m.type === 'candidate' && peer.pc !== null) {
      if (!candidateAllowed(m.candidate, this.allowed)) {
        this.stats.candidatesRefused++;
        return;
      }
      try {
        peer.pc.addRemoteCandidate(m.candidate.replace(/^a=/, ''), m.mid);
      } catch {
        this.malformed(peer);
      }
      return;
    }
    this.malformed(peer);
  }

  private createPeerConnection(peer: Peer): PeerConnection {
    const pc = new PeerConnection(peer.address, {
      iceServers: this.iceServers,
      ...(this.bindAddress === undefined ? {} : { bindAddress: this.bindAddress }),
    });
    peer.pc = pc;
    peer.closed = new Promise<void>((resolve) => {
      peer.resolvePcClosed = resolve;
    });
    pc.onStateChange((state) => {
      if (state === 'closed') {
        peer.pcClosed = true;
        peer.resolvePcClosed();
      } else if (state === 'failed' && !peer.gone) {
        this.teardown(peer);
      }
    });
    pc.onLocalDescription((sdp, type) => {
      if (type === 'answer') this.signal(peer, { type: 'answer', sdp });
    });
    pc.onLocalCandidate((candidate, mid) => {
      this.signal(peer, { type: 'candidate', candidate: candidate.replace(/^a=/, ''), mid });
    });
    pc.onDataChannel((channel) => this.onChannel(peer, channel));
    return pc;
  }

  private onChannel(peer: Peer, channel: DataChannel): void {
    if (peer.gone || peer.channel !== null || channel.getLabel() !== 'backstep') {
      channel.close();
      if (!peer.gone && peer.channel === null) this.malformed(peer);
      return;
    }
    peer.channel = channel;
    channel.onMessage((message) => {
      if (peer.gone) return;
      if (typeof message === 'string') {
        this.stats.badMessages++;
        return;
      }
      peer.lastReceivedMs = this.nowMs;
      this.queue.push(peer.address, message instanceof ArrayBuffer ? new Uint8Array(message) : message);
    });
    channel.onClosed(() => {
      if (!peer.gone) this.teardown(peer);
    });
    const opened = () => {
      if (peer.channelOpen || peer.gone) return;
      peer.channelOpen = true;
      peer.channelOpenedMs = this.nowMs;
      this.stats.channelsOpened++;
      const signal = peer.signal;
      peer.signal = null;
      signal?.close(1000, 'connected');
    };
    channel.onOpen(opened);
    if (channel.isOpen()) opened();
  }

  private signal(peer: Peer, message: SignalMessage): void {
    const ws = peer.signal;
    if (peer.gone || ws === null || ws.readyState !== ws.OPEN) return;
    let text: string;
    try {
      text = encodeSignal(message);
    } catch {
      this.teardown(peer);
      return;
    }
    ws.send(text);
  }

  /** Forgets a client at once (its address stops receiving) and closes its signalling, channel and connection. */
  private teardown(peer: Peer): void {
    if (peer.gone) return;
    peer.gone = true;
    peer.channelOpen = false;
    if (this.peers.get(peer.address) === peer) this.peers.delete(peer.address);
    this.stats.peersClosed++;
    const ws = peer.signal;
    peer.signal = null;
    if (ws !== null) {
      if (ws.readyState === ws.OPEN) ws.close(1008, 'closed');
      else ws.terminate();
    }
    const pc = peer.pc;
    if (pc === null || peer.closed === null) return;
    this.closingPeers.add(peer);
    const done = () => {
      this.closingPeers.delete(peer);
    };
    const timer = setTimeout(() => peer.resolvePcClosed(), CLOSE_WAIT_MS);
    peer.closed = peer.closed.then(() => {
      clearTimeout(timer);
      done();
    });
    try {
      peer.channel?.close();
    } catch {
      // The channel was already closed.
    }
    try {
      pc.close();
    } catch {
      peer.resolvePcClosed();
    }
    if (peer.pcClosed) peer.resolvePcClosed();
  }

  private sweep(nowMs: number): void {
    for (const peer of this.peers.values()) {
      if (Number.isNaN(peer.openedMs)) peer.openedMs = nowMs;
      if (!peer.channelOpen) {
        if (nowMs - peer.openedMs > this.connectTimeoutMs) {
          this.stats.closedTimeout++;
          this.teardown(peer);
        }
        continue;
      }
      if (Number.isNaN(peer.channelOpenedMs)) peer.channelOpenedMs = nowMs;
      if (Number.isNaN(peer.lastReceivedMs)) peer.lastReceivedMs = peer.channelOpenedMs;
      if (!peer.answered && nowMs - peer.channelOpenedMs > this.answerTimeoutMs) {
        this.stats.closedUnanswered++;
        this.teardown(peer);
      } else if (nowMs - peer.lastReceivedMs > this.idleTimeoutMs) {
        this.stats.closedIdle++;
        this.teardown(peer);
      }
    }
  }
}
