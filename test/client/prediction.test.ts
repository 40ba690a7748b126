// Unit tests of the predictor with a one-dimensional toy player: replay from the acknowledged
// state, client-only state carried forward, effects played once, corrections blended or snapped.

import { describe, expect, it } from 'vitest';
import { Predictor } from '../../src/client/prediction.ts';
import type { BitStream } from '../../src/protocol/bitstream.ts';
import { createUserCommand, type UserCommand } from '../../src/protocol/usercmd.ts';
import type { GameEventSink, PlayerDefinition } from '../../src/sim/game.ts';
import type { Vec3 } from '../../src/sim/math.ts';

/** x moves by forwardMove * msec / 1000; `steps` counts commands; `bob` exists only on the client. */
interface Toy {
  x: number;
  steps: number;
  bob: number;
}

const EVENT_STEP = 1;

function toyPlayer(): PlayerDefinition<Toy, null> {
  return {
    create: () => ({ x: 0, steps: 0, bob: 0 }),
    copy(out, from) {
      out.x = from.x;
      out.steps = from.steps;
      out.bob = from.bob;
    },
    move(state: Toy, cmd: UserCommand, _world: null, events: GameEventSink) {
      state.x += (cmd.forwardMove * cmd.msec) / 1000;
      state.steps++;
      // Client-only: the server never sends it, so only the client's own history can carry it.
      state.bob += 1;
      events.emit(EVENT_STEP, state.steps, 0, 0, 0);
    },
    serialize: (s: BitStream) => s.ok,
    equals: (a, b) => a.x === b.x && a.steps === b.steps,
    copyClientOnly(out, from) {
      out.bob = from.bob;
    },
    origin(state: Toy, out: Vec3) {
      out.x = state.x;
      out.y = 0;
      out.z = 0;
      return out;
    },
  };
}

function command(sequence: number, forwardMove = 100, msec = 10): UserCommand {
  const c = createUserCommand();
  c.sequence = sequence;
  c.forwardMove = forwardMove;
  c.msec = msec;
  return c;
}

/** Runs the toy server over commands 1..n from `start` and returns its state (no client-only field). */
function serverState(n: number, start: Toy = { x: 0, steps: 0, bob: 0 }): Toy {
  const player = toyPlayer();
  const s = { ...start };
  for (let i = 1; i <= n; i++) player.move(s, command(i), null, { emit() {} });
  s.bob = 0;
  return s;
}

describe('Predictor', () => {
  it('replays unacknowledged commands from the acknowledged state and agrees when nothing interferes', () => {
    const p = new Predictor(toyPlayer(), null, { replay: 'always' });
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    const events: number[] = [];
    const sink = { emit: (_t: number, p0: number) => events.push(p0) };
    for (let i = 1; i <= 10; i++) p.addCommand(command(i), sink);
    expect(p.current.x).toBe(10);
    p.acknowledge(4, serverState(4));
    p.predict(100);
    expect(p.current.x).toBe(10);
    expect(p.current.steps).toBe(10);
    expect(p.stats.replays).toBe(1);
    expect(p.stats.corrections).toBe(0);
    // Replays play no effects: each command's step event came once, on its first run.
    expect(events).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("replays only after a correction with replay 'on-mismatch', and ends where a full replay does", () => {
    const p = new Predictor(toyPlayer(), null);
    expect(p.config.replay).toBe('on-mismatch');
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    for (let i = 1; i <= 10; i++) p.addCommand(command(i), { emit() {} });
    p.acknowledge(4, serverState(4));
    p.predict(100);
    expect(p.stats.confirmations).toBe(1);
    expect(p.stats.replays).toBe(0);
    expect([p.current.x, p.current.steps, p.current.bob]).toEqual([10, 10, 10]);
    // A correction, then a newer acknowledgement that agrees with the stale prediction before the
    // frame predicts: the correction is still replayed, from the newer state.
    p.acknowledge(5, serverState(5, { x: -3, steps: 0, bob: 0 }));
    const agrees = serverState(6);
    p.acknowledge(6, agrees);
    expect(p.stats.corrections).toBe(1);
    p.predict(200);
    expect(p.stats.replays).toBe(1);
    expect([p.current.x, p.current.steps, p.current.bob]).toEqual([10, 10, 10]);
  });

  it("draws the same player with replay 'on-mismatch' as with 'always', through corrections", () => {
    const always = new Predictor(toyPlayer(), null, { replay: 'always', smoothingMs: 50, snapDistance: 20 });
    const lazy = new Predictor(toyPlayer(), null, {
      replay: 'on-mismatch',
      smoothingMs: 50,
      snapDistance: 20,
    });
    const server = toyPlayer();
    const truth = { x: 0, steps: 0, bob: 0 };
    for (const p of [always, lazy]) p.reset(truth, 0);
    // The server runs every command a few frames late and now and then pushes the player.
    let seed = 12345;
    const next = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    let serverRan = 0;
    const sent: UserCommand[] = [];
    const out = { x: 0, y: 0, z: 0 };
    const outLazy = { x: 0, y: 0, z: 0 };
    for (let frame = 1; frame <= 400; frame++) {
      const cmd = command(frame, Math.floor(next() * 200) - 100, 16);
      sent.push(cmd);
      for (const p of [always, lazy]) p.addCommand(cmd, { emit() {} });
      while (serverRan < frame - 6) server.move(truth, sent[serverRan++], null, { emit() {} });
      if (serverRan > 0 && next() < 0.5) {
        if (next() < 0.05) truth.x += Math.floor(next() * 60) - 30;
        for (const p of [always, lazy]) p.acknowledge(serverRan, { ...truth, bob: 0 });
      }
      for (const p of [always, lazy]) p.predict(frame * 16);
      expect([lazy.current.x, lazy.current.steps, lazy.current.bob], `frame ${frame}`).toEqual([
        always.current.x,
        always.current.steps,
        always.current.bob,
      ]);
      expect(lazy.renderOrigin(frame * 16, outLazy).x, `frame ${frame}`).toBe(
        always.renderOrigin(frame * 16, out).x,
      );
    }
    expect(always.stats.corrections).toBeGreaterThan(3);
    expect(lazy.stats.corrections).toBe(always.stats.corrections);
    expect(lazy.stats.visibleCorrections).toBe(always.stats.visibleCorrections);
    expect(lazy.stats.replays).toBeLessThan(always.stats.replays / 4);
    expect(lazy.stats.confirmations).toBeGreaterThan(50);
  });

  it('carries client-only state forward from its own history on acknowledgement', () => {
    const p = new Predictor(toyPlayer(), null);
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    for (let i = 1; i <= 6; i++) p.addCommand(command(i), { emit() {} });
    // The server's state has no bob (it is not replicated): the predictor takes it from the
    // state it predicted after command 3, so the replay ends where prediction was.
    p.acknowledge(3, serverState(3));
    p.predict(50);
    expect(p.acked.bob).toBe(3);
    expect(p.current.bob).toBe(6);
  });

  it('a correction from outside is blended out over smoothingMs; a large one snaps', () => {
    const p = new Predictor(toyPlayer(), null, { smoothingMs: 100, snapDistance: 10 });
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    for (let i = 1; i <= 5; i++) p.addCommand(command(i), { emit() {} });
    // The server pushed the player 4 units back before command 1 ran.
    const pushed = serverState(2, { x: -4, steps: 0, bob: 0 });
    p.acknowledge(2, pushed);
    p.predict(1000);
    expect(p.stats.corrections).toBe(1);
    expect(p.current.x).toBe(1);
    const out = { x: 0, y: 0, z: 0 };
    // Drawn where it was, then moving linearly to the corrected place.
    expect(p.renderOrigin(1000, out).x).toBe(5);
    expect(p.renderOrigin(1050, out).x).toBe(3);
    expect(p.renderOrigin(1100, out).x).toBe(1);
    expect(p.stats.visibleCorrections).toBe(1);
    expect(p.stats.snaps).toBe(0);
    const far = serverState(3, { x: -100, steps: 0, bob: 0 });
    p.acknowledge(3, far);
    p.predict(2000);
    expect(p.stats.snaps).toBe(1);
    expect(p.renderOrigin(2000, out).x).toBe(p.current.x);
  });

  it('ignores stale and impossible acknowledgements', () => {
    const p = new Predictor(toyPlayer(), null);
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    for (let i = 1; i <= 5; i++) p.addCommand(command(i), { emit() {} });
    p.acknowledge(4, serverState(4));
    p.acknowledge(2, serverState(2));
    p.acknowledge(9, serverState(9));
    expect(p.stats.staleAcks).toBe(2);
    expect(p.ackedSequence).toBe(4);
  });

  it('refuses a command out of sequence, and a bad configuration, naming it', () => {
    const p = new Predictor(toyPlayer(), null);
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    expect(() => p.addCommand(command(2), { emit() {} })).toThrow(/command 2 does not follow 0/);
    expect(() => new Predictor(toyPlayer(), null, { windowSize: 100 })).toThrow(/windowSize/);
    expect(() => new Predictor(toyPlayer(), null, { smoothingMs: -1 })).toThrow(/smoothingMs/);
    // @ts-expect-error: a value outside the type, as a plain-JavaScript caller could pass it
    expect(() => new Predictor(toyPlayer(), null, { replay: 'never' })).toThrow(/prediction\.replay/);
  });

  it('keeps predicting from the current state when the window cannot reach the acknowledgement', () => {
    const p = new Predictor(toyPlayer(), null, { windowSize: 8 });
    p.reset({ x: 0, steps: 0, bob: 0 }, 0);
    for (let i = 1; i <= 20; i++) p.addCommand(command(i), { emit() {} });
    p.acknowledge(2, serverState(2));
    p.predict(10);
    expect(p.stats.replays).toBe(0);
    expect(p.current.x).toBe(20);
    // Exactly a window's worth unacknowledged (13..20) still replays.
    p.acknowledge(12, serverState(12));
    p.predict(20);
    expect(p.stats.replays).toBe(1);
    expect(p.current.x).toBe(20);
  });
});
