// How a remote entity is drawn between two snapshot frames. One function, used by the client to
// render and by the server to rewind (lag compensation), so both compute the same numbers.

import { decodeNumber, type EntityTypeSchema } from '../protocol/schema.ts';

/**
 * Writes into `out[outOffset ..]` the entity's values at fraction `f` from frame A to frame B,
 * given its stored integers in each (`a`/`b` at their offsets; null where the entity is not in
 * that frame) and its teleport parity in each:
 * - in both frames, same parity, moved no more than `teleportDistance`: each field by its kind
 *   ('linear' straight, 'angle' along the short arc, 'step' and non-interpolated fields take A's
 *   value until f reaches 1);
 * - a teleport between them (parity changed, or a jump beyond the distance), or only in B:
 *   B's values (never slide across a teleport);
 * - only in A (removed by B): A's values.
 * Returns false when the entity is in neither frame.
 */
export function blendEntity(
  type: EntityTypeSchema,
  a: Int32Array | null,
  aOffset: number,
  parityA: number,
  b: Int32Array | null,
  bOffset: number,
  parityB: number,
  f: number,
  teleportDistance: number,
  out: Float64Array,
  outOffset: number,
): boolean {
  if (a === null && b === null) return false;
  if (
    a === null ||
    b === null ||
    !interpolates(type, a, aOffset, parityA, b, bOffset, parityB, teleportDistance)
  ) {
    const src = b ?? (a as Int32Array);
    const off = b !== null ? bOffset : aOffset;
    const n = type.fieldCount;
    for (let i = 0; i < n; i++) out[outOffset + i] = decodeNumber(type, i, src[off + i]);
    return true;
  }
  blendFields(type, a, aOffset, b, bOffset, f, out, outOffset);
  return true;
}

/**
 * Whether blendEntity interpolates an entity held in both frames (same teleport parity, moved
 * no more than `teleportDistance`) rather than taking one frame's values, which do not depend
 * on the fraction.
 */
export function interpolates(
  type: EntityTypeSchema,
  a: Int32Array,
  aOffset: number,
  parityA: number,
  b: Int32Array,
  bOffset: number,
  parityB: number,
  teleportDistance: number,
): boolean {
  return parityA === parityB && !jumped(type, a, aOffset, b, bOffset, teleportDistance);
}

/**
 * blendEntity's interpolation of an entity `interpolates` holds in both frames, at fraction `f`:
 * every field ('linear' and 'angle' fields by blendField; the others take A's value until f
 * reaches 1, then B's). Returns the mask of the fields whose value changes with the fraction
 * (bit i for field i: a 'linear' or 'angle' field whose stored steps differ in A and B), the only
 * ones `blendChanging` need draw again for a view redrawn between the same two frames on the same
 * side of f = 1.
 */
export function blendFields(
  type: EntityTypeSchema,
  a: Int32Array,
  aOffset: number,
  b: Int32Array,
  bOffset: number,
  f: number,
  out: Float64Array,
  outOffset: number,
): number {
  // Each field's interpolation as its update predictor (schema.ts): 1 'linear', 2 'angle', 0 neither.
  const interp = type.predict;
  const n = type.fieldCount;
  let changing = 0;
  for (let i = 0; i < n; i++) {
    const qa = a[aOffset + i];
    const qb = b[bOffset + i];
    if (interp[i] === 0) {
      out[outOffset + i] = decodeNumber(type, i, f >= 1 ? qb : qa);
    } else {
      out[outOffset + i] = blendField(type, i, qa, qb, f);
      if (qa !== qb) changing |= 1 << i;
    }
  }
  return changing;
}

/**
 * The fields of mask `changing` (blendFields' result for the same entity and frames) at fraction
 * `f`, each as blendFields draws it; the entity's other fields are left as they were drawn.
 */
export function blendChanging(
  type: EntityTypeSchema,
  a: Int32Array,
  aOffset: number,
  b: Int32Array,
  bOffset: number,
  f: number,
  out: Float64Array,
  outOffset: number,
  changing: number,
): void {
  let m = changing;
  while (m !== 0) {
    const low = m & -m;
    const i = 31 - Math.clz32(low);
    m ^= low;
    out[outOffset + i] = blendField(type, i, a[aOffset + i], b[bOffset + i], f);
  }
}

/** Field i ('linear' or 'angle') at fraction f from stored steps qa to qb. */
function blendField(type: EntityTypeSchema, i: number, qa: number, qb: number, f: number): number {
  if (type.predict[i] === 1) {
    // In stored steps (integers), so that f = 0 and f = 1 give A's and B's values exactly.
    return decodeNumber(type, i, qa + (qb - qa) * f);
  }
  // In stored steps as well, m of them a turn: the short way round is the step count d in
  // (-m/2, m/2] (|qb - qa| < m), so no division or floor per field, and f = 0 and f = 1 give A's
  // and B's angles exactly (B's plus or minus 360 when the arc crosses 0).
  const m = type.hi[i] + 1;
  let d = qb - qa;
  if (d > m / 2) d -= m;
  else if (d <= -m / 2) d += m;
  return (qa + d * f) * type.decodeStep[i];
}

function jumped(
  type: EntityTypeSchema,
  a: Int32Array,
  aOff: number,
  b: Int32Array,
  bOff: number,
  limit: number,
): boolean {
  const ix = type.positionFields[0];
  const iy = type.positionFields[1];
  const iz = type.positionFields[2];
  if (ix < 0 || !(limit < Infinity)) return false;
  // The move in stored steps times the step (a position field is a float or an int: its step, or
  // 1): both sides decide a jump with this one function, so it need not decode both ends. The
  // step is read here, not returned by a helper: a number returned from a call the compiler did
  // not inline is a heap box, and the server's rewinds call this for every target.
  const kind = type.decodeKind;
  const step = type.decodeStep;
  const dx = (b[bOff + ix] - a[aOff + ix]) * (kind[ix] === 0 ? 1 : step[ix]);
  const dy = iy < 0 ? 0 : (b[bOff + iy] - a[aOff + iy]) * (kind[iy] === 0 ? 1 : step[iy]);
  const dz = iz < 0 ? 0 : (b[bOff + iz] - a[aOff + iz]) * (kind[iz] === 0 ? 1 : step[iz]);
  return dx * dx + dy * dy + dz * dz > limit * limit;
}

/**
 * The drawn-entity rule both sides apply, the client's view to draw and the server's rewind to
 * rebuild what was drawn: at fraction `f` from frame A to frame B, an entity is drawn when B
 * holds it, or when only A holds it and the view has not reached B. Blends a drawn entity into
 * `out` (see blendEntity) and returns true; returns false for one not drawn.
 */
export function drawEntity(
  type: EntityTypeSchema,
  a: Int32Array | null,
  aOffset: number,
  parityA: number,
  b: Int32Array | null,
  bOffset: number,
  parityB: number,
  f: number,
  teleportDistance: number,
  out: Float64Array,
  outOffset: number,
): boolean {
  if (b === null && (a === null || f >= 1)) return false;
  return blendEntity(type, a, aOffset, parityA, b, bOffset, parityB, f, teleportDistance, out, outOffset);
}
