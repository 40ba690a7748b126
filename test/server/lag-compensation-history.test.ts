// Lag compensation never judges a named view against values it no longer has: a frame may hold an
// entity's values from long before it (an update the byte budget deferred frame after frame), and
// when the entity history has lost that tick the view is refused, not rebuilt from other values.

import { describe, expect, it } from 'vitest';
import { PLAYER_ENTITY } from '../../games/arena/shared/entities.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { createUserCommand } from '../../src/protocol/usercmd.ts';
import { EntityStore } from '../../src/server/entities.ts';
import { LagCompensator, VIEW_FRAMES_NOT_SENT } from '../../src/server/lag-compensation.ts';
import { SnapshotWriter } from '../../src/server/snapshot-writer.ts';
import { VIEW_HONOURED } from '../../src/sim/view-acceptance.ts';

const TICK_MS = 1000 / 64;

/**
 * Frames of ticks 1..30 for a shooter and a moving target whose updates never fit after the
 * first, then a shot naming frames 28 and 30, judged against a history of `historyTicks`.
 */
function scene(historyTicks: number, maxHeldAgeTicks: number) {
  const store = new EntityStore(arenaGame.entities, { historyTicks });
  const hitscan = arenaGame.hitscan;
  if (hitscan === undefined) throw new Error('the arena has hit-scan weapons');
  const lag = new LagCompensator(store, hitscan, TICK_MS, {});
  const writer = new SnapshotWriter(store, { rememberTicks: 64, maxHeldAgeTicks });
  const type = arenaGame.playerEntity.typeId;
  const shooter = store.create(type);
  const target = store.create(type);
  const x = PLAYER_ENTITY.index.x;
  store.setField(shooter, x, -200);
  store.setField(target, x, 200);
  const out = new BitStream(1200);
  for (let tick = 1; tick <= 30; tick++) {
    // The target moves every tick; after the first frame no entry fits the budget.
    store.setField(target, x, 200 + tick);
    store.commit(tick);
    out.beginWrite();
    expect(writer.write(out, tick, -200, 0, 0, tick === 1 ? Number.POSITIVE_INFINITY : 12, shooter)).toBe(
      true,
    );
    writer.acknowledge(tick);
  }
  const cmd = createUserCommand();
  cmd.sequence = 1;
  cmd.msec = 16;
  cmd.lerpMsec = 100;
  cmd.viewTickA = 28;
  cmd.viewTickB = 30;
  cmd.viewFraction = 0.5;
  cmd.viewNewest = 30;
  const players = Int32Array.from([shooter, target]);
  lag.rewind(
    'exact',
    arenaGame.createWorld(),
    arenaGame.player.create(),
    cmd,
    shooter,
    writer,
    0,
    30,
    players,
    2,
  );
  return { lag, heldB: writer.heldTick(30, target) };
}

describe('lag compensation and the entity history', () => {
  it('refuses a view whose held values the history lost, and honours it while the history has them', () => {
    // No bound on held values: frame 30 holds the target's values of tick 1.
    const lost = scene(16, 0);
    expect(lost.heldB).toBe(1);
    expect(lost.lag.report.outcome).toBe(VIEW_FRAMES_NOT_SENT);
    expect(lost.lag.stats.viewsNotSent).toBe(1);
    expect(lost.lag.report.exact).toBe(false);
    // The same frames with a history long enough: honoured and rebuilt.
    const kept = scene(64, 0);
    expect(kept.heldB).toBe(1);
    expect(kept.lag.report.outcome).toBe(VIEW_HONOURED);
    expect(kept.lag.report.exact).toBe(true);
    // With the writers' bound the values never get that old, and the short history suffices.
    const bounded = scene(16, 8);
    expect(30 - bounded.heldB).toBeLessThan(8);
    expect(bounded.lag.report.outcome).toBe(VIEW_HONOURED);
  });

  it('names the setting when lagCompensation is configured out of range', () => {
    const store = new EntityStore(arenaGame.entities, { historyTicks: 256 });
    const hitscan = arenaGame.hitscan!;
    for (const [key, value] of [
      ['lateArrivalMs', -1],
      ['lateArrivalMs', Number.POSITIVE_INFINITY],
      ['ackSlackMs', Number.NaN],
      ['maxUnlagMs', -5],
    ] as const) {
      expect(() => new LagCompensator(store, hitscan, TICK_MS, { [key]: value })).toThrow(
        new RegExp(`lagCompensation\\.${key} must be a finite number >= 0`),
      );
    }
    const lag = new LagCompensator(store, hitscan, TICK_MS, { lateArrivalMs: 0 });
    expect(lag.config.lateArrivalMs).toBe(0);
    expect(new LagCompensator(store, hitscan, TICK_MS, {}).config.lateArrivalMs).toBe(1250);
  });
});
