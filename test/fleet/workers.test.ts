// Matches on worker threads behind one real port: two matches of shooting bots at once in two
// workers, every ray judged alike by client and server (exact lag compensation); a match that
// throws or stalls is ended and reported, its players told why, and the other match plays on.

import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { ArenaShotLedger, aimBot } from '../../games/arena/testing/shots.ts';
import { createInputSample, GameClient, type InputSample } from '../../src/client/client.ts';
import {
  DISCONNECT_MATCH_ENDED,
  DISCONNECT_MATCH_FAILED,
  REFUSE_NO_SUCH_MATCH,
  reasonName,
} from '../../src/net/handshake.ts';
import { MatchClientEndpoint } from '../../src/net/match-route.ts';
import { MatchWorkers } from '../../src/node/match-workers.ts';
import { type ConnectedEndpoint, connectNode, listen } from '../../src/node.ts';
import type { MatchEnded } from '../../src/server/matches.ts';
import type { InputDriver } from '../../src/testing/match.ts';
import type { ShootingReport } from './shooting-match.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

const MODULE = new URL('./shooting-match.ts', import.meta.url);
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Bot {
  client: Client;
  endpoint: ConnectedEndpoint;
  input: InputSample;
  drive: InputDriver<ArenaPlayerState, ArenaWorld>;
  reasons: number[];
  matchId: number;
}

/** A process's port with matches on `workers` threads, and bots that join by match id over UDP. */
async function setUp(workers: number, stallMs = 2000) {
  const endpoint = await listen({ host: '127.0.0.1', port: 0, udp: { recvBufferBytes: 4 << 20 } });
  const ended: MatchEnded[] = [];
  const players: string[] = [];
  const host = await MatchWorkers.start({
    endpoint,
    module: MODULE,
    workers,
    stallMs,
    onEnded: (e) => ended.push(e),
    onPlayer: (address, id, connected) => players.push(`${connected ? '+' : '-'}${id} ${address}`),
  });
  cleanups.push(() => host.close());
  const bots: Bot[] = [];
  /** Each match's clients' verdicts (slots repeat across matches). */
  const ledgers = new Map<number, ArenaShotLedger>();
  const join = async (matchId: number, seed: number, shoot = true): Promise<Bot> => {
    const udp = await connectNode(`udp://127.0.0.1:${endpoint.port}`);
    cleanups.push(() => udp.close());
    const reasons: number[] = [];
    let bot: Bot | null = null;
    let ledger = ledgers.get(matchId);
    if (ledger === undefined) {
      ledger = new ArenaShotLedger();
      ledgers.set(matchId, ledger);
    }
    const ledgerHooks = ledger.clientHooks(() => (bot as Bot).client);
    const client: Client = new GameClient(
      arenaGame,
      new MatchClientEndpoint(udp, matchId),
      udp.serverAddress,
      { seed },
      {
        onEvent: (e, p, command) => ledgerHooks.onEvent?.(e, p, command),
        onPredicted: (cmd, state) => ledgerHooks.onPredicted?.(cmd, state),
        onDisconnect: (reason) => reasons.push(reason),
      },
    );
    client.connect(performance.now());
    bot = {
      client,
      endpoint: udp,
      input: createInputSample(),
      drive: shoot ? aimBot(seed, { aimErrorUnits: 14 }) : () => {},
      reasons,
      matchId,
    };
    bots.push(bot);
    return bot;
  };
  /** Runs the bots in real time for `ms`. */
  const play = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const until = performance.now() + ms;
      const timer = setInterval(() => {
        const now = performance.now();
        for (const b of bots) {
          b.drive(b.client, now, b.input);
          b.client.update(now, b.input);
        }
        if (now >= until) {
          clearInterval(timer);
          resolve();
        }
      }, 1000 / 60);
    });
  /**
   * The exact-mode agreement of one match: its clients' verdicts (this thread) against its
   * server's (its worker), leaving out rays of commands whose shooter the client mispredicted.
   */
  const agreement = async (matchId: number) => {
    const report = (await host.inspect(matchId)) as ShootingReport;
    const match = ledgers.get(matchId) ?? new ArenaShotLedger();
    // Each command's rays, in the order the server judged them, settled with the shooter's state.
    const rays = new Map<string, number[]>();
    for (const [key, verdict] of report.verdicts) {
      const cut = key.lastIndexOf(':');
      const command = key.slice(0, cut);
      let list = rays.get(command);
      if (list === undefined) {
        list = [];
        rays.set(command, list);
      }
      list[Number(key.slice(cut + 1))] = verdict;
    }
    const states = new Map(report.states);
    for (const [command, list] of rays) {
      const [slot, sequence] = command.split(':').map(Number);
      match.settleJudged(slot, sequence, states.get(command) as ArenaPlayerState, 'exact', list);
    }
    return { ...match.agreement('exact'), report };
  };
  return { endpoint, host, ended, players, bots, join, play, agreement };
}

describe('matches on worker threads', () => {
  it('plays two matches of shooting bots at once in two workers, each with 100.00% exact hit agreement', async () => {
    const seed = 1801;
    const msg = `seed ${seed}`;
    const rig = await setUp(2);
    await rig.host.create(1);
    await rig.host.create(2);
    expect(rig.host.workerOf(1), msg).not.toBe(rig.host.workerOf(2));
    for (let i = 0; i < 4; i++) await rig.join(1, seed + i);
    for (let i = 0; i < 4; i++) await rig.join(2, seed + 10 + i);
    const lost = await rig.join(3, seed + 20, false);
    await rig.play(6000);
    for (const b of rig.bots.filter((b) => b.matchId !== 3)) expect(b.client.state, msg).toBe('connected');
    expect(reasonName(lost.client.endReason), msg).toBe(reasonName(REFUSE_NO_SUCH_MATCH));
    expect(rig.host.players(1), msg).toBe(4);
    expect(rig.host.players(2), msg).toBe(4);
    for (const id of [1, 2]) {
      const a = await rig.agreement(id);
      console.log(
        `match ${id} on worker ${rig.host.workerOf(id)}: ${a.compared} rays, ${a.clientHits} client hits, exact agreement ${((a.agreed / a.compared) * 100).toFixed(2)}%, ${a.report.ticks} ticks, ${a.report.kills} kills`,
      );
      expect(a.report.ticks, msg).toBeGreaterThan(250);
      expect(a.compared, msg).toBeGreaterThan(40);
      expect(a.clientHits, msg).toBeGreaterThan(10);
      expect(a.agreed, msg).toBe(a.compared);
    }
    expect(rig.host.stats.inboundFull + rig.host.stats.outboundFull, msg).toBe(0);
    // Ending one match tells its players why; the other plays on.
    expect(rig.host.end(1), msg).toBe(true);
    await rig.play(500);
    for (const b of rig.bots.filter((b) => b.matchId === 1)) {
      expect(b.reasons.map(reasonName), msg).toEqual([reasonName(DISCONNECT_MATCH_ENDED)]);
    }
    expect(
      rig.ended.map((e) => [e.id, e.reason, e.clients]),
      msg,
    ).toEqual([[1, DISCONNECT_MATCH_ENDED, 4]]);
    expect(rig.host.size, msg).toBe(1);
    expect(rig.host.boundAddresses, msg).toBe(4);
    expect(rig.players.filter((p) => p.startsWith('+')).length, msg).toBe(8);
    expect(rig.players.filter((p) => p.startsWith('-1 ')).length, msg).toBe(4);
    for (const b of rig.bots.filter((b) => b.matchId === 2)) expect(b.client.state, msg).toBe('connected');
  });

  it('ends a match that throws, and one that stalls its worker, and the other match plays on', async () => {
    const seed = 1802;
    const msg = `seed ${seed}`;
    const rig = await setUp(2, 1000);
    await rig.host.create(1, { throwAtTick: 128 });
    await rig.host.create(2);
    const thrower = await rig.join(1, seed, false);
    const steady = await rig.join(2, seed + 1, false);
    await rig.play(3000);
    expect(thrower.reasons.map(reasonName), msg).toEqual([reasonName(DISCONNECT_MATCH_FAILED)]);
    expect(rig.ended.length, msg).toBe(1);
    expect(rig.ended[0].id, msg).toBe(1);
    expect(rig.ended[0].error, msg).toContain('match code failed at tick 128');
    expect(steady.client.state, msg).toBe('connected');
    // A match that never returns: its worker's loop stops, the watchdog ends it and names it.
    await rig.host.create(3, { stallAtTick: 64 });
    expect(rig.host.workerOf(3), msg).not.toBe(rig.host.workerOf(2));
    const staller = await rig.join(3, seed + 2, false);
    let unhealthy = false;
    const watch = setInterval(() => {
      if (!rig.host.healthy()) unhealthy = true;
    }, 100);
    await rig.play(4000);
    clearInterval(watch);
    expect(unhealthy, msg).toBe(true);
    expect(staller.reasons.map(reasonName), msg).toEqual([reasonName(DISCONNECT_MATCH_FAILED)]);
    const stalled = rig.ended.find((e) => e.id === 3);
    expect(stalled?.error, msg).toContain('match 3 stalled');
    expect(rig.host.stats.restarts, msg).toBe(1);
    expect(rig.host.healthy(), msg).toBe(true);
    expect(steady.client.state, msg).toBe('connected');
    expect(rig.host.players(2), msg).toBe(1);
    // The fresh worker takes new matches.
    await rig.host.create(4);
    const late = await rig.join(4, seed + 3, false);
    await rig.play(1000);
    expect(late.client.state, msg).toBe('connected');
  });
});
