// The demo file refuses what it cannot play: truncated, corrupt, forged (valid checksums over
// garbage), of another version or another game. Every refusal names its problem; nothing throws.

import { Match } from 'backstep/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { DemoPlayer } from '../../src/client/demo-player.ts';
import { crc32 } from '../../src/net/crc32.ts';
import { parseProfile } from '../../src/net/profile.ts';
import {
  DEMO_CHUNK_OVERHEAD,
  type DemoFailure,
  type DemoProblem,
  KILLCAM_MESSAGE_TAG,
  KillcamAssembler,
  killcamMessages,
  readDemoContainer,
} from '../../src/protocol/demo.ts';
import { combineHooks } from '../../src/server/hooks.ts';
import { KillcamRecorder } from '../../src/server/killcam.ts';
import { DemoRecorder } from '../../src/server/recorder.ts';
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
