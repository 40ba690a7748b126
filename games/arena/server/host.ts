// The arena as a playable server in one Node process: one match on UDP, WebSocket and WebRTC at
// one port, the browser client's files served from the same port, and the arena's own messages:
// each client's settings (update rate, rate, lag compensation mode, its down link's conditions,
// the lag compensation overlay), the server's tick time, kills, and shot reports.
//
// Every settings message is hostile: it is read by its serialize function (which checks each
// range), then checked again against this server's limits; a bad one is counted and ignored.

import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { checkLinkShape, type LinkShape, ShapedEndpoint } from 'backstep/net';
import { listen, type MultiTransportServer } from 'backstep/node';
import { BitStream } from 'backstep/protocol';
import {
  combineHooks,
  GameServer,
  KillcamRecorder,
  type ServerClient,
  type ServerHooks,
} from 'backstep/server';
import { EVENT_HIT, EVENT_WEAPON_FIRE, WEAPON_LAUNCHER } from '../shared/constants.ts';
import { PLAYER_ENTITY } from '../shared/entities.ts';
import { HIT_EVENT, WEAPON_FIRE_EVENT } from '../shared/events.ts';
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
  SETTINGS_LIMITS,
  serializeClientSettings,
  serializeKill,
  serializeMessageType,
  serializeServerStats,
  serializeShotReport,
} from '../shared/messages.ts';
import { arenaRules } from './rules.ts';

type Server = GameServer<ArenaPlayerState, ArenaWorld>;
type Client = ServerClient<ArenaPlayerState>;

export interface ArenaHostOptions {
  port: number;
  host: string;
  maxClients: number;
  /** Folder of the built browser client, served at "/" (null: no page). */
  staticDir: string | null;
  /** WebRTC: bind address and accepted candidate addresses (tests on loopback). */
  webrtc?: { bindAddress?: string; allowedCandidateAddresses?: readonly string[] };
  /** Addresses whose players stand in front of each other player who joins (a shooting range). */
  placeInFront: (address: string) => boolean;
  /** Respawn delay, ms. */
  respawnMs: number;
  /**
   * After a death the victim's page gets the killer's last this many ms of commands with the
   * views they named (a killcam, as reliable messages); 0: none, and no commands are recorded.
   */
  killcamMs: number;
  cookieSecret?: Uint8Array;
}

export const DEFAULT_ARENA_HOST_OPTIONS: ArenaHostOptions = {
  port: 8080,
  host: '127.0.0.1',
  maxClients: 32,
  staticDir: null,
  placeInFront: () => false,
  respawnMs: 2000,
  killcamMs: 1500,
};

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Serves files under `root`; nothing outside it, whatever the path says. */
function staticHandler(root: string | null): (request: IncomingMessage, response: ServerResponse) => void {
  const base = root === null ? null : resolve(root);
  return (request, response) => {
    const fail = (code: number) => {
      if (!response.headersSent) response.writeHead(code, { 'content-type': 'text/plain' });
      response.end(code === 404 ? 'not found\n' : 'bad request\n');
    };
    if (base === null || (request.method !== 'GET' && request.method !== 'HEAD')) return fail(404);
    let path: string;
    try {
      path = decodeURIComponent((request.url ?? '/').split('?')[0]);
    } catch {
      return fail(400);
    }
    if (path === '/healthz') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path.includes('\0')) return fail(400);
    if (path.endsWith('/')) path += 'index.html';
    const file = normalize(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) return fail(404);
    stat(file)
      .then((s) => (s.isFile() ? readFile(file) : null))
      .then((data) => {
        if (data === null) return fail(404);
        response.writeHead(200, {
          'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
          'cache-control': 'no-cache',
        });
        response.end(request.method === 'HEAD' ? undefined : data);
      })
      .catch(() => fail(404));
  };
}

/** Per-client state of the host: settings, subscriptions and score. */
interface Seat {
  settings: ClientSettings;
  /** Sent a settings message: wants stats, kills (and shot reports when `settings.overlay`). */
  subscribed: boolean;
  kills: number;
  deaths: number;
  lastHealth: number;
  badMessages: number;
  /**
   * The newest valid settings received since the last tick (null: none): applied once a tick
   * (onTick), so a client sending thousands a second costs a parse each, not an apply each.
   */
  pending: ClientSettings | null;
  /** This client's recent shot reports (encoded) and when they were made: sent when it turns the overlay on. */
  recentShots: { atMs: number; bytes: Uint8Array }[];
}

/** The down-link shape a client's settings ask for. */
function shapeOf(settings: ClientSettings): LinkShape {
  return {
    latencyMs: settings.downLatencyMs,
    jitterMs: settings.downJitterMs,
    loss: settings.downLoss,
    duplicate: settings.downDuplicate,
  };
}

/** How long a shot report is kept for a client that turns the overlay on after shooting, ms. */
const RECENT_SHOT_MS = 4000;
const RECENT_SHOTS = 8;

export interface ArenaHostStats {
  /**
   * Settings messages applied, those a newer one replaced before the tick applied it, and those
   * refused (bad bytes or values).
   */
  settingsApplied: number;
  settingsReplaced: number;
  settingsRefused: number;
  shotReports: number;
  /** Hit-scan hits the server gave each shooter slot. */
  hits: number;
}

export class ArenaHost {
  readonly server: Server;
  readonly transport: MultiTransportServer;
  readonly shaped: ShapedEndpoint;
  readonly options: ArenaHostOptions;
  readonly stats: ArenaHostStats = {
    settingsApplied: 0,
    settingsReplaced: 0,
    settingsRefused: 0,
    shotReports: 0,
    hits: 0,
  };
  /** Server time spent per tick over the last ticks, ms (update() time divided by the ticks it ran). */
  readonly tickMs = new Float64Array(128);
  private tickMsCount = 0;
  private readonly seats: (Seat | null)[];
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly stream = new BitStream(1200);
  private readonly report = createShotReport();
  private readonly serverStats = createServerStatsMessage();
  private lastStatsMs = 0;
  private closing: Promise<void> | null = null;
  /** Every player's recent commands and the views they named (null: killcams off). */
  private readonly killcams: KillcamRecorder<ArenaPlayerState, ArenaWorld> | null;
  /** Killcams sent to victims. */
  killcamsSent = 0;

  private constructor(transport: MultiTransportServer, options: ArenaHostOptions) {
    this.options = options;
    this.transport = transport;
    this.shaped = new ShapedEndpoint(transport, 7);
    this.killcams = options.killcamMs > 0 ? new KillcamRecorder(arenaGame) : null;
    this.seats = new Array(options.maxClients).fill(null);
    this.server = new GameServer(
      arenaGame,
      this.shaped,
      {
        maxClients: options.maxClients,
        defaultUpdateRate: 64,
        ...(options.cookieSecret === undefined ? {} : { cookieSecret: options.cookieSecret }),
      },
      combineHooks(
        arenaRules({
          respawnMs: options.respawnMs,
          // A blast's kill, with the projectile's shooter (hit-scan kills are seen in onShot).
          onKill: (server, killer, victim, weapon) => {
            const seat = this.seats[victim.slot];
            if (weapon !== WEAPON_LAUNCHER || seat === null || seat.lastHealth <= 0) return;
            seat.lastHealth = 0;
            this.killed(server, killer?.slot ?? -1, victim, weapon);
          },
        }),
        ...(this.killcams === null ? [] : [this.killcams.hooks]),
        this.hooks(),
      ),
    );
    this.timer = setInterval(() => this.update(), this.server.tickIntervalMs / 4);
  }

  /** Starts listening; rejects with the listen error (a port in use, say). */
  static async start(options: Partial<ArenaHostOptions> = {}): Promise<ArenaHost> {
    const o = { ...DEFAULT_ARENA_HOST_OPTIONS, ...options };
    if (!(o.killcamMs >= 0 && o.killcamMs <= 10_000)) {
      throw new RangeError(`ArenaHost: killcamMs must be in 0..10000 ms, got ${o.killcamMs}`);
    }
    const transport = await listen({
      port: o.port,
      host: o.host,
      httpHandler: staticHandler(o.staticDir),
      ...(o.webrtc === undefined ? {} : { webrtc: o.webrtc }),
    });
    return new ArenaHost(transport, o);
  }

  get port(): number {
    return this.transport.port;
  }

  /** The page's address. */
  get url(): string {
    return `http://${this.options.host}:${this.port}/`;
  }

  /** The settings a client's last accepted message set (null: none yet, or no such client). */
  settingsOf(client: Client): Readonly<ClientSettings> | null {
    const seat = this.seats[client.slot];
    return seat?.subscribed ? seat.settings : null;
  }

  /** Mean and largest server time per tick over the recent ticks, ms. */
  tickTime(): { mean: number; max: number } {
    const n = Math.min(this.tickMsCount, this.tickMs.length);
    let sum = 0;
    let max = 0;
    for (let i = 0; i < n; i++) {
      sum += this.tickMs[i];
      if (this.tickMs[i] > max) max = this.tickMs[i];
    }
    return { mean: n === 0 ? 0 : sum / n, max };
  }

  /** Stops the loop, disconnects everyone and closes every socket. */
  close(): Promise<void> {
    if (this.closing === null) {
      clearInterval(this.timer);
      this.closing = Promise.resolve(this.server.close()).then(() => undefined);
    }
    return this.closing;
  }

  private update(): void {
    const start = performance.now();
    const ticks = this.server.stats.ticks;
    this.server.update(start);
    const ran = this.server.stats.ticks - ticks;
    if (ran > 0) {
      const perTick = (performance.now() - start) / ran;
      this.tickMs[this.tickMsCount++ % this.tickMs.length] = perTick;
    }
  }

  private hooks(): ServerHooks<ArenaPlayerState, ArenaWorld> {
    return {
      onConnect: (server, client) => {
        this.seats[client.slot] = {
          settings: createClientSettings(),
          subscribed: false,
          kills: 0,
          deaths: 0,
          lastHealth: client.state.health,
          badMessages: 0,
          pending: null,
          recentShots: [],
        };
        if (!this.options.placeInFront(client.address)) this.placeRangeTargets(server, client);
      },
      onMessage: (_server, client, message) => {
        const seat = this.seats[client.slot];
        if (seat !== null) this.readMessage(client, seat, message);
      },
      onDisconnect: (_server, client) => {
        this.seats[client.slot] = null;
        this.shaped.shape(client.address, null);
      },
      onShot: (server, client, cmd, events) => {
        let weapon = -1;
        for (let i = 0; i < events.count; i++) {
          const type = events.type[i];
          if (type === EVENT_WEAPON_FIRE) weapon = events.param(i, WEAPON_FIRE_EVENT.index.weapon);
          if (type !== EVENT_HIT) continue;
          this.stats.hits++;
          const entity = events.param(i, HIT_EVENT.index.target);
          for (const target of server.clients) {
            if (target === null || target.entity !== entity) continue;
            const seat = this.seats[target.slot];
            if (seat !== null && seat.lastHealth > 0 && target.state.health <= 0) {
              seat.lastHealth = 0;
              this.killed(server, client.slot, target, weapon);
            }
          }
        }
        const seat = this.seats[client.slot];
        // Only commands whose weapon really fired (holding the trigger through the refire time does not).
        if (seat?.subscribed && weapon >= 0) this.shotReport(server, client, seat, cmd.sequence);
      },
      onTick: (server) => {
        for (const client of server.clients) {
          if (client === null) continue;
          const seat = this.seats[client.slot];
          if (seat === null) continue;
          if (seat.pending !== null) this.applySettings(client, seat);
          const health = client.state.health;
          // A death neither a shot nor a blast explains.
          if (seat.lastHealth > 0 && health <= 0) this.killed(server, -1, client, -1);
          seat.lastHealth = health;
        }
        if (server.timeMs - this.lastStatsMs >= 500) {
          this.lastStatsMs = server.timeMs;
          this.sendStats(server);
        }
      },
    };
  }

  /** Players at placeInFront addresses are moved in front of `client`, facing it, a few steps apart. */
  private placeRangeTargets(server: Server, client: Client): void {
    const me = client.state;
    const yaw = (me.yaw * Math.PI) / 180;
    let n = 0;
    for (const other of server.clients) {
      if (other === null || other === client || !this.options.placeInFront(other.address)) continue;
      const distance = 200 + 80 * n;
      const side = n % 2 === 0 ? 0 : 40 * (n % 4 === 1 ? 1 : -1);
      other.state.originX =
        Math.round((me.originX + Math.cos(yaw) * distance - Math.sin(yaw) * side) * 32) / 32;
      other.state.originY =
        Math.round((me.originY + Math.sin(yaw) * distance + Math.cos(yaw) * side) * 32) / 32;
      other.state.originZ = me.originZ;
      other.state.velocityX = other.state.velocityY = other.state.velocityZ = 0;
      server.teleported(other);
      n++;
    }
  }

  private killed(server: Server, killerSlot: number, victim: Client, weapon: number): void {
    const victimSeat = this.seats[victim.slot];
    if (victimSeat !== null) victimSeat.deaths++;
    const killerSeat = killerSlot >= 0 ? this.seats[killerSlot] : null;
    if (killerSeat !== null && killerSlot !== victim.slot) killerSeat.kills++;
    const kill: KillMessage = { killer: killerSlot, victim: victim.slot, weapon };
    const s = this.stream.beginWrite();
    serializeMessageType(s, MESSAGE_KILL);
    serializeKill(s, kill);
    this.broadcast(server, s.bytes);
    // The killer's last commands from its eyes, to a victim that is a page (bots do not watch).
    const killer = killerSlot >= 0 ? server.clients[killerSlot] : null;
    if (this.killcams !== null && killer !== null && killer !== victim && victimSeat?.subscribed === true) {
      const cam = this.killcams.capture(killer, victim, this.options.killcamMs);
      if (cam !== null && this.killcams.send(server, victim, cam)) this.killcamsSent++;
    }
  }

  private broadcast(server: Server, bytes: Uint8Array): void {
    for (const c of server.clients) {
      if (c !== null && this.seats[c.slot]?.subscribed) server.sendMessage(c, bytes);
    }
  }

  private sendStats(server: Server): void {
    const tick = this.tickTime();
    const m = this.serverStats;
    for (const c of server.clients) {
      if (c === null) continue;
      const seat = this.seats[c.slot];
      if (seat === null || !seat.subscribed) continue;
      m.tickMsMean = Math.min(tick.mean, 1000);
      m.tickMsMax = Math.min(tick.max, 1000);
      m.updateRate = c.pacing.updateRate;
      m.rateBytesPerSecond = Math.min(c.pacing.rateBytesPerSecond, SETTINGS_LIMITS.rateBytesPerSecond.max);
      m.lagCompensation = c.lagCompensationMode ?? server.lagCompensation?.config.mode ?? 'off';
      m.kills = seat.kills;
      m.deaths = seat.deaths;
      const s = this.stream.beginWrite();
      serializeMessageType(s, MESSAGE_SERVER_STATS);
      serializeServerStats(s, m);
      server.sendMessage(c, s.bytes);
    }
  }

  /** Sends the shot's report when the overlay is on; keeps it a few seconds either way. */
  private shotReport(server: Server, client: Client, seat: Seat, command: number): void {
    const lag = server.lagCompensation;
    if (lag === null) return;
    const r = lag.report;
    const out = this.report;
    const stride = server.game.entities.stride;
    const { x, y, z, ducked } = PLAYER_ENTITY.index;
    out.command = command;
    out.mode = r.mode;
    out.exact = r.exact;
    out.count = Math.min(r.count, out.entities.length);
    for (let i = 0; i < out.count; i++) {
      const e = r.entities[i];
      out.entities[i] = e;
      out.origins[i * 3] = r.values[e * stride + x];
      out.origins[i * 3 + 1] = r.values[e * stride + y];
      out.origins[i * 3 + 2] = r.values[e * stride + z];
      out.ducked[i] = r.values[e * stride + ducked] !== 0 ? 1 : 0;
    }
    const s = this.stream.beginWrite();
    serializeMessageType(s, MESSAGE_SHOT_REPORT);
    serializeShotReport(s, out);
    const bytes = s.bytes.slice();
    seat.recentShots.push({ atMs: server.timeMs, bytes });
    if (seat.recentShots.length > RECENT_SHOTS) seat.recentShots.shift();
    if (seat.settings.overlay && server.sendMessage(client, bytes)) this.stats.shotReports++;
  }

  /**
   * One game message from the client: valid settings (and nothing after them) wait for the tick
   * (the newest wins), anything else is counted.
   */
  private readMessage(client: Client, seat: Seat, data: Uint8Array): void {
    const s = this.stream.beginRead(data);
    // Read into a fresh object: one that fails half way must not touch the settings waiting.
    const next = createClientSettings();
    if (
      serializeMessageType(s, MESSAGE_SETTINGS) !== MESSAGE_SETTINGS ||
      !serializeClientSettings(s, next) ||
      s.bitsRemaining >= 8 ||
      checkLinkShape(shapeOf(next)) !== null
    ) {
      this.refuse(client, seat);
      return;
    }
    if (seat.pending !== null) this.stats.settingsReplaced++;
    seat.pending = next;
  }

  /** Applies the client's newest settings (one a tick at most). */
  private applySettings(client: Client, seat: Seat): void {
    const next = seat.pending as ClientSettings;
    seat.pending = null;
    const shape = shapeOf(next);
    const overlayTurnedOn = next.overlay && !seat.settings.overlay;
    seat.settings = next;
    seat.subscribed = true;
    if (overlayTurnedOn) {
      for (const shot of seat.recentShots) {
        if (this.server.timeMs - shot.atMs <= RECENT_SHOT_MS && this.server.sendMessage(client, shot.bytes)) {
          this.stats.shotReports++;
        }
      }
    }
    const c = this.server.config;
    client.pacing.updateRate = Math.min(next.updateRate, c.defaultUpdateRate, c.tickRate);
    client.pacing.rateBytesPerSecond = next.rateBytesPerSecond;
    client.lagCompensationMode = next.lagCompensation === 'server' ? null : next.lagCompensation;
    const current = this.shaped.shapeOf(client.address);
    if (
      current === null ||
      current.latencyMs !== shape.latencyMs ||
      current.jitterMs !== shape.jitterMs ||
      current.loss !== shape.loss ||
      current.duplicate !== shape.duplicate
    ) {
      this.shaped.shape(client.address, shape);
    }
    this.stats.settingsApplied++;
  }

  private refuse(client: Client, seat: Seat): void {
    this.stats.settingsRefused++;
    seat.badMessages++;
    // A client that keeps sending garbage is not a client of ours.
    if (seat.badMessages > 16) this.server.disconnect(client);
  }
}
