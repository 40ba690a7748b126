// The authoritative server loop (the paper's): fixed tick; read client commands; run each for
// its own msec within the client's time budget; simulate server-controlled objects; send each
// client its frame. Driven by time passed in: `update(nowMs)`.

import { DEFAULT_PROTOCOL_ID, DEFAULT_PROTOCOL_VERSION } from '../net/channel.ts';
import type { ConnectTokensConfig } from '../net/connect-token.ts';
import {
  DISCONNECT_CLIENT_LEFT,
  DISCONNECT_KICKED,
  DISCONNECT_TIMED_OUT,
  REFUSE_NO_SPECTATORS,
  REFUSE_SERVER_FULL,
} from '../net/handshake.ts';
import type { RateControllerConfig } from '../net/rate-control.ts';
import { type ConnectionStats, type ServerConnection, ServerConnections } from '../net/server-connections.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import { BitStream } from '../protocol/bitstream.ts';
import {
  type ClientFlags,
  type CommandRun,
  checkEventTable,
  createClientFlags,
  MAX_COMMANDS_PER_PACKET,
  serializeClientFlags,
  serializeCommandRun,
} from '../protocol/frames.ts';
import { PlayerStateHistory } from '../protocol/player-state.ts';
import type { EntityType, EntityTypeSchema } from '../protocol/schema.ts';
import { createUserCommand, type UserCommand } from '../protocol/usercmd.ts';
import { type GameDefinition, gameSchemaHash } from '../sim/game.ts';
import { type Vec3, vec3 } from '../sim/math.ts';
import { nextPowerOfTwo, SequenceRecords } from '../sim/ring.ts';
import { createFrameBits, FramePacing, FrameWriter } from './client-frames.ts';
import {
  CommandQueue,
  type CommandStats,
  jitterAllowanceFor,
  MAX_REORDER_WINDOW_MS,
  MAX_SILENT_WAIT_MS,
  MIN_REORDER_WINDOW_MS,
  reorderWindowFor,
} from './commands.ts';
import { DEFAULT_ENTITY_STORE_CONFIG, EntityStore } from './entities.ts';
import { EventCapture, EventLog, eventLogSize } from './events.ts';
import type { ServerHooks } from './hooks.ts';
import {
  DEFAULT_LAG_COMPENSATION_CONFIG,
  type LagCompensationConfig,
  type LagCompensationMode,
  LagCompensator,
} from './lag-compensation.ts';
import { SnapshotEncodeCache } from './snapshot-cache.ts';
import { MAX_REMEMBER_TICKS, SnapshotWriter, type SnapshotWriterConfig } from './snapshot-writer.ts';
import { type SpectatorConfig, SpectatorHub } from './spectators.ts';

export interface ServerConfig {
  /** Simulation ticks per second. */
  tickRate: number;
  maxClients: number;
  /** Packets of another protocol id are rejected by checksum. */
  protocolId: number;
  /** Clients of another version are refused with a reason. */
  protocolVersion: number;
  /**
   * How far a client's commands may run ahead of real time (see CommandQueue): real time a client
   * left unused (a stall: a latency spike, a loss burst, a handover) is paid back up to this much
   * when its late commands arrive together, so an honest client's prediction is not corrected
   * for a stall that short. It is also the most a speed hack or a lag switch gains at any moment,
   * and the bank is spent at most `maxCommandsPerTick` commands a tick. Default 2000 ms.
   */
  commandSlackMs: number;
  /**
   * Most commands one client runs in a tick (each may cost a lag-compensated shot): a client at
   * 500 frames per second still fits; one sending 1 ms commands cannot buy 16 rewinds a tick.
   */
  maxCommandsPerTick: number;
  /** Data packets per second one connection may send (bursts up to a second's worth); the rest are dropped and counted. */
  maxPacketsPerSecond: number;
  /** How fast a command backlog after a stall drains (see CommandQueue). */
  commandCatchUpRate: number;
  /**
   * A command the server skips as lost (every copy of it lost, the reorder window passed) is
   * filled in with the command before it, as Source does: the player keeps moving as its client
   * predicted instead of standing still for the lost time, holding the game's
   * `input.heldButtons`, never firing. At most this much simulated time in a row (ms; 0: skip
   * lost commands). Default 1000 ms.
   */
  fillLostMs: number;
  /**
   * The longest a missing command is waited for once a newer one has arrived while the client is
   * heard (ms, default 1500: MAX_REORDER_WINDOW_MS; 20 to 10000; maxSilentWaitMs more while it is
   * not). The wait is otherwise each client's reorder window,
   * from its measured ack delay (time to notice a command lost and send it again, twice over).
   * Longer: fewer commands lost to a bad link (each a correction for its player), but a player
   * whose command is missing stands still on the server, for everyone else, while it is waited for.
   */
  maxReorderWindowMs: number;
  /**
   * Past maxReorderWindowMs, a missing command is still waited for while the client is silent (no
   * acknowledgement of a recent frame arrives: an up-link loss burst), up to this much more (ms,
   * default 1000: MAX_SILENT_WAIT_MS; 0 to 10000). Its client sends it in every packet, so the first
   * packet after the silence brings it; skipped, it would cost the player a correction for nothing.
   */
  maxSilentWaitMs: number;
  /** A client silent this long is disconnected. */
  timeoutMs: number;
  /** A challenge cookie is honoured for this long. */
  cookieLifetimeMs: number;
  /**
   * Challenges the whole server sends per second, whatever the source addresses (a spoofed
   * flood costs at most this much; clients retrying are still answered past it). A client that
   * returns a valid cookie is refused for no rate but maxKeyExchangesPerSecond's (see ServerConnectionsConfig).
   */
  maxHandshakesPerSecond: number;
  /**
   * Key agreements per second for challenge responses with valid cookies, each address at most
   * one every 100 ms (see ServerConnectionsConfig): what a replayed or garbled response can cost.
   */
  maxKeyExchangesPerSecond: number;
  /** Snapshot rate used until a client asks for another, and the most a client may ask for. */
  defaultUpdateRate: number;
  /** Bytes per second used until a client asks for another. */
  defaultRateBytesPerSecond: number;
  /**
   * Spread the clients' frames evenly over the ticks (default true): a tick writes at most its
   * share of the frames (each client's update rate over the tick rate, summed) and a few more; a
   * frame due past that waits a tick, and its client's frames keep the new phase. Clients that
   * joined on the same tick parity would otherwise share their frames' ticks, and the busiest
   * tick, not the mean, sets how many players a core holds. false: every frame goes when due.
   */
  spreadFrames: boolean;
  /**
   * Finding each client's usable down-link rate from round-trip growth and loss (delay-based
   * congestion control, src/net/rate-control.ts; on by default, `{}`, or its tuning): the rate a
   * client asked for (or the default) is then only the upper bound, and a slow link shows
   * smaller snapshots and choke instead of a queue. false: send at the configured rate whatever
   * the link.
   */
  rateControl: Partial<Omit<RateControllerConfig, 'maxBytesPerSecond'>> | false;
  /** Secret for challenge cookies (random when omitted). */
  cookieSecret?: Uint8Array;
  /**
   * The server's X25519 secret key, 32 bytes (a fresh one at every start when omitted). Give the
   * same key at every start to keep the server's public key (`GameServer.publicKey`) the same,
   * so clients can pin it (`ClientConfig.serverPublicKey`) across restarts; keep it as secret as
   * the backend's token key.
   */
  secretKey?: Uint8Array;
  /**
   * Connect tokens (off by default): the backend's key and this server's name as tokens list it.
   * The server then takes only clients with a token from that backend, for this server, not
   * expired and not used from another address; `ServerClient.userId` names each player.
   */
  connectTokens?: ConnectTokensConfig;
  /**
   * Ticks of entity history kept: the oldest state a snapshot can delta from and lag compensation
   * can rebuild. 0 (the default): enough for lag compensation, the next power of two above a
   * command's longest wait, maxUnlagMs, lateArrivalMs and a second, at least 256 (512 at 64 Hz
   * with the defaults; 256 for a game without hit-scan). Otherwise a power of two, and with lag
   * compensation more than the longest wait, maxUnlagMs and lateArrivalMs in ticks (a RangeError
   * says the least).
   */
  entityHistoryTicks: number;
  /** Interest and priority of each client's snapshots. */
  snapshots: Partial<SnapshotWriterConfig>;
  /** Effect events reach only clients within this distance of the player who caused them. */
  eventRadius: number;
  /** Share of a frame's room that effect events may take; the snapshot gets the rest. */
  eventBudgetShare: number;
  /** How hit-scan shots are judged (mode, maxUnlagMs and the view acceptance limits). */
  lagCompensation: Partial<LagCompensationConfig>;
  /**
   * How long a player whose client timed out or left waits for it to come back, ms (0: not at
   * all). Meanwhile its slot is held and its player stays in the world as it was; a client that
   * connects again with the resume token of its previous connection (GameClient does so by
   * itself) takes the slot and the player's state back. After it, the player is removed.
   */
  reconnectGraceMs: number;
  /** Spectators: how many besides the players (default none), the delays offered, their frame rate. */
  spectators: Partial<SpectatorConfig>;
}

export const DEFAULT_SERVER_CONFIG: ServerConfig = {
  tickRate: 64,
  maxClients: 32,
  protocolId: DEFAULT_PROTOCOL_ID,
  protocolVersion: DEFAULT_PROTOCOL_VERSION,
  commandSlackMs: 2000,
  maxCommandsPerTick: 8,
  maxPacketsPerSecond: 250,
  commandCatchUpRate: 0.1,
  fillLostMs: 1000,
  maxReorderWindowMs: MAX_REORDER_WINDOW_MS,
  maxSilentWaitMs: MAX_SILENT_WAIT_MS,
  timeoutMs: 10_000,
  cookieLifetimeMs: 10_000,
  maxHandshakesPerSecond: 5000,
  maxKeyExchangesPerSecond: 1000,
  defaultUpdateRate: 32,
  defaultRateBytesPerSecond: 80_000,
  spreadFrames: true,
  rateControl: {},
  entityHistoryTicks: 0,
  snapshots: {},
  eventRadius: 2000,
  eventBudgetShare: 0.25,
  lagCompensation: {},
  reconnectGraceMs: 0,
  spectators: {},
};

export interface ServerStats extends ConnectionStats {
  ticks: number;
  /** Ticks skipped because the server fell too far behind real time. */
  ticksSkipped: number;
  /**
   * Frames held back a tick because the tick already carried its share (`spreadFrames`): each
   * moves its client's frames to a quieter tick for good, so this stops growing once the clients'
   * frames are spread over the ticks.
   */
  framesSpread: number;
  /**
   * Where the updates' time went, in milliseconds of the real clock (performance.now) summed over
   * every update: reading the packets due; running the ticks (game messages, commands, lag
   * compensation, the tick hooks, the entity commit); and the connections' upkeep and the frames
   * due, the spectators' included. Two reads of the clock per update and three per tick; nothing
   * in the game reads them. The update's own few steps (and skipping ticks when far behind) are
   * in none, so the three add up to a little less than the updates took. Differences over a
   * window give its cost per phase.
   */
  phaseMs: { receive: number; simulate: number; send: number };
}

/**
 * Frames a tick may write beyond its share before one waits (`spreadFrames`): enough that frames
 * the rate held back or a client just joined do not wait, few enough that the busiest tick stays
 * within a handful of frames of the mean.
 */
const SPREAD_MARGIN_FRAMES = 4;

/**
 * Reliable game messages one client's onMessage is given per tick (1,024 a second at 64 Hz): a
 * client filling its receive window every tick costs the game a bounded number of parses.
 */
export const MAX_MESSAGES_PER_TICK = 16;

/** Packets remembered per client, sent (frames) and received (acknowledgements, the last to arrive). */
const SENT_FRAMES = 1024;
const PACKET_ACKS = 64;

/**
 * What each packet sent to a client carried, by packet sequence modulo SENT_FRAMES: a record of
 * FRAME_* fields each, not an object per packet (a server of 512 clients held half a million of
 * them, and looks one up for every acknowledgement) nor an array per field (a fetch from memory
 * per field).
 */
const FRAME_STRIDE = 5;
/** The server tick of the frame it carried. */
const FRAME_TICK = 1;
const FRAME_SENT_MS = 2;
const FRAME_BYTES = 3;
/** 1: the second packet of a packet pair (a keepalive went right before it), 2: its gap taken; else 0. */
const FRAME_PAIRED = 4;
/**
 * A pair report comes within a round trip and the client's queue of reports; one about a frame
 * older than this many ticks is ignored: 256 packets later its 8 low bits name another packet,
 * and a client gets at most a frame a tick, with the pairs' keepalives and no idle one beside.
 */
const PAIR_REPORT_MAX_TICKS = 192;

/**
 * The last PACKET_ACKS packets to arrive from a client, in the order they came (a ring): each
 * one's sequence (-1: an empty record), the newest frame it acknowledged (its tick, -1: none) and
 * the newest command it carried (-1: none; ACKS_KEEPALIVE: a keepalive).
 */
const ACKS_STRIDE = 3;
const ACKS_SEQUENCE = 0;
const ACKS_TICK = 1;
const ACKS_NEWEST_COMMAND = 2;
const ACKS_KEEPALIVE = -2;

/** One connected client as the game loop sees it: its connection, player, commands and frames. */
export class ServerClient<P> {
  /** The player's state: the result of the newest command run. Server code may change it (then `GameServer.teleported`). */
  readonly state: P;
  /** This client's player as an entity other clients see. */
  readonly entity: number;
  private conn: ServerConnection;
  private queue: CommandQueue;
  private writer: SnapshotWriter;
  /**
   * When its frames go (update rate, rate, choke).
   * @internal
   */
  pacing: FramePacing;
  /** The player states its frames carried: the player part goes against the acknowledged one. */
  readonly players: PlayerStateHistory<P>;
  /** Frames that failed to decode on this client's connection (commands). */
  badPayloads = 0;
  /**
   * Position in the server's event log of the next event to send.
   * @internal
   */
  eventCursor: number;
  /** Effect events within hearing that did not fit the frame's event budget (effects only: not resent). */
  eventsDropped = 0;
  /** Events the server's log overwrote before this client's next frame could look at them. */
  eventsMissed = 0;
  /** Bits of its frames by part (header, player part, events; the snapshot's are its writer's). */
  readonly frameBits = createFrameBits();
  /**
   * The server tick of the frame each sent packet carried, by packet sequence.
   * @internal
   */
  frameTicks = new SequenceRecords(SENT_FRAMES, FRAME_STRIDE);
  /**
   * What the last packets to arrive acknowledged and carried (ACKS_* records, a ring in arrival
   * order; `packetAcksNext` is the next record written).
   * @internal
   */
  packetAcks = new Float64Array(PACKET_ACKS * ACKS_STRIDE).fill(-1);
  /** @internal */
  packetAcksNext = 0;
  /**
   * The newest frame tick any record of `packetAcks` names (-1: none), or NaN until it is found
   * (at first, and after the record that held it was overwritten: checkClaimedNewest). NaN at
   * first also makes it a double field from the start (createUserCommand says why).
   * @internal
   */
  packetAcksNewestTick = Number.NaN;
  /**
   * When the newest frame the client acknowledged was sent (server ms): whether it hears the
   * server now (its command queue's `clientHearing`).
   * @internal
   */
  heardSentMs = Number.NEGATIVE_INFINITY;
  /**
   * Writes this client's frame into a packet (made once: no allocation per frame).
   * @internal
   */
  readonly writeFrame: (s: BitStream) => void;
  /** How this client's shots are judged; null: the server's configured mode. */
  lagCompensationMode: LagCompensationMode | null = null;
  /**
   * When the connection dropped and the player waits for its client to come back (grace
   * period): the time it may wait until, ms; -1 while connected.
   */
  awayUntilMs = -1;
  /**
   * Why the connection dropped, while away.
   * @internal
   */
  awayReason = 0;

  constructor(
    connection: ServerConnection,
    state: P,
    entity: number,
    commands: CommandQueue,
    snapshots: SnapshotWriter,
    players: PlayerStateHistory<P>,
    pacing: FramePacing,
    eventCursor: number,
    writeFrame: (client: ServerClient<P>, s: BitStream) => void,
  ) {
    this.conn = connection;
    this.state = state;
    this.entity = entity;
    this.queue = commands;
    this.writer = snapshots;
    this.players = players;
    this.pacing = pacing;
    this.eventCursor = eventCursor;
    this.writeFrame = (s) => writeFrame(this, s);
    this.listen(connection);
  }

  /** Its connection (a reconnection within the grace period brings a new one). */
  get connection(): ServerConnection {
    return this.conn;
  }

  /** Its commands waiting to run, and their time budget. */
  get commands(): CommandQueue {
    return this.queue;
  }

  /** Its snapshots: delta-encoded against the newest frame it acknowledged. */
  get snapshots(): SnapshotWriter {
    return this.writer;
  }

  /**
   * A new connection takes this player over: fresh commands, snapshots (from nothing), pacing
   * and frame record.
   * @internal
   */
  rebind(
    connection: ServerConnection,
    commands: CommandQueue,
    snapshots: SnapshotWriter,
    pacing: FramePacing,
    eventCursor: number,
  ): void {
    this.conn = connection;
    this.queue = commands;
    this.writer = snapshots;
    this.players.reset();
    this.pacing = pacing;
    this.eventCursor = eventCursor;
    this.frameTicks = new SequenceRecords(SENT_FRAMES, FRAME_STRIDE);
    this.packetAcks.fill(-1);
    this.packetAcksNext = 0;
    this.packetAcksNewestTick = Number.NaN;
    this.heardSentMs = Number.NEGATIVE_INFINITY;
    this.awayUntilMs = -1;
    this.listen(connection);
  }

  /**
   * The client reports a packet pair's gap, `gap` quarter milliseconds, ending with the packet
   * whose sequence has low 8 bits `low`: taken once, when that is the newest such packet sent, a
   * pair the server sent within `maxAgeMs` of `nowMs` (a report of any other keepalive and frame,
   * or one so late that the low bits may name a newer packet, is ignored).
   * @internal
   */
  /**
   * What the server sent as packet `sequence`: -1 not a frame it remembers, 0 a frame, 1 a packet
   * pair's frame not yet reported, 2 one reported.
   * @internal
   */
  pairState(sequence: number): number {
    const i = this.frameTicks.slot(sequence);
    return i < 0 ? -1 : this.frameTicks.records[i + FRAME_PAIRED];
  }

  takePair(nowMs: number, maxAgeMs: number, low: number, gap: number): void {
    const newest = (this.conn.channel.sequence + 0xffff) & 0xffff;
    const frames = this.frameTicks;
    const i = frames.slot((newest - ((newest - low) & 0xff)) & 0xffff);
    if (i < 0) return;
    const records = frames.records;
    if (records[i + FRAME_PAIRED] !== 1 || nowMs - records[i + FRAME_SENT_MS] > maxAgeMs) return;
    records[i + FRAME_PAIRED] = 2;
    this.pacing.onPair(gap / 4, records[i + FRAME_BYTES]);
  }

  /** True while the connection is gone and the player waits for its client (grace period). */
  get away(): boolean {
    return this.awayUntilMs >= 0;
  }

  private listen(connection: ServerConnection): void {
    connection.channel.onAck = (sequence, rttSampleMs) => {
      const frames = this.frameTicks;
      const i = frames.slot(sequence);
      if (i < 0) return;
      const records = frames.records;
      const sentMs = records[i + FRAME_SENT_MS];
      if (sentMs > this.heardSentMs) this.heardSentMs = sentMs;
      this.snapshots.acknowledge(records[i + FRAME_TICK]);
      this.pacing.onAck(sentMs, rttSampleMs, records[i + FRAME_BYTES]);
    };
  }

  /**
   * The player's slot, 0 .. maxClients - 1: the lowest slot that was free (and not held for a
   * player away within its grace period) when its handshake completed, kept across a
   * reconnection. Events it causes carry it as their source; the game spawns it with it.
   */
  get slot(): number {
    return this.connection.slot;
  }

  get address(): string {
    return this.connection.address;
  }

  /** The user its connect token named (null: the server takes no tokens). */
  get userId(): string | null {
    return this.connection.userId;
  }

  /** What the backend put in its connect token for the game (null: no token). */
  get userData(): Uint8Array | null {
    return this.connection.userData;
  }

  get channel(): ServerConnection['channel'] {
    return this.connection.channel;
  }

  /** The newest of this client's commands the server ran. */
  get lastCommand(): number {
    return this.commands.lastDone;
  }

  get framesSent(): number {
    return this.pacing.framesSent;
  }

  get choked(): number {
    return this.pacing.choked;
  }

  get commandStats(): CommandStats {
    return this.commands.stats;
  }
}

/** Field values of an entity of state `S`, by field name (a missing field is left as it is). */
export type EntityValues<S> = { readonly [K in keyof S & string]?: number | boolean };

/** The source of events emitted by server-side code (not by any client's commands). */
export const WORLD_EVENT_SOURCE = 0xffff;

/** The authoritative game server: the game loop over its connection layer. */
export class GameServer<P, W> {
  readonly config: ServerConfig;
  readonly game: GameDefinition<P, W>;
  readonly world: W;
  readonly hooks: ServerHooks<P, W>;
  readonly events: EventLog;
  /** Every replicated entity, players included, with its history. */
  readonly entities: EntityStore;
  /** Lag compensation for hit-scan shots (null when the game has none). */
  readonly lagCompensation: LagCompensator<P, W> | null;
  /** Encoded snapshot entries, shared by every client's writer within a tick. */
  readonly snapshotCache: SnapshotEncodeCache;
  /** Connected clients by slot (null: free, or a spectator's slot). */
  readonly clients: (ServerClient<P> | null)[];
  /** Clients watching with no player (null when the server takes no spectators). */
  readonly spectators: SpectatorHub<P, W> | null;
  readonly stats: ServerStats = {
    ticks: 0,
    ticksSkipped: 0,
    framesSpread: 0,
    rejected: {},
    connects: 0,
    disconnects: 0,
    phaseMs: { receive: 0, simulate: 0, send: 0 },
  };
  /** The handshake, bans, allowances and timeouts: everything before and around the game. */
  readonly connections: ServerConnections;
  readonly tickIntervalMs: number;
  /** The newest tick simulated. Server time is tick * tickIntervalMs. */
  tick = 0;

  /**
   * When the newest tick was due, on the clock `update` is given (-1 before the first): the
   * server's present is tick * tickIntervalMs + (now - newestTickAtMs).
   */
  get newestTickAtMs(): number {
    return this.nextTickMs < 0 ? -1 : this.nextTickMs - this.tickIntervalMs;
  }

  private readonly cmds: UserCommand[] = [];
  private readonly run: CommandRun = { count: 0, baseGap: 0, shortFirst: false };
  private readonly flags: ClientFlags = createClientFlags();
  private readonly entityScratch: Float64Array;
  private readonly frames: FrameWriter<P, W>;
  private readonly shotEvents = new EventCapture();
  /** Entity indices of the connected players: the targets a shot can hit. */
  private readonly playerEntities: Int32Array;
  private playerCount = 0;
  private readonly shadowState: P;
  /** A player state as the game creates it, never changed: where a respawn starts from. */
  private readonly blankState: P;
  private nowMs = 0;
  private nextTickMs = -1;
  private readonly point: Vec3 = vec3();
  private readonly writeClientFrame = (client: ServerClient<P>, s: BitStream): void =>
    this.frames.write(client, this.tick, s);

  constructor(
    game: GameDefinition<P, W>,
    endpoint: DatagramEndpoint,
    config: Partial<ServerConfig> = {},
    hooks: ServerHooks<P, W> = {},
  ) {
    this.config = { ...DEFAULT_SERVER_CONFIG, ...config };
    validateServerConfig(this.config);
    const c = this.config;
    this.game = game;
    this.hooks = hooks;
    this.world = game.createWorld();
    this.tickIntervalMs = 1000 / c.tickRate;
    const maxSpectators = c.spectators.maxSpectators ?? 0;
    this.events = new EventLog(eventLogSize(c.maxClients));
    this.clients = new Array(c.maxClients + maxSpectators).fill(null);
    this.entities = new EntityStore(game.entities, { historyTicks: this.historyTicks(game) });
    this.spectators =
      maxSpectators > 0
        ? new SpectatorHub(game, this.entities, this.events, this.tickIntervalMs, c.spectators)
        : null;
    this.snapshotCache = new SnapshotEncodeCache(this.entities);
    this.entityScratch = new Float64Array(game.entities.stride);
    this.lagCompensation =
      game.hitscan === undefined
        ? null
        : new LagCompensator(this.entities, game.hitscan, this.tickIntervalMs, c.lagCompensation);
    if (this.lagCompensation !== null && this.maxHeldAgeTicks() < 1) {
      throw new RangeError(
        `GameServer: entityHistoryTicks (${c.entityHistoryTicks}) must be more than a command's longest wait (${this.maxWaitedTicks()} ticks: maxReorderWindowMs, maxSilentWaitMs and commandSlackMs) plus lagCompensation.maxUnlagMs and lateArrivalMs (${this.unlagTicks()} ticks); 0 chooses ${this.lagCompensationHistoryTicks()}`,
      );
    }
    this.shadowState = game.player.create();
    this.blankState = game.player.create();
    if (game.events !== undefined) checkEventTable(game.events);
    this.playerEntities = new Int32Array(c.maxClients);
    for (let i = 0; i < MAX_COMMANDS_PER_PACKET; i++) this.cmds.push(createUserCommand());
    this.frames = new FrameWriter(game, this.events, this.clients, c, new BitStream(0));
    this.connections = new ServerConnections(
      endpoint,
      {
        maxClients: c.maxClients + maxSpectators,
        tickRate: c.tickRate,
        protocolId: c.protocolId,
        protocolVersion: c.protocolVersion,
        schemaHash: gameSchemaHash(game),
        timeoutMs: c.timeoutMs,
        cookieLifetimeMs: c.cookieLifetimeMs,
        maxHandshakesPerSecond: c.maxHandshakesPerSecond,
        maxKeyExchangesPerSecond: c.maxKeyExchangesPerSecond,
        maxPacketsPerSecond: c.maxPacketsPerSecond,
        cookieSecret: c.cookieSecret,
        secretKey: c.secretKey,
        connectTokens: c.connectTokens,
      },
      {
        accept: (connection) => this.accept(connection),
        payload: (connection, s) => this.receivePayload(connection, s),
        keepalive: (connection) => this.receiveKeepalive(connection),
        disconnected: (connection, reason) => this.removeClient(connection, reason),
      },
      this.stats,
    );
  }

  /** Server time of the newest tick, milliseconds. */
  get timeMs(): number {
    return this.tick * this.tickIntervalMs;
  }

  get clientCount(): number {
    return this.connections.count;
  }

  /** The server's X25519 public key (a backend may give it to clients to pin: ClientConfig.serverPublicKey). */
  get publicKey(): Uint8Array {
    return this.connections.publicKey;
  }

  /** Refused with REFUSE_BANNED: addresses, hosts, or addresses without their port. */
  get banned(): Set<string> {
    return this.connections.banned;
  }

  /** Reads packets and runs every tick that is due at `nowMs`. */
  update(nowMs: number): void {
    if (nowMs < this.nowMs) nowMs = this.nowMs;
    this.nowMs = nowMs;
    if (this.nextTickMs < 0) this.nextTickMs = nowMs;
    const started = performance.now();
    this.connections.receive(nowMs);
    this.stats.phaseMs.receive += performance.now() - started;
    let ran = 0;
    while (nowMs >= this.nextTickMs) {
      if (ran === 8) {
        // Too far behind: drop the backlog rather than spiral.
        const behind = Math.floor((nowMs - this.nextTickMs) / this.tickIntervalMs) + 1;
        this.stats.ticksSkipped += behind;
        this.nextTickMs += behind * this.tickIntervalMs;
        // The clients' real time passed all the same: their command budgets get it, and their
        // reorder windows fall by it.
        for (let i = 0; i < this.clients.length; i++) {
          const c = this.clients[i];
          if (c === null) continue;
          c.commands.addRealTime(behind * this.tickIntervalMs);
          c.commands.followReorderWindow(MIN_REORDER_WINDOW_MS, behind * this.tickIntervalMs);
        }
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
    return this.connections.close();
  }

  /** Bans an address (or a host: an address without its port) and disconnects whoever matches. */
  ban(address: string): void {
    this.connections.ban(address);
  }

  isBanned(address: string): boolean {
    return this.connections.isBanned(address);
  }

  /** Removes a client, telling it why (three copies, since packets may be lost). */
  disconnect(client: ServerClient<P>, reason: number = DISCONNECT_KICKED): void {
    if (client.awayUntilMs >= 0) {
      if (this.clients[client.slot] === client) this.forgetClient(client, reason);
      return;
    }
    this.connections.disconnect(client.connection, reason);
  }

  /**
   * Puts `client`'s player back at its spawn point with a fresh state (as the game creates it,
   * then `spawn`), marked as teleported: no client interpolates from where it was.
   */
  respawn(client: ServerClient<P>): void {
    this.game.player.copy(client.state, this.blankState);
    this.game.spawn(client.state, this.world, client.slot);
    this.teleported(client);
  }

  /**
   * Server code moved `client`'s player (set its state's position): marks its entity as
   * teleported, so clients draw it at the new place at once instead of sliding there.
   */
  teleported(client: ServerClient<P>): void {
    this.entities.teleport(client.entity);
  }

  /**
   * Moves `client`'s player to (x, y, z) from server code (a 2D game passes z = 0), through the
   * game's `player.setOrigin`, and marks it teleported (see `teleported`).
   */
  teleport(client: ServerClient<P>, x: number, y: number, z: number): void {
    const setOrigin = this.game.player.setOrigin;
    if (setOrigin === undefined) {
      throw new Error(`GameServer.teleport: game '${this.game.name}' has no player.setOrigin`);
    }
    this.point.x = x;
    this.point.y = y;
    this.point.z = z;
    setOrigin(client.state, this.point);
    this.teleported(client);
  }

  /**
   * Creates a server-controlled entity of `type` (one of the game's entity types, not the
   * players'), its fields set from `values` by name (the rest at their zero), and returns its
   * index. Clients see it from the next snapshot. Throws when the entity store is full.
   */
  spawnEntity<S>(type: EntityType<S>, values: EntityValues<S> = {}): number {
    const typeId = this.typeIdOf(type, 'spawnEntity');
    if (typeId === this.game.playerEntity.typeId) {
      throw new RangeError(`GameServer.spawnEntity: '${type.name}' is the player entity type`);
    }
    const entity = this.entities.create(typeId);
    if (entity < 0) throw new RangeError(`GameServer.spawnEntity: the entity store is full`);
    this.writeEntity(entity, type, values);
    return entity;
  }

  /**
   * Sets fields of a server-controlled entity by name (an object per call: in a per-tick loop,
   * write `server.entities.setField(entity, type.index.name, value)` instead, which costs nothing).
   */
  updateEntity<S>(entity: number, type: EntityType<S>, values: EntityValues<S>): void {
    const typeId = this.typeIdOf(type, 'updateEntity');
    if (!this.entities.isAlive(entity) || this.entities.typeIdAt(entity) !== typeId) {
      throw new RangeError(`GameServer.updateEntity: entity ${entity} is not a live '${type.name}'`);
    }
    this.writeEntity(entity, type, values);
  }

  /** Removes a server-controlled entity: clients stop seeing it from the next snapshot. */
  despawnEntity(entity: number): void {
    if (!this.entities.isAlive(entity)) {
      throw new RangeError(`GameServer.despawnEntity: entity ${entity} is not alive`);
    }
    for (const c of this.clients) {
      if (c !== null && c.entity === entity) {
        throw new RangeError(`GameServer.despawnEntity: entity ${entity} is a player's`);
      }
    }
    this.entities.remove(entity);
  }

  /**
   * Queues a reliable game message for `client` (1 to `maxReliableMessageBytes` bytes, 1024 by
   * default): delivered exactly once and in order, to `ClientHooks.onMessage`. Returns false when
   * the client's window of unacknowledged messages is full (or it is away): send it later.
   */
  sendMessage(client: ServerClient<P>, message: Uint8Array): boolean {
    if (client.awayUntilMs >= 0) return false;
    return client.channel.sendReliable(message);
  }

  /**
   * Runs `cmd` on a copy of `client`'s player against the world as `mode` rebuilds the shooter's
   * view, and returns what the shared code emitted; the game is left as it was. For tools that
   * compare lag compensation modes on the same shots (from `beforeShot`).
   */
  judgeShot(client: ServerClient<P>, cmd: UserCommand, mode: LagCompensationMode): EventCapture {
    this.game.player.copy(this.shadowState, client.state);
    return this.judge(client, this.shadowState, cmd, mode, null);
  }

  private accept(connection: ServerConnection): number {
    const c = this.config;
    if (connection.spectatorDelayMs >= 0) {
      if (this.spectators === null) return REFUSE_NO_SPECTATORS;
      return this.spectators.accept(connection, this.nowMs) ? 0 : REFUSE_SERVER_FULL;
    }
    const away = this.clients[connection.slot];
    if (away !== null) return this.resume(away, connection);
    if (this.playerCount >= c.maxClients) return REFUSE_SERVER_FULL;
    const entity = this.entities.create(this.game.playerEntity.typeId);
    if (entity < 0) return REFUSE_SERVER_FULL;
    const state = this.game.player.create();
    this.game.spawn(state, this.world, connection.slot);
    const client = new ServerClient(
      connection,
      state,
      entity,
      this.createCommandQueue(),
      new SnapshotWriter(this.entities, this.writerConfig(), this.snapshotCache),
      new PlayerStateHistory(this.game.player.serialize, this.entities.schema.frameHistory),
      this.createPacing(connection),
      this.events.head,
      this.writeClientFrame,
    );
    this.clients[connection.slot] = client;
    this.listPlayers();
    this.hooks.onConnect?.(this, client);
    return 0;
  }

  /**
   * The longest a command can wait on the server after it arrived, in ticks: for a missing one
   * before it (maxReorderWindowMs, and maxSilentWaitMs more while the client is silent), then
   * behind the backlog the budget lets through (at most `commandSlackMs` of commands wait; more
   * are dropped).
   */
  private maxWaitedTicks(): number {
    const c = this.config;
    return Math.ceil(((c.maxReorderWindowMs + c.maxSilentWaitMs + c.commandSlackMs) * c.tickRate) / 1000);
  }

  /**
   * A client's snapshot writer settings: it remembers its frames for as long as lag compensation
   * may name one, a command's longest wait on the server (maxWaitedTicks) plus `maxUnlagMs` and
   * `lateArrivalMs`.
   */
  private writerConfig(): Partial<SnapshotWriterConfig> {
    const c = this.config;
    const ticks = this.maxWaitedTicks() + (this.lagCompensation === null ? 0 : this.unlagTicks()) + 2;
    return {
      rememberTicks: Math.min(ticks, MAX_REMEMBER_TICKS),
      maxHeldAgeTicks: this.maxHeldAgeTicks(),
      ...c.snapshots,
    };
  }

  /**
   * How old the values a client holds of an entity may get (SnapshotWriterConfig.maxHeldAgeTicks)
   * for lag compensation to still find them in the entity history: a command names a frame at
   * most maxUnlagMs + lateArrivalMs and its longest wait before it runs, so values no older than the history less
   * those are there when it does (0: no lag compensation, no limit).
   */
  private maxHeldAgeTicks(): number {
    if (this.lagCompensation === null) return 0;
    return this.entities.config.historyTicks - this.maxWaitedTicks() - this.unlagTicks() - 1;
  }

  /**
   * How old in server time a named view may be when its command arrives, lagCompensation's
   * maxUnlagMs + lateArrivalMs, in ticks (from the configuration: usable before the compensator is).
   */
  private unlagTicks(): number {
    const c = this.config;
    const d = DEFAULT_LAG_COMPENSATION_CONFIG;
    const unlagMs =
      (c.lagCompensation.maxUnlagMs ?? d.maxUnlagMs) + (c.lagCompensation.lateArrivalMs ?? d.lateArrivalMs);
    return Math.ceil((unlagMs * c.tickRate) / 1000);
  }

  /**
   * The entity history lag compensation needs: a command's longest wait, maxUnlagMs and
   * lateArrivalMs, and a second.
   */
  private lagCompensationHistoryTicks(): number {
    const wanted = this.maxWaitedTicks() + this.unlagTicks() + this.config.tickRate + 1;
    return Math.max(DEFAULT_ENTITY_STORE_CONFIG.historyTicks, nextPowerOfTwo(wanted));
  }

  /** The entity history's length: entityHistoryTicks, or (0) enough for lag compensation. */
  private historyTicks(game: GameDefinition<P, W>): number {
    const c = this.config;
    if (c.entityHistoryTicks !== 0) return c.entityHistoryTicks;
    return game.hitscan === undefined
      ? DEFAULT_ENTITY_STORE_CONFIG.historyTicks
      : this.lagCompensationHistoryTicks();
  }

  private createCommandQueue(): CommandQueue {
    const c = this.config;
    return new CommandQueue({
      commandSlackMs: c.commandSlackMs,
      validButtons: this.game.input.buttons,
      maxImpulse: this.game.input.maxImpulse,
      catchUpRate: c.commandCatchUpRate,
      reorderWindowMs: MIN_REORDER_WINDOW_MS,
      heldButtons: this.game.input.heldButtons ?? 0,
      fillLostMs: c.fillLostMs,
      maxReorderWindowMs: c.maxReorderWindowMs,
      maxSilentWaitMs: c.maxSilentWaitMs,
    });
  }

  private createPacing(connection: ServerConnection): FramePacing {
    const c = this.config;
    const updateRate = Math.min(connection.requestedUpdateRate, c.defaultUpdateRate, c.tickRate);
    const rate =
      connection.requestedRateBytesPerSecond > 0
        ? connection.requestedRateBytesPerSecond
        : c.defaultRateBytesPerSecond;
    const control = c.rateControl === false ? null : c.rateControl;
    return new FramePacing(updateRate, rate, this.nowMs, control);
  }

  /**
   * A client came back with its player's resume token (away, or still connected on an old
   * connection): the new connection takes the player over with fresh commands, snapshots (from
   * nothing) and pacing; the player's state and entity are as they were.
   */
  private resume(client: ServerClient<P>, connection: ServerConnection): number {
    client.rebind(
      connection,
      this.createCommandQueue(),
      new SnapshotWriter(this.entities, this.writerConfig(), this.snapshotCache),
      this.createPacing(connection),
      this.events.head,
    );
    this.connections.reserved[connection.slot] = 0;
    this.hooks.onReconnect?.(this, client);
    return 0;
  }

  private removeClient(connection: ServerConnection, reason: number): void {
    this.spectators?.remove(connection);
    const client = this.clients[connection.slot];
    if (client === null || client.connection !== connection) return;
    const grace = this.config.reconnectGraceMs;
    if (grace > 0 && (reason === DISCONNECT_TIMED_OUT || reason === DISCONNECT_CLIENT_LEFT)) {
      client.awayUntilMs = this.nowMs + grace;
      client.awayReason = reason;
      this.connections.reserved[connection.slot] = 1;
      this.hooks.onAway?.(this, client, reason);
      return;
    }
    this.forgetClient(client, reason);
  }

  private forgetClient(client: ServerClient<P>, reason: number): void {
    this.clients[client.slot] = null;
    this.connections.reserved[client.slot] = 0;
    client.awayUntilMs = -1;
    this.entities.remove(client.entity);
    this.listPlayers();
    this.hooks.onDisconnect?.(this, client, reason);
  }

  private runTick(): void {
    const phase = this.stats.phaseMs;
    const started = performance.now();
    this.tick++;
    this.stats.ticks++;
    this.connections.serverTick = this.tick;
    const { player } = this.game;
    const events = this.events;
    events.predictedBySource = true;
    // Indexed loops over the clients in the tick: a for-of made an iterator (and, unoptimized, a
    // result per client) every time.
    const clients = this.clients;
    for (let ci = 0; ci < clients.length; ci++) {
      const client = clients[ci];
      if (client === null) continue;
      if (client.awayUntilMs >= 0) {
        if (this.nowMs >= client.awayUntilMs) this.forgetClient(client, client.awayReason);
        continue;
      }
      if (this.hooks.onMessage !== undefined) {
        this.receiveMessages(client);
        // Server code may have disconnected it (a message it refused): none of its commands run.
        if (clients[ci] !== client || client.awayUntilMs >= 0) continue;
      }
      client.commands.addRealTime(this.tickIntervalMs);
      const link = client.connection.channel.stats;
      // The reorder window, the hearing test and the jitter allowance wait by how long
      // acknowledgements take, late ones included (after a spike, packets sent later overtake
      // those sent during it), not by the round trip, which samples only packets that followed
      // their predecessor.
      // It comes down slowly: packets sent during a spike are still on their way after it.
      client.commands.followReorderWindow(
        reorderWindowFor(link.ackDelayMs, link.ackDelayVarianceMs, this.config.maxReorderWindowMs),
        this.tickIntervalMs,
      );
      // The client hears the server while it acknowledges frames sent lately: within an ack delay,
      // four deviations, two snapshot intervals and two ticks.
      client.commands.clientHearing =
        this.nowMs - client.heardSentMs <=
        link.ackDelayMs +
          4 * link.ackDelayVarianceMs +
          2000 / client.pacing.updateRate +
          2 * this.tickIntervalMs;
      client.commands.jitterAllowanceMs = jitterAllowanceFor(link.ackDelayVarianceMs);
      events.source = client.slot;
      for (let n = 0; n < this.config.maxCommandsPerTick; n++) {
        const cmd = client.commands.next();
        if (cmd === undefined) break;
        // A command filled in for a lost one presses only held buttons: never a shot to judge.
        if (
          this.lagCompensation !== null &&
          !client.commands.lastFilled &&
          this.game.hitscan?.fires(client.state, cmd)
        ) {
          this.hooks.beforeShot?.(this, client, cmd);
          const capture = this.judge(
            client,
            client.state,
            cmd,
            client.lagCompensationMode ?? this.lagCompensation.config.mode,
            this.events,
          );
          this.hooks.onShot?.(this, client, cmd, capture);
        } else {
          player.move(client.state, cmd, this.world, events);
        }
        this.hooks.onCommand?.(this, client, cmd);
        // ...or a hook of this command did: the rest wait for nobody.
        if (clients[ci] !== client || client.awayUntilMs >= 0) break;
      }
    }
    events.predictedBySource = false;
    events.source = WORLD_EVENT_SOURCE;
    this.hooks.onTick?.(this, this.tick);
    this.updatePlayerEntities();
    this.entities.commit(this.tick);
    this.hooks.afterTick?.(this, this.tick);
    const simulated = performance.now();
    phase.simulate += simulated - started;
    this.spectators?.tick(this.tick, this.events, this.nowMs);
    this.connections.advance(this.nowMs, this.tickIntervalMs);
    const now = this.nowMs;
    // The most frames one tick writes: the clients' share of a tick each (a client at half the
    // tick rate, half a frame), rounded up, and a margin. Clients that connected on the same
    // tick parity would otherwise all write on the same ticks (at 32 snapshots a second and 64
    // ticks, 308 and 204 frames on alternate ticks with 512 players): past the cap a due frame
    // waits a tick, and its client's later frames keep that new phase.
    let share = 0;
    for (let ci = 0; ci < this.clients.length; ci++) {
      const client = this.clients[ci];
      if (client !== null && client.awayUntilMs < 0) share += client.pacing.updateRate;
    }
    const cap = this.config.spreadFrames
      ? Math.ceil(share / this.config.tickRate) + SPREAD_MARGIN_FRAMES
      : Infinity;
    let written = 0;
    for (let ci = 0; ci < this.clients.length; ci++) {
      const client = this.clients[ci];
      if (client === null || client.awayUntilMs >= 0) continue;
      client.pacing.update(now, client.channel.stats.outgoingLoss);
      if (!client.pacing.due(now)) {
        client.channel.update(now);
        continue;
      }
      if (written >= cap) {
        client.pacing.holdForSpread(this.tickIntervalMs);
        this.stats.framesSpread++;
        client.channel.update(now);
        continue;
      }
      written++;
      const channel = client.channel;
      // A packet pair: a keepalive right before the frame (src/net/packet-pair.ts).
      const paired = client.pacing.wantsPair(now);
      const keepaliveFrom = channel.stats.bytesSent;
      if (paired) {
        channel.send(now);
        client.pacing.pairSent(now);
      }
      const before = channel.stats.bytesSent;
      const sequence = channel.send(now, client.writeFrame);
      const frames = client.frameTicks;
      const i = frames.insert(sequence);
      const bytes = channel.stats.bytesSent - before;
      const records = frames.records;
      records[i + FRAME_TICK] = this.tick;
      records[i + FRAME_SENT_MS] = now;
      records[i + FRAME_BYTES] = bytes;
      records[i + FRAME_PAIRED] = paired ? 1 : 0;
      client.pacing.sent(now, channel.stats.bytesSent - keepaliveFrom);
    }
    phase.send += performance.now() - simulated;
  }

  /**
   * Runs `cmd` on `state` against the world as `mode` rebuilds the shooter's view (lag
   * compensation), then the present as it was; what the shared code emits is captured and
   * forwarded to `forward` (the game's event log for the deciding run, nothing for a judgement).
   */
  private judge(
    client: ServerClient<P>,
    state: P,
    cmd: UserCommand,
    mode: LagCompensationMode,
    forward: EventLog | null,
  ): EventCapture {
    const lag = this.lagCompensation as LagCompensator<P, W>;
    const capture = this.shotEvents;
    const { rttMs } = client.channel.stats;
    lag.rewind(
      mode,
      this.world,
      state,
      cmd,
      client.entity,
      client.snapshots,
      rttMs,
      this.tick - 1,
      this.playerEntities,
      this.playerCount,
      // The tick it arrived before ran its commands first: waits beyond that are the server's,
      // as long as the writers remember frames (writerConfig).
      Math.min(
        this.maxWaitedTicks(),
        Math.max(0, Math.round(client.commands.lastWaitMs / this.tickIntervalMs) - 1),
      ),
    );
    capture.reset(forward);
    this.game.player.move(state, cmd, this.world, capture);
    lag.finish(this.world, client.entity);
    return capture;
  }

  private typeIdOf(type: EntityTypeSchema, caller: string): number {
    const typeId = this.game.entities.types.indexOf(type);
    if (typeId < 0)
      throw new RangeError(`GameServer.${caller}: '${type.name}' is not one of the game's entity types`);
    return typeId;
  }

  private writeEntity<S>(entity: number, type: EntityType<S>, values: EntityValues<S>): void {
    const index = type.index as Readonly<Record<string, number>>;
    const given = values as Readonly<Record<string, number | boolean | undefined>>;
    for (const name in given) {
      const field = Object.hasOwn(index, name) ? index[name] : undefined;
      const value = given[name];
      if (field === undefined) throw new RangeError(`'${type.name}' has no field '${name}'`);
      if (value !== undefined) this.entities.setField(entity, field, value);
    }
  }

  /** Hands the client's reliable game messages that arrived to `onMessage`, in order. */
  /**
   * Hands the client's reliable messages to onMessage: at most MAX_MESSAGES_PER_TICK, and none
   * after the hook disconnected it.
   */
  private receiveMessages(client: ServerClient<P>): void {
    const channel = client.channel;
    for (let n = 0; n < MAX_MESSAGES_PER_TICK; n++) {
      const m = channel.receiveReliable();
      if (m === null) return;
      this.hooks.onMessage?.(this, client, m);
      if (this.clients[client.slot] !== client || client.awayUntilMs >= 0) return;
    }
  }

  private listPlayers(): void {
    let n = 0;
    for (let i = 0; i < this.clients.length; i++) {
      const c = this.clients[i];
      if (c !== null) this.playerEntities[n++] = c.entity;
    }
    this.playerCount = n;
  }

  private updatePlayerEntities(): void {
    const out = this.entityScratch;
    const { playerEntity } = this.game;
    const fieldCount = this.game.entities.types[playerEntity.typeId].fieldCount;
    for (let ci = 0; ci < this.clients.length; ci++) {
      const client = this.clients[ci];
      if (client === null) continue;
      playerEntity.write(client.state, out);
      for (let i = 0; i < fieldCount; i++) this.entities.setField(client.entity, i, out[i]);
    }
  }

  private receivePayload(connection: ServerConnection, s: BitStream): void {
    const client = this.clients[connection.slot];
    if (client === null || client.connection !== connection) {
      if (this.spectators?.isSpectator(connection)) this.spectators.payload(connection, s, this.nowMs);
      return;
    }
    const run = this.run;
    if (
      !serializeClientFlags(s, this.flags) ||
      !serializeCommandRun(
        s,
        this.cmds,
        run,
        client.commands.lookup,
        client.commands.newestReceived,
        this.tickIntervalMs,
      )
    ) {
      client.badPayloads++;
      return;
    }
    if (this.flags.resetBaseline) client.snapshots.resetBaseline();
    if (this.flags.pair)
      client.takePair(
        this.nowMs,
        PAIR_REPORT_MAX_TICKS * this.tickIntervalMs,
        this.flags.pairSequence,
        this.flags.pairGap,
      );
    this.checkClaimedNewest(client, run.count);
    for (let i = 0; i < run.count; i++) client.commands.receive(this.cmds[i]);
  }

  /** A keepalive from a client: what it acknowledged counts for the commands it sends after (checkClaimedNewest). */
  private receiveKeepalive(connection: ServerConnection): void {
    const client = this.clients[connection.slot];
    if (client === null || client.connection !== connection) return;
    this.recordAcks(client, ACKS_KEEPALIVE);
  }

  /** Records what the packet just received from `client` acknowledged and the newest command it carried. */
  private recordAcks(client: ServerClient<P>, newestCommand: number): void {
    const channel = client.channel;
    const ack = channel.lastReceivedAck;
    const acked = ack < 0 ? -1 : client.frameTicks.slot(ack);
    const records = client.packetAcks;
    const at = client.packetAcksNext * ACKS_STRIDE;
    client.packetAcksNext = (client.packetAcksNext + 1) % PACKET_ACKS;
    const tick = acked < 0 ? -1 : client.frameTicks.records[acked + FRAME_TICK];
    // The record leaving held the newest tick: found again when next asked for (none held: still -1).
    const leaving = records[at + ACKS_TICK];
    if (leaving >= 0 && leaving >= client.packetAcksNewestTick) client.packetAcksNewestTick = Number.NaN;
    records[at + ACKS_SEQUENCE] = channel.lastReceivedSequence;
    records[at + ACKS_TICK] = tick;
    records[at + ACKS_NEWEST_COMMAND] = newestCommand;
    if (tick > client.packetAcksNewestTick) client.packetAcksNewestTick = tick;
  }

  /**
   * A command names the newest frame it had. Every packet the client sent before making it
   * acknowledged frames it had by then: a claim older than the newest frame acknowledged by any
   * packet sent before the command was made (less ackSlackMs) is raised to it, so a client cannot
   * push its view back by claiming to have missed frames it acknowledged. Every command packet
   * carries the newest command made when it was sent, so a packet whose newest command is older
   * than this one was sent before this one was made, and so was every packet numbered before it,
   * keepalives included: the newest frame that any of them acknowledged, among the last
   * PACKET_ACKS packets to arrive, gives the floor. (The packets are those that arrived, whatever
   * their numbers: a client that skips its own packet numbers, or acknowledges frames only in
   * keepalives, is held to the same floor.) A command resent long after it was made (its copies
   * lost) is judged by the packets sent before it was made, not by those that carried it. Only
   * a command's first copy is judged: the queue keeps the first (CommandQueue.holds).
   */
  private checkClaimedNewest(client: ServerClient<P>, count: number): void {
    const sequence = client.channel.lastReceivedSequence;
    this.recordAcks(client, count > 0 ? this.cmds[count - 1].sequence : -1);
    const lag = this.lagCompensation;
    if (lag === null) return;
    const records = client.packetAcks;
    const end = PACKET_ACKS * ACKS_STRIDE;
    const slackTicks = Math.ceil(lag.config.ackSlackMs / this.tickIntervalMs);
    // No floor found below is above the newest frame any record names less the slack (or -1): a
    // claim at least that (an honest client's, nearly always) would not be raised, and is not searched.
    let newestOfAll = client.packetAcksNewestTick;
    if (Number.isNaN(newestOfAll)) {
      newestOfAll = -1;
      for (let at = 0; at < end; at += ACKS_STRIDE) {
        if (records[at + ACKS_SEQUENCE] >= 0 && records[at + ACKS_TICK] > newestOfAll)
          newestOfAll = records[at + ACKS_TICK];
      }
      client.packetAcksNewestTick = newestOfAll;
    }
    const unsearched = Math.max(-1, newestOfAll - slackTicks);
    for (let i = count - 1; i >= 0; i--) {
      const cmd = this.cmds[i];
      if (cmd.viewTickB === 0 || cmd.viewNewest >= unsearched || client.commands.holds(cmd.sequence))
        continue;
      // The newest command packet sent before this command was made: how many packet numbers
      // before this one (16-bit, wrapping; this packet and any numbered after it are left out).
      let sentBefore = 0x8000;
      for (let at = 0; at < end; at += ACKS_STRIDE) {
        const newestCommand = records[at + ACKS_NEWEST_COMMAND];
        if (records[at + ACKS_SEQUENCE] < 0 || newestCommand < 0 || newestCommand >= cmd.sequence) continue;
        const back = (sequence - records[at + ACKS_SEQUENCE]) & 0xffff;
        if (back > 0 && back < sentBefore) sentBefore = back;
      }
      if (sentBefore === 0x8000) continue;
      // The newest frame it or any packet numbered before it acknowledged.
      let newest = -1;
      for (let at = 0; at < end; at += ACKS_STRIDE) {
        if (records[at + ACKS_SEQUENCE] < 0) continue;
        const back = (sequence - records[at + ACKS_SEQUENCE]) & 0xffff;
        if (back >= sentBefore && back < 0x8000 && records[at + ACKS_TICK] > newest)
          newest = records[at + ACKS_TICK];
      }
      const floor = newest < 0 ? -1 : newest - slackTicks;
      if (cmd.viewNewest < floor) {
        cmd.viewNewest = floor;
        lag.stats.newestRaised++;
      }
    }
  }
}

function validateServerConfig(c: ServerConfig): void {
  for (const key of [
    'tickRate',
    'maxCommandsPerTick',
    'defaultUpdateRate',
    'defaultRateBytesPerSecond',
  ] as const) {
    const v = c[key];
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
      throw new RangeError(`server config: ${key} must be a positive number, got ${String(v)}`);
    }
  }
  if (!Number.isInteger(c.tickRate) || c.tickRate > 255) {
    throw new RangeError(`server config: tickRate must be an integer in 1..255, got ${c.tickRate}`);
  }
  if (!(c.commandSlackMs >= 0)) {
    throw new RangeError(`server config: commandSlackMs must be >= 0, got ${c.commandSlackMs}`);
  }
  if (!(c.fillLostMs >= 0 && c.fillLostMs <= 10_000)) {
    throw new RangeError(`server config: fillLostMs must be in [0, 10000], got ${c.fillLostMs}`);
  }
  if (!(c.maxReorderWindowMs >= MIN_REORDER_WINDOW_MS && c.maxReorderWindowMs <= 10_000)) {
    throw new RangeError(
      `server config: maxReorderWindowMs must be in [${MIN_REORDER_WINDOW_MS}, 10000], got ${c.maxReorderWindowMs}`,
    );
  }
  if (!(c.maxSilentWaitMs >= 0 && c.maxSilentWaitMs <= 10_000)) {
    throw new RangeError(`server config: maxSilentWaitMs must be in [0, 10000], got ${c.maxSilentWaitMs}`);
  }
  if (typeof c.spreadFrames !== 'boolean') {
    throw new TypeError(`server config: spreadFrames must be true or false, got ${String(c.spreadFrames)}`);
  }
  if (c.secretKey !== undefined) {
    if (!(c.secretKey instanceof Uint8Array)) {
      throw new TypeError(
        `server config: secretKey must be a Uint8Array of 32 bytes, got ${typeof c.secretKey}`,
      );
    }
    if (c.secretKey.length !== 32) {
      throw new RangeError(
        `server config: secretKey must be a Uint8Array of 32 bytes, got ${c.secretKey.length} bytes`,
      );
    }
  }
}
