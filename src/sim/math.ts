// Deterministic math for shared game code: only IEEE-exact operations (+ - * / % sqrt, floor,
// round), so client and server compute bit-identical results on every JavaScript engine.
// Math.sin/Math.cos are not specified to be exact and differ between engines; use these.

const DEG_TO_RAD = Math.PI / 180;

/** sin and cos of a radian angle |r| <= pi/4, Taylor series to x^17/x^16 (truncation < 1e-17). */
function sinKernel(r: number): number {
  const r2 = r * r;
  return (
    r *
    (1 +
      r2 *
        (-1 / 6 +
          r2 *
            (1 / 120 +
              r2 *
                (-1 / 5040 +
                  r2 *
                    (1 / 362880 +
                      r2 *
                        (-1 / 39916800 +
                          r2 * (1 / 6227020800 + r2 * (-1 / 1307674368000 + r2 * (1 / 355687428096000)))))))))
  );
}

function cosKernel(r: number): number {
  const r2 = r * r;
  return (
    1 +
    r2 *
      (-1 / 2 +
        r2 *
          (1 / 24 +
            r2 *
              (-1 / 720 +
                r2 *
                  (1 / 40320 +
                    r2 *
                      (-1 / 3628800 +
                        r2 * (1 / 479001600 + r2 * (-1 / 87178291200 + r2 * (1 / 20922789888000))))))))
  );
}

/**
 * Reduces degrees to a quadrant (0..3) and a remainder in [-45, 45] degrees. `%` is exact in
 * IEEE arithmetic, so the remainder is exact for every finite angle, however large or negative
 * (`+ 0` turns a -0 remainder into 0, so every multiple of 180 gives a sine of exactly 0).
 */
function reduce(degrees: number, out: { quadrant: number; rest: number }): void {
  const d = (degrees % 360) + 0;
  const q = Math.floor((d + 45) / 90);
  out.rest = d - 90 * q;
  out.quadrant = q & 3;
}

const scratch = { quadrant: 0, rest: 0 };

/** Deterministic sine of an angle in degrees (exactly +0 at multiples of 180, +-1 at 90 and 270). */
export function dsin(degrees: number): number {
  reduce(degrees, scratch);
  const r = scratch.rest * DEG_TO_RAD;
  switch (scratch.quadrant) {
    case 0:
      return sinKernel(r);
    case 1:
      return cosKernel(r);
    case 2:
      return 0 - sinKernel(r);
    default:
      return -cosKernel(r);
  }
}

/** Deterministic cosine of an angle in degrees (exactly +-1 at multiples of 180, +0 at 90 and 270). */
export function dcos(degrees: number): number {
  reduce(degrees, scratch);
  const r = scratch.rest * DEG_TO_RAD;
  switch (scratch.quadrant) {
    case 0:
      return cosKernel(r);
    case 1:
      return 0 - sinKernel(r);
    case 2:
      return -cosKernel(r);
    default:
      return sinKernel(r);
  }
}

/**
 * dsin and dcos of one angle in degrees, exactly their values, into `out[at]` and `out[at + 1]`:
 * one reduction for both, and neither result crosses a call as a number (which V8 boxes on the heap
 * when the call is not inlined: a server moves hundreds of players a tick).
 */
export function dsinCos(degrees: number, out: Float64Array, at = 0): void {
  reduce(degrees, scratch);
  const r = scratch.rest * DEG_TO_RAD;
  const s = sinKernel(r);
  const c = cosKernel(r);
  switch (scratch.quadrant) {
    case 0:
      out[at] = s;
      out[at + 1] = c;
      break;
    case 1:
      out[at] = c;
      out[at + 1] = 0 - s;
      break;
    case 2:
      out[at] = 0 - s;
      out[at + 1] = -c;
      break;
    default:
      out[at] = -c;
      out[at + 1] = s;
  }
}

/**
 * dsinCos of the angle in degrees at `values[at]`, written over it: the sine into `values[at]`
 * and the cosine into `values[at + 1]`. For an angle kept in an array, so that not even the angle
 * crosses a call as a number.
 */
export function dsinCosInPlace(values: Float64Array, at = 0): void {
  dsinCos(values[at], values, at);
}

export function clamp(value: number, min: number, max: number): number {
  if (value < min) return min;
  if (value > max) return max;
  return value;
}

/** Wraps an angle in degrees into (-180, 180]. */
export function wrapDegrees180(degrees: number): number {
  const d = degrees - 360 * Math.floor(degrees / 360);
  return d > 180 ? d - 360 : d;
}

/** Shortest signed difference b - a between two angles in degrees, in (-180, 180]. */
export function angleDelta(a: number, b: number): number {
  return wrapDegrees180(b - a);
}

/** Interpolates angles in degrees along the short arc. */
export function lerpAngle(a: number, b: number, t: number): number {
  return a + angleDelta(a, b) * t;
}

export function lerp(a: number, b: number, t: number): number {
  return a + (b - a) * t;
}

/** A mutable 3-vector; shared code keeps scratch vectors instead of allocating. */
export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

/**
 * The vectors `vec3` makes: a class, not an object literal. V8 gives object literals with the
 * same keys in the same order one shared tree of hidden classes, so a literal `{ x, y, z }` shares
 * its fields' representation with every other such literal in the program, an entity field table
 * `{ x: spec, y: spec, z: spec }` included; once one holds an object, every number stored in any
 * of them is boxed on the heap (an allocation per store). A class's instances have a tree of
 * their own, so their fields stay unboxed doubles.
 */
class Vector3 implements Vec3 {
  // `declare`: a declared field would be defined as undefined before the constructor runs (ES2022
  // class fields), which boxes its numbers just the same.
  declare x: number;
  declare y: number;
  declare z: number;
  constructor(x: number, y: number, z: number) {
    this.x = x;
    this.y = y;
    this.z = z;
  }
}

export function vec3(x = 0, y = 0, z = 0): Vec3 {
  return new Vector3(x, y, z);
}

export function copyVec3(out: Vec3, a: Vec3): Vec3 {
  out.x = a.x;
  out.y = a.y;
  out.z = a.z;
  return out;
}

export function dot(a: Vec3, b: Vec3): number {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}

export function length(a: Vec3): number {
  return Math.sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
}

/** angleVectors' sines and cosines (yaw, pitch, roll). */
const angleScratch = new Float64Array(6);

/**
 * Forward, right and up unit vectors for Quake-style angles (pitch, yaw, roll in degrees; yaw
 * about +z, pitch positive looking down). Any argument may be null.
 */
export function angleVectors(
  pitch: number,
  yaw: number,
  roll: number,
  forward: Vec3 | null,
  right: Vec3 | null,
  up: Vec3 | null,
): void {
  const t = angleScratch;
  dsinCos(yaw, t, 0);
  dsinCos(pitch, t, 2);
  dsinCos(roll, t, 4);
  const sy = t[0];
  const cy = t[1];
  const sp = t[2];
  const cp = t[3];
  const sr = t[4];
  const cr = t[5];
  if (forward) {
    forward.x = cp * cy;
    forward.y = cp * sy;
    forward.z = -sp;
  }
  if (right) {
    right.x = -1 * sr * sp * cy + -1 * cr * -sy;
    right.y = -1 * sr * sp * sy + -1 * cr * cy;
    right.z = -1 * sr * cp;
  }
  if (up) {
    up.x = cr * sp * cy + -sr * -sy;
    up.y = cr * sp * sy + -sr * cy;
    up.z = cr * cp;
  }
}
