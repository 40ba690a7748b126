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

import { type BitStream, quantizeAngle } from './bitstream.ts';

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

export function createUserCommand(): UserCommand {
  return {
    sequence: 0,
    msec: 0,
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
  };
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

/** msec: `bool` same as the base's; else `bool` short, then a step of -4..4 or the full 8 bits. */
function serializeMsecStep(s: BitStream, msec: number, baseMsec: number): number {
  if (s.bool(msec === baseMsec)) return baseMsec;
  const step = msec - baseMsec;
  const canStep = baseMsec >= CMD_MSEC_MIN && step >= -MSEC_STEP_MAX && step <= MSEC_STEP_MAX;
  if (s.bool(canStep)) {
    const v = baseMsec + s.int(step, -MSEC_STEP_MAX, MSEC_STEP_MAX);
    if (!(v >= CMD_MSEC_MIN && v <= CMD_MSEC_MAX)) s.fail('command msec step out of range');
    return v;
  }
  return s.int(msec, CMD_MSEC_MIN, CMD_MSEC_MAX);
}

/** A changed angle: `bool` short, then a step of -255..255 units from the base's (wrapped), or 16 bits. */
function serializeAngleStep(s: BitStream, angle: number, baseAngle: number): number {
  const units = Math.round((angle * ANGLE_UNITS) / 360);
  const baseUnits = Math.round((baseAngle * ANGLE_UNITS) / 360);
  let step = (units - baseUnits) % ANGLE_UNITS;
  if (step > ANGLE_UNITS / 2) step -= ANGLE_UNITS;
  else if (step < -ANGLE_UNITS / 2) step += ANGLE_UNITS;
  if (s.bool(step >= -ANGLE_STEP_MAX && step <= ANGLE_STEP_MAX)) {
    const d = s.int(step, -ANGLE_STEP_MAX, ANGLE_STEP_MAX);
    const u = (((baseUnits + d) % ANGLE_UNITS) + ANGLE_UNITS) % ANGLE_UNITS;
    return (u * 360) / ANGLE_UNITS;
  }
  return s.angle(angle, CMD_ANGLE_BITS);
}

function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

function unzigzag(z: number): number {
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

/**
 * Serializes `c` delta-encoded against `base` (the previous command in the packet, or a zero
 * command). The command must be quantized. Sequence is not written: the packet carries the
 * first sequence and the rest follow by +1. `compact` (command packets; demos keep the plain
 * form) writes msec as a small step from the base's when it can, and a changed angle as a step
 * of at most 255 units (of 65536 a turn) from the base's when it can.
 */
export function serializeUserCommand(
  s: BitStream,
  c: UserCommand,
  base: UserCommand,
  compact = false,
): boolean {
  if (!compact) {
    c.msec = s.int(c.msec, CMD_MSEC_MIN, CMD_MSEC_MAX);
    c.pitch = s.bool(c.pitch !== base.pitch) ? s.angle(c.pitch, CMD_ANGLE_BITS) : base.pitch;
    c.yaw = s.bool(c.yaw !== base.yaw) ? s.angle(c.yaw, CMD_ANGLE_BITS) : base.yaw;
    c.roll = s.bool(c.roll !== base.roll) ? s.angle(c.roll, CMD_ANGLE_BITS) : base.roll;
  } else {
    c.msec = serializeMsecStep(s, c.msec, base.msec);
    c.pitch = s.bool(c.pitch !== base.pitch) ? serializeAngleStep(s, c.pitch, base.pitch) : base.pitch;
    c.yaw = s.bool(c.yaw !== base.yaw) ? serializeAngleStep(s, c.yaw, base.yaw) : base.yaw;
    c.roll = s.bool(c.roll !== base.roll) ? serializeAngleStep(s, c.roll, base.roll) : base.roll;
  }
  c.forwardMove = s.bool(c.forwardMove !== base.forwardMove)
    ? s.int(c.forwardMove, -CMD_MOVE_MAX, CMD_MOVE_MAX)
    : base.forwardMove;
  c.sideMove = s.bool(c.sideMove !== base.sideMove)
    ? s.int(c.sideMove, -CMD_MOVE_MAX, CMD_MOVE_MAX)
    : base.sideMove;
  c.upMove = s.bool(c.upMove !== base.upMove) ? s.int(c.upMove, -CMD_MOVE_MAX, CMD_MOVE_MAX) : base.upMove;
  c.buttons = s.bool(c.buttons !== base.buttons) ? s.uint(c.buttons, 16) : base.buttons;
  c.impulse = s.bool(c.impulse !== base.impulse) ? s.uint(c.impulse, 8) : base.impulse;
  if (s.bool(c.randomSeed !== base.randomSeed)) {
    const next = nextRandomSeed(base.randomSeed);
    c.randomSeed = s.bool(c.randomSeed === next) ? next : s.uint(c.randomSeed, 32);
  } else {
    c.randomSeed = base.randomSeed;
  }
  c.lerpMsec = s.bool(c.lerpMsec !== base.lerpMsec) ? s.int(c.lerpMsec, 0, CMD_LERP_MSEC_MAX) : base.lerpMsec;
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
  c.viewFraction = s.bool(c.viewFraction !== base.viewFraction)
    ? s.int(c.viewFraction * CMD_VIEW_FRACTION_STEPS, 0, CMD_VIEW_FRACTION_MAX * CMD_VIEW_FRACTION_STEPS) /
      CMD_VIEW_FRACTION_STEPS
    : base.viewFraction;
  const baseNewest = base.viewNewest - base.viewTickB;
  const newest = s.bool(c.viewNewest - c.viewTickB !== baseNewest)
    ? s.int(c.viewNewest - c.viewTickB, 0, CMD_VIEW_NEWEST_MAX)
    : baseNewest;
  c.viewNewest = c.viewTickB + newest;
  return s.ok;
}
