// The top-down game's rules on the server: a score per player kept as server-only data, each hit
// confirmed to the shooter by a reliable message, and a player gone for good freeing its place.

import { type GameServer, PlayerData, type ServerClient, type ServerHooks } from 'backstep/server';
import { EVENT_HIT } from '../shared/constants.ts';
import { HIT_EVENT } from '../shared/game.ts';
import type { TopdownPlayer, TopdownWorld } from '../shared/player.ts';

/** A reliable message to a shooter: byte 0 is MESSAGE_HIT, byte 1 the entity hit. */
export const MESSAGE_HIT = 1;

export interface Score {
  hits: number;
  /** Hits confirmed to the shooter (their reliable message queued). */
  confirmed: number;
}

/** The rules: score per player, hit confirmations. */
export class TopdownRules {
  readonly score = new PlayerData<Score>(() => ({ hits: 0, confirmed: 0 }));
  private readonly message = new Uint8Array(2);

  hooks(): ServerHooks<TopdownPlayer, TopdownWorld> {
    return {
      onShot: (server, shooter, _cmd, events) => {
        for (let i = 0; i < events.count; i++) {
          if (events.type[i] !== EVENT_HIT) continue;
          this.hit(server, shooter, events.param(i, HIT_EVENT.index.target));
        }
      },
    };
  }

  private hit(
    server: GameServer<TopdownPlayer, TopdownWorld>,
    shooter: ServerClient<TopdownPlayer>,
    target: number,
  ): void {
    const s = this.score.of(shooter);
    s.hits++;
    this.message[0] = MESSAGE_HIT;
    this.message[1] = target;
    if (server.sendMessage(shooter, this.message)) s.confirmed++;
  }
}
