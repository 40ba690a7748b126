// The arena's event table carries every event its shared code emits exactly, in fewer bits.

import { describe, expect, it } from 'vitest';
import { BUTTON_ATTACK, BUTTON_JUMP } from '../../../games/arena/shared/constants.ts';
import { ARENA_EVENTS } from '../../../games/arena/shared/events.ts';
import { arenaGame } from '../../../games/arena/shared/game.ts';
import { writeHitTarget } from '../../../games/arena/shared/player.ts';
import { BitStream } from '../../../src/protocol/bitstream.ts';
import {
  checkEventTable,
  createWireEvent,
  defineEvent,
  serializeWireEvent,
  WIRE_EVENT_BITS,
} from '../../../src/protocol/frames.ts';

const small = { kind: 'int', min: 0, max: 255 } as const;

import { createUserCommand, quantizeUserCommand } from '../../../src/protocol/usercmd.ts';
import { Random } from '../../../src/sim/random.ts';

describe('arena events on the wire', () => {
  it('every event a fight emits round-trips exactly through the table, smaller than four float32', () => {
    checkEventTable(ARENA_EVENTS);
    const seed = 808;
    const rng = new Random(seed);
    const world = arenaGame.createWorld();
    const shooter = arenaGame.player.create();
    arenaGame.spawn(shooter, world, 0);
    // Three standing targets in front of the shooter, some crouched, one dead.
    const others = [1, 2, 3].map((i) => {
      const s = arenaGame.player.create();
      arenaGame.spawn(s, world, i);
      return s;
    });
    const place = () => {
      for (let k = 0; k < others.length; k++) writeHitTarget(others[k], 10 + k, world.targets[k]);
    };
    others[2].health = 0;
    const emitted: number[][] = [];
    const sink = {
      emit: (type: number, p0: number, p1: number, p2: number, p3: number) =>
        emitted.push([type, p0, p1, p2, p3]),
    };
    const cmd = createUserCommand();
    for (let i = 1; i <= 4000; i++) {
      place();
      world.targetCount = others.length;
      world.ownerSlot = 99;
      cmd.sequence = i;
      cmd.msec = rng.int(8, 40);
      cmd.forwardMove = rng.int(-1, 1) * 127;
      cmd.sideMove = rng.int(-1, 1) * 127;
      cmd.yaw = rng.range(0, 360);
      cmd.pitch = rng.range(-30, 30);
      cmd.buttons = (rng.chance(0.6) ? BUTTON_ATTACK : 0) | (rng.chance(0.1) ? BUTTON_JUMP : 0);
      cmd.impulse = rng.chance(0.02) ? rng.int(1, 3) : 0;
      cmd.randomSeed = rng.nextU32();
      quantizeUserCommand(cmd);
      arenaGame.player.move(shooter, cmd, world, sink);
    }
    const types = new Set(emitted.map((e) => e[0]));
    expect(types.size, `seed ${seed}`).toBeGreaterThanOrEqual(10);
    const s = new BitStream(64);
    const e = createWireEvent();
    const back = createWireEvent();
    let bits = 0;
    for (const [type, p0, p1, p2, p3] of emitted) {
      Object.assign(e, { type, source: 7, p0, p1, p2, p3 });
      s.beginWrite();
      expect(serializeWireEvent(s, e, ARENA_EVENTS), `seed ${seed}`).toBe(true);
      bits += s.bitsProcessed;
      const bytes = s.bytes.slice();
      s.beginRead(bytes);
      expect(serializeWireEvent(s, back, ARENA_EVENTS), `seed ${seed}`).toBe(true);
      expect(
        [back.type, back.source, back.p0, back.p1, back.p2, back.p3],
        `seed ${seed} event ${type}`,
      ).toEqual([type, 7, p0, p1, p2, p3]);
    }
    // On average well under half of the 152 bits of four float32 parameters.
    expect(bits / emitted.length, `seed ${seed}`).toBeLessThan(WIRE_EVENT_BITS / 2);
  });

  it('an unknown type fails the read, and a bad table is refused naming the event', () => {
    const s = new BitStream(16);
    s.beginWrite();
    s.int(0, 0, ARENA_EVENTS.length - 1);
    s.beginRead(s.bytes.slice());
    const e = createWireEvent();
    expect(serializeWireEvent(s, e, ARENA_EVENTS)).toBe(false);
    expect(s.error).toBe('unknown event type');
    expect(() =>
      checkEventTable([defineEvent('boom', { radius: { kind: 'float', min: 1, max: 0, precision: 1 } })]),
    ).toThrow(/event boom \(0\), parameter radius/);
    expect(() => defineEvent('wide', { a: small, b: small, c: small, d: small, e: small })).toThrow(
      /wide: at most 4 parameters/,
    );
  });
});
