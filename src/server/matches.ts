// Many matches in one server process on one port: a router that hands each datagram to its
// match's endpoint (by the route header of a lifecycle packet, then by the source address its
// match accepted), and a host that creates, runs and ends matches, each a GameServer with its
// own game, world, rules, clients and connection layer.
//
// An address is bound to a match only when that match's connection layer accepts it (after the
// challenge, so the address is proven) and unbound when the connection ends; until then its
// packets must carry a route header. A bound address's packets go to its match whatever their
// header says: no packet can move a connected client to another match. A match that throws is
// ended (its clients told DISCONNECT_MATCH_FAILED) and reported; the others carry on.

import { Allowance, addressHash, addressSlot, addressTag } from '../net/allowance.ts';
import { DEFAULT_PROTOCOL_ID, PacketType } from '../net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_MATCH_ENDED,
  DISCONNECT_MATCH_FAILED,
  DISCONNECT_SERVER_SHUTDOWN,
  PACKET_CONNECT_REQUEST,
  PACKET_REFUSED,
  peekPacketType,
  REFUSE_NO_SUCH_MATCH,
  readHandshakePacket,
  writeHandshakePacket,
} from '../net/handshake.ts';
import { checkMatchId, MATCH_ROUTE_HEADER_BYTES, readMatchRoute } from '../net/match-route.ts';
import type { DatagramEndpoint, PacketHandler } from '../net/transport.ts';
import { createTransportStats, DatagramQueue } from '../net/transports/queue.ts';
import type { GameDefinition } from '../sim/game.ts';
import { combineHooks, type ServerHooks } from './hooks.ts';
import { GameServer, type ServerConfig } from './server.ts';

export interface MatchRouterOptions {
  /** Datagrams one match may have waiting between two of its updates (default 1024). */
  queueCapacity?: number;
  /** Protocol id of the lifecycle packets the router answers ("no such match"). */
  protocolId?: number;
  /** "No such match" refusals sent per second in all, whatever the source addresses (default 200). */
  maxRefusalsPerSecond?: number;
  /**
   * Packets from addresses not yet in a match (connect requests, challenge responses) each match
   * takes per second, bursts up to a second's worth (default 500: 16 players joining at once
   * resend 4 a second each), and as many again from addresses retrying their handshake once
   * that is spent (JoinGate), so a spoofed flood, which rarely repeats an address, cannot keep a
   * real client out. A flood of forged joins fills no match's queue: its players' packets,
   * routed by address, are never counted against this.
   */
  maxJoinPacketsPerSecond?: number;
}

export { Allowance } from '../net/allowance.ts';

/** Slots of a router's table of recent joiners (hashes of addresses not yet in a match that sent lately). */
const JOINER_SLOTS = 65536;
/** An address sending again within this long counts as a client retrying its handshake. */
const JOIN_RETRY_WINDOW_MS = 2000;
/** One retrying address passes at most this often (a flood from one real address repeats too). */
const JOIN_RETRY_GAP_MS = 100;

/**
 * What a router lets through to a match from addresses not yet in it (connect requests,
 * challenge responses), before the match's own connection layer: its first allowance, and when
 * that is spent (a flood), its retry allowance for an address that sent within
 * JOIN_RETRY_WINDOW_MS, at most once every JOIN_RETRY_GAP_MS. A spoofed flood rarely repeats an
 * address, so it spends the first allowance only, and a real client, which resends its handshake
 * until answered, gets in on a retry: the same two tiers as a single server's challenges
 * (ServerConnections). The table of recent joiners is the router's, one for all its matches
 * (1.25 MB, whatever the number of matches); each match has its own two allowances.
 */
export class JoinGate {
  private readonly tags = new Int32Array(JOINER_SLOTS);
  private readonly seenMs = new Float64Array(JOINER_SLOTS);
  private readonly passedMs = new Float64Array(JOINER_SLOTS).fill(Number.NEGATIVE_INFINITY);

  /** Whether a packet from `address` goes on to the match whose allowances these are; records the address. */
  take(address: string, nowMs: number, first: Allowance, retry: Allowance): boolean {
    const h = addressHash(address);
    const slot = addressSlot(h, JOINER_SLOTS);
    const tag = addressTag(h);
    const known = this.tags[slot] === tag;
    const retrying = known && nowMs - this.seenMs[slot] <= JOIN_RETRY_WINDOW_MS;
    if (!known) this.passedMs[slot] = Number.NEGATIVE_INFINITY;
    this.tags[slot] = tag;
    this.seenMs[slot] = nowMs;
    if (first.take(nowMs)) {
      this.passedMs[slot] = nowMs;
      return true;
    }
    if (retrying && nowMs - this.passedMs[slot] >= JOIN_RETRY_GAP_MS && retry.take(nowMs)) {
      this.passedMs[slot] = nowMs;
      return true;
    }
    return false;
  }
}

/**
 * The answer of a server hosting many matches to a connect request for a match it does not host:
 * a REFUSED packet with REFUSE_NO_SUCH_MATCH, at most `perSecond` in all whatever the source
 * addresses, so that a flood of such requests cannot turn the server into an amplifier. Anything
 * but a well-formed connect request gets no answer. Used by MatchRouter and MatchWorkers alike.
 */
export class NoMatchRefusals {
  /** Refusals sent. */
  sent = 0;
  private readonly allowance: Allowance;
  private readonly packet = createHandshakePacket();
  private readonly stream = createHandshakeStream();

  constructor(
    private readonly endpoint: DatagramEndpoint,
    private readonly protocolId: number,
    perSecond: number,
  ) {
    this.allowance = new Allowance(perSecond);
  }

  /** Answers `inner` (the packet behind its route header) from `from` at `nowMs`, if it is a connect request and the allowance has one. */
  answer(from: string, inner: Uint8Array, nowMs: number): void {
    if (inner[0] !== PACKET_CONNECT_REQUEST || !this.allowance.ready(nowMs)) return;
    const p = this.packet;
    if (readHandshakePacket(this.stream, this.protocolId, inner, p) !== '') return;
    this.allowance.take(nowMs);
    p.type = PACKET_REFUSED;
    p.reason = REFUSE_NO_SUCH_MATCH;
    this.sent++;
    this.endpoint.send(from, writeHandshakePacket(this.stream, this.protocolId, p));
  }
}

/** Throws a RangeError naming `where` and `key` unless `value` is a number >= 0. */
export function checkRate(where: string, key: string, value: number): void {
  if (!(value >= 0) || !Number.isFinite(value)) {
    throw new RangeError(`${where}: ${key} must be a number >= 0, got ${String(value)}`);
  }
}

/** What the router dropped, by reason, and what it refused. */
export interface MatchRouterStats {
  /** Datagrams dropped before reaching any match, by reason. */
  rejected: Record<string, number>;
  /** Connect requests answered "no such match". */
  refusedNoMatch: number;
}

/** The endpoint one match's GameServer sees: its own inbound queue, sends through the shared endpoint. */
export class MatchEndpoint implements DatagramEndpoint {
  readonly id: number;
  readonly address: string;
  /** Received datagrams dropped because this match's queue was full, and the like. */
  readonly stats = createTransportStats();
  /** Addresses this match has accepted (bound to it in the router). */
  readonly bound = new Set<string>();
  /**
   * Datagrams the router put here for this match, waiting for its server's poll.
   * @internal
   */
  readonly queue: DatagramQueue;
  /**
   * Packets from addresses not yet in a match, per second, and from those among them retrying (JoinGate).
   * @internal
   */
  readonly joins: Allowance;
  /** @internal */
  readonly rejoins: Allowance;
  private readonly router: MatchRouter;
  private open = true;

  constructor(
    router: MatchRouter,
    id: number,
    queueCapacity: number,
    address: string,
    joinsPerSecond: number,
  ) {
    this.router = router;
    this.joins = new Allowance(joinsPerSecond);
    this.rejoins = new Allowance(joinsPerSecond);
    this.id = id;
    this.address = `${address}#${id}`;
    this.queue = new DatagramQueue(queueCapacity, this.stats);
  }

  get isOpen(): boolean {
    return this.open;
  }

  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    this.stats.packetsSent++;
    this.stats.bytesSent += data.length;
    this.router.endpoint.send(to, data);
  }

  poll(_nowMs: number, onPacket: PacketHandler): void {
    if (this.open) this.queue.drain(onPacket);
  }

  hostOf(address: string): string | null {
    return this.router.endpoint.hostOf?.(address) ?? null;
  }

  drop(address: string): void {
    this.router.endpoint.drop?.(address);
  }

  established(address: string): void {
    this.router.endpoint.established?.(address);
  }

  /** Leaves the router: queued datagrams are discarded and every address bound to it is freed. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.queue.clear();
    this.router.release(this);
  }
}

/** Hands each datagram of one shared endpoint to the endpoint of the match it belongs to. */
export class MatchRouter {
  readonly endpoint: DatagramEndpoint;
  readonly stats: MatchRouterStats = { rejected: {}, refusedNoMatch: 0 };
  private readonly matches = new Map<number, MatchEndpoint>();
  private readonly byAddress = new Map<string, MatchEndpoint>();
  private readonly queueCapacity: number;
  private readonly protocolId: number;
  private readonly maxRefusalsPerSecond: number;
  private readonly maxJoinPacketsPerSecond: number;
  private readonly refusals: NoMatchRefusals;
  private readonly gate = new JoinGate();
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array): void => this.route(from, data);

  constructor(endpoint: DatagramEndpoint, options: MatchRouterOptions = {}) {
    this.endpoint = endpoint;
    this.queueCapacity = options.queueCapacity ?? 1024;
    this.protocolId = options.protocolId ?? DEFAULT_PROTOCOL_ID;
    this.maxRefusalsPerSecond = options.maxRefusalsPerSecond ?? 200;
    this.maxJoinPacketsPerSecond = options.maxJoinPacketsPerSecond ?? 500;
    checkRate('MatchRouter', 'maxRefusalsPerSecond', this.maxRefusalsPerSecond);
    checkRate('MatchRouter', 'maxJoinPacketsPerSecond', this.maxJoinPacketsPerSecond);
    this.refusals = new NoMatchRefusals(endpoint, this.protocolId, this.maxRefusalsPerSecond);
    // Checked here so that a bad capacity is reported when the router is made, not at the first match.
    new DatagramQueue(this.queueCapacity, createTransportStats());
  }

  /** Matches open. */
  get size(): number {
    return this.matches.size;
  }

  /** Addresses bound to a match. */
  get boundAddresses(): number {
    return this.byAddress.size;
  }

  /** A new match's endpoint. Throws if `id` is not a valid match id or is already open. */
  open(id: number): MatchEndpoint {
    checkMatchId('MatchRouter.open', id);
    if (this.matches.has(id)) throw new Error(`MatchRouter.open: match ${id} is already open`);
    const match = new MatchEndpoint(
      this,
      id,
      this.queueCapacity,
      this.endpoint.address,
      this.maxJoinPacketsPerSecond,
    );
    this.matches.set(id, match);
    return match;
  }

  /** The open match `id`, if any. */
  get(id: number): MatchEndpoint | undefined {
    return this.matches.get(id);
  }

  /** `address` is connected to `match`: its packets go there from now on, route header or not. */
  bind(address: string, match: MatchEndpoint): void {
    if (!match.isOpen) return;
    const previous = this.byAddress.get(address);
    if (previous !== undefined && previous !== match) previous.bound.delete(address);
    this.byAddress.set(address, match);
    match.bound.add(address);
  }

  /** `address`'s connection to `match` ended. */
  unbind(address: string, match: MatchEndpoint): void {
    if (this.byAddress.get(address) === match) this.byAddress.delete(address);
    match.bound.delete(address);
  }

  /** Reads every datagram waiting on the shared endpoint at `nowMs` into the matches' queues. */
  receive(nowMs: number): void {
    if (nowMs > this.nowMs) this.nowMs = nowMs;
    this.endpoint.poll(this.nowMs, this.onPacket);
  }

  /** @internal A match endpoint closed: forget it and its addresses. */
  release(match: MatchEndpoint): void {
    if (this.matches.get(match.id) === match) this.matches.delete(match.id);
    for (const address of match.bound)
      if (this.byAddress.get(address) === match) this.byAddress.delete(address);
    match.bound.clear();
  }

  private route(from: string, data: Uint8Array): void {
    const routed = readMatchRoute(data);
    const bound = this.byAddress.get(from);
    if (bound !== undefined) {
      if (routed === 0) bound.queue.push(from, data);
      else if (routed === bound.id) bound.queue.push(from, data.subarray(MATCH_ROUTE_HEADER_BYTES));
      else this.reject('routed away from its match');
      return;
    }
    if (routed === 0) {
      this.reject(peekPacketType(data) === PacketType.Data ? 'unknown address' : 'no route header');
      return;
    }
    const match = this.matches.get(routed);
    const inner = data.subarray(MATCH_ROUTE_HEADER_BYTES);
    if (match === undefined) {
      this.refuseNoMatch(from, inner);
      return;
    }
    if (!this.gate.take(from, this.nowMs, match.joins, match.rejoins)) {
      this.reject('join rate');
      return;
    }
    match.queue.push(from, inner);
  }

  private reject(reason: string): void {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
  }

  /** Answers a well-formed connect request for a match this server does not host; drops anything else. */
  private refuseNoMatch(from: string, inner: Uint8Array): void {
    this.reject('no such match');
    this.refusals.answer(from, inner, this.nowMs);
    this.stats.refusedNoMatch = this.refusals.sent;
  }
}

/** What a match is made of: its game, its server configuration and its rules (hooks). */
export interface MatchSpec<P, W> {
  game: GameDefinition<P, W>;
  config?: Partial<ServerConfig>;
  hooks?: ServerHooks<P, W>;
}

/** Why and how a match ended, as reported to `onEnded`. */
export interface MatchEnded {
  id: number;
  /** The DISCONNECT_* reason its clients were told. */
  reason: number;
  /** What its code threw, when it failed. */
  error?: unknown;
  /** Ticks it ran. */
  ticks: number;
  /** Clients connected when it ended. */
  clients: number;
}

export interface MatchHostOptions extends MatchRouterOptions {
  /** Called once for every match that ends (by `end`, by failure, or at `close`). */
  onEnded?: (ended: MatchEnded) => void;
  /**
   * A match accepted `address` (its connection's client nonce and disconnect token given: with
   * them a PACKET_SERVER_DISCONNECT can end the connection when the match cannot), or its
   * connection ended.
   */
  onBind?: (address: string, matchId: number, nonce: number, disconnectToken: Uint8Array) => void;
  onUnbind?: (address: string, matchId: number) => void;
  /** Told the id of each match just before `update` runs it, and 0 when all are done (a watchdog's view). */
  onRunning?: (matchId: number) => void;
}

/** One match a host runs: its id, its server, and the endpoint the router gave it. */
export interface HostedMatch {
  readonly id: number;
  readonly server: GameServer<unknown, unknown>;
  readonly endpoint: MatchEndpoint;
}

/**
 * Many matches on one shared endpoint in one thread: `create` and `end` by id, `update(nowMs)`
 * to run them all. Clients join a match with `MatchClientEndpoint` (its id in a route header).
 */
export class MatchHost {
  readonly router: MatchRouter;
  readonly matches = new Map<number, HostedMatch>();
  /** Matches ended so far, by how they ended. */
  readonly stats = { created: 0, ended: 0, failed: 0 };
  private readonly options: MatchHostOptions;

  constructor(endpoint: DatagramEndpoint, options: MatchHostOptions = {}) {
    this.router = new MatchRouter(endpoint, options);
    this.options = options;
  }

  /**
   * Creates match `id` (a GameServer of `spec.game` with its config and hooks) on the shared
   * endpoint. Throws if `id` is invalid or taken, or the config is bad (nothing is left open).
   */
  create<P, W>(id: number, spec: MatchSpec<P, W>): GameServer<P, W> {
    const endpoint = this.router.open(id);
    const { onBind, onUnbind } = this.options;
    const routing: ServerHooks<P, W> = {
      onConnect: (_server, client) => {
        this.router.bind(client.address, endpoint);
        onBind?.(client.address, id, client.connection.nonce, client.connection.disconnectToken);
      },
      onDisconnect: (_server, client) => {
        this.router.unbind(client.address, endpoint);
        onUnbind?.(client.address, id);
      },
    };
    let server: GameServer<P, W>;
    try {
      server = new GameServer(
        spec.game,
        endpoint,
        spec.config,
        spec.hooks === undefined ? routing : combineHooks(routing, spec.hooks),
      );
    } catch (error) {
      endpoint.close();
      throw error;
    }
    this.matches.set(id, { id, server: server as unknown as GameServer<unknown, unknown>, endpoint });
    this.stats.created++;
    return server;
  }

  /** The server of match `id`, if it runs here. */
  get(id: number): GameServer<unknown, unknown> | undefined {
    return this.matches.get(id)?.server;
  }

  /**
   * Ends match `id`: every client is told `reason` (three copies), the match's endpoint and
   * addresses are freed, and `onEnded` hears of it. False when no such match runs.
   */
  end(id: number, reason: number = DISCONNECT_MATCH_ENDED, error?: unknown): boolean {
    const match = this.matches.get(id);
    if (match === undefined) return false;
    this.matches.delete(id);
    const server = match.server;
    const clients = server.clientCount;
    for (const client of server.clients) {
      if (client === null) continue;
      try {
        server.disconnect(client, reason);
      } catch (failure) {
        // The match's own disconnect hook threw: the client was told all the same.
        error ??= failure;
      }
    }
    match.endpoint.close();
    if (error === undefined) this.stats.ended++;
    else this.stats.failed++;
    this.options.onEnded?.({ id, reason, error, ticks: server.stats.ticks, clients });
    return true;
  }

  /**
   * Reads the shared endpoint and runs every match due at `nowMs`. A match that throws is ended
   * with DISCONNECT_MATCH_FAILED and reported; the others run on.
   */
  update(nowMs: number): void {
    this.router.receive(nowMs);
    const running = this.options.onRunning;
    for (const match of this.matches.values()) {
      running?.(match.id);
      try {
        match.server.update(nowMs);
      } catch (error) {
        this.end(match.id, DISCONNECT_MATCH_FAILED, error);
      }
    }
    running?.(0);
  }

  /** Ends every match (DISCONNECT_SERVER_SHUTDOWN) and closes the shared endpoint. */
  close(): void | Promise<void> {
    for (const id of [...this.matches.keys()]) this.end(id, DISCONNECT_SERVER_SHUTDOWN);
    return this.router.endpoint.close();
  }
}
