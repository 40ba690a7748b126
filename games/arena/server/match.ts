// The arena as a match module for worker threads (`MatchWorkers` in backstep/node): each worker
// imports this file and makes every match it is given from the options `create` passed.

import type { WorkerMatchSpec } from 'backstep/node';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../shared/game.ts';
import { arenaRules } from './rules.ts';

/** What a match of the arena may be given when created. */
export interface ArenaMatchOptions {
  /** Players the match takes (default 16). */
  maxClients?: number;
}

/** Match `id` of the arena: its game, its rules, at most `maxClients` players. */
export function createMatch(_id: number, options: unknown): WorkerMatchSpec<ArenaPlayerState, ArenaWorld> {
  const o = (options ?? {}) as ArenaMatchOptions;
  const maxClients = o.maxClients ?? 16;
  if (!Number.isInteger(maxClients) || maxClients < 1 || maxClients > 1024) {
    throw new RangeError(
      `arena match: maxClients must be an integer in 1..1024, got ${String(o.maxClients)}`,
    );
  }
  const rules = arenaRules();
  return {
    game: arenaGame,
    config: { maxClients },
    hooks: rules,
    inspect: () => ({ kills: rules.kills, damageDealt: rules.damageDealt }),
  };
}
