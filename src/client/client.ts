// The client loop (the paper's): sample input, build a command for the frame's time and send it
// with every unacknowledged one, read the server's packets, predict the local player, render.
// Driven by time passed in: `update(nowMs, input)` once per frame.

import { PacketChannel } from '../net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_CLIENT_LEFT,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  PACKET_DISCONNECT,
  PACKET_REFUSED,
  peekPacketType,
  readHandshakePacket,
  writeHandshakePacket,
} from '../net/handshake.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import type { BitStream } from '../protocol/bitstream.ts';
import {
  type ClientFlags,
  checkEventTable,
  createWireEvent,
  type FrameHeader,
  MAX_COMMANDS_PER_PACKET,
  MAX_EVENTS_PER_FRAME,
  serializeClientFlags,
  serializeCommandRun,
  serializeFrameHeader,
  serializeWireEvent,
  type WireEvent,
} from '../protocol/frames.ts';
import {
  copyUserCommand,
  createUserCommand,
  nextRandomSeed,
  quantizeUserCommand,
  type UserCommand,
} from '../protocol/usercmd.ts';
import type { GameDefinition, GameEventSink } from '../sim/game.ts';
import { Random } from '../sim/random.ts';
import { SequenceBuffer } from '../sim/ring.ts';
import { ServerClock, type ServerClockConfig } from './clock.ts';
import { AdaptiveDelay, defaultInterpolationDelayMs } from './delay.ts';
import { type PredictionConfig, Predictor } from './prediction.ts';
import { SnapshotReader } from './snapshot-reader.ts';
import { RemoteView, type RemoteViewConfig } from './view.ts';

export interface ClientConfig {
  protocolId: number;
  protocolVersion: number;
  /** Snapshots per second asked of the server. */
  updateRate: number;
  /** Bytes per second the server may send this client. */
  rateBytesPerSecond: number;
  /** Most command packets sent per second (a frame faster than this folds into the next). */
  commandRate: number;
  /** Connection attempts are resent this often until answered. */
  connectRetryMs: number;
  /** Give up connecting after this long. */
  connectTimeoutMs: number;
  /** The server silent this long means the connection is gone. */
  timeoutMs: number;
  /** Seed for the commands' shared random seeds and the connection nonce. */
  seed: number;
  /**
   * How far behind the newest server time remote entities are drawn, ms. 0 (the default) means
   * max(100, two snapshot intervals); 'adaptive' follows measured snapshot jitter.
   */
  interpolationDelayMs: number | 'adaptive';
  prediction: Partial<PredictionConfig>;
  clock: Partial<ServerClockConfig>;
  view: Partial<RemoteViewConfig>;
}

export const DEFAULT_CLIENT_CONFIG: ClientConfig = {
  protocolId: 0x42535450,
  protocolVersion: 1,
  updateRate: 32,
  rateBytesPerSecond: 80_000,
  commandRate: 64,
  connectRetryMs: 250,
  connectTimeoutMs: 10_000,
  timeoutMs: 10_000,
  seed: 1,
  interpolationDelayMs: 0,
  prediction: {},
  clock: {},
  view: {},
};

/** What the player is doing this frame (the game's input layer fills it). */
export interface InputSample {
  pitch: number;
  yaw: number;
  roll: number;
  forwardMove: number;
  sideMove: number;
  upMove: number;
  buttons: number;
  impulse: number;
}

export function createInputSample(): InputSample {
  return { pitch: 0, yaw: 0, roll: 0, forwardMove: 0, sideMove: 0, upMove: 0, buttons: 0, impulse: 0 };
}

export type ClientState =
  | 'disconnected'
  | 'connecting'
  | 'challenged'
  | 'connected'
  | 'refused'
  | 'timed out';

export interface ClientHooks {
  /** An effect event: from the local player's first prediction of a command, or from the server. */
  onEvent?(event: WireEvent, predicted: boolean): void;
  /** A new command was predicted for the first time; `state` is the prediction after it. */
  onPredicted?(cmd: UserCommand, state: unknown): void;
  /** A snapshot was decoded: `client.snapshots` describes the frame of server tick `tick`. */
  onSnapshot?(tick: number): void;
  /** The connection ended; `reason` is a lifecycle reason code, 0 when it timed out. */
  onDisconnect?(reason: number): void;
}

export interface ClientStats {
  commandsSent: number;
  commandPackets: number;
  framesReceived: number;
  /** Frames older than one already applied (reordered): their player state is not used. */
  framesStale: number;
  /** Frames whose header, player state or events failed to decode. */
  framesBad: number;
  eventsReceived: number;
  /** Frames the server reported holding back for this client's rate (choke). */
  choked: number;
}

/** A game client: connection, command stream, prediction and clock for one local player. */
export class GameClient<P, W> {
  readonly config: ClientConfig;
  readonly game: GameDefinition<P, W>;
  readonly world: W;
  readonly predictor: Predictor<P, W>;
  readonly clock: ServerClock;
  /** Decoded snapshots, and remote entities as drawn this frame. */
  readonly snapshots: SnapshotReader;
  readonly view: RemoteView;
  readonly stats: ClientStats = {
    commandsSent: 0,
    commandPackets: 0,
    framesReceived: 0,
    framesStale: 0,
    framesBad: 0,
    eventsReceived: 0,
    choked: 0,
  };
  state: ClientState = 'disconnected';
  /** Slot the server gave this client. */
  slot = -1;
  tickRate = 0;
  /** Newest server tick received. */
  serverTick = 0;
  /** Lifecycle reason the connection ended with (refused or disconnected). */
  endReason = 0;
  channel: PacketChannel | null = null;

  private readonly endpoint: DatagramEndpoint;
  private readonly serverAddress: string;
  private readonly hooks: ClientHooks;
  private readonly random: Random;
  private nonce: number;
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly cookie = { issuedAt: 0, hi: 0, lo: 0 };
  private readonly cmd: UserCommand = createUserCommand();
  private readonly sendCmds: UserCommand[] = [];
  private readonly run = { count: 0 };
  private readonly flags: ClientFlags = { resetBaseline: false };
  private readonly adaptiveDelay: AdaptiveDelay | null;
  /** Entities the next command's shots are tested against (the remote players drawn). */
  private readonly targets: Int32Array;
  private readonly header: FrameHeader = { serverTick: 0, choked: 0, hasPlayer: false, ackedCommand: 0 };
  private readonly frameState: P;
  private readonly event = createWireEvent();
  /** Newest command carried by each sent packet, by packet sequence. */
  private readonly packetCommands = new SequenceBuffer<{ newest: number }>(1024, () => ({ newest: 0 }));
  /** Newest command the server is known to have received (its packet was acknowledged). */
  private serverHasCommand = 0;
  private spawned = false;
  private connectStartMs = 0;
  private lastConnectSendMs = -Infinity;
  private lastFrameMs = -1;
  private msecRemainder = 0;
  private nextCommandSendMs = 0;
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array) => this.receive(from, data);
  private readonly writeCommands = (s: BitStream) => this.writeCommandRun(s);
  private readonly localEvents: GameEventSink;

  constructor(
    game: GameDefinition<P, W>,
    endpoint: DatagramEndpoint,
    serverAddress: string,
    config: Partial<ClientConfig> = {},
    hooks: ClientHooks = {},
  ) {
    this.config = { ...DEFAULT_CLIENT_CONFIG, ...config };
    validateClientConfig(this.config);
    this.game = game;
    this.endpoint = endpoint;
    this.serverAddress = serverAddress;
    this.hooks = hooks;
    this.world = game.createWorld();
    this.predictor = new Predictor(game.player, this.world, this.config.prediction);
    this.clock = new ServerClock(this.config.clock);
    this.random = new Random(this.config.seed);
    this.nonce = this.random.nextU32();
    this.frameState = game.player.create();
    if (game.events !== undefined) checkEventTable(game.events);
    this.cmd.randomSeed = this.random.nextU32();
    this.snapshots = new SnapshotReader(game.entities);
    this.view = new RemoteView(game.entities, this.snapshots, this.config.view);
    this.targets = new Int32Array(game.entities.maxEntities);
    this.adaptiveDelay =
      this.config.interpolationDelayMs === 'adaptive'
        ? new AdaptiveDelay({ updateRateHz: this.config.updateRate })
        : null;
    for (let i = 0; i < MAX_COMMANDS_PER_PACKET; i++) this.sendCmds.push(createUserCommand());
    const event = this.event;
    this.localEvents = {
      emit: (type, p0, p1, p2, p3) => {
        event.type = type;
        event.source = this.slot;
        event.p0 = p0;
        event.p1 = p1;
        event.p2 = p2;
        event.p3 = p3;
        this.hooks.onEvent?.(event, true);
      },
    };
  }

  /**
   * Starts connecting; `update` carries the handshake on. Everything of a previous connection is
   * forgotten (a new nonce, commands from 1, no snapshots, the clock unsynchronised).
   */
  connect(nowMs: number): void {
    this.nonce = this.random.nextU32();
    this.slot = -1;
    this.tickRate = 0;
    this.serverTick = 0;
    this.endReason = 0;
    this.channel = null;
    this.spawned = false;
    this.serverHasCommand = 0;
    this.packetCommands.clear();
    this.msecRemainder = 0;
    this.nextCommandSendMs = 0;
    this.lastFrameMs = -1;
    this.cookie.issuedAt = this.cookie.hi = this.cookie.lo = 0;
    this.snapshots.reset();
    this.view.reset();
    this.clock.reset();
    this.state = 'connecting';
    this.connectStartMs = nowMs;
    this.lastConnectSendMs = -Infinity;
    this.nowMs = nowMs;
  }

  /** Tells the server this client is leaving (three copies) and stops. */
  disconnect(): void {
    if (this.state === 'connected' || this.state === 'challenged') {
      for (let i = 0; i < 3; i++) this.sendHandshake(PACKET_DISCONNECT, DISCONNECT_CLIENT_LEFT);
    }
    this.state = 'disconnected';
  }

  /** The interpolation delay in use now, ms. */
  interpolationDelayMs(nowMs: number): number {
    const d = this.config.interpolationDelayMs;
    if (this.adaptiveDelay !== null) return this.adaptiveDelay.delayMs(nowMs);
    return d === 'adaptive' || d === 0 ? defaultInterpolationDelayMs(this.config.updateRate) : d;
  }

  /** True once the server has given this client its player. */
  get isSpawned(): boolean {
    return this.spawned;
  }

  /**
   * One client frame at `nowMs`: with `input`, makes this frame's command (its msec is the
   * frame's time), predicts it and sends it with every unacknowledged command; reads packets;
   * replays prediction from the newest acknowledged state.
   */
  update(nowMs: number, input: InputSample | null): void {
    if (nowMs < this.nowMs) nowMs = this.nowMs;
    this.nowMs = nowMs;
    const frameMs = this.lastFrameMs < 0 ? 0 : nowMs - this.lastFrameMs;
    this.lastFrameMs = nowMs;
    if (this.state === 'connecting' || this.state === 'challenged') this.updateConnecting(nowMs);
    if (this.state === 'connected' && this.spawned && input !== null) {
      this.makeCommand(frameMs, input);
      if (nowMs >= this.nextCommandSendMs && this.predictor.newestSequence > this.serverHasCommand) {
        this.sendCommands(nowMs);
      }
    }
    this.endpoint.poll(nowMs, this.onPacket);
    const channel = this.channel;
    if (this.state === 'connected' && channel !== null) {
      if (nowMs - channel.lastReceivedMs > this.config.timeoutMs) {
        this.end('timed out', 0);
        return;
      }
      channel.update(nowMs);
    }
    this.predictor.predict(nowMs);
    if (this.tickRate > 0 && this.clock.synced) {
      const tickMs = 1000 / this.tickRate;
      const renderTimeMs = this.clock.receivedNow(nowMs) - this.interpolationDelayMs(nowMs);
      this.view.update(renderTimeMs / tickMs, tickMs);
    }
  }

  private updateConnecting(nowMs: number): void {
    if (nowMs - this.connectStartMs > this.config.connectTimeoutMs) {
      this.end('timed out', 0);
      return;
    }
    if (nowMs - this.lastConnectSendMs < this.config.connectRetryMs) return;
    this.lastConnectSendMs = nowMs;
    if (this.state === 'connecting') this.sendHandshake(PACKET_CONNECT_REQUEST, 0);
    else this.sendHandshake(PACKET_CHALLENGE_RESPONSE, 0);
  }

  private makeCommand(frameMs: number, input: InputSample): void {
    // Commands carry whole milliseconds; the fraction is carried to the next frame so the sum
    // of msec follows real time.
    this.msecRemainder += frameMs;
    let msec = Math.floor(this.msecRemainder);
    if (msec < 1) return;
    if (msec > 250) msec = 250;
    this.msecRemainder -= Math.floor(this.msecRemainder);
    const c = this.cmd;
    c.sequence = this.predictor.newestSequence + 1;
    c.msec = msec;
    c.pitch = input.pitch;
    c.yaw = input.yaw;
    c.roll = input.roll;
    c.forwardMove = input.forwardMove;
    c.sideMove = input.sideMove;
    c.upMove = input.upMove;
    c.buttons = input.buttons;
    c.impulse = input.impulse;
    c.randomSeed = nextRandomSeed(c.randomSeed);
    // The view the player was looking at when they made this command: last frame's.
    c.lerpMsec = Math.round(this.interpolationDelayMs(this.nowMs));
    c.viewTickA = this.view.tickA;
    c.viewTickB = this.view.tickB;
    c.viewFraction = this.view.fraction;
    quantizeUserCommand(c);
    // Its first prediction is the client's verdict on any shot: against the players as drawn.
    const hitscan = this.game.hitscan;
    if (hitscan !== undefined) {
      const view = this.view;
      let count = 0;
      for (let k = 0; k < view.count; k++) {
        const e = view.list[k];
        if (view.types[e] === hitscan.targetType) this.targets[count++] = e;
      }
      hitscan.setTargets(this.world, -1, count, this.targets, view.values, view.stride);
      this.predictor.addCommand(c, this.localEvents);
      hitscan.setTargets(this.world, -1, 0, this.targets, view.values, view.stride);
    } else {
      this.predictor.addCommand(c, this.localEvents);
    }
    this.hooks.onPredicted?.(c, this.predictor.current);
  }

  private sendCommands(nowMs: number): void {
    const channel = this.channel;
    if (channel === null) return;
    const sequence = channel.send(nowMs, this.writeCommands);
    this.packetCommands.insert(sequence).newest = this.predictor.newestSequence;
    this.stats.commandPackets++;
    const interval = 1000 / this.config.commandRate;
    this.nextCommandSendMs = Math.max(this.nextCommandSendMs + interval, nowMs - interval);
  }

  /** Every command the server has not acknowledged, newest last, at most a packet's worth. */
  private writeCommandRun(s: BitStream): void {
    const newest = this.predictor.newestSequence;
    let first = Math.max(this.serverHasCommand + 1, this.predictor.ackedSequence + 1);
    if (newest - first + 1 > MAX_COMMANDS_PER_PACKET) first = newest - MAX_COMMANDS_PER_PACKET + 1;
    let count = 0;
    for (let seq = first; seq <= newest; seq++) {
      const c = this.predictor.command(seq);
      if (c === undefined) break;
      copyUserCommand(this.sendCmds[count++], c);
    }
    this.run.count = count;
    this.flags.resetBaseline = this.snapshots.needsFullUpdate;
    serializeClientFlags(s, this.flags);
    serializeCommandRun(s, this.sendCmds, this.run);
    this.stats.commandsSent += count;
  }

  private receive(from: string, data: Uint8Array): void {
    if (from !== this.serverAddress) return;
    const type = peekPacketType(data);
    if (type === 0) {
      if (this.state === 'connected') this.receiveData(data);
      return;
    }
    if (readHandshakePacket(this.hsStream, this.config.protocolId, data, this.hs) !== '') return;
    const p = this.hs;
    if (p.clientNonce !== this.nonce) return;
    switch (p.type) {
      case PACKET_CHALLENGE:
        if (this.state !== 'connecting') return;
        this.cookie.issuedAt = p.issuedAt;
        this.cookie.hi = p.cookieHi;
        this.cookie.lo = p.cookieLo;
        this.state = 'challenged';
        this.lastConnectSendMs = -Infinity;
        this.updateConnecting(this.nowMs);
        return;
      case PACKET_ACCEPTED:
        if (this.state !== 'challenged') return;
        this.slot = p.slot;
        this.tickRate = p.tickRate;
        this.state = 'connected';
        this.channel = new PacketChannel((bytes) => this.endpoint.send(this.serverAddress, bytes), {
          protocolId: this.config.protocolId,
        });
        this.channel.lastReceivedMs = this.nowMs;
        this.channel.onAck = (sequence) => {
          const sent = this.packetCommands.get(sequence);
          if (sent !== undefined && sent.newest > this.serverHasCommand) this.serverHasCommand = sent.newest;
        };
        return;
      case PACKET_REFUSED:
        if (this.state === 'connecting' || this.state === 'challenged') this.end('refused', p.reason);
        return;
      case PACKET_DISCONNECT:
        if (this.state === 'connected') this.end('disconnected', p.reason);
        return;
    }
  }

  private end(state: ClientState, reason: number): void {
    this.state = state;
    this.endReason = reason;
    this.hooks.onDisconnect?.(reason);
  }

  private receiveData(data: Uint8Array): void {
    const channel = this.channel;
    if (channel === null) return;
    const s = channel.receive(this.nowMs, data);
    // Null: dropped and counted by the channel. Under a byte of payload: a keepalive.
    if (s === null || s.bitsRemaining < 8) return;
    const h = this.header;
    // A command number past 2^31 could not be followed by ours on the wire: refuse it.
    if (
      !serializeFrameHeader(s, h) ||
      !h.hasPlayer ||
      h.ackedCommand > 0x7fffffff ||
      !this.game.player.serialize(s, this.frameState)
    ) {
      this.stats.framesBad++;
      return;
    }
    // A frame older than the newest (reordered) still brings its events and may become a
    // snapshot baseline; its player state and clock sample are out of date.
    const newest = h.serverTick > this.serverTick || !this.spawned;
    if (newest) {
      this.serverTick = h.serverTick;
      this.clock.onServerTime(this.nowMs, (h.serverTick * 1000) / this.tickRate, channel.stats.rttMs);
      this.adaptiveDelay?.onSnapshot(this.nowMs, (h.serverTick * 1000) / this.tickRate);
      if (!this.spawned) {
        this.spawned = true;
        this.predictor.reset(this.frameState, h.ackedCommand);
      } else {
        this.predictor.acknowledge(h.ackedCommand, this.frameState);
      }
    } else {
      this.stats.framesStale++;
    }
    this.stats.framesReceived++;
    this.stats.choked += h.choked;
    if (!this.readEvents(s)) return;
    if (this.snapshots.read(s, h.serverTick)) {
      this.view.onFrame(h.serverTick);
      this.hooks.onSnapshot?.(h.serverTick);
    }
  }

  /** Reads the frame's events, plays them, and returns whether they decoded. */
  private readEvents(s: BitStream): boolean {
    const count = s.int(0, 0, MAX_EVENTS_PER_FRAME);
    const e = this.event;
    for (let i = 0; i < count && s.ok; i++) {
      if (!serializeWireEvent(s, e, this.game.events ?? null)) break;
      this.stats.eventsReceived++;
      this.hooks.onEvent?.(e, false);
    }
    if (!s.ok) this.stats.framesBad++;
    return s.ok;
  }

  private sendHandshake(type: number, reason: number): void {
    const p = this.hs;
    p.type = type;
    p.clientNonce = this.nonce;
    p.version = this.config.protocolVersion;
    p.issuedAt = this.cookie.issuedAt;
    p.cookieHi = this.cookie.hi;
    p.cookieLo = this.cookie.lo;
    p.updateRate = this.config.updateRate;
    p.rate = this.config.rateBytesPerSecond;
    p.reason = reason;
    this.endpoint.send(this.serverAddress, writeHandshakePacket(this.hsStream, this.config.protocolId, p));
  }
}

function validateClientConfig(c: ClientConfig): void {
  for (const key of [
    'updateRate',
    'rateBytesPerSecond',
    'commandRate',
    'connectRetryMs',
    'connectTimeoutMs',
    'timeoutMs',
  ] as const) {
    const v = c[key];
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
      throw new RangeError(`client config: ${key} must be a positive number, got ${String(v)}`);
    }
  }
  if (!Number.isInteger(c.updateRate) || c.updateRate > 255) {
    throw new RangeError(`client config: updateRate must be an integer in 1..255, got ${c.updateRate}`);
  }
  const d = c.interpolationDelayMs;
  if (d !== 'adaptive' && !(typeof d === 'number' && d >= 0 && d <= 1000)) {
    throw new RangeError(
      `client config: interpolationDelayMs must be 'adaptive' or a number in 0..1000, got ${String(d)}`,
    );
  }
}
