// Per-player server-only data: what game rules keep about a player that is never replicated
// (score, last damage dealt, a chat mute), typed, made on first use and kept as long as the player.

import type { ServerClient } from './server.ts';

/**
 * A typed place for one kind of server-only data per player: `of(client)` returns the client's
 * value, made by `create` on first use. It lives as long as the player (across a reconnection
 * within the grace period, which keeps the same `ServerClient`) and is forgotten with it.
 *
 * ```ts
 * const score = new PlayerData(() => ({ kills: 0, deaths: 0 }));
 * score.of(shooter).kills++;
 * ```
 */
export class PlayerData<T> {
  private readonly values = new WeakMap<ServerClient<unknown>, T>();

  constructor(private readonly create: (client: ServerClient<unknown>) => T) {}

  /** The client's value (made now if it has none). */
  of(client: ServerClient<unknown>): T {
    let v = this.values.get(client);
    if (v === undefined) {
      v = this.create(client);
      this.values.set(client, v);
    }
    return v;
  }

  /** True when the client's value was made. */
  has(client: ServerClient<unknown>): boolean {
    return this.values.has(client);
  }

  /** Forgets the client's value (the next `of` makes a new one). */
  delete(client: ServerClient<unknown>): void {
    this.values.delete(client);
  }
}
