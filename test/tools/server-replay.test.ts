// The server tick benchmark's replay (tools/bench/server-replay.ts): the server of a match whose
// clients shoot over a jittery, lossy link, recorded, is replayed into a fresh server with the same
// secret key that sends the same datagrams, byte for byte (the server is a function of its
// datagrams, update times and randomness); a recording with one received byte changed is not.

import { describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { NAMED_PROFILES } from '../../src/net/profile.ts';
import { GameServer, type ServerConfig } from '../../src/server/server.ts';
import { Match } from '../../src/testing/match.ts';
import {
  beginMeasured,
  createServerRecording,
  endMeasured,
  fastestPerUpdate,
  packReceived,
  recordingServerEndpoint,
  recordServerUpdates,
  replayServerInProcess,
  replayServerPasses,
  type ServerFactory,
  type ServerRecording,
} from '../../tools/bench/server-replay.ts';
import { tickScene } from '../../tools/bench/server-tick.ts';

const SEED = 43;
const CONFIG: Partial<ServerConfig> = {
  maxClients: 6,
  cookieSecret: new Uint8Array(32).fill(3),
  secretKey: new Uint8Array(32).fill(9),
};

function recordMatch(): ServerRecording {
  const recording = createServerRecording(SEED);
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, SEED, CONFIG, arenaRules(), {
    wrapServerEndpoint: (e) => recordingServerEndpoint(e, recording),
  });
  recordServerUpdates(match.server, recording);
  for (let i = 0; i < 6; i++) {
    match.addClient({ profile: NAMED_PROFILES.mobile, drive: aimBot(SEED * 31 + i), frameJitterMs: 3 });
  }
  match.run(1500);
  beginMeasured(recording);
  match.run(2000);
  endMeasured(recording);
  match.close();
  return recording;
}

const makeServer: ServerFactory = (endpoint) =>
  new GameServer(arenaGame, endpoint, CONFIG, arenaRules()) as unknown as GameServer<unknown, unknown>;

describe('a recorded server replayed alone', () => {
  const recording = recordMatch();

  it('keeps the received datagrams in shared blocks, and a replay moves them into one buffer', () => {
    // Run first: the replays below pack this recording. Copies, not the transport's buffers, and
    // few ArrayBuffers for hundreds of datagrams (V8 sweeps its list of them in every scavenge).
    const msg = `seed ${SEED}`;
    const all = recording.polls.flat();
    expect(all.length, msg).toBeGreaterThan(500);
    const blocks = new Set(all.map((d) => d.data.buffer));
    expect(blocks.size, msg).toBeLessThanOrEqual(2);
    const before = all.map((d) => Array.from(d.data));
    // A clone as the replay process receives it: an ArrayBuffer per datagram.
    const clone: ServerRecording = {
      ...recording,
      polls: recording.polls.map((batch) => batch.map((d) => ({ from: d.from, data: d.data.slice() }))),
    };
    packReceived(clone);
    const packed = clone.polls.flat();
    expect(new Set(packed.map((d) => d.data.buffer)).size, msg).toBe(1);
    expect(
      packed.map((d) => Array.from(d.data)),
      msg,
    ).toEqual(before);
    expect(
      packed.map((d) => d.from),
      msg,
    ).toEqual(all.map((d) => d.from));
  });

  it('sends what the recorded server sent, byte for byte, on every pass', () => {
    const msg = `seed ${SEED}`;
    // Six players connected (their resume tokens drawn from the recording's stream) and played.
    expect(recording.sent, msg).toBeGreaterThan(500);
    expect(recording.measureTo - recording.measureFrom, msg).toBe(128);
    const result = replayServerPasses(recording, makeServer, 2);
    expect(result.passes.length, msg).toBe(2);
    for (const pass of result.passes) expect(pass.length, msg).toBe(128);
    const fastest = fastestPerUpdate(result);
    for (let i = 0; i < fastest.length; i++) {
      expect(fastest[i], msg).toBe(Math.min(result.passes[0][i], result.passes[1][i]));
    }
    expect(result.collections.length, msg).toBe(2);
  });

  it('hands the server each datagram in an ArrayBuffer of its own when asked, as a UDP socket does', () => {
    const msg = `seed ${SEED}`;
    const seen = (buffers: Set<ArrayBufferLike>, counted: { n: number }): ServerFactory => {
      return (endpoint) =>
        makeServer({
          ...endpoint,
          poll: (nowMs, onPacket) =>
            endpoint.poll(nowMs, (from, data) => {
              buffers.add(data.buffer);
              counted.n++;
              onPacket(from, data);
            }),
        });
    };
    const own = new Set<ArrayBufferLike>();
    const ownCount = { n: 0 };
    // Sends what the recorded server sent (replayServerPasses throws otherwise).
    replayServerPasses(recording, seen(own, ownCount), 1, true);
    expect(ownCount.n, msg).toBeGreaterThan(500);
    expect(own.size, msg).toBe(ownCount.n);
    const views = new Set<ArrayBufferLike>();
    const viewCount = { n: 0 };
    replayServerPasses(recording, seen(views, viewCount), 1);
    expect(viewCount.n, msg).toBe(ownCount.n);
    expect(views.size, msg).toBe(1);
  });

  it("counts the collections that run during each pass's timed updates, and only those", () => {
    const msg = `seed ${SEED}`;
    // A server whose timed updates (or else its warm-up ones) each make 4 MB of garbage: the
    // passes count many collections in the first case and few in the second.
    const garbageIn =
      (timed: boolean): ServerFactory =>
      (endpoint) => {
        const server = makeServer(endpoint);
        let updates = 0;
        const update = server.update.bind(server);
        // Held until the next update, then garbage.
        const held: number[][] = [];
        server.update = (nowMs: number) => {
          update(nowMs);
          held.length = 0;
          if (updates++ >= recording.measureFrom === timed) {
            for (let i = 0; i < 64; i++) held.push(new Array<number>(8192).fill(i));
          }
        };
        return server;
      };
    const timed = replayServerPasses(recording, garbageIn(true), 2);
    const warmUp = replayServerPasses(recording, garbageIn(false), 2);
    for (const c of timed.collections) {
      expect(c.count, msg).toBeGreaterThan(20);
      // Short-lived arrays: the young generation's collections, nearly all of them.
      expect(c.scavenges, msg).toBeGreaterThan(c.count / 2);
      expect(c.scavenges, msg).toBeLessThanOrEqual(c.count);
      expect(c.ms, msg).toBeGreaterThan(0);
    }
    for (const c of warmUp.collections) expect(c.count, msg).toBeLessThan(5);
  });

  it('refuses a recording with one received byte changed: the replay diverges', () => {
    // A datagram the server received in the timed updates, one byte of its sealed payload
    // flipped: the replayed server drops it as forged, and what it acknowledges next differs.
    const polls = recording.polls.map((batch) => batch.map((d) => ({ from: d.from, data: d.data.slice() })));
    const late = polls.findIndex((batch, i) => i > recording.measureFrom && batch.length > 0);
    expect(late, `seed ${SEED}`).toBeGreaterThan(0);
    const d = polls[late][0].data;
    d[d.length - 20] ^= 0x40;
    expect(() => replayServerPasses({ ...recording, polls }, makeServer, 1)).toThrow(
      /the replayed server sent \d+ datagrams \(CRC-32 \d+\), the recorded one \d+/,
    );
  });

  it('refuses a server with another secret key: nothing it sends is what the recorded one sent', () => {
    const other: ServerFactory = (endpoint) =>
      new GameServer(
        arenaGame,
        endpoint,
        { ...CONFIG, secretKey: new Uint8Array(32).fill(10) },
        arenaRules(),
      ) as unknown as GameServer<unknown, unknown>;
    expect(() => replayServerPasses(recording, other, 1)).toThrow(/the replayed server sent/);
  });
});

describe("the bench's replay in a process of its own", () => {
  it('replays a bench scene byte for byte with its code bundled into one module, and with V8 flags', async () => {
    const recording = createServerRecording(SEED);
    const match = tickScene('arena', 4, { seed: SEED, warmupMs: 500 }, recording);
    beginMeasured(recording);
    match.run(500);
    endMeasured(recording);
    match.close();
    // A replay that sent other bytes would reject (server-replay.ts checks every pass).
    const result = await replayServerInProcess({
      recording,
      scene: 'arena',
      bots: 4,
      passes: 1,
      form: 'bundle',
      nodeFlags: ['--max-inlined-bytecode-size=800'],
    });
    expect(result.passes.length, `seed ${SEED}`).toBe(1);
    expect(result.passes[0].length, `seed ${SEED}`).toBe(recording.measureTo - recording.measureFrom);
    // The same recording with one update's time moved is another server's: the bundle refuses it.
    const updates = recording.updates.slice();
    updates[recording.measureFrom] += 40;
    await expect(
      replayServerInProcess({
        recording: { ...recording, updates },
        scene: 'arena',
        bots: 4,
        passes: 1,
        form: 'bundle',
      }),
    ).rejects.toThrow(/the replayed server sent/);
    // The flags reach the child's node: one it does not know stops it before it replays anything.
    await expect(
      replayServerInProcess({ recording, scene: 'arena', bots: 4, passes: 1, nodeFlags: ['--no-such-flag'] }),
    ).rejects.toThrow(/replay process/);
  }, 120_000);
});
