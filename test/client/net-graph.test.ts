// net_graph's figures and the packet history from a real client and server over the memory
// network and its conditioner on simulated time; live method changes on the client.

import { describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { NetGraph } from '../../src/client/net-graph.ts';
import { PACKET_IN, PACKET_OUT } from '../../src/client/packet-history.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { Match } from '../../src/testing/match.ts';

const SEED = 41;

function match(latencyMs: number) {
  const m = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, SEED);
  const profile = parseProfile({ name: 'test', description: 'fixed latency', latencyMs });
  const graph = new NetGraph();
  const entry = m.addClient({
    profile,
    drive: (_c, _now, input) => {
      input.forwardMove = 127;
      input.yaw += 1;
    },
  });
  m.addClient({ profile });
  entry.afterFrame = (now) => graph.update(now, entry.client);
  return { m, graph, client: entry.client };
}

describe('NetGraph and PacketHistory', () => {
  it('show the link: ping near the round trip, byte and packet rates each way, no loss', () => {
    const { m, graph, client } = match(50);
    m.run(5000);
    const f = graph.figures;
    const msg = `seed ${SEED}: ${JSON.stringify(f)}`;
    // Never under the path's 2 x 50 ms: a packet is stamped with the frame that reads it (stamped
    // with the frame before, the ping read a frame short: 83 ms).
    expect(f.pingMs, msg).toBeGreaterThanOrEqual(100);
    expect(f.pingMs, msg).toBeLessThan(140);
    expect(f.fps, msg).toBeGreaterThan(55);
    expect(f.fps, msg).toBeLessThan(65);
    expect(f.inPacketsPerSecond, msg).toBeGreaterThan(28);
    expect(f.inPacketsPerSecond, msg).toBeLessThan(36);
    // One command packet a frame: the default commandRate (64) is above the 60 frames a second.
    expect(f.outPacketsPerSecond, msg).toBeGreaterThan(55);
    expect(f.outPacketsPerSecond, msg).toBeLessThan(65);
    expect(f.inBytesPerSecond, msg).toBeGreaterThan(f.inPacketsPerSecond * 20);
    expect(f.outBytesPerSecond, msg).toBeGreaterThan(f.outPacketsPerSecond * 15);
    expect(f.lossIn + f.lossOut, msg).toBe(0);
    // The default delay adapts on a clean link to about one snapshot interval, never past 100 ms.
    expect(f.interpolationDelayMs, msg).toBeGreaterThan(1000 / 32);
    expect(f.interpolationDelayMs, msg).toBeLessThan(100);
    expect(f.extrapolatedShare + f.heldShare, msg).toBeLessThan(0.05);
    const h = client.packets;
    let sentWithRtt = 0;
    let received = 0;
    for (let n = h.oldest; n < h.total; n++) {
      const i = h.indexOf(n);
      if (h.direction[i] === PACKET_IN) {
        received++;
        expect(h.bytes[i], msg).toBeGreaterThan(13);
      } else if (h.direction[i] === PACKET_OUT && !Number.isNaN(h.rttMs[i])) {
        sentWithRtt++;
        expect(h.rttMs[i], msg).toBeGreaterThanOrEqual(100);
        expect(h.rttMs[i], msg).toBeLessThan(160);
      }
    }
    expect(received, msg).toBeGreaterThan(50);
    expect(sentWithRtt, msg).toBeGreaterThan(100);
  });

  it('follows live changes: interpolation off draws the newest snapshot, a fixed delay, an extrapolation cap', () => {
    const { m, graph, client } = match(20);
    m.run(2000);
    client.interpolate = false;
    m.run(500);
    expect(client.interpolationDelayMs(m.nowMs)).toBe(0);
    expect(client.view.tickB, `seed ${SEED}`).toBe(client.view.newestTick);
    client.interpolate = true;
    client.setInterpolationDelay(250);
    m.run(1500);
    expect(graph.figures.interpolationDelayMs).toBe(250);
    client.setInterpolationDelay('adaptive');
    m.run(1500);
    expect(graph.figures.interpolationDelayMs).toBeGreaterThan(0);
    client.setMaxExtrapolationMs(0);
    expect(client.view.config.maxExtrapolationMs).toBe(0);
    client.setUpdateRate(10);
    client.setInterpolationDelay(0);
    expect(client.interpolationDelayMs(m.nowMs)).toBe(200);
    expect(() => client.setInterpolationDelay(-5)).toThrow(/interpolationDelayMs/);
    expect(() => client.setUpdateRate(0)).toThrow(/updateRate/);
    expect(() => client.setMaxExtrapolationMs(Number.NaN)).toThrow(/maxExtrapolationMs/);
  });
});
