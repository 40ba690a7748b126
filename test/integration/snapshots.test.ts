// Snapshots end to end: real clients and a real server over the conditioner on simulated time.
// Decoded worlds equal the server's, remote players are drawn smoothly from the position
// history, and the rate setting spaces packets as the paper's footnote 7 describes.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { PLAYER_ENTITY, PLAYER_ENTITY_TYPE } from '../../games/arena/shared/entities.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import type { GameClient, InputSample } from '../../src/client/client.ts';
import { VIEW_INTERPOLATED } from '../../src/client/view.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { GameServer } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';

type Server = GameServer<ArenaPlayerState, ArenaWorld>;
type Client = GameClient<ArenaPlayerState, ArenaWorld>;

const X = PLAYER_ENTITY.index.x;
const Y = PLAYER_ENTITY.index.y;
const Z = PLAYER_ENTITY.index.z;

/** Server-side drones: hundreds of entities that spawn, wander, teleport and die, from a seed. */
function drones(seed: number, target: number) {
  const rng = new Random(seed);
  const live: number[] = [];
  return (server: Server) => {
    const store = server.entities;
    if (live.length < target && rng.chance(0.5)) {
      for (let k = 0; k < 4; k++) {
        const e = store.create(PLAYER_ENTITY_TYPE);
        if (e < 0) break;
        store.setField(e, X, rng.range(-3000, 3000));
        store.setField(e, Y, rng.range(-3000, 3000));
        store.setField(e, Z, rng.range(0, 200));
        live.push(e);
      }
    }
    for (let i = live.length - 1; i >= 0; i--) {
      const e = live[i];
      const roll = rng.next();
      if (roll < 0.003) {
        store.remove(e);
        live.splice(i, 1);
      } else if (roll < 0.006) {
        store.teleport(e);
        store.setField(e, X, rng.range(-3000, 3000));
      } else if (roll < 0.5) {
        const x = store.getField(e, X) as number;
        store.setField(e, X, Math.max(-4000, Math.min(4000, x + rng.range(-5, 5))));
      }
    }
  };
}

describe('snapshots over the conditioner', () => {
  it('every decoded world equals the server world for that tick, through 20% loss, duplicates and reordering', () => {
    const seed = 4242;
    const msg = `seed ${seed}`;
    const drive = drones(seed, 300);
    // A long entity history, so the test can look up every value a client holds.
    const match = new Match(
      arenaGame,
      seed,
      { entityHistoryTicks: 1024 },
      { onTick: (server) => drive(server) },
    );
    const profile = parseProfile({
      name: 'bad',
      latencyMs: 80,
      jitterMs: 30,
      loss: 0.2,
      duplicate: 0.1,
      reorder: 0.1,
      reorderDelayMs: 40,
    });
    const server = match.server;
    let compared = 0;
    let entitiesCompared = 0;
    let mismatches = 0;
    let created = 0;
    let removed = 0;
    const clients: Client[] = [];
    for (let i = 0; i < 3; i++) {
      const onSnapshot = (tick: number) => {
        const sc = server.clients[client.slot];
        const reader = client.snapshots;
        if (!sc) return;
        const stride = server.entities.schema.stride;
        for (let k = 0; k < reader.viewCount; k++) {
          const e = reader.view[k];
          const held = sc.snapshots.heldTick(tick, e);
          if (held < 0) {
            mismatches++;
            continue;
          }
          const values = reader.values(e);
          const slot = server.entities.history(held);
          if (slot !== undefined) {
            if (slot.alive[e] === 0) mismatches++;
            for (let f = 0; f < PLAYER_ENTITY.fieldCount; f++) {
              if (values[f] !== slot.values[e * stride + f]) mismatches++;
            }
            if (reader.parityOf(e) !== slot.parity[e]) mismatches++;
          } else {
            // Held since before the history kept: it has not changed since, so it equals the
            // server's present values.
            if (server.entities.changedTick[e] > held) mismatches++;
            const live = server.entities.values(e);
            for (let f = 0; f < PLAYER_ENTITY.fieldCount; f++) if (values[f] !== live[f]) mismatches++;
          }
          entitiesCompared++;
        }
        // Nothing the server had in this client's view is missing on the client.
        let serverView = 0;
        for (let e = 0; e < server.entities.maxEntities; e++)
          if (sc.snapshots.heldTick(tick, e) >= 0) serverView++;
        if (serverView !== reader.viewCount) mismatches++;
        created += reader.createdCount;
        removed += reader.removedCount;
        compared++;
      };
      const client = match.addClient({ profile, drive: runnerBot(seed + i), hooks: { onSnapshot } }).client;
      clients.push(client);
    }
    match.run(30_000);
    expect(mismatches, msg).toBe(0);
    expect(compared, msg).toBeGreaterThan(1500);
    expect(entitiesCompared, msg).toBeGreaterThan(100_000);
    expect(created, msg).toBeGreaterThan(900);
    expect(removed, msg).toBeGreaterThan(100);
    expect(server.entities.count, msg).toBeGreaterThan(250);
    for (const client of clients) {
      expect(client.state, msg).toBe('connected');
      expect(client.snapshots.stats.framesRead, msg).toBeGreaterThan(500);
    }
    match.close();
  });

  for (const delay of [0, 200]) {
    const label = delay === 0 ? 'the default delay' : `a ${delay} ms delay`;
    it(`draws a remote player through 10% loss at 20 Hz smoothly, on its true path, with ${label}`, () => {
      const seed = 31;
      const msg = `seed ${seed}`;
      const match = new Match(arenaGame, seed, { defaultUpdateRate: 20 });
      const clean = parseProfile({ name: 'clean', latencyMs: 50, jitterMs: 10 });
      const lossy = parseProfile({ name: 'lossy', latencyMs: 50, jitterMs: 10, down: { loss: 0.1 } });
      const runner = match.addClient({ profile: clean, drive: runnerBot(seed), config: { updateRate: 20 } });
      const watcher = match.addClient({
        profile: lossy,
        config: { updateRate: 20, interpolationDelayMs: delay },
      });
      // The true path: the runner's entity position at every server tick, and its top speed.
      const truth = new Map<number, { x: number; y: number; z: number }>();
      let topSpeed = 0;
      match.server.hooks.onTick = (s, tick) => {
        const sc = s.clients[runner.client.slot];
        if (!sc) return;
        const p = { x: sc.state.originX, y: sc.state.originY, z: sc.state.originZ };
        const q = truth.get(tick - 1);
        if (q && s.timeMs > 2000)
          topSpeed = Math.max(topSpeed, Math.hypot(p.x - q.x, p.y - q.y, p.z - q.z) * 64);
        truth.set(tick, p);
      };
      const view = watcher.client.view;
      const extrapolationMs = view.config.maxExtrapolationMs;
      let prev: { x: number; y: number; z: number } | null = null;
      let prevMode = 0;
      let worstSmooth = 0;
      let worstAfterExtrapolation = 0;
      let maxLagError = 0;
      let frames = 0;
      watcher.afterFrame = (nowMs) => {
        const sc = match.server.clients[runner.client.slot];
        if (!sc || nowMs < 3000) return;
        const e = sc.entity;
        const v = view.values;
        const p = { x: v[e * view.stride + X], y: v[e * view.stride + Y], z: v[e * view.stride + Z] };
        if (prev) {
          const step = Math.hypot(p.x - prev.x, p.y - prev.y, p.z - prev.z);
          if (prevMode === VIEW_INTERPOLATED) worstSmooth = Math.max(worstSmooth, step);
          else worstAfterExtrapolation = Math.max(worstAfterExtrapolation, step);
        }
        prev = p;
        prevMode = view.mode;
        if (view.mode === VIEW_INTERPOLATED) {
          // The drawn point lies on the true path within the last delay + latency + a frame.
          const windowTicks = Math.ceil(((watcher.client.interpolationDelayMs(nowMs) + 200) * 64) / 1000);
          let best = Infinity;
          for (let t = match.server.tick; t >= match.server.tick - windowTicks; t--) {
            const q = truth.get(t);
            if (q) best = Math.min(best, Math.hypot(p.x - q.x, p.y - q.y, p.z - q.z));
          }
          maxLagError = Math.max(maxLagError, best);
        }
        frames++;
      };
      match.run(40_000);
      const frameSeconds = 1 / 60;
      expect(frames, msg).toBeGreaterThan(2000);
      expect(topSpeed, msg).toBeGreaterThan(250);
      // Interpolating, a frame moves the drawn player no faster than the player really moved.
      expect(worstSmooth, msg).toBeLessThanOrEqual(topSpeed * frameSeconds * 1.05);
      // Leaving an extrapolation corrects at most what the capped extrapolation could get wrong.
      expect(worstAfterExtrapolation, msg).toBeLessThanOrEqual(
        topSpeed * (frameSeconds + extrapolationMs / 1000),
      );
      // Between two samples the drawn point is on the chord of the true curve: across a lost
      // frame the chord cuts a turning path's corner by a few units, never by half a player.
      expect(maxLagError, msg).toBeLessThan(16);
      const stats = view.stats;
      const dry = stats.extrapolated + stats.held;
      // Running dry takes several frames lost in a row: rare at 100 ms, rarer at 200 ms.
      expect(dry / frames, msg).toBeLessThan(delay === 200 ? 0.01 : 0.05);
      match.close();
    });
  }

  // The fixed delay (100 ms: two 20 Hz intervals) draws at the very sample times; the default
  // (adaptive) one draws between them, so it reaches the ground's sample within a hair.
  for (const delay of [100, 0]) {
    const label = delay === 0 ? 'the default delay' : `a fixed ${delay} ms delay`;
    it(`the bouncing ball: a jumping player drawn from a 20 Hz stream reaches the ground and the top of the jump, with ${label}`, () => {
      const seed = 3;
      const msg = `seed ${seed}`;
      const match = new Match(arenaGame, seed, { defaultUpdateRate: 20 });
      const profile = parseProfile({ name: 'clean', latencyMs: 40 });
      const jumper = match.addClient({
        profile,
        config: { updateRate: 20 },
        drive: (_c: Client, _t: number, input: InputSample) => {
          input.buttons = input.buttons === BUTTON_JUMP ? 0 : BUTTON_JUMP;
        },
      });
      const watcher = match.addClient({ profile, config: { updateRate: 20, interpolationDelayMs: delay } });
      let trueTop = -Infinity;
      let trueGround = Infinity;
      match.server.hooks.onTick = (s) => {
        const sc = s.clients[jumper.client.slot];
        if (!sc || s.timeMs < 3000) return;
        trueTop = Math.max(trueTop, sc.state.originZ);
        trueGround = Math.min(trueGround, sc.state.originZ);
      };
      let drawnTop = -Infinity;
      let drawnGround = Infinity;
      watcher.afterFrame = (nowMs) => {
        const sc = match.server.clients[jumper.client.slot];
        if (!sc || nowMs < 3500) return;
        const view = watcher.client.view;
        const z = view.values[sc.entity * view.stride + Z];
        drawnTop = Math.max(drawnTop, z);
        drawnGround = Math.min(drawnGround, z);
      };
      match.run(20_000);
      const height = trueTop - trueGround;
      expect(height, msg).toBeGreaterThan(30);
      // 20 Hz samples of a 0.68 s jump: the rendered path goes through the samples, so it gets
      // within a sample's reach of the apex and exactly to the ground (sampled while standing).
      if (delay === 0) expect(Math.abs(drawnGround - trueGround), msg).toBeLessThan(height * 0.01);
      else expect(drawnGround, msg).toBe(trueGround);
      expect(drawnTop, msg).toBeGreaterThan(trueTop - height * 0.05);
      match.close();
    });
  }

  it('a low rate chokes: packets are spaced by size / rate, and the client sees the choke', () => {
    const seed = 12;
    const msg = `seed ${seed}`;
    const drive = drones(seed, 200);
    const match = new Match(arenaGame, seed, {}, { onTick: (server) => drive(server) });
    const profile = parseProfile({ name: 'clean', latencyMs: 30 });
    const rate = 8000;
    const slow = match.addClient({ profile, config: { updateRate: 32, rateBytesPerSecond: rate } });
    const fast = match.addClient({ profile, config: { updateRate: 32 } });
    match.run(5000);
    const sc = match.server.clients[slow.client.slot]!;
    const fc = match.server.clients[fast.client.slot]!;
    // Record every frame packet the server sends the slow client: when, and how big.
    const sends: { atMs: number; bytes: number }[] = [];
    const send = sc.channel.send.bind(sc.channel);
    sc.channel.send = (nowMs, write) => {
      const before = sc.channel.stats.bytesSent;
      const sequence = send(nowMs, write);
      if (write !== undefined) sends.push({ atMs: nowMs, bytes: sc.channel.stats.bytesSent - before });
      return sequence;
    };
    const startFrames = sc.framesSent;
    const startBytes = sc.channel.stats.bytesSent;
    const startChoke = sc.choked;
    // The rate control starts every connection at 8,000 B/s and climbs: the fast client's start
    // may choke (200 drones' first full updates); from here on it never does.
    const startFastChoke = fc.choked;
    match.run(20_000);
    const frames = sc.framesSent - startFrames;
    const bytes = sc.channel.stats.bytesSent - startBytes;
    // The rate holds: bytes per second stay at or under the rate (plus one packet).
    expect(bytes / 20, msg).toBeLessThanOrEqual(rate + 1200 / 20);
    expect(bytes / 20, msg).toBeGreaterThan(rate * 0.8);
    // Fewer frames than 32 per second, and the difference shows as choke on both sides.
    expect(frames / 20, msg).toBeLessThan(28);
    expect(sc.choked - startChoke, msg).toBeGreaterThan(50);
    expect(slow.client.stats.choked, msg).toBeGreaterThan(50);
    expect(fc.choked - startFastChoke, msg).toBe(0);
    // Footnote 7: after each packet, the next waits for the update interval and for the rate
    // (its size / rate), whichever is later (to the next server tick); spacing varies with size.
    const tickMs = match.server.tickIntervalMs;
    const gaps = new Set<number>();
    for (let i = 1; i < sends.length; i++) {
      const gap = sends[i].atMs - sends[i - 1].atMs;
      const due = Math.max(1000 / 32, (sends[i - 1].bytes * 1000) / rate);
      expect(gap, msg).toBeGreaterThanOrEqual(due - 1e-9);
      expect(gap, msg).toBeLessThan(due + tickMs + 1e-9);
      gaps.add(Math.round(gap));
    }
    expect(sends.length, msg).toBe(frames);
    // Not a fixed interval: the rate stretched some gaps past the update interval.
    expect(gaps.size, msg).toBeGreaterThanOrEqual(2);
    expect(Math.max(...gaps), msg).toBeGreaterThan(1000 / 32 + tickMs);
    match.close();
  });

  it('spreads the frames of clients that joined together over the ticks, each still at its update rate', () => {
    const seed = 515;
    const msg = `seed ${seed}`;
    const clients = 24;
    // Frames written per tick: the clients' frames sent, read as the next tick starts.
    const run = (spreadFrames: boolean) => {
      let last = 0;
      const perTick: number[] = [];
      const sent = (server: Server) =>
        server.clients.reduce((n, c) => n + (c === null ? 0 : c.framesSent), 0);
      const match = new Match(
        arenaGame,
        seed,
        { maxClients: clients, spreadFrames },
        {
          onTick: (server) => {
            const now = sent(server);
            perTick.push(now - last);
            last = now;
          },
        },
      );
      const profile = parseProfile({ name: 'clean', latencyMs: 30 });
      for (let i = 0; i < clients; i++) match.addClient({ profile, drive: runnerBot(seed + i) });
      match.run(3000);
      const connected = match.server.clientCount;
      const framesBefore = match.server.clients.map((c) => c?.framesSent ?? 0);
      const from = perTick.length;
      const spreadBefore = match.server.stats.framesSpread;
      match.run(5000);
      const rates = match.server.clients.map((c, i) => ((c?.framesSent ?? 0) - framesBefore[i]) / 5);
      const spread = match.server.stats.framesSpread;
      match.close();
      return { connected, busiest: Math.max(...perTick.slice(from)), rates, spreadBefore, spread };
    };
    // Joined on the same tick, at 32 snapshots a second and 64 ticks: all on every other tick.
    const together = run(false);
    expect(together.connected, msg).toBe(clients);
    expect(together.busiest, msg).toBe(clients);
    expect(together.spread, msg).toBe(0);
    // Spread: no tick writes more than its share (12) and the margin (4), and every client still
    // gets 32 snapshots a second. Frames waited a tick while the clients joined; once spread,
    // none does.
    const spread = run(true);
    expect(spread.connected, msg).toBe(clients);
    expect(spread.busiest, msg).toBeLessThanOrEqual(16);
    for (const r of spread.rates) expect(r, msg).toBeGreaterThanOrEqual(31.8);
    expect(spread.spreadBefore, msg).toBeGreaterThan(0);
    expect(spread.spread, msg).toBe(spread.spreadBefore);
    // A setting that is not a boolean is named.
    expect(() => new Match(arenaGame, seed, { spreadFrames: 'yes' as unknown as boolean })).toThrow(
      'server config: spreadFrames must be true or false, got yes',
    );
  });

  it('a client that cannot decode against its baseline asks for a full update and recovers', () => {
    const seed = 77;
    const msg = `seed ${seed}`;
    const drive = drones(seed, 100);
    const match = new Match(arenaGame, seed, {}, { onTick: (server) => drive(server) });
    const profile = parseProfile({ name: 'clean', latencyMs: 40 });
    const c = match.addClient({ profile, drive: runnerBot(seed) });
    match.run(3000);
    const reader = c.client.snapshots;
    const readBefore = reader.stats.framesRead;
    // The client loses every frame it had (as if its memory of them were corrupted): the next
    // snapshots name baselines it does not know.
    reader.reset();
    match.run(3000);
    expect(reader.stats.dropped['baseline unknown'], msg).toBeGreaterThan(0);
    expect(reader.needsFullUpdate, msg).toBe(false);
    expect(reader.stats.framesRead - readBefore, msg).toBeGreaterThan(60);
    const sc = match.server.clients[c.client.slot]!;
    expect(sc.snapshots.stats.framesWithoutBaseline, msg).toBeGreaterThan(1);
    let serverView = 0;
    for (let e = 0; e < match.server.entities.maxEntities; e++) {
      if (sc.snapshots.heldTick(reader.frameTick, e) >= 0) serverView++;
    }
    expect(reader.viewCount, msg).toBe(serverView);
    expect(serverView, msg).toBeGreaterThan(50);
    match.close();
  });
});
