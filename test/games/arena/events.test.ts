// The arena's event table carries every event its shared code emits exactly, in fewer bits.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUTTON_ATTACK,
  BUTTON_JUMP,
  EVENT_FOOTSTEP,
  EVENT_JUMP,
  EVENT_SHOT,
} from '../../../games/arena/shared/constants.ts';
import { ARENA_EVENTS } from '../../../games/arena/shared/events.ts';
import { arenaGame } from '../../../games/arena/shared/game.ts';
import { writeHitTarget } from '../../../games/arena/shared/player.ts';
import { BitStream } from '../../../src/protocol/bitstream.ts';
import {
  checkEventTable,
  createWireEvent,
  defineEvent,
  type EventSpec,
  eventTypeCode,
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
    // Type 0 has no spec in the arena's table: it has a code (one of the longest), and fails.
    eventTypeCode(ARENA_EVENTS).serialize(s, 0);
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
    expect(() => defineEvent('never', { a: small }, { weight: 0 })).toThrow(/never: weight must be/);
    expect(() => defineEvent('odd', { a: small }, { weight: Number.NaN })).toThrow(/odd: weight must be/);
    expect(() => checkEventTable([{ name: 'raw', params: [small], paramNames: ['a'], weight: -1 }])).toThrow(
      /event raw \(0\): weight must be/,
    );
  });

  it('types travel in a code built from their weights: the frequent ones in fewer bits', () => {
    const code = eventTypeCode(ARENA_EVENTS);
    expect(code).toBe(eventTypeCode(ARENA_EVENTS));
    expect(code.lengths[EVENT_FOOTSTEP]).toBe(1);
    expect(code.lengths[EVENT_SHOT]).toBeLessThan(code.lengths[EVENT_JUMP]);
    // Equal weights (the default) cost about the fixed width of the type, never more than a bit over.
    const plain = [0, 1, 2, 3, 4].map((k) => defineEvent(`e${k}`, { a: small }));
    const lengths = Array.from(eventTypeCode(plain).lengths);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(4);
    expect(lengths.reduce((a, b) => a + b, 0) / lengths.length).toBeLessThanOrEqual(3.2);
  });

  it('a sparse table (types left out as holes) codes and round-trips its types', () => {
    const sparse: (EventSpec | undefined)[] = [];
    sparse[2] = defineEvent('step', { a: small }, { weight: 8 });
    sparse[5] = defineEvent('bang', { a: small });
    checkEventTable(sparse);
    const code = eventTypeCode(sparse);
    expect(code.size).toBe(6);
    expect(code.lengths[2]).toBeLessThan(code.lengths[0]);
    const s = new BitStream(16);
    const e = createWireEvent();
    for (const type of [2, 5]) {
      Object.assign(e, { type, source: 3, p0: 9, p1: 0, p2: 0, p3: 0 });
      s.beginWrite();
      expect(serializeWireEvent(s, e, sparse)).toBe(true);
      s.beginRead(s.bytes.slice());
      const back = createWireEvent();
      expect(serializeWireEvent(s, back, sparse)).toBe(true);
      expect([back.type, back.source, back.p0]).toEqual([type, 3, 9]);
    }
  });

  it('hostile bytes read as events never throw: each is read or fails with its reason', () => {
    const e = createWireEvent();
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 12 }), (bytes) => {
        const s = new BitStream(0).beginRead(bytes);
        const ok = serializeWireEvent(s, e, ARENA_EVENTS);
        expect(ok).toBe(s.ok);
        if (ok) expect(ARENA_EVENTS[e.type]).toBeDefined();
        else expect(s.error).toMatch(/unknown event type|read past end|malformed|out of range|too long/);
      }),
      { seed: 809, numRuns: 3000 },
    );
  });
});
