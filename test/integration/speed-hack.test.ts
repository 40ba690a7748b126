// Speed hacks end to end: clients whose clocks run 1.1, 2 and 10 times real time play beside an
// honest one, on a clean link and on a 250 ms, 25 % loss link, for a minute of simulated time.
// At every tick, no client's commands have run more than real time plus the slack since it
// connected, and no stretch of time ran more than itself, the slack and the budget's reserve
// (at most another slack).

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { DatagramEndpoint } from '../../src/net/transport.ts';

const SLACK_MS = 200;
/** The cheats connect honestly, then run their clocks fast from here on. */
const HACK_FROM_MS = 3000;
const SPEEDS = [1, 1.1, 2, 10];

const links = [
  { name: 'a clean link', profile: parseProfile({ name: 'clean', latencyMs: 0 }) },
  {
    name: '250 ms round trip with 25 % loss',
    profile: parseProfile({ name: 'bad', latencyMs: 125, jitterMs: 25, loss: 0.25 }),
  },
];

describe('a speed-hacking client', () => {
  for (const link of links) {
    it(`gains at most the slack over real time at any moment, on ${link.name}`, () => {
      const seed = link.name.length;
      const msg = `seed ${seed}`;
      const tickMs = 1000 / 64;
      // Per client: the server tick it joined at, and the lowest (executed - real) seen so far.
      const joined = new Map<number, number>();
      const lowest = new Map<number, number>();
      const gain = new Map<number, number>();
      const lead = new Map<number, number>();
      const match = new Match(
        arenaGame,
        seed,
        { commandSlackMs: SLACK_MS },
        {
          onConnect: (server, c) => joined.set(c.slot, server.tick),
          onTick: (server, tick) => {
            for (const c of server.clients) {
              if (c === null) continue;
              const start = joined.get(c.slot) ?? tick;
              // The clients' budgets got this tick's real time before their commands ran.
              const now = c.commandStats.executedMs - (tick - start + 1) * tickMs;
              const low = lowest.get(c.slot) ?? 0;
              gain.set(c.slot, Math.max(gain.get(c.slot) ?? 0, now - low));
              lead.set(c.slot, Math.max(lead.get(c.slot) ?? 0, now));
              lowest.set(c.slot, Math.min(low, now));
            }
          },
        },
      );
      const clients = SPEEDS.map((speed) =>
        match.addClient({
          profile: link.profile,
          drive: (_c, _t, input) => {
            input.forwardMove = 127;
          },
          clientTime: (t) => (t < HACK_FROM_MS ? t : HACK_FROM_MS + (t - HACK_FROM_MS) * speed),
          // The network runs on real time whatever the client's clock says.
          wrapEndpoint: (e: DatagramEndpoint) => ({
            address: e.address,
            send: (to, data) => e.send(to, data),
            poll: (nowMs, onPacket) =>
              e.poll(nowMs < HACK_FROM_MS ? nowMs : HACK_FROM_MS + (nowMs - HACK_FROM_MS) / speed, onPacket),
            close: () => e.close(),
          }),
        }),
      );
      match.run(60_000);
      for (let i = 0; i < SPEEDS.length; i++) {
        const slot = clients[i].client.slot;
        const who = `${msg}, ${SPEEDS[i]}x`;
        expect(slot, who).toBeGreaterThanOrEqual(0);
        const stats = match.server.clients[slot]!.commandStats;
        // Every client played the whole minute (the honest one, and the cheats up to real time).
        expect(stats.executedMs, who).toBeGreaterThan(55_000);
        // Since it connected, never more than real time plus the slack; over any stretch, the
        // slack plus what the budget's reserve held when it began (real time a stall left
        // unused, at most another slack, repaid at a tenth of real time).
        expect(lead.get(slot), who).toBeLessThanOrEqual(SLACK_MS);
        expect(gain.get(slot), who).toBeLessThanOrEqual(2 * SLACK_MS);
        if (SPEEDS[i] === 1) expect(stats.overBudget, who).toBe(0);
        else expect(stats.overBudgetMs, who).toBeGreaterThan((SPEEDS[i] - 1) * (60_000 - HACK_FROM_MS) * 0.9);
      }
      match.close();
    });
  }
});
