// The spectator client (browser-safe): joins a server with no player and sends no commands; it
// receives the spectator stream of its delay (src/protocol/spectator.ts), decodes it with the
// client's own snapshot reader and draws it with the remote view, behind by the server's delay
// plus its own interpolation delay. Its packets carry only acknowledgements and, when it lost
// track, a request for a full update.

import { DEFAULT_PROTOCOL_ID, DEFAULT_PROTOCOL_VERSION } from '../net/channel.ts';
import { ClientConnection, type ConnectionState } from '../net/client-connection.ts';
import type { ConnectToken } from '../net/connect-token.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import type { BitStream } from '../protocol/bitstream.ts';
import {
  type ClientFlags,
  createClientFlags,
  createWireEvent,
  type EventTable,
  MAX_EVENTS_PER_FRAME,
  serializeClientFlags,
  type WireEvent,
} from '../protocol/frames.ts';
import type { GameSchema } from '../protocol/schema.ts';
import { type SpectatorFrame, serializeSpectatorFrame } from '../protocol/spectator.ts';
import { gameSchemaHash } from '../sim/game.ts';
import { ServerClock } from './clock.ts';
import { defaultInterpolationDelayMs } from './delay.ts';
import { SnapshotReader } from './snapshot-reader.ts';
import { RemoteView } from './view.ts';

export interface SpectatorClientConfig {
  protocolId: number;
  protocolVersion: number;
  /** The delay asked for, ms: the server gives the smallest it offers at or above it. */
  delayMs: number;
  /** Packets (acknowledgements) sent per second. */
  ackRate: number;
  connectRetryMs: number;
  connectTimeoutMs: number;
  timeoutMs: number;
  /** Interpolation delay over the stream, ms (0: two frames at 32 per second, at least 100). */
  interpolationDelayMs: number;
  /** Seed of the connection nonce. */
  seed: number;
  /** A connect token, for a server that takes only those (see ClientConfig.connectToken). */
  connectToken?: ConnectToken;
}

export const DEFAULT_SPECTATOR_CLIENT_CONFIG: SpectatorClientConfig = {
  protocolId: DEFAULT_PROTOCOL_ID,
  protocolVersion: DEFAULT_PROTOCOL_VERSION,
  delayMs: 3000,
  ackRate: 20,
  connectRetryMs: 100,
  connectTimeoutMs: 10_000,
  timeoutMs: 10_000,
  interpolationDelayMs: 0,
  seed: 1,
};

export interface SpectatorClientStats {
  framesReceived: number;
  framesBad: number;
  eventsReceived: number;
  packetsSent: number;
}

export interface SpectatorClientHooks {
  /** A frame decoded: `snapshots` holds the world at `tick`, the server being at `liveTick`. */
  onFrame?(tick: number, liveTick: number): void;
  onEvent?(event: WireEvent): void;
  onDisconnect?(reason: number): void;
}

/** What a game gives a spectator: its tables (checked at connect by the schema hash). */
export interface SpectatorGame {
  readonly entities: GameSchema;
  readonly events?: EventTable;
}

/** A spectator: the world a fixed delay behind, as the server streams it. */
export class SpectatorClient {
  readonly config: SpectatorClientConfig;
  readonly stats: SpectatorClientStats = {
    framesReceived: 0,
    framesBad: 0,
    eventsReceived: 0,
    packetsSent: 0,
  };
  readonly snapshots: SnapshotReader;
  readonly view: RemoteView;
  readonly clock = new ServerClock();
  /** The newest frame's tick, and the server's tick when it sent it (-1: none yet). */
  frameTick = -1;
  liveTick = -1;
  private readonly connection: ClientConnection;
  private readonly endpoint: DatagramEndpoint;
  private readonly hooks: SpectatorClientHooks;
  private readonly events: EventTable | null;
  private readonly frame: SpectatorFrame;
  private readonly flags: ClientFlags = createClientFlags();
  private nextAckMs = 0;
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array) => this.connection.receive(from, data);
  private readonly writeFlags = (s: BitStream) => {
    this.flags.resetBaseline = this.snapshots.needsFullUpdate;
    serializeClientFlags(s, this.flags);
  };
  private readonly readSnapshot = (s: BitStream, tick: number) => this.snapshots.read(s, tick);

  constructor(
    game: SpectatorGame,
    endpoint: DatagramEndpoint,
    serverAddress: string,
    config: Partial<SpectatorClientConfig> = {},
    hooks: SpectatorClientHooks = {},
  ) {
    this.config = { ...DEFAULT_SPECTATOR_CLIENT_CONFIG, ...config };
    const c = this.config;
    if (!(c.delayMs >= 0 && c.delayMs <= 65535)) {
      throw new RangeError(`spectator config: delayMs must be in 0..65535, got ${c.delayMs}`);
    }
    if (!(c.ackRate > 0 && c.ackRate <= 250)) {
      throw new RangeError(`spectator config: ackRate must be in (0, 250], got ${c.ackRate}`);
    }
    this.endpoint = endpoint;
    this.hooks = hooks;
    this.events = game.events ?? null;
    this.snapshots = new SnapshotReader(game.entities);
    this.view = new RemoteView(game.entities, this.snapshots);
    const events: WireEvent[] = [];
    for (let i = 0; i < MAX_EVENTS_PER_FRAME; i++) events.push(createWireEvent());
    this.frame = { serverTick: 0, liveTick: 0, eventCount: 0, events, snapshotOk: false };
    this.connection = new ClientConnection(
      endpoint,
      serverAddress,
      {
        protocolId: c.protocolId,
        protocolVersion: c.protocolVersion,
        schemaHash: gameSchemaHash(game),
        updateRate: 32,
        rateBytesPerSecond: 0,
        connectRetryMs: c.connectRetryMs,
        connectTimeoutMs: c.connectTimeoutMs,
        timeoutMs: c.timeoutMs,
        spectatorDelayMs: c.delayMs,
        connectToken: c.connectToken,
      },
      (c.seed * 0x9e3779b1) >>> 0,
      0,
      {
        connected: () => {},
        payload: (s) => this.receiveFrame(s),
        ended: (_state, reason) => this.hooks.onDisconnect?.(reason),
      },
    );
  }

  get state(): ConnectionState {
    return this.connection.state;
  }

  /** One frame at `nowMs`: reads packets, acknowledges, draws the world into `view`. */
  update(nowMs: number): void {
    if (nowMs < this.nowMs) nowMs = this.nowMs;
    this.nowMs = nowMs;
    const connection = this.connection;
    if (connection.state === 'connecting' || connection.state === 'challenged') connection.update(nowMs);
    connection.advance(nowMs);
    this.endpoint.poll(nowMs, this.onPacket);
    if (connection.state !== 'connected') return;
    const channel = connection.channel;
    if (channel !== null && nowMs >= this.nextAckMs) {
      channel.send(nowMs, this.writeFlags);
      this.stats.packetsSent++;
      this.nextAckMs = Math.max(this.nextAckMs + 1000 / this.config.ackRate, nowMs);
    }
    connection.update(nowMs);
    const tickRate = connection.tickRate;
    if (tickRate > 0 && this.clock.synced) {
      const tickMs = 1000 / tickRate;
      const delay = this.config.interpolationDelayMs || defaultInterpolationDelayMs(32);
      this.view.update((this.clock.receivedNow(nowMs) - delay) / tickMs, tickMs);
    }
  }

  /** Leaves (tells the server, three copies). */
  disconnect(): void {
    this.connection.disconnect();
  }

  private receiveFrame(s: BitStream): void {
    const f = this.frame;
    if (!serializeSpectatorFrame(s, f, this.events, this.readSnapshot)) {
      this.stats.framesBad++;
      return;
    }
    this.stats.framesReceived++;
    for (let i = 0; i < f.eventCount; i++) {
      this.stats.eventsReceived++;
      this.hooks.onEvent?.(f.events[i]);
    }
    if (!f.snapshotOk) return;
    const tickRate = this.connection.tickRate;
    if (f.serverTick > this.frameTick) {
      this.frameTick = f.serverTick;
      this.liveTick = f.liveTick;
      const rtt = this.connection.channel?.stats.rttMs ?? 0;
      this.clock.onServerTime(this.nowMs, (f.serverTick * 1000) / tickRate, rtt);
    }
    this.view.onFrame(f.serverTick);
    this.hooks.onFrame?.(f.serverTick, f.liveTick);
  }
}
