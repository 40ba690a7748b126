// The view a user command names, rebuilt on the server: every entity the client held in the two
// frames it drew between, with the very values it held for each (from the snapshot writer's
// record of what each frame carried and the entity history). drawEntity over a record, at the
// command's fraction, gives exactly what the client drew: the killcam and the demo's shot
// overlay are built from it.

import type { EntityStore } from './entities.ts';
import { NOT_HELD } from './snapshot-cache.ts';
import type { SnapshotWriter } from './snapshot-writer.ts';

const IN_A = 1;
const IN_B = 2;
const PARITY_A = 4;
const PARITY_B = 8;

/**
 * A rebuilt view: `count` entities, each with its type, whether frame A and frame B held it, its
 * teleport parity in each, and its stored values in each at `a`/`b[k * stride ..]`. Grows when a
 * view holds more entities than ever before (so it does not allocate once warmed up).
 */
export class NamedView {
  count = 0;
  readonly stride: number;
  entities: Uint16Array;
  types: Uint8Array;
  flags: Uint8Array;
  a: Int32Array;
  b: Int32Array;

  constructor(stride: number, capacity = 8) {
    this.stride = stride;
    this.entities = new Uint16Array(capacity);
    this.types = new Uint8Array(capacity);
    this.flags = new Uint8Array(capacity);
    this.a = new Int32Array(capacity * stride);
    this.b = new Int32Array(capacity * stride);
  }

  inA(k: number): boolean {
    return (this.flags[k] & IN_A) !== 0;
  }
  inB(k: number): boolean {
    return (this.flags[k] & IN_B) !== 0;
  }
  parityA(k: number): number {
    return (this.flags[k] & PARITY_A) !== 0 ? 1 : 0;
  }
  parityB(k: number): number {
    return (this.flags[k] & PARITY_B) !== 0 ? 1 : 0;
  }

  /** Copies `from` into this view. */
  copy(from: NamedView): void {
    this.reserve(from.count);
    const n = from.count;
    this.entities.set(from.entities.subarray(0, n));
    this.types.set(from.types.subarray(0, n));
    this.flags.set(from.flags.subarray(0, n));
    this.a.set(from.a.subarray(0, n * this.stride));
    this.b.set(from.b.subarray(0, n * this.stride));
    this.count = n;
  }

  reserve(n: number): void {
    if (n <= this.entities.length) return;
    let cap = this.entities.length * 2;
    while (cap < n) cap *= 2;
    const grow = <T extends Uint16Array | Uint8Array | Int32Array>(
      old: T,
      make: (size: number) => T,
      k: number,
    ): T => {
      const next = make(cap * k);
      next.set(old);
      return next;
    };
    this.entities = grow(this.entities, (n) => new Uint16Array(n), 1);
    this.types = grow(this.types, (n) => new Uint8Array(n), 1);
    this.flags = grow(this.flags, (n) => new Uint8Array(n), 1);
    this.a = grow(this.a, (n) => new Int32Array(n), this.stride);
    this.b = grow(this.b, (n) => new Int32Array(n), this.stride);
  }

  /** Adds entity `e` (type `typeId`) as held in A and/or B, with its values in each (null: not held). */
  push(
    e: number,
    typeId: number,
    fieldCount: number,
    a: Int32Array | null,
    aOffset: number,
    parityA: number,
    b: Int32Array | null,
    bOffset: number,
    parityB: number,
  ): void {
    const k = this.count;
    this.reserve(k + 1);
    this.entities[k] = e;
    this.types[k] = typeId;
    let flags = 0;
    const o = k * this.stride;
    if (a !== null) {
      flags |= IN_A | (parityA !== 0 ? PARITY_A : 0);
      for (let f = 0; f < fieldCount; f++) this.a[o + f] = a[aOffset + f];
    }
    if (b !== null) {
      flags |= IN_B | (parityB !== 0 ? PARITY_B : 0);
      for (let f = 0; f < fieldCount; f++) this.b[o + f] = b[bOffset + f];
    }
    this.flags[k] = flags;
    this.count = k + 1;
  }
}

/** Rebuilds named views for one server (scratch lists made once). */
export class NamedViewBuilder {
  private readonly store: EntityStore;
  private readonly listA: Uint16Array;
  private readonly listB: Uint16Array;
  private readonly mark: Uint8Array;
  /** What the client held in frames A and B, by entity (SnapshotWriter.heldTicks). */
  private readonly heldA: Uint32Array;
  private readonly heldB: Uint32Array;

  constructor(store: EntityStore) {
    this.store = store;
    this.listA = new Uint16Array(store.maxEntities);
    this.listB = new Uint16Array(store.maxEntities);
    this.mark = new Uint8Array(store.maxEntities);
    this.heldA = new Uint32Array(store.maxEntities);
    this.heldB = new Uint32Array(store.maxEntities);
  }

  /**
   * Fills `out` with the view between the frames of ticks `tickA` and `tickB` that `writer` built
   * for its client: the entities frame B held (with frame A's values where A held the same type)
   * and those only frame A held. Only entities of type `onlyType` when it is >= 0. Returns false
   * (and an empty view) when the writer no longer remembers a frame or the history no longer
   * holds a value the client held.
   */
  build(writer: SnapshotWriter, tickA: number, tickB: number, out: NamedView, onlyType = -1): boolean {
    out.count = 0;
    const store = this.store;
    const types = store.schema.types;
    const stride = store.stride;
    const nB = writer.frameView(tickB, this.listB);
    const nA = tickA === tickB ? 0 : writer.frameView(tickA, this.listA);
    if (nB < 0 || nA < 0) return false;
    const heldB = this.heldB;
    const heldA = tickA === tickB ? heldB : this.heldA;
    writer.heldTicks(tickB, heldB);
    if (heldA !== heldB) writer.heldTicks(tickA, heldA);
    const mark = this.mark;
    let ok = true;
    for (let k = 0; k < nB && ok; k++) {
      const e = this.listB[k];
      mark[e] = 1;
      const slotB = store.history(heldB[e]);
      if (slotB === undefined) {
        ok = false;
        break;
      }
      const t = slotB.type[e];
      if (onlyType >= 0 && t !== onlyType) continue;
      const tA = heldA[e];
      const slotA = tA === NOT_HELD ? undefined : store.history(tA);
      if (tA !== NOT_HELD && slotA === undefined) {
        ok = false;
        break;
      }
      const inA = slotA !== undefined && slotA.type[e] === t;
      out.push(
        e,
        t,
        types[t].fieldCount,
        inA ? (slotA as NonNullable<typeof slotA>).values : null,
        e * stride,
        inA ? (slotA as NonNullable<typeof slotA>).parity[e] : 0,
        slotB.values,
        e * stride,
        slotB.parity[e],
      );
    }
    for (let k = 0; k < nA && ok; k++) {
      const e = this.listA[k];
      if (mark[e] !== 0) continue;
      const slotA = store.history(heldA[e]);
      if (slotA === undefined) {
        ok = false;
        break;
      }
      const t = slotA.type[e];
      if (onlyType >= 0 && t !== onlyType) continue;
      out.push(e, t, types[t].fieldCount, slotA.values, e * stride, slotA.parity[e], null, 0, 0);
    }
    for (let k = 0; k < nB; k++) mark[this.listB[k]] = 0;
    if (!ok) out.count = 0;
    return ok;
  }
}
