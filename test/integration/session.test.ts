// A whole session between real clients and a real server over the conditioner: events reach
// the right clients once, the clock follows the server, hostile traffic hurts nobody else.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { EVENT_FOOTSTEP } from '../../games/arena/shared/constants.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import type { GameClient, InputSample } from '../../src/client/client.ts';
import { DEFAULT_PROTOCOL_VERSION } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  DISCONNECT_KICKED,
  PACKET_CONNECT_REQUEST,
  REFUSE_BANNED,
  REFUSE_SERVER_FULL,
  REFUSE_WRONG_SCHEMA,
  reasonName,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { nodeCipher } from '../../src/net/node-packet-crypto.ts';
import type { PacketCipher } from '../../src/net/packet-crypto.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { BitStream } from '../../src/protocol/bitstream.ts';
import { MAX_MESSAGES_PER_TICK, WORLD_EVENT_SOURCE } from '../../src/server/server.ts';
import { Random } from '../../src/sim/random.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

function runner(_c: Client, nowMs: number, input: InputSample): void {
  input.forwardMove = 127;
  input.yaw = (nowMs / 20) % 360;
}

const profile = parseProfile({ name: 'test', latencyMs: 60, jitterMs: 10, loss: 0.02 });

describe('a session', () => {
  it('plays each footstep once: the owner from prediction, the others from the server', () => {
    const seed = 5;
    const local = new Map<number, number>();
    const remote = new Map<number, number>();
    const match = new Match(arenaGame, seed);
    const count = (m: Map<number, number>, source: number) => m.set(source, (m.get(source) ?? 0) + 1);
    const a = match.addClient({
      profile,
      drive: runner,
      hooks: {
        onEvent: (e, predicted) => {
          if (e.type !== EVENT_FOOTSTEP) return;
          if (predicted) count(local, e.source);
          else count(remote, e.source);
        },
      },
    });
    const b = match.addClient({ profile, drive: runner });
    match.run(20_000);
    const msg = `seed ${seed}`;
    const mine = a.client.slot;
    const theirs = b.client.slot;
    // The server credits footsteps to the player who made them.
    let serverSteps = 0;
    let serverStepsOfA = 0;
    for (let p = match.server.events.tail; p < match.server.events.head; p++) {
      const e = match.server.events.at(p);
      if (e.type !== EVENT_FOOTSTEP) continue;
      serverSteps++;
      if (e.source === mine) serverStepsOfA++;
    }
    expect(serverSteps, msg).toBeGreaterThan(50);
    // A never hears its own footsteps from the server, and hears each of them once locally.
    expect(remote.get(mine) ?? 0, msg).toBe(0);
    expect(local.get(mine) ?? 0, msg).toBe(serverStepsOfA);
    // B's footsteps reach A from the server (lost packets may drop a few: events are effects).
    const bSteps = serverSteps - serverStepsOfA;
    expect(remote.get(theirs) ?? 0, msg).toBeGreaterThan(bSteps * 0.9);
    expect(remote.get(theirs) ?? 0, msg).toBeLessThanOrEqual(bSteps);
    match.close();
  });

  it('sends effect events only to clients within hearing of their source', () => {
    const seed = 15;
    let heard = 0;
    const match = new Match(arenaGame, seed, { eventRadius: 1 });
    match.addClient({
      profile,
      drive: runner,
      hooks: {
        onEvent: (e, predicted) => {
          if (!predicted && e.type === EVENT_FOOTSTEP) heard++;
        },
      },
    });
    match.addClient({ profile, drive: runner });
    match.run(10_000);
    let steps = 0;
    for (let p = match.server.events.tail; p < match.server.events.head; p++) {
      if (match.server.events.at(p).type === EVENT_FOOTSTEP) steps++;
    }
    expect(steps, `seed ${seed}`).toBeGreaterThan(20);
    // Two players never stand within one unit of each other: nothing of the other is heard.
    expect(heard, `seed ${seed}`).toBe(0);
    match.close();
  });

  it("sends the world's events to every client, however far, and a player's only within hearing", () => {
    const seed = 16;
    const heardWorld = [0, 0];
    const heardPlayer = [0, 0];
    let emitted = 0;
    // The world (the server's own tick) makes a sound every half second; the players run apart.
    const match = new Match(
      arenaGame,
      seed,
      { eventRadius: 1 },
      {
        onTick: (server, tick) => {
          if (tick % 32 !== 0) return;
          server.events.emit(EVENT_FOOTSTEP, 200, 0, 0, 0);
          emitted++;
        },
      },
    );
    for (const i of [0, 1]) {
      match.addClient({
        profile,
        drive: runner,
        hooks: {
          onEvent: (e, predicted) => {
            if (predicted || e.type !== EVENT_FOOTSTEP) return;
            if (e.source === WORLD_EVENT_SOURCE) heardWorld[i]++;
            else heardPlayer[i]++;
          },
        },
      });
    }
    match.run(10_000);
    expect(emitted, `seed ${seed}`).toBeGreaterThan(15);
    for (const i of [0, 1]) {
      // All but those sent in the last frames or lost with their packet (2 % loss).
      expect(heardWorld[i], `seed ${seed}, client ${i}`).toBeGreaterThan(emitted * 0.8);
      // The other runner's footsteps, logged all along, are never within one unit.
      expect(heardPlayer[i], `seed ${seed}, client ${i}`).toBe(0);
    }
    match.close();
  });

  it('follows the server clock within a few milliseconds of one-way latency, never backwards', () => {
    const seed = 6;
    const match = new Match(arenaGame, seed);
    const c = match.addClient({ profile, drive: runner });
    let last = -Infinity;
    let backwards = 0;
    const errors: number[] = [];
    c.afterFrame = (nowMs) => {
      const clock = c.client.clock;
      if (!clock.synced) return;
      const est = clock.serverNow(nowMs);
      if (est < last) backwards++;
      last = est;
      if (nowMs > 5000) errors.push(est - match.server.timeMs);
    };
    match.run(30_000);
    const msg = `seed ${seed}`;
    expect(backwards, msg).toBe(0);
    expect(c.client.clock.resyncs, msg).toBe(0);
    // The server's tick advances in 15.6 ms steps; the estimate runs continuously between them.
    const mean = errors.reduce((s, e) => s + e, 0) / errors.length;
    expect(Math.abs(mean), msg).toBeLessThan(20);
    for (const e of errors) expect(Math.abs(e), msg).toBeLessThan(60);
    match.close();
  });

  it('survives a connected client that sends garbage and hostile commands; others play on', () => {
    const seed = 7;
    const rng = new Random(seed);
    const match = new Match(arenaGame, seed);
    const honest = match.addClient({ profile, drive: runner });
    const hostile = match.addClient({ profile, drive: runner });
    match.run(2000);
    const server = match.server;
    const victim = server.clients[hostile.client.slot]!;
    expect(victim, `seed ${seed}`).not.toBeNull();
    // Forge the hostile client's traffic on its own connection: garbage, then valid packets
    // whose command payloads are garbage, then commands with absurd values.
    const hostileChannel = hostile.client.channel!;
    const endpoint = hostile.endpoint;
    const bytes = new Uint8Array(1400);
    for (let i = 0; i < 3000; i++) {
      const length = rng.int(0, 1400);
      for (let j = 0; j < length; j++) bytes[j] = rng.int(0, 255);
      if (i % 3 === 0) bytes[0] = 0;
      endpoint.send('server', bytes.subarray(0, length));
      if (i % 2 === 0) {
        hostileChannel.send(match.nowMs, (s: BitStream) => {
          const n = rng.int(0, 40);
          for (let k = 0; k < n; k++) s.uint(rng.int(0, 255), 8);
        });
      }
      if (i % 100 === 0) match.run(16);
    }
    match.run(5000);
    const msg = `seed ${seed}`;
    expect(victim.badPayloads, msg).toBeGreaterThan(100);
    expect(honest.client.state, msg).toBe('connected');
    expect(honest.client.predictor.stats.corrections, msg).toBe(0);
    expect(server.clients[honest.client.slot]!.commandStats.executed, msg).toBeGreaterThan(400);
    match.close();
  });

  it('a client survives a hostile server: garbage payloads on a valid connection never throw', () => {
    const seed = 13;
    const rng = new Random(seed);
    const match = new Match(arenaGame, seed);
    const c = match.addClient({ profile, drive: runner });
    match.run(2000);
    const sc = match.server.clients[c.client.slot]!;
    for (let i = 0; i < 5000; i++) {
      // Half: random bytes; half: a plausible frame header (current tick and ack), then garbage
      // where the player state, events and snapshot should be.
      const plausible = i % 2 === 1;
      sc.channel.send(match.nowMs, (s: BitStream) => {
        if (plausible) {
          s.uint(match.server.tick, 32);
          s.uint(0, 8);
          s.uint(sc.commands.lastDone, 32);
        }
        const n = rng.int(0, 300);
        for (let k = 0; k < n; k++) s.uint(rng.int(0, 255), 8);
      });
      if (i % 50 === 0) match.run(16);
    }
    match.run(2000);
    const msg = `seed ${seed}`;
    expect(c.client.state, msg).toBe('connected');
    expect(c.client.stats.framesBad + c.client.snapshots.stats.framesRead, msg).toBeGreaterThan(100);
    expect(c.client.stats.framesBad, msg).toBeGreaterThan(100);
    match.close();
  });

  it('server code respawns a player to a fresh state at its spawn point, marked as a teleport', () => {
    const seed = 19;
    const msg = `seed ${seed}`;
    const match = new Match(arenaGame, seed);
    const c = match.addClient({ profile, drive: runner });
    match.run(2000);
    const server = match.server;
    const sc = server.clients[c.client.slot]!;
    sc.state.health = 7;
    sc.state.originX += 300;
    const parityBefore = server.entities.history(server.tick)!.parity[sc.entity];
    server.respawn(sc);
    const expected = arenaGame.player.create();
    arenaGame.spawn(expected, server.world, sc.slot);
    expect(arenaGame.player.equals(sc.state, expected), msg).toBe(true);
    match.run(100);
    expect(server.entities.history(server.tick)!.parity[sc.entity], msg).not.toBe(parityBefore);
    // The owner's prediction takes the server's word for it; the connection plays on.
    match.run(1000);
    expect(c.client.state, msg).toBe('connected');
    expect(c.client.predictor.current.health, msg).toBe(expected.health);
    match.close();
  });

  it('refuses a client built against another game schema, naming the reason', () => {
    const seed = 9;
    const match = new Match(arenaGame, seed);
    // The same game without its event table: every event would travel differently.
    const other = match.addClient({ profile, game: { ...arenaGame, events: undefined } });
    const same = match.addClient({ profile, drive: runner });
    match.run(1000);
    const msg = `seed ${seed}`;
    expect(other.client.state, msg).toBe('refused');
    expect(other.client.endReason, msg).toBe(REFUSE_WRONG_SCHEMA);
    expect(reasonName(other.client.endReason), msg).toBe('built against another game schema');
    expect(same.client.state, msg).toBe('connected');
    expect(match.server.clientCount, msg).toBe(1);
    match.close();
  });

  it('refuses a client of another version with the reason, and times out a silent one', () => {
    const seed = 8;
    const match = new Match(arenaGame, seed, { timeoutMs: 2000, maxClients: 1 });
    const wrong = match.addClient({ profile, config: { protocolVersion: 99 } });
    match.run(1000);
    expect(wrong.client.state, `seed ${seed}`).toBe('refused');
    const first = match.addClient({ profile, drive: runner });
    match.run(1000);
    expect(first.client.state).toBe('connected');
    // Server full is transient: a client retries it until its connect timeout, then gives up
    // with the reason.
    const impatient = match.addClient({ profile, drive: runner, config: { connectTimeoutMs: 1500 } });
    const second = match.addClient({ profile, drive: runner, config: { connectTimeoutMs: 20_000 } });
    match.run(2000);
    expect(impatient.client.state, 'server full').toBe('refused');
    expect(impatient.client.endReason).toBe(REFUSE_SERVER_FULL);
    expect(second.client.state, 'server full').not.toBe('connected');
    // The first client goes silent (its frames stop); the server frees the slot and the client
    // still retrying takes it.
    first.frameMs = 1e9;
    first.nextFrameMs = 1e9;
    match.run(3000);
    expect(second.client.state).toBe('connected');
    expect(match.server.clientCount).toBe(1);
    second.client.disconnect();
    match.run(500);
    expect(match.server.clientCount).toBe(0);
    const third = match.addClient({ profile, drive: runner });
    match.run(1000);
    expect(third.client.state).toBe('connected');
    third.client.disconnect();
    match.run(500);
    expect(match.server.clientCount).toBe(0);
    expect(match.server.stats.disconnects).toBe(3);
    match.close();
  });

  it('refuses a banned address with the reason, and kicks it when banned while playing', () => {
    const seed = 10;
    const match = new Match(arenaGame, seed);
    const a = match.addClient({ profile, drive: runner });
    match.run(1000);
    expect(a.client.state).toBe('connected');
    match.server.ban(a.endpoint.address);
    match.run(1000);
    expect(a.client.state, `seed ${seed}`).toBe('disconnected');
    expect(a.client.endReason).toBe(DISCONNECT_KICKED);
    match.server.ban('client1');
    const b = match.addClient({ profile, drive: runner });
    match.run(1000);
    expect(b.client.state).toBe('refused');
    expect(b.client.endReason).toBe(REFUSE_BANNED);
    expect(match.server.clientCount).toBe(0);
    match.close();
  });

  it('server code that disconnects a client from a hook runs none of its commands after that, in the same tick or later', () => {
    const seed = 12;
    const msg = `seed ${seed}`;
    let kicked = false;
    let runAfter = 0;
    const match = new Match(
      arenaGame,
      seed,
      {},
      {
        // A message is what gets this client kicked (as a host refusing bad messages does).
        onMessage: (server, client) => {
          kicked = true;
          server.disconnect(client);
        },
        onCommand: (_server, client) => {
          if (kicked && client.slot === 0) runAfter++;
        },
      },
    );
    const a = match.addClient({ profile, drive: runner });
    match.run(1000);
    expect(a.client.state, msg).toBe('connected');
    expect(a.client.slot, msg).toBe(0);
    // The message and the frame's commands go in the same packets: they arrive in the same tick.
    for (let i = 0; i < 20; i++) {
      a.client.sendMessage(new Uint8Array([1]));
      match.run(5);
    }
    match.run(500);
    expect(kicked, msg).toBe(true);
    expect(runAfter, msg).toBe(0);
    expect(a.client.state, msg).toBe('disconnected');
    match.close();
  });

  it('hands a client its reliable messages at most MAX_MESSAGES_PER_TICK a tick, all of them in order', () => {
    const seed = 13;
    const msg = `seed ${seed}`;
    const got: number[] = [];
    let most = 0;
    let thisTick = 0;
    const match = new Match(
      arenaGame,
      seed,
      {},
      {
        onMessage: (_server, _client, message) => {
          got.push(message[0] | (message[1] << 8));
          thisTick++;
        },
        onTick: () => {
          most = Math.max(most, thisTick);
          thisTick = 0;
        },
      },
    );
    const a = match.addClient({ profile, drive: runner });
    match.run(1000);
    for (let i = 0; i < 200; i++) a.client.sendMessage(new Uint8Array([i & 0xff, i >> 8]));
    match.run(3000);
    expect(got, msg).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(most, msg).toBe(MAX_MESSAGES_PER_TICK);
    match.close();
  });

  it('a client that disconnects and connects again plays on from scratch', () => {
    const seed = 11;
    const msg = `seed ${seed}`;
    const match = new Match(arenaGame, seed);
    const c = match.addClient({ profile, drive: runner });
    match.run(3000);
    const first = { snapshots: c.client.snapshots, view: c.client.view, predictor: c.client.predictor };
    c.client.disconnect();
    match.run(1000);
    expect(match.server.clientCount, msg).toBe(0);
    c.client.connect(match.nowMs);
    // A new session: nothing of the first connection's snapshots, view or prediction is kept.
    expect(c.client.snapshots, msg).not.toBe(first.snapshots);
    expect(c.client.view, msg).not.toBe(first.view);
    expect(c.client.predictor, msg).not.toBe(first.predictor);
    expect(c.client.snapshots.stats.framesRead, msg).toBe(0);
    match.run(3000);
    expect(c.client.state, msg).toBe('connected');
    const sc = match.server.clients[c.client.slot]!;
    expect(sc.commandStats.executed, msg).toBeGreaterThan(100);
    expect(sc.commandStats.tooFarAhead, msg).toBe(0);
    expect(c.client.predictor.stats.corrections, msg).toBe(0);
    // Three seconds at 32 snapshots per second, less the handshake.
    expect(c.client.snapshots.stats.framesRead, msg).toBeGreaterThan(75);
    match.close();
  });

  it("a client with Node's packet cipher plays beside one with the default; a bad packetCipher is refused", () => {
    const seed = 14;
    const msg = `seed ${seed}`;
    const match = new Match(arenaGame, seed);
    const ciphers: PacketCipher[] = [];
    const node = match.addClient({
      profile,
      drive: runner,
      config: {
        packetCipher: (key) => {
          const c = nodeCipher(key);
          ciphers.push(c);
          return c;
        },
      },
    });
    const noble = match.addClient({ profile, drive: runner });
    match.run(3000);
    // One cipher for each direction of the one connection.
    expect(ciphers.length, msg).toBe(2);
    for (const c of [node, noble]) {
      expect(c.client.state, msg).toBe('connected');
      const sc = match.server.clients[c.client.slot]!;
      expect(sc.commandStats.executed, msg).toBeGreaterThan(100);
      expect(c.client.stats.framesBad, msg).toBe(0);
      expect(c.client.snapshots.stats.framesRead, msg).toBeGreaterThan(75);
    }
    expect(match.server.stats.rejected, msg).toEqual({});
    match.close();
    expect(() =>
      new Match(arenaGame, seed).addClient({
        config: { packetCipher: 'chacha' as unknown as (key: Uint8Array) => PacketCipher },
      }),
    ).toThrow(/packetCipher must be a function/);
  });

  it('keeps entity history for lag compensation: every value a frame holds can be rebuilt when a command names it', () => {
    // A command may wait (maxReorderWindowMs, maxSilentWaitMs and commandSlackMs: 288 ticks at 64 Hz) and name a frame
    // maxUnlagMs + lateArrivalMs (144 ticks) old; each writer sends an entity before the values a frame holds of it
    // get older than what is left of the history.
    const seed = 13;
    const match = new Match(arenaGame, seed);
    const c = match.addClient({ profile, drive: runner });
    match.run(500);
    expect(match.server.entities.config.historyTicks).toBe(512);
    const writer = match.server.clients[c.client.slot]!.snapshots;
    expect(writer.config.maxHeldAgeTicks).toBe(512 - 288 - 144 - 1);
    match.close();
    const longer = new Match(arenaGame, seed, { entityHistoryTicks: 1024 });
    const d = longer.addClient({ profile, drive: runner });
    longer.run(500);
    expect(longer.server.clients[d.client.slot]!.snapshots.config.maxHeldAgeTicks).toBe(1024 - 288 - 144 - 1);
    longer.close();
    // A server that waits at most 1000 ms for a missing command keeps the history's rest for held values.
    const shorter = new Match(arenaGame, seed, { maxReorderWindowMs: 1000 });
    const e = shorter.addClient({ profile, drive: runner });
    shorter.run(500);
    expect(shorter.server.clients[e.client.slot]!.snapshots.config.maxHeldAgeTicks).toBe(512 - 256 - 144 - 1);
    shorter.close();
    expect(() => new Match(arenaGame, seed, { maxReorderWindowMs: 5 })).toThrow(
      /maxReorderWindowMs must be in \[20, 10000\], got 5/,
    );
    expect(() => new Match(arenaGame, seed, { maxSilentWaitMs: 20_000 })).toThrow(
      /maxSilentWaitMs must be in \[0, 10000\], got 20000/,
    );
    expect(() => new Match(arenaGame, seed, { entityHistoryTicks: 256 })).toThrow(
      /entityHistoryTicks \(256\) must be more than a command's longest wait \(288 ticks.*0 chooses 512/,
    );
  });

  it('a client sending a command every millisecond runs at most maxCommandsPerTick a tick; others play on', () => {
    const seed = 12;
    const msg = `seed ${seed}`;
    const match = new Match(arenaGame, seed, { maxCommandsPerTick: 8 });
    const honest = match.addClient({ profile, drive: runner });
    const flood = match.addClient({ profile, drive: runner, frameMs: 1 });
    match.run(2000);
    const sc = match.server.clients[flood.client.slot]!;
    const before = sc.commandStats.executed;
    const ticks = match.server.stats.ticks;
    match.run(5000);
    const ran = sc.commandStats.executed - before;
    expect(ran, msg).toBeLessThanOrEqual((match.server.stats.ticks - ticks) * 8);
    expect(ran, msg).toBeGreaterThan(1000);
    expect(honest.client.predictor.stats.corrections, msg).toBe(0);
    match.close();
  });

  it('a flood of connect requests from spoofed addresses costs the server a bounded number of handshakes', () => {
    const seed = 16;
    const match = new Match(arenaGame, seed, { maxHandshakesPerSecond: 500 });
    // 500 sources sending 8 a second each (their per-address limit lets 4 through): 8,000 in 2 s.
    const sources = Array.from({ length: 500 }, (_, i) => match.network.createEndpoint(`spoof${i}`));
    const s = createHandshakeStream();
    const p = createHandshakePacket();
    p.type = PACKET_CONNECT_REQUEST;
    p.version = DEFAULT_PROTOCOL_VERSION;
    for (let round = 0; round < 16; round++) {
      for (const source of sources) {
        p.clientNonce = round;
        source.send('server', writeHandshakePacket(s, match.server.config.protocolId, p));
      }
      match.run(125);
    }
    const rejected = match.server.stats.rejected;
    // At most 500 to start with and 500 a second after, and as many again for addresses that ask
    // again (retrying clients): about 3,000 of the 8,000 get a handshake.
    const hashed = 8000 - (rejected['handshake rate'] ?? 0);
    expect(hashed, `seed ${seed}`).toBeLessThanOrEqual(3000 + 10);
    expect(rejected['handshake rate'] ?? 0, `seed ${seed}`).toBeGreaterThan(2000);
    expect(match.server.clientCount).toBe(0);
    // A real client still gets in once the flood stops.
    const c = match.addClient({ profile, drive: runner });
    match.run(2000);
    expect(c.client.state, `seed ${seed}`).toBe('connected');
    match.close();
  });

  it('counts and drops packets from addresses that never connected without keeping state', () => {
    const seed = 9;
    const match = new Match(arenaGame, seed);
    const spoof = match.network.createEndpoint('spoofer');
    const rng = new Random(seed);
    const bytes = new Uint8Array(100);
    for (let i = 0; i < 5000; i++) {
      for (let j = 0; j < bytes.length; j++) bytes[j] = rng.int(0, 255);
      bytes[0] = rng.int(0, 7);
      spoof.send('server', bytes);
    }
    match.run(1000);
    expect(match.server.clientCount).toBe(0);
    const rejected = Object.values(match.server.stats.rejected).reduce((a, b) => a + b, 0);
    expect(rejected, `seed ${seed}`).toBe(5000);
    match.close();
  });
});
