// The arena's server-side rules: damage from the hits the shared weapon code reports in the run
// that counts (lag compensated), the launcher's projectiles, deaths, and respawning after a delay.

import type { EventCapture, GameServer, ServerClient, ServerHooks } from 'backstep/server';
import { EVENT_HIT, EVENT_WEAPON_FIRE, WEAPON_LAUNCHER } from '../shared/constants.ts';
import { HIT_EVENT, WEAPON_FIRE_EVENT } from '../shared/events.ts';
import type { ArenaPlayerState, ArenaWorld } from '../shared/game.ts';
import { damageArenaPlayer } from '../shared/player.ts';
import { hitDamage } from '../shared/weapons.ts';
import { type ProjectileConfig, Projectiles } from './projectiles.ts';

export interface ArenaRulesConfig {
  /** A dead player comes back this long after dying. */
  respawnMs: number;
  projectiles: Partial<ProjectileConfig>;
  /**
   * A player died: `killer` shot them or fired the projectile whose blast killed them (the victim
   * itself for its own blast; null when the shooter of a projectile has left), `weapon` is the
   * killer's (WEAPON_LAUNCHER for a blast). For a demo recorder's kills and killcams, and the
   * kill feed.
   */
  onKill?: (server: Server, killer: Client | null, victim: Client, weapon: number) => void;
}

export interface ArenaRules extends ServerHooks<ArenaPlayerState, ArenaWorld> {
  /** Kills by hit-scan weapons (projectile kills are counted in `projectiles`). */
  readonly kills: number;
  readonly damageDealt: number;
  readonly projectiles: Projectiles;
}

type Server = GameServer<ArenaPlayerState, ArenaWorld>;
type Client = ServerClient<ArenaPlayerState>;

/** The arena's rules as server hooks (combine them with others via `combineHooks`). */
export function arenaRules(config: Partial<ArenaRulesConfig> = {}): ArenaRules {
  const respawnMs = config.respawnMs ?? 2000;
  /**
   * When the player in each slot died (-1: alive). Grown with -1 to the slots seen, never with
   * holes: a read of an array with holes gives V8 a number that may be undefined, which it boxes
   * (the tick reads every slot while anyone is dead).
   */
  const diedAtMs: number[] = [];
  let dead = 0;
  const died = (server: Server, victim: Client) => {
    while (diedAtMs.length <= victim.slot) diedAtMs.push(-1);
    if (!(diedAtMs[victim.slot] >= 0)) dead++;
    diedAtMs[victim.slot] = server.timeMs;
  };
  const projectiles = new Projectiles(config.projectiles ?? {}, (server, victim, killer) => {
    died(server, victim);
    config.onKill?.(server, killer, victim, WEAPON_LAUNCHER);
  });
  const byEntity = (server: Server, entity: number): Client | null => {
    // An indexed loop: a for-of here made an iterator per hit (about a twelfth of what a
    // 512-player server tick allocated).
    const clients = server.clients;
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      if (c !== null && c.entity === entity) return c;
    }
    return null;
  };
  const rules = {
    kills: 0,
    damageDealt: 0,
    projectiles,
    onShot(server: Server, shooter: Client, _cmd: unknown, events: EventCapture) {
      let weapon = 0;
      for (let i = 0; i < events.count; i++) {
        const type = events.type[i];
        if (type === EVENT_WEAPON_FIRE) weapon = events.param(i, WEAPON_FIRE_EVENT.index.weapon);
        if (type !== EVENT_HIT) continue;
        const target = byEntity(server, events.param(i, HIT_EVENT.index.target));
        if (target === null || target.state.health <= 0) continue;
        const amount = hitDamage(weapon, events.param(i, HIT_EVENT.index.box));
        rules.damageDealt += Math.min(amount, target.state.health);
        if (damageArenaPlayer(target.state, amount)) {
          rules.kills++;
          died(server, target);
          config.onKill?.(server, shooter, target, weapon);
        }
      }
    },
    onTick(server: Server) {
      projectiles.tick(server);
      if (dead === 0) return;
      const nowMs = server.timeMs;
      for (let slot = 0; slot < diedAtMs.length; slot++) {
        const at = diedAtMs[slot];
        const c = server.clients[slot];
        if (!(at >= 0) || c === null || nowMs - at < respawnMs) continue;
        diedAtMs[slot] = -1;
        dead--;
        // A fresh loadout and health at a spawn point; never blended from where it died.
        server.respawn(c);
      }
    },
    onDisconnect(_server: Server, client: Client) {
      if (client.slot >= diedAtMs.length) return;
      if (diedAtMs[client.slot] >= 0) dead--;
      diedAtMs[client.slot] = -1;
    },
  };
  return rules;
}
