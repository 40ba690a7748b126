// One client's shots judged in its own lag compensation mode (ServerClient.lagCompensationMode),
// the others' in the server's: two aim bots on simulated time over a 100 ms round trip.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { parseProfile } from '../../src/net/profile.ts';
import type { LagCompensationMode } from '../../src/server/lag-compensation.ts';

const SEED = 23;

describe('ServerClient.lagCompensationMode', () => {
  it("judges that client's shots in its own mode and the others' in the server's", () => {
    const modes = new Map<number, Set<LagCompensationMode>>();
    const match = new Match<ArenaPlayerState, ArenaWorld>(
      arenaGame,
      SEED,
      { lagCompensation: { mode: 'exact' } },
      {
        onShot: (server, client) => {
          const mode = server.lagCompensation?.report.mode;
          if (mode === undefined) return;
          const set = modes.get(client.slot) ?? new Set();
          set.add(mode);
          modes.set(client.slot, set);
        },
      },
    );
    const profile = parseProfile({ name: 'test', description: '50 ms each way', latencyMs: 50 });
    match.addClient({ profile, drive: aimBot(1) });
    match.addClient({ profile, drive: aimBot(2) });
    match.run(1000);
    const first = match.server.clients[0];
    if (first === null) throw new Error(`seed ${SEED}: no client in slot 0`);
    first.lagCompensationMode = 'off';
    modes.clear();
    match.run(3000);
    const msg = `seed ${SEED}: ${JSON.stringify([...modes].map(([slot, set]) => [slot, [...set]]))}`;
    expect([...(modes.get(0) ?? [])], msg).toEqual(['off']);
    expect([...(modes.get(1) ?? [])], msg).toEqual(['exact']);
  });
});
