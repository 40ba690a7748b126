// A match module for the worker tests: the arena with its rules and the server half of the shot
// ledger (every ray's verdict in exact mode, and the shooter's state after each command that
// shot), reported by `inspect()`; options make a match throw or stall at a given tick.

import type { WorkerMatchSpec } from 'backstep/node';
import { combineHooks, type ServerHooks } from 'backstep/server';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { ArenaShotLedger } from '../../games/arena/testing/shots.ts';

export interface ShootingMatchOptions {
  /** The match throws from its tick hook at this tick. */
  throwAtTick?: number;
  /** The match's tick hook never returns from this tick on. */
  stallAtTick?: number;
}

/** What `inspect()` reports: verdicts and shooter states by "slot:command[:ray]". */
export interface ShootingReport {
  verdicts: [string, number][];
  states: [string, ArenaPlayerState][];
  ticks: number;
  kills: number;
}

export function createMatch(_id: number, options: unknown): WorkerMatchSpec<ArenaPlayerState, ArenaWorld> {
  const o = (options ?? {}) as ShootingMatchOptions;
  const ledger = new ArenaShotLedger();
  const rules = arenaRules({ respawnMs: 1500 });
  const shot = new Set<string>();
  const states = new Map<string, ArenaPlayerState>();
  let ticks = 0;
  const record: ServerHooks<ArenaPlayerState, ArenaWorld> = {
    onShot: (_server, shooter, cmd) => {
      shot.add(`${shooter.slot}:${cmd.sequence}`);
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
    hooks: combineHooks(rules, ledger.serverHooks(), record),
    inspect: (): ShootingReport => ({
      verdicts: [...ledger.verdicts('exact')],
      states: [...states],
      ticks,
      kills: rules.kills,
    }),
  };
}
