// Many matches in one process on one endpoint: clients join by match id over the conditioner on
// simulated time, a match ends with its clients told why, a failing match is ended alone, a
// route header cannot move a connected client, and a thousand matches leave nothing behind.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { GameClient } from '../../src/client/client.ts';
import { DEFAULT_PROTOCOL_ID, DEFAULT_PROTOCOL_VERSION, PacketType } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_MATCH_ENDED,
  DISCONNECT_MATCH_FAILED,
  PACKET_CONNECT_REQUEST,
  REFUSE_NO_SUCH_MATCH,
  REQUEST_BYTES,
  reasonName,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { MATCH_ROUTE_HEADER_BYTES, MatchClientEndpoint, writeMatchRoute } from '../../src/net/match-route.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { MemoryEndpoint } from '../../src/net/transports/memory.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { type MatchEnded, MatchHost } from '../../src/server/matches.ts';
import { gameSchemaHash } from '../../src/sim/game.ts';

type Client = GameClient<
  ReturnType<typeof arenaGame.player.create>,
  ReturnType<typeof arenaGame.createWorld>
>;

const profile = parseProfile({ name: 'matches', latencyMs: 30, jitterMs: 5, loss: 0.02 });
/** A clean link: the thousand-match test is about memory, not loss. */
const fast = parseProfile({ name: 'lan', latencyMs: 5 });
const FRAME_MS = 1000 / 60;

/** A host on one memory endpoint and clients that join matches by id, all on simulated time. */
class Rig {
  readonly network: MemoryNetwork;
  readonly host: MatchHost;
  readonly ended: MatchEnded[] = [];
  readonly clients: { client: Client; endpoint: MemoryEndpoint; reasons: number[] }[] = [];
  nowMs = 0;
  private nextId = 0;

  constructor(
    readonly seed: number,
    private readonly link = profile,
  ) {
    this.network = new MemoryNetwork({ seed });
    this.host = new MatchHost(this.network.createEndpoint('server'), { onEnded: (e) => this.ended.push(e) });
  }

  create(id: number, hooks = {}): void {
    this.host.create(id, {
      game: arenaGame,
      config: { cookieSecret: new Uint8Array(32).fill(id & 0xff) },
      hooks,
    });
  }

  join(matchId: number): { client: Client; endpoint: MemoryEndpoint; reasons: number[] } {
    const endpoint = this.network.createEndpoint(`c${this.nextId++}`, this.link);
    const reasons: number[] = [];
    const client = new GameClient(
      arenaGame,
      new MatchClientEndpoint(endpoint, matchId),
      'server',
      { seed: this.seed * 1000 + this.nextId },
      { onDisconnect: (reason) => reasons.push(reason) },
    );
    client.connect(this.nowMs);
    const entry = { client, endpoint, reasons };
    this.clients.push(entry);
    return entry;
  }

  run(ms: number): void {
    const until = this.nowMs + ms;
    while (this.nowMs < until) {
      this.nowMs = Math.min(until, this.nowMs + FRAME_MS);
      this.host.update(this.nowMs);
      for (const c of this.clients) c.client.update(this.nowMs, null);
    }
  }

  /** Closes every client endpoint (the clients are done). */
  drop(): void {
    for (const c of this.clients) c.endpoint.close();
    this.clients.length = 0;
  }
}

describe('matches in one process', () => {
  it('hosts matches on one endpoint: clients join by id, and an unknown id is refused', () => {
    const seed = 11;
    const msg = `seed ${seed}`;
    const rig = new Rig(seed);
    rig.create(7);
    rig.create(0xffffffff);
    const a = [rig.join(7), rig.join(7)];
    const b = [rig.join(0xffffffff)];
    const lost = rig.join(8);
    // The shared endpoint is told of each client a match took (its links then stay: see
    // DatagramEndpoint.established), and of no other.
    const established: string[] = [];
    Object.assign(rig.host.router.endpoint, { established: (address: string) => established.push(address) });
    rig.run(2000);
    for (const c of [...a, ...b]) expect(c.client.state, msg).toBe('connected');
    expect(established.sort(), msg).toEqual(['c0', 'c1', 'c2']);
    expect(rig.host.get(7)?.clientCount, msg).toBe(2);
    expect(rig.host.get(0xffffffff)?.clientCount, msg).toBe(1);
    expect(rig.host.router.boundAddresses, msg).toBe(3);
    for (const c of [...a, ...b]) expect(c.client.serverTick, msg).toBeGreaterThan(64);
    expect(lost.client.state, msg).toBe('refused');
    expect(reasonName(lost.client.endReason), msg).toBe(reasonName(REFUSE_NO_SUCH_MATCH));
    expect(rig.host.router.stats.refusedNoMatch, msg).toBeGreaterThanOrEqual(1);
  });

  it('ends a match: its clients are told why, its addresses freed, the other match plays on', () => {
    const seed = 12;
    const msg = `seed ${seed}`;
    const rig = new Rig(seed);
    rig.create(1);
    rig.create(2);
    const one = [rig.join(1), rig.join(1)];
    const two = rig.join(2);
    rig.run(1500);
    expect(rig.host.end(1), msg).toBe(true);
    expect(rig.host.end(1), msg).toBe(false);
    rig.run(500);
    for (const c of one) {
      expect(c.client.state, msg).toBe('disconnected');
      expect(c.reasons.map(reasonName), msg).toEqual([reasonName(DISCONNECT_MATCH_ENDED)]);
    }
    expect(rig.ended, msg).toEqual([
      { id: 1, reason: DISCONNECT_MATCH_ENDED, error: undefined, ticks: expect.any(Number), clients: 2 },
    ]);
    expect(rig.host.router.size, msg).toBe(1);
    expect(rig.host.router.boundAddresses, msg).toBe(1);
    const tick = two.client.serverTick;
    rig.run(500);
    expect(two.client.state, msg).toBe('connected');
    expect(two.client.serverTick, msg).toBeGreaterThan(tick + 16);
    // Late packets of an ended match's clients reach no match.
    const before = rig.host.router.stats.rejected['unknown address'] ?? 0;
    one[0].endpoint.send('server', new Uint8Array(40));
    rig.run(200);
    expect(rig.host.router.stats.rejected['unknown address'], msg).toBe(before + 1);
  });

  it('ends a match whose code throws and reports it; the other match plays on', () => {
    const seed = 13;
    const msg = `seed ${seed}`;
    const rig = new Rig(seed);
    let armed = false;
    rig.create(1, {
      onTick: () => {
        if (armed) throw new Error('rules bug');
      },
    });
    rig.create(2);
    const doomed = rig.join(1);
    const fine = rig.join(2);
    rig.run(1000);
    armed = true;
    rig.run(500);
    expect(doomed.client.state, msg).toBe('disconnected');
    expect(doomed.reasons.map(reasonName), msg).toEqual([reasonName(DISCONNECT_MATCH_FAILED)]);
    expect(rig.ended.length, msg).toBe(1);
    expect(rig.ended[0].id, msg).toBe(1);
    expect(String(rig.ended[0].error), msg).toContain('rules bug');
    expect(rig.host.stats.failed, msg).toBe(1);
    expect(fine.client.state, msg).toBe('connected');
    expect(rig.host.get(2)?.clientCount, msg).toBe(1);
  });

  it('keeps a connected client in its match whatever route header its address sends', () => {
    const seed = 14;
    const msg = `seed ${seed}`;
    const rig = new Rig(seed);
    rig.create(1);
    rig.create(2);
    const player = rig.join(1);
    rig.run(1000);
    expect(player.client.state, msg).toBe('connected');
    // A routed connect request for match 2 from the connected address (spoofed or not).
    const hs = createHandshakePacket();
    hs.type = PACKET_CONNECT_REQUEST;
    hs.clientNonce = 99;
    hs.version = DEFAULT_PROTOCOL_VERSION;
    hs.schemaHash = gameSchemaHash(arenaGame);
    const inner = writeHandshakePacket(createHandshakeStream(), DEFAULT_PROTOCOL_ID, hs);
    expect(inner.length).toBe(REQUEST_BYTES);
    const routed = new Uint8Array(MATCH_ROUTE_HEADER_BYTES + inner.length);
    writeMatchRoute(routed, 2);
    routed.set(inner, MATCH_ROUTE_HEADER_BYTES);
    for (let i = 0; i < 5; i++) player.endpoint.send('server', routed);
    rig.run(500);
    expect(rig.host.router.stats.rejected['routed away from its match'], msg).toBe(5);
    expect(rig.host.get(2)?.clientCount, msg).toBe(0);
    expect(rig.host.get(2)?.stats.rejected, msg).toEqual({});
    expect(player.client.state, msg).toBe('connected');
    // Unrouted lifecycle packets and garbage from unknown addresses reach no match.
    const stranger = rig.network.createEndpoint('stranger');
    stranger.send('server', inner);
    stranger.send('server', new Uint8Array([PacketType.Data, 1, 2, 3]));
    stranger.send('server', new Uint8Array([0x4d, 1, 0, 0, 0]));
    rig.run(200);
    expect(rig.host.router.stats.rejected['no route header'], msg).toBe(2);
    expect(rig.host.router.stats.rejected['unknown address'], msg).toBe(1);
    expect(rig.host.get(1)?.clientCount, msg).toBe(1);
  });

  it('takes joins at a bounded rate per match: a flood of forged joins costs its players nothing', () => {
    const seed = 16;
    const msg = `seed ${seed}`;
    const rig = new Rig(seed);
    rig.create(1);
    const player = rig.join(1);
    rig.run(1000);
    expect(player.client.state, msg).toBe('connected');
    const hs = createHandshakePacket();
    hs.type = PACKET_CONNECT_REQUEST;
    hs.version = DEFAULT_PROTOCOL_VERSION;
    hs.schemaHash = gameSchemaHash(arenaGame);
    const stream = createHandshakeStream();
    const flooders = Array.from({ length: 20 }, (_, i) => rig.network.createEndpoint(`flood${i}`));
    const tick = player.client.serverTick;
    for (let round = 0; round < 5; round++) {
      for (const [i, f] of flooders.entries()) {
        for (let k = 0; k < 100; k++) {
          hs.clientNonce = i * 1000 + k;
          const inner = writeHandshakePacket(stream, DEFAULT_PROTOCOL_ID, hs);
          const routed = new Uint8Array(MATCH_ROUTE_HEADER_BYTES + inner.length);
          writeMatchRoute(routed, 1);
          routed.set(inner, MATCH_ROUTE_HEADER_BYTES);
          f.send('server', routed);
        }
      }
      rig.run(200);
    }
    // 10,000 joins in a second: the match took at most a second's allowance and a second's refill.
    const rejected = rig.host.router.stats.rejected['join rate'] ?? 0;
    expect(rejected, msg).toBeGreaterThanOrEqual(10_000 - 1000);
    const match = rig.host.router.get(1);
    expect(match?.stats.droppedQueueFull, msg).toBe(0);
    expect(player.client.state, msg).toBe('connected');
    expect(player.client.serverTick, msg).toBeGreaterThan(tick + 50);
    expect(() => new MatchHost(rig.network.createEndpoint('bad'), { maxJoinPacketsPerSecond: -1 })).toThrow(
      /maxJoinPacketsPerSecond/,
    );
  });

  it('creates and ends 1,000 matches with players in one process and keeps memory flat', async () => {
    const seed = 15;
    const msg = `seed ${seed}`;
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const rig = new Rig(seed, fast);
    // A match's entity history lives in ArrayBuffers, outside the JavaScript heap: count both.
    // V8 returns an ArrayBuffer's memory on a background thread after the collection that found
    // it dead, so a reading taken at once may still count some (once, on a loaded machine, 23 MB
    // where 1.2 MB is usual): the least of three readings, each a moment after a collection.
    const heap = async (): Promise<number> => {
      let least = Infinity;
      for (let i = 0; i < 3; i++) {
        gc();
        gc();
        await new Promise((resolve) => setTimeout(resolve, 100));
        const m = process.memoryUsage();
        least = Math.min(least, m.heapUsed + m.arrayBuffers);
      }
      return least;
    };
    const batch = 20;
    // A batch at a time, giving the thread back between batches (the test watchdog's beat).
    const round = async (from: number, count: number): Promise<void> => {
      for (let id = from; id < from + count; id += batch) {
        await new Promise((resolve) => setImmediate(resolve));
        for (let k = 0; k < batch; k++) rig.create(id + k);
        for (let k = 0; k < batch; k++) rig.join(id + k);
        for (let t = 0; t < 3000 && rig.clients.some((c) => c.client.state !== 'connected'); t += 50)
          rig.run(50);
        for (const c of rig.clients) expect(c.client.state, `${msg} match ${id}`).toBe('connected');
        rig.run(50);
        for (let k = 0; k < batch; k++) rig.host.end(id + k);
        rig.run(50);
        for (const c of rig.clients) {
          const state = `${c.client.state} ${reasonName(c.client.endReason)}`;
          expect(state, `${msg} match ${id}`).toBe('disconnected match ended');
          expect(c.reasons, `${msg} match ${id}`).toEqual([DISCONNECT_MATCH_ENDED]);
        }
        rig.drop();
      }
    };
    await round(1, 100);
    const warm = await heap();
    await round(101, 900);
    const after = await heap();
    expect(rig.host.stats, msg).toEqual({ created: 1000, ended: 1000, failed: 0 });
    expect(rig.ended.length, msg).toBe(1000);
    expect(
      rig.ended.every((e) => e.clients === 1),
      msg,
    ).toBe(true);
    expect(rig.host.matches.size, msg).toBe(0);
    expect(rig.host.router.size, msg).toBe(0);
    expect(rig.host.router.boundAddresses, msg).toBe(0);
    // One match with its player holds about 12 MB (mostly entity history): two leaked fail this.
    rig.ended.length = 0;
    const growth = after - warm;
    expect(growth, `${msg}: heap grew ${(growth / 1e6).toFixed(2)} MB over 900 matches`).toBeLessThan(20e6);
    // About 40 s here alone; a machine busy with other work took over 120 s.
  }, 300_000);
});
