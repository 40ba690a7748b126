// The Agones adapter against a fake SDK sidecar: a real gRPC server on 127.0.0.1 speaking the
// SDK's own service definitions, driven by Agones' own Node SDK, with a real game server and
// clients over the memory transport.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { Match } from 'backstep/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { AgonesAdapter, type AgonesSdk } from '../../src/agones.ts';
import { GameClient } from '../../src/client/client.ts';
import { MatchClientEndpoint } from '../../src/net/match-route.ts';
import { MatchWorkers } from '../../src/node/match-workers.ts';
import { type ConnectedEndpoint, connectNode, listen } from '../../src/node.ts';
import { combineHooks } from '../../src/server/hooks.ts';

const require = createRequire(import.meta.url);
const grpc = require('@grpc/grpc-js');
const sdkPb = require('@google-cloud/agones-sdk/lib/sdk_pb');
const sdkServices = require('@google-cloud/agones-sdk/lib/sdk_grpc_pb');
const alphaPb = require('@google-cloud/agones-sdk/lib/alpha/alpha_pb');
const alphaServices = require('@google-cloud/agones-sdk/lib/alpha/alpha_grpc_pb');

type Call = { request: { toObject(): Record<string, unknown> } };
type Done = (error: Error | null, response?: unknown) => void;

/** What the fake sidecar was told, in order, and how to push a GameServer state to watchers. */
interface Sidecar {
  port: number;
  calls: string[];
  healthPings: number;
  players: Set<string>;
  setState(state: string): void;
  close(): Promise<void>;
}

async function startSidecar(): Promise<Sidecar> {
  const server = new grpc.Server();
  const calls: string[] = [];
  const players = new Set<string>();
  const watchers: { write(m: unknown): void; end(): void }[] = [];
  const sidecar = { calls, players, healthPings: 0 } as Sidecar;
  const empty = (name: string) => (_call: Call, done: Done) => {
    calls.push(name);
    done(null, new sdkPb.Empty());
  };
  server.addService(sdkServices['agones.dev.sdk.SDK'], {
    ready: empty('Ready'),
    allocate: empty('Allocate'),
    shutdown: empty('Shutdown'),
    health: (stream: { on(event: string, f: () => void): void }) => {
      stream.on('data', () => {
        sidecar.healthPings++;
      });
    },
    getGameServer: (_call: Call, done: Done) => done(null, new sdkPb.GameServer()),
    watchGameServer: (stream: { write(m: unknown): void; end(): void }) => {
      calls.push('WatchGameServer');
      watchers.push(stream);
    },
    setLabel: (call: Call, done: Done) => {
      const kv = call.request.toObject();
      calls.push(`SetLabel ${kv.key}=${kv.value}`);
      done(null, new sdkPb.Empty());
    },
    setAnnotation: empty('SetAnnotation'),
    reserve: empty('Reserve'),
  });
  const bool = (value: boolean) => {
    const b = new alphaPb.Bool();
    b.setBool(value);
    return b;
  };
  server.addService(alphaServices['agones.dev.sdk.alpha.SDK'], {
    playerConnect: (call: Call, done: Done) => {
      const id = call.request.toObject().playerid as string;
      calls.push('PlayerConnect');
      done(null, bool(!players.has(id) && players.add(id) !== undefined));
    },
    playerDisconnect: (call: Call, done: Done) => {
      calls.push('PlayerDisconnect');
      done(null, bool(players.delete(call.request.toObject().playerid as string)));
    },
    setPlayerCapacity: (call: Call, done: Done) => {
      calls.push(`SetPlayerCapacity ${call.request.toObject().count}`);
      done(null, new alphaPb.Empty());
    },
  });
  sidecar.port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createInsecure(),
      (error: Error | null, port: number) => (error ? reject(error) : resolve(port)),
    ),
  );
  sidecar.setState = (state: string) => {
    const status = new sdkPb.GameServer.Status();
    status.setState(state);
    const gs = new sdkPb.GameServer();
    gs.setStatus(status);
    for (const w of watchers) w.write(gs);
  };
  sidecar.close = async () => {
    for (const w of watchers) w.end();
    server.forceShutdown();
  };
  return sidecar;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await wait(10);
  return check();
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe('the Agones adapter', () => {
  it('drives the sidecar through Ready, Allocated, health, players and Shutdown; a stalled loop stops the pings', async () => {
    const sidecar = await startSidecar();
    cleanup.push(() => sidecar.close());
    process.env.AGONES_SDK_GRPC_PORT = String(sidecar.port);
    let allocated = 0;
    const agones = await AgonesAdapter.connect({
      labels: { map: 'arena', mode: 'deathmatch' },
      playerCapacity: 16,
      healthIntervalMs: 250,
      onAllocated: () => allocated++,
    });
    cleanup.push(() => {
      delete process.env.AGONES_SDK_GRPC_PORT;
    });
    const seed = 31;
    const match = new Match(arenaGame, seed, {}, combineHooks(arenaRules(), agones.hooks()));
    await agones.ready();
    expect(sidecar.calls.slice(0, 5)).toEqual([
      'WatchGameServer',
      'SetLabel map=arena',
      'SetLabel mode=deathmatch',
      'SetPlayerCapacity 16',
      'Ready',
    ]);

    // Two players join; the server's tick loop runs in real time, a tick every 16 ms.
    const a = match.addClient({ drive: runnerBot(seed) });
    const b = match.addClient({ drive: runnerBot(seed + 1) });
    const play = async (ms: number) => {
      for (let t = 0; t < ms; t += 16) {
        match.run(16);
        await wait(16);
      }
    };
    await play(1500);
    expect(a.client.state).toBe('connected');
    expect(b.client.state).toBe('connected');
    expect(await until(() => sidecar.players.size === 2)).toBe(true);
    // 1.5 s of ticks at one ping per 250 ms of server time.
    expect(await until(() => sidecar.healthPings >= 5)).toBe(true);

    // The tick loop stalls for a second: no ping goes out meanwhile.
    const before = sidecar.healthPings;
    await wait(1000);
    expect(sidecar.healthPings).toBe(before);
    expect(agones.stats.healthPings).toBe(before);
    await play(600);
    expect(await until(() => sidecar.healthPings > before)).toBe(true);

    // Agones allocates the server: reported once.
    sidecar.setState('Allocated');
    sidecar.setState('Allocated');
    expect(await until(() => agones.state === 'Allocated')).toBe(true);
    expect(allocated).toBe(1);

    // One player leaves, then the match ends.
    a.client.disconnect();
    await play(300);
    expect(await until(() => sidecar.players.size === 1)).toBe(true);
    match.close();
    expect(await until(() => sidecar.players.size === 0)).toBe(true);
    await agones.shutdown();
    expect(sidecar.calls).toContain('Shutdown');
    expect(agones.stats.errors).toBe(0);
  });

  it('tracks players across matches on worker threads; one stalled match stops the health pings', async () => {
    const sidecar = await startSidecar();
    cleanup.push(() => sidecar.close());
    process.env.AGONES_SDK_GRPC_PORT = String(sidecar.port);
    cleanup.push(() => {
      delete process.env.AGONES_SDK_GRPC_PORT;
    });
    const agones = await AgonesAdapter.connect({ healthIntervalMs: 100 });
    const endpoint = await listen({ host: '127.0.0.1', port: 0 });
    const workers = await MatchWorkers.start({
      endpoint,
      module: new URL('./shooting-match.ts', import.meta.url),
      workers: 2,
      stallMs: 3000,
      onPlayer: (address, _match, connected) => agones.player(address, connected),
    });
    cleanup.push(() => workers.close());
    const health = setInterval(() => agones.check(workers.healthy(), performance.now()), 50);
    cleanup.push(() => clearInterval(health));
    await agones.ready();
    await workers.create(1);
    await workers.create(2, { stallAtTick: 192 });
    const clients: { client: GameClient<unknown, unknown>; udp: ConnectedEndpoint }[] = [];
    for (const [i, id] of [1, 1, 2].entries()) {
      const udp = await connectNode(`udp://127.0.0.1:${endpoint.port}`);
      cleanup.push(() => udp.close());
      const client = new GameClient(arenaGame, new MatchClientEndpoint(udp, id), udp.serverAddress, {
        seed: 40 + i,
      });
      client.connect(performance.now());
      clients.push({ client: client as GameClient<unknown, unknown>, udp });
    }
    const frames = setInterval(() => {
      for (const c of clients) c.client.update(performance.now(), null);
    }, 16);
    cleanup.push(() => clearInterval(frames));
    // Three players in two matches, each reported once; pings while both loops turn.
    expect(await until(() => sidecar.players.size === 3)).toBe(true);
    expect([...sidecar.players].sort()).toEqual(clients.map((c) => c.udp.address).sort());
    expect(await until(() => sidecar.healthPings >= 5)).toBe(true);
    // Match 2 stalls its worker at its 192nd tick: the pings stop within a second...
    expect(await until(() => !workers.healthy(), 6000)).toBe(true);
    await wait(200);
    const before = sidecar.healthPings;
    await wait(800);
    expect(sidecar.healthPings).toBe(before);
    // ...the watchdog ends the match (its player leaves), a fresh worker starts, and pings resume.
    expect(await until(() => sidecar.players.size === 2, 6000)).toBe(true);
    expect(await until(() => sidecar.healthPings > before, 6000)).toBe(true);
    expect(workers.stats.restarts).toBe(1);
    expect(agones.stats.errors).toBe(0);
  });

  it('refuses a bad health interval, naming it', async () => {
    // A stand-in SDK is enough here: the options are checked before anything is sent.
    const sdk = { connect: async () => {}, watchGameServer: () => {} } as unknown as AgonesSdk;
    await expect(AgonesAdapter.connect({ sdk, healthIntervalMs: 0 })).rejects.toThrow(/healthIntervalMs/);
  });
});
