// The WebRTC server transport (Node only, node-datachannel): one peer connection per client, datagrams on its unreliable, unordered data channel, signalling over a WebSocket.
//
// A client opens a WebSocket on `path` (default "/rtc") of the HTTP server and sends its offer,
// then candidates; the server answers and trickles its own candidates (messages:
// signalling.ts). The client's data channel (label "backstep", ordered: false,
// maxRetransmits: 0) then carries one datagram per binary message (table in webrtc-client.ts),
// and the server closes the signalling socket (the client may close it first: once the offer is
// in, that does not end the connection). Each client gets the address "rtc:N" (never reused);
// once its channel or connection closes, sends to it are dropped.
//
// Bounds, each counted when hit: at most maxPeers clients, signalling or connected, and
// maxPeersPerHost from one IP address (more are refused with 503 or 429 before the upgrade); a
// signalling message that is binary, over MAX_SIGNAL_BYTES, malformed or out of turn, or more
// than maxSignalMessages of them, closes that client; so does a channel not open within
// connectTimeoutMs, one the engine has sent nothing to within answerTimeoutMs of opening, and
// one silent for idleTimeoutMs. Pending clients (channel not open yet) are bounded apart: at most
// maxPendingPeersPerHost from one IP address (a new one beyond is closed at once) and
// maxPendingPeers in all (a new one beyond closes the oldest pending one), so half-open peers
// waiting out their connect timeout cannot crowd out connected ones or a real client's attempt. Remote candidates (in messages or in the offer) on an address
// outside allowedCandidateAddresses are ignored. Time is the engine's: the times given to poll().
//
// The engine ends a client with drop(): its address stops routing at once and its room is
// free; its data channel and peer connection are closed DROP_GRACE_MS later, so that the
// datagrams just sent to it (the engine's goodbye) leave first. hostOf("rtc:N") is "rtc:IP",
// the address its signalling WebSocket came from, while the client exists.
//
// Closing waits for every data channel and peer connection to report closed, those dropped
// too; only then may node-datachannel's cleanup() be called (see closeWebRtc in src/node.ts).

import { type DataChannel, type IceServer, PeerConnection } from 'node-datachannel';
import { Allowance } from '../allowance.ts';
import {
  type ClientLink,
  checkCount,
  checkMs,
  hostGroup,
  LINK_IDLE,
  LINK_UNANSWERED,
  LINK_UNESTABLISHED,
  LinkServerEndpoint,
  type LinkServerOptions,
  type LinkServerStats,
  type ServerWebSocket,
} from './link-server.ts';
import { createTransportStats } from './queue.ts';
import {
  candidateAllowed,
  encodeSignal,
  filterSdpCandidates,
  MAX_SIGNAL_BYTES,
  parseSignal,
  type SignalMessage,
} from './signalling.ts';

export type { IceServer } from 'node-datachannel';

export interface WebRtcServerOptions extends LinkServerOptions {
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
  /** Most clients, signalling or connected, from one IP address (default 16). */
  maxPeersPerHost?: number;
  /** Most signalling messages one client may send (default 64). */
  maxSignalMessages?: number;
  /** A client whose data channel is not open this long after it connected is closed (default 10 000). */
  connectTimeoutMs?: number;
  /** Most clients whose channel is not open yet, in all (default 64); past it the oldest is closed. */
  maxPendingPeers?: number;
  /** Most clients whose channel is not open yet from one IP address (default 4); past it the new one is closed. */
  maxPendingPeersPerHost?: number;
  /**
   * Offers one IP address may make per second of engine time, bursts up to a second's worth
   * (default 8): each builds a peer connection on this thread, so past it the client is closed
   * before its offer is read (closedOfferRate).
   */
  maxOffersPerHostPerSecond?: number;
}

export interface WebRtcServerStats extends LinkServerStats {
  peersOpened: number;
  /** Signalling upgrades refused because maxPeers were open, or maxPeersPerHost from that host. */
  peersRefused: number;
  peersClosed: number;
  channelsOpened: number;
  /** Clients closed for a bad signalling message (binary, oversize, malformed, out of turn, too many). */
  closedMalformed: number;
  /** Clients whose channel did not open within connectTimeoutMs. */
  closedTimeout: number;
  /** Clients closed because their host had made maxOffersPerHostPerSecond offers within the second. */
  closedOfferRate: number;
  /** New clients closed because their host already had maxPendingPeersPerHost pending. */
  closedPendingPerHost: number;
  /** Pending clients closed (the oldest) to make room past maxPendingPeers. */
  closedPendingEvicted: number;
  /** Channels the engine never answered within answerTimeoutMs. */
  closedUnanswered: number;
  /** Channels silent for idleTimeoutMs. */
  closedIdle: number;
  /** Clients the engine dropped (drop()). */
  closedDropped: number;
  /** Remote candidates ignored for their address. */
  candidatesRefused: number;
  /** Messages on a channel that were not datagrams (text), dropped. */
  badMessages: number;
}

/** How long closing waits for a channel and connection to report closed before giving up, ms. */
const CLOSE_WAIT_MS = 3000;

/**
 * How long a dropped client's channel stays open, ms: a datagram handed to the channel may
 * still be in its SCTP send path (bufferedAmount 0 does not mean it left), and closing the
 * peer connection discards what has not gone out.
 */
export const DROP_GRACE_MS = 100;

let nextPeerOrder = 0;

/** One client: its signalling socket, then its peer connection and data channel (the link). */
class Peer implements ClientLink {
  pc: PeerConnection | null = null;
  channel: DataChannel | null = null;
  /** Engine times (NaN until the first poll after the event): signalling began, the channel opened. */
  openedMs = Number.NaN;
  linkOpenedMs = Number.NaN;
  lastReceivedMs = Number.NaN;
  channelOpen = false;
  answered = false;
  allowance: Allowance | null = null;
  overAllowance = 0;
  established = false;
  messages = 0;
  gone = false;
  /** Resolves once the peer connection (if any) has reported closed. */
  closed: Promise<void> | null = null;
  pcClosed = false;
  resolvePcClosed: () => void = () => {};
  /** Closing its channel and connection has begun (at teardown, or when a drop's grace ends). */
  closeStarted = false;
  /** Arrival order (pending peers past maxPendingPeers close oldest first). */
  readonly order = nextPeerOrder++;
  /** The drop's grace, then the wait for the connection to report closed. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined;

  /** What the per-host limits count its host as (hostGroup: an IPv6 address by its /64). */
  readonly group: string;

  constructor(
    readonly address: string,
    readonly host: string,
    public signal: ServerWebSocket | null,
  ) {
    this.group = hostGroup(host);
  }

  writable(): boolean {
    return this.channelOpen && this.channel !== null;
  }

  bufferedAmount(): number {
    return (this.channel as DataChannel).bufferedAmount();
  }

  write(data: Uint8Array): boolean {
    return (this.channel as DataChannel).sendMessageBinary(data);
  }
}

/** The server side of the WebRTC transport; give it upgrades with routeUpgrades() (websocket.ts). */
export class WebRtcServerEndpoint extends LinkServerEndpoint<Peer, WebRtcServerStats> {
  private readonly iceServers: (string | IceServer)[];
  private readonly bindAddress: string | undefined;
  private readonly allowed: readonly string[] | null;
  private readonly maxSignalMessages: number;
  private readonly connectTimeoutMs: number;
  private readonly maxPendingPeers: number;
  private readonly maxPendingPeersPerHost: number;
  private readonly maxOffersPerHostPerSecond: number;
  /** Offers each host may still make (by engine time), for hosts that made one lately. */
  private readonly offerAllowance = new Map<string, Allowance>();
  /** Peers being torn down, until their connection reports closed. */
  private readonly closingPeers = new Set<Peer>();
  private closing: Promise<void> | null = null;

  /** Throws a RangeError naming the bad option. */
  constructor(options: WebRtcServerOptions = {}) {
    const where = 'WebRtcServerEndpoint';
    super(
      {
        where,
        prefix: 'rtc',
        defaultPath: '/rtc',
        maxLinksOption: 'maxPeers',
        maxLinks: options.maxPeers ?? 256,
        maxPerHostOption: 'maxPeersPerHost',
        maxPerHost: options.maxPeersPerHost ?? 16,
        maxPayload: MAX_SIGNAL_BYTES,
      },
      options,
      {
        ...createTransportStats(),
        peersOpened: 0,
        peersRefused: 0,
        peersClosed: 0,
        channelsOpened: 0,
        closedMalformed: 0,
        closedTimeout: 0,
        closedPendingPerHost: 0,
        closedPendingEvicted: 0,
        closedUnanswered: 0,
        closedIdle: 0,
        closedDropped: 0,
        droppedRate: 0,
        closedFlood: 0,
        closedOfferRate: 0,
        closedUnestablished: 0,
        closedEvicted: 0,
        candidatesRefused: 0,
        badMessages: 0,
      },
    );
    this.iceServers = options.iceServers ?? [];
    this.bindAddress = options.bindAddress;
    this.allowed = options.allowedCandidateAddresses ?? null;
    this.maxSignalMessages = options.maxSignalMessages ?? 64;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    checkCount(where, 'maxSignalMessages', this.maxSignalMessages);
    checkMs(where, 'connectTimeoutMs', this.connectTimeoutMs);
    this.maxPendingPeers = options.maxPendingPeers ?? 64;
    this.maxPendingPeersPerHost = options.maxPendingPeersPerHost ?? 4;
    this.maxOffersPerHostPerSecond = options.maxOffersPerHostPerSecond ?? 8;
    checkCount(where, 'maxPendingPeers', this.maxPendingPeers);
    checkCount(where, 'maxPendingPeersPerHost', this.maxPendingPeersPerHost);
    checkCount(where, 'maxOffersPerHostPerSecond', this.maxOffersPerHostPerSecond);
  }

  /** Clients signalling or connected. */
  get peerCount(): number {
    return this.links.size;
  }

  /** Clients whose data channel is open. */
  get connectedCount(): number {
    let n = 0;
    for (const peer of this.links.values()) if (peer.channelOpen) n++;
    return n;
  }

  /**
   * Refuses new clients, closes every channel and peer connection and resolves once each has
   * reported closed (or CLOSE_WAIT_MS passed), dropped ones after their grace, and the
   * signalling server is closed. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.shut();
    for (const peer of this.links.values()) this.teardown(peer);
    const waits: Promise<void>[] = [];
    for (const peer of this.closingPeers) if (peer.closed !== null) waits.push(peer.closed);
    this.closing = Promise.all(waits).then(() => this.closeServer());
    return this.closing;
  }

  protected accept(ws: ServerWebSocket, host: string): void {
    const peer = new Peer(this.nextAddress(), host, ws);
    peer.openedMs = this.nowMs;
    // Pending peers (channel not open): bounded per host, then in all by closing the oldest of
    // the host with the most (a flood from a few hosts closes its own, not another host's).
    let pending = 0;
    let fromHost = 0;
    for (const p of this.links.values()) {
      if (p.channelOpen || p.gone) continue;
      pending++;
      if (p.group === peer.group) fromHost++;
    }
    const evict = pending >= this.maxPendingPeers ? this.pendingToEvict() : null;
    this.links.set(peer.address, peer);
    this.stats.peersOpened++;
    if (fromHost >= this.maxPendingPeersPerHost) {
      this.stats.closedPendingPerHost++;
      this.teardown(peer);
      return;
    }
    if (evict !== null) {
      this.stats.closedPendingEvicted++;
      this.teardown(evict);
    }
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
      // Once the offer is in, the connection may still open without signalling (the client closes
      // it when its own end opens, which may be first); connectTimeoutMs bounds the wait.
      if (!peer.gone && peer.pc === null) this.teardown(peer);
    });
  }

  /**
   * The pending peer to close for room: the oldest of those whose host has the most pending
   * (at most maxPendingPeers of them, so a few hundred steps, once per new peer past the limit).
   */
  private pendingToEvict(): Peer | null {
    let evict: Peer | null = null;
    let most = 0;
    for (const p of this.links.values()) {
      if (p.channelOpen || p.gone) continue;
      let fromHost = 0;
      for (const q of this.links.values()) if (!q.channelOpen && !q.gone && q.group === p.group) fromHost++;
      if (fromHost > most || (fromHost === most && evict !== null && p.order < evict.order)) {
        most = fromHost;
        evict = p;
      }
    }
    return evict;
  }

  /** Takes one offer from `host`'s allowance (maxOffersPerHostPerSecond); false when none is left. */
  private takeOffer(host: string): boolean {
    let a = this.offerAllowance.get(host);
    if (a === undefined) {
      a = new Allowance(this.maxOffersPerHostPerSecond);
      this.offerAllowance.set(host, a);
    }
    return a.take(this.nowMs);
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
      if (!this.takeOffer(peer.group)) {
        this.stats.closedOfferRate++;
        this.teardown(peer);
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
      this.receive(peer, message instanceof ArrayBuffer ? new Uint8Array(message) : message);
    });
    channel.onClosed(() => {
      // Closed from the other side: nothing more can leave, so a drop's grace ends here.
      if (!peer.gone) this.teardown(peer);
      else if (peer.pc !== null && peer.closed !== null) this.closeConnection(peer, peer.pc);
    });
    const opened = () => {
      if (peer.channelOpen || peer.gone) return;
      peer.channelOpen = true;
      peer.linkOpenedMs = this.nowMs;
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

  /** A client whose channel is open keeps it DROP_GRACE_MS (see there); any other is closed at once. */
  protected dismiss(peer: Peer): void {
    this.stats.closedDropped++;
    this.teardown(peer, peer.channelOpen ? DROP_GRACE_MS : 0);
  }

  /**
   * Forgets a client at once (its address stops receiving) and closes its signalling, then its
   * channel and connection after `graceMs` (at once by default); it takes room until its
   * connection has reported closed.
   */
  private teardown(peer: Peer, graceMs = 0): void {
    if (peer.gone) return;
    peer.gone = true;
    peer.channelOpen = false;
    this.forget(peer);
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
    peer.closed = peer.closed.then(() => {
      // A connection that closed from the other side during the grace is still closed here:
      // node-datachannel's cleanup() waits for every close() call.
      this.closeConnection(peer, pc);
      clearTimeout(peer.timer);
      this.closingPeers.delete(peer);
    });
    if (graceMs > 0) peer.timer = setTimeout(() => this.closeConnection(peer, pc), graceMs);
    else this.closeConnection(peer, pc);
  }

  /**
   * Closes a forgotten client's channel and connection (ending a drop's grace; once only); its
   * `closed` resolves once the connection reports closed, or after CLOSE_WAIT_MS.
   */
  private closeConnection(peer: Peer, pc: PeerConnection): void {
    if (peer.closeStarted) return;
    peer.closeStarted = true;
    clearTimeout(peer.timer);
    if (!peer.pcClosed) peer.timer = setTimeout(() => peer.resolvePcClosed(), CLOSE_WAIT_MS);
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

  protected sweep(nowMs: number): void {
    // A host whose allowance has refilled is forgotten (the map holds hosts that offered lately).
    for (const [host, a] of this.offerAllowance) if (a.full(nowMs)) this.offerAllowance.delete(host);
    for (const peer of this.links.values()) {
      if (Number.isNaN(peer.openedMs)) peer.openedMs = nowMs;
      if (!peer.channelOpen) {
        if (nowMs - peer.openedMs > this.connectTimeoutMs) {
          this.stats.closedTimeout++;
          this.teardown(peer);
        }
        continue;
      }
      const expiry = this.expiry(peer, nowMs);
      if (expiry === LINK_UNANSWERED) {
        this.stats.closedUnanswered++;
        this.teardown(peer);
      } else if (expiry === LINK_IDLE) {
        this.stats.closedIdle++;
        this.teardown(peer);
      } else if (expiry === LINK_UNESTABLISHED) {
        this.stats.closedUnestablished++;
        this.teardown(peer);
      }
    }
  }

  protected countRefused(): void {
    this.stats.peersRefused++;
  }

  protected closeFlooding(peer: Peer): void {
    this.teardown(peer);
  }

  protected closeExpired(peer: Peer): void {
    this.teardown(peer);
  }

  /** Only a peer whose channel opened: pending ones have their own limits (maxPendingPeers). */
  protected override evictable(peer: Peer): boolean {
    return peer.channelOpen;
  }

  protected override closingCount(): number {
    return this.closingPeers.size;
  }
}
