// Packet pairs end to end: a server probing each client's down-link with a keepalive right
// before some frames, the clients reporting the pairs' arrival gaps in their command packets, and
// the rate control keeping within what they show: on a capped slow link the start-up climb no
// longer overshoots the link and builds a queue, and on links with no bottleneck nothing changes.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { WIRE_OVERHEAD_BYTES } from '../../src/net/conditioner.ts';
import { type NetworkProfile, parseProfile } from '../../src/net/profile.ts';

const BOTS = 32;
const SECONDS = 8;

/** The `slowlink` profile's link: 300 ms each way, 64 kbit/s down and 32 up, 3 s queues. */
const SLOW: NetworkProfile = parseProfile({
  name: 'slow',
  latencyMs: 300,
  jitterMs: 10,
  queueMs: 3000,
  up: { bandwidthKbps: 32 },
  down: { bandwidthKbps: 64 },
});

/**
 * BOTS aiming clients on `profile` for SECONDS, with packet pairs on or off; per client, the
 * longest mean down-link queueing delay of any half second, and the pairs' verdict.
 */
function start(seed: number, profile: NetworkProfile, packetPairs: boolean) {
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, seed, { rateControl: { packetPairs } });
  const entries = Array.from({ length: BOTS }, (_, i) =>
    match.addClient({ profile, drive: aimBot(seed * 31 + i), frameJitterMs: 2 }),
  );
  const links = entries.map((e) => match.network.stats(e.endpoint.address)?.down);
  const worst = new Array<number>(BOTS).fill(0);
  const before = links.map((l) => ({ queued: l?.queued ?? 0, waited: l?.queueWaitMs ?? 0 }));
  for (let t = 0; t < SECONDS * 1000; t += 500) {
    match.run(500);
    for (let i = 0; i < BOTS; i++) {
      const l = links[i];
      if (l === null || l === undefined) continue;
      const queued = l.queued - before[i].queued;
      if (queued > 0) worst[i] = Math.max(worst[i], (l.queueWaitMs - before[i].waited) / queued);
      before[i] = { queued: l.queued, waited: l.queueWaitMs };
    }
  }
  const pairs = entries.map((e) => {
    const control = match.server.clients[e.client.slot]?.pacing.control;
    return { shown: control?.pairBytesPerSecond ?? Number.NaN, taken: control?.stats.pairs ?? 0 };
  });
  match.close();
  return { worst, pairs };
}

/** The payload bytes per second a link of `kbps` carries in packets of `bytes`. */
function payloadRate(kbps: number, bytes: number): number {
  return ((kbps * 1000) / 8) * (bytes / (bytes + WIRE_OVERHEAD_BYTES));
}

describe('packet pairs', () => {
  it('keep the start on a capped slow link from queueing: the rate stays within what the pairs show it carries', () => {
    for (const seed of [1, 2]) {
      const on = start(seed, SLOW, true);
      const off = start(seed, SLOW, false);
      const msg = `seed ${seed}: ${JSON.stringify(on)} / without pairs ${JSON.stringify(off)}`;
      for (const p of on.pairs) {
        // Frames of 150 to 400 bytes: the link carries 6,100 to 7,500 bytes of them a second.
        expect(p.shown, msg).toBeGreaterThan(0.85 * payloadRate(64, 150));
        expect(p.shown, msg).toBeLessThan(1.15 * payloadRate(64, 400));
        expect(p.taken, msg).toBeGreaterThanOrEqual(14);
      }
      // Each half second's mean wait in the down-link's queue: about a frame's own time on the link
      // with the pairs; without, the start-up climb overshoots the link and queues for longer.
      expect(Math.max(...on.worst), msg).toBeLessThan(150);
      expect(Math.max(...off.worst), msg).toBeGreaterThan(300);
      for (const p of off.pairs) expect(p.taken, msg).toBe(0);
    }
  });

  it('show no bottleneck where there is none: jitter alone (reordering pairs) and a fast link', () => {
    const jittery = parseProfile({ name: 'jittery', latencyMs: 150, jitterMs: 60, loss: 0.05 });
    const fast = parseProfile({ name: 'fast', latencyMs: 20, jitterMs: 2, down: { bandwidthKbps: 20_000 } });
    for (const [seed, profile] of [
      [1, jittery],
      [2, jittery],
      [1, fast],
    ] as const) {
      const { pairs } = start(seed, profile, true);
      const msg = `seed ${seed}, ${profile.name}: ${JSON.stringify(pairs)}`;
      for (const p of pairs) {
        expect(p.shown, msg).toBe(Number.POSITIVE_INFINITY);
        expect(p.taken, msg).toBeGreaterThanOrEqual(8);
      }
    }
  });

  it('takes a report only for a pair the server sent, once, and not once its low bits may name another packet', () => {
    const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, 5);
    const entry = match.addClient({ profile: SLOW, drive: aimBot(5), frameJitterMs: 2 });
    // Past the first frames (all pairs), to where one frame a second is one.
    match.run(3000);
    const sc = match.server.clients[entry.client.slot];
    if (sc === null || sc === undefined) throw new Error('seed 5: not connected');
    const control = sc.pacing.control;
    if (control === null) throw new Error('rate control off');
    const channel = sc.channel;
    const newest = () => (channel.sequence + 0xffff) & 0xffff;
    const find = (state: number) => {
      for (let back = 0; back < 40; back++) {
        const seq = (newest() - back + 0x10000) & 0xffff;
        if (sc.pairState(seq) === state) return seq;
      }
      return -1;
    };
    const taken = () => control.stats.pairs;
    // A frame sent alone, and a keepalive: reports of them move nothing.
    const alone = find(0);
    expect(alone).toBeGreaterThanOrEqual(0);
    let before = taken();
    sc.takePair(match.nowMs, 3000, alone & 0xff, 140);
    sc.takePair(match.nowMs, 3000, (alone - 1) & 0xff, 140);
    expect(taken()).toBe(before);
    // A pair on its way back: too late a report is ignored, a timely one taken once.
    let pair = find(1);
    for (let t = 0; pair < 0 && t < 3000; t += 20) {
      match.run(20);
      pair = find(1);
    }
    expect(pair).toBeGreaterThanOrEqual(0);
    before = taken();
    sc.takePair(match.nowMs + 5000, 3000, pair & 0xff, 140);
    expect(taken()).toBe(before);
    sc.takePair(match.nowMs, 3000, pair & 0xff, 140);
    sc.takePair(match.nowMs, 3000, pair & 0xff, 140);
    expect(taken()).toBe(before + 1);
    expect(sc.pairState(pair)).toBe(2);
    match.close();
  });
});
