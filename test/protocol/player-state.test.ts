// The owner's player state delta-encoded against an acknowledged frame's: exact through loss,
// and every byte hostile.
import { describe, expect, it } from 'vitest';
import {
  type ArenaPlayerState,
  arenaPlayerStatesEqual,
  createArenaPlayerState,
  serializeArenaPlayerState,
} from '../../games/arena/shared/player.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { type PlayerFrame, PlayerStateHistory } from '../../src/protocol/player-state.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0x91a7e);

/** Moves a state on the wire's grid: position, velocity and view change, now and then the rest. */
function evolve(s: ArenaPlayerState, rng: Random): void {
  s.originX = Math.max(-4096, Math.min(4096, s.originX + rng.int(-300, 300) / 32));
  s.originY = Math.max(-4096, Math.min(4096, s.originY + rng.int(-300, 300) / 32));
  if (rng.chance(0.2)) s.originZ = rng.int(0, 4000) / 32;
  s.velocityX = rng.int(-2400, 2400) / 8;
  s.velocityY = rng.int(-2400, 2400) / 8;
  s.yaw = (rng.int(0, 65535) * 360) / 65536;
  if (rng.chance(0.1)) s.onGround = !s.onGround;
  if (rng.chance(0.1)) s.health = rng.int(0, 255);
  if (rng.chance(0.1)) s.rifleClip = rng.int(0, 63);
}

function frame(player: ArenaPlayerState): PlayerFrame<ArenaPlayerState> {
  return { serverTick: 0, ackedCommand: 0, playerBaseline: -1, player };
}

/**
 * The server records `state` as frame `tick`'s and writes the frame's player part against
 * `baseline` into `w`; returns the frame written (its playerBaseline as the writer used it).
 */
function writePart<P>(
  server: PlayerStateHistory<P>,
  state: P,
  tick: number,
  baseline: number,
  w: BitStream,
): PlayerFrame<P> {
  const out: PlayerFrame<P> = {
    serverTick: tick,
    ackedCommand: tick,
    playerBaseline: baseline,
    player: state,
  };
  server.record(tick, state, tick);
  w.beginWrite();
  expect(server.serialize(w, out)).toBe(true);
  return out;
}

/** The client reads the player part in `w` as frame `tick`'s into `got`; expects it read. */
function readPart<P>(client: PlayerStateHistory<P>, w: BitStream, tick: number, got: PlayerFrame<P>): void {
  got.serverTick = tick;
  expect(
    client.serialize(new BitStream(0).beginRead(w.bytes.slice()), got),
    `seed ${SEED} tick ${tick}`,
  ).toBe(true);
}

describe('player state delta', () => {
  it('every state read equals the one written, through loss and late acknowledgements', () => {
    const rng = new Random(SEED);
    const server = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const client = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const state = createArenaPlayerState();
    const out = frame(state);
    const got = frame(createArenaPlayerState());
    const w = new BitStream(512);
    const r = new BitStream(0);
    let baseline = -1;
    const arrived: number[] = [];
    let withBaseline = 0;
    let deltaBits = 0;
    let fullBits = 0;
    let command = 1;
    for (let tick = 2; tick < 4000; tick += 2) {
      evolve(state, rng);
      command += rng.int(0, 3);
      out.serverTick = tick;
      out.ackedCommand = command;
      out.playerBaseline = baseline;
      server.record(tick, state, command);
      w.beginWrite();
      expect(server.serialize(w, out), `seed ${SEED}`).toBe(true);
      if (out.playerBaseline >= 0) {
        withBaseline++;
        deltaBits += w.bitsProcessed;
      } else {
        fullBits += w.bitsProcessed;
      }
      if (rng.chance(0.2)) continue;
      got.serverTick = tick;
      expect(client.serialize(r.beginRead(w.bytes.slice()), got), `seed ${SEED} tick ${tick}`).toBe(true);
      expect(arenaPlayerStatesEqual(got.player, state), `seed ${SEED} tick ${tick}`).toBe(true);
      expect(got.ackedCommand, `seed ${SEED}`).toBe(command);
      expect(got.playerBaseline, `seed ${SEED}`).toBe(out.playerBaseline);
      arrived.push(tick);
      // Acknowledgements reach the server a few frames later.
      if (arrived.length > 3) baseline = arrived[arrived.length - 4];
    }
    expect(withBaseline, `seed ${SEED}`).toBeGreaterThan(1500);
    // A full state is 237 bits after 40 of header; the delta of this busy state is well under.
    expect(deltaBits / withBaseline, `seed ${SEED}`).toBeLessThan(0.75 * (fullBits / (1999 - withBaseline)));
  });

  it('steady motion costs a zero residual a field: each field is predicted on a line from the two frames before', () => {
    const server = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const client = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const state = createArenaPlayerState();
    state.velocityX = 100;
    state.velocityY = -40;
    const out = frame(state);
    const got = frame(createArenaPlayerState());
    const w = new BitStream(512);
    const r = new BitStream(0);
    let baseline = -1;
    const bits: number[] = [];
    for (let tick = 2; tick < 400; tick += 2) {
      // Two ticks a frame at 1/64 s: 100 and -40 units/s move 3.125 and -1.25 units a frame.
      state.originX += 3.125;
      state.originY -= 1.25;
      state.yaw = (state.yaw + 5.625) % 360;
      out.serverTick = tick;
      out.ackedCommand = tick;
      out.playerBaseline = baseline;
      server.record(tick, state, tick);
      w.beginWrite();
      expect(server.serialize(w, out)).toBe(true);
      got.serverTick = tick;
      expect(client.serialize(r.beginRead(w.bytes.slice()), got)).toBe(true);
      expect(arenaPlayerStatesEqual(got.player, state), `tick ${tick}`).toBe(true);
      if (out.playerBaseline >= 0) bits.push(w.bitsProcessed);
      baseline = tick - (tick % 6 === 0 ? 4 : 2);
    }
    // 25 still fields of 1 bit; the 3 moving ones a zero in a code of their step's order (the
    // step's bit length less one, 7 bits at most here); the baseline, command step and mode bit.
    // The full state is 237 bits.
    const late = bits.slice(10);
    expect(Math.max(...late)).toBeLessThanOrEqual(25 + 3 * 7 + 16);
  });

  it('a late frame whose reference the reader let go fails instead of predicting otherwise', () => {
    const server = new PlayerStateHistory(serializeArenaPlayerState, 16);
    const client = new PlayerStateHistory(serializeArenaPlayerState, 16);
    const state = createArenaPlayerState();
    const w = new BitStream(512);
    const sent = new Map<number, Uint8Array>();
    const send = (tick: number, baseline: number): void => {
      state.originX += 2.5;
      state.yaw = (state.yaw + 7) % 360;
      server.record(tick, state, tick);
      const f = frame(state);
      f.serverTick = tick;
      f.ackedCommand = tick;
      f.playerBaseline = baseline;
      w.beginWrite();
      expect(server.serialize(w, f)).toBe(true);
      expect(f.playerBaseline).toBe(baseline);
      sent.set(tick, w.bytes.slice());
    };
    const read = (tick: number): BitStream => {
      const got = frame(createArenaPlayerState());
      got.serverTick = tick;
      const r = new BitStream(0).beginRead(sent.get(tick)!);
      client.serialize(r, got);
      return r;
    };
    send(16, -1);
    send(18, 16);
    send(20, 18); // predicted from 18 and its own baseline 16
    send(32, -1); // takes 16's slot in a history of 16 ticks
    expect(read(16).ok).toBe(true);
    expect(read(18).ok).toBe(true);
    expect(read(32).ok).toBe(true);
    const late = read(20);
    expect(late.ok).toBe(false);
    expect(late.error).toBe('player baseline unknown');
  });

  it('a state whose fields change width goes as changed bytes, exact', () => {
    interface Odd {
      count: number;
      flag: boolean;
    }
    const serialize = (s: BitStream, v: Odd): boolean => {
      v.count = s.varuint(v.count);
      v.flag = s.bool(v.flag);
      return s.ok;
    };
    const server = new PlayerStateHistory(serialize, 16);
    const client = new PlayerStateHistory(serialize, 16);
    const rng = new Random(SEED ^ 7);
    const state: Odd = { count: 1, flag: false };
    const got: PlayerFrame<Odd> = {
      serverTick: 0,
      ackedCommand: 0,
      playerBaseline: -1,
      player: { count: 0, flag: false },
    };
    const w = new BitStream(64);
    let baseline = -1;
    for (let tick = 2; tick < 2000; tick += 2) {
      state.count = rng.chance(0.5) ? rng.int(0, 127) : rng.int(128, 16383);
      state.flag = rng.chance(0.5);
      writePart(server, state, tick, baseline, w);
      readPart(client, w, tick, got);
      expect(got.player, `seed ${SEED} tick ${tick}`).toEqual(state);
      baseline = tick;
    }
  });

  it('a state of more fields than a slot notes goes as changed bytes, exact through loss', () => {
    const FIELDS = 130; // PLAYER_STATE_MAX_FIELDS is 128
    const serialize = (s: BitStream, v: Int32Array): boolean => {
      for (let i = 0; i < FIELDS; i++) v[i] = s.int(v[i], -64, 63);
      return s.ok;
    };
    const server = new PlayerStateHistory(serialize, 16);
    const client = new PlayerStateHistory(serialize, 16);
    const rng = new Random(SEED ^ 11);
    const state = new Int32Array(FIELDS);
    const got: PlayerFrame<Int32Array> = {
      serverTick: 0,
      ackedCommand: 0,
      playerBaseline: -1,
      player: new Int32Array(FIELDS),
    };
    const w = new BitStream(256);
    let acked = -1;
    for (let tick = 2; tick < 600; tick += 2) {
      for (let n = rng.int(0, 4); n > 0; n--) state[rng.int(0, FIELDS - 1)] = rng.int(-64, 63);
      const out = writePart(server, state, tick, acked, w);
      // Against the frame before, at most 4 fields (8 bytes, each at most 21 bits) changed: far
      // less than the whole state (130 x 7 bits).
      if (out.playerBaseline === tick - 2) {
        expect(w.bitsProcessed, `seed ${SEED} tick ${tick}`).toBeLessThan(250);
      }
      if (rng.chance(0.3)) continue; // lost
      readPart(client, w, tick, got);
      expect([...got.player], `seed ${SEED} tick ${tick}`).toEqual([...state]);
      acked = tick;
    }
  });

  it('a baseline the reader does not hold fails and asks for a full update; the next full state clears it', () => {
    const server = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const client = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const state = createArenaPlayerState();
    const f = frame(state);
    const w = new BitStream(512);
    server.record(10, state, 5);
    state.originX = 12.5;
    server.record(12, state, 6);
    f.serverTick = 12;
    f.ackedCommand = 6;
    f.playerBaseline = 10;
    w.beginWrite();
    server.serialize(w, f);
    expect(f.playerBaseline).toBe(10);
    const got = frame(createArenaPlayerState());
    got.serverTick = 12;
    const r = new BitStream(0).beginRead(w.bytes.slice());
    expect(client.serialize(r, got)).toBe(false);
    expect(r.error).toBe('player baseline unknown');
    expect(client.needsFullUpdate).toBe(true);
    f.playerBaseline = -1;
    w.beginWrite();
    server.serialize(w, f);
    expect(client.serialize(new BitStream(0).beginRead(w.bytes.slice()), got)).toBe(true);
    expect(client.needsFullUpdate).toBe(false);
    expect(got.player.originX).toBe(12.5);
    // A baseline too old for the history, or for this frame, goes without one.
    f.serverTick = 200;
    f.playerBaseline = 12;
    server.record(200, state, 7);
    w.beginWrite();
    server.serialize(w, f);
    expect(f.playerBaseline).toBe(-1);
  });

  it('30,000 mutated and random player parts never throw, and each reads or fails with a reason', () => {
    const rng = new Random(SEED);
    const server = new PlayerStateHistory(serializeArenaPlayerState, 64);
    const state = createArenaPlayerState();
    const f = frame(state);
    const sources: Uint8Array[] = [];
    const w = new BitStream(512);
    const scratch = createArenaPlayerState();
    for (let tick = 1; tick <= 40; tick++) {
      evolve(state, rng);
      server.record(tick, state, tick * 2);
      f.serverTick = tick;
      f.ackedCommand = tick * 2;
      f.playerBaseline = tick > 1 ? 1 : -1;
      w.beginWrite();
      server.serialize(w, f);
      sources[tick] = w.bytes.slice();
    }
    const r = new BitStream(0);
    const buf = new Uint8Array(600);
    const reasons = new Map<string, number>();
    let read = 0;
    for (let i = 0; i < 30_000; i++) {
      const client = new PlayerStateHistory(serializeArenaPlayerState, 64);
      // The client holds frame 1 (every delta's baseline), read from its full form.
      const first = frame(scratch);
      first.serverTick = 1;
      client.serialize(r.beginRead(sources[1]), first);
      const tick = rng.int(2, 40);
      let length: number;
      if (rng.chance(0.2)) {
        length = rng.int(0, 40);
        for (let k = 0; k < length; k++) buf[k] = rng.int(0, 255);
      } else {
        const bytes = sources[tick];
        length = bytes.length;
        buf.set(bytes);
        const flips = rng.int(1, 3);
        for (let k = 0; k < flips; k++) buf[rng.int(0, length - 1)] ^= 1 << rng.int(0, 7);
        if (rng.chance(0.2)) length = rng.int(0, length);
      }
      const got = frame(scratch);
      got.serverTick = tick;
      let ok = false;
      try {
        ok = client.serialize(r.beginRead(buf, length), got);
      } catch (error) {
        expect.fail(`seed ${SEED} case ${i} threw ${String(error)}`);
      }
      if (ok) read++;
      else reasons.set(r.error, (reasons.get(r.error) ?? 0) + 1);
    }
    expect(read, `seed ${SEED}`).toBeGreaterThan(3000);
    for (const reason of ['player baseline too old', 'player baseline unknown', 'read past end']) {
      expect(
        reasons.get(reason) ?? 0,
        `seed ${SEED} ${reason} ${JSON.stringify([...reasons])}`,
      ).toBeGreaterThan(0);
    }
  });
});
