// A match module for the worker tests: the arena with its rules and the server half of the shot
// ledger's input (every ray's verdict in exact mode, and the shooter's state after each command
// that shot), reported by `inspect()`; options make a match throw or stall at a given tick.

import type { WorkerMatchSpec } from 'backstep/node';
import { combineHooks, type ServerHooks } from 'backstep/server';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { readArenaRay } from '../../games/arena/testing/shots.ts';
import { createWireEvent } from '../../src/protocol/frames.ts';

export interface ShootingMatchOptions {
  /** The match throws from its tick hook at this tick. */
  throwAtTick?: number;
  /** The match's tick hook never returns from this tick on. */
  stallAtTick?: number;
}

/** What `inspect()` reports: verdicts and shooter states by "slot:command[:ray]", in the order the server judged them. */
export interface ShootingReport {
  verdicts: [string, number][];
  states: [string, ArenaPlayerState][];
  ticks: number;
  kills: number;
}

export function createMatch(_id: number, options: unknown): WorkerMatchSpec<ArenaPlayerState, ArenaWorld> {
  const o = (options ?? {}) as ShootingMatchOptions;
  const rules = arenaRules({ respawnMs: 1500 });
  const shot = new Set<string>();
  const verdicts: [string, number][] = [];
  const event = createWireEvent();
  const ray = { ray: 0, verdict: -1 };
  const states = new Map<string, ArenaPlayerState>();
  let ticks = 0;
  const record: ServerHooks<ArenaPlayerState, ArenaWorld> = {
    onShot: (_server, shooter, cmd, events) => {
      shot.add(`${shooter.slot}:${cmd.sequence}`);
      for (let i = 0; i < events.count; i++) {
        event.type = events.type[i];
        event.source = shooter.slot;
        event.p0 = events.p0[i];
        event.p1 = events.p1[i];
        event.p2 = events.p2[i];
        event.p3 = events.p3[i];
        if (readArenaRay(event, ray))
          verdicts.push([`${shooter.slot}:${cmd.sequence}:${ray.ray}`, ray.verdict]);
      }
    },
    onCommand: (_server, shooter, cmd) => {
      const key = `${shooter.slot}:${cmd.sequence}`;
      if (!shot.delete(key)) return;
      const copy = arenaGame.player.create();
      arenaGame.player.copy(copy, shooter.state);
      states.set(key, copy);
    },
    onTick: (_server, tick) => {
      ticks = tick;
      if (tick === o.throwAtTick) throw new Error(`match code failed at tick ${tick}`);
      if (o.stallAtTick !== undefined && tick >= o.stallAtTick) for (;;);
    },
  };
  return {
    game: arenaGame,
    config: { maxClients: 16 },
    hooks: combineHooks(rules, record),
    inspect: (): ShootingReport => ({
      verdicts: [...verdicts],
      states: [...states],
      ticks,
      kills: rules.kills,
    }),
  };
}
