// The Agones entry point (Node only, optional): a game server process reports its life to the
// Agones SDK sidecar through Agones' own SDK (`@google-cloud/agones-sdk`, an optional peer
// dependency loaded only here): Ready once it listens, health pings from the tick loop (so a
// stalled loop fails Agones' health check), players connecting and leaving (player tracking),
// labels such as map and mode, allocation watched, Shutdown at the end.

import type { ServerHooks } from './server/hooks.ts';

/** The part of Agones' SDK (`new AgonesSDK()`) the adapter uses. */
export interface AgonesSdk {
  connect(): Promise<void>;
  ready(): Promise<unknown>;
  shutdown(): Promise<unknown>;
  health(errorCallback: (error: unknown) => void): void;
  setLabel(key: string, value: string): Promise<unknown>;
  watchGameServer(
    callback: (gameServer: { status?: { state?: string } }) => void,
    errorCallback: (error: unknown) => void,
  ): void;
  close(): void;
  readonly alpha: {
    playerConnect(playerId: string): Promise<unknown>;
    playerDisconnect(playerId: string): Promise<unknown>;
    setPlayerCapacity(capacity: number): Promise<unknown>;
  };
}

export interface AgonesOptions {
  /** Labels set on the GameServer at Ready (e.g. `{ map: 'arena', mode: 'deathmatch' }`). */
  labels?: Readonly<Record<string, string>>;
  /** Player capacity reported for player tracking (omit: not set). */
  playerCapacity?: number;
  /** At most one health ping per this many milliseconds of server time (default 1000). */
  healthIntervalMs?: number;
  /** Called once when Agones allocates this server (a match was assigned to it). */
  onAllocated?: () => void;
  /** Called with any error the SDK reports (default: ignored; Agones' health check decides). */
  onError?: (error: unknown) => void;
  /** An SDK to use instead of loading `@google-cloud/agones-sdk` (its port: AGONES_SDK_GRPC_PORT). */
  sdk?: AgonesSdk;
}

/** Counters of what the adapter told the sidecar. */
export interface AgonesStats {
  healthPings: number;
  playersConnected: number;
  playersDisconnected: number;
  errors: number;
}

/** One game server process's link to its Agones sidecar. */
export class AgonesAdapter {
  readonly stats: AgonesStats = { healthPings: 0, playersConnected: 0, playersDisconnected: 0, errors: 0 };
  /** The GameServer state the sidecar last reported (watchGameServer), '' before any. */
  state = '';
  private readonly sdk: AgonesSdk;
  private readonly options: AgonesOptions;
  private readonly healthIntervalMs: number;
  private lastHealthMs = Number.NEGATIVE_INFINITY;
  private allocated = false;
  private readonly fail = (error: unknown): void => {
    this.stats.errors++;
    this.options.onError?.(error);
  };

  private constructor(sdk: AgonesSdk, options: AgonesOptions) {
    this.sdk = sdk;
    this.options = options;
    this.healthIntervalMs = options.healthIntervalMs ?? 1000;
  }

  /**
   * Connects to the sidecar (loading `@google-cloud/agones-sdk` unless `options.sdk` is given)
   * and starts watching the GameServer. Rejects with an Error naming what failed.
   */
  static async connect(options: AgonesOptions = {}): Promise<AgonesAdapter> {
    const interval = options.healthIntervalMs ?? 1000;
    if (!(interval > 0) || !Number.isFinite(interval)) {
      throw new RangeError(
        `Agones: healthIntervalMs must be a positive number of milliseconds, got ${interval}`,
      );
    }
    let sdk = options.sdk;
    if (sdk === undefined) {
      let module: { default: new () => AgonesSdk };
      try {
        module = (await import('@google-cloud/agones-sdk')) as unknown as { default: new () => AgonesSdk };
      } catch (error) {
        throw new Error(
          `Agones: cannot load @google-cloud/agones-sdk (install it to run on Agones): ${String(error)}`,
        );
      }
      sdk = new module.default();
    }
    await sdk.connect();
    const adapter = new AgonesAdapter(sdk, options);
    sdk.watchGameServer((gameServer) => adapter.observe(gameServer.status?.state ?? ''), adapter.fail);
    return adapter;
  }

  /** The server listens: labels, player capacity, then Ready. */
  async ready(): Promise<void> {
    for (const [key, value] of Object.entries(this.options.labels ?? {})) await this.sdk.setLabel(key, value);
    if (this.options.playerCapacity !== undefined)
      await this.sdk.alpha.setPlayerCapacity(this.options.playerCapacity);
    await this.sdk.ready();
  }

  /** A health ping if healthIntervalMs of server time passed since the last one. Call from the tick loop. */
  tick(serverTimeMs: number): void {
    if (serverTimeMs - this.lastHealthMs < this.healthIntervalMs) return;
    this.lastHealthMs = serverTimeMs;
    this.stats.healthPings++;
    this.sdk.health(this.fail);
  }

  /**
   * Server hooks that ping health from every tick and report each client as a player by its
   * address (combine them with the game's: `combineHooks`).
   */
  hooks<P, W>(): ServerHooks<P, W> {
    return {
      onTick: (server) => this.tick(server.timeMs),
      onConnect: (_server, client) => this.player(client.address, true),
      onDisconnect: (_server, client) => this.player(client.address, false),
    };
  }

  /**
   * Reports a player joining (`connected`) or leaving, by id (its address: unique across every
   * match of the process). For matches on worker threads, give MatchWorkers
   * `onPlayer: (address, _match, connected) => agones.player(address, connected)`.
   */
  player(playerId: string, connected: boolean): void {
    if (connected) {
      this.stats.playersConnected++;
      this.sdk.alpha.playerConnect(playerId).catch(this.fail);
    } else {
      this.stats.playersDisconnected++;
      this.sdk.alpha.playerDisconnect(playerId).catch(this.fail);
    }
  }

  /**
   * Health for a process of many matches: call from a timer with the process's own view of its
   * loops (MatchWorkers.healthy()); pings only while `healthy` is true, so one stalled match
   * loop fails the process's health check.
   */
  check(healthy: boolean, nowMs: number): void {
    if (healthy) this.tick(nowMs);
  }

  /** The match is over: tells Agones to shut this server down, and closes the link. */
  async shutdown(): Promise<void> {
    try {
      await this.sdk.shutdown();
    } finally {
      this.sdk.close();
    }
  }

  private observe(state: string): void {
    this.state = state;
    if (state === 'Allocated' && !this.allocated) {
      this.allocated = true;
      this.options.onAllocated?.();
    }
  }
}
