// End-to-end tests of the delta snapshot codec: a server entity store and snapshot writer connected to a client reader
// through a lossy, duplicating, reordering in-test network; every accepted frame must equal the server's world exactly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SnapshotReader } from '../../src/client/snapshot-reader.ts';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { defineEntityType, defineGameSchema, type FieldTable } from '../../src/protocol/schema.ts';
import {
  indexStepBits,
  PREDICT_ANGLE,
  PREDICT_HOLD,
  PREDICTION_TICKS,
  predictEntity,
  predictField,
  runLengthBits,
  SNAPSHOT_DROP_REASONS,
  serializeIndexStep,
  serializeRunLength,
} from '../../src/protocol/snapshot.ts';
import { EntityStore } from '../../src/server/entities.ts';
import { SnapshotWriter } from '../../src/server/snapshot-writer.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0x54a9);

interface Player {
  x: number;
  y: number;
  yaw: number;
  z: number;
  pitch: number;
  ducked: boolean;
  weapon: number;
  health: number;
}
interface Rocket {
  x: number;
  y: number;
  z: number;
  dir: number;
}
interface Sound {
  volume: number;
  channel: number;
}

const player = defineEntityType<Player>('player', {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
  y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 32 },
  yaw: { kind: 'angle', bits: 16 },
  z: { kind: 'float', min: -1024, max: 1024, precision: 1 / 8 },
  pitch: { kind: 'angle', bits: 10 },
  ducked: { kind: 'bool' },
  weapon: { kind: 'int', min: 0, max: 15, interp: 'step' },
  health: { kind: 'int', min: -50, max: 200 },
} satisfies FieldTable<Player>);
const rocket = defineEntityType<Rocket>('rocket', {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 8 },
  y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 8 },
  z: { kind: 'float', min: -1024, max: 1024, precision: 1 / 8 },
  dir: { kind: 'angle', bits: 10 },
} satisfies FieldTable<Rocket>);
const sound = defineEntityType<Sound>(
  'sound',
  {
    volume: { kind: 'int', min: 0, max: 255 },
    channel: { kind: 'int', min: 0, max: 7 },
  } satisfies FieldTable<Sound>,
  { priority: 0.5 },
);
const schema = defineGameSchema([player, rocket, sound], { maxEntities: 512 });
const STRIDE = schema.stride;
/** An empty snapshot: the baseline delta (a varuint, 8 bits) and the end step (2 bits). */
const EMPTY_BITS = 10;

/** A copy of the committed world at one tick (tests may allocate). */
interface WorldCopy {
  alive: Uint8Array;
  type: Uint8Array;
  parity: Uint8Array;
  values: Int32Array;
  positions: Float64Array;
}

function copyWorld(store: EntityStore, tick: number): WorldCopy {
  const h = store.history(tick);
  if (h === undefined) throw new Error(`no history for tick ${tick}`);
  return {
    alive: h.alive.slice(),
    type: h.type.slice(),
    parity: h.parity.slice(),
    values: h.values.slice(),
    positions: store.positions.slice(),
  };
}

interface WorldConfig {
  targetEntities: number;
  /** Chance per tick that a live entity changes some fields. */
  moveChance: number;
  removeChance: number;
  teleportChance: number;
}

/** Spawns an entity of a random type with random values; sounds get a random position. */
function spawn(store: EntityStore, rng: Random): number {
  const typeId = rng.int(0, 2);
  const e = store.create(typeId);
  if (e < 0) return e;
  const t = schema.types[typeId];
  const v = store.values(e);
  for (let f = 0; f < t.fieldCount; f++) v[f] = rng.int(t.lo[f], t.hi[f]);
  if (typeId === 2) store.setPosition(e, rng.range(-4096, 4096), rng.range(-4096, 4096), 0);
  return e;
}

/** One tick of a random world: spawns up to the target, moves, teleports and removes some entities. */
function evolve(store: EntityStore, rng: Random, c: WorldConfig): void {
  for (let i = 0; i < 8 && store.count < c.targetEntities; i++) spawn(store, rng);
  for (let e = 0; e < store.end; e++) {
    if (!store.isAlive(e)) continue;
    if (rng.chance(c.removeChance)) {
      store.remove(e);
      continue;
    }
    if (rng.chance(c.teleportChance)) store.teleport(e);
    if (!rng.chance(c.moveChance)) continue;
    const t = schema.types[store.typeIdAt(e)];
    const v = store.values(e);
    const changes = rng.int(1, 3);
    for (let k = 0; k < changes; k++) {
      const f = rng.int(0, Math.min(t.fieldCount - 1, rng.int(0, t.fieldCount - 1)));
      const step = rng.int(-40, 40);
      v[f] = rng.chance(0.8) ? Math.min(t.hi[f], Math.max(t.lo[f], v[f] + step)) : rng.int(t.lo[f], t.hi[f]);
    }
  }
}

interface InFlight {
  at: number;
  tick: number;
  bytes: Uint8Array;
}

interface SessionConfig {
  seed: number;
  ticks: number;
  world: WorldConfig;
  budgetBits: number;
  viewRadius: number;
  loss: number;
  duplicate: number;
  maxDelayTicks: number;
  ackLoss: number;
  maxAckDelayTicks: number;
}

interface SessionResult {
  sent: number;
  accepted: number;
  framesWithoutBaseline: number;
  /** Frames the writer listed as runs of consecutive entries. */
  runFrames: number;
  maxBits: number;
}

/**
 * Runs a server store + writer and a client reader for `ticks` ticks over a bad network, and
 * checks every frame the reader accepts against the server's world: the view is exactly the
 * writer's view for that frame and every entity's type, parity and values equal the server's at
 * the tick the writer says the client holds (with an unlimited budget: the frame's own tick).
 */
function runSession(c: SessionConfig): SessionResult {
  const at = `seed ${c.seed}`;
  const rng = new Random(c.seed);
  const net = new Random(c.seed ^ 0x9e3779b9);
  const store = new EntityStore(schema);
  const writer = new SnapshotWriter(store, { viewRadius: c.viewRadius });
  const reader = new SnapshotReader(schema);
  const unlimited = c.budgetBits === Infinity;
  const out = new BitStream(unlimited ? 1 << 16 : MAX_PACKET_BYTES);
  const inStream = new BitStream(0);
  const worlds = new Map<number, WorldCopy>();
  const viewers = new Map<number, [number, number, number]>();
  let packets: InFlight[] = [];
  let acks: { at: number; tick: number }[] = [];
  let resets: number[] = [];
  const result: SessionResult = { sent: 0, accepted: 0, framesWithoutBaseline: 0, runFrames: 0, maxBits: 0 };
  for (let tick = 1; tick <= c.ticks; tick++) {
    evolve(store, rng, c.world);
    store.commit(tick);
    worlds.set(tick, copyWorld(store, tick));
    const viewer: [number, number, number] = [2000 * Math.sin(tick / 40), 2000 * Math.cos(tick / 55), 0];
    viewers.set(tick, viewer);

    out.beginWrite();
    if (!writer.write(out, tick, viewer[0], viewer[1], viewer[2], c.budgetBits))
      expect.fail(`${at} tick ${tick}`);
    if (out.bitsProcessed !== writer.stats.lastBits || out.bitsProcessed > c.budgetBits) {
      expect.fail(`${at} tick ${tick}: wrote ${out.bitsProcessed} bits, stats ${writer.stats.lastBits}`);
    }
    result.maxBits = Math.max(result.maxBits, out.bitsProcessed);
    result.sent++;
    const bytes = out.bytes.slice();
    const copies = net.chance(c.loss) ? 0 : net.chance(c.duplicate) ? 2 : 1;
    for (let k = 0; k < copies; k++) packets.push({ at: tick + net.int(0, c.maxDelayTicks), tick, bytes });

    const due = packets.filter((p) => p.at <= tick);
    packets = packets.filter((p) => p.at > tick);
    for (const p of due) {
      const dropsBefore = totalDrops(reader);
      const ok = reader.read(inStream.beginRead(p.bytes), p.tick);
      if (!ok && totalDrops(reader) !== dropsBefore + 1)
        expect.fail(`${at} frame ${p.tick} dropped uncounted`);
      if (ok) {
        result.accepted++;
        checkFrame(reader, writer, worlds, viewers, p.tick, c, at);
      }
      if (!net.chance(c.ackLoss)) acks.push({ at: tick + net.int(0, c.maxAckDelayTicks), tick: p.tick });
    }
    if (reader.needsFullUpdate && !net.chance(c.ackLoss)) resets.push(tick + net.int(0, c.maxAckDelayTicks));
    for (const a of acks) if (a.at <= tick) writer.acknowledge(a.tick);
    acks = acks.filter((a) => a.at > tick);
    if (resets.some((r) => r <= tick)) writer.resetBaseline();
    resets = resets.filter((r) => r > tick);
  }
  for (const reason of SNAPSHOT_DROP_REASONS) {
    if (reason !== 'duplicate') expect(reader.stats.dropped[reason], `${at} dropped for ${reason}`).toBe(0);
  }
  result.framesWithoutBaseline = writer.stats.framesWithoutBaseline;
  result.runFrames = writer.stats.runFrames;
  return result;
}

function totalDrops(reader: SnapshotReader): number {
  let n = 0;
  for (const r of SNAPSHOT_DROP_REASONS) n += reader.stats.dropped[r];
  return n;
}

function checkFrame(
  reader: SnapshotReader,
  writer: SnapshotWriter,
  worlds: Map<number, WorldCopy>,
  viewers: Map<number, [number, number, number]>,
  tick: number,
  c: SessionConfig,
  at: string,
): void {
  expect(reader.frameTick, `${at} frame ${tick}`).toBe(tick);
  expect(frameMismatch(reader, writer, worlds, viewers, tick, c), `${at} frame ${tick}`).toBe('');
}

/** The first difference between the reader's frame and the server's world, or '' (plain loops: this runs a lot). */
function frameMismatch(
  reader: SnapshotReader,
  writer: SnapshotWriter,
  worlds: Map<number, WorldCopy>,
  viewers: Map<number, [number, number, number]>,
  tick: number,
  c: SessionConfig,
): string {
  const now = worlds.get(tick)!;
  const [vx, vy, vz] = viewers.get(tick)!;
  let inView = 0;
  for (let e = 0; e < schema.maxEntities; e++) {
    const held = writer.heldTick(tick, e);
    if (reader.inView(e) !== held >= 0) return `entity ${e}: in view ${reader.inView(e)}, held tick ${held}`;
    if (c.budgetBits === Infinity) {
      const dx = now.positions[3 * e] - vx;
      const dy = now.positions[3 * e + 1] - vy;
      const dz = now.positions[3 * e + 2] - vz;
      const visible = now.alive[e] === 1 && dx * dx + dy * dy + dz * dz <= c.viewRadius * c.viewRadius;
      if (visible !== held >= 0) return `entity ${e}: visible ${visible}, held tick ${held}`;
      if (visible && held !== tick) return `entity ${e}: held tick ${held} with an unlimited budget`;
    }
    if (held < 0) continue;
    inView++;
    const w = worlds.get(held)!;
    if (w.alive[e] !== 1) return `entity ${e}: not alive at its held tick ${held}`;
    const t = w.type[e];
    if (reader.typeOf(e) !== t) return `entity ${e}: type ${reader.typeOf(e)}, server ${t}`;
    if (reader.parityOf(e) !== w.parity[e])
      return `entity ${e}: parity ${reader.parityOf(e)}, server ${w.parity[e]}`;
    const values = reader.values(e);
    for (let f = 0; f < schema.types[t].fieldCount; f++) {
      const want = w.values[e * STRIDE + f];
      if (values[f] !== want) return `entity ${e} field ${f}: ${values[f]}, server ${want} at tick ${held}`;
    }
  }
  if (reader.viewCount !== inView) return `view count ${reader.viewCount}, expected ${inView}`;
  for (let k = 1; k < reader.viewCount; k++) {
    if (reader.view[k] <= reader.view[k - 1]) return `view not ascending at ${k}`;
  }
  for (let k = 0; k < reader.createdCount; k++) {
    const e = reader.created[k];
    if (!reader.inView(e) || !reader.changedThisFrame(e)) return `created ${e} not in view or not changed`;
  }
  return '';
}

const badNetwork = { loss: 0.2, duplicate: 0.1, maxDelayTicks: 6, ackLoss: 0.2, maxAckDelayTicks: 6 };
const busyWorld: WorldConfig = {
  targetEntities: 300,
  moveChance: 0.3,
  removeChance: 0.004,
  teleportChance: 0.01,
};

describe('update prediction', () => {
  it("predictEntity predicts each field as predictField does, with each extrapolated field's motion", () => {
    const types = [player, rocket, sound];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: types.length - 1 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 16, maxLength: 16 }),
        fc.integer({ min: 0, max: PREDICTION_TICKS + 2 }),
        fc.integer({ min: 0, max: PREDICTION_TICKS + 2 }),
        (t, draws, age, gap) => {
          const type = types[t];
          const n = type.fieldCount;
          const base = new Int32Array(n);
          const prev = new Int32Array(n);
          for (let f = 0; f < n; f++) {
            const span = type.hi[f] - type.lo[f];
            base[f] = type.lo[f] + Math.floor(draws[2 * f] * (span + 1));
            prev[f] = type.lo[f] + Math.floor(draws[2 * f + 1] * (span + 1));
          }
          const pred = new Float64Array(n);
          const motion = new Float64Array(n);
          predictEntity(type, base, 0, prev, 0, age, gap, pred, motion);
          const extrapolated = gap !== 0 && gap <= PREDICTION_TICKS && age <= PREDICTION_TICKS;
          for (let f = 0; f < n; f++) {
            expect(pred[f]).toBe(predictField(type, f, base[f], prev[f], age, gap));
            const kind = type.predict[f];
            if (!extrapolated || kind === PREDICT_HOLD) expect(motion[f]).toBe(0);
            else if (kind !== PREDICT_ANGLE) expect(motion[f]).toBe(base[f] - prev[f]);
            else {
              const m = type.hi[f] + 1;
              expect(motion[f]).toBeGreaterThanOrEqual(-m / 2);
              expect(motion[f]).toBeLessThan(m / 2);
              expect((((base[f] - prev[f] - motion[f]) % m) + m) % m).toBe(0);
            }
          }
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('snapshot codec over a bad network', () => {
  it('with an unlimited budget and infinite radius, every accepted frame is the whole world at its tick', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x7fffffff }), (seed) => {
        const r = runSession({
          seed,
          ticks: 220,
          world: busyWorld,
          budgetBits: Infinity,
          viewRadius: Infinity,
          ...badNetwork,
        });
        expect(r.accepted, `seed ${seed}`).toBeGreaterThan(r.sent / 2);
        expect(r.framesWithoutBaseline, `seed ${seed}`).toBeLessThan(r.sent / 10);
        // Both ways of listing the entries are exercised: runs (full frames, busy ones) and a step each.
        expect(r.runFrames, `seed ${seed}`).toBeGreaterThan(0);
        expect(r.runFrames, `seed ${seed}`).toBeLessThan(r.sent);
      }),
      { seed: SEED, numRuns: 10 },
    );
  });

  it('with a view radius, every accepted frame is exactly the world within the radius', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x7fffffff }), (seed) => {
        const r = runSession({
          seed,
          ticks: 220,
          world: busyWorld,
          budgetBits: Infinity,
          viewRadius: 2500,
          ...badNetwork,
        });
        expect(r.accepted, `seed ${seed}`).toBeGreaterThan(r.sent / 2);
      }),
      { seed: SEED + 1, numRuns: 6 },
    );
  });

  it('with a packet budget, no frame exceeds it and every entity in view holds exactly the values of its held tick', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0x7fffffff }),
        fc.integer({ min: 300, max: 9000 }),
        (seed, budget) => {
          const r = runSession({
            seed,
            ticks: 220,
            world: busyWorld,
            budgetBits: budget,
            viewRadius: 3000,
            ...badNetwork,
          });
          expect(r.maxBits, `seed ${seed} budget ${budget}`).toBeLessThanOrEqual(budget);
          expect(r.accepted, `seed ${seed} budget ${budget}`).toBeGreaterThan(r.sent / 2);
        },
      ),
      { seed: SEED + 2, numRuns: 10 },
    );
  });
});

/** A store, writer and reader on a perfect network: each frame is read and acknowledged at once. */
function perfectLink(budgetBits = Infinity, viewRadius = Infinity, historyTicks = 128) {
  const store = new EntityStore(schema, { historyTicks });
  const writer = new SnapshotWriter(store, { viewRadius });
  const reader = new SnapshotReader(schema);
  const out = new BitStream(1 << 16);
  const inStream = new BitStream(0);
  let tick = 0;
  return {
    store,
    writer,
    reader,
    /** Commits the next tick, sends its frame from (0, 0, 0) and reads it; returns its bits. */
    step(ack = true): number {
      tick++;
      store.commit(tick);
      out.beginWrite();
      expect(writer.write(out, tick, 0, 0, 0, budgetBits), `tick ${tick}`).toBe(true);
      expect(reader.read(inStream.beginRead(out.bytes.slice()), tick), `tick ${tick}`).toBe(true);
      if (ack) writer.acknowledge(tick);
      return out.bitsProcessed;
    },
    get tick() {
      return tick;
    },
  };
}

describe('writers sharing a store', () => {
  it('write the same frames as writers each with a store of its own, failed writes included', () => {
    // Every writer of a store shares the arrays of the frame being written; interleaved writes,
    // lost and late acknowledgements and writes that fail for want of room must not leak between them.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), (seed) => {
        const at = `seed ${seed}`;
        const WRITERS = 3;
        const radii = [Infinity, 2500, 1200];
        const budgets = [Infinity, 2400, 900];
        const shared = new EntityStore(schema);
        const alone = Array.from({ length: WRITERS }, () => new EntityStore(schema));
        const sharedWriters = radii.map((viewRadius) => new SnapshotWriter(shared, { viewRadius }));
        const aloneWriters = radii.map((viewRadius, i) => new SnapshotWriter(alone[i], { viewRadius }));
        const worldRngs = [new Random(seed), ...alone.map(() => new Random(seed))];
        const net = new Random(seed ^ 0x5bd1e995);
        const big = new BitStream(1 << 16);
        const other = new BitStream(1 << 16);
        const tiny = new BitStream(1);
        const heldShared = new Uint32Array(schema.maxEntities);
        const heldAlone = new Uint32Array(schema.maxEntities);
        const acks: { at: number; writer: number; tick: number }[] = [];
        for (let tick = 1; tick <= 160; tick++) {
          evolve(shared, worldRngs[0], busyWorld);
          shared.commit(tick);
          for (let i = 0; i < WRITERS; i++) {
            evolve(alone[i], worldRngs[i + 1], busyWorld);
            alone[i].commit(tick);
          }
          const vx = 2000 * Math.sin(tick / 30);
          const vy = 2000 * Math.cos(tick / 45);
          for (let i = 0; i < WRITERS; i++) {
            // Now and then a write fails (no room even for an empty snapshot), on both sides alike.
            const fail = net.chance(0.05);
            const a = fail ? tiny.beginWrite() : big.beginWrite();
            const b = fail ? tiny.beginWrite() : other.beginWrite();
            const okShared = sharedWriters[i].write(a, tick, vx, vy, 0, budgets[i]);
            const bytesShared = okShared ? a.bytes.slice() : null;
            const okAlone = aloneWriters[i].write(b, tick, vx, vy, 0, budgets[i]);
            expect(okShared, `${at} writer ${i} tick ${tick}`).toBe(okAlone);
            expect(okShared, `${at} writer ${i} tick ${tick}`).toBe(!fail);
            if (bytesShared !== null) expect(bytesShared, `${at} writer ${i} tick ${tick}`).toEqual(b.bytes);
            if (okShared && !net.chance(0.2)) acks.push({ at: tick + net.int(1, 6), writer: i, tick });
          }
          for (const k of acks) {
            if (k.at !== tick) continue;
            sharedWriters[k.writer].acknowledge(k.tick);
            aloneWriters[k.writer].acknowledge(k.tick);
          }
          for (let i = 0; i < WRITERS; i++) {
            const back = tick - net.int(0, 20);
            const hs = sharedWriters[i].heldTicks(back, heldShared);
            expect(hs, `${at} writer ${i} frame ${back}`).toBe(aloneWriters[i].heldTicks(back, heldAlone));
            if (hs) expect(heldShared, `${at} writer ${i} frame ${back}`).toEqual(heldAlone);
          }
        }
      }),
      { seed: SEED, numRuns: 8 },
    );
  });

  it('heldTick, heldTicks and frameView agree on every remembered frame, and a short out is refused', () => {
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    const rng = new Random(SEED);
    const s = new BitStream(1 << 16);
    const held = new Uint32Array(schema.maxEntities);
    const view = new Uint16Array(schema.maxEntities);
    for (let tick = 1; tick <= 40; tick++) {
      evolve(store, rng, busyWorld);
      store.commit(tick);
      expect(writer.write(s.beginWrite(), tick, 0, 0, 0, Infinity), `tick ${tick}`).toBe(true);
      if (tick % 3 === 0) writer.acknowledge(tick);
      for (const t of [tick, tick - 5]) {
        if (!writer.hasFrame(t)) continue;
        expect(writer.heldTicks(t, held)).toBe(true);
        const n = writer.frameView(t, view);
        let inView = 0;
        for (let e = 0; e < schema.maxEntities; e++) {
          const h = writer.heldTick(t, e);
          expect(h === -1 ? 0xffffffff : h, `frame ${t} entity ${e}`).toBe(held[e]);
          if (h >= 0) inView++;
        }
        expect(n, `frame ${t}`).toBe(inView);
        for (let k = 0; k < n; k++) expect(held[view[k]], `frame ${t}`).not.toBe(0xffffffff);
      }
    }
    // Views of up to 300 entities: frames grew past their first room.
    expect(writer.stats.lastInView).toBeGreaterThan(200);
    expect(writer.heldTicks(9999, held)).toBe(false);
    expect(() => writer.heldTicks(40, new Uint32Array(8))).toThrow(
      /out has 8 entries, fewer than the store's 512/,
    );
  });
});

describe('snapshot size', () => {
  it('a static world of 100 entities costs 10 bits per snapshot once acknowledged', () => {
    const link = perfectLink();
    const rng = new Random(SEED);
    for (let i = 0; i < 100; i++) spawn(link.store, rng);
    const first = link.step();
    expect(first, `seed ${SEED}`).toBeGreaterThan(100 * 40);
    for (let i = 0; i < 20; i++) expect(link.step(), `seed ${SEED} frame ${i}`).toBe(EMPTY_BITS);
    expect(link.reader.viewCount, `seed ${SEED}`).toBe(100);
  });

  it('one moving field of one entity costs a few bits over the empty snapshot', () => {
    const link = perfectLink();
    const rng = new Random(SEED);
    for (let i = 0; i < 100; i++) spawn(link.store, rng);
    link.step();
    const e = 37;
    expect(link.store.typeIdAt(e), `seed ${SEED}`).toBeGreaterThanOrEqual(0);
    const t = schema.types[link.store.typeIdAt(e)];
    link.store.values(e)[0] = (link.store.values(e)[0] + 1) % (t.hi[0] + 1);
    const bits = link.step();
    // index step + the listing bit + head (changed count 1) + the residual +1 (class 2: its code
    // and 1 bit), over the empty snapshot; the entity was created in the baseline, so its
    // prediction is its value.
    expect(bits, `seed ${SEED}`).toBe(
      EMPTY_BITS + indexStepBits(e + 1) + 1 + t.changedCode.lengths[1] + t.residualCodes[0].lengths[2] + 1,
    );
    expect(link.reader.changedThisFrame(e), `seed ${SEED}`).toBe(true);
    expect(link.reader.changedThisFrame(e + 1), `seed ${SEED}`).toBe(false);
  });

  it('consecutive entries are listed as a run: one step and one length instead of a bit each', () => {
    const link = perfectLink();
    const first = 5;
    const count = 64;
    for (let i = 0; i < first + count + 10; i++) link.store.create(1);
    link.step();
    // Each entry moves field 1 (y) by one step: head of changed count 2, field 0's class 0,
    // field 1's class 2 and its 1 bit below the top one.
    const entryBits =
      rocket.changedCode.lengths[2] +
      rocket.residualCodes[0].lengths[0] +
      rocket.residualCodes[1].lengths[2] +
      1;
    for (let e = first; e < first + count; e++) link.store.values(e)[1]++;
    const runs = link.step();
    expect(runs, `seed ${SEED}`).toBe(
      EMPTY_BITS + indexStepBits(first + 1) + 1 + runLengthBits(count) + count * entryBits,
    );
    for (let e = first; e < first + count; e++)
      expect(link.reader.changedThisFrame(e), `seed ${SEED} ${e}`).toBe(true);
    expect(link.reader.changedThisFrame(first - 1), `seed ${SEED}`).toBe(false);
    expect(link.reader.changedThisFrame(first + count), `seed ${SEED}`).toBe(false);
    // Scattered entries are cheaper a step each (a run would add a length bit each): that form.
    const scattered = [first, first + 2, first + 4];
    for (const e of scattered) link.store.values(e)[1]++;
    const steps = link.step();
    // Their y moved by the same step last frame: predicted exactly, each entry is a head of
    // changed count 0. Listed a step each, not as runs (which would cost a length bit each more).
    const stepForm = indexStepBits(first + 1) + 1 + 2 * indexStepBits(2);
    expect(steps, `seed ${SEED}`).toBe(EMPTY_BITS + stepForm + 3 * rocket.changedCode.lengths[0]);
    for (const e of scattered)
      expect(link.reader.values(e)[1], `seed ${SEED} ${e}`).toBe(link.store.values(e)[1]);
  });

  it('run lengths round-trip, cost runLengthBits, and hostile ones fail without throwing', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 131_071 }), { minLength: 1, maxLength: 40 }),
        (lengths) => {
          const s = new BitStream(1024).beginWrite();
          let bits = 0;
          for (const n of lengths) {
            serializeRunLength(s, n);
            bits += runLengthBits(n);
          }
          expect(s.bitsProcessed).toBe(bits);
          const r = new BitStream(0).beginRead(s.bytes.slice());
          for (const n of lengths) expect(serializeRunLength(r, 0)).toBe(n);
          expect(r.ok).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    const measure = new BitStream(0).beginMeasure();
    serializeRunLength(measure, 64);
    expect(measure.bitsProcessed).toBe(runLengthBits(64));
    expect(runLengthBits(1)).toBe(1);
    expect(runLengthBits(63)).toBe(11);
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 6 }), (bytes) => {
        const r = new BitStream(0).beginRead(bytes);
        const n = serializeRunLength(r, 0);
        if (r.ok) expect(n).toBeGreaterThanOrEqual(1);
        else expect(['malformed', 'read past end']).toContain(r.error);
      }),
      { seed: SEED, numRuns: 2000 },
    );
    // 24 zeros: longer than any length up to 131,071 has.
    const long = new BitStream(0).beginRead(new Uint8Array([0, 0, 0, 0xff, 0xff]));
    serializeRunLength(long, 0);
    expect(long.error).toBe('malformed');
  });

  it('an unacknowledged baseline means full frames; the first ack brings deltas', () => {
    const link = perfectLink();
    const rng = new Random(SEED);
    for (let i = 0; i < 50; i++) spawn(link.store, rng);
    const a = link.step(false);
    const b = link.step(false);
    expect(b, `seed ${SEED}`).toBe(a);
    expect(link.writer.stats.framesWithoutBaseline, `seed ${SEED}`).toBe(2);
    link.writer.acknowledge(link.tick);
    expect(link.step(), `seed ${SEED}`).toBe(EMPTY_BITS);
    link.writer.resetBaseline();
    expect(link.step(), `seed ${SEED}`).toBe(a);
    expect(link.reader.baselineTick, `seed ${SEED}`).toBe(-1);
  });
});

describe('priority within a budget', () => {
  it('far entities still update, less often than near ones, and the budget is never exceeded', () => {
    const budget = 1500;
    const link = perfectLink(budget);
    const rng = new Random(SEED);
    const distance: number[] = [];
    for (let i = 0; i < 200; i++) {
      const e = link.store.create(1);
      const d = 100 + (i / 200) * 3900;
      const a = rng.range(0, 2 * Math.PI);
      link.store.setField(e, 0, d * Math.cos(a));
      link.store.setField(e, 1, d * Math.sin(a));
      distance[e] = d;
    }
    const lastUpdate = new Array<number>(200).fill(0);
    const maxGap = new Array<number>(200).fill(0);
    const updates = new Array<number>(200).fill(0);
    const ticks = 400;
    for (let tick = 1; tick <= ticks; tick++) {
      // A direction no prediction can follow: every entity needs its full residual each tick.
      for (let e = 0; e < 200; e++) link.store.values(e)[3] = rng.int(0, 1023);
      const bits = link.step();
      expect(bits, `seed ${SEED} tick ${tick}`).toBeLessThanOrEqual(budget);
      for (let e = 0; e < 200; e++) {
        if (!link.reader.changedThisFrame(e)) continue;
        if (lastUpdate[e] > 0) maxGap[e] = Math.max(maxGap[e], tick - lastUpdate[e]);
        lastUpdate[e] = tick;
        if (tick > 100) updates[e]++;
      }
    }
    for (let e = 0; e < 200; e++) {
      expect(lastUpdate[e], `seed ${SEED} entity ${e}`).toBeGreaterThan(ticks - 60);
      expect(maxGap[e], `seed ${SEED} entity ${e} at ${distance[e]}`).toBeLessThanOrEqual(60);
    }
    const near = updates.slice(0, 20).reduce((a, b) => a + b, 0);
    const far = updates.slice(180).reduce((a, b) => a + b, 0);
    expect(near, `seed ${SEED} near ${near} far ${far}`).toBeGreaterThan(2 * far);
    expect(far, `seed ${SEED}`).toBeGreaterThan(0);
  });

  it('no value a frame holds gets older than maxHeldAgeTicks: updates deferred that long go first, past the budget if need be', () => {
    // 200 entities changing every tick through a budget of a few entries a frame (120 bits), then
    // of none (30 bits, from tick 150): the far ones wait for their priority to grow. With
    // maxHeldAgeTicks no value a frame holds is older than that (lag compensation must still find
    // it in the entity history); without, some are.
    const run = (maxHeldAgeTicks: number) => {
      const store = new EntityStore(schema, { historyTicks: 128 });
      const writer = new SnapshotWriter(store, { maxHeldAgeTicks });
      const reader = new SnapshotReader(schema);
      const out = new BitStream(1 << 16);
      const rng = new Random(SEED);
      for (let i = 0; i < 200; i++) store.setField(store.create(1), 0, 100 + (i / 200) * 3900);
      let age = 0;
      let overBudget = 0;
      for (let tick = 1; tick <= 300; tick++) {
        for (let e = 0; e < 200; e++) store.values(e)[3] = rng.int(0, 1023);
        store.commit(tick);
        const budget = tick <= 10 ? Infinity : tick < 150 ? 120 : 30;
        out.beginWrite();
        expect(writer.write(out, tick, 0, 0, 0, budget), `seed ${SEED} tick ${tick}`).toBe(true);
        expect(reader.read(new BitStream(0).beginRead(out.bytes.slice()), tick), `tick ${tick}`).toBe(true);
        writer.acknowledge(tick);
        if (out.bitsProcessed > budget) overBudget++;
        if (tick <= 100) continue;
        for (let e = 0; e < 200; e++) {
          const held = writer.heldTick(tick, e);
          if (held >= 0) age = Math.max(age, tick - held);
        }
      }
      return { age, overBudget };
    };
    const limited = run(40);
    expect(limited.age, `seed ${SEED}`).toBeLessThanOrEqual(40);
    expect(limited.overBudget, `seed ${SEED}`).toBeGreaterThan(0);
    const unlimited = run(0);
    expect(unlimited.age, `seed ${SEED}`).toBeGreaterThan(40);
    expect(unlimited.overBudget, `seed ${SEED}`).toBe(0);
  });

  it('an entity held too long goes out even behind one whose priority has grown as high', () => {
    // Entity 1 changed once at tick 10, entity 0 changes every tick from tick 40, and no entry fits
    // the budget: entity 0's priority grows past the top buckets' threshold while it waits, and
    // must not stand in front of entity 1 when entity 1's values reach maxHeldAgeTicks.
    const store = new EntityStore(schema, { historyTicks: 512 });
    const writer = new SnapshotWriter(store, { maxHeldAgeTicks: 100 });
    const out = new BitStream(1 << 16);
    store.create(1);
    store.create(1);
    let oldest = 0;
    for (let tick = 1; tick <= 300; tick++) {
      if (tick === 10) store.values(1)[3] = 7;
      if (tick >= 40) store.values(0)[3] = tick % 1000;
      store.commit(tick);
      out.beginWrite();
      expect(writer.write(out, tick, 0, 0, 0, tick <= 5 ? Infinity : 12), `tick ${tick}`).toBe(true);
      writer.acknowledge(tick);
      for (const e of [0, 1]) oldest = Math.max(oldest, tick - writer.heldTick(tick, e));
    }
    expect(oldest).toBeLessThanOrEqual(100);
  });

  it('a budget below an empty snapshot still writes the empty snapshot', () => {
    const link = perfectLink(1);
    const rng = new Random(SEED);
    for (let i = 0; i < 10; i++) spawn(link.store, rng);
    expect(link.step(), `seed ${SEED}`).toBe(EMPTY_BITS);
    expect(link.reader.viewCount, `seed ${SEED}`).toBe(0);
    expect(link.writer.stats.lastDeferred, `seed ${SEED}`).toBe(10);
  });

  it('entities that do not fit the stream are left for a later frame', () => {
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    const rng = new Random(SEED);
    for (let i = 0; i < 50; i++) spawn(store, rng);
    store.commit(1);
    const small = new BitStream(40).beginWrite();
    expect(writer.write(small, 1, 0, 0, 0, Infinity), `seed ${SEED}`).toBe(true);
    expect(small.bitsProcessed, `seed ${SEED}`).toBeLessThanOrEqual(320);
    const reader = new SnapshotReader(schema);
    expect(reader.read(new BitStream(0).beginRead(small.bytes.slice()), 1), `seed ${SEED}`).toBe(true);
    expect(reader.viewCount, `seed ${SEED}`).toBe(writer.stats.lastCreated);
    expect(reader.viewCount, `seed ${SEED}`).toBeGreaterThan(0);
    expect(reader.viewCount, `seed ${SEED}`).toBeLessThan(50);
  });
});

describe('entity lifecycle on the wire', () => {
  it('a teleport flips parity; an index reused by a new entity is removed and created', () => {
    const link = perfectLink();
    const a = link.store.create(0);
    const b = link.store.create(1);
    link.step();
    expect([link.reader.createdCount, link.reader.removedCount], `seed ${SEED}`).toEqual([2, 0]);
    const parity = link.reader.parityOf(a);
    link.store.teleport(a);
    link.step();
    expect(link.reader.parityOf(a), `seed ${SEED}`).toBe(parity ^ 1);
    expect(link.reader.changedThisFrame(a), `seed ${SEED}`).toBe(true);
    link.store.remove(b);
    expect(link.store.create(2), `seed ${SEED}`).toBe(b);
    link.step();
    expect(Array.from(link.reader.removed.subarray(0, link.reader.removedCount)), `seed ${SEED}`).toEqual([
      b,
    ]);
    expect(Array.from(link.reader.created.subarray(0, link.reader.createdCount)), `seed ${SEED}`).toEqual([
      b,
    ]);
    expect(link.reader.typeOf(b), `seed ${SEED}`).toBe(2);
    // A new entity in a reused index flips the parity too: never blended with the old one.
    expect(link.reader.parityOf(b), `seed ${SEED}`).toBe(0);
    link.store.remove(b);
    link.step();
    expect(link.reader.inView(b), `seed ${SEED}`).toBe(false);
    expect(Array.from(link.reader.removed.subarray(0, link.reader.removedCount)), `seed ${SEED}`).toEqual([
      b,
    ]);
  });

  it('an entity changed while its held tick left the history is refreshed in full', () => {
    const link = perfectLink(Infinity, 1000, 4);
    const e = link.store.create(1);
    link.store.setField(e, 0, 500);
    const far = link.store.create(1);
    link.store.setField(far, 0, 3000);
    link.step();
    expect(link.reader.inView(far), `seed ${SEED}`).toBe(false);
    for (let i = 0; i < 8; i++) expect(link.step(false), `seed ${SEED} frame ${i}`).toBe(EMPTY_BITS);
    link.store.setField(e, 1, 7);
    const bits = link.step();
    expect(link.reader.baselineTick, `seed ${SEED}`).toBe(1);
    // index step and the listing bit, escaped head and op (2 bits: refresh), parity, every value.
    const entry = indexStepBits(e + 1) + 1;
    const escapeHead = rocket.changedCode.lengths[rocket.fieldCount + 1];
    expect(bits, `seed ${SEED}`).toBe(EMPTY_BITS + entry + escapeHead + 2 + 1 + rocket.valueBits);
    const before = link.store.values(e)[1];
    expect(link.reader.values(e)[1], `seed ${SEED}`).toBe(before);
    link.store.setField(e, 1, 9);
    // A refreshed entity has one value: its prediction is that value, the residual the whole move.
    const delta = link.store.values(e)[1] - before;
    const u = delta >= 0 ? 2 * delta : -2 * delta - 1;
    const c = 32 - Math.clz32(u);
    const residuals = rocket.residualCodes[0].lengths[0] + rocket.residualCodes[1].lengths[c] + c - 1;
    expect(link.step(), `seed ${SEED}`).toBe(EMPTY_BITS + entry + rocket.changedCode.lengths[2] + residuals);
  });

  it("the viewer's own entity is never sent, and leaves the view when it becomes the viewer's", () => {
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    const reader = new SnapshotReader(schema);
    const a = store.create(0);
    const b = store.create(0);
    const out = new BitStream(1200);
    for (let tick = 1; tick <= 2; tick++) {
      store.commit(tick);
      writer.write(out.beginWrite(), tick, 0, 0, 0, Infinity, tick === 1 ? a : b);
      expect(reader.read(new BitStream(0).beginRead(out.bytes.slice()), tick), `seed ${SEED}`).toBe(true);
      writer.acknowledge(tick);
      expect([reader.inView(a), reader.inView(b)], `seed ${SEED} tick ${tick}`).toEqual([
        tick === 2,
        tick === 1,
      ]);
    }
  });

  it('acknowledgements of unknown frames, or of frames sent before a reset, are ignored', () => {
    const link = perfectLink();
    link.store.create(0);
    link.step(false);
    link.writer.acknowledge(99);
    link.writer.acknowledge(-3);
    link.writer.acknowledge(Number.NaN);
    expect(link.writer.baselineTick, `seed ${SEED}`).toBe(-1);
    link.writer.resetBaseline();
    link.writer.acknowledge(1);
    expect(link.writer.baselineTick, `seed ${SEED}`).toBe(-1);
    link.step();
    expect(link.writer.baselineTick, `seed ${SEED}`).toBe(2);
    // Two acknowledgements before the baseline is read again: an unknown frame after a known one
    // leaves the known one the baseline.
    link.step(false);
    link.writer.acknowledge(3);
    link.writer.acknowledge(99);
    expect(link.writer.baselineTick, `seed ${SEED}`).toBe(3);
  });

  it('a writer refuses a tick that is not the newest commit, or a second frame for a tick', () => {
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    store.commit(5);
    const s = new BitStream(100).beginWrite();
    expect(() => writer.write(s, 4, 0, 0, 0, 1000), `seed ${SEED}`).toThrow(/tick 4.*newest commit \(5\)/);
    writer.write(s, 5, 0, 0, 0, 1000);
    expect(() => writer.write(s, 5, 0, 0, 0, 1000), `seed ${SEED}`).toThrow(/already written for tick 5/);
    expect(() => defineGameSchema(schema.types, { frameHistory: 48 }), `seed ${SEED}`).toThrow(
      /frameHistory.*48/,
    );
  });
});

describe('reader memory', () => {
  it('frames that move from even ticks to odd ones and back take no more frames than one parity needs', () => {
    // A client sent every other tick fills half the ring's slots. When its frames move to the
    // other parity, the old frames, out of the read window, are taken for the new slots.
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    const reader = new SnapshotReader(schema);
    const e = store.create(0);
    const out = new BitStream(MAX_PACKET_BYTES);
    const len = schema.frameHistory;
    let tick = 0;
    let phase = 0;
    for (let shift = 0; shift < 6; shift++) {
      for (let i = 0; i < 4 * len; i++) {
        tick++;
        store.setField(e, 0, (tick % 97) * 3);
        store.commit(tick);
        if (tick % 2 !== phase) continue;
        writer.write(out.beginWrite(), tick, 0, 0, 0, Infinity);
        expect(reader.read(new BitStream(0).beginRead(out.bytes.slice()), tick), `tick ${tick}`).toBe(true);
        writer.acknowledge(tick);
        expect(reader.values(e)[0], `tick ${tick}`).toBe(store.values(e)[0]);
      }
      phase ^= 1;
    }
    // Half the ring, the work frame, and one for the slot read while the last old frame was
    // still in the window.
    expect(reader.stats.framesMade, 'frames made').toBeLessThanOrEqual(len / 2 + 2);
    expect(reader.stats.framesMade, 'frames made').toBeGreaterThanOrEqual(len / 2);
  });
});

describe('reader: what it may have forgotten', () => {
  it('holds every frame it read that mayHaveForgotten says it may not have, whatever the order and loss', () => {
    fc.assert(
      fc.property(
        // Mostly in order, some late by up to 90 ticks (past the ring's 64), one in ten lost.
        fc.array(
          fc.record({
            delay: fc.oneof(fc.constant(2), fc.integer({ min: 0, max: 90 })),
            lost: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
          }),
          { minLength: 200, maxLength: 400 },
        ),
        fc.integer({ min: 1, max: 2 }),
        (sends, every) => {
          const store = new EntityStore(schema, { historyTicks: 256 });
          const writer = new SnapshotWriter(store);
          const reader = new SnapshotReader(schema);
          const e = store.create(0);
          const out = new BitStream(MAX_PACKET_BYTES);
          // Each frame arrives `delay` ticks after it is written (out of order), or is lost.
          const arrivals: { at: number; tick: number; bytes: Uint8Array }[] = [];
          const read: number[] = [];
          for (let tick = 1; tick <= sends.length + 100; tick++) {
            if (tick <= sends.length) {
              store.setField(e, 0, tick % 50);
              store.commit(tick);
              if (tick % every === 0) {
                writer.write(out.beginWrite(), tick, 0, 0, 0, Infinity);
                const send = sends[tick - 1];
                if (!send.lost) arrivals.push({ at: tick + send.delay, tick, bytes: out.bytes.slice() });
              }
            }
            for (const a of arrivals.filter((x) => x.at === tick)) {
              if (reader.read(new BitStream(0).beginRead(a.bytes), a.tick)) {
                read.push(a.tick);
                writer.acknowledge(a.tick);
              }
            }
            for (const t of read) {
              if (!reader.mayHaveForgotten(t) && reader.frameAt(t) === undefined) return false;
            }
          }
          return read.length > 0;
        },
      ),
      { seed: SEED + 7, numRuns: 30 },
    );
  });
});

describe('index steps', () => {
  /** The step layout read one bit at a time, as serializeIndexStep documents it. */
  function referenceStep(s: BitStream): number {
    if (s.uint(0, 1) === 1) return 1;
    if (s.uint(0, 1) === 1) return 0;
    let zeros = 0;
    while (s.uint(0, 1) === 0) {
      if (!s.ok) return 0;
      if (++zeros > 16) {
        s.fail('malformed');
        return 0;
      }
    }
    return (zeros === 0 ? 1 : (1 << zeros) + s.uint(0, zeros)) + 1;
  }

  it('any bytes read as the bit-by-bit layout reads them: the same steps, position and failure', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 12 }), (bytes) => {
        const a = new BitStream(0).beginRead(bytes);
        const b = new BitStream(0).beginRead(bytes);
        for (let i = 0; i < 40; i++) {
          const got = serializeIndexStep(a, 0);
          const want = referenceStep(b);
          expect([got, a.ok, a.error, a.bitsRemaining]).toEqual([want, b.ok, b.error, b.bitsRemaining]);
          if (!b.ok) break;
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('every step written reads back, each after any bit offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 7 }),
        fc.array(fc.integer({ min: 0, max: 65536 }), { minLength: 1, maxLength: 30 }),
        (offset, steps) => {
          const w = new BitStream(256).beginWrite();
          w.uint(0, offset);
          for (const step of steps) serializeIndexStep(w, step);
          expect(w.bitsProcessed).toBe(offset + steps.reduce((n, step) => n + indexStepBits(step), 0));
          const r = new BitStream(0).beginRead(w.bytes.slice());
          r.uint(0, offset);
          for (const step of steps) expect(serializeIndexStep(r, 0)).toBe(step);
          expect(r.ok).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});

describe('reader against bad input', () => {
  it('a baseline it does not hold, or one too old, is dropped and asks for a full update; a duplicate is not', () => {
    const link = perfectLink();
    link.store.create(0);
    link.step();
    const s = new BitStream(16).beginWrite();
    s.varuint(5);
    serializeIndexStep(s, 0);
    const bytes = s.bytes.slice();
    const r = link.reader;
    expect(r.read(new BitStream(0).beginRead(bytes), 10), `seed ${SEED}`).toBe(false);
    expect(r.stats.dropped['baseline unknown'], `seed ${SEED}`).toBe(1);
    expect(r.needsFullUpdate, `seed ${SEED}`).toBe(true);
    const old = new BitStream(16).beginWrite();
    old.varuint(64);
    serializeIndexStep(old, 0);
    expect(r.read(new BitStream(0).beginRead(old.bytes.slice()), 70), `seed ${SEED}`).toBe(false);
    expect(r.stats.dropped['baseline too old'], `seed ${SEED}`).toBe(1);
    const empty = new BitStream(16).beginWrite();
    empty.varuint(0);
    serializeIndexStep(empty, 0);
    expect(r.read(new BitStream(0).beginRead(empty.bytes.slice()), 1), `seed ${SEED}`).toBe(false);
    expect(r.stats.dropped.duplicate, `seed ${SEED}`).toBe(1);
    expect(r.read(new BitStream(0).beginRead(empty.bytes.slice()), 12), `seed ${SEED}`).toBe(true);
    expect(r.needsFullUpdate, `seed ${SEED}`).toBe(false);
    expect(r.viewCount, `seed ${SEED}`).toBe(0);
  });

  it('a snapshot that fails half way leaves nothing of itself in the next frame', () => {
    const store = new EntityStore(schema, { historyTicks: 128 });
    const writer = new SnapshotWriter(store);
    const reader = new SnapshotReader(schema);
    const out = new BitStream(1 << 16);
    const read = new BitStream(0);
    const a = store.create(0);
    store.commit(1);
    out.beginWrite();
    writer.write(out, 1, 0, 0, 0, Infinity);
    expect(reader.read(read.beginRead(out.bytes.slice()), 1)).toBe(true);
    writer.acknowledge(1);
    // Frame 2 creates an entity, and arrives cut short after that entity's entry.
    const b = store.create(1);
    store.commit(2);
    out.beginWrite();
    writer.write(out, 2, 0, 0, 0, Infinity);
    const cut = out.bytes.slice(0, out.bytes.length - 1);
    expect(reader.read(read.beginRead(cut), 2)).toBe(false);
    // Frame 3 (against frame 1) no longer has it: the view must not either.
    store.remove(b);
    store.commit(3);
    out.beginWrite();
    writer.write(out, 3, 0, 0, 0, Infinity);
    expect(reader.read(read.beginRead(out.bytes.slice()), 3)).toBe(true);
    expect(Array.from(reader.view.subarray(0, reader.viewCount))).toEqual([a]);
  });

  it('the outputs show the frame last read, whether or not they were looked at after each read, across failed reads', () => {
    const store = new EntityStore(schema, { historyTicks: 128 });
    const writer = new SnapshotWriter(store);
    const reader = new SnapshotReader(schema);
    const out = new BitStream(1 << 16);
    const read = new BitStream(0);
    const frames: Uint8Array[] = [];
    const a = store.create(0);
    const b = store.create(1);
    for (let tick = 1; tick <= 4; tick++) {
      store.values(a)[0] = tick * 10;
      if (tick === 3) store.remove(b);
      store.commit(tick);
      out.beginWrite();
      writer.write(out, tick, 0, 0, 0, Infinity);
      frames.push(out.bytes.slice());
    }
    const shown = () => ({
      view: Array.from(reader.view.subarray(0, reader.viewCount)),
      x: reader.values(a)[0],
      b: reader.inView(b),
    });
    // Two reads, the first never looked at: the outputs show the second.
    expect(reader.read(read.beginRead(frames[0]), 1)).toBe(true);
    expect(reader.read(read.beginRead(frames[1]), 2)).toBe(true);
    expect(shown()).toEqual({ view: [a, b], x: 20, b: true });
    // A read, then a failed one (cut short) before anyone looks: still the read one.
    expect(reader.read(read.beginRead(frames[2]), 3)).toBe(true);
    expect(reader.read(read.beginRead(frames[3].slice(0, 3)), 4)).toBe(false);
    expect(shown()).toEqual({ view: [a], x: 30, b: false });
    expect(reader.typeOf(a)).toBe(0);
    expect(reader.changedThisFrame(a)).toBe(true);
    // Looked at, then a failed read: unchanged; then reset: empty.
    expect(reader.read(read.beginRead(frames[3].slice(0, 3)), 4)).toBe(false);
    expect(shown()).toEqual({ view: [a], x: 30, b: false });
    reader.reset();
    expect(reader.viewCount).toBe(0);
    expect(reader.inView(a)).toBe(false);
  });

  it('names each kind of bad content', () => {
    const link = perfectLink();
    link.store.create(0);
    link.step();
    const t = schema.types[0];
    const escapeHead = t.fieldCount + 1;
    // Each case writes what follows the baseline delta (1, the frame above), entry by entry.
    // The first step is followed by the listing bit: 0, a step each.
    const entry = (s: BitStream, index: number, prev = -1): void => {
      serializeIndexStep(s, index - prev);
      if (prev < 0) s.bool(false);
    };
    // The same listed as runs: the step, the listing bit 1 and the run's length.
    const run = (s: BitStream, index: number, length: number, prev = -1): void => {
      serializeIndexStep(s, index - prev);
      if (prev < 0) s.bool(true);
      serializeRunLength(s, length);
    };
    const cases: [string, (s: BitStream) => void][] = [
      ['index out of range', (s) => entry(s, 600)],
      // A run that starts inside the capacity (512) and ends beyond it.
      ['index out of range', (s) => run(s, 500, 13)],
      ['index out of range', (s) => run(s, 0, 100_000)],
      [
        'index out of range',
        (s) => {
          run(s, 0, 1);
          t.changedCode.serialize(s, 0);
          run(s, 511, 2, 0);
        },
      ],
      [
        'malformed',
        (s) => {
          // A run length of more than 16 leading zeros.
          serializeIndexStep(s, 1);
          s.bool(true);
          s.uint(0, 20);
          s.uint(0xff, 8);
        },
      ],
      [
        'index out of range',
        (s) => {
          entry(s, 0);
          t.changedCode.serialize(s, 0);
          entry(s, 512, 0);
        },
      ],
      [
        'unknown entity type',
        (s) => {
          // Index 1 is not held: a create, with its parity and type.
          entry(s, 1);
          s.uint(0, 1);
          s.uint(3, schema.typeBits);
        },
      ],
      [
        'field value out of range',
        (s) => {
          // An update of field 0 whose residual class allows more than the field's range.
          entry(s, 0);
          t.changedCode.serialize(s, 1);
          const top = t.residualCodes[0].size - 1;
          t.residualCodes[0].serialize(s, top);
          s.uint(2 ** (top - 1) - 1, top - 1);
        },
      ],
      [
        'overrun',
        (s) => {
          // A refresh of index 0 with its parity and no values.
          entry(s, 0);
          t.changedCode.serialize(s, escapeHead);
          s.uint(2, 2);
          s.uint(0, 1);
        },
      ],
      [
        'malformed',
        (s) => {
          // An index step of more than 16 leading zeros.
          s.uint(0, 2);
          s.uint(0, 20);
          s.uint(0xff, 8);
        },
      ],
      [
        'malformed',
        (s) => {
          // An update across a teleport whose changed count escapes again.
          entry(s, 0);
          t.changedCode.serialize(s, escapeHead);
          s.uint(3, 2);
          t.changedCode.serialize(s, escapeHead);
        },
      ],
    ];
    for (const [reason, write] of cases) {
      const s = new BitStream(64).beginWrite();
      s.varuint(1);
      write(s);
      const dropped = link.reader.stats.dropped as Record<string, number>;
      const before = dropped[reason];
      expect(link.reader.read(new BitStream(0).beginRead(s.bytes.slice()), 2), `seed ${SEED} ${reason}`).toBe(
        false,
      );
      expect(dropped[reason], `seed ${SEED} ${reason}`).toBe(before + 1);
      expect(link.reader.needsFullUpdate, `seed ${SEED} ${reason}`).toBe(true);
    }
    const s = new BitStream(64).beginWrite();
    s.uint(0xffffffff, 32);
    s.uint(0xff, 8);
    const before = link.reader.stats.dropped.malformed;
    expect(link.reader.read(new BitStream(0).beginRead(s.bytes.slice()), 2), `seed ${SEED}`).toBe(false);
    expect(link.reader.stats.dropped.malformed, `seed ${SEED}`).toBe(before + 1);
    expect(link.reader.frameTick, `seed ${SEED}`).toBe(1);
    expect(link.reader.viewCount, `seed ${SEED}`).toBe(1);
  });

  it('a field value out of its range is dropped', () => {
    const t = defineEntityType<{ v: number }>('odd', { v: { kind: 'float', min: 0, max: 5, precision: 1 } });
    const oddSchema = defineGameSchema([t], { maxEntities: 8 });
    const reader = new SnapshotReader(oddSchema);
    const s = new BitStream(16).beginWrite();
    s.varuint(0);
    serializeIndexStep(s, 1);
    s.bool(false);
    s.uint(0, 1);
    s.uint(7, 3);
    serializeIndexStep(s, 0);
    expect(reader.read(new BitStream(0).beginRead(s.bytes.slice()), 1), `seed ${SEED}`).toBe(false);
    expect(reader.stats.dropped['field value out of range'], `seed ${SEED}`).toBe(1);
  });

  it('50,000 random and mutated snapshots never throw, and each is either read or counted as dropped', () => {
    const rng = new Random(SEED);
    const store = new EntityStore(schema);
    const writer = new SnapshotWriter(store);
    const out = new BitStream(1 << 16);
    const inStream = new BitStream(0);
    // Frame 1 reaches the client and is acknowledged; frames 2..63 are built against it and are
    // the fuzz sources, each read (mutated) under its own tick so that its baseline is there. A
    // source read successfully is used up until the reader is reset and given frame 1 again.
    const frames: Uint8Array[] = [];
    for (let tick = 1; tick <= 63; tick++) {
      evolve(store, rng, { targetEntities: 120, moveChance: 0.3, removeChance: 0.01, teleportChance: 0.02 });
      store.commit(tick);
      out.beginWrite();
      writer.write(out, tick, 0, 0, 0, rng.chance(0.5) ? Infinity : 3000);
      frames[tick] = out.bytes.slice();
      if (tick === 1) writer.acknowledge(tick);
    }
    const reader = new SnapshotReader(schema);
    const used = new Uint8Array(64);
    let usedCount = 62;
    let resets = 0;
    const buf = new Uint8Array(1 << 16);
    const dropped0 = totalDrops(reader);
    let accounted = 0;
    for (let i = 0; i < 50_000; i++) {
      if (usedCount === 62 || reader.newestTick > 63) {
        reader.reset();
        resets++;
        expect(reader.read(inStream.beginRead(frames[1]), 1), `seed ${SEED}`).toBe(true);
        used.fill(0);
        usedCount = 0;
        accounted = reader.stats.framesRead + totalDrops(reader);
      }
      let source = rng.int(2, 63);
      while (used[source] !== 0) source = source === 63 ? 2 : source + 1;
      let length: number;
      if (rng.chance(0.2)) {
        length = rng.int(0, 80);
        for (let k = 0; k < length; k++) buf[k] = rng.int(0, 255);
      } else {
        const bytes = frames[source];
        length = bytes.length;
        buf.set(bytes);
        const flips = rng.int(1, 3);
        for (let k = 0; k < flips; k++) buf[rng.int(0, length - 1)] ^= 1 << rng.int(0, 7);
        if (rng.chance(0.2)) length = rng.int(0, length);
        if (rng.chance(0.1)) {
          const extra = rng.int(1, 8);
          for (let k = 0; k < extra; k++) buf[length + k] = rng.int(0, 255);
          length += extra;
        }
      }
      const tick = rng.chance(0.01) ? rng.int(-5, 0x7fffffff) : source;
      let ok = false;
      try {
        ok = reader.read(inStream.beginRead(buf, length), tick);
      } catch (error) {
        expect.fail(`seed ${SEED} case ${i} threw ${String(error)}`);
      }
      const now = reader.stats.framesRead + totalDrops(reader);
      if (now !== accounted + 1) expect.fail(`seed ${SEED} case ${i}: counted ${now - accounted} times`);
      if (ok && reader.frameTick !== tick)
        expect.fail(`seed ${SEED} case ${i}: frame tick ${reader.frameTick}`);
      accounted = now;
      if (ok && tick === source) {
        used[source] = 1;
        usedCount++;
      }
    }
    const read = reader.stats.framesRead - resets;
    const dropped = totalDrops(reader) - dropped0;
    expect(read + dropped, `seed ${SEED}`).toBe(50_000);
    expect(read, `seed ${SEED} ${JSON.stringify(reader.stats)}`).toBeGreaterThan(5000);
    expect(dropped, `seed ${SEED} ${JSON.stringify(reader.stats)}`).toBeGreaterThan(10_000);
    for (const reason of SNAPSHOT_DROP_REASONS) {
      if (reason === 'bad frame tick' || reason === 'duplicate' || reason === 'frame too old') continue;
      expect(reader.stats.dropped[reason], `seed ${SEED} ${reason}`).toBeGreaterThan(0);
    }
  });
});
