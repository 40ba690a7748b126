import { describe, expect, it } from 'vitest';
import { COLYSEUS_NUMBER_TYPES, encodeRecording } from '../../tools/bench/colyseus.ts';
import { type PlayerRecording, RECORDED_FIELDS } from '../../tools/bench/scene.ts';

/** Two players over three frames; player 1 stands still after frame 1. */
function recording(): PlayerRecording {
  const width = RECORDED_FIELDS.length;
  const rows = [
    [100, -200, 32, 90, 350, 0],
    [500, 700, 0, 180, 0, 1],
    [101.5, -199.25, 32, 91.40625, 351, 0],
    [500, 700, 0, 180, 0, 1],
    [103, -198.5, 32, 92.8125, 352, 0],
    [500, 700, 0, 180, 0, 1],
  ];
  const values = new Float64Array(rows.length * width);
  for (let i = 0; i < rows.length; i++) values.set(rows[i], i * width);
  return { players: 2, frames: 3, values };
}

describe('the Colyseus peer of the bandwidth benchmark', () => {
  it('encodes the same recording with every declaration, the quantized one smallest', () => {
    const rec = recording();
    const results = COLYSEUS_NUMBER_TYPES.map((kind) => encodeRecording(rec, kind));
    for (const r of results) {
      // Frames 1 and 2 each change player 0 only.
      expect(r.patches, r.type).toBe(2);
      expect(r.changedEntities, r.type).toBe(2);
      expect(r.wireBytes, r.type).toBe(r.patchBytes + 2 * (1 + 2));
    }
    const [number, float32, quantized] = results;
    expect(quantized.type).toBe('quantized');
    // x, y on 4 bytes, yaw and pitch on 2 instead of 4: 4 bytes less per changed player.
    expect(float32.patchBytes - quantized.patchBytes).toBe(2 * 4);
    expect(quantized.wireBytes).toBeLessThan(number.wireBytes);
  });
});
