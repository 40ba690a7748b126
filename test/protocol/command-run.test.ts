// Tests for the command run of a client packet: the base it is encoded against, the compact steps
// of msec and angles, exact round trips, and hostile bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { type CommandRun, MAX_COMMANDS_PER_PACKET, serializeCommandRun } from '../../src/protocol/frames.ts';
import {
  copyUserCommand,
  createUserCommand,
  quantizeUserCommand,
  serializeUserCommand,
  type UserCommand,
} from '../../src/protocol/usercmd.ts';

const SEED = Number(process.env.SEED ?? 0x5eb);
const at = `seed ${SEED}`;

/** A stream of commands as a client makes them: small steps mostly, now and then a jump. */
const streamArb = fc
  .array(
    fc.record({
      msec: fc.oneof(fc.constantFrom(16, 17), fc.integer({ min: 1, max: 250 })),
      turn: fc.oneof(
        fc.double({ min: -1.5, max: 1.5, noNaN: true }),
        fc.double({ min: -400, max: 400, noNaN: true }),
      ),
      pitch: fc.double({ min: -89, max: 89, noNaN: true }),
      forwardMove: fc.integer({ min: -127, max: 127 }),
      buttons: fc.integer({ min: 0, max: 0xffff }),
      tickStep: fc.integer({ min: 0, max: 3 }),
      viewFraction: fc.double({ min: 0, max: 4, noNaN: true }),
    }),
    { minLength: 2, maxLength: 40 },
  )
  .map((steps) => {
    const out: UserCommand[] = [];
    let yaw = 0;
    let tick = 1000;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i];
      yaw += s.turn;
      tick += s.tickStep;
      const c = createUserCommand();
      c.sequence = 500 + i;
      c.msec = s.msec;
      c.yaw = yaw;
      c.pitch = i % 3 === 0 ? s.pitch : (out[i - 1]?.pitch ?? 0);
      c.forwardMove = s.forwardMove;
      c.buttons = i % 5 === 0 ? s.buttons : (out[i - 1]?.buttons ?? 0);
      c.randomSeed = 12345 + i;
      c.lerpMsec = 100;
      c.viewTickA = tick;
      c.viewTickB = tick + 2;
      c.viewFraction = s.viewFraction;
      c.viewNewest = tick + 4;
      quantizeUserCommand(c);
      out.push(c);
    }
    return out;
  });

function held(cmds: UserCommand[]): (seq: number) => UserCommand | undefined {
  const bySeq = new Map(cmds.map((c) => [c.sequence, c]));
  return (seq) => bySeq.get(seq);
}

describe('serializeCommandRun', () => {
  it('round-trips any run exactly, against a base the reader holds or a zero command', () => {
    const writer = new BitStream(4096);
    const reader = new BitStream();
    fc.assert(
      fc.property(streamArb, fc.integer({ min: 1, max: 20 }), (stream, gapWanted) => {
        const baseIndex = 0;
        const first = Math.min(stream.length - 1, baseIndex + gapWanted);
        const sent = stream.slice(first).slice(0, MAX_COMMANDS_PER_PACKET);
        for (const baseGap of [0, first - baseIndex]) {
          const run: CommandRun = { count: sent.length, baseGap };
          writer.beginWrite();
          const copies = sent.map((c) => copyUserCommand(createUserCommand(), c));
          expect(serializeCommandRun(writer, copies, run, held(stream)), at).toBe(true);
          expect(copies, at).toEqual(sent);
          const got = sent.map(() => createUserCommand());
          const back: CommandRun = { count: 0, baseGap: 0 };
          reader.beginRead(writer.bytes.slice());
          expect(serializeCommandRun(reader, got, back, held(stream)), `${at} ${reader.error}`).toBe(true);
          expect(back, at).toEqual(run);
          expect(got, at).toEqual(sent);
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('fails, without throwing, when the reader does not hold the base', () => {
    const c = createUserCommand();
    c.sequence = 10;
    c.msec = 16;
    const base = copyUserCommand(createUserCommand(), c);
    base.sequence = 9;
    const writer = new BitStream();
    writer.beginWrite();
    expect(serializeCommandRun(writer, [c], { count: 1, baseGap: 1 }, held([base]))).toBe(true);
    const reader = new BitStream();
    reader.beginRead(writer.bytes.slice());
    expect(serializeCommandRun(reader, [createUserCommand()], { count: 0, baseGap: 0 }, held([]))).toBe(
      false,
    );
    expect(reader.error).toMatch(/base not held/);
  });

  it('never throws on hostile bytes, and a decoded run is in range', () => {
    const reader = new BitStream();
    const cmds = Array.from({ length: MAX_COMMANDS_PER_PACKET }, createUserCommand);
    const base = createUserCommand();
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), (bytes) => {
        reader.beginRead(bytes);
        const run: CommandRun = { count: 0, baseGap: 0 };
        const ok = serializeCommandRun(reader, cmds, run, () => base);
        if (ok) {
          for (let i = 0; i < run.count; i++) {
            expect(cmds[i].msec).toBeGreaterThanOrEqual(1);
            expect(cmds[i].msec).toBeLessThanOrEqual(250);
            expect(cmds[i].yaw).toBeGreaterThanOrEqual(0);
            expect(cmds[i].yaw).toBeLessThan(360);
          }
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('writes small msec and angle steps shorter than the plain form', () => {
    const a = createUserCommand();
    a.msec = 16;
    a.yaw = 10;
    a.pitch = 5;
    quantizeUserCommand(a);
    const b = copyUserCommand(createUserCommand(), a);
    b.msec = 17;
    b.yaw = 11;
    b.pitch = 4.5;
    quantizeUserCommand(b);
    const m = new BitStream();
    m.beginMeasure();
    serializeUserCommand(m, b, a);
    const plain = m.bitsProcessed;
    m.beginMeasure();
    serializeUserCommand(m, b, a, true);
    const compact = m.bitsProcessed;
    // msec 8 -> 1 + 1 + 4; each angle 16 -> 1 + 9.
    expect(plain - compact).toBe(8 - 6 + 2 * (16 - 10));
  });
});
