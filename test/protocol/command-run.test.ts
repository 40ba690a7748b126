// Tests for the command run of a client packet: the base it is encoded against, the compact steps
// of msec and angles, exact round trips, and hostile bytes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitStream } from '../../src/protocol/bitstream.ts';
import {
  type CommandRun,
  FIRST_SEQUENCE_SHORT_REACH,
  MAX_COMMANDS_PER_PACKET,
  serializeCommandRun,
} from '../../src/protocol/frames.ts';
import {
  copyUserCommand,
  createUserCommand,
  quantizeUserCommand,
  serializeCompactUserCommand,
  serializeUserCommand,
  type UserCommand,
} from '../../src/protocol/usercmd.ts';

/** A 64 Hz server's tick, ms: the view prediction's step. */
const TICK_MS = 1000 / 64;

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
  it('round-trips any run exactly, against a base the reader holds or a zero command, its first number whole or short', () => {
    const writer = new BitStream(4096);
    const reader = new BitStream();
    fc.assert(
      fc.property(
        streamArb,
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: -FIRST_SEQUENCE_SHORT_REACH, max: FIRST_SEQUENCE_SHORT_REACH }),
        fc.constantFrom(0, TICK_MS, 1000 / 30),
        (stream, gapWanted, nearOffset, tickMs) => {
          const baseIndex = 0;
          const first = Math.min(stream.length - 1, baseIndex + gapWanted);
          const sent = stream.slice(first).slice(0, MAX_COMMANDS_PER_PACKET);
          // The reader's newest received command, anywhere within reach of the first.
          const near = sent[0].sequence + nearOffset;
          for (const baseGap of [0, first - baseIndex]) {
            for (const shortFirst of [false, true]) {
              const run: CommandRun = { count: sent.length, baseGap, shortFirst };
              writer.beginWrite();
              const copies = sent.map((c) => copyUserCommand(createUserCommand(), c));
              expect(serializeCommandRun(writer, copies, run, held(stream), 0, tickMs), at).toBe(true);
              expect(copies, at).toEqual(sent);
              const got = sent.map(() => createUserCommand());
              const back: CommandRun = { count: 0, baseGap: 0, shortFirst: false };
              reader.beginRead(writer.bytes.slice());
              expect(
                serializeCommandRun(reader, got, back, held(stream), near, tickMs),
                `${at} ${reader.error}`,
              ).toBe(true);
              expect(back, at).toEqual(run);
              expect(got, at).toEqual(sent);
            }
          }
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("reads a short first number as the one nearest the reader's newest command, and costs 24 bits less", () => {
    const c = createUserCommand();
    c.sequence = 70_000;
    c.msec = 16;
    const writer = new BitStream();
    const lengths: number[] = [];
    for (const shortFirst of [false, true]) {
      writer.beginWrite();
      serializeCommandRun(
        writer,
        [copyUserCommand(createUserCommand(), c)],
        { count: 1, baseGap: 0, shortFirst },
        held([]),
        0,
        0,
      );
      lengths.push(writer.bitsProcessed);
    }
    expect(lengths[0] - lengths[1]).toBe(32 - 8);
    const got = [createUserCommand()];
    const reader = new BitStream();
    for (const near of [
      70_000 - FIRST_SEQUENCE_SHORT_REACH,
      69_990,
      70_000,
      70_000 + FIRST_SEQUENCE_SHORT_REACH,
    ]) {
      reader.beginRead(writer.bytes.slice());
      expect(
        serializeCommandRun(reader, got, { count: 0, baseGap: 0, shortFirst: false }, held([]), near, 0),
      ).toBe(true);
      expect(got[0].sequence, `near ${near}`).toBe(70_000);
    }
    // Farther than the reach, the low bits name another command: the writer never relies on it.
    reader.beginRead(writer.bytes.slice());
    serializeCommandRun(reader, got, { count: 0, baseGap: 0, shortFirst: false }, held([]), 70_000 + 200, 0);
    expect(got[0].sequence).toBe(70_000 + 256);
  });

  it('fails, without throwing, when the reader does not hold the base', () => {
    const c = createUserCommand();
    c.sequence = 10;
    c.msec = 16;
    const base = copyUserCommand(createUserCommand(), c);
    base.sequence = 9;
    const writer = new BitStream();
    writer.beginWrite();
    expect(
      serializeCommandRun(writer, [c], { count: 1, baseGap: 1, shortFirst: true }, held([base]), 0, TICK_MS),
    ).toBe(true);
    const reader = new BitStream();
    reader.beginRead(writer.bytes.slice());
    expect(
      serializeCommandRun(
        reader,
        [createUserCommand()],
        { count: 0, baseGap: 0, shortFirst: false },
        held([]),
        9,
        TICK_MS,
      ),
    ).toBe(false);
    expect(reader.error).toMatch(/base not held/);
  });

  it('never throws on hostile bytes, and a decoded run is in range', () => {
    const reader = new BitStream();
    const cmds = Array.from({ length: MAX_COMMANDS_PER_PACKET }, createUserCommand);
    const base = createUserCommand();
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 300 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (bytes, near) => {
          reader.beginRead(bytes);
          const run: CommandRun = { count: 0, baseGap: 0, shortFirst: false };
          const ok = serializeCommandRun(reader, cmds, run, () => base, near, TICK_MS);
          if (ok) {
            for (let i = 0; i < run.count; i++) {
              const c = cmds[i];
              expect(c.sequence).toBeGreaterThanOrEqual(1);
              expect(c.sequence).toBeLessThanOrEqual(0xffffffff);
              expect(c.msec).toBeGreaterThanOrEqual(1);
              expect(c.msec).toBeLessThanOrEqual(250);
              expect(c.yaw).toBeGreaterThanOrEqual(0);
              expect(c.yaw).toBeLessThan(360);
              expect(c.viewFraction).toBeGreaterThanOrEqual(0);
              expect(c.viewFraction).toBeLessThanOrEqual(4);
              expect(c.viewTickB - c.viewTickA).toBeGreaterThanOrEqual(0);
              expect(c.viewTickB - c.viewTickA).toBeLessThanOrEqual(255);
            }
          }
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it("writes small msec and angle steps, unchanged input and the seed's successor shorter than the plain form", () => {
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
    serializeCompactUserCommand(m, b, a, 0);
    const compact = m.bitsProcessed;
    // msec 8 -> 1 + 1 + 1 (a step of one); each angle 16 -> 1 + 9; roll, moves, buttons, impulse and lerpMsec
    // 7 changed bits -> 1; the seed (unchanged) 1 -> 2 (not the successor, then unchanged); the
    // fraction (unchanged) 1 -> 2 (a residual of 0 from the base's, unpredicted without a tick).
    expect(plain - compact).toBe(8 - 3 + 2 * (16 - 10) + (7 - 1) - 1 - 1);
  });

  it('writes a turn beyond the short step whole, in the 16 bits BitStream.angle gives the angle', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 360, noNaN: true }),
        fc.double({ min: 0, max: 360, noNaN: true }),
        (from, to) => {
          const a = createUserCommand();
          a.msec = 16;
          a.yaw = from;
          quantizeUserCommand(a);
          const b = copyUserCommand(createUserCommand(), a);
          b.yaw = to;
          quantizeUserCommand(b);
          const units = (yaw: number) => Math.round((yaw * 65536) / 360);
          let step = (units(b.yaw) - units(a.yaw)) % 65536;
          if (step > 32768) step -= 65536;
          else if (step < -32768) step += 65536;
          fc.pre(Math.abs(step) > 255);
          const w = new BitStream().beginWrite();
          const sent = copyUserCommand(createUserCommand(), b);
          expect(serializeCompactUserCommand(w, sent, a, 0), at).toBe(true);
          expect(sent.yaw, at).toBe(b.yaw);
          // msec unchanged, pitch unchanged, yaw changed, not short: then the angle whole.
          const r = new BitStream().beginRead(w.bytes);
          expect([r.bool(false), r.bool(false), r.bool(false), r.bool(false)], at).toEqual([
            true,
            false,
            true,
            false,
          ]);
          const angle = new BitStream().beginWrite();
          angle.angle(b.yaw, 16);
          expect(r.uint(0, 16), at).toBe(new BitStream().beginRead(angle.bytes).uint(0, 16));
          const read = createUserCommand();
          read.sequence = sent.sequence;
          const rr = new BitStream().beginRead(w.bytes);
          expect(serializeCompactUserCommand(rr, read, a, 0), at).toBe(true);
          expect(read.yaw, at).toBe(b.yaw);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("writes a view that moved on by the previous command's msec in 3 bits", () => {
    // At 64 Hz and 32 snapshots a second the client draws between ticks two apart; a 16 ms frame
    // moves the view on by 16 / 15.625 ticks, past B: the next pair and a fraction near 0.26.
    const a = createUserCommand();
    a.sequence = 10;
    a.msec = 16;
    a.randomSeed = 7;
    a.viewTickA = 1000;
    a.viewTickB = 1002;
    a.viewFraction = 0.75;
    a.viewNewest = 1004;
    quantizeUserCommand(a);
    const b = copyUserCommand(createUserCommand(), a);
    b.sequence = 11;
    b.viewTickA = 1002;
    b.viewTickB = 1004;
    b.viewFraction = (0.75 * 2 + 16 / TICK_MS - 2) / 2;
    b.viewNewest = 1006;
    quantizeUserCommand(b);
    const m = new BitStream();
    m.beginMeasure();
    serializeCompactUserCommand(m, b, a, TICK_MS);
    // msec 1, pitch 1, yaw 1, input 1, seed 2, view ticks predicted 1, fraction 1 + 1 (a residual
    // of 0), newest unchanged 1.
    expect(m.bitsProcessed).toBe(1 + 1 + 1 + 1 + 2 + 1 + 2 + 1);
    // 41 steps off the prediction: a 13-bit exp-Golomb code (zigzag 82).
    const off = copyUserCommand(createUserCommand(), b);
    off.viewFraction += 41 / 4096;
    m.beginMeasure();
    serializeCompactUserCommand(m, off, a, TICK_MS);
    expect(m.bitsProcessed).toBe(1 + 1 + 1 + 1 + 2 + 1 + 1 + 13 + 1);
    const back = createUserCommand();
    back.sequence = b.sequence;
    const w = new BitStream();
    w.beginWrite();
    serializeCompactUserCommand(w, copyUserCommand(createUserCommand(), b), a, TICK_MS);
    const r = new BitStream();
    r.beginRead(w.bytes.slice());
    expect(serializeCompactUserCommand(r, back, a, TICK_MS)).toBe(true);
    expect(back).toEqual(b);
  });
});
