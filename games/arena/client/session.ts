// One connection of the browser client to an arena server: the transport (WebRTC, falling back
// to WebSocket), the GameClient over a ShapedEndpoint (the up link's conditions are applied
// here), the arena's messages both ways, net_graph's figures, and how the connection ended in
// words a player understands.

import { type BrowserTransportChoice, connectBrowserAuto } from 'backstep/browser';
import { type ClientHooks, decodeKillcam, GameClient, NetGraph } from 'backstep/client';
import { DEFAULT_PROTOCOL_VERSION, type LinkShape, reasonName, ShapedEndpoint } from 'backstep/net';
import { BitStream, KILLCAM_MESSAGE_TAG, type Killcam, KillcamAssembler } from 'backstep/protocol';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../shared/game.ts';
import {
  type ClientSettings,
  createClientSettings,
  createServerStatsMessage,
  createShotReport,
  type KillMessage,
  MESSAGE_KILL,
  MESSAGE_SERVER_STATS,
  MESSAGE_SETTINGS,
  MESSAGE_SHOT_REPORT,
  type ServerStatsMessage,
  type ShotReport,
  serializeClientSettings,
  serializeKill,
  serializeMessageType,
  serializeServerStats,
  serializeShotReport,
} from '../shared/messages.ts';

export type SessionPhase = 'connecting' | 'playing' | 'failed';

export interface SessionOptions {
  host: string;
  transport: BrowserTransportChoice;
  secure: boolean;
  /** The protocol version this build speaks (a test may pretend to be another build). */
  protocolVersion: number;
  webRtcTimeoutMs: number;
}

export const DEFAULT_SESSION_OPTIONS: Omit<SessionOptions, 'host'> = {
  transport: 'auto',
  secure: false,
  protocolVersion: DEFAULT_PROTOCOL_VERSION,
  webRtcTimeoutMs: 5000,
};

export interface SessionEvents {
  onKill(kill: KillMessage): void;
  onShotReport(report: ShotReport): void;
  /** The server's killcam after this player's death: its killer's last commands, as drawn. */
  onKillcam?(killcam: Killcam): void;
}

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

export class ArenaSession {
  phase: SessionPhase = 'connecting';
  /** Why the session failed, in words (empty while it has not). */
  failure = '';
  transport = '';
  /** Why 'auto' did not use WebRTC (empty when it did). */
  fallbackReason = '';
  client: Client | null = null;
  readonly netGraph = new NetGraph();
  /** What this client asks of the server; send it with `sendSettings` after a change. */
  readonly settings: ClientSettings = createClientSettings();
  /** The latest server stats message (null until one came). */
  serverStats: ServerStatsMessage | null = null;
  /** Messages from the server that failed to decode. */
  badMessages = 0;
  private killcamRefused = 0;
  private endpoint: ShapedEndpoint | null = null;
  private readonly stream = new BitStream(1200);
  private readonly statsMessage = createServerStatsMessage();
  private readonly kill: KillMessage = { killer: -1, victim: 0, weapon: -1 };
  private readonly report = createShotReport();
  private readonly killcamParts = new KillcamAssembler();
  private upShape: LinkShape = { latencyMs: 0, jitterMs: 0, loss: 0, duplicate: 0 };
  private closed = false;
  private settingsSent = false;

  constructor(
    readonly options: SessionOptions,
    private readonly hooks: ClientHooks,
    private readonly events: SessionEvents,
  ) {}

  /** Connects (never rejects: a failure sets `phase` and `failure`). */
  async start(nowMs: () => number): Promise<void> {
    const o = this.options;
    try {
      const connection = await connectBrowserAuto(o.host, {
        transport: o.transport,
        secure: o.secure,
        webRtcTimeoutMs: o.webRtcTimeoutMs,
      });
      if (this.closed) {
        await connection.endpoint.close();
        return;
      }
      this.transport = connection.transport;
      this.fallbackReason = connection.fallbackReason ?? '';
      const endpoint = new ShapedEndpoint(connection.endpoint, 3);
      endpoint.shape(connection.endpoint.serverAddress, this.upShape);
      this.endpoint = endpoint;
      this.client = new GameClient(
        arenaGame,
        endpoint,
        connection.endpoint.serverAddress,
        {
          protocolVersion: o.protocolVersion,
          seed: (Math.random() * 0x7fffffff) | 0,
          updateRate: this.settings.updateRate,
          rateBytesPerSecond: this.settings.rateBytesPerSecond,
        },
        { ...this.hooks, onMessage: (message) => this.readMessage(message) },
      );
      this.client.connect(nowMs());
    } catch (error) {
      this.fail(
        `Could not reach the server at ${o.host}. ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** Sets the conditions of this client's up link (applied here, before the transport). */
  setUpShape(shape: LinkShape): void {
    this.upShape = { ...shape };
    const inner = this.endpoint?.inner as { serverAddress?: string } | undefined;
    if (this.endpoint !== null && inner?.serverAddress !== undefined)
      this.endpoint.shape(inner.serverAddress, shape);
  }

  get upLink(): Readonly<LinkShape> {
    return this.upShape;
  }

  /** Sends the settings to the server (a reliable message); false when the client is not connected yet. */
  sendSettings(): boolean {
    const client = this.client;
    if (client === null || client.state !== 'connected') return false;
    const s = this.stream.beginWrite();
    serializeMessageType(s, MESSAGE_SETTINGS);
    serializeClientSettings(s, this.settings);
    this.settingsSent = client.sendMessage(s.bytes);
    return this.settingsSent;
  }

  /** One frame: pump the conditioner, run the client with `input` (null: none), read messages. */
  frame(nowMs: number, input: Parameters<Client['update']>[1]): void {
    const client = this.client;
    const endpoint = this.endpoint;
    if (client === null || endpoint === null || this.phase === 'failed') return;
    endpoint.pump(nowMs);
    client.update(nowMs, input);
    const state = client.state;
    if (state === 'connected') {
      if (this.phase === 'connecting') this.phase = 'playing';
      if (!this.settingsSent) this.sendSettings();
      this.netGraph.update(nowMs, client);
      const inner = endpoint.inner as { isOpen?: boolean };
      if (inner.isOpen === false) this.fail('Connection lost: the server went away (its connection closed).');
    } else if (state === 'refused') {
      this.fail(`The server refused the connection: ${reasonName(client.endReason)}.`);
    } else if (state === 'timed out') {
      this.fail(
        this.phase === 'playing'
          ? 'Connection lost: the server stopped answering.'
          : 'The server did not answer the connection request.',
      );
    } else if (state === 'disconnected') {
      this.fail(`The server closed the connection: ${reasonName(client.endReason)}.`);
    }
  }

  /** Leaves the server (telling it) and closes the transport. */
  async close(): Promise<void> {
    this.closed = true;
    this.client?.disconnect();
    const endpoint = this.endpoint;
    this.endpoint = null;
    if (endpoint !== null) await endpoint.close();
  }

  private fail(message: string): void {
    if (this.phase === 'failed') return;
    this.phase = 'failed';
    this.failure = message;
    void this.close().catch(() => {});
  }

  /** One game message from the server (the GameClient's onMessage hook). */
  private readMessage(data: Uint8Array): void {
    // A killcam's part (its tag reads as the unused message type 11).
    if (data[0] === KILLCAM_MESSAGE_TAG) {
      const whole = this.killcamParts.receive(data);
      if (whole === null) {
        if (this.killcamParts.refused > this.killcamRefused) this.badMessages++;
        this.killcamRefused = this.killcamParts.refused;
        return;
      }
      const cam = decodeKillcam(whole, arenaGame.entities);
      if (cam === null) this.badMessages++;
      else this.events.onKillcam?.(cam);
      return;
    }
    const s = this.stream.beginRead(data);
    const type = serializeMessageType(s, 0);
    if (type === MESSAGE_SERVER_STATS && serializeServerStats(s, this.statsMessage)) {
      this.serverStats = this.statsMessage;
      this.netGraph.serverTickMs = this.statsMessage.tickMsMean;
    } else if (type === MESSAGE_KILL && serializeKill(s, this.kill)) {
      this.events.onKill(this.kill);
    } else if (type === MESSAGE_SHOT_REPORT && serializeShotReport(s, this.report)) {
      this.events.onShotReport(this.report);
    } else {
      this.badMessages++;
    }
  }
}
