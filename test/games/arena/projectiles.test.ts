// The launcher's projectiles on a real server: they fly as entities clients see, explode on
// players and the level, damage by distance, and can start advanced by the shooter's latency.

import { describe, expect, it } from 'vitest';
import { arenaRules } from '../../../games/arena/server/rules.ts';
import { PROJECTILE_ENTITY_TYPE } from '../../../games/arena/shared/entities.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../../games/arena/shared/game.ts';
import type { GameClient } from '../../../src/client/client.ts';
import { parseProfile } from '../../../src/net/profile.ts';
import { Match } from '../../../tools/harness/match.ts';
import { aimBot } from '../../../tools/harness/shots.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

function launcherFight(seed: number, latencyAdvance: number) {
  const rules = arenaRules({ respawnMs: 1000, projectiles: { latencyAdvance } });
  const match = new Match(arenaGame, seed, {}, rules);
  const profile = parseProfile({ name: 'rtt200', latencyMs: 100, jitterMs: 10 });
  let seenProjectiles = 0;
  const clients: Client[] = [];
  for (let i = 0; i < 4; i++) {
    const aim = aimBot(seed + i, { aimErrorUnits: 10, switchPerSecond: 0, move: true });
    let client: Client | null = null;
    client = match.addClient({
      profile,
      drive: (c, now, input) => {
        aim(c, now, input);
        // Everyone takes the launcher.
        if (c.isSpawned && c.predictor.current.activeWeapon !== 2) input.impulse = 3;
      },
      hooks: {
        onSnapshot: () => {
          const reader = (client as Client).snapshots;
          for (let k = 0; k < reader.viewCount; k++) {
            if (reader.typeOf(reader.view[k]) === PROJECTILE_ENTITY_TYPE) seenProjectiles++;
          }
        },
      },
    }).client;
    clients.push(client);
  }
  match.run(30_000);
  return { match, rules, seenProjectiles: () => seenProjectiles };
}

describe('launcher projectiles', () => {
  it('fly as entities, explode and damage, and players respawn', () => {
    const seed = 41;
    const msg = `seed ${seed}`;
    const { match, rules, seenProjectiles } = launcherFight(seed, 0);
    const p = rules.projectiles;
    expect(p.fired, msg).toBeGreaterThan(40);
    expect(p.exploded, msg).toBeGreaterThan(p.fired * 0.8);
    expect(p.blastHits, msg).toBeGreaterThan(5);
    expect(p.kills, msg).toBeGreaterThan(0);
    expect(seenProjectiles(), msg).toBeGreaterThan(100);
    // Nothing lingers: live projectiles are at most those of the last few seconds.
    let live = 0;
    for (let e = 0; e < match.server.entities.maxEntities; e++) {
      if (match.server.entities.isAlive(e) && match.server.entities.typeIdAt(e) === PROJECTILE_ENTITY_TYPE)
        live++;
    }
    expect(live, msg).toBeLessThan(20);
    for (const c of match.server.clients) if (c) expect(c.state.health, msg).toBeGreaterThanOrEqual(0);
    match.close();
  });

  it('a projectile advanced by the shooter latency spends less time in flight', () => {
    const seed = 42;
    const plain = launcherFight(seed, 0);
    const advanced = launcherFight(seed, 1);
    const msg = `seed ${seed}`;
    // Same fight inputs; advanced projectiles are seen in fewer snapshots per shot.
    const perShot = (r: typeof plain) => r.seenProjectiles() / r.rules.projectiles.fired;
    expect(perShot(advanced), msg).toBeLessThan(perShot(plain));
    plain.match.close();
    advanced.match.close();
  });
});
