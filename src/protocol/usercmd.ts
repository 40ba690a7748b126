// The user command (the paper's usercmd_t): one frame of a player's input, and its wire codec.
//
// A client packet carries a run of consecutive commands, newest last, each delta-encoded
// against the one before it (the first against an all-zero command), so repeating the unacked
// ones costs a few bits each. Layout of one command (every field but sequence/msec is
// "changed bit, then value if changed"):
//
//   +------------------+-----------------------------------------------------------+
//   | msec        8    | 1..250 ms of simulation this command covers                |
//   | pitch    1+16    | degrees, 16-bit angle                                      |
//   | yaw      1+16    | degrees, 16-bit angle                                      |
//   | roll     1+16    | degrees, 16-bit angle                                      |
//   | forward   1+8    | int -127..127                                              |
//   | side      1+8    | int -127..127                                              |
//   | up        1+8    | int -127..127                                              |
//   | buttons  1+16    | bit field                                                  |
//   | impulse   1+8    | 0 none, else weapon select or other one-shot action        |
//   | seed   1+1(+32)  | shared random seed for spread: 1 = the base's successor    |
//   |                  | (nextRandomSeed), 0 = 32 explicit bits follow              |
//   | lerpMsec 1+10    | interpolation delay the client used, 0..1000 ms            |
//   | viewTickA 1+var  | server tick of the older snapshot the client drew from     |
//   | viewDelta 1+8    | viewTickB - viewTickA, 0..255                              |
//   | viewFrac 1+15    | fraction from A to B, 0..4 in steps of 1/4096 (>1: the     |
//   |                  | client was extrapolating past B)                           |
//   | viewNewest 1+8   | newest tick received - viewTickB, 0..255                   |
//   +------------------+-----------------------------------------------------------+
// The view tick is written absolute (32 bits) when the base's view tick is 0 (the first command),
// else as the difference from the base's, wrapped to a signed 32-bit integer (zigzag varuint,
// 8..40 bits); the reader adds it to the base's and wraps the sum to 32 bits. An unchanged
// command costs 22 bits (msec and 14 unchanged bits).

import { checkRingSize } from '../sim/ring.ts';
import { type BitStream, quantizeAngle, serializeExpGolomb } from './bitstream.ts';

export const CMD_MSEC_MIN = 1;
export const CMD_MSEC_MAX = 250;
export const CMD_MOVE_MAX = 127;
export const CMD_ANGLE_BITS = 16;
export const CMD_LERP_MSEC_MAX = 1000;
export const CMD_VIEW_FRACTION_STEPS = 4096;
/**
 * Largest view fraction: past 1 the client was extrapolating beyond frame B (capped in time by
 * its view; at most three intervals A..B past B on the wire).
 */
export const CMD_VIEW_FRACTION_MAX = 4;
export const CMD_VIEW_DELTA_MAX = 255;
/** Largest `viewNewest - viewTickB` on the wire. */
export const CMD_VIEW_NEWEST_MAX = 255;

export interface UserCommand {
  /** Command number, counting from 1 per connection (never wraps in practice: 2^32 commands). */
  sequence: number;
  /** Simulated duration of this command in milliseconds (1..250). */
  msec: number;
  /** View angles in degrees (quantized to 16 bits). */
  pitch: number;
  yaw: number;
  roll: number;
  /** Movement intents, -127..127 (full speed is 127). */
  forwardMove: number;
  sideMove: number;
  upMove: number;
  /** Buttons held, a bit field (the game names the bits). */
  buttons: number;
  /** One-shot action, 0 for none (weapon select, etc.). */
  impulse: number;
  /** Shared random seed (32-bit) for spread, so the client predicts the same pellets. */
  randomSeed: number;
  /** Interpolation delay the client was rendering with, milliseconds. */
  lerpMsec: number;
  /** The view the client drew: remote entities interpolated between these server ticks. */
  viewTickA: number;
  viewTickB: number;
  /** Fraction from viewTickA to viewTickB, a multiple of 1/4096 in [0, 4] (past 1: extrapolated). */
  viewFraction: number;
  /**
   * The newest server tick the client had received when it made this command (the frame its
   * view could have been drawn from at the latest), within [viewTickB, viewTickB + 255]. The
   * view acceptance rule (src/sim/view-acceptance.ts) measures the view against it.
   */
  viewNewest: number;
}

/**
 * A command of zeros. Each field is first set to a fraction, then to 0: V8 lays out an object's
 * number field as a small integer until a value that is not one (a fraction, -0, a seed past
 * 2^31) is stored in it, then changes the layout of every object of that shape to hold the field
 * as a boxed double, moving each old object to the new layout only when code next touches it.
 * Commands in rings touched once a lap moved over for the whole of a long run, a heap that grew
 * by a number box at a time (about 0.1 MB an hour at 128 players). Born with the layout they end
 * with, they never move.
 */
export function createUserCommand(): UserCommand {
  const c: UserCommand = {
    sequence: 0.5,
    msec: 0.5,
    pitch: 0.5,
    yaw: 0.5,
    roll: 0.5,
    forwardMove: 0.5,
    sideMove: 0.5,
    upMove: 0.5,
    buttons: 0.5,
    impulse: 0.5,
    randomSeed: 0.5,
    lerpMsec: 0.5,
    viewTickA: 0.5,
    viewTickB: 0.5,
    viewFraction: 0.5,
    viewNewest: 0.5,
  };
  c.sequence = 0;
  c.msec = 0;
  c.pitch = 0;
  c.yaw = 0;
  c.roll = 0;
  c.forwardMove = 0;
  c.sideMove = 0;
  c.upMove = 0;
  c.buttons = 0;
  c.impulse = 0;
  c.randomSeed = 0;
  c.lerpMsec = 0;
  c.viewTickA = 0;
  c.viewTickB = 0;
  c.viewFraction = 0;
  c.viewNewest = 0;
  return c;
}

export function copyUserCommand(out: UserCommand, c: UserCommand): UserCommand {
  out.sequence = c.sequence;
  out.msec = c.msec;
  out.pitch = c.pitch;
  out.yaw = c.yaw;
  out.roll = c.roll;
  out.forwardMove = c.forwardMove;
  out.sideMove = c.sideMove;
  out.upMove = c.upMove;
  out.buttons = c.buttons;
  out.impulse = c.impulse;
  out.randomSeed = c.randomSeed;
  out.lerpMsec = c.lerpMsec;
  out.viewTickA = c.viewTickA;
  out.viewTickB = c.viewTickB;
  out.viewFraction = c.viewFraction;
  out.viewNewest = c.viewNewest;
  return out;
}

/** Numbers a CommandRing keeps per command: every UserCommand field. */
const RING_FIELDS = 16;

/**
 * User commands by number in one Float64Array (RING_FIELDS numbers each) for queues that hold
 * hundreds per client. A UserCommand object keeps each fractional field (angles, view fraction,
 * a number past 2^30) in a number box of its own elsewhere on the heap, so copying into a slot
 * untouched for seconds cost about as many cache misses as fields; here a command is two
 * adjacent cache lines, its number first (the slot's tag). `size` is a power of two; any number up
 * to 2^32 is a key.
 */
export class CommandRing {
  readonly size: number;
  private readonly mask: number;
  /** A slot's first number is the number of the command it holds (-1: none), read as its tag. */
  private readonly values: Float64Array;

  constructor(size: number) {
    checkRingSize('CommandRing', size);
    this.size = size;
    this.mask = size - 1;
    this.values = new Float64Array(size * RING_FIELDS);
    for (let o = 0; o < this.values.length; o += RING_FIELDS) this.values[o] = -1;
  }

  has(sequence: number): boolean {
    return this.values[(sequence & this.mask) * RING_FIELDS] === sequence;
  }

  /** Stores `cmd` under its number, replacing whatever its slot held. */
  put(cmd: UserCommand): void {
    const slot = cmd.sequence & this.mask;
    const v = this.values;
    const o = slot * RING_FIELDS;
    v[o] = cmd.sequence;
    v[o + 1] = cmd.msec;
    v[o + 2] = cmd.pitch;
    v[o + 3] = cmd.yaw;
    v[o + 4] = cmd.roll;
    v[o + 5] = cmd.forwardMove;
    v[o + 6] = cmd.sideMove;
    v[o + 7] = cmd.upMove;
    v[o + 8] = cmd.buttons;
    v[o + 9] = cmd.impulse;
    v[o + 10] = cmd.randomSeed;
    v[o + 11] = cmd.lerpMsec;
    v[o + 12] = cmd.viewTickA;
    v[o + 13] = cmd.viewTickB;
    v[o + 14] = cmd.viewFraction;
    v[o + 15] = cmd.viewNewest;
  }

  /** Copies command `sequence` into `out` and returns it, or undefined (out untouched) when not held. */
  read(sequence: number, out: UserCommand): UserCommand | undefined {
    const v = this.values;
    const o = (sequence & this.mask) * RING_FIELDS;
    if (v[o] !== sequence) return undefined;
    out.sequence = v[o];
    out.msec = v[o + 1];
    out.pitch = v[o + 2];
    out.yaw = v[o + 3];
    out.roll = v[o + 4];
    out.forwardMove = v[o + 5];
    out.sideMove = v[o + 6];
    out.upMove = v[o + 7];
    out.buttons = v[o + 8];
    out.impulse = v[o + 9];
    out.randomSeed = v[o + 10];
    out.lerpMsec = v[o + 11];
    out.viewTickA = v[o + 12];
    out.viewTickB = v[o + 13];
    out.viewFraction = v[o + 14];
    out.viewNewest = v[o + 15];
    return out;
  }

  /** msec of command `sequence`, or -1 when not held. */
  msec(sequence: number): number {
    const o = (sequence & this.mask) * RING_FIELDS;
    return this.values[o] === sequence ? this.values[o + 1] : -1;
  }

  /** Forgets command `sequence` (nothing when its slot holds another). */
  remove(sequence: number): void {
    const o = (sequence & this.mask) * RING_FIELDS;
    if (this.values[o] === sequence) this.values[o] = -1;
  }
}

/** Quantizes a view fraction to the wire's 1/4096 steps. */
export function quantizeViewFraction(f: number): number {
  const max = CMD_VIEW_FRACTION_MAX * CMD_VIEW_FRACTION_STEPS;
  let q = Math.round(f * CMD_VIEW_FRACTION_STEPS);
  if (!(q > 0)) q = 0;
  if (q > max) q = max;
  return q / CMD_VIEW_FRACTION_STEPS;
}

/**
 * Rounds to an integer and clamps; NaN counts as 0 (so a NaN move is no move, not full speed
 * backwards), and `+ 0` turns -0 into 0, which is what the wire decodes.
 */
function clampInt(v: number, min: number, max: number): number {
  if (Number.isNaN(v)) v = 0;
  if (v < min) return min;
  if (v > max) return max;
  return Math.round(v) + 0;
}

/**
 * Puts a command into the exact form the wire carries (the client does this before predicting
 * it, so client and server run the same numbers). Out-of-range values are clamped, NaN becomes
 * 0 (or the field's minimum), angles wrap into [0, 360), viewTickB is kept within
 * [viewTickA, viewTickA + 255] and viewNewest within [viewTickB, viewTickB + 255]. Quantizing twice changes nothing.
 */
export function quantizeUserCommand(c: UserCommand): void {
  c.msec = clampInt(c.msec, CMD_MSEC_MIN, CMD_MSEC_MAX);
  c.pitch = quantizeAngle(c.pitch, CMD_ANGLE_BITS);
  c.yaw = quantizeAngle(c.yaw, CMD_ANGLE_BITS);
  c.roll = quantizeAngle(c.roll, CMD_ANGLE_BITS);
  c.forwardMove = clampInt(c.forwardMove, -CMD_MOVE_MAX, CMD_MOVE_MAX);
  c.sideMove = clampInt(c.sideMove, -CMD_MOVE_MAX, CMD_MOVE_MAX);
  c.upMove = clampInt(c.upMove, -CMD_MOVE_MAX, CMD_MOVE_MAX);
  c.buttons = clampInt(c.buttons, 0, 0xffff);
  c.impulse = clampInt(c.impulse, 0, 255);
  c.randomSeed = c.randomSeed >>> 0;
  c.lerpMsec = clampInt(c.lerpMsec, 0, CMD_LERP_MSEC_MAX);
  c.viewTickA = clampInt(c.viewTickA, 0, 0xffffffff);
  c.viewTickB = clampInt(c.viewTickB, c.viewTickA, c.viewTickA + CMD_VIEW_DELTA_MAX);
  c.viewFraction = quantizeViewFraction(c.viewFraction);
  c.viewNewest = clampInt(c.viewNewest, c.viewTickB, c.viewTickB + CMD_VIEW_NEWEST_MAX);
}

/**
 * The seed that follows `seed` (an integer hash). A client that takes each command's seed from the
 * previous one this way sends two bits per seed instead of 32.
 */
export function nextRandomSeed(seed: number): number {
  let h = (seed + 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Largest msec step written short (compact form): 4 bits for -4..4. */
const MSEC_STEP_MAX = 4;
/** Largest angle step written short (compact form), in units of 1/65536 turn: 1 + 9 bits. */
const ANGLE_STEP_MAX = 255;
const ANGLE_UNITS = 2 ** CMD_ANGLE_BITS;

/**
 * msec: `bool` same as the base's; else `bool` a step of one, then its sign; else `bool` short,
 * then a step of -4..4 or the full 8 bits.
 */
function serializeMsecStep(s: BitStream, msec: number, baseMsec: number): number {
  if (s.bool(msec === baseMsec)) {
    if (!(baseMsec >= CMD_MSEC_MIN)) s.fail('command msec out of range');
    return baseMsec;
  }
  const step = msec - baseMsec;
  // A frame time alternating around a whole number of ms (16.7 ms at 60 Hz) steps by one.
  if (s.bool(baseMsec >= CMD_MSEC_MIN && (step === 1 || step === -1))) {
    const v = baseMsec + (s.bool(step > 0) ? 1 : -1);
    if (!(v >= CMD_MSEC_MIN && v <= CMD_MSEC_MAX)) s.fail('command msec step out of range');
    return v;
  }
  const canStep = baseMsec >= CMD_MSEC_MIN && step >= -MSEC_STEP_MAX && step <= MSEC_STEP_MAX;
  if (s.bool(canStep)) {
    const v = baseMsec + s.int(step, -MSEC_STEP_MAX, MSEC_STEP_MAX);
    if (!(v >= CMD_MSEC_MIN && v <= CMD_MSEC_MAX)) s.fail('command msec step out of range');
    return v;
  }
  return s.int(msec, CMD_MSEC_MIN, CMD_MSEC_MAX);
}

/** Which view angle of a command serializeAngleField carries. */
const PITCH = 0;
const YAW = 1;
const ROLL = 2;

/**
 * One view angle of `c` (`which`: PITCH, YAW or ROLL) against `base`'s: `bool` changed; if so,
 * `bool` short, then a step of -255..255 units from the base's (wrapped), or 16 bits. The angle is
 * read from and written to the command's field here, so no angle crosses a call as a number (V8
 * puts each one that does in a heap box of its own: a server reads a thousand commands a tick).
 */
function serializeAngleField(s: BitStream, c: UserCommand, base: UserCommand, which: number): void {
  const angle = which === PITCH ? c.pitch : which === YAW ? c.yaw : c.roll;
  const baseAngle = which === PITCH ? base.pitch : which === YAW ? base.yaw : base.roll;
  let v = baseAngle;
  if (s.bool(angle !== baseAngle)) {
    const units = Math.round((angle * ANGLE_UNITS) / 360);
    const baseUnits = Math.round((baseAngle * ANGLE_UNITS) / 360);
    let step = (units - baseUnits) % ANGLE_UNITS;
    if (step > ANGLE_UNITS / 2) step -= ANGLE_UNITS;
    else if (step < -ANGLE_UNITS / 2) step += ANGLE_UNITS;
    if (s.bool(step >= -ANGLE_STEP_MAX && step <= ANGLE_STEP_MAX)) {
      const d = s.int(step, -ANGLE_STEP_MAX, ANGLE_STEP_MAX);
      const u = (((baseUnits + d) % ANGLE_UNITS) + ANGLE_UNITS) % ANGLE_UNITS;
      v = (u * 360) / ANGLE_UNITS;
    } else {
      // The angle whole: its units wrapped into [0, ANGLE_UNITS), the bits BitStream.angle gives a
      // quantized angle, passed as the whole number they are.
      const q = s.uint(((units % ANGLE_UNITS) + ANGLE_UNITS) % ANGLE_UNITS, CMD_ANGLE_BITS);
      v = (q * 360) / ANGLE_UNITS;
    }
  }
  if (which === PITCH) c.pitch = v;
  else if (which === YAW) c.yaw = v;
  else c.roll = v;
}

function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

function unzigzag(z: number): number {
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

/**
 * Serializes `c` delta-encoded against `base` (the previous command, or a zero command): the plain
 * form, kept by demos. The command must be quantized. Sequence is not written: the caller carries
 * it. Command packets use the compact form (`serializeCompactUserCommand`).
 */
export function serializeUserCommand(s: BitStream, c: UserCommand, base: UserCommand): boolean {
  c.msec = s.int(c.msec, CMD_MSEC_MIN, CMD_MSEC_MAX);
  c.pitch = s.bool(c.pitch !== base.pitch) ? s.angle(c.pitch, CMD_ANGLE_BITS) : base.pitch;
  c.yaw = s.bool(c.yaw !== base.yaw) ? s.angle(c.yaw, CMD_ANGLE_BITS) : base.yaw;
  c.roll = s.bool(c.roll !== base.roll) ? s.angle(c.roll, CMD_ANGLE_BITS) : base.roll;
  serializeInput(s, c, base);
  if (s.bool(c.randomSeed !== base.randomSeed)) {
    const next = nextRandomSeed(base.randomSeed);
    c.randomSeed = s.bool(c.randomSeed === next) ? next : s.uint(c.randomSeed, 32);
  } else {
    c.randomSeed = base.randomSeed;
  }
  c.lerpMsec = s.bool(c.lerpMsec !== base.lerpMsec) ? s.int(c.lerpMsec, 0, CMD_LERP_MSEC_MAX) : base.lerpMsec;
  serializeViewTicks(s, c, base);
  c.viewFraction = s.bool(c.viewFraction !== base.viewFraction)
    ? s.int(c.viewFraction * CMD_VIEW_FRACTION_STEPS, 0, FRACTION_MAX_STEPS) / CMD_VIEW_FRACTION_STEPS
    : base.viewFraction;
  serializeViewNewest(s, c, base);
  return s.ok;
}

/** Moves, buttons and impulse: each a changed bit, then its value if changed. */
function serializeInput(s: BitStream, c: UserCommand, base: UserCommand): void {
  c.forwardMove = s.bool(c.forwardMove !== base.forwardMove)
    ? s.int(c.forwardMove, -CMD_MOVE_MAX, CMD_MOVE_MAX)
    : base.forwardMove;
  c.sideMove = s.bool(c.sideMove !== base.sideMove)
    ? s.int(c.sideMove, -CMD_MOVE_MAX, CMD_MOVE_MAX)
    : base.sideMove;
  c.upMove = s.bool(c.upMove !== base.upMove) ? s.int(c.upMove, -CMD_MOVE_MAX, CMD_MOVE_MAX) : base.upMove;
  c.buttons = s.bool(c.buttons !== base.buttons) ? s.uint(c.buttons, 16) : base.buttons;
  c.impulse = s.bool(c.impulse !== base.impulse) ? s.uint(c.impulse, 8) : base.impulse;
}

/** The view ticks: A changed (absolute against a base without a view, else a wrapped signed difference), B - A changed. */
function serializeViewTicks(s: BitStream, c: UserCommand, base: UserCommand): void {
  if (s.bool(c.viewTickA !== base.viewTickA)) {
    if (base.viewTickA === 0) {
      c.viewTickA = s.uint(c.viewTickA, 32);
    } else {
      const d = unzigzag(s.varuint(zigzag((c.viewTickA - base.viewTickA) | 0)));
      c.viewTickA = (base.viewTickA + d) >>> 0;
    }
  } else {
    c.viewTickA = base.viewTickA;
  }
  const baseDelta = base.viewTickB - base.viewTickA;
  const delta = s.bool(c.viewTickB - c.viewTickA !== baseDelta)
    ? s.int(c.viewTickB - c.viewTickA, 0, CMD_VIEW_DELTA_MAX)
    : baseDelta;
  c.viewTickB = c.viewTickA + delta;
}

/** viewNewest - viewTickB: changed bit, then 0..255. */
function serializeViewNewest(s: BitStream, c: UserCommand, base: UserCommand): void {
  const baseNewest = base.viewNewest - base.viewTickB;
  const newest = s.bool(c.viewNewest - c.viewTickB !== baseNewest)
    ? s.int(c.viewNewest - c.viewTickB, 0, CMD_VIEW_NEWEST_MAX)
    : baseNewest;
  c.viewNewest = c.viewTickB + newest;
}

/** Largest view fraction on the wire, in steps of 1/4096. */
const FRACTION_MAX_STEPS = CMD_VIEW_FRACTION_MAX * CMD_VIEW_FRACTION_STEPS;
/** Largest view fraction residual written short (compact form), in steps. */
const FRACTION_RESIDUAL_MAX = 255;
const LAST_TICK = 0xffffffff;

/**
 * Where the view of command `sequence` is expected to be, from its base: the base's view moved on
 * by the base's msec for each command between them (the view a command names is the one drawn the
 * frame before it was made, so the view advances by the previous commands' durations). Sets
 * `viewPrediction` to the position in ticks and the pair of ticks around it (the base's pair, or,
 * once the position passed B, the pair as many spacings on). Both ends compute it with the same
 * IEEE arithmetic.
 */
function predictView(base: UserCommand, sequence: number, tickMs: number): void {
  const p = viewPrediction;
  const span = base.viewTickB - base.viewTickA;
  const steps = Math.min(sequence - base.sequence, MAX_PREDICTED_STEPS);
  p.at = base.viewTickA + base.viewFraction * span + (steps * base.msec) / tickMs;
  p.tickA = base.viewTickA;
  p.tickB = base.viewTickB;
  if (span > 0 && p.at >= base.viewTickB) {
    p.tickA = base.viewTickA + Math.floor((p.at - base.viewTickA) / span) * span;
    p.tickB = p.tickA + span;
  }
}

/** Commands a view prediction moves on by at most (a base is at most 255 before its command). */
const MAX_PREDICTED_STEPS = 255;
const viewPrediction = { at: 0, tickA: 0, tickB: 0 };

/**
 * Serializes `c` delta-encoded against `base` in the compact form of command packets (SPEC.md
 * section 6): msec as a small step from the base's; a changed angle as a step of at most 255 units
 * (of 65536 a turn); roll, moves, buttons, impulse and lerpMsec in one bit when all are the base's;
 * the seed in one bit when it is the base's successor once per command between them; the view ticks in one bit when they are
 * where the base's view moved on by its msec per command between them at `tickMs` a server tick
 * (`predictView`), and the view fraction as a residual of at most 255 steps from that position
 * (an exp-Golomb code: 1 bit when exact), or unchanged (a view held), or whole.
 * `c.sequence` and `base.sequence` must be set (the run sets them before reading). The command must be
 * quantized; a read fails (returns false) on any value out of its range.
 */
export function serializeCompactUserCommand(
  s: BitStream,
  c: UserCommand,
  base: UserCommand,
  tickMs: number,
): boolean {
  c.msec = serializeMsecStep(s, c.msec, base.msec);
  serializeAngleField(s, c, base, PITCH);
  serializeAngleField(s, c, base, YAW);
  const sameInput =
    c.roll === base.roll &&
    c.forwardMove === base.forwardMove &&
    c.sideMove === base.sideMove &&
    c.upMove === base.upMove &&
    c.buttons === base.buttons &&
    c.impulse === base.impulse &&
    c.lerpMsec === base.lerpMsec;
  if (s.bool(sameInput)) {
    c.roll = base.roll;
    c.forwardMove = base.forwardMove;
    c.sideMove = base.sideMove;
    c.upMove = base.upMove;
    c.buttons = base.buttons;
    c.impulse = base.impulse;
    c.lerpMsec = base.lerpMsec;
  } else {
    serializeAngleField(s, c, base, ROLL);
    serializeInput(s, c, base);
    c.lerpMsec = s.bool(c.lerpMsec !== base.lerpMsec)
      ? s.int(c.lerpMsec, 0, CMD_LERP_MSEC_MAX)
      : base.lerpMsec;
  }
  // Each command's seed is its predecessor's successor: the base's, moved on once per command.
  let next = base.randomSeed;
  const seedSteps =
    c.sequence > base.sequence ? Math.min(c.sequence - base.sequence, MAX_PREDICTED_STEPS) : 1;
  for (let i = 0; i < seedSteps; i++) next = nextRandomSeed(next);
  if (s.bool(c.randomSeed === next)) c.randomSeed = next;
  else c.randomSeed = s.bool(c.randomSeed === base.randomSeed) ? base.randomSeed : s.uint(c.randomSeed, 32);
  const canPredict = tickMs > 0 && base.viewTickB > 0 && c.sequence > base.sequence;
  const p = viewPrediction;
  if (canPredict) predictView(base, c.sequence, tickMs);
  const predicted = canPredict && p.tickB <= LAST_TICK && c.viewTickA === p.tickA && c.viewTickB === p.tickB;
  if (canPredict && p.tickB <= LAST_TICK && s.bool(predicted)) {
    c.viewTickA = p.tickA;
    c.viewTickB = p.tickB;
  } else {
    serializeViewTicks(s, c, base);
  }
  let guess = Math.round(base.viewFraction * CMD_VIEW_FRACTION_STEPS);
  const span = c.viewTickB - c.viewTickA;
  if (canPredict && span > 0) {
    guess = Math.round(((p.at - c.viewTickA) / span) * CMD_VIEW_FRACTION_STEPS);
    if (!(guess > 0)) guess = 0;
    else if (guess > FRACTION_MAX_STEPS) guess = FRACTION_MAX_STEPS;
  }
  const steps = Math.round(c.viewFraction * CMD_VIEW_FRACTION_STEPS);
  const residual = steps - guess;
  let v: number;
  if (s.bool(residual >= -FRACTION_RESIDUAL_MAX && residual <= FRACTION_RESIDUAL_MAX)) {
    v = guess + unzigzag(serializeExpGolomb(s, zigzag(residual), 2 * FRACTION_RESIDUAL_MAX));
    if (!(v >= 0 && v <= FRACTION_MAX_STEPS)) s.fail('command view fraction out of range');
  } else if (s.bool(c.viewFraction === base.viewFraction)) {
    v = Math.round(base.viewFraction * CMD_VIEW_FRACTION_STEPS);
  } else {
    v = s.int(steps, 0, FRACTION_MAX_STEPS);
  }
  c.viewFraction = v / CMD_VIEW_FRACTION_STEPS;
  serializeViewNewest(s, c, base);
  return s.ok;
}
