// Tests for the user command: quantization, delta round-trips against a base, bit costs, hostile bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitStream } from '../../src/protocol/bitstream.ts';
import {
  CMD_MOVE_MAX,
  CMD_MSEC_MAX,
  CMD_MSEC_MIN,
  CMD_VIEW_FRACTION_MAX,
  CommandRing,
  copyUserCommand,
  createUserCommand,
  nextRandomSeed,
  quantizeUserCommand,
  quantizeViewFraction,
  serializeUserCommand,
  type UserCommand,
} from '../../src/protocol/usercmd.ts';

const SEED = Number(process.env.SEED ?? 0xc3d);
const at = `seed ${SEED}`;

/** An unchanged command: msec (8 bits) plus one "unchanged" bit for each of the 14 other fields. */
const UNCHANGED_COMMAND_BITS = 22;

const u32 = fc.integer({ min: 0, max: 0xffffffff });

/** Raw client input, before quantization: anything a buggy or hostile client could produce. */
const rawCommandArb: fc.Arbitrary<UserCommand> = fc
  .record({
    msec: fc.oneof(fc.integer({ min: -10, max: 400 }), fc.double(), fc.integer({ min: 1, max: 250 })),
    pitch: fc.oneof(fc.double({ min: -90, max: 90, noNaN: true }), fc.double()),
    yaw: fc.oneof(fc.double({ min: -720, max: 720, noNaN: true }), fc.double()),
    roll: fc.oneof(fc.constant(0), fc.double()),
    forwardMove: fc.oneof(
      fc.integer({ min: -127, max: 127 }),
      fc.double({ min: -500, max: 500 }),
      fc.double(),
    ),
    sideMove: fc.oneof(fc.integer({ min: -127, max: 127 }), fc.double()),
    upMove: fc.oneof(fc.constantFrom(-127, 0, 127), fc.double()),
    buttons: fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: -5, max: 0x1ffff })),
    impulse: fc.oneof(fc.constant(0), fc.integer({ min: -5, max: 300 })),
    randomSeed: fc.oneof(u32, fc.integer({ min: -(2 ** 40), max: 2 ** 40 })),
    lerpMsec: fc.oneof(fc.constantFrom(0, 100), fc.integer({ min: -50, max: 1500 })),
    viewTickA: fc.oneof(fc.constant(0), u32, fc.integer({ min: 0, max: 100000 }), fc.constant(0xffffffff)),
    viewDelta: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: -20, max: 400 })),
    viewFraction: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.double()),
    newestDelta: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: -20, max: 400 }), fc.double()),
  })
  .map(({ viewDelta, newestDelta, ...r }) => ({
    sequence: 0,
    ...r,
    viewTickB: r.viewTickA + viewDelta,
    viewNewest: r.viewTickA + viewDelta + newestDelta,
  }));

/** A command as the client sends it: raw input, quantized. */
const commandArb = rawCommandArb.map((c) => {
  quantizeUserCommand(c);
  return c;
});

const writer = new BitStream(4096);
const reader = new BitStream();
const measurer = new BitStream();

/** Writes `cmds` one after another, each against the previous (the first against `first`). */
function writeRun(cmds: UserCommand[], first: UserCommand): Uint8Array {
  writer.beginWrite();
  let base = first;
  for (const c of cmds) {
    serializeUserCommand(writer, c, base);
    base = c;
  }
  expect(writer.ok, `${at} ${writer.error}`).toBe(true);
  return writer.bytes.slice();
}

/** Reads `count` commands written by writeRun; null when the stream fails. */
function readRun(bytes: Uint8Array, count: number, first: UserCommand): UserCommand[] | null {
  reader.beginRead(bytes);
  const out: UserCommand[] = [];
  let base = first;
  for (let i = 0; i < count; i++) {
    const c = createUserCommand();
    if (!serializeUserCommand(reader, c, base)) return null;
    out.push(c);
    base = c;
  }
  return out;
}

function measureRun(cmds: UserCommand[], first: UserCommand): number {
  measurer.beginMeasure();
  let base = first;
  for (const c of cmds) {
    serializeUserCommand(measurer, c, base);
    base = c;
  }
  return measurer.bitsProcessed;
}

function withoutSequence(c: UserCommand): Omit<UserCommand, 'sequence'> {
  const { sequence: _, ...rest } = c;
  return rest;
}

/** Checks write/measure/read of a run: the written commands are unchanged and read back exactly. */
function roundTrip(cmds: UserCommand[], first: UserCommand, label: string): number {
  const before = cmds.map((c) => copyUserCommand(createUserCommand(), c));
  const bytes = writeRun(cmds, first);
  const bits = writer.bitsProcessed;
  expect(cmds, `${label}: writing must not change a quantized command`).toEqual(before);
  expect(measureRun(cmds, first), `${label}: measure == write`).toBe(bits);
  const back = readRun(bytes, cmds.length, first);
  expect(back, `${label}: read failed (${reader.error})`).not.toBeNull();
  expect(back?.map(withoutSequence), label).toEqual(cmds.map(withoutSequence));
  expect(reader.bitsProcessed, `${label}: read position`).toBe(bits);
  return bits;
}

describe('quantizeUserCommand', () => {
  it('clamps each field into its wire range', () => {
    const c = createUserCommand();
    c.msec = 0;
    c.forwardMove = 500;
    c.sideMove = -500;
    c.upMove = 127.6;
    c.buttons = 0x12345;
    c.impulse = 999;
    c.lerpMsec = 5000;
    c.viewTickA = 100;
    c.viewTickB = 50;
    c.viewFraction = 7.5;
    quantizeUserCommand(c);
    expect(c.msec).toBe(CMD_MSEC_MIN);
    expect(c.forwardMove).toBe(CMD_MOVE_MAX);
    expect(c.sideMove).toBe(-CMD_MOVE_MAX);
    expect(c.upMove).toBe(CMD_MOVE_MAX);
    expect(c.buttons).toBe(0xffff);
    expect(c.impulse).toBe(255);
    expect(c.lerpMsec).toBe(1000);
    expect(c.viewTickB, 'viewTickB < viewTickA becomes viewTickA').toBe(100);
    expect(c.viewFraction, 'fraction over CMD_VIEW_FRACTION_MAX becomes the max').toBe(CMD_VIEW_FRACTION_MAX);
    expect(c.viewNewest, 'viewNewest below viewTickB becomes viewTickB').toBe(100);

    c.msec = 300;
    c.viewTickB = 1000;
    c.viewFraction = -0.25;
    c.yaw = -90;
    c.pitch = 765;
    c.randomSeed = -1;
    quantizeUserCommand(c);
    expect(c.msec).toBe(CMD_MSEC_MAX);
    expect(c.viewTickB, 'viewTickB is at most viewTickA + 255').toBe(355);
    c.viewNewest = 5000;
    quantizeUserCommand(c);
    expect(c.viewNewest, 'viewNewest is at most viewTickB + 255').toBe(610);
    expect(c.viewFraction).toBe(0);
    expect(c.yaw).toBe(270);
    expect(c.pitch).toBe(45);
    expect(c.randomSeed).toBe(0xffffffff);
  });

  it('turns NaN into 0 (or the field minimum), never into an extreme', () => {
    const c = createUserCommand();
    for (const k of Object.keys(c) as (keyof UserCommand)[]) c[k] = Number.NaN;
    c.sequence = 1;
    quantizeUserCommand(c);
    expect(c).toEqual({
      sequence: 1,
      msec: CMD_MSEC_MIN,
      pitch: 0,
      yaw: 0,
      roll: 0,
      forwardMove: 0,
      sideMove: 0,
      upMove: 0,
      buttons: 0,
      impulse: 0,
      randomSeed: 0,
      lerpMsec: 0,
      viewTickA: 0,
      viewTickB: 0,
      viewFraction: 0,
      viewNewest: 0,
    });
  });

  it('never leaves -0, which the wire would decode as 0', () => {
    const c = createUserCommand();
    c.forwardMove = -0.3;
    c.sideMove = -0;
    c.viewFraction = -0.00001;
    c.pitch = -5e-324;
    quantizeUserCommand(c);
    expect(Object.is(c.forwardMove, 0)).toBe(true);
    expect(Object.is(c.sideMove, 0)).toBe(true);
    expect(Object.is(c.viewFraction, 0)).toBe(true);
    expect(Object.is(c.pitch, 0)).toBe(true);
  });

  it('is idempotent, and quantizeViewFraction lands on 1/4096 steps in [0, CMD_VIEW_FRACTION_MAX]', () => {
    fc.assert(
      fc.property(commandArb, fc.double(), (c, f) => {
        const again = copyUserCommand(createUserCommand(), c);
        quantizeUserCommand(again);
        expect(again, at).toEqual(c);
        const q = quantizeViewFraction(f);
        expect(q >= 0 && q <= CMD_VIEW_FRACTION_MAX && Number.isInteger(q * 4096), `${at} ${f} -> ${q}`).toBe(
          true,
        );
        expect(quantizeViewFraction(q), `${at} ${f}`).toBe(q);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });
});

describe('serializeUserCommand', () => {
  it('round-trips any quantized command against the zero command and against a random previous one', () => {
    fc.assert(
      fc.property(commandArb, commandArb, (c, previous) => {
        roundTrip([c], createUserCommand(), `${at} against zero`);
        roundTrip([c], previous, `${at} against previous`);
        roundTrip([previous, c], createUserCommand(), `${at} pair`);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it('round-trips a run of 64 consecutive commands, each delta-encoded against the one before', () => {
    const runArb = fc.record({
      start: commandArb,
      steps: fc.array(
        fc.record({
          yaw: fc.oneof(fc.constant(0), fc.double({ min: -20, max: 20, noNaN: true })),
          pitch: fc.oneof(fc.constant(0), fc.double({ min: -5, max: 5, noNaN: true })),
          forward: fc.constantFrom(0, 0, 0, 127, -127, 64),
          buttons: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })),
          seed: u32,
          ticks: fc.oneof(fc.constantFrom(0, 0, 1, 2), fc.integer({ min: -3000, max: 3000 })),
          fraction: fc.double({ min: 0, max: 1, noNaN: true }),
          jump: fc.boolean(),
        }),
        { minLength: 64, maxLength: 64 },
      ),
    });
    fc.assert(
      fc.property(runArb, ({ start, steps }) => {
        const run: UserCommand[] = [];
        let prev = start;
        for (const s of steps) {
          const c = copyUserCommand(createUserCommand(), prev);
          c.sequence = prev.sequence + 1;
          c.yaw += s.yaw;
          c.pitch += s.pitch;
          c.forwardMove = s.forward;
          if (s.jump) c.buttons = s.buttons;
          c.randomSeed = s.seed;
          c.viewTickA += s.ticks;
          c.viewTickB = c.viewTickA + (s.jump ? 3 : 1);
          c.viewFraction = s.fraction;
          quantizeUserCommand(c);
          run.push(c);
          prev = c;
        }
        const bits = roundTrip(run, createUserCommand(), `${at} run of 64`);
        expect(bits / 8, `${at}: 64 commands fit one packet`).toBeLessThan(1200);
      }),
      { seed: SEED, numRuns: 100 },
    );
  });

  it(`an unchanged command costs ${UNCHANGED_COMMAND_BITS} bits`, () => {
    fc.assert(
      fc.property(commandArb, (base) => {
        const c = copyUserCommand(createUserCommand(), base);
        expect(roundTrip([c], base, at), at).toBe(UNCHANGED_COMMAND_BITS);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('a typical command (next seed, view tick +1, new fraction, turning) costs 62 bits', () => {
    const base = createUserCommand();
    base.msec = 16;
    base.yaw = 90;
    base.forwardMove = 127;
    base.lerpMsec = 100;
    base.viewTickA = 5000;
    base.viewTickB = 5001;
    base.viewFraction = 0.5;
    quantizeUserCommand(base);
    const c = copyUserCommand(createUserCommand(), base);
    c.yaw = 91.5;
    c.randomSeed = nextRandomSeed(base.randomSeed);
    c.viewTickA = 5001;
    c.viewTickB = 5002;
    c.viewFraction = 0.25;
    quantizeUserCommand(c);
    // msec 8 + 14 changed bits + yaw 16 + seed successor 1 + view tick varuint 8 + fraction 15 = 62
    // (the newest tick received stays viewTickB: unchanged).
    expect(roundTrip([c], base, 'typical')).toBe(62);
    // A seed that is not the successor is written whole: 1 + 32 bits instead of 1.
    c.randomSeed = 0xdeadbeef;
    expect(roundTrip([c], base, 'explicit seed')).toBe(94);
  });

  it('view ticks across the whole 32-bit range round-trip as wrapped differences', () => {
    const pairs = [
      [1, 0xffffffff],
      [0xffffffff, 1],
      [0x80000000, 0],
      [0x7fffffff, 0xffffffff],
      [0xffffffff, 0x7fffffff],
    ];
    for (const [from, to] of pairs) {
      const base = createUserCommand();
      base.viewTickA = from;
      base.viewTickB = from;
      quantizeUserCommand(base);
      const c = copyUserCommand(createUserCommand(), base);
      c.viewTickA = to;
      c.viewTickB = to;
      quantizeUserCommand(c);
      roundTrip([c], base, `view tick ${from} -> ${to}`);
    }
  });

  it('writing an unquantized command throws a RangeError naming the value', () => {
    const c = createUserCommand();
    c.msec = 0;
    const s = new BitStream().beginWrite();
    expect(() => serializeUserCommand(s, c, createUserCommand())).toThrow(/0 is outside \[1, 250\]/);
  });

  it('garbage bytes never throw, and every command they decode to is already quantized', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.oneof(fc.constant(null), commandArb),
        (bytes, start) => {
          reader.beginRead(bytes);
          let base = start ?? createUserCommand();
          for (let i = 0; i < 16; i++) {
            const c = createUserCommand();
            const ok = serializeUserCommand(reader, c, base);
            expect(ok, at).toBe(reader.ok);
            if (!ok) {
              expect(reader.error, at).not.toBe('');
              break;
            }
            const q = copyUserCommand(createUserCommand(), c);
            quantizeUserCommand(q);
            expect(c, `${at} command ${i}`).toEqual(q);
            base = c;
          }
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('truncated commands fail instead of throwing', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { minLength: 1, maxLength: 8 }), fc.nat(), (cmds, cut) => {
        const bytes = writeRun(cmds, createUserCommand());
        const short = bytes.subarray(0, cut % bytes.length);
        const back = readRun(short, cmds.length, createUserCommand());
        expect(back, `${at} cut at ${short.length} of ${bytes.length}`).toBeNull();
        expect(reader.error, at).toBe('read past end');
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});

describe('CommandRing', () => {
  it('gives back every field of each command stored, by number, and nothing for a number it does not hold', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { minLength: 1, maxLength: 40 }), u32, (cmds, first) => {
        const ring = new CommandRing(64);
        // Numbers from `first` up, wrapping below 2^32, so the top of the range is covered.
        cmds.forEach((c, i) => {
          c.sequence = first + i > 0xffffffff ? first + i - 0xffffffff : first + i;
          ring.put(c);
        });
        const out = createUserCommand();
        for (const c of cmds) {
          expect(ring.has(c.sequence), at).toBe(true);
          expect(ring.msec(c.sequence), at).toBe(c.msec);
          expect(ring.read(c.sequence, out), at).toBe(out);
          expect(out, at).toEqual(c);
        }
        const absent = cmds[0].sequence + 64 > 0xffffffff ? cmds[0].sequence - 64 : cmds[0].sequence + 64;
        const before = { ...out };
        expect(ring.has(absent), at).toBe(false);
        expect(ring.read(absent, out), at).toBeUndefined();
        expect(out, `${at}: a miss leaves out untouched`).toEqual(before);
        expect(ring.msec(absent), at).toBe(-1);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('a command a lap later takes the slot; remove forgets only the number it names', () => {
    const ring = new CommandRing(8);
    const c = createUserCommand();
    c.sequence = 3;
    c.msec = 16;
    ring.put(c);
    c.sequence = 11;
    c.msec = 17;
    ring.put(c);
    expect(ring.has(3)).toBe(false);
    expect(ring.msec(11)).toBe(17);
    ring.remove(3);
    expect(ring.has(11)).toBe(true);
    ring.remove(11);
    expect(ring.has(11)).toBe(false);
    expect(ring.read(11, createUserCommand())).toBeUndefined();
  });

  it('refuses a size that is not a power of two, naming it', () => {
    expect(() => new CommandRing(12)).toThrow(/power of two, got 12/);
    expect(() => new CommandRing(0)).toThrow(/power of two, got 0/);
  });
});
