// A reduced storm in the suite: hostile datagrams, a third of them forged from connected
// clients' addresses, cost the bots nothing and every datagram is counted.

import { describe, expect, it } from 'vitest';
import { runStorm, verdict } from '../../tools/storm/storm.ts';

describe('the storm tool', () => {
  it('a reduced storm costs the bots nothing against the baseline and leaves nothing uncounted', async () => {
    const seed = 5;
    const r = await runStorm({
      transport: 'memory',
      seed,
      datagrams: 20_000,
      forgedShare: 0.3,
      bots: 4,
      seconds: 10,
      latencyMs: 30,
      loss: 0.02,
    });
    const msg = `seed ${seed}: ${JSON.stringify({ baseline: r.baseline, storm: r.storm, accounted: r.accounted })}`;
    expect(r.crashes, msg).toBe(0);
    expect(r.uncounted, msg).toBe(0);
    expect(r.sent['forged from a client'], msg).toBeGreaterThanOrEqual(6000);
    expect(r.accounted['connected: forged'] ?? 0, msg).toBeGreaterThan(4000);
    expect(r.storm.disconnects, msg).toBe(0);
    expect(r.storm.agreement.compared, msg).toBeGreaterThan(20);
    expect(verdict(r), msg).toEqual([]);
  });
});
