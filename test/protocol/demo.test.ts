// The demo file refuses what it cannot play: truncated, corrupt, forged (valid checksums over
// garbage), of another version or another game. Every refusal names its problem; nothing throws.

import { Match } from 'backstep/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { DemoPlayer, decodeKillcam } from '../../src/client/demo-player.ts';
import { crc32 } from '../../src/net/crc32.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import {
  CHUNK_END,
  CHUNK_KILLCAM,
  DEMO_CHUNK_OVERHEAD,
  DEMO_MAX_CHUNK,
  type DemoFailure,
  type DemoProblem,
  encodeDemoChunk,
  encodeDemoPreamble,
  KILLCAM_MAX_VIEW_ENTITIES,
  KILLCAM_MESSAGE_HEAD,
  KILLCAM_MESSAGE_TAG,
  type Killcam,
  KillcamAssembler,
  killcamMessages,
  killcamViewEntities,
  readDemoContainer,
  serializeDemoEnd,
  serializeKillcam,
  type ViewEntity,
} from '../../src/protocol/demo.ts';
import { createUserCommand } from '../../src/protocol/usercmd.ts';
import { combineHooks } from '../../src/server/hooks.ts';
import { KillcamRecorder } from '../../src/server/killcam.ts';
import { DemoRecorder } from '../../src/server/recorder.ts';
import { gameSchemaHash } from '../../src/sim/game.ts';
import { Random } from '../../src/sim/random.ts';

let demo: Uint8Array;

function record(seed: number, ms: number): Uint8Array {
  const recorder = new DemoRecorder(arenaGame, { keyframeInterval: 16 });
  const killcams = new KillcamRecorder(arenaGame);
  const rules = arenaRules({
    respawnMs: 500,
    onKill: (_server, killer, victim) => {
      recorder.kill(killer, victim);
      const cam = killer === null ? null : killcams.capture(killer, victim, 1000);
      if (cam !== null) recorder.killcam(cam);
    },
  });
  const match = new Match(arenaGame, seed, {}, combineHooks(rules, recorder.hooks, killcams.hooks));
  const profile = parseProfile({ name: 'lossy', latencyMs: 30, loss: 0.1 });
  for (let i = 0; i < 3; i++) match.addClient({ profile, drive: aimBot(seed + i, { aimErrorUnits: 5 }) });
  const parts: Uint8Array[] = [];
  match.run(500);
  recorder.start(match.server, (b) => parts.push(b.slice()));
  match.run(ms);
  recorder.stop();
  match.close();
  return concat(parts);
}

/** The bytes of `parts` one after another. */
function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Opens `bytes`; a player that opens must play to the end without throwing. */
function open(bytes: Uint8Array): DemoPlayer | DemoFailure {
  const p = DemoPlayer.open(bytes, arenaGame);
  if (p instanceof DemoPlayer) {
    for (const t of p.ticks) p.seek(t.tick);
    p.seek(p.firstTick);
    p.draw(p.lastTick - 0.5);
  }
  return p;
}

function refused(p: DemoPlayer | DemoFailure, msg: string): DemoFailure {
  if (p instanceof DemoPlayer) throw new Error(`${msg}: opened`);
  expect(p.ok).toBe(false);
  expect(p.message, msg).toContain(p.problem);
  expect(p.message, msg).toMatch(/^demo refused: /);
  return p;
}

/** Offsets of every chunk's head in a demo (after the preamble). */
function chunkOffsets(bytes: Uint8Array): number[] {
  const headerBytes = bytes[10] | (bytes[11] << 8);
  const out: number[] = [];
  let at = 12 + headerBytes + 4;
  while (at < bytes.length) {
    out.push(at);
    const length =
      (bytes[at + 1] | (bytes[at + 2] << 8) | (bytes[at + 3] << 16) | (bytes[at + 4] << 24)) >>> 0;
    at += DEMO_CHUNK_OVERHEAD + length;
  }
  return out;
}

function fixCrc(bytes: Uint8Array, chunkAt: number): void {
  const length = (bytes[chunkAt + 1] | (bytes[chunkAt + 2] << 8) | (bytes[chunkAt + 3] << 16)) >>> 0;
  const c = crc32(bytes, chunkAt, chunkAt + 5 + length);
  const o = chunkAt + 5 + length;
  bytes[o] = c & 0xff;
  bytes[o + 1] = (c >>> 8) & 0xff;
  bytes[o + 2] = (c >>> 16) & 0xff;
  bytes[o + 3] = (c >>> 24) & 0xff;
}

describe('demo file checks', () => {
  beforeAll(() => {
    demo = record(3, 1500);
  });

  it('the recorded file opens and plays', () => {
    const p = open(demo);
    expect(p).toBeInstanceOf(DemoPlayer);
    expect((p as DemoPlayer).ticks.length).toBeGreaterThan(90);
    // Forged chunks below land on killcams too.
    expect((p as DemoPlayer).killcams.length).toBeGreaterThan(0);
  });

  it('refuses a tick whose baseline is before the keyframe a seek would start from', () => {
    const p = DemoPlayer.open(demo, arenaGame) as DemoPlayer;
    // The tick right after a keyframe (not the first) names the keyframe as its baseline (delta 1):
    // made to name the tick before the keyframe, it decodes in order but not after a seek.
    const k = p.ticks.findIndex((t, i) => i > 0 && t.keyframe && p.ticks[i + 1]?.tick === t.tick + 1);
    expect(k).toBeGreaterThan(0);
    const next = p.ticks[k + 1];
    const bytes = demo.slice();
    expect(bytes[next.snapshotOffset]).toBe(1);
    bytes[next.snapshotOffset] = 2;
    const chunkAt = chunkOffsets(bytes)
      .filter((at) => at < next.snapshotOffset)
      .at(-1) as number;
    fixCrc(bytes, chunkAt);
    const f = refused(open(bytes), `the tick after keyframe ${p.ticks[k].tick}`);
    expect(f.problem).toBe('bad snapshot');
    expect(f.message).toContain(`before the keyframe at tick ${p.ticks[k].tick}`);
  });

  it('refuses every truncation, naming it', () => {
    const seed = 11;
    const rng = new Random(seed);
    const lengths = new Set<number>();
    for (let n = 0; n < 64; n++) lengths.add(n);
    for (const at of chunkOffsets(demo)) for (const d of [-1, 0, 1, 5, 9]) lengths.add(at + d);
    for (let i = 0; i < 200; i++) lengths.add(rng.int(0, demo.length - 1));
    for (const n of lengths) {
      if (n < 0 || n >= demo.length) continue;
      const p = refused(open(demo.subarray(0, n)), `seed ${seed}, truncated to ${n}`);
      expect(['truncated', 'not a demo'], `truncated to ${n}`).toContain(p.problem);
      if (n >= 8) expect(p.problem).toBe('truncated');
    }
    const f = refused(open(demo.subarray(0, chunkOffsets(demo).at(-1))), 'without the end chunk');
    expect(f.message).toContain('without its end chunk');
  });

  it('refuses corrupted bytes by checksum, naming the chunk', () => {
    const seed = 12;
    const rng = new Random(seed);
    for (let i = 0; i < 300; i++) {
      const bytes = demo.slice();
      const at = rng.int(0, bytes.length - 1);
      bytes[at] ^= 1 << rng.int(0, 7);
      const p = refused(open(bytes), `seed ${seed}, bit flipped at ${at}`);
      const expected: DemoProblem[] = [
        'not a demo',
        'unsupported version',
        'bad header',
        'truncated',
        'header checksum mismatch',
        'chunk checksum mismatch',
        'chunk too large',
        'unknown chunk',
      ];
      expect(expected, `flipped at ${at}: ${p.message}`).toContain(p.problem);
    }
  });

  it('never throws on forged chunks (garbage under a valid checksum) and plays any it accepts', () => {
    const seed = 13;
    const rng = new Random(seed);
    const offsets = chunkOffsets(demo);
    const problems = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const bytes = demo.slice();
      const at = offsets[rng.int(0, offsets.length - 2)];
      const length = (bytes[at + 1] | (bytes[at + 2] << 8) | (bytes[at + 3] << 16)) >>> 0;
      const flips = rng.int(1, 6);
      for (let k = 0; k < flips; k++) {
        const o = at + 5 + rng.int(0, Math.max(0, length - 1));
        bytes[o] = rng.chance(0.5) ? rng.int(0, 255) : bytes[o] ^ (1 << rng.int(0, 7));
      }
      fixCrc(bytes, at);
      const p = open(bytes);
      if (!(p instanceof DemoPlayer)) {
        expect(p.message).toContain(p.problem);
        problems.add(p.problem);
      }
    }
    expect([...problems].every((p) => ['bad chunk', 'bad snapshot', 'ticks out of order'].includes(p))).toBe(
      true,
    );
    expect(problems.size).toBeGreaterThan(0);
  });

  it('refuses another version, another game, bytes after the end, and non-demo files', () => {
    const v = demo.slice();
    v[8] = 9;
    expect(refused(open(v), 'version').problem).toBe('unsupported version');
    const other = readDemoContainer(demo, 0x12345678);
    expect(other.ok).toBe(false);
    expect((other as DemoFailure).problem).toBe('wrong game');
    expect((other as DemoFailure).message).toContain('schema hash');
    const extra = new Uint8Array(demo.length + 3);
    extra.set(demo);
    expect(refused(open(extra), 'extra').problem).toBe('data after end');
    expect(refused(open(new TextEncoder().encode('{"not": "a demo"}')), 'json').problem).toBe('not a demo');
    expect(refused(open(new Uint8Array(0)), 'empty').problem).toBe('not a demo');
  });

  it('a killcam split into messages comes back whole; malformed messages are refused, never thrown on', () => {
    const seed = 14;
    const rng = new Random(seed);
    const bytes = Uint8Array.from({ length: 5000 }, () => rng.int(0, 255));
    const parts = killcamMessages(bytes, 9, 1024);
    expect(parts.length).toBe(5);
    expect(parts.every((m) => m.length <= 1024 && m[0] === KILLCAM_MESSAGE_TAG)).toBe(true);
    const a = new KillcamAssembler();
    const got = parts.map((m) => a.receive(m));
    expect(got.slice(0, 4)).toEqual([null, null, null, null]);
    expect(got[4]).toEqual(bytes);
    // A part out of order, or of another killcam, starts over; garbage is counted.
    expect(a.receive(parts[1])).toBeNull();
    expect(a.refused).toBe(1);
    for (let i = 0; i < 500; i++) {
      const m = Uint8Array.from({ length: rng.int(0, 40) }, () => rng.int(0, 255));
      if (rng.chance(0.5) && m.length > 0) m[0] = KILLCAM_MESSAGE_TAG;
      a.receive(m);
    }
    expect(parts.map((m) => a.receive(m))[4]).toEqual(bytes);
  });
});

describe('killcams decode in proportion to their bytes', () => {
  const schema = arenaGame.entities;
  const TYPE = 1;
  const n = schema.types[TYPE].fieldCount;
  /** `frames` frames whose views alternate between `count` and `count - 1` entities, every value the previous frame's. */
  function repeating(frames: number, count: number): Killcam {
    const view = (size: number): ViewEntity[] =>
      Array.from({ length: size }, (_, e) => ({
        entity: e,
        typeId: TYPE,
        inA: true,
        inB: true,
        parityA: 0,
        parityB: 0,
        a: new Int32Array(n),
        b: new Int32Array(n),
      }));
    const big = view(count);
    const small = view(count - 1);
    return {
      killerSlot: 0,
      victimSlot: 1,
      killerEntity: 0,
      victimEntity: 1,
      playerType: 0,
      frames: Array.from({ length: frames }, (_, i) => {
        const command = createUserCommand();
        command.sequence = 1000 + i;
        command.msec = 16;
        return {
          command,
          tick: 500 + i,
          player: new Int32Array(schema.types[0].fieldCount),
          view: i % 2 ? small : big,
        };
      }),
    };
  }
  function encode(k: Killcam): Uint8Array | string {
    const s = new BitStream(DEMO_MAX_CHUNK);
    s.beginWrite(DEMO_MAX_CHUNK);
    return serializeKillcam(s, k, schema) ? s.buffer.slice(0, s.bytesProcessed) : s.error;
  }
  /** A demo file of the given killcam chunks and no ticks. */
  function file(chunks: Uint8Array[]): Uint8Array {
    const end = new BitStream(16);
    end.beginWrite();
    serializeDemoEnd(end, { ticks: 0, lastTick: 0 });
    const parts = [
      encodeDemoPreamble({
        schemaHash: gameSchemaHash(arenaGame),
        tickRate: 64,
        keyframeInterval: 256,
        startTick: 0,
        gameName: 'arena',
      }),
      ...chunks.map((c) => encodeDemoChunk(CHUNK_KILLCAM, c)),
      encodeDemoChunk(CHUNK_END, end.buffer.slice(0, end.bytesProcessed)),
    ];
    return concat(parts);
  }

  it("values that repeat share the previous frame's array; past KILLCAM_MAX_VIEW_ENTITIES a killcam is refused; a file's killcams are bounded by its size", () => {
    // 128 and 127 entities a frame: the largest killcam under the bound, and one frame more.
    const frames = Math.floor(KILLCAM_MAX_VIEW_ENTITIES / 127.5);
    const under = encode(repeating(frames, 128));
    expect(typeof under).not.toBe('string');
    expect(encode(repeating(frames + 2, 128))).toBe('killcam view too large');
    const bytes = under as Uint8Array;
    const k = decodeKillcam(bytes, schema);
    if (k === null) throw new Error('the killcam under the bound did not decode');
    expect(killcamViewEntities(k)).toBeLessThanOrEqual(KILLCAM_MAX_VIEW_ENTITIES);
    // Each entity's A is the previous frame's B (the view moved on by a frame): the same array.
    const second = k.frames[1].view[5];
    expect(second.a).toBe(k.frames[0].view[5].b);
    // A file opens with one such killcam; with three (three times its bound, in under 2 MB) it
    // is refused, naming why.
    expect(DemoPlayer.open(file([bytes]), arenaGame)).toBeInstanceOf(DemoPlayer);
    const refused = DemoPlayer.open(file([bytes, bytes, bytes]), arenaGame);
    expect(refused).not.toBeInstanceOf(DemoPlayer);
    expect((refused as { problem: string; message: string }).problem).toBe('bad chunk');
    expect((refused as { message: string }).message).toMatch(/view entities/);
  });

  it('a killcam assembled from messages is refused past KILLCAM_MAX_BYTES in all, whatever its parts claim', () => {
    const a = new KillcamAssembler();
    const part = (index: number, length: number) => {
      const m = new Uint8Array(KILLCAM_MESSAGE_HEAD + length);
      m[0] = KILLCAM_MESSAGE_TAG;
      m[1] = 7;
      m[3] = index & 0xff;
      m[4] = index >> 8;
      m[5] = 0xff;
      m[6] = 0xff; // 65,535 parts claimed
      return m;
    };
    // Small first parts pass any per-part estimate; the total is what counts.
    let refusedAt = -1;
    for (let i = 0; i < 2000 && refusedAt < 0; i++) {
      a.receive(part(i, i < 10 ? 1 : 1100));
      if (a.refused > 0) refusedAt = i;
    }
    // 10 bytes, then 1,100 a part: past 1 MiB at part 963.
    expect(refusedAt).toBe(963);
  });
});
