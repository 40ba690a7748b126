// Spectators end to end: bots fight while spectators (no player, no commands) watch over a lossy
// network on simulated time. Each sees every frame's world exactly as the server had it, never
// less than its delay behind, and a stream is encoded once per frame whatever its audience.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { SpectatorClient } from '../../src/client/spectator.ts';
import { writePacketChecksum } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CHALLENGE_RESPONSE,
  readHandshakePacket,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { combineHooks, type ServerHooks } from '../../src/server/hooks.ts';

/** The server's committed world at each tick: entity -> [type, parity, ...values]. */
function worldTap(worlds: Map<number, Map<number, number[]>>): ServerHooks<ArenaPlayerState, ArenaWorld> {
  return {
    afterTick(server, tick) {
      const slot = server.entities.history(tick);
      if (slot === undefined) throw new Error(`no history at ${tick}`);
      const w = new Map<number, number[]>();
      const stride = server.entities.stride;
      for (let e = 0; e < server.entities.end; e++) {
        if (slot.alive[e] === 0) continue;
        const n = server.entities.schema.types[slot.type[e]].fieldCount;
        w.set(e, [slot.type[e], slot.parity[e], ...slot.values.subarray(e * stride, e * stride + n)]);
      }
      worlds.set(tick, w);
    },
  };
}

describe('spectators', () => {
  it('watch the exact world a fixed delay behind, one encoding per frame for any number', () => {
    const seed = 29;
    const msg = `seed ${seed}`;
    const worlds = new Map<number, Map<number, number[]>>();
    const match = new Match(
      arenaGame,
      seed,
      { spectators: { maxSpectators: 4, delaysMs: [1000, 3000] } },
      combineHooks(arenaRules({ respawnMs: 1000 }), worldTap(worlds)),
    );
    const profile = parseProfile({ name: 'lossy', latencyMs: 40, jitterMs: 8, loss: 0.1, duplicate: 0.05 });
    for (let i = 0; i < 4; i++)
      match.addClient({ profile, drive: aimBot(seed * 3 + i, { aimErrorUnits: 15 }) });
    const server = match.server;
    const tickMs = server.tickIntervalMs;
    // Three on the 3 s stream, one asking for 500 ms (gets 1 s), one too many.
    const asks = [3000, 3000, 2500, 500, 3000];
    let compared = 0;
    const spectators = asks.map((delayMs, i) => {
      const endpoint = match.network.createEndpoint(`spectator${i}`, profile);
      const frames: { tick: number; live: number; at: number }[] = [];
      const sp: SpectatorClient = new SpectatorClient(
        arenaGame,
        endpoint,
        'server',
        { delayMs, seed: seed + i },
        {
          onFrame(tick, live) {
            frames.push({ tick, live, at: server.tick });
            // The decoded world is the server's at that tick, entity for entity.
            const want = worlds.get(tick);
            if (want === undefined) throw new Error(`${msg}: server has no tick ${tick}`);
            const r = sp.snapshots;
            const got = new Map<number, number[]>();
            for (let k = 0; k < r.viewCount; k++) {
              const e = r.view[k];
              const n = arenaGame.entities.types[r.typeOf(e)].fieldCount;
              got.set(e, [r.typeOf(e), r.parityOf(e), ...r.values(e).subarray(0, n)]);
            }
            expect(got, `${msg}: spectator ${i} at tick ${tick}`).toEqual(want);
            compared++;
          },
        },
      );
      return { sp, frames, delayMs };
    });
    for (let t = 0; t < 20_000; t += 10) {
      match.run(10);
      // The last one comes once the others are in: the server is full of spectators by then.
      for (const [i, s] of spectators.entries()) if (i < 4 || t >= 3000) s.sp.update(match.nowMs);
    }
    const hub = server.spectators;
    if (hub === null) throw new Error('no spectator hub');
    expect(
      spectators.map((s) => s.sp.state),
      msg,
    ).toEqual(['connected', 'connected', 'connected', 'connected', 'refused']);
    expect(hub.spectatorCount, msg).toBe(4);
    // Spectators have no player: the only player entities are the bots'.
    let players = 0;
    for (let e = 0; e < server.entities.end; e++) {
      if (server.entities.isAlive(e) && server.entities.typeIdAt(e) === arenaGame.playerEntity.typeId)
        players++;
    }
    expect(players, msg).toBe(4);
    for (const [i, s] of spectators.slice(0, 4).entries()) {
      const delayTicks = Math.round((s.delayMs === 500 ? 1000 : 3000) / tickMs);
      expect(s.frames.length, `${msg}: spectator ${i}`).toBeGreaterThan(400);
      // Never ahead of the delay: no frame shows a tick newer than the server's minus the delay.
      for (const f of s.frames) {
        expect(f.live - f.tick, `${msg}: spectator ${i}`).toBe(delayTicks);
        expect(f.at - f.tick, `${msg}: spectator ${i}`).toBeGreaterThanOrEqual(delayTicks);
      }
      expect(s.sp.view.count, `${msg}: spectator ${i} draws`).toBeGreaterThanOrEqual(4);
      expect(s.sp.stats.eventsReceived, `${msg}: spectator ${i}`).toBeGreaterThan(50);
    }
    expect(compared, msg).toBeGreaterThan(2000);
    const [short, long] = hub.streams.map((s) => s.stats);
    expect([short.delayMs, short.spectators, long.delayMs, long.spectators], msg).toEqual([1000, 1, 3000, 3]);
    // One encoding per frame, sent to each of the stream's spectators.
    expect(long.packetsSent, msg).toBeGreaterThan(2.5 * long.framesEncoded);
    expect(long.framesEncoded, msg).toBeLessThan((20_000 / 1000) * 32 + 2);
    expect(long.keyframes, msg).toBeLessThan(10);
    match.close();
  }, 60_000);

  it('a spectator that stops acknowledging does not make the frames bigger for the rest of its stream', () => {
    const seed = 37;
    /** Bytes per frame while both watch (2-5 s) and while one is silent (7-10 s); the other's frames. */
    const run = (staleAckMs: number) => {
      const worlds = new Map<number, Map<number, number[]>>();
      const match = new Match(
        arenaGame,
        seed,
        { spectators: { maxSpectators: 2, delaysMs: [1000], staleAckMs } },
        combineHooks(arenaRules({ respawnMs: 1000 }), worldTap(worlds)),
      );
      const profile = parseProfile({ name: 'lossy', latencyMs: 40, jitterMs: 8, loss: 0.05, duplicate: 0 });
      for (let i = 0; i < 6; i++)
        match.addClient({ profile, drive: aimBot(seed * 5 + i, { aimErrorUnits: 15 }) });
      let mismatches = 0;
      let framesWhileSilent = 0;
      let framesAfterResuming = 0;
      let silent = false;
      let resumed = false;
      const watchers = [0, 1].map((i) => {
        const sp: SpectatorClient = new SpectatorClient(
          arenaGame,
          match.network.createEndpoint(`spectator${i}`, profile),
          'server',
          { delayMs: 1000, seed: seed + i },
          {
            onFrame(tick) {
              if (i === 0 && silent) framesWhileSilent++;
              if (i === 1 && resumed) framesAfterResuming++;
              const want = worlds.get(tick);
              const r = sp.snapshots;
              let same = want !== undefined && want.size === r.viewCount;
              for (let k = 0; same && k < r.viewCount; k++) {
                const e = r.view[k];
                const n = arenaGame.entities.types[r.typeOf(e)].fieldCount;
                const w = want?.get(e);
                same = w !== undefined && w[0] === r.typeOf(e) && w[1] === r.parityOf(e);
                for (let f = 0; same && f < n; f++) same = w?.[2 + f] === r.values(e)[f];
              }
              if (!same) mismatches++;
            },
          },
        );
        return sp;
      });
      const stream = () => {
        const st = match.server.spectators?.streams[0].stats;
        if (st === undefined) throw new Error('no spectator stream');
        return { bytes: st.bytesEncoded, frames: st.framesEncoded };
      };
      const perFrame = (a: { bytes: number; frames: number }, b: { bytes: number; frames: number }) =>
        (b.bytes - a.bytes) / Math.max(1, b.frames - a.frames);
      let healthyFrom = stream();
      let healthy = 0;
      let silentFrom = stream();
      let stale = 0;
      let silentBytes = 0;
      for (let t = 0; t < 13_000; t += 10) {
        if (t === 2000) healthyFrom = stream();
        if (t === 5000) {
          healthy = perFrame(healthyFrom, stream());
          silent = true; // the second spectator stops: no packets, no acknowledgements
        }
        if (t === 7000) silentFrom = stream();
        if (t === 10_000) {
          silentBytes = perFrame(silentFrom, stream());
          stale = match.server.spectators?.streams[0].stats.stale ?? -1;
          silent = false; // and comes back before it times out
          resumed = true;
        }
        match.run(10);
        watchers[0].update(match.nowMs);
        if (!silent) watchers[1].update(match.nowMs);
      }
      const states = watchers.map((w) => w.state);
      match.close();
      const staleAfter = match.server.spectators?.streams[0].stats.stale ?? -1;
      return {
        healthy,
        silentBytes,
        stale,
        staleAfter,
        mismatches,
        framesWhileSilent,
        framesAfterResuming,
        states,
      };
    };
    const bounded = run(1000);
    const unbounded = run(60_000);
    const msg = `seed ${seed}; bounded ${JSON.stringify(bounded)}; unbounded ${JSON.stringify(unbounded)}`;
    expect(bounded.states, msg).toEqual(['connected', 'connected']);
    expect(bounded.stale, msg).toBe(1);
    expect(unbounded.stale, msg).toBe(0);
    // The one still watching sees every frame's world exactly, and keeps getting frames; the
    // other, back, catches up (a full update) and counts again.
    expect(bounded.mismatches, msg).toBe(0);
    expect(bounded.framesWhileSilent, msg).toBeGreaterThan(150);
    expect(bounded.framesAfterResuming, msg).toBeGreaterThan(50);
    expect(bounded.staleAfter, msg).toBe(0);
    // Frames stay the size they had while both watched; without the bound they grow.
    expect(bounded.silentBytes, msg).toBeLessThan(1.5 * bounded.healthy);
    expect(unbounded.silentBytes, msg).toBeGreaterThan(1.4 * bounded.silentBytes);
  }, 60_000);

  it('a server that takes no spectators refuses one as full; players play on', () => {
    const seed = 31;
    const match = new Match(arenaGame, seed);
    const player = match.addClient({ drive: aimBot(seed) });
    const sp = new SpectatorClient(arenaGame, match.network.createEndpoint('spectator'), 'server', { seed });
    for (let t = 0; t < 2000; t += 10) {
      match.run(10);
      sp.update(match.nowMs);
    }
    expect(sp.state, `seed ${seed}`).toBe('refused');
    expect(player.client.state, `seed ${seed}`).toBe('connected');
    expect(match.server.spectators).toBeNull();
    match.close();
  });

  it('the role travels in the challenge response; an unknown role is malformed', () => {
    const s = createHandshakeStream();
    const p = createHandshakePacket();
    p.type = PACKET_CHALLENGE_RESPONSE;
    p.updateRate = 32;
    p.spectator = true;
    p.spectatorDelayMs = 2500;
    const bytes = writeHandshakePacket(s, 7, p).slice();
    const back = createHandshakePacket();
    expect(readHandshakePacket(createHandshakeStream(), 7, bytes, back)).toBe('');
    expect([back.spectator, back.spectatorDelayMs]).toEqual([true, 2500]);
    // The role byte follows nonce, issuedAt, cookie (16 bytes), updateRate and rate.
    bytes[5 + 16 + 1 + 4] = 2;
    writePacketChecksum(7, bytes, bytes.length);
    expect(readHandshakePacket(createHandshakeStream(), 7, bytes, back)).toBe('malformed');
  });
});
