// Tests for the server entity store: slots, quantized values, positions, and the committed history ring.
import { describe, expect, it } from 'vitest';
import { quantize } from '../../src/protocol/bitstream.ts';
import { defineEntityType, defineGameSchema } from '../../src/protocol/schema.ts';
import { EntityStore } from '../../src/server/entities.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0xe7);
const at = `seed ${SEED}`;

const mover = defineEntityType<{ x: number; y: number; z: number; hp: number; on: boolean }>('mover', {
  x: { kind: 'float', min: -100, max: 100, precision: 0.5 },
  y: { kind: 'float', min: -100, max: 100, precision: 0.5 },
  z: { kind: 'int', min: 5, max: 9 },
  hp: { kind: 'int', min: 0, max: 100 },
  on: { kind: 'bool' },
});
const marker = defineEntityType<{ color: number }>('marker', { color: { kind: 'int', min: 0, max: 7 } });
const schema = defineGameSchema([mover, marker], { maxEntities: 8 });

describe('EntityStore slots', () => {
  it('creates in the lowest free slot, reuses freed slots, and reports a full store with -1', () => {
    const store = new EntityStore(schema);
    for (let i = 0; i < 8; i++) expect(store.create(i % 2), at).toBe(i);
    expect(store.create(0), at).toBe(-1);
    store.remove(5);
    store.remove(2);
    expect([store.count, store.end], at).toEqual([6, 8]);
    expect(store.create(1), at).toBe(2);
    expect(store.create(1), at).toBe(5);
    expect(store.create(1), at).toBe(-1);
    store.remove(7);
    store.remove(6);
    expect(store.end, at).toBe(6);
    expect(store.isAlive(6), at).toBe(false);
    expect(store.isAlive(-1), at).toBe(false);
  });

  it('a new entity starts at the values nearest 0, its view is made once, and setField quantizes', () => {
    const store = new EntityStore(schema);
    const e = store.create(0);
    expect(Array.from(store.values(e).subarray(0, 5)), at).toEqual([200, 200, 5, 0, 0]);
    expect(store.getField(e, 2), at).toBe(5);
    expect(store.values(e), at).toBe(store.values(e));
    store.setField(e, 0, 12.3);
    expect(store.getField(e, 0), at).toBe(quantize(12.3, -100, 100, 0.5));
    store.setField(e, 4, true);
    expect(store.getField(e, 4), at).toBe(true);
    store.setField(e, 3, 250);
    expect(store.getField(e, 3), at).toBe(100);
  });

  it('names the offending argument', () => {
    const store = new EntityStore(schema);
    const e = store.create(1);
    expect(() => store.create(2), at).toThrow(/typeId 2/);
    expect(() => store.remove(3), at).toThrow(/remove: slot 3/);
    expect(() => store.setField(e, 1, 0), at).toThrow(/field 1.*'marker'/);
    expect(() => store.values(9), at).toThrow(/slot 9/);
    expect(() => new EntityStore(schema, { historyTicks: 100 }), at).toThrow(/historyTicks.*100/);
  });
});

describe('EntityStore commit and history', () => {
  it('freezes each tick; history keeps the last historyTicks ticks', () => {
    const store = new EntityStore(schema, { historyTicks: 4 });
    const e = store.create(0);
    for (let tick = 1; tick <= 6; tick++) {
      store.setField(e, 3, tick * 10);
      store.commit(tick);
    }
    expect(store.history(2), at).toBeUndefined();
    for (let tick = 3; tick <= 6; tick++) {
      const h = store.history(tick)!;
      expect([h.tick, h.alive[e], h.type[e], h.values[e * schema.stride + 3]], at).toEqual([
        tick,
        1,
        0,
        tick * 10,
      ]);
    }
    expect(store.history(7), at).toBeUndefined();
    expect(() => store.commit(6), at).toThrow(/above 6.*got 6/);
    expect(() => store.commit(6.5), at).toThrow(/got 6.5/);
  });

  it('tracks when each slot was created and last changed, including parity and reuse', () => {
    const store = new EntityStore(schema);
    const a = store.create(0);
    const b = store.create(1);
    store.commit(1);
    expect([store.createdTick[a], store.changedTick[a], store.createdTick[b]], at).toEqual([1, 1, 1]);
    store.setField(a, 3, 50);
    store.commit(2);
    store.commit(3);
    expect([store.createdTick[a], store.changedTick[a], store.changedTick[b]], at).toEqual([1, 2, 1]);
    store.teleport(b);
    store.commit(4);
    // Creation flipped the fresh slot's parity to 1; the teleport flips it back.
    expect([store.changedTick[b], store.history(4)!.parity[b], store.history(3)!.parity[b]], at).toEqual([
      4, 0, 1,
    ]);
    store.setField(a, 3, 60);
    store.setField(a, 3, 50);
    store.commit(5);
    expect(store.changedTick[a], at).toBe(2);
    store.remove(b);
    expect(store.create(1), at).toBe(b);
    store.commit(6);
    // The new entity in the reused slot flips the parity again.
    expect([store.createdTick[b], store.changedTick[b], store.history(6)!.parity[b]], at).toEqual([6, 6, 1]);
    store.remove(a);
    store.commit(7);
    expect(store.history(7)!.alive[a], at).toBe(0);
    expect(store.history(6)!.alive[a], at).toBe(1);
  });

  it('derives positions from x, y, z fields at commit; other types keep setPosition', () => {
    const store = new EntityStore(schema);
    const m = store.create(0);
    const k = store.create(1);
    store.setField(m, 0, -20.2);
    store.setField(m, 1, 33);
    store.setField(m, 2, 7);
    store.setPosition(k, 1.5, 2.5, 3.5);
    store.setPosition(m, 999, 999, 999);
    store.commit(1);
    expect(Array.from(store.positions.subarray(0, 6)), at).toEqual([
      quantize(-20.2, -100, 100, 0.5),
      33,
      7,
      1.5,
      2.5,
      3.5,
    ]);
    const found = new Uint16Array(8);
    expect(store.interest.query(1.5, 2.5, 3.5, 0, found), at).toBe(1);
    expect(found[0], at).toBe(k);
  });

  it('refuses to commit a value written out of its field range, naming entity, field and value', () => {
    const store = new EntityStore(schema);
    const e = store.create(0);
    store.values(e)[2] = 12;
    expect(() => store.commit(1), at).toThrow(/entity 0 \('mover'\) field 'z' holds 12, outside \[5, 9\]/);
  });

  it('history equals the live state of every commit in a random world', () => {
    const rng = new Random(SEED);
    const store = new EntityStore(schema, { historyTicks: 8 });
    const copies: Int32Array[] = [];
    for (let tick = 1; tick <= 200; tick++) {
      if (rng.chance(0.3) && store.count < 8) store.create(rng.int(0, 1));
      for (let e = 0; e < store.end; e++) {
        if (!store.isAlive(e)) continue;
        if (rng.chance(0.05)) {
          store.remove(e);
          continue;
        }
        if (rng.chance(0.5)) store.setField(e, 0, rng.range(-10, 10));
      }
      const snapshot = new Int32Array(8 * schema.stride).fill(-1);
      for (let e = 0; e < store.end; e++) {
        if (!store.isAlive(e)) continue;
        const n = schema.types[store.typeIdAt(e)].fieldCount;
        snapshot.set(store.values(e).subarray(0, n), e * schema.stride);
      }
      copies[tick] = snapshot;
      store.commit(tick);
      for (let back = Math.max(1, tick - 7); back <= tick; back++) {
        const h = store.history(back)!;
        for (let e = 0; e < 8; e++) {
          const want = copies[back][e * schema.stride] !== -1;
          expect(h.alive[e] === 1, `${at} tick ${tick} back ${back} entity ${e}`).toBe(want);
          if (!want) continue;
          const n = schema.types[h.type[e]].fieldCount;
          for (let f = 0; f < n; f++) {
            expect(h.values[e * schema.stride + f], `${at} tick ${tick} back ${back}`).toBe(
              copies[back][e * schema.stride + f],
            );
          }
        }
      }
    }
  });
});
