// Bots for a live match: GameClients over loopback UDP in this process, driven by the arena's
// bot inputs (aim bots that run and shoot with an aim error, runners), or targets that stand
// still or strafe, each frame at about 60 per second in real time.

import { performance } from 'node:perf_hooks';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { createInputSample, GameClient, type InputSample } from '../../src/client/client.ts';
import { type ConnectedEndpoint, connectNode } from '../../src/node.ts';
import type { InputDriver } from '../../src/testing/match.ts';

export type BotKind = 'aim' | 'runner' | 'still' | 'strafe';
export const BOT_KINDS: readonly BotKind[] = ['aim', 'runner', 'still', 'strafe'];

/** A target that runs left and right, turning every half second (a moving target for the overlay). */
function strafeBot(): InputDriver<ArenaPlayerState, ArenaWorld> {
  return (_client, nowMs, input) => {
    input.sideMove = Math.floor(nowMs / 500) % 2 === 0 ? 127 : -127;
  };
}

export interface BotSwarmOptions {
  count: number;
  kind: BotKind;
  /** Aim bots' aim error, standard deviation per axis, units. */
  aimErrorUnits: number;
  /** Whether aim bots run about while they shoot (false: each stands where it is). */
  move: boolean;
  seed: number;
  frameMs: number;
}

export const DEFAULT_BOT_SWARM: BotSwarmOptions = {
  count: 8,
  kind: 'aim',
  aimErrorUnits: 24,
  move: true,
  seed: 1,
  frameMs: 1000 / 60,
};

interface Bot {
  client: GameClient<ArenaPlayerState, ArenaWorld>;
  endpoint: ConnectedEndpoint;
  input: InputSample;
  drive: InputDriver<ArenaPlayerState, ArenaWorld>;
}

/** `count` bots connected to the server at `port` on 127.0.0.1 over UDP. */
export class BotSwarm {
  readonly bots: Bot[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;

  private constructor(readonly options: BotSwarmOptions) {}

  static async start(port: number, options: Partial<BotSwarmOptions> = {}): Promise<BotSwarm> {
    const o = { ...DEFAULT_BOT_SWARM, ...options };
    if (!Number.isInteger(o.count) || o.count < 0 || o.count > 256) {
      throw new RangeError(`bots: count must be an integer in 0..256, got ${o.count}`);
    }
    if (!BOT_KINDS.includes(o.kind))
      throw new RangeError(`bots: kind must be one of ${BOT_KINDS.join(', ')}`);
    if (!(o.aimErrorUnits >= 0 && o.aimErrorUnits <= 1000)) {
      throw new RangeError(`bots: aim error must be a number in 0..1000, got ${o.aimErrorUnits}`);
    }
    const swarm = new BotSwarm(o);
    try {
      for (let i = 0; i < o.count; i++) {
        const endpoint = await connectNode(`udp://127.0.0.1:${port}`, { udp: { recvBufferBytes: 1 << 20 } });
        const seed = o.seed * 1000 + i;
        const client = new GameClient(arenaGame, endpoint, endpoint.serverAddress, { seed });
        const drive: InputDriver<ArenaPlayerState, ArenaWorld> =
          o.kind === 'aim'
            ? aimBot(seed, { aimErrorUnits: o.aimErrorUnits, move: o.move })
            : o.kind === 'runner'
              ? runnerBot(seed)
              : o.kind === 'strafe'
                ? strafeBot()
                : () => {};
        client.connect(performance.now());
        swarm.bots.push({ client, endpoint, input: createInputSample(), drive });
      }
    } catch (error) {
      await swarm.close();
      throw error;
    }
    swarm.timer = setInterval(() => swarm.frame(), o.frameMs);
    return swarm;
  }

  /** Bots connected now. */
  get connected(): number {
    let n = 0;
    for (const b of this.bots) if (b.client.state === 'connected') n++;
    return n;
  }

  /** Local addresses of the bots' sockets as the server sees them ("udp:127.0.0.1:PORT"). */
  get addresses(): Set<string> {
    return new Set(this.bots.map((b) => b.endpoint.address));
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const b of this.bots) b.client.disconnect();
    await Promise.all(this.bots.map((b) => b.endpoint.close()));
  }

  private frame(): void {
    const now = performance.now();
    for (const b of this.bots) {
      // A bot the server dropped (a restart, say) tries again.
      if (
        b.client.state === 'disconnected' ||
        b.client.state === 'refused' ||
        b.client.state === 'timed out'
      ) {
        b.client.connect(now);
      }
      b.drive(b.client, now, b.input);
      b.client.update(now, b.input);
    }
  }
}
