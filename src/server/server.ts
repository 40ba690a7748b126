// The authoritative server loop (the paper's): fixed tick; read client commands; run each for
// its own msec within the client's time budget; simulate server-controlled objects; send each
// client its frame. Driven by time passed in: `update(nowMs)`.

import { PacketChannel } from '../net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_CLIENT_LEFT,
  DISCONNECT_KICKED,
  DISCONNECT_SERVER_SHUTDOWN,
  DISCONNECT_TIMED_OUT,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  PACKET_DISCONNECT,
  PACKET_REFUSED,
  peekPacketType,
  REFUSE_BANNED,
  REFUSE_SERVER_FULL,
  REFUSE_TOO_MANY_ATTEMPTS,
  REFUSE_WRONG_VERSION,
  readHandshakePacket,
  writeHandshakePacket,
} from '../net/handshake.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import { BitStream } from '../protocol/bitstream.ts';
import {
  type ClientFlags,
  checkEventTable,
  type FrameHeader,
  MAX_COMMANDS_PER_PACKET,
  MAX_EVENTS_PER_FRAME,
  serializeClientFlags,
  serializeCommandRun,
  serializeFrameHeader,
  serializeWireEvent,
} from '../protocol/frames.ts';
import { createUserCommand, type UserCommand } from '../protocol/usercmd.ts';
import type { GameDefinition } from '../sim/game.ts';
import { SequenceBuffer } from '../sim/ring.ts';
import { CommandQueue, type CommandStats } from './commands.ts';
import { CookieJar } from './cookie.ts';
import { EntityStore } from './entities.ts';
import { EventCapture, EventLog } from './events.ts';
import {
  LAG_COMPENSATION_MODES,
  type LagCompensationConfig,
  type LagCompensationMode,
  LagCompensator,
} from './lag-compensation.ts';
import { SnapshotWriter, type SnapshotWriterConfig } from './snapshot-writer.ts';

export interface ServerConfig {
  /** Simulation ticks per second. */
  tickRate: number;
  maxClients: number;
  /** Packets of another protocol id are rejected by checksum. */
  protocolId: number;
  /** Clients of another version are refused with a reason. */
  protocolVersion: number;
  /** How far a client's commands may run ahead of real time (see CommandQueue). */
  commandSlackMs: number;
  /**
   * Most commands one client runs in a tick (each may cost a lag-compensated shot): a client at
   * 500 frames per second still fits; one sending 1 ms commands cannot buy 16 rewinds a tick.
   */
  maxCommandsPerTick: number;
  /** Data packets per second one connection may send (bursts up to a second's worth); the rest are dropped and counted. */
  maxPacketsPerSecond: number;
  /** How fast a command backlog after a stall drains, and the most unused time owed (see CommandQueue). */
  commandCatchUpRate: number;
  commandMaxOwedMs: number;
  /** Button bits the game accepts; others are cleared and counted. */
  validButtons: number;
  /** A client silent this long is disconnected. */
  timeoutMs: number;
  /** A challenge cookie is honoured for this long. */
  cookieLifetimeMs: number;
  /** Connection attempts (requests and responses) per second allowed from one address. */
  connectAttemptsPerSecond: number;
  /**
   * Challenges (each costs a keyed hash) and challenge checks the whole server makes per second,
   * whatever the source addresses: a flood from spoofed addresses costs at most this much.
   */
  maxHandshakesPerSecond: number;
  /** Snapshot rate used until a client asks for another, and the most a client may ask for. */
  defaultUpdateRate: number;
  /** Bytes per second used until a client asks for another. */
  defaultRateBytesPerSecond: number;
  /** Secret for challenge cookies (random when omitted). */
  cookieSecret?: Uint8Array;
  /** Ticks of entity history kept (a power of two): the oldest state a snapshot can delta from. */
  entityHistoryTicks: number;
  /** Interest and priority of each client's snapshots. */
  snapshots: Partial<SnapshotWriterConfig>;
  /** Effect events reach only clients within this distance of the player who caused them. */
  eventRadius: number;
  /** Share of a frame's room that effect events may take; the snapshot gets the rest. */
  eventBudgetShare: number;
  /** How hit-scan shots are judged (mode, maxUnlagMs, view tolerance). */
  lagCompensation: Partial<LagCompensationConfig>;
  /**
   * Also judge every shot in the other two lag compensation modes (on a copy of the shooter, so
   * nothing changes): `onShot` reports all three, and the figures compare on the same shots.
   */
  judgeAllModes: boolean;
}

export const DEFAULT_SERVER_CONFIG: ServerConfig = {
  tickRate: 64,
  maxClients: 32,
  protocolId: 0x42535450,
  protocolVersion: 1,
  commandSlackMs: 200,
  maxCommandsPerTick: 8,
  maxPacketsPerSecond: 250,
  commandCatchUpRate: 0.1,
  commandMaxOwedMs: 1000,
  validButtons: 0xffff,
  timeoutMs: 10_000,
  cookieLifetimeMs: 10_000,
  connectAttemptsPerSecond: 4,
  maxHandshakesPerSecond: 2000,
  defaultUpdateRate: 32,
  defaultRateBytesPerSecond: 80_000,
  entityHistoryTicks: 256,
  snapshots: {},
  eventRadius: 2000,
  eventBudgetShare: 0.25,
  lagCompensation: {},
  judgeAllModes: false,
};

/** Server-side game code: server-controlled objects and reactions to clients coming and going. */
export interface ServerHooks<P, W> {
  /** After every client's commands ran this tick. */
  onTick?(server: GameServer<P, W>, tick: number): void;
  /** After a client's command ran (its state is the result). */
  onCommand?(server: GameServer<P, W>, client: ServerClient<P>, cmd: UserCommand): void;
  /**
   * A command that may fire a hit-scan weapon was judged in `mode` against the world as the
   * shooter saw it; `events` holds what the shared code emitted (its hits). `decisive` is true
   * for the configured mode, whose run changed the game (the others ran on a copy).
   */
  onShot?(
    server: GameServer<P, W>,
    client: ServerClient<P>,
    cmd: UserCommand,
    mode: LagCompensationMode,
    events: EventCapture,
    decisive: boolean,
  ): void;
  onConnect?(server: GameServer<P, W>, client: ServerClient<P>): void;
  onDisconnect?(server: GameServer<P, W>, client: ServerClient<P>, reason: number): void;
}

export interface ServerStats {
  ticks: number;
  /** Ticks skipped because the server fell too far behind real time. */
  ticksSkipped: number;
  /** Packets from unknown addresses that were not valid lifecycle packets, by reason. */
  rejected: Record<string, number>;
  connects: number;
  disconnects: number;
}

/** One connected client as the server sees it. */
export class ServerClient<P> {
  readonly slot: number;
  readonly address: string;
  readonly nonce: number;
  readonly channel: PacketChannel;
  readonly state: P;
  readonly commands: CommandQueue;
  updateRate: number;
  rateBytesPerSecond: number;
  /** When the next frame is due by the update rate. */
  nextUpdateMs = 0;
  /** When the rate (bytes per second) lets the next packet go: after each packet, its size / rate. */
  rateFreeMs = 0;
  /** Frames due by the update rate but held back by the rate since the last frame sent. */
  chokedSinceSent = 0;
  /** Total frames held back by the rate (choke). */
  choked = 0;
  /** Frames sent. */
  framesSent = 0;
  /** The update-rate slot whose choke was already counted. */
  chokeCountedFor = -1;
  /** Position in the server's event log of the next event to send. */
  eventCursor = 0;
  /** Frames that failed to decode on this client's connection (commands). */
  badPayloads = 0;
  /** Effect events within hearing that did not fit the frame's event budget (effects only: not resent). */
  eventsDropped = 0;
  /** Packets dropped for coming faster than maxPacketsPerSecond, and the allowance left. */
  packetsThrottled = 0;
  packetAllowance = 0;
  /** This client's player as an entity other clients see. */
  entity = -1;
  /** Its snapshots: delta-encoded against the newest frame it acknowledged. */
  readonly snapshots: SnapshotWriter;
  /** The server tick of the frame each sent packet carried, by packet sequence. */
  readonly frameTicks = new SequenceBuffer<{ tick: number }>(1024, () => ({ tick: -1 }));
  /** Bound once: writes this client's frame into a packet. */
  readonly writeFrame: (s: BitStream) => void;

  constructor(
    slot: number,
    address: string,
    nonce: number,
    channel: PacketChannel,
    state: P,
    commands: CommandQueue,
    updateRate: number,
    rate: number,
    snapshots: SnapshotWriter,
    writeFrame: (client: ServerClient<P>, s: BitStream) => void,
  ) {
    this.slot = slot;
    this.address = address;
    this.nonce = nonce;
    this.channel = channel;
    this.state = state;
    this.commands = commands;
    this.updateRate = updateRate;
    this.rateBytesPerSecond = rate;
    this.snapshots = snapshots;
    this.writeFrame = (s) => writeFrame(this, s);
    channel.onAck = (sequence) => {
      const frame = this.frameTicks.get(sequence);
      if (frame !== undefined) snapshots.acknowledge(frame.tick);
    };
  }

  get commandStats(): CommandStats {
    return this.commands.stats;
  }
}

const ATTEMPT_BUCKETS = 4096;

/** The source of events emitted by server-side code (not by any client's commands). */
export const WORLD_EVENT_SOURCE = 0xffff;

/** The authoritative game server. */
export class GameServer<P, W> {
  readonly config: ServerConfig;
  readonly game: GameDefinition<P, W>;
  readonly world: W;
  readonly hooks: ServerHooks<P, W>;
  readonly events = new EventLog();
  /** Every replicated entity, players included, with its history. */
  readonly entities: EntityStore;
  /** Lag compensation for hit-scan shots (null when the game has none). */
  readonly lagCompensation: LagCompensator<P, W> | null;
  readonly clients: (ServerClient<P> | null)[];
  readonly stats: ServerStats = { ticks: 0, ticksSkipped: 0, rejected: {}, connects: 0, disconnects: 0 };
  readonly tickIntervalMs: number;
  /** The newest tick simulated. Server time is tick * tickIntervalMs. */
  tick = 0;
  /**
   * Refused with REFUSE_BANNED: exact addresses, an address without its port ("udp:203.0.113.9"
   * bans every port of that host), or a host as the transport names it (`hostOf`).
   */
  readonly banned = new Set<string>();

  private readonly endpoint: DatagramEndpoint;
  private readonly byAddress = new Map<string, ServerClient<P>>();
  private readonly cookies: CookieJar;
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly cookie = { hi: 0, lo: 0 };
  private readonly cmds: UserCommand[] = [];
  private readonly run = { count: 0 };
  private readonly flags: ClientFlags = { resetBaseline: false };
  private readonly entityScratch: Float64Array;
  private readonly viewer = { x: 0, y: 0, z: 0 };
  private readonly eventOrigin = { x: 0, y: 0, z: 0 };
  private readonly eventPick = new Int32Array(MAX_EVENTS_PER_FRAME);
  private readonly eventMeasure = new BitStream(0);
  private readonly shotEvents = new EventCapture();
  /** Entity indices of the connected players: the targets a shot can hit. */
  private readonly playerEntities: Int32Array;
  private playerCount = 0;
  private readonly shadowState: P;
  private readonly header: FrameHeader = { serverTick: 0, choked: 0, hasPlayer: false, ackedCommand: 0 };
  /** Connection attempts per hashed address bucket: bounded state, whatever the source addresses. */
  private readonly attempts = new Float64Array(ATTEMPT_BUCKETS);
  private readonly attemptsStartMs = new Float64Array(ATTEMPT_BUCKETS);
  private nowMs = 0;
  private handshakeAllowance = 0;
  private handshakeRefillMs = 0;
  private nextTickMs = -1;
  private readonly onPacket = (from: string, data: Uint8Array) => this.receive(from, data);

  constructor(
    game: GameDefinition<P, W>,
    endpoint: DatagramEndpoint,
    config: Partial<ServerConfig> = {},
    hooks: ServerHooks<P, W> = {},
  ) {
    this.config = { ...DEFAULT_SERVER_CONFIG, ...config };
    validateServerConfig(this.config);
    this.game = game;
    this.endpoint = endpoint;
    this.hooks = hooks;
    this.world = game.createWorld();
    this.tickIntervalMs = 1000 / this.config.tickRate;
    this.clients = new Array(this.config.maxClients).fill(null);
    this.cookies = new CookieJar(this.config.cookieSecret);
    this.entities = new EntityStore(game.entities, { historyTicks: this.config.entityHistoryTicks });
    this.entityScratch = new Float64Array(game.entities.stride);
    this.lagCompensation =
      game.hitscan === undefined
        ? null
        : new LagCompensator(this.entities, game.hitscan, this.tickIntervalMs, this.config.lagCompensation);
    this.shadowState = game.player.create();
    if (game.events !== undefined) checkEventTable(game.events);
    this.handshakeAllowance = this.config.maxHandshakesPerSecond;
    this.playerEntities = new Int32Array(this.config.maxClients);
    for (let i = 0; i < MAX_COMMANDS_PER_PACKET; i++) this.cmds.push(createUserCommand());
  }

  /** Server time of the newest tick, milliseconds. */
  get timeMs(): number {
    return this.tick * this.tickIntervalMs;
  }

  get clientCount(): number {
    return this.byAddress.size;
  }

  /** Reads packets and runs every tick that is due at `nowMs`. */
  update(nowMs: number): void {
    if (nowMs < this.nowMs) nowMs = this.nowMs;
    this.nowMs = nowMs;
    if (this.nextTickMs < 0) this.nextTickMs = nowMs;
    this.endpoint.poll(nowMs, this.onPacket);
    let ran = 0;
    while (nowMs >= this.nextTickMs) {
      if (ran === 8) {
        // Too far behind: drop the backlog rather than spiral.
        const behind = Math.floor((nowMs - this.nextTickMs) / this.tickIntervalMs) + 1;
        this.stats.ticksSkipped += behind;
        this.nextTickMs += behind * this.tickIntervalMs;
        // The clients' real time passed all the same: their command budgets get it.
        for (const c of this.clients) if (c !== null) c.commands.addRealTime(behind * this.tickIntervalMs);
        break;
      }
      this.runTick();
      this.nextTickMs += this.tickIntervalMs;
      ran++;
    }
  }

  /**
   * Disconnects every client (telling each, redundantly) and closes the endpoint; a real
   * transport's promise resolves when its sockets are closed (await it before exiting).
   */
  close(): void | Promise<void> {
    for (const c of this.clients) if (c) this.disconnect(c, DISCONNECT_SERVER_SHUTDOWN);
    return this.endpoint.close();
  }

  /** Bans an address (or a host: an address without its port) and disconnects whoever matches. */
  ban(address: string): void {
    this.banned.add(address);
    for (const c of this.clients)
      if (c !== null && this.isBanned(c.address)) this.disconnect(c, DISCONNECT_KICKED);
  }

  isBanned(address: string): boolean {
    if (this.banned.size === 0) return false;
    if (this.banned.has(address)) return true;
    const host = this.endpoint.hostOf?.(address);
    if (host !== undefined && host !== null && this.banned.has(host)) return true;
    const port = address.lastIndexOf(':');
    return port > 0 && this.banned.has(address.slice(0, port));
  }

  /** Removes a client, telling it why (three copies, since packets may be lost). */
  disconnect(client: ServerClient<P>, reason: number): void {
    if (this.clients[client.slot] !== client) return;
    for (let i = 0; i < 3; i++) this.sendHandshake(client.address, PACKET_DISCONNECT, client.nonce, reason);
    this.clients[client.slot] = null;
    this.byAddress.delete(client.address);
    this.endpoint.drop?.(client.address);
    if (client.entity >= 0) this.entities.remove(client.entity);
    this.listPlayers();
    this.stats.disconnects++;
    this.hooks.onDisconnect?.(this, client, reason);
  }

  private runTick(): void {
    this.tick++;
    this.stats.ticks++;
    const { player } = this.game;
    const events = this.events;
    events.predictedBySource = true;
    for (const client of this.clients) {
      if (client === null) continue;
      client.commands.addRealTime(this.tickIntervalMs);
      const perSecond = this.config.maxPacketsPerSecond;
      client.packetAllowance = Math.min(
        perSecond,
        client.packetAllowance + (perSecond * this.tickIntervalMs) / 1000,
      );
      events.source = client.slot;
      for (let n = 0; n < this.config.maxCommandsPerTick; n++) {
        const cmd = client.commands.next();
        if (cmd === undefined) break;
        if (this.lagCompensation !== null && this.game.hitscan?.fires(client.state, cmd))
          this.runShot(client, cmd);
        else player.move(client.state, cmd, this.world, events);
        this.hooks.onCommand?.(this, client, cmd);
      }
    }
    events.predictedBySource = false;
    events.source = WORLD_EVENT_SOURCE;
    this.hooks.onTick?.(this, this.tick);
    this.updatePlayerEntities();
    this.entities.commit(this.tick);
    const now = this.nowMs;
    for (const client of this.clients) {
      if (client === null) continue;
      if (now - client.channel.lastReceivedMs > this.config.timeoutMs) {
        this.disconnect(client, DISCONNECT_TIMED_OUT);
        continue;
      }
      this.sendFrameIfDue(client, now);
    }
  }

  /**
   * The paper's footnote 7: after each packet the server works out when the next may go, from
   * the update rate the client asked for and its rate in bytes per second, so spacing varies.
   * A frame due by the update rate but held back by the rate is counted as choke.
   */
  private sendFrameIfDue(client: ServerClient<P>, now: number): void {
    if (now < client.nextUpdateMs) {
      client.channel.update(now);
      return;
    }
    if (now < client.rateFreeMs) {
      if (client.chokeCountedFor !== client.nextUpdateMs) {
        client.chokeCountedFor = client.nextUpdateMs;
        client.chokedSinceSent++;
        client.choked++;
      }
      client.channel.update(now);
      return;
    }
    const before = client.channel.stats.bytesSent;
    const sequence = client.channel.send(now, client.writeFrame);
    client.frameTicks.insert(sequence).tick = this.tick;
    const bytes = client.channel.stats.bytesSent - before;
    client.framesSent++;
    client.chokedSinceSent = 0;
    const interval = 1000 / client.updateRate;
    client.nextUpdateMs = Math.max(client.nextUpdateMs + interval, now);
    client.rateFreeMs = now + (bytes * 1000) / client.rateBytesPerSecond;
  }

  /**
   * Runs a command that may fire a hit-scan weapon: the other players as the shooter saw them
   * (lag compensation), then the present as it was. With judgeAllModes, the other two modes
   * judge the same shot on a copy of the shooter first.
   */
  private runShot(client: ServerClient<P>, cmd: UserCommand): void {
    const decisive = (this.lagCompensation as LagCompensator<P, W>).config.mode;
    if (this.config.judgeAllModes) {
      for (const mode of LAG_COMPENSATION_MODES) {
        if (mode === decisive) continue;
        this.game.player.copy(this.shadowState, client.state);
        this.judge(client, this.shadowState, cmd, mode, false);
      }
    }
    this.judge(client, client.state, cmd, decisive, true);
  }

  /** Runs `cmd` on `state` against the world as `mode` rebuilds the shooter's view, then reports it. */
  private judge(
    client: ServerClient<P>,
    state: P,
    cmd: UserCommand,
    mode: LagCompensationMode,
    decisive: boolean,
  ): void {
    const lag = this.lagCompensation as LagCompensator<P, W>;
    const capture = this.shotEvents;
    const { rttMs, rttVarianceMs } = client.channel.stats;
    lag.rewind(
      mode,
      this.world,
      state,
      cmd,
      client.entity,
      client.snapshots,
      rttMs,
      rttVarianceMs,
      this.tick - 1,
      this.playerEntities,
      this.playerCount,
    );
    capture.reset(decisive ? this.events : null);
    this.game.player.move(state, cmd, this.world, capture);
    lag.finish(this.world, client.entity);
    this.hooks.onShot?.(this, client, cmd, mode, capture, decisive);
  }

  private listPlayers(): void {
    let n = 0;
    for (const c of this.clients) if (c !== null && c.entity >= 0) this.playerEntities[n++] = c.entity;
    this.playerCount = n;
  }

  private updatePlayerEntities(): void {
    const out = this.entityScratch;
    const { playerEntity } = this.game;
    const fieldCount = this.game.entities.types[playerEntity.typeId].fieldCount;
    for (const client of this.clients) {
      if (client === null) continue;
      playerEntity.write(client.state, out);
      for (let i = 0; i < fieldCount; i++) this.entities.setField(client.entity, i, out[i]);
    }
  }

  private writeFrame(client: ServerClient<P>, s: BitStream): void {
    const h = this.header;
    h.serverTick = this.tick;
    h.hasPlayer = true;
    h.ackedCommand = client.commands.lastDone;
    h.choked = Math.min(client.chokedSinceSent, 255);
    serializeFrameHeader(s, h);
    this.game.player.serialize(s, client.state);
    this.writeEvents(client, s);
    const v = this.game.player.origin(client.state, this.viewer);
    client.snapshots.write(s, this.tick, v.x, v.y, v.z, s.bitsRemaining, client.entity);
  }

  /**
   * Writes the effect events this client has not been sent: only those of players within
   * eventRadius (and the world's), never its own predicted ones, within the frame's event budget.
   * Events past the budget are dropped and counted: effects are not worth a late delivery.
   */
  private writeEvents(client: ServerClient<P>, s: BitStream): void {
    const log = this.events;
    if (client.eventCursor < log.tail) client.eventCursor = log.tail;
    const budgetBits = s.bitsRemaining * this.config.eventBudgetShare;
    const table = this.game.events ?? null;
    const m = this.eventMeasure;
    let used = 0;
    const here = this.game.player.origin(client.state, this.viewer);
    const hx = here.x;
    const hy = here.y;
    const hz = here.z;
    const r2 = this.config.eventRadius * this.config.eventRadius;
    let count = 0;
    for (let p = client.eventCursor; p < log.head; p++) {
      if (!this.hears(client, p, hx, hy, hz, r2)) continue;
      m.beginMeasure();
      serializeWireEvent(m, log.at(p), table);
      if (count < MAX_EVENTS_PER_FRAME && used + m.bitsProcessed <= budgetBits) {
        this.eventPick[count++] = p;
        used += m.bitsProcessed;
      } else {
        client.eventsDropped++;
      }
    }
    s.int(count, 0, MAX_EVENTS_PER_FRAME);
    for (let i = 0; i < count; i++) serializeWireEvent(s, log.at(this.eventPick[i]), table);
    client.eventCursor = log.head;
  }

  /** Whether `client` should be sent event `position`: not its own prediction, and within hearing. */
  private hears(
    client: ServerClient<P>,
    position: number,
    hx: number,
    hy: number,
    hz: number,
    r2: number,
  ): boolean {
    const log = this.events;
    if (log.isOwnPrediction(position, client.slot)) return false;
    const source = log.at(position).source;
    const from = source < this.clients.length ? this.clients[source] : null;
    if (from === null || from === undefined) return true;
    const o = this.game.player.origin(from.state, this.eventOrigin);
    const dx = o.x - hx;
    const dy = o.y - hy;
    const dz = o.z - hz;
    return dx * dx + dy * dy + dz * dz <= r2;
  }

  private receive(from: string, data: Uint8Array): void {
    const client = this.byAddress.get(from);
    const type = peekPacketType(data);
    if (client !== undefined && type === 0) {
      this.receiveData(client, data);
      return;
    }
    if (type < PACKET_CONNECT_REQUEST || type > PACKET_DISCONNECT) {
      this.reject(client === undefined ? 'unknown address' : 'bad type');
      return;
    }
    const error = readHandshakePacket(this.hsStream, this.config.protocolId, data, this.hs);
    if (error !== '') {
      this.reject(error);
      return;
    }
    const p = this.hs;
    if (client !== undefined) {
      if (p.clientNonce !== client.nonce) {
        this.reject('wrong nonce');
        return;
      }
      if (p.type === PACKET_DISCONNECT) this.disconnect(client, DISCONNECT_CLIENT_LEFT);
      else if (p.type === PACKET_CHALLENGE_RESPONSE) this.sendAccepted(client);
      return;
    }
    if (p.type === PACKET_CONNECT_REQUEST) this.onConnectRequest(from);
    else if (p.type === PACKET_CHALLENGE_RESPONSE) this.onChallengeResponse(from);
    else this.reject('unexpected lifecycle packet');
  }

  private reject(reason: string): void {
    this.stats.rejected[reason] = (this.stats.rejected[reason] ?? 0) + 1;
  }

  /** Counts an attempt from `address` in its hashed bucket; false when over the limit. */
  private allowAttempt(address: string): boolean {
    let h = 0x811c9dc5;
    for (let i = 0; i < address.length; i++) h = Math.imul(h ^ address.charCodeAt(i), 0x01000193);
    const b = (h >>> 0) & (ATTEMPT_BUCKETS - 1);
    if (this.nowMs - this.attemptsStartMs[b] >= 1000) {
      this.attemptsStartMs[b] = this.nowMs;
      this.attempts[b] = 0;
    }
    this.attempts[b]++;
    return this.attempts[b] <= this.config.connectAttemptsPerSecond;
  }

  /** Takes one from the server-wide handshake allowance; false (and counted) when it is spent. */
  private allowHandshake(): boolean {
    const perSecond = this.config.maxHandshakesPerSecond;
    this.handshakeAllowance = Math.min(
      perSecond,
      this.handshakeAllowance + ((this.nowMs - this.handshakeRefillMs) * perSecond) / 1000,
    );
    this.handshakeRefillMs = this.nowMs;
    if (this.handshakeAllowance < 1) {
      this.reject('handshake rate');
      return false;
    }
    this.handshakeAllowance--;
    return true;
  }

  private onConnectRequest(from: string): void {
    const p = this.hs;
    if (!this.allowAttempt(from)) {
      this.reject('too many attempts');
      return;
    }
    if (!this.allowHandshake()) return;
    if (this.isBanned(from)) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_BANNED);
      this.endpoint.drop?.(from);
      return;
    }
    if (p.version !== this.config.protocolVersion) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_WRONG_VERSION);
      return;
    }
    const issuedAt = Math.floor(this.nowMs) >>> 0;
    this.cookies.make(from, issuedAt, p.clientNonce, this.cookie);
    const out = this.hs;
    out.type = PACKET_CHALLENGE;
    out.issuedAt = issuedAt;
    out.cookieHi = this.cookie.hi;
    out.cookieLo = this.cookie.lo;
    this.endpoint.send(from, writeHandshakePacket(this.hsStream, this.config.protocolId, out));
  }

  private onChallengeResponse(from: string): void {
    const p = this.hs;
    if (!this.allowAttempt(from)) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_TOO_MANY_ATTEMPTS);
      return;
    }
    if (!this.allowHandshake()) return;
    // issuedAt is server time in ms modulo 2^32; the difference is taken modulo 2^32 as well.
    const age = ((Math.floor(this.nowMs) >>> 0) - p.issuedAt) >>> 0;
    if (age > this.config.cookieLifetimeMs) {
      this.reject('cookie expired');
      return;
    }
    if (!this.cookies.check(from, p.issuedAt, p.clientNonce, p.cookieHi, p.cookieLo)) {
      this.reject('bad cookie');
      return;
    }
    if (this.isBanned(from)) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_BANNED);
      this.endpoint.drop?.(from);
      return;
    }
    const slot = this.clients.indexOf(null);
    if (slot < 0) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_SERVER_FULL);
      return;
    }
    const channel = new PacketChannel((bytes) => this.endpoint.send(from, bytes), {
      protocolId: this.config.protocolId,
    });
    channel.lastReceivedMs = this.nowMs;
    const state = this.game.player.create();
    this.game.spawn(state, this.world, slot);
    const commands = new CommandQueue({
      commandSlackMs: this.config.commandSlackMs,
      validButtons: this.config.validButtons,
      catchUpRate: this.config.commandCatchUpRate,
      maxOwedMs: this.config.commandMaxOwedMs,
    });
    const entity = this.entities.create(this.game.playerEntity.typeId);
    if (entity < 0) {
      this.sendHandshake(from, PACKET_REFUSED, p.clientNonce, REFUSE_SERVER_FULL);
      return;
    }
    const updateRate = Math.min(p.updateRate, this.config.defaultUpdateRate, this.config.tickRate);
    const client = new ServerClient(
      slot,
      from,
      p.clientNonce,
      channel,
      state,
      commands,
      updateRate,
      p.rate > 0 ? p.rate : this.config.defaultRateBytesPerSecond,
      new SnapshotWriter(this.entities, this.config.snapshots),
      (c, s) => this.writeFrame(c, s),
    );
    client.entity = entity;
    client.eventCursor = this.events.head;
    client.nextUpdateMs = this.nowMs;
    client.packetAllowance = this.config.maxPacketsPerSecond;
    this.clients[slot] = client;
    this.byAddress.set(from, client);
    this.listPlayers();
    this.stats.connects++;
    this.sendAccepted(client);
    this.hooks.onConnect?.(this, client);
  }

  private sendAccepted(client: ServerClient<P>): void {
    const out = this.hs;
    out.type = PACKET_ACCEPTED;
    out.clientNonce = client.nonce;
    out.slot = client.slot;
    out.tickRate = this.config.tickRate;
    out.serverTick = this.tick;
    this.endpoint.send(client.address, writeHandshakePacket(this.hsStream, this.config.protocolId, out));
  }

  private sendHandshake(to: string, type: number, nonce: number, reason: number): void {
    const out = this.hs;
    out.type = type;
    out.clientNonce = nonce;
    out.reason = reason;
    this.endpoint.send(to, writeHandshakePacket(this.hsStream, this.config.protocolId, out));
  }

  private receiveData(client: ServerClient<P>, data: Uint8Array): void {
    if (client.packetAllowance < 1) {
      client.packetsThrottled++;
      return;
    }
    client.packetAllowance--;
    const s = client.channel.receive(this.nowMs, data);
    // Null: dropped and counted by the channel. Under a byte of payload: a keepalive.
    if (s === null || s.bitsRemaining < 8) return;
    const run = this.run;
    if (!serializeClientFlags(s, this.flags) || !serializeCommandRun(s, this.cmds, run)) {
      client.badPayloads++;
      return;
    }
    if (this.flags.resetBaseline) client.snapshots.resetBaseline();
    for (let i = 0; i < run.count; i++) client.commands.receive(this.cmds[i], i === 0);
  }
}

function validateServerConfig(c: ServerConfig): void {
  const positive: (keyof ServerConfig)[] = [
    'tickRate',
    'maxCommandsPerTick',
    'maxPacketsPerSecond',
    'maxClients',
    'timeoutMs',
    'cookieLifetimeMs',
    'connectAttemptsPerSecond',
    'maxHandshakesPerSecond',
    'defaultUpdateRate',
    'defaultRateBytesPerSecond',
  ];
  for (const key of positive) {
    const v = c[key];
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
      throw new RangeError(`server config: ${key} must be a positive number, got ${String(v)}`);
    }
  }
  if (!Number.isInteger(c.tickRate) || c.tickRate > 255) {
    throw new RangeError(`server config: tickRate must be an integer in 1..255, got ${c.tickRate}`);
  }
  if (!Number.isInteger(c.maxClients) || c.maxClients > 65535) {
    throw new RangeError(`server config: maxClients must be an integer in 1..65535, got ${c.maxClients}`);
  }
  if (!(c.commandSlackMs >= 0)) {
    throw new RangeError(`server config: commandSlackMs must be >= 0, got ${c.commandSlackMs}`);
  }
}
