// Tests for the deterministic math: dsin/dcos accuracy, exact values, determinism, angle vectors and angle lerp.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  angleDelta,
  angleVectors,
  dcos,
  dot,
  dsin,
  dsinCos,
  dsinCosInPlace,
  length,
  lerpAngle,
  type Vec3,
  vec3,
  wrapDegrees180,
} from '../../src/sim/math.ts';

const SEED = Number(process.env.SEED ?? 0x3a7);
const at = `seed ${SEED}`;
const TOLERANCE = 1e-14;

/** Math.sin/Math.cos of the exactly reduced angle: the reference dsin/dcos must agree with. */
function refSin(degrees: number): number {
  return Math.sin(((degrees % 360) * Math.PI) / 180);
}
function refCos(degrees: number): number {
  return Math.cos(((degrees % 360) * Math.PI) / 180);
}

const anyFinite = fc.double({ noNaN: true, noDefaultInfinity: true });
const angles = fc.oneof(
  fc.double({ min: -720, max: 720, noNaN: true }),
  fc.double({ min: -1e7, max: 1e7, noNaN: true }),
  anyFinite,
  fc.integer({ min: -(2 ** 44), max: 2 ** 44 }).map((k) => k * 45),
);

/** The float64 bit pattern of `x` as 16 hex digits. */
function bitsOf(x: number): string {
  const f = new Float64Array([x]);
  return new BigUint64Array(f.buffer)[0].toString(16).padStart(16, '0');
}

describe('dsin / dcos', () => {
  it(`agree with Math.sin/Math.cos to ${TOLERANCE} over a dense sweep of [-1080, 1080] degrees`, () => {
    let worst = 0;
    for (let i = -1_080_000; i <= 1_080_000; i++) {
      const d = i / 1000;
      const r = (d * Math.PI) / 180;
      worst = Math.max(worst, Math.abs(dsin(d) - Math.sin(r)), Math.abs(dcos(d) - Math.cos(r)));
    }
    expect(worst).toBeLessThan(TOLERANCE);
  });

  it(`agree with Math.sin/Math.cos of the reduced angle to ${TOLERANCE} for any finite angle, huge and negative ones included`, () => {
    fc.assert(
      fc.property(angles, (d) => {
        expect(Math.abs(dsin(d) - refSin(d)), `${at} dsin(${d})`).toBeLessThan(TOLERANCE);
        expect(Math.abs(dcos(d) - refCos(d)), `${at} dcos(${d})`).toBeLessThan(TOLERANCE);
        const s = dsin(d);
        const c = dcos(d);
        expect(Math.abs(s * s + c * c - 1), `${at} sin^2+cos^2 at ${d}`).toBeLessThan(TOLERANCE);
      }),
      { seed: SEED, numRuns: 20000 },
    );
  });

  it('are exact at every multiple of 90 degrees (positive zero where the value is 0)', () => {
    const sinAt = [0, 1, 0, -1];
    const cosAt = [1, 0, -1, 0];
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 44), max: 2 ** 44 }), (k) => {
        const quadrant = ((k % 4) + 4) % 4;
        expect(dsin(k * 90), `${at} dsin(${k * 90})`).toBe(sinAt[quadrant]);
        expect(dcos(k * 90), `${at} dcos(${k * 90})`).toBe(cosAt[quadrant]);
      }),
      { seed: SEED, numRuns: 5000 },
    );
    for (let k = -8; k <= 8; k++) {
      expect(dsin(k * 90), `dsin(${k * 90})`).toBe(sinAt[((k % 4) + 4) % 4]);
      expect(dcos(k * 90), `dcos(${k * 90})`).toBe(cosAt[((k % 4) + 4) % 4]);
    }
    expect(dsin(-0)).toBe(0);
    expect(dsin(-360)).toBe(0);
  });

  it('are odd and even to within an ulp or two, and exactly periodic', () => {
    fc.assert(
      fc.property(fc.integer({ min: -3_600_000, max: 3_600_000 }), (i) => {
        const d = i / 1024;
        expect(Math.abs(dsin(-d) + dsin(d)), `${at} dsin(-${d})`).toBeLessThan(1e-15);
        expect(Math.abs(dcos(-d) - dcos(d)), `${at} dcos(-${d})`).toBeLessThan(1e-15);
        expect(dsin(d + 360), `${at} period at ${d}`).toBe(dsin(d));
        expect(dcos(d - 720), `${at} period at ${d}`).toBe(dcos(d));
        expect(dsin(d + 90), `${at} shift at ${d}`).toBe(dcos(d));
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });

  it('return NaN for NaN and infinite angles', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(dsin(bad), `${bad}`).toBeNaN();
      expect(dcos(bad), `${bad}`).toBeNaN();
    }
  });

  it('are deterministic: the same angle gives the same bits, whatever was computed before', () => {
    // Both use only + - * / % and floor, which IEEE 754 defines exactly, so these bit patterns
    // are the same on every JavaScript engine. A change here changes what every client predicts:
    // it must be made on purpose, for client and server together.
    const golden: [number, string, string][] = [
      [1, '3f91df0b2b89dd1e', '3feffec097f5af8a'],
      [30, '3fdfffffffffffff', '3febb67ae8584cab'],
      [45, '3fe6a09e667f3bcd', '3fe6a09e667f3bcc'],
      [89.5, '3fefffb02599c9cd', '3f81df37c4954c21'],
      [-123.456, 'bfeab2a9b25a9ab9', 'bfe1a43870d371f9'],
      [1e9 + 0.25, 'bfef7d42eaca5ced', '3fc6c6daa62c1695'],
    ];
    for (const [d, s, c] of golden) {
      expect(bitsOf(dsin(d)), `dsin(${d})`).toBe(s);
      expect(bitsOf(dcos(d)), `dcos(${d})`).toBe(c);
    }
    fc.assert(
      fc.property(angles, angles, (a, b) => {
        const first = dsin(a);
        dcos(b);
        dsin(b);
        expect(bitsOf(dsin(a)), `${at} dsin(${a}) after other calls`).toBe(bitsOf(first));
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('dsinCos', () => {
  it('gives exactly dsin and dcos of the angle, at the offset asked, NaN for NaN and infinities', () => {
    const out = new Float64Array(5).fill(7);
    fc.assert(
      fc.property(
        fc.oneof(
          angles,
          fc.constantFrom(0, -0, 90, 180, 270, -90, 360, 1e9 + 0.25, Number.NaN, Number.POSITIVE_INFINITY),
        ),
        fc.integer({ min: 0, max: 3 }),
        (d, offset) => {
          out.fill(7);
          dsinCos(d, out, offset);
          expect(Object.is(out[offset], dsin(d)), `${at} sin of ${d}`).toBe(true);
          expect(Object.is(out[offset + 1], dcos(d)), `${at} cos of ${d}`).toBe(true);
          for (let i = 0; i < out.length; i++) {
            if (i !== offset && i !== offset + 1) expect(out[i], `${at} out[${i}] untouched`).toBe(7);
          }
        },
      ),
      { seed: SEED, numRuns: 5000 },
    );
  });
});

describe('dsinCosInPlace', () => {
  it('writes dsinCos of the angle at the offset over it, and touches nothing else', () => {
    const out = new Float64Array(5);
    const expected = new Float64Array(2);
    fc.assert(
      fc.property(
        fc.oneof(angles, fc.constantFrom(0, -0, 90, -270, 1e9 + 0.25, Number.NaN, Number.NEGATIVE_INFINITY)),
        fc.integer({ min: 0, max: 3 }),
        (d, offset) => {
          out.fill(7);
          out[offset] = d;
          dsinCos(d, expected, 0);
          dsinCosInPlace(out, offset);
          expect(Object.is(out[offset], expected[0]), `${at} sin of ${d}`).toBe(true);
          expect(Object.is(out[offset + 1], expected[1]), `${at} cos of ${d}`).toBe(true);
          for (let i = 0; i < out.length; i++) {
            if (i !== offset && i !== offset + 1) expect(out[i], `${at} out[${i}] untouched`).toBe(7);
          }
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('angleVectors', () => {
  const f = vec3();
  const r = vec3();
  const u = vec3();

  function cross(a: Vec3, b: Vec3): Vec3 {
    return vec3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
  }

  it('gives unit, mutually orthogonal forward/right/up with up = right x forward', () => {
    fc.assert(
      fc.property(angles, angles, angles, (pitch, yaw, roll) => {
        angleVectors(pitch, yaw, roll, f, r, u);
        const msg = `${at} angles (${pitch}, ${yaw}, ${roll})`;
        for (const v of [f, r, u]) expect(Math.abs(length(v) - 1), msg).toBeLessThan(1e-14);
        expect(Math.abs(dot(f, r)), msg).toBeLessThan(1e-14);
        expect(Math.abs(dot(f, u)), msg).toBeLessThan(1e-14);
        expect(Math.abs(dot(r, u)), msg).toBeLessThan(1e-14);
        const c = cross(r, f);
        expect(Math.abs(c.x - u.x) + Math.abs(c.y - u.y) + Math.abs(c.z - u.z), msg).toBeLessThan(1e-14);
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('follows the Quake conventions: yaw about +z, pitch positive looking down', () => {
    angleVectors(0, 0, 0, f, r, u);
    expect([f.x + 0, f.y + 0, f.z + 0]).toEqual([1, 0, 0]);
    expect([r.x + 0, r.y + 0, r.z + 0]).toEqual([0, -1, 0]);
    expect([u.x + 0, u.y + 0, u.z + 0]).toEqual([0, 0, 1]);
    angleVectors(0, 90, 0, f, null, null);
    expect([f.x + 0, f.y + 0, f.z + 0]).toEqual([0, 1, 0]);
    angleVectors(90, 0, 0, f, null, null);
    expect([f.x + 0, f.y + 0, f.z + 0], 'pitch 90 looks straight down').toEqual([0, 0, -1]);
  });

  it('accepts null for any output', () => {
    expect(() => angleVectors(10, 20, 30, null, null, null)).not.toThrow();
  });
});

describe('angle helpers', () => {
  it('wrapDegrees180 lands in (-180, 180] and angleDelta is the short way round', () => {
    expect(wrapDegrees180(180)).toBe(180);
    expect(wrapDegrees180(-180)).toBe(180);
    expect(wrapDegrees180(190)).toBe(-170);
    expect(angleDelta(359, 1)).toBe(2);
    expect(angleDelta(1, 359)).toBe(-2);
    fc.assert(
      fc.property(fc.double({ min: -1e6, max: 1e6, noNaN: true }), (d) => {
        const w = wrapDegrees180(d);
        expect(w > -180 && w <= 180, `${at} ${d} -> ${w}`).toBe(true);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('lerpAngle takes the short arc across 359 -> 1', () => {
    const mid = lerpAngle(359, 1, 0.5);
    expect(((mid % 360) + 360) % 360).toBe(0);
    expect(lerpAngle(1, 359, 0.5)).toBe(0);
    expect(lerpAngle(350, 10, 0.25)).toBe(355);
    expect(lerpAngle(10, 350, 0.25)).toBe(5);
    expect(lerpAngle(90, 100, 0)).toBe(90);
    fc.assert(
      fc.property(
        fc.double({ min: -720, max: 720, noNaN: true }),
        fc.double({ min: -720, max: 720, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (a, b, t) => {
          const x = lerpAngle(a, b, t);
          const msg = `${at} lerpAngle(${a}, ${b}, ${t}) = ${x}`;
          expect(Math.abs(x - a), msg).toBeLessThanOrEqual(180 * t + 1e-9);
          expect(Math.abs(angleDelta(lerpAngle(a, b, 1), b)), msg).toBeLessThan(1e-9);
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
