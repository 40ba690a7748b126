// The arena as the engine sees it: its player definition, the world it plays in, where players spawn, and what others see of a player.

import type { GameDefinition } from 'backstep/sim';
import {
  BUTTON_ATTACK,
  BUTTON_ATTACK2,
  BUTTON_CROUCH,
  BUTTON_JUMP,
  BUTTON_RELOAD,
  BUTTON_USE,
  IMPULSE_WEAPON_1,
  WEAPON_COUNT,
} from './constants.ts';
import { ARENA_SCHEMA, arenaHitscan, PLAYER_ENTITY_TYPE, writePlayerEntity } from './entities.ts';
import { ARENA_EVENTS } from './events.ts';
import { ARENA_LEVEL } from './level.ts';
import {
  type ArenaPlayerState,
  type ArenaWorld,
  arenaPlayer,
  createLevelWorld,
  spawnArenaPlayer,
} from './player.ts';

export type { HitTarget } from './hitboxes.ts';
export type { ArenaPlayerState, ArenaWorld } from './player.ts';

/** The reference game: the arena player in ARENA_LEVEL; player slot i spawns at spawn point i modulo their count. */
export const arenaGame: GameDefinition<ArenaPlayerState, ArenaWorld> = {
  name: 'arena',
  player: arenaPlayer,
  createWorld(): ArenaWorld {
    return createLevelWorld(ARENA_LEVEL);
  },
  spawn(state: ArenaPlayerState, world: ArenaWorld, index: number): void {
    const count = world.level.spawns.length;
    const slot = Number.isFinite(index) ? Math.floor(index) : 0;
    spawnArenaPlayer(state, world, ((slot % count) + count) % count);
  },
  entities: ARENA_SCHEMA,
  input: {
    buttons: BUTTON_JUMP | BUTTON_CROUCH | BUTTON_ATTACK | BUTTON_ATTACK2 | BUTTON_RELOAD | BUTTON_USE,
    maxImpulse: IMPULSE_WEAPON_1 + WEAPON_COUNT - 1,
    heldButtons: BUTTON_JUMP | BUTTON_CROUCH,
  },
  events: ARENA_EVENTS,
  hitscan: arenaHitscan,
  playerEntity: { typeId: PLAYER_ENTITY_TYPE, write: writePlayerEntity },
};
