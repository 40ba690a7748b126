// What server-side and client-side game code reaches through the engine, with real clients and a
// real server over the conditioner on simulated time: spawned entities, teleports, slots in
// creation order, per-player data, reliable game messages both ways, reconnection within a grace
// period, and the command number on predicted events.

import type { GameClient } from 'backstep/client';
import { parseProfile } from 'backstep/net';
import {
  type BitStream,
  defineEntityType,
  defineGameSchema,
  type FieldTable,
  quantize,
  type UserCommand,
} from 'backstep/protocol';
import { combineHooks, PlayerData, type ServerClient } from 'backstep/server';
import type { GameDefinition, GameEventSink, Vec3 } from 'backstep/sim';
import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';

interface Dot {
  x: number;
  y: number;
}
interface Ball {
  x: number;
  y: number;
  spin: number;
}

const RANGE = 1024;
const STEP = 1 / 16;
const coordinate = { kind: 'float', min: -RANGE, max: RANGE, precision: STEP } as const;
const DOT = defineEntityType<Dot>('dot', { x: coordinate, y: coordinate } satisfies FieldTable<Dot>);
const BALL = defineEntityType<Ball>('ball', {
  x: coordinate,
  y: coordinate,
  spin: { kind: 'int', min: 0, max: 255 },
} satisfies FieldTable<Ball>);
const BUTTON_WAVE = 1;
const EVENT_WAVE = 1;

/** A dot that walks where its commands say and waves (an event naming the command) on a button. */
const dotGame: GameDefinition<Dot, object> = {
  name: 'dots',
  player: {
    create: () => ({ x: 0, y: 0 }),
    copy: (out, from) => {
      out.x = from.x;
      out.y = from.y;
    },
    move: (state: Dot, cmd: UserCommand, _world: object, events: GameEventSink) => {
      state.x = quantize(state.x + (cmd.forwardMove * cmd.msec) / 10_000, -RANGE, RANGE, STEP);
      state.y = quantize(state.y + (cmd.sideMove * cmd.msec) / 10_000, -RANGE, RANGE, STEP);
      if ((cmd.buttons & BUTTON_WAVE) !== 0) events.emit(EVENT_WAVE, cmd.sequence, 0, 0, 0);
    },
    serialize: (s: BitStream, state: Dot) => {
      state.x = s.float(state.x, -RANGE, RANGE, STEP);
      state.y = s.float(state.y, -RANGE, RANGE, STEP);
      return s.ok;
    },
    equals: (a, b) => a.x === b.x && a.y === b.y,
    copyClientOnly: () => {},
    origin: (state, out: Vec3) => {
      out.x = state.x;
      out.y = state.y;
      out.z = 0;
      return out;
    },
    setOrigin: (state, origin) => {
      state.x = quantize(origin.x, -RANGE, RANGE, STEP);
      state.y = quantize(origin.y, -RANGE, RANGE, STEP);
    },
  },
  createWorld: () => ({}),
  spawn: (state, _world, index) => {
    state.x = index * 10;
    state.y = 0;
  },
  entities: defineGameSchema([DOT, BALL], { maxEntities: 64 }),
  input: { buttons: BUTTON_WAVE, maxImpulse: 0 },
  playerEntity: {
    typeId: 0,
    write: (state, out) => {
      out[DOT.index.x] = state.x;
      out[DOT.index.y] = state.y;
    },
  },
};

const lossy = parseProfile({ name: 'lossy', latencyMs: 40, jitterMs: 10, loss: 0.1 });
type Client = GameClient<Dot, object>;

/** The value of `field` of entity `e` as the client draws it, or undefined when not drawn. */
function drawn(client: Client, e: number, field: number): number | undefined {
  const view = client.view;
  for (let k = 0; k < view.count; k++) if (view.list[k] === e) return view.values[e * view.stride + field];
  return undefined;
}

describe('game code and the engine', () => {
  it('tells predicted events the number of the command that made them, as the server sees it', () => {
    const seed = 11;
    const predicted: { command: number; param: number }[] = [];
    const ran = new Set<number>();
    const match = new Match(dotGame, seed, {}, { onCommand: (_s, _c, cmd) => void ran.add(cmd.sequence) });
    match.addClient({
      profile: lossy,
      hooks: {
        onEvent: (e, isPredicted, command) => {
          if (isPredicted && e.type === EVENT_WAVE) predicted.push({ command, param: e.p0 });
        },
      },
      drive: (_c, nowMs, input) => {
        input.buttons = Math.floor(nowMs / 100) % 3 === 0 ? BUTTON_WAVE : 0;
      },
    });
    match.run(3000);
    match.close();
    expect(predicted.length, `seed ${seed}`).toBeGreaterThan(30);
    for (const p of predicted) expect(p.command, `seed ${seed}`).toBe(p.param);
    const served = predicted.filter((p) => ran.has(p.command));
    expect(served.length, `seed ${seed}`).toBeGreaterThan(predicted.length - 15);
  });

  it('spawns, updates by name and despawns server entities; clients see each change', () => {
    const seed = 12;
    const match = new Match(dotGame, seed);
    const { client } = match.addClient({ profile: lossy });
    match.run(1000);
    const ball = match.server.spawnEntity(BALL, { x: 10, y: -20, spin: 3 });
    match.run(600);
    expect(drawn(client, ball, BALL.index.x), `seed ${seed}`).toBe(10);
    expect(drawn(client, ball, BALL.index.y)).toBe(-20);
    expect(drawn(client, ball, BALL.index.spin)).toBe(3);
    match.server.updateEntity(ball, BALL, { spin: 200 });
    match.run(600);
    expect(drawn(client, ball, BALL.index.spin), `seed ${seed}`).toBe(200);
    expect(drawn(client, ball, BALL.index.x)).toBe(10);
    match.server.despawnEntity(ball);
    match.run(600);
    expect(drawn(client, ball, BALL.index.x), `seed ${seed}`).toBeUndefined();
    const player = match.server.clients[client.slot] as ServerClient<Dot>;
    expect(() => match.server.spawnEntity(DOT)).toThrow(/player entity type/);
    expect(() => match.server.despawnEntity(player.entity)).toThrow(/a player's/);
    expect(() => match.server.updateEntity(player.entity, BALL, { x: 1 })).toThrow(/not a live 'ball'/);
    const other = defineEntityType<Dot>('other', { x: coordinate, y: coordinate });
    expect(() => match.server.spawnEntity(other)).toThrow(/not one of the game's entity types/);
    const again = match.server.spawnEntity(BALL);
    expect(() => match.server.updateEntity(again, BALL, { nope: 1 } as never)).toThrow(/no field 'nope'/);
    match.close();
  });

  it("adds each update's time to the phase it went to: receive, simulate, send", () => {
    const seed = 13;
    // Each tick's hook spins 2 ms of the real clock: that goes to simulate, and the three phases
    // never add up to more than the updates took.
    const spinMs = 2;
    const match = new Match(
      dotGame,
      seed,
      {},
      {
        onTick: () => {
          const until = performance.now() + spinMs;
          while (performance.now() < until) {}
        },
      },
    );
    match.addClient({ profile: lossy });
    match.addClient({ profile: lossy });
    match.run(500);
    const server = match.server;
    const before = { ...server.stats.phaseMs };
    const ticksBefore = server.stats.ticks;
    let updatesMs = 0;
    const update = server.update.bind(server);
    server.update = (nowMs: number) => {
      const t0 = performance.now();
      update(nowMs);
      updatesMs += performance.now() - t0;
    };
    match.run(500);
    const ticks = server.stats.ticks - ticksBefore;
    const after = server.stats.phaseMs;
    const receive = after.receive - before.receive;
    const simulate = after.simulate - before.simulate;
    const send = after.send - before.send;
    expect(ticks, `seed ${seed}`).toBeGreaterThan(20);
    expect(simulate, `seed ${seed}`).toBeGreaterThanOrEqual(spinMs * ticks);
    expect(receive, `seed ${seed}`).toBeGreaterThan(0);
    expect(send, `seed ${seed}`).toBeGreaterThan(0);
    expect(receive + simulate + send, `seed ${seed}`).toBeLessThanOrEqual(updatesMs);
    match.close();
  });

  it('teleports a player from server code: the owner predicts from the new place, others do not slide', () => {
    const seed = 13;
    const match = new Match(dotGame, seed, {}, {}, { slotsInCreationOrder: true });
    const mover = match.addClient({ profile: lossy });
    const watcher = match.addClient({ profile: lossy });
    match.run(1500);
    const server = match.server.clients[mover.client.slot] as ServerClient<Dot>;
    const parity = match.server.entities.parityAt(server.entity);
    match.server.teleport(server, 300, -200, 0);
    expect(server.state).toEqual({ x: 300, y: -200 });
    expect(match.server.entities.parityAt(server.entity)).toBe(parity ^ 1);
    let slid = 0;
    watcher.afterFrame = () => {
      const x = drawn(watcher.client, server.entity, DOT.index.x);
      if (x !== undefined && x > 15 && x < 299) slid++;
    };
    match.run(1500);
    expect(mover.client.predictor.current, `seed ${seed}`).toEqual({ x: 300, y: -200 });
    expect(drawn(watcher.client, server.entity, DOT.index.x), `seed ${seed}`).toBe(300);
    expect(slid, `seed ${seed}: frames drawn between the old place and the new`).toBe(0);
    match.close();
  });

  it('gives slots in creation order when asked, whatever order the handshakes finish in', () => {
    const slow = parseProfile({ name: 'slow', latencyMs: 300 });
    const fast = parseProfile({ name: 'fast', latencyMs: 5 });
    for (const ordered of [false, true]) {
      const match = new Match(dotGame, 14, {}, {}, { slotsInCreationOrder: ordered });
      const first = match.addClient({ profile: slow });
      const second = match.addClient({ profile: fast });
      match.run(3000);
      expect(first.client.state).toBe('connected');
      expect(second.client.state).toBe('connected');
      expect([first.client.slot, second.client.slot], `ordered ${ordered}`).toEqual(
        ordered ? [0, 1] : [1, 0],
      );
      match.close();
    }
  });

  it('keeps per-player server data for as long as the player', () => {
    const waves = new PlayerData(() => ({ count: 0 }));
    const seen: ServerClient<Dot>[] = [];
    const match = new Match(
      dotGame,
      15,
      {},
      {
        onConnect: (_s, c) => void seen.push(c),
        onCommand: (_s, c, cmd) => {
          if ((cmd.buttons & BUTTON_WAVE) !== 0) waves.of(c).count++;
        },
      },
    );
    match.addClient({
      drive: (_c, _t, input) => {
        input.buttons = BUTTON_WAVE;
      },
    });
    match.addClient({});
    match.run(2000);
    expect(seen.length).toBe(2);
    expect(waves.of(seen[0]).count).toBeGreaterThan(50);
    expect(waves.has(seen[1])).toBe(false);
    expect(waves.of(seen[1]).count).toBe(0);
    waves.delete(seen[0]);
    expect(waves.of(seen[0]).count).toBe(0);
    match.close();
  });

  it('carries reliable game messages both ways over 10% loss: each once, in order, checked bytes', () => {
    const seed = 16;
    const atServer: number[] = [];
    const atClient: number[] = [];
    const match = new Match(
      dotGame,
      seed,
      {},
      {
        onMessage: (_s, _c, m) => {
          expect(m.length).toBe(3);
          atServer.push(m[0] | (m[1] << 8));
        },
      },
    );
    const { client } = match.addClient({
      profile: lossy,
      hooks: { onMessage: (m) => void atClient.push(m[0] | (m[1] << 8)) },
    });
    expect(client.sendMessage(new Uint8Array([1, 0, 0]))).toBe(false);
    match.run(1000);
    const server = match.server.clients[client.slot] as ServerClient<Dot>;
    for (let i = 0; i < 200; i++) {
      const m = new Uint8Array([i & 0xff, i >> 8, 7]);
      expect(client.sendMessage(m)).toBe(true);
      expect(match.server.sendMessage(server, m)).toBe(true);
      match.run(20);
    }
    match.run(2000);
    const expected = Array.from({ length: 200 }, (_, i) => i);
    expect(atServer, `seed ${seed}`).toEqual(expected);
    expect(atClient, `seed ${seed}`).toEqual(expected);
    match.close();
  });

  it('leaves game messages in the channel when no hook takes them (for a game that reads it)', () => {
    const match = new Match(dotGame, 18, {}, combineHooks({}, {}));
    const { client } = match.addClient({ profile: lossy });
    match.run(1000);
    const server = match.server.clients[client.slot] as ServerClient<Dot>;
    for (let i = 0; i < 5; i++) {
      expect(client.sendMessage(new Uint8Array([i]))).toBe(true);
      expect(match.server.sendMessage(server, new Uint8Array([10 + i]))).toBe(true);
    }
    match.run(1500);
    const drain = (read: () => Uint8Array | null): number[] => {
      const out: number[] = [];
      for (let m = read(); m !== null; m = read()) out.push(m[0]);
      return out;
    };
    expect(drain(() => server.channel.receiveReliable())).toEqual([0, 1, 2, 3, 4]);
    expect(drain(() => client.channel?.receiveReliable() ?? null)).toEqual([10, 11, 12, 13, 14]);
    match.close();
  });

  it('gives a player that comes back within the grace period its slot and state; not after', () => {
    const seed = 17;
    const log: string[] = [];
    const match = new Match(
      dotGame,
      seed,
      { reconnectGraceMs: 5000, timeoutMs: 1000 },
      {
        onConnect: (_s, c) => void log.push(`connect ${c.slot}`),
        onAway: (_s, c) => void log.push(`away ${c.slot}`),
        onReconnect: (_s, c) => void log.push(`reconnect ${c.slot}`),
        onDisconnect: (_s, c) => void log.push(`disconnect ${c.slot}`),
      },
      { slotsInCreationOrder: true },
    );
    const walker = match.addClient({
      profile: lossy,
      drive: (_c, t, input) => {
        input.forwardMove = t < 2000 ? 400 : 0;
      },
    });
    const stay = match.addClient({ profile: lossy });
    match.run(2500);
    const slot = walker.client.slot;
    const player = match.server.clients[slot] as ServerClient<Dot>;
    const entity = player.entity;
    const x = player.state.x;
    expect(x, `seed ${seed}`).toBeGreaterThan(15);
    const token = walker.client.resumeToken;
    expect(token.hi !== 0 || token.lo !== 0).toBe(true);
    match.drop(walker);
    match.run(1500);
    expect(log).toContain(`away ${slot}`);
    expect(match.server.clients[slot]).toBe(player);
    // A newcomer does not get the held slot; a forged token is a newcomer.
    const newcomer = match.addClient({ profile: lossy, resumeToken: { hi: token.hi ^ 1, lo: token.lo } });
    match.run(1500);
    expect(newcomer.client.state).toBe('connected');
    expect([slot, stay.client.slot]).not.toContain(newcomer.client.slot);
    // The same player, from a new address, with the token.
    const back = match.addClient({ profile: lossy, resumeToken: token });
    match.run(1500);
    expect(back.client.state, `seed ${seed}`).toBe('connected');
    expect(back.client.slot).toBe(slot);
    expect(match.server.clients[slot]).toBe(player);
    expect(player.entity).toBe(entity);
    expect(back.client.predictor.current.x, `seed ${seed}`).toBe(x);
    expect(log).toContain(`reconnect ${slot}`);
    expect(log).not.toContain(`disconnect ${slot}`);
    // Every accept draws a new token: the old one no longer names the player.
    expect(back.client.resumeToken, `seed ${seed}`).not.toEqual(token);
    const replay = match.addClient({ profile: lossy, resumeToken: token });
    match.run(1500);
    expect(replay.client.state).toBe('connected');
    expect(replay.client.slot).not.toBe(slot);
    expect(back.client.state).toBe('connected');
    match.drop(replay);
    // Gone for longer than the grace period: the player is removed and its slot freed.
    match.drop(back);
    match.run(1000 + 5000 + 500);
    expect(log).toContain(`disconnect ${slot}`);
    expect(match.server.clients[slot]).toBe(null);
    expect(match.server.entities.isAlive(entity) && match.server.entities.typeIdAt(entity) === 0).toBe(false);
    const late = match.addClient({ profile: lossy, resumeToken: token });
    match.run(1500);
    expect(late.client.state).toBe('connected');
    expect(late.client.predictor.current.x).toBe(late.client.slot * 10);
    match.close();
  });
});
