// The server frame's head (short ticks, one-bit choke, the player part) and the exponential-Golomb
// primitive it and the snapshot use.
import { describe, expect, it } from 'vitest';
import {
  type ArenaPlayerState,
  arenaPlayerStatesEqual,
  createArenaPlayerState,
  serializeArenaPlayerState,
} from '../../games/arena/shared/player.ts';
import { BitStream, expGolombBits, serializeExpGolomb } from '../../src/protocol/bitstream.ts';
import {
  createServerFrame,
  type ServerFrame,
  type ServerFrameCodec,
  serializeServerFrame,
} from '../../src/protocol/frames.ts';
import { PlayerStateHistory } from '../../src/protocol/player-state.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0xf4a3e);

function codec(): ServerFrameCodec<ArenaPlayerState> {
  return {
    players: new PlayerStateHistory(serializeArenaPlayerState, 64),
    events: null,
    serializeSnapshot: () => true,
  };
}

describe('exponential-Golomb codes', () => {
  it('round-trip every value up to their bound, measure what they write, and reject what is past it', () => {
    const rng = new Random(SEED);
    const w = new BitStream(1 << 12);
    const values: [number, number][] = [];
    for (let i = 0; i < 500; i++) {
      const max = rng.chance(0.5) ? rng.int(0, 100) : rng.int(0, 0x7ffffffe);
      values.push([rng.int(0, max), max]);
    }
    w.beginWrite();
    let bits = 0;
    for (const [v, max] of values) {
      serializeExpGolomb(w, v, max);
      bits += expGolombBits(v);
    }
    expect(w.bitsProcessed, `seed ${SEED}`).toBe(bits);
    const r = new BitStream(0).beginRead(w.bytes.slice());
    for (const [v, max] of values) expect(serializeExpGolomb(r, 0, max), `seed ${SEED}`).toBe(v);
    expect(r.ok).toBe(true);
    expect(() => serializeExpGolomb(new BitStream(8).beginWrite(), 11, 10)).toThrow(/outside/);
    // 11 with max 10: as many zeros as 10 has (3), but over the bound.
    const over = new BitStream(8).beginWrite();
    serializeExpGolomb(over, 11, 14);
    const ro = new BitStream(0).beginRead(over.bytes.slice());
    serializeExpGolomb(ro, 0, 10);
    expect(ro.error).toBe('expGolomb out of range');
    const zeros = new BitStream(0).beginRead(new Uint8Array(4));
    serializeExpGolomb(zeros, 0, 10);
    expect(zeros.error).toBe('malformed');
  });
});

describe('server frame head', () => {
  it('sends the tick in 12 bits near a tick the reader holds, across wraps, and in 32 bits otherwise', () => {
    const rng = new Random(SEED);
    const server = codec();
    const client = codec();
    const state = createArenaPlayerState();
    const out: ServerFrame<ArenaPlayerState> = createServerFrame(state);
    const got: ServerFrame<ArenaPlayerState> = createServerFrame(createArenaPlayerState());
    const w = new BitStream(512);
    const r = new BitStream(0);
    for (let i = 0; i < 2000; i++) {
      const ref = rng.chance(0.1) ? -1 : rng.int(0, 0xffffffff - 4096);
      const tick = ref < 0 ? rng.int(0, 0xffffffff) : ref + rng.int(0, 2047);
      out.serverTick = tick;
      out.tickReference = ref;
      out.choked = rng.chance(0.5) ? 0 : rng.int(1, 255);
      out.ackedCommand = rng.int(0, 0xffffffff);
      out.playerBaseline = -1;
      server.players.record(tick, state, out.ackedCommand);
      w.beginWrite();
      expect(serializeServerFrame(w, out, server), `seed ${SEED}`).toBe(true);
      // The reader's newest tick may be older or newer than the writer's reference.
      got.tickReference = ref < 0 ? -1 : ref + rng.int(0, tick - ref);
      expect(serializeServerFrame(r.beginRead(w.bytes.slice()), got, client), `seed ${SEED} case ${i}`).toBe(
        true,
      );
      expect(got.serverTick, `seed ${SEED} case ${i}`).toBe(tick);
      expect(got.choked, `seed ${SEED}`).toBe(out.choked);
      expect(got.ackedCommand, `seed ${SEED}`).toBe(out.ackedCommand);
      expect(arenaPlayerStatesEqual(got.player, state), `seed ${SEED}`).toBe(true);
      const headBits = 1 + (ref < 0 ? 32 : 12) + (out.choked === 0 ? 1 : 9);
      expect(w.bitsProcessed, `seed ${SEED}`).toBe(headBits + 1 + 32 + 237 + 1);
    }
  });

  it('a short tick with nothing to place it near fails and asks for a full update', () => {
    const server = codec();
    const client = codec();
    const out = createServerFrame(createArenaPlayerState());
    out.serverTick = 5000;
    out.tickReference = 4990;
    server.players.record(5000, out.player, 0);
    const w = new BitStream(512).beginWrite();
    serializeServerFrame(w, out, server);
    const got = createServerFrame(createArenaPlayerState());
    got.tickReference = -1;
    const r = new BitStream(0).beginRead(w.bytes.slice());
    expect(serializeServerFrame(r, got, client)).toBe(false);
    expect(r.error).toBe('no reference tick');
    expect(client.players.needsFullUpdate).toBe(true);
  });
});
