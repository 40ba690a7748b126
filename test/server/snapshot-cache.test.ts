// The shared snapshot encode cache: entries copied bit for bit from it are the entries a writer
// would have encoded itself, so writers sharing one cache write exactly the bytes of writers that
// each encode alone, while each entry is encoded once per tick for every client holding its baseline.
import { describe, expect, it } from 'vitest';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { defineEntityType, defineGameSchema, type FieldTable } from '../../src/protocol/schema.ts';
import { EntityStore } from '../../src/server/entities.ts';
import { SnapshotEncodeCache } from '../../src/server/snapshot-cache.ts';
import { SnapshotWriter } from '../../src/server/snapshot-writer.ts';
import { Random } from '../../src/sim/random.ts';

interface Mover {
  x: number;
  y: number;
  z: number;
  yaw: number;
  health: number;
}
const mover = defineEntityType<Mover>('mover', {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
  y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
  z: { kind: 'float', min: -1024, max: 1024, precision: 1 / 8 },
  yaw: { kind: 'angle', bits: 16 },
  health: { kind: 'int', min: 0, max: 100 },
} satisfies FieldTable<Mover>);
const schema = defineGameSchema([mover], { maxEntities: 256 });

describe('BitStream.copyBits', () => {
  it('copies any span of bits to any position, and only counts them when measuring', () => {
    const seed = 91;
    const rng = new Random(seed);
    for (let round = 0; round < 200; round++) {
      const src = new BitStream(256).beginWrite();
      const values: number[] = [];
      const widths: number[] = [];
      const lead = rng.int(0, 13);
      src.uint(0, lead);
      for (let i = 0; i < rng.int(1, 40); i++) {
        const bits = rng.int(1, 32);
        const v = bits === 32 ? rng.nextU32() : rng.int(0, 2 ** bits - 1);
        src.uint(v, bits);
        values.push(v);
        widths.push(bits);
      }
      const length = src.bitsProcessed - lead;
      const dst = new BitStream(256).beginWrite();
      const offset = rng.int(0, 17);
      dst.uint(offset === 0 ? 0 : 1, offset);
      expect(dst.copyBits(src.buffer, lead, length), `seed ${seed}`).toBe(true);
      const read = new BitStream(0).beginRead(dst.bytes);
      read.uint(0, offset);
      for (let i = 0; i < values.length; i++) expect(read.uint(0, widths[i]), `seed ${seed}`).toBe(values[i]);
      // Into a buffer that ends with the copy's last bit: the same bytes.
      const tight = new BitStream((offset + length + 7) >>> 3).beginWrite();
      tight.uint(offset === 0 ? 0 : 1, offset);
      expect(tight.copyBits(src.buffer, lead, length), `seed ${seed}`).toBe(true);
      expect([...tight.bytes], `seed ${seed}`).toEqual([...dst.bytes]);
      // Past a write limit (the buffer itself has room): fails, as a write past it does.
      const limited = new BitStream(256).beginWrite((offset + length - 1) >>> 3);
      limited.uint(offset === 0 ? 0 : 1, offset);
      expect(limited.copyBits(src.buffer, lead, length), `seed ${seed}`).toBe(false);
      expect(limited.error, `seed ${seed}`).toBe('write overflow');
      const m = new BitStream(0).beginMeasure();
      m.copyBits(src.buffer, lead, length);
      expect(m.bitsProcessed).toBe(length);
    }
    const small = new BitStream(1).beginWrite();
    expect(small.copyBits(new Uint8Array(4), 0, 9)).toBe(false);
    expect(small.ok).toBe(false);
    expect(() => new BitStream(8).beginWrite().copyBits(new Uint8Array(1), 4, 5)).toThrow(
      /outside a 1-byte source/,
    );
  });
});

/**
 * `clients` writers sharing `cache` beside as many encoding alone: `write` writes client c's frame
 * with both (full 1,200-byte packets) and checks that the bytes are the same.
 */
function writerPairs(store: EntityStore, cache: SnapshotEncodeCache, clients: number, seed: number) {
  const shared: SnapshotWriter[] = [];
  const alone: SnapshotWriter[] = [];
  for (let c = 0; c < clients; c++) {
    shared.push(new SnapshotWriter(store, {}, cache));
    alone.push(new SnapshotWriter(store));
  }
  const a = new BitStream(1200);
  const b = new BitStream(1200);
  return {
    shared,
    write(c: number, tick: number, x: number): void {
      a.beginWrite(1200);
      b.beginWrite(1200);
      shared[c].write(a, tick, x, 0, 0, 4000, -1);
      alone[c].write(b, tick, x, 0, 0, 4000, -1);
      expect([...a.bytes], `seed ${seed}, tick ${tick}, client ${c}`).toEqual([...b.bytes]);
    },
    acknowledge(c: number, tick: number): void {
      shared[c].acknowledge(tick);
      alone[c].acknowledge(tick);
    },
  };
}

describe('snapshot encode cache', () => {
  it('writers sharing a cache write the very bytes of writers encoding alone, sharing entries between clients that hold the same state', () => {
    const seed = 7;
    const rng = new Random(seed);
    const store = new EntityStore(schema);
    const ids: number[] = [];
    for (let i = 0; i < 120; i++) ids.push(store.create(0));
    const cache = new SnapshotEncodeCache(store);
    const clients = 12;
    const pairs = writerPairs(store, cache, clients, seed);
    let compared = 0;
    for (let tick = 1; tick <= 300; tick++) {
      for (const e of ids) {
        if (!store.isAlive(e)) continue;
        if (rng.chance(0.6)) store.setField(e, 0, rng.range(-4000, 4000));
        if (rng.chance(0.6)) store.setField(e, 1, rng.range(-4000, 4000));
        if (rng.chance(0.1)) store.setField(e, 4, rng.int(0, 100));
        if (rng.chance(0.005)) store.teleport(e);
      }
      if (rng.chance(0.05)) {
        const i = rng.int(0, ids.length - 1);
        if (store.isAlive(ids[i])) store.remove(ids[i]);
        else ids[i] = store.create(0);
      }
      store.commit(tick);
      for (let c = 0; c < clients; c++) {
        // Half the clients each tick, as the server's pacing spreads them; full packets.
        if ((tick + c) % 2 !== 0) continue;
        pairs.write(c, tick, (c % 4) * 1000 - 2000);
        compared++;
        // Acks arrive for most frames, some late, some never: baselines differ between clients.
        if (rng.chance(0.8)) pairs.acknowledge(c, tick - 2 * rng.int(0, 3));
      }
    }
    expect(compared, `seed ${seed}`).toBe(1800);
    // Packets were full, so entries were chosen by cost, all of them from the cache.
    expect(
      pairs.shared.some((w) => w.stats.lastDeferred > 0),
      `seed ${seed}`,
    ).toBe(true);
    expect(cache.stats.uncached, `seed ${seed}`).toBe(0);
    // Clients holding the same state for an entity share its entry.
    expect(cache.stats.reused, `seed ${seed}`).toBeGreaterThan(5000);
  });
});

describe('snapshot encode cache, full', () => {
  it("entries past an entity's cache slots are encoded once when measured and copied when written: the same bytes", () => {
    const seed = 23;
    const rng = new Random(seed);
    const store = new EntityStore(schema);
    const ids: number[] = [];
    for (let i = 0; i < 60; i++) ids.push(store.create(0));
    const cache = new SnapshotEncodeCache(store);
    const clients = 48;
    const pairs = writerPairs(store, cache, clients, seed);
    for (let tick = 1; tick <= 200; tick++) {
      for (const e of ids) {
        if (rng.chance(0.7)) store.setField(e, 0, rng.range(-4000, 4000));
        if (rng.chance(0.7)) store.setField(e, 1, rng.range(-4000, 4000));
        if (rng.chance(0.3)) store.setField(e, 3, rng.range(0, 359));
      }
      store.commit(tick);
      for (let c = 0; c < clients; c++) {
        if ((tick + c) % 2 !== 0) continue;
        pairs.write(c, tick, 0);
        // Acks as over a jittery, lossy link: every client holds its own mix of ticks.
        if (rng.chance(0.7)) pairs.acknowledge(c, tick - 2 * rng.int(0, 12));
      }
    }
    // More distinct baselines than an entity's slots: those entries went the spill's way.
    expect(cache.stats.uncached, `seed ${seed}`).toBeGreaterThan(1000);
    expect(cache.stats.reused, `seed ${seed}`).toBeGreaterThan(1000);
  });
});

describe('snapshot writer frames', () => {
  it('remembers rememberTicks of frames for lag compensation, holding only frames it wrote, and bases deltas within frameHistory', () => {
    const seed = 12;
    const rng = new Random(seed);
    const store = new EntityStore(schema, { historyTicks: 512 });
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(store.create(0));
    // One frame every other tick, as at 32 snapshots a second on a 64 Hz tick.
    // 130 ticks, as a 64 Hz server remembers (not a power of two).
    const half = new SnapshotWriter(store, { rememberTicks: 130 });
    const plain = new SnapshotWriter(store);
    const s = new BitStream(1200);
    const history = schema.frameHistory;
    for (let tick = 1; tick <= 600; tick++) {
      for (const e of ids) store.setField(e, 0, rng.range(-4000, 4000));
      store.commit(tick);
      if (tick % 2 === 0) {
        s.beginWrite(1200);
        expect(half.write(s, tick, 0, 0, 0, 9600, -1), `seed ${seed}, tick ${tick}`).toBe(true);
        // Frame 10 is the only one acknowledged: it is the baseline while younger than the
        // schema's frameHistory, and no longer after, though still remembered.
        if (tick === 12) half.acknowledge(10);
        if (tick > 12) {
          const expected = tick - 10 < history ? 10 : -1;
          expect(half.stats.lastBaselineTick, `seed ${seed}, tick ${tick}`).toBe(expected);
        }
      }
      if (tick % 3 === 0) {
        s.beginWrite(1200);
        plain.write(s, tick, 0, 0, 0, 9600, -1);
      }
    }
    const msg = `seed ${seed}`;
    // The last 130 ticks' frames are remembered (every other tick), none before them.
    expect(half.hasFrame(600), msg).toBe(true);
    expect(half.hasFrame(600 - 128), msg).toBe(true);
    expect(half.hasFrame(600 - 130), msg).toBe(false);
    expect(half.hasFrame(599), msg).toBe(false);
    expect(half.heldTick(600 - 128, ids[3]), msg).toBeGreaterThan(0);
    expect(half.heldTick(600 - 130, ids[3]), msg).toBe(-1);
    // Half the ticks remembered have a frame, and only those take memory.
    expect(half.framesKept, msg).toBe(65);
    expect(plain.hasFrame(600 - 3 * 21), msg).toBe(true);
    expect(plain.hasFrame(600 - 3 * 22), msg).toBe(false);
    expect(plain.framesKept, msg).toBe(Math.ceil(history / 3));
    for (const bad of [2.5, -1, 5000, Number.NaN]) {
      expect(() => new SnapshotWriter(store, { rememberTicks: bad }), `${bad}`).toThrow(
        new RegExp(`rememberTicks.*got ${bad}`),
      );
    }
  });
});
