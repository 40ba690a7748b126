// Unit tests of RemoteView: remote entities drawn through the history of real decoded snapshots (interpolation, capped extrapolation, hold), and the view a user command reports.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PLAYER_ENTITY } from '../../games/arena/shared/entities.ts';
import { SnapshotReader } from '../../src/client/snapshot-reader.ts';
import {
  RemoteView,
  type RemoteViewConfig,
  VIEW_EMPTY,
  VIEW_EXTRAPOLATED,
  VIEW_HELD,
  VIEW_INTERPOLATED,
} from '../../src/client/view.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import {
  decodeNumber,
  defineEntityType,
  defineGameSchema,
  type FieldTable,
  type GameSchemaOptions,
  typeIdOf,
} from '../../src/protocol/schema.ts';
import {
  CMD_VIEW_FRACTION_STEPS,
  createUserCommand,
  quantizeUserCommand,
  serializeUserCommand,
} from '../../src/protocol/usercmd.ts';
import { EntityStore } from '../../src/server/entities.ts';
import { SnapshotWriter } from '../../src/server/snapshot-writer.ts';
import { blendEntity } from '../../src/sim/blend.ts';
import { Random } from '../../src/sim/random.ts';

const SEED = Number(process.env.SEED ?? 0x71e3);
const TICK_MS = 10;

interface Flag {
  x: number;
  y: number;
  z: number;
  team: number;
}

/** A second entity type, to put a different type in an index a player left. */
const flag = defineEntityType<Flag>('flag', {
  x: { kind: 'float', min: -4096, max: 4096, precision: 1 / 8 },
  y: { kind: 'float', min: -4096, max: 4096, precision: 1 / 8 },
  z: { kind: 'float', min: -4096, max: 4096, precision: 1 / 8 },
  team: { kind: 'int', min: 0, max: 3, interp: 'step' },
} satisfies FieldTable<Flag>);

const schema = defineGameSchema([PLAYER_ENTITY, flag], { maxEntities: 64 });
const PLAYER = typeIdOf(schema, PLAYER_ENTITY);
const FLAG = typeIdOf(schema, flag);
const STRIDE = schema.stride;
const X = PLAYER_ENTITY.index.x;
const Y = PLAYER_ENTITY.index.y;
const Z = PLAYER_ENTITY.index.z;
const YAW = PLAYER_ENTITY.index.yaw;
const PITCH = PLAYER_ENTITY.index.pitch;

/**
 * A server (entity store and snapshot writer) and a client (reader and view) joined by a test
 * hand: `write` makes the frame of a tick, `deliver` reads it on the client (acknowledging it,
 * so later frames are deltas) and tells the view.
 */
/** A writer and a reader over one schema (the shared one, or with other schema rules). */
function link(view: Partial<RemoteViewConfig> = {}, rules: GameSchemaOptions = {}) {
  const shared =
    Object.keys(rules).length === 0 ? schema : defineGameSchema(schema.types, { maxEntities: 64, ...rules });
  const store = new EntityStore(shared, { historyTicks: 256 });
  const writer = new SnapshotWriter(store);
  const client = new SnapshotReader(shared);
  const remote = new RemoteView(shared, client, view);
  const out = new BitStream(1 << 16);
  const inStream = new BitStream(0);
  const frames = new Map<number, Uint8Array>();
  return {
    store,
    reader: client,
    view: remote,
    /** Commits the store as tick `tick` and writes that tick's frame. */
    write(tick: number): void {
      store.commit(tick);
      out.beginWrite();
      expect(writer.write(out, tick, 0, 0, 0, Infinity), `write ${tick}`).toBe(true);
      frames.set(tick, out.bytes.slice());
    },
    /** The client receives frame `tick`: returns whether the reader took it. */
    deliver(tick: number, ack = true): boolean {
      const bytes = frames.get(tick);
      if (bytes === undefined) throw new Error(`no frame written for tick ${tick}`);
      const ok = client.read(inStream.beginRead(bytes), tick);
      if (ok) {
        remote.onFrame(tick);
        if (ack) writer.acknowledge(tick);
      }
      return ok;
    },
    /** The bytes of frame `tick` as written. */
    bytes(tick: number): Uint8Array {
      const bytes = frames.get(tick);
      if (bytes === undefined) throw new Error(`no frame written for tick ${tick}`);
      return bytes;
    },
    /** Sets a player's origin and view angles. */
    place(e: number, x: number, y = 0, z = 0, yaw = 0, pitch = 0): void {
      store.setField(e, X, x);
      store.setField(e, Y, y);
      store.setField(e, Z, z);
      store.setField(e, YAW, yaw);
      store.setField(e, PITCH, pitch);
    },
  };
}

/** The drawn value of field `field` of entity `e`. */
function drawn(view: RemoteView, e: number, field: number): number {
  return view.values[e * view.stride + field];
}

/** The entities drawn, ascending. */
function drawnList(view: RemoteView): number[] {
  return Array.from(view.list.subarray(0, view.count)).sort((a, b) => a - b);
}

describe('RemoteView interpolation', () => {
  it('draws between the two frames that straddle the render time, searching back across lost frames', () => {
    const l = link();
    const e = l.store.create(PLAYER);
    for (let tick = 10; tick <= 20; tick += 2) {
      l.place(e, tick * 10, -tick, 2 * tick);
      l.write(tick);
    }
    for (const tick of [10, 12, 16, 20]) expect(l.deliver(tick), `tick ${tick}`).toBe(true);
    expect(l.view.newestTick).toBe(20);

    const cases: [number, number, number, number][] = [
      // renderTick, tickA, tickB, fraction
      [15, 12, 16, 0.75],
      [11, 10, 12, 0.5],
      [19, 16, 20, 0.75],
      [12, 12, 16, 0],
      [16.5, 16, 20, 0.125],
    ];
    for (const [renderTick, a, b, f] of cases) {
      const at = `render tick ${renderTick}`;
      expect(l.view.update(renderTick, TICK_MS), at).toBe(VIEW_INTERPOLATED);
      expect(l.view.mode, at).toBe(VIEW_INTERPOLATED);
      expect([l.view.tickA, l.view.tickB, l.view.fraction], at).toEqual([a, b, f]);
      expect(drawnList(l.view), at).toEqual([e]);
      expect(drawn(l.view, e, X), at).toBe(renderTick * 10);
      expect(drawn(l.view, e, Y), at).toBe(-renderTick);
      expect(drawn(l.view, e, Z), at).toBe(2 * renderTick);
    }
  });

  it('at exactly the newest frame, draws that frame', () => {
    const l = link();
    const e = l.store.create(PLAYER);
    l.place(e, 100);
    l.write(10);
    l.place(e, 120);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    expect(l.view.update(12, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([12, 12, 0]);
    expect(drawn(l.view, e, X)).toBe(120);
  });

  it('reports a fraction in 1/4096 steps, and frames A and B blended with it give the drawn values bit for bit, on the client and from the server history, extrapolating too', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x7fffffff }), (seed) => {
        const at = `seed ${seed}`;
        const rng = new Random(seed);
        const l = link({}, { teleportDistance: 300 });
        const players: number[] = [];
        for (let k = 0; k < 5; k++) players.push(l.store.create(PLAYER));
        const delivered: number[] = [];
        let tick = 0;
        for (let n = 0; n < 24; n++) {
          tick += rng.int(1, 2);
          for (const e of players) {
            if (rng.chance(0.05)) l.store.teleport(e);
            const step = rng.chance(0.05) ? 500 : 40;
            l.place(
              e,
              (l.store.getField(e, X) as number) + rng.range(-step, step),
              (l.store.getField(e, Y) as number) + rng.range(-step, step),
              rng.range(0, 64),
              rng.range(0, 360),
              rng.range(0, 360),
            );
          }
          l.write(tick);
          if (rng.chance(0.25)) continue;
          expect(l.deliver(tick), `${at} tick ${tick}`).toBe(true);
          delivered.push(tick);
        }
        const first = delivered[0];
        const last = delivered[delivered.length - 1];
        const cmd = createUserCommand();
        const decodedCmd = createUserCommand();
        const base = createUserCommand();
        const wire = new BitStream(64);
        const blended = new Float64Array(STRIDE);
        for (let k = 0; k < 80; k++) {
          // Mostly between the frames; a quarter past the newest (extrapolated, then held).
          const renderTick = k % 4 === 3 ? last + rng.next() * 14 : first + rng.next() * (last - first);
          const mode = l.view.update(renderTick, TICK_MS);
          const { tickA, tickB, fraction } = l.view;
          const where = `${at} render ${renderTick} mode ${mode} view ${tickA} ${tickB} ${fraction}`;
          expect(Number.isInteger(fraction * CMD_VIEW_FRACTION_STEPS), where).toBe(true);
          expect(fraction >= 0, where).toBe(true);
          expect(delivered.indexOf(tickB) - delivered.indexOf(tickA), where).toBe(tickA === tickB ? 0 : 1);
          if (renderTick <= last) {
            expect(mode, where).toBe(VIEW_INTERPOLATED);
            expect(fraction <= 1, where).toBe(true);
            expect(tickA <= renderTick && renderTick <= tickB, where).toBe(true);
            expect(Math.abs(tickA + (tickB - tickA) * fraction - renderTick), where).toBeLessThanOrEqual(
              (tickB - tickA) / CMD_VIEW_FRACTION_STEPS / 2 + 1e-9,
            );
          } else {
            expect(mode === VIEW_EXTRAPOLATED || mode === VIEW_HELD, where).toBe(true);
            expect(tickB, where).toBe(last);
          }

          // The view as a user command carries it, through the wire.
          cmd.msec = 16;
          cmd.viewTickA = tickA;
          cmd.viewTickB = tickB;
          cmd.viewFraction = fraction;
          quantizeUserCommand(cmd);
          expect([cmd.viewTickA, cmd.viewTickB, cmd.viewFraction], where).toEqual([tickA, tickB, fraction]);
          wire.beginWrite();
          serializeUserCommand(wire, cmd, base);
          serializeUserCommand(wire.beginRead(wire.bytes.slice()), decodedCmd, base);
          expect(wire.ok, where).toBe(true);
          expect([decodedCmd.viewTickA, decodedCmd.viewTickB, decodedCmd.viewFraction], where).toEqual([
            tickA,
            tickB,
            fraction,
          ]);

          const frameA = l.reader.frameAt(decodedCmd.viewTickA);
          const frameB = l.reader.frameAt(decodedCmd.viewTickB);
          const histA = l.store.history(decodedCmd.viewTickA);
          const histB = l.store.history(decodedCmd.viewTickB);
          if (!frameA || !frameB || !histA || !histB) expect.fail(`${where}: a frame is missing`);
          expect(drawnList(l.view), where).toEqual(players);
          for (const e of players) {
            const o = e * STRIDE;
            // Re-blended from the client's decoded frames.
            blendEntity(
              PLAYER_ENTITY,
              frameA.values,
              o,
              frameA.parity[e],
              frameB.values,
              o,
              frameB.parity[e],
              decodedCmd.viewFraction,
              300,
              blended,
              0,
            );
            for (let i = 0; i < PLAYER_ENTITY.fieldCount; i++) {
              if (!Object.is(blended[i], drawn(l.view, e, i))) {
                expect.fail(
                  `${where} entity ${e} field ${i}: client ${blended[i]}, drawn ${drawn(l.view, e, i)}`,
                );
              }
            }
            // Re-blended from the server's own history, as lag compensation rewinds.
            blendEntity(
              PLAYER_ENTITY,
              histA.values,
              o,
              histA.parity[e],
              histB.values,
              o,
              histB.parity[e],
              decodedCmd.viewFraction,
              300,
              blended,
              0,
            );
            for (let i = 0; i < PLAYER_ENTITY.fieldCount; i++) {
              if (!Object.is(blended[i], drawn(l.view, e, i))) {
                expect.fail(
                  `${where} entity ${e} field ${i}: server ${blended[i]}, drawn ${drawn(l.view, e, i)}`,
                );
              }
            }
          }
        }
      }),
      { seed: SEED, numRuns: 25 },
    );
  });
});

describe('RemoteView past the newest frame and before the oldest', () => {
  /** Frames 10 (x = 100) and 12 (x = 120) delivered; the view extrapolates at most 50 ms (5 ticks). */
  function twoFrames() {
    const l = link({ maxExtrapolationMs: 50 });
    const e = l.store.create(PLAYER);
    l.place(e, 100, 0, 0, 10);
    l.write(10);
    l.place(e, 120, 0, 0, 20);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    return { l, e };
  }

  it('extrapolates along the last two frames for at most maxExtrapolationMs, then holds there', () => {
    const { l, e } = twoFrames();
    expect(l.view.update(14, TICK_MS)).toBe(VIEW_EXTRAPOLATED);
    expect(drawn(l.view, e, X)).toBe(140);
    expect(drawn(l.view, e, YAW)).toBeCloseTo(30, 1);
    // The command reports the pair and a fraction past 1, so the server can rebuild this view.
    expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([10, 12, 2]);
    expect(l.view.update(17, TICK_MS)).toBe(VIEW_EXTRAPOLATED);
    expect(drawn(l.view, e, X)).toBe(170);
    expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([10, 12, 3.5]);
    for (const renderTick of [17.01, 20, 1000]) {
      expect(l.view.update(renderTick, TICK_MS), `render tick ${renderTick}`).toBe(VIEW_HELD);
      expect(drawn(l.view, e, X), `render tick ${renderTick}`).toBe(170);
      expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([10, 12, 3.5]);
    }
  });

  it('the cap is in milliseconds: a longer tick interval reaches it in fewer ticks', () => {
    const { l, e } = twoFrames();
    expect(l.view.update(14, 25)).toBe(VIEW_EXTRAPOLATED);
    expect(l.view.update(14.5, 25)).toBe(VIEW_HELD);
    expect(drawn(l.view, e, X)).toBe(140);
  });

  it('with maxExtrapolationMs 0, holds the newest frame as soon as the render time passes it', () => {
    const l = link({ maxExtrapolationMs: 0 });
    const e = l.store.create(PLAYER);
    l.place(e, 100);
    l.write(10);
    l.place(e, 120);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    expect(l.view.update(12.5, TICK_MS)).toBe(VIEW_HELD);
    expect(drawn(l.view, e, X)).toBe(120);
  });

  it('a new frame ends the extrapolation: the view interpolates again', () => {
    const { l, e } = twoFrames();
    expect(l.view.update(16, TICK_MS)).toBe(VIEW_EXTRAPOLATED);
    l.place(e, 150);
    l.write(20);
    l.deliver(20);
    expect(l.view.update(16, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([12, 20, 0.5]);
    expect(drawn(l.view, e, X)).toBe(135);
  });

  it('with one frame, holds it on both sides', () => {
    const l = link();
    const e = l.store.create(PLAYER);
    l.place(e, 100);
    l.write(10);
    l.deliver(10);
    for (const renderTick of [3, 11, 500]) {
      expect(l.view.update(renderTick, TICK_MS), `render tick ${renderTick}`).toBe(VIEW_HELD);
      expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([10, 10, 0]);
      expect(drawn(l.view, e, X)).toBe(100);
    }
  });

  it('before the oldest frame, holds the oldest', () => {
    const { l, e } = twoFrames();
    for (const renderTick of [9.99, 5, -100]) {
      expect(l.view.update(renderTick, TICK_MS), `render tick ${renderTick}`).toBe(VIEW_HELD);
      expect([l.view.tickA, l.view.tickB, l.view.fraction]).toEqual([10, 10, 0]);
      expect(drawn(l.view, e, X)).toBe(100);
    }
    expect(l.view.update(10, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawn(l.view, e, X)).toBe(100);
  });
});

describe('RemoteView entities that come, go and jump', () => {
  it("an entity new in B is drawn at B's values; one gone in B at A's values until B", () => {
    const l = link();
    const p0 = l.store.create(PLAYER);
    const p1 = l.store.create(PLAYER);
    l.place(p0, 0);
    l.place(p1, 100, 5);
    l.write(10);
    const p2 = l.store.create(PLAYER);
    l.place(p2, 500, 7);
    l.store.remove(p1);
    l.place(p0, 20);
    l.write(12);
    l.place(p0, 40);
    l.write(14);
    for (const tick of [10, 12, 14]) l.deliver(tick);

    for (const renderTick of [10.25, 11, 11.75]) {
      const at = `render tick ${renderTick}`;
      expect(l.view.update(renderTick, TICK_MS), at).toBe(VIEW_INTERPOLATED);
      expect(drawnList(l.view), at).toEqual([p0, p1, p2]);
      expect(drawn(l.view, p0, X), at).toBe((renderTick - 10) * 10);
      expect([drawn(l.view, p1, X), drawn(l.view, p1, Y)], at).toEqual([100, 5]);
      expect([drawn(l.view, p2, X), drawn(l.view, p2, Y)], at).toEqual([500, 7]);
    }
    for (const renderTick of [12, 13]) {
      const at = `render tick ${renderTick}`;
      expect(l.view.update(renderTick, TICK_MS), at).toBe(VIEW_INTERPOLATED);
      expect(drawnList(l.view), at).toEqual([p0, p2]);
    }
  });

  it('an entity gone in the newest frame is not drawn past it, extrapolating or holding', () => {
    const l = link({ maxExtrapolationMs: 30 });
    const p0 = l.store.create(PLAYER);
    const p1 = l.store.create(PLAYER);
    l.write(10);
    l.store.remove(p1);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    expect(l.view.update(11, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawnList(l.view)).toEqual([p0, p1]);
    expect(l.view.update(13, TICK_MS)).toBe(VIEW_EXTRAPOLATED);
    expect(drawnList(l.view)).toEqual([p0]);
    expect(l.view.update(100, TICK_MS)).toBe(VIEW_HELD);
    expect(drawnList(l.view)).toEqual([p0]);
  });

  it("an index that holds another type in B is drawn at B's values", () => {
    const l = link();
    const p0 = l.store.create(PLAYER);
    const p1 = l.store.create(PLAYER);
    l.place(p1, 100);
    l.write(10);
    l.store.remove(p1);
    const f = l.store.create(FLAG);
    expect(f).toBe(p1);
    const fx = flag.index.x;
    const team = flag.index.team;
    l.store.setField(f, fx, 700);
    l.store.setField(f, team, 2);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    expect(l.view.update(11, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawnList(l.view)).toEqual([p0, f]);
    expect(drawn(l.view, f, fx)).toBe(700);
    expect(drawn(l.view, f, team)).toBe(2);
  });

  it("a teleport (parity flipped) is never slid across: B's values from A on", () => {
    const l = link();
    const e = l.store.create(PLAYER);
    l.place(e, 100, 0, 0, 90);
    l.write(10);
    l.store.teleport(e);
    l.place(e, 120, 0, 0, 180);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    expect(l.view.update(10.5, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawn(l.view, e, X)).toBe(120);
    expect(drawn(l.view, e, YAW)).toBe(180);
  });

  it('a jump longer than teleportDistance is never slid across; a shorter move is', () => {
    const l = link({}, { teleportDistance: 256 });
    const jumper = l.store.create(PLAYER);
    const walker = l.store.create(PLAYER);
    l.place(jumper, 100);
    l.place(walker, 100);
    l.write(10);
    l.place(jumper, 100, 300);
    l.place(walker, 100, 200);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    l.view.update(11, TICK_MS);
    expect(drawn(l.view, jumper, Y)).toBe(300);
    expect(drawn(l.view, walker, Y)).toBe(100);
  });
});

/** Writes `count` frames of player `e`, each 1 to `maxStep` ticks after the last from tick 100, at x = tick. */
function writeFrames(
  l: ReturnType<typeof link>,
  e: number,
  rng: Random,
  count: number,
  maxStep: number,
): number[] {
  const ticks: number[] = [];
  let tick = 100;
  for (let n = 0; n < count; n++) {
    tick += rng.int(1, maxStep);
    l.place(e, tick);
    l.write(tick);
    ticks.push(tick);
  }
  return ticks;
}

/** Rendering halfway between each pair of `ticks` interpolates exactly that pair. */
function expectPairs(view: RemoteView, ticks: readonly number[], seed: number): void {
  for (let k = 0; k + 1 < ticks.length; k++) {
    const mid = (ticks[k] + ticks[k + 1]) / 2;
    const at = `seed ${seed} render ${mid}`;
    expect(view.update(mid, TICK_MS), at).toBe(VIEW_INTERPOLATED);
    expect([view.tickA, view.tickB, view.fraction], at).toEqual([ticks[k], ticks[k + 1], 0.5]);
  }
}

describe('RemoteView history', () => {
  it('keeps frames in tick order whatever order they arrive in', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x7fffffff }), (seed) => {
        const rng = new Random(seed);
        const l = link();
        const e = l.store.create(PLAYER);
        const ticks = writeFrames(l, e, rng, 20, 3);
        const order = ticks.slice();
        for (let i = order.length - 1; i > 0; i--) {
          const j = rng.int(0, i);
          [order[i], order[j]] = [order[j], order[i]];
        }
        for (const t of order) {
          // Full frames (nothing acknowledged yet), so any order decodes.
          expect(l.deliver(t, false), `seed ${seed} tick ${t}`).toBe(true);
          // A second copy is refused by the reader; the view must not take it twice either.
          l.view.onFrame(t);
        }
        expect(l.view.newestTick, `seed ${seed}`).toBe(ticks[ticks.length - 1]);
        expectPairs(l.view, ticks, seed);
        for (let k = 0; k + 1 < ticks.length; k++) {
          const mid = (ticks[k] + ticks[k + 1]) / 2;
          l.view.update(mid, TICK_MS);
          expect(drawn(l.view, e, X), `seed ${seed} render ${mid}`).toBe(mid);
        }
      }),
      { seed: SEED + 1, numRuns: 20 },
    );
  });

  it('keeps the newest 64 frames in tick order when frames come out of order into a full history', () => {
    // Frames arrive out of order, most up to 3 places late (the swaps can carry one further, well
    // within 64): every late one is newer than the oldest held, so it joins the history and the
    // oldest leaves. (It once shifted the frames after it by one, losing the newest and drawing a
    // pair with frame A newer than frame B.)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x7fffffff }), (seed) => {
        const rng = new Random(seed);
        const l = link({}, { frameHistory: 128 });
        const e = l.store.create(PLAYER);
        const ticks = writeFrames(l, e, rng, 90, 2);
        const order = ticks.slice();
        for (let i = 0; i + 1 < order.length; i++) {
          const j = Math.min(order.length - 1, i + rng.int(0, 3));
          [order[i], order[j]] = [order[j], order[i]];
        }
        for (const t of order) expect(l.deliver(t, false), `seed ${seed} tick ${t}`).toBe(true);
        expect(l.view.newestTick, `seed ${seed}`).toBe(ticks[ticks.length - 1]);
        const kept = ticks.slice(-64);
        expectPairs(l.view, kept, seed);
        expect(l.view.update(kept[0] - 0.5, TICK_MS), `seed ${seed}`).toBe(VIEW_HELD);
        expect([l.view.tickA, l.view.tickB], `seed ${seed}`).toEqual([kept[0], kept[0]]);
      }),
      { seed: SEED + 2, numRuns: 20 },
    );
  });

  it('frames the reader forgot leave the history, even when an older one is still held', () => {
    // A reader ring of 8 frames: frame 10 takes the slot of frame 2; frame 9 (slot 1) is lost,
    // so frame 1 is still held while frame 2, newer, is gone.
    const l = link({}, { frameHistory: 8 });
    const e = l.store.create(PLAYER);
    for (const tick of [1, 2, 9, 10]) {
      l.place(e, tick * 8);
      l.write(tick);
    }
    l.deliver(1, false);
    l.deliver(2, false);
    l.deliver(10, false);
    expect(l.reader.frameAt(1)).toBeDefined();
    expect(l.reader.frameAt(2)).toBeUndefined();
    expect(l.view.update(1.5, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect([l.view.tickA, l.view.tickB]).toEqual([1, 10]);
    expect(l.view.fraction).toBe(Math.round((0.5 / 9) * 4096) / 4096);
    expect(drawn(l.view, e, X)).toBe(8 + 72 * l.view.fraction);
  });

  it('a frame the reader forgot is dropped even when the view was not told of the read that replaced it', () => {
    const l = link({}, { frameHistory: 8 });
    const e = l.store.create(PLAYER);
    for (const tick of [1, 2, 3, 10]) {
      l.place(e, tick * 8);
      l.write(tick);
    }
    for (const tick of [1, 2, 3]) l.deliver(tick, false);
    expect(l.view.update(1.5, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect([l.view.tickA, l.view.tickB]).toEqual([1, 2]);
    // Frame 10 takes frame 2's slot; the view is not told of it (no onFrame).
    expect(l.reader.read(new BitStream(0).beginRead(l.bytes(10)), 10)).toBe(true);
    expect(l.reader.frameAt(2)).toBeUndefined();
    expect(l.view.update(1.5, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect([l.view.tickA, l.view.tickB]).toEqual([1, 3]);
    expect(drawn(l.view, e, X)).toBe(8 + 16 * l.view.fraction);
  });

  it('redrawn between the same two frames, draws what a view drawing them afresh draws, bit for bit', () => {
    const random = new Random(SEED);
    const l = link({ maxExtrapolationMs: 40 }, { teleportDistance: 300 });
    const players = [l.store.create(PLAYER), l.store.create(PLAYER), l.store.create(PLAYER)];
    const flagged = l.store.create(FLAG);
    // One stands still but for a step along x now and then: its other fields are the same in A
    // and B, which a redraw leaves as they were drawn.
    const still = l.store.create(PLAYER);
    for (let tick = 1; tick <= 9; tick += 2) {
      l.place(still, tick % 4 === 1 ? 100 : 100 + tick, 50, 0, 90);
      for (const e of players) {
        l.place(
          e,
          random.range(-900, 900),
          random.range(-900, 900),
          random.range(0, 64),
          random.range(0, 360),
        );
        l.store.setField(e, PLAYER_ENTITY.index.ducked, random.int(0, 1));
      }
      l.store.setField(flagged, flag.index.team, random.int(0, 3));
      // One teleports (never slid across); moves longer than 300 units are jumps too.
      if (tick === 5) l.store.teleport(players[0]);
      l.write(tick);
      l.deliver(tick, false);
    }
    // One leaves in the newest frame: drawn from A until the view reaches B.
    l.store.remove(players[2]);
    l.write(11);
    l.deliver(11, false);
    let render = 0.5;
    for (let k = 0; k < 400; k++) {
      // Mostly small steps (the same pair drawn again), now and then a jump back or past B.
      render = random.chance(0.1) ? random.range(0, 16) : render + random.range(0, 0.3);
      const mode = l.view.update(render, TICK_MS);
      // A view of the same frames that has drawn nothing yet: its draw is a whole one.
      const fresh = new RemoteView(l.reader.schema, l.reader, { maxExtrapolationMs: 40 });
      for (let tick = 1; tick <= 11; tick += 2) fresh.onFrame(tick);
      expect(fresh.update(render, TICK_MS), `render tick ${render} (seed ${SEED})`).toBe(mode);
      expect(drawnList(l.view), `render tick ${render} (seed ${SEED})`).toEqual(drawnList(fresh));
      for (const e of drawnList(l.view)) {
        for (let f = 0; f < STRIDE; f++) {
          expect(drawn(l.view, e, f), `entity ${e} field ${f} at render tick ${render} (seed ${SEED})`).toBe(
            drawn(fresh, e, f),
          );
        }
      }
    }
  });

  it('after a reader reset, frames of the same ticks read again are drawn with their new values', () => {
    const a = link();
    const b = link();
    const e = a.store.create(PLAYER);
    b.store.create(PLAYER);
    for (const tick of [1, 3]) {
      a.place(e, tick * 10);
      b.place(e, tick * 100);
      a.write(tick);
      b.write(tick);
      a.deliver(tick, false);
    }
    expect(a.view.update(2, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawn(a.view, e, X)).toBe(20);
    a.reader.reset();
    for (const tick of [1, 3]) {
      expect(a.reader.read(new BitStream(0).beginRead(b.bytes(tick)), tick)).toBe(true);
      a.view.onFrame(tick);
    }
    expect(a.view.update(2, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawn(a.view, e, X)).toBe(200);
  });

  it('a reader reset empties the view', () => {
    const l = link();
    const e = l.store.create(PLAYER);
    l.place(e, 5);
    l.write(10);
    l.deliver(10);
    expect(l.view.update(10, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(l.view.count).toBe(1);
    l.reader.reset();
    expect(l.view.update(10, TICK_MS)).toBe(VIEW_EMPTY);
    expect(l.view.mode).toBe(VIEW_EMPTY);
    expect(l.view.count).toBe(0);
    expect(l.view.newestTick).toBe(-1);
  });

  it('keeps the newest 64 frames; an older frame arriving when full is not taken', () => {
    const l = link({}, { frameHistory: 128 });
    const e = l.store.create(PLAYER);
    for (let tick = 1; tick <= 70; tick++) {
      l.place(e, tick);
      l.write(tick);
    }
    for (let tick = 6; tick <= 70; tick++) l.deliver(tick, false);
    expect(l.view.update(3, TICK_MS)).toBe(VIEW_HELD);
    expect([l.view.tickA, l.view.tickB]).toEqual([7, 7]);
    expect(l.deliver(5, false)).toBe(true);
    expect(l.view.update(5.5, TICK_MS)).toBe(VIEW_HELD);
    expect([l.view.tickA, l.view.tickB]).toEqual([7, 7]);
    expect(l.view.update(69.5, TICK_MS)).toBe(VIEW_INTERPOLATED);
    expect(drawn(l.view, e, X)).toBe(69.5);
  });

  it('reset forgets every frame', () => {
    const l = link();
    l.store.create(PLAYER);
    l.write(10);
    l.deliver(10);
    l.view.update(10, TICK_MS);
    l.view.reset();
    expect(l.view.newestTick).toBe(-1);
    expect(l.view.mode).toBe(VIEW_EMPTY);
    expect(l.view.count).toBe(0);
    expect(l.view.update(10, TICK_MS)).toBe(VIEW_EMPTY);
  });
});

describe('RemoteView statistics and configuration', () => {
  it('counts the frames drawn in each mode', () => {
    const l = link({ maxExtrapolationMs: 20 });
    const e = l.store.create(PLAYER);
    expect(l.view.update(0, TICK_MS)).toBe(VIEW_EMPTY);
    l.place(e, 1);
    l.write(10);
    l.place(e, 2);
    l.write(12);
    l.deliver(10);
    l.deliver(12);
    const modes = [11, 10.5, 12, 13, 14, 14.5, 9, 30].map((t) => l.view.update(t, TICK_MS));
    expect(modes).toEqual([
      VIEW_INTERPOLATED,
      VIEW_INTERPOLATED,
      VIEW_INTERPOLATED,
      VIEW_EXTRAPOLATED,
      VIEW_EXTRAPOLATED,
      VIEW_HELD,
      VIEW_HELD,
      VIEW_HELD,
    ]);
    expect(l.view.stats).toEqual({ interpolated: 3, extrapolated: 2, held: 3, empty: 1 });
  });

  it('refuses a bad configuration, naming the field', () => {
    const reader = new SnapshotReader(schema);
    expect(() => new RemoteView(schema, reader, { maxExtrapolationMs: -1 })).toThrow(/maxExtrapolationMs/);
    expect(() => new RemoteView(schema, reader, { maxExtrapolationMs: Number.NaN })).toThrow(
      /maxExtrapolationMs/,
    );
    expect(() => defineGameSchema(schema.types, { teleportDistance: 0 })).toThrow(/teleportDistance/);
    expect(() => defineGameSchema(schema.types, { teleportDistance: Number.NaN })).toThrow(
      /teleportDistance/,
    );
  });

  it('decodes what it draws with the schema: an angle field drawn in degrees', () => {
    const l = link();
    const e = l.store.create(PLAYER);
    l.place(e, 0, 0, 0, 90, 45);
    l.write(10);
    l.deliver(10);
    l.view.update(10, TICK_MS);
    expect(drawn(l.view, e, YAW)).toBe(decodeNumber(PLAYER_ENTITY, YAW, l.reader.values(e)[YAW]));
    expect(drawn(l.view, e, PITCH)).toBeCloseTo(45, 2);
  });
});
