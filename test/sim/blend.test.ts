// Unit tests of blendEntity, the one function that draws a remote entity between two frames on the client and rewinds it on the server.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PLAYER_ENTITY } from '../../games/arena/shared/entities.ts';
import { decodeNumber, defineEntityType, encodeField, type FieldTable } from '../../src/protocol/schema.ts';
import { blendEntity } from '../../src/sim/blend.ts';

const SEED = Number(process.env.SEED ?? 0xb1e4d);

interface Mover {
  x: number;
  y: number;
  z: number;
  yaw: number;
  frame: number;
  weapon: number;
  health: number;
  speed: number;
  roll: number;
  alive: boolean;
}

/** Every kind of field with every interpolation it can have. */
const mover = defineEntityType<Mover>('mover', {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
  y: { kind: 'float', min: -1000, max: 1000, precision: 0.01 },
  z: { kind: 'float', min: -1024, max: 1024, precision: 0.1 },
  yaw: { kind: 'angle', bits: 16 },
  frame: { kind: 'int', min: -100, max: 1000, interp: 'linear' },
  weapon: { kind: 'int', min: 0, max: 15, interp: 'step' },
  health: { kind: 'int', min: -50, max: 200 },
  speed: { kind: 'float', min: 0, max: 1000, precision: 0.5, interp: 'none' },
  roll: { kind: 'angle', bits: 8, interp: 'none' },
  alive: { kind: 'bool' },
} satisfies FieldTable<Mover>);

const N = mover.fieldCount;
const X = mover.index.x;
const Y = mover.index.y;
const Z = mover.index.z;
const YAW = mover.index.yaw;
const FRAME = mover.index.frame;
const LINEAR = [X, Y, Z, FRAME];
/** Fields that take A's value until f reaches 1: 'step' and every non-interpolated one. */
const STEPPED = mover.fieldNames
  .map((_, i) => i)
  .filter((i) => mover.fields[i].interp === 'step' || mover.fields[i].interp === 'none');

/** Stored values of a mover from decoded values (quantized as the wire does). */
function stored(v: Partial<Mover>): Int32Array {
  const out = new Int32Array(N);
  const full: Mover = {
    x: 0,
    y: 0,
    z: 0,
    yaw: 0,
    frame: 0,
    weapon: 0,
    health: 0,
    speed: 0,
    roll: 0,
    alive: false,
    ...v,
  };
  mover.fieldNames.forEach((name, i) => {
    out[i] = encodeField(mover, i, full[name]);
  });
  return out;
}

function decoded(q: Int32Array, offset = 0): number[] {
  return Array.from({ length: N }, (_, i) => decodeNumber(mover, i, q[offset + i]));
}

/** blendEntity on whole arrays at offset 0, same parity, no teleport distance. */
function blend(a: Int32Array | null, b: Int32Array | null, f: number, teleportDistance = Infinity): number[] {
  const out = new Float64Array(N).fill(Number.NaN);
  expect(blendEntity(mover, a, 0, 0, b, 0, 0, f, teleportDistance, out, 0)).toBe(true);
  return Array.from(out);
}

/** Random stored values of a mover, every field within its range. */
const storedValues = fc
  .tuple(...mover.fields.map((f) => fc.integer({ min: f.lo, max: f.hi })))
  .map((v) => Int32Array.from(v));

const A = stored({
  x: 100,
  y: 12.34,
  z: -7.5,
  yaw: 337.5,
  frame: 10,
  weapon: 2,
  health: 100,
  speed: 250,
  roll: 90,
  alive: true,
});
const B = stored({
  x: 164,
  y: -3.21,
  z: 22.4,
  yaw: 22.5,
  frame: 30,
  weapon: 5,
  health: 40,
  speed: 320,
  roll: 180,
  alive: false,
});

describe('decodeNumber', () => {
  it('gives the value each kind of stored integer stands for', () => {
    expect(decodeNumber(mover, X, encodeField(mover, X, 100.5))).toBe(100.5);
    expect(decodeNumber(mover, YAW, 16384)).toBe(90);
    expect(decodeNumber(mover, FRAME, -7)).toBe(-7);
    expect(decodeNumber(mover, mover.index.alive, 1)).toBe(1);
  });

  it('a fractional step lies that far between the two steps', () => {
    expect(decodeNumber(mover, X, encodeField(mover, X, 100) + 0.5)).toBe(100 + 1 / 64);
  });
});

describe('blendEntity between two frames', () => {
  it('linear fields are exactly A at f = 0 and exactly B at f = 1, whatever their precision', () => {
    fc.assert(
      fc.property(storedValues, storedValues, (a, b) => {
        const at0 = blend(a, b, 0);
        const at1 = blend(a, b, 1);
        for (const i of LINEAR) {
          expect(at0[i], `seed ${SEED} field ${i}`).toBe(decodeNumber(mover, i, a[i]));
          expect(at1[i], `seed ${SEED} field ${i}`).toBe(decodeNumber(mover, i, b[i]));
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('linear fields move straight and monotonically from A to B in between', () => {
    fc.assert(
      fc.property(storedValues, storedValues, fc.double({ min: 0, max: 1, noNaN: true }), (a, b, f) => {
        const out = blend(a, b, f);
        const later = blend(a, b, Math.min(1, f + 1 / 64));
        for (const i of LINEAR) {
          const va = decodeNumber(mover, i, a[i]);
          const vb = decodeNumber(mover, i, b[i]);
          const at = `seed ${SEED} field ${i} f ${f}`;
          expect(out[i], at).toBeCloseTo(va + (vb - va) * f, 6);
          expect(out[i], at).toBeGreaterThanOrEqual(Math.min(va, vb));
          expect(out[i], at).toBeLessThanOrEqual(Math.max(va, vb));
          if (vb >= va) expect(later[i], at).toBeGreaterThanOrEqual(out[i]);
          else expect(later[i], at).toBeLessThanOrEqual(out[i]);
        }
      }),
      { seed: SEED + 1, numRuns: 1000 },
    );
  });

  it('halfway, linear fields are the exact midpoint', () => {
    const out = blend(A, B, 0.5);
    expect(out[X]).toBe(132);
    expect(out[FRAME]).toBe(20);
    expect(out[Y]).toBeCloseTo((12.34 - 3.21) / 2, 9);
    expect(out[Z]).toBeCloseTo((22.4 - 7.5) / 2, 9);
  });

  it('angles go the short way round across 0/360', () => {
    // 337.5 -> 22.5 is 45 degrees forward through 0, not 315 back.
    expect(blend(A, B, 0)[YAW]).toBe(337.5);
    expect(blend(A, B, 0.25)[YAW]).toBe(348.75);
    expect(blend(A, B, 0.5)[YAW] % 360).toBe(0);
    expect(blend(A, B, 0.75)[YAW] % 360).toBe(11.25);
    expect(blend(A, B, 1)[YAW] % 360).toBe(22.5);
    // And backwards: 22.5 -> 337.5 is 45 degrees back through 0.
    expect(blend(B, A, 0.25)[YAW]).toBe(11.25);
    expect(blend(B, A, 0.75)[YAW] + 360).toBe(348.75);
  });

  it('an angle blend lies on the short arc, f of the way along it, and ends on B (mod 360)', () => {
    fc.assert(
      fc.property(storedValues, storedValues, fc.double({ min: 0, max: 1, noNaN: true }), (a, b, f) => {
        const va = decodeNumber(mover, YAW, a[YAW]);
        const vb = decodeNumber(mover, YAW, b[YAW]);
        let arc = (((vb - va) % 360) + 360) % 360;
        if (arc > 180) arc -= 360;
        const at = `seed ${SEED} ${va} -> ${vb} f ${f}`;
        expect(Math.abs(arc), at).toBeLessThanOrEqual(180);
        expect(blend(a, b, f)[YAW] - va, at).toBeCloseTo(arc * f, 9);
        expect((((blend(a, b, 1)[YAW] - vb) % 360) + 360) % 360, at).toBe(0);
      }),
      { seed: SEED + 2, numRuns: 1000 },
    );
  });

  it("step and non-interpolated fields take A's value until f reaches 1, then B's", () => {
    const a = decoded(A);
    const b = decoded(B);
    for (const f of [0, 0.25, 0.5, 0.999, 1 - 2 ** -40]) {
      const out = blend(A, B, f);
      for (const i of STEPPED) expect(out[i], `field ${mover.fields[i].name} f ${f}`).toBe(a[i]);
    }
    for (const f of [1, 1.5]) {
      const out = blend(A, B, f);
      for (const i of STEPPED) expect(out[i], `field ${mover.fields[i].name} f ${f}`).toBe(b[i]);
    }
  });

  it('past B (f > 1) linear fields and angles carry on along the same line', () => {
    const out = blend(A, B, 1.5);
    expect(out[X]).toBe(196);
    expect(out[FRAME]).toBe(40);
    expect(out[YAW] % 360).toBe(45);
    expect(out[Y]).toBeCloseTo(-3.21 + (-3.21 - 12.34) / 2, 9);
    fc.assert(
      fc.property(storedValues, storedValues, fc.double({ min: 1, max: 3, noNaN: true }), (a, b, f) => {
        const out = blend(a, b, f);
        for (const i of LINEAR) {
          const va = decodeNumber(mover, i, a[i]);
          const vb = decodeNumber(mover, i, b[i]);
          expect(out[i], `seed ${SEED} field ${i} f ${f}`).toBeCloseTo(va + (vb - va) * f, 6);
        }
      }),
      { seed: SEED + 3, numRuns: 500 },
    );
  });
});

describe('blendEntity across discontinuities', () => {
  const b = decoded(B);

  it("a teleport (parity changed) gives B's values at every fraction", () => {
    for (const f of [0, 0.3, 0.5, 1, 1.4]) {
      for (const [pa, pb] of [
        [0, 1],
        [1, 0],
      ]) {
        const out = new Float64Array(N);
        expect(blendEntity(mover, A, 0, pa, B, 0, pb, f, Infinity, out, 0)).toBe(true);
        expect(Array.from(out), `f ${f} parity ${pa} -> ${pb}`).toEqual(b);
      }
    }
  });

  it('the same parity in both frames (either value) interpolates', () => {
    const out = new Float64Array(N);
    blendEntity(mover, A, 0, 1, B, 0, 1, 0.5, Infinity, out, 0);
    expect(out[X]).toBe(132);
  });

  it("a jump beyond teleportDistance gives B's values; one within it interpolates", () => {
    // A to B moves (64, -15.55, 29.9): about 72.3 units.
    const d = Math.hypot(
      decodeNumber(mover, X, B[X]) - decodeNumber(mover, X, A[X]),
      decodeNumber(mover, Y, B[Y]) - decodeNumber(mover, Y, A[Y]),
      decodeNumber(mover, Z, B[Z]) - decodeNumber(mover, Z, A[Z]),
    );
    expect(blend(A, B, 0.5, d - 0.01)).toEqual(b);
    expect(blend(A, B, 0.5, 64)).toEqual(b);
    expect(blend(A, B, 0.5, d + 0.01)[X]).toBe(132);
    expect(blend(A, B, 0.5, Infinity)[X]).toBe(132);
  });

  it('only x counts toward the jump when the type has no y or z', () => {
    interface Bead {
      x: number;
      spin: number;
    }
    const bead = defineEntityType<Bead>('bead', {
      x: { kind: 'float', min: 0, max: 100, precision: 1 },
      spin: { kind: 'float', min: -1000, max: 1000, precision: 1 },
    } satisfies FieldTable<Bead>);
    const out = new Float64Array(2);
    blendEntity(bead, Int32Array.of(10, 0), 0, 0, Int32Array.of(20, 1000), 0, 0, 0.5, 11, out, 0);
    expect(Array.from(out)).toEqual([15, -500]);
    blendEntity(bead, Int32Array.of(10, 0), 0, 0, Int32Array.of(30, 1000), 0, 0, 0.5, 11, out, 0);
    expect(Array.from(out)).toEqual([30, 0]);
  });

  it("only in A (removed by B) gives A's values; only in B (new in B) gives B's values", () => {
    const a = decoded(A);
    for (const f of [0, 0.5, 1, 2]) {
      expect(blend(A, null, f), `f ${f}`).toEqual(a);
      expect(blend(null, B, f), `f ${f}`).toEqual(b);
    }
  });

  it('in neither frame returns false and writes nothing', () => {
    const out = new Float64Array(N).fill(7);
    expect(blendEntity(mover, null, 0, 0, null, 0, 0, 0.5, Infinity, out, 0)).toBe(false);
    expect(Array.from(out)).toEqual(new Array(N).fill(7));
  });
});

describe('blendEntity on flat arrays', () => {
  it('reads each frame at its own offset and writes only its own fields at the output offset', () => {
    const stride = N + 3;
    const frameA = new Int32Array(stride * 4).fill(-1);
    const frameB = new Int32Array(stride * 4).fill(-1);
    frameA.set(A, 2 * stride);
    frameB.set(B, 3 * stride);
    const out = new Float64Array(stride * 4).fill(7);
    expect(blendEntity(mover, frameA, 2 * stride, 0, frameB, 3 * stride, 0, 0.5, 1000, out, stride)).toBe(
      true,
    );
    expect(Array.from(out.subarray(stride, stride + N))).toEqual(blend(A, B, 0.5));
    expect(Array.from(out.subarray(0, stride)).every((v) => v === 7)).toBe(true);
    expect(Array.from(out.subarray(stride + N)).every((v) => v === 7)).toBe(true);
  });

  it('is deterministic: the same inputs give the same bits', () => {
    fc.assert(
      fc.property(storedValues, storedValues, fc.double({ min: 0, max: 2, noNaN: true }), (a, b, f) => {
        const one = blend(a, b, f, 500);
        const two = blend(Int32Array.from(a), Int32Array.from(b), f, 500);
        for (let i = 0; i < N; i++) expect(Object.is(one[i], two[i]), `seed ${SEED} field ${i}`).toBe(true);
      }),
      { seed: SEED + 4, numRuns: 300 },
    );
  });
});

describe('blendEntity on the arena player entity', () => {
  const n = PLAYER_ENTITY.fieldCount;
  const px = PLAYER_ENTITY.index.x;
  const pyaw = PLAYER_ENTITY.index.yaw;
  const pducked = PLAYER_ENTITY.index.ducked;

  function player(x: number, yaw: number, ducked: boolean): Int32Array {
    const v = new Int32Array(n);
    v[px] = encodeField(PLAYER_ENTITY, px, x);
    v[pyaw] = encodeField(PLAYER_ENTITY, pyaw, yaw);
    v[pducked] = encodeField(PLAYER_ENTITY, pducked, ducked);
    return v;
  }

  it('slides the origin, turns the short way and switches ducking at B', () => {
    const a = player(-10, 348.75, false);
    const b = player(30, 11.25, true);
    const out = new Float64Array(n);
    blendEntity(PLAYER_ENTITY, a, 0, 0, b, 0, 0, 0.75, 256, out, 0);
    expect(out[px]).toBe(20);
    expect(out[pyaw] % 360).toBeCloseTo(5.625, 1);
    expect(out[pducked]).toBe(0);
    blendEntity(PLAYER_ENTITY, a, 0, 0, b, 0, 0, 1, 256, out, 0);
    expect(out[px]).toBe(30);
    expect(out[pducked]).toBe(1);
  });
});
