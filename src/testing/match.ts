// A match on simulated time: one server and any number of clients over the memory transport
// and its network conditioner. Reproducible from a seed; used by the integration tests, the
// simulation harness and the benchmarks.

import {
  type ClientConfig,
  type ClientHooks,
  createInputSample,
  GameClient,
  type InputSample,
  type ResumeToken,
} from '../client/client.ts';
import type { NetworkProfile } from '../net/profile.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import { MemoryNetwork } from '../net/transports/memory.ts';
import type { ServerHooks } from '../server/hooks.ts';
import { GameServer, type ServerConfig } from '../server/server.ts';
import type { GameDefinition } from '../sim/game.ts';
import { Random } from '../sim/random.ts';

/** Fills a client's input for the frame at `nowMs`. */
export type InputDriver<P, W> = (client: GameClient<P, W>, nowMs: number, input: InputSample) => void;

export interface MatchClient<P, W> {
  readonly client: GameClient<P, W>;
  readonly endpoint: DatagramEndpoint;
  readonly input: InputSample;
  drive: InputDriver<P, W>;
  /** Milliseconds between this client's frames, and the random share added to each. */
  frameMs: number;
  frameJitterMs: number;
  nextFrameMs: number;
  /** Called after every frame (for measurements). */
  afterFrame?: (nowMs: number) => void;
  /** Waiting for the clients added before it to connect (`MatchOptions.slotsInCreationOrder`). */
  waiting: boolean;
}

export interface MatchOptions {
  /**
   * Each client starts connecting only once the one added before it is connected (or gave up),
   * so clients get slots (lowest free first) in the order they were added: client i has slot i
   * when nobody left. Off by default: every client starts connecting when added, and slots
   * follow the order in which handshakes complete (which the network decides).
   */
  slotsInCreationOrder: boolean;
  /** Wraps the server's endpoint (to record every datagram it receives and sends, say). */
  wrapServerEndpoint?: (endpoint: DatagramEndpoint) => DatagramEndpoint;
}

export interface AddClientOptions<P, W> {
  profile?: NetworkProfile;
  config?: Partial<ClientConfig>;
  hooks?: ClientHooks;
  drive?: InputDriver<P, W>;
  frameMs?: number;
  frameJitterMs?: number;
  /** Wraps the client's endpoint (to fake a client clock, say). */
  wrapEndpoint?: (endpoint: DatagramEndpoint) => DatagramEndpoint;
  /** Maps simulated time to the time the client believes it is (a speed hack). */
  clientTime?: (nowMs: number) => number;
  /** The game the client is built against, when not the server's (a mismatched build, say). */
  game?: GameDefinition<P, W>;
  /** The resume token to connect with (another client's `resumeToken`: a reconnection). */
  resumeToken?: ResumeToken;
}

export class Match<P, W> {
  readonly network: MemoryNetwork;
  readonly server: GameServer<P, W>;
  readonly clients: MatchClient<P, W>[] = [];
  readonly random: Random;
  nowMs = 0;
  private nextTickMs = 0;
  private readonly clientTimes: ((nowMs: number) => number)[] = [];

  readonly options: MatchOptions;
  private readonly resumeTokens: (ResumeToken | null)[] = [];
  /** Clients ever added (each gets its own address). */
  private added = 0;

  constructor(
    readonly game: GameDefinition<P, W>,
    readonly seed: number,
    serverConfig: Partial<ServerConfig> = {},
    serverHooks: ServerHooks<P, W> = {},
    options: Partial<MatchOptions> = {},
  ) {
    this.options = { slotsInCreationOrder: false, ...options };
    this.random = new Random(seed);
    this.network = new MemoryNetwork({ seed: this.random.nextU32() });
    let endpoint: DatagramEndpoint = this.network.createEndpoint('server');
    if (options.wrapServerEndpoint) endpoint = options.wrapServerEndpoint(endpoint);
    this.server = new GameServer(
      game,
      endpoint,
      { cookieSecret: new Uint8Array(32).fill(7), ...serverConfig },
      serverHooks,
    );
  }

  addClient(options: AddClientOptions<P, W> = {}): MatchClient<P, W> {
    const index = this.clients.length;
    let endpoint: DatagramEndpoint = this.network.createEndpoint(`client${this.added++}`, options.profile);
    if (options.wrapEndpoint) endpoint = options.wrapEndpoint(endpoint);
    const client = new GameClient(
      options.game ?? this.game,
      endpoint,
      'server',
      { seed: this.random.nextU32(), ...options.config },
      options.hooks ?? {},
    );
    const time = options.clientTime ?? ((t: number) => t);
    const previous = this.clients[index - 1];
    const waiting = this.options.slotsInCreationOrder && previous !== undefined && !settled(previous);
    if (!waiting) client.connect(time(this.nowMs), options.resumeToken);
    const entry: MatchClient<P, W> = {
      client,
      endpoint,
      input: createInputSample(),
      drive: options.drive ?? (() => {}),
      frameMs: options.frameMs ?? 1000 / 60,
      frameJitterMs: options.frameJitterMs ?? 0,
      nextFrameMs: this.nowMs,
      waiting,
    };
    this.clients.push(entry);
    this.clientTimes.push(time);
    this.resumeTokens.push(options.resumeToken ?? null);
    return entry;
  }

  /**
   * Takes `entry` out of the match without a word to the server (a client that vanished: its
   * network gone, its process killed): it is not updated again, and the server times it out.
   */
  drop(entry: MatchClient<P, W>): void {
    const i = this.clients.indexOf(entry);
    if (i < 0) throw new RangeError('Match.drop: not a client of this match');
    this.clients.splice(i, 1);
    this.clientTimes.splice(i, 1);
    this.resumeTokens.splice(i, 1);
  }

  /** Runs the match until `untilMs`, every server tick and client frame at its own time. */
  runUntil(untilMs: number): void {
    for (;;) {
      let next = this.nextTickMs;
      for (const c of this.clients) if (c.nextFrameMs < next) next = c.nextFrameMs;
      if (next > untilMs) break;
      this.nowMs = next;
      if (this.nextTickMs <= next) {
        this.server.update(next);
        this.nextTickMs += this.server.tickIntervalMs;
      }
      for (let i = 0; i < this.clients.length; i++) {
        const c = this.clients[i];
        if (c.nextFrameMs > next) continue;
        const t = this.clientTimes[i](next);
        if (c.waiting) {
          if (!settled(this.clients[i - 1])) {
            c.nextFrameMs = next + c.frameMs;
            continue;
          }
          c.waiting = false;
          c.client.connect(t, this.resumeTokens[i] ?? undefined);
        }
        c.drive(c.client, t, c.input);
        c.client.update(t, c.input);
        c.afterFrame?.(next);
        c.nextFrameMs = next + c.frameMs + (c.frameJitterMs > 0 ? this.random.range(0, c.frameJitterMs) : 0);
      }
    }
    this.nowMs = untilMs;
  }

  /** Runs for `ms` more milliseconds. */
  run(ms: number): void {
    this.runUntil(this.nowMs + ms);
  }

  /** Disconnects every client and closes the server. */
  close(): void {
    for (const c of this.clients) c.client.disconnect();
    this.server.close();
  }
}

/** A client that connected, or stopped trying (refused, timed out): the next may go. */
function settled<P, W>(c: MatchClient<P, W>): boolean {
  return c.waiting === false && c.client.state !== 'connecting' && c.client.state !== 'challenged';
}
