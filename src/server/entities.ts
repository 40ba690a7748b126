// The server's entity store: fixed-capacity slots of quantized field values, teleport parity and
// position, committed once per tick into a power-of-two history ring that snapshot writers
// delta against (and that any system needing the world at a past tick can read).

import {
  decodeField,
  decodeNumber,
  type EntityTypeSchema,
  encodeField,
  type GameSchema,
  MAX_ENTITY_FIELDS,
} from '../protocol/schema.ts';
import { type InterestConfig, InterestGrid } from './interest.ts';

export interface EntityStoreConfig {
  /** Ticks of history kept, a power of two (default 128). */
  historyTicks: number;
  /** Interest grid settings (cell size in world units, hash buckets). */
  interest: Partial<InterestConfig>;
}

export const DEFAULT_ENTITY_STORE_CONFIG: EntityStoreConfig = { historyTicks: 256, interest: {} };

/** The committed world at one tick: which slots were alive, their type, parity and values. */
export interface HistorySlot {
  /** The tick stored here, -1 when empty. */
  tick: number;
  readonly alive: Uint8Array;
  readonly type: Uint8Array;
  readonly parity: Uint8Array;
  /** Entity i's stored values at i * stride (only meaningful where alive). */
  readonly values: Int32Array;
}

/**
 * Entities live in slots 0..maxEntities-1 (the game schema's capacity). Values are stored
 * integers (see schema.ts); write them through `setField` (which quantizes) or straight into the
 * `values(index)` view with values already in range (commit checks them).
 *
 * Position for interest: a type with float or int fields named x, y, z gets its position from
 * them at every commit; any other type keeps the last position given to `setPosition`.
 *
 * `commit(tick)` freezes the live state into the history ring and rebuilds the interest grid;
 * call it once per tick after the simulation and before writing snapshots.
 */
export class EntityStore {
  readonly schema: GameSchema;
  readonly config: EntityStoreConfig;
  readonly maxEntities: number;
  readonly stride: number;
  readonly interest: InterestGrid;
  /** Entity i's position (x, y, z) at 3i, 3i+1, 3i+2. */
  readonly positions: Float64Array;
  /**
   * Per slot, in the newest commit: the tick its current entity was first committed, and the
   * newest tick at which its values or parity differed from the commit before (-1: never).
   */
  readonly createdTick: Float64Array;
  readonly changedTick: Float64Array;
  /** The newest committed tick, -1 before the first commit. */
  lastCommitTick = -1;
  /** Live entities. */
  count = 0;
  /** One past the highest live index. */
  end = 0;

  private readonly alive: Uint8Array;
  private readonly type: Uint8Array;
  private readonly parity: Uint8Array;
  private readonly live: Int32Array;
  private readonly views: Int32Array[];
  private readonly generation: Uint32Array;
  private readonly committedGeneration: Uint32Array;
  private readonly ring: HistorySlot[];
  /** Per type, each field's stored form of the value 0. */
  private readonly zeros: Int32Array[];
  private readonly historyMask: number;
  private lowestFree = 0;

  constructor(schema: GameSchema, config: Partial<EntityStoreConfig> = {}) {
    this.config = { ...DEFAULT_ENTITY_STORE_CONFIG, ...config };
    const { historyTicks } = this.config;
    if (!Number.isInteger(historyTicks) || historyTicks < 2 || (historyTicks & (historyTicks - 1)) !== 0) {
      throw new RangeError(`EntityStore: historyTicks must be a power of two >= 2, got ${historyTicks}`);
    }
    this.schema = schema;
    const n = schema.maxEntities;
    this.maxEntities = n;
    this.stride = schema.stride;
    if (!(this.stride >= 1 && this.stride <= MAX_ENTITY_FIELDS)) {
      throw new RangeError(`EntityStore: schema stride must be 1..${MAX_ENTITY_FIELDS}, got ${this.stride}`);
    }
    this.interest = new InterestGrid(n, this.config.interest);
    this.positions = new Float64Array(3 * n);
    this.createdTick = new Float64Array(n).fill(-1);
    this.changedTick = new Float64Array(n).fill(-1);
    this.alive = new Uint8Array(n);
    this.type = new Uint8Array(n);
    this.parity = new Uint8Array(n);
    this.live = new Int32Array(n * this.stride);
    this.views = [];
    for (let i = 0; i < n; i++) this.views.push(this.live.subarray(i * this.stride, (i + 1) * this.stride));
    this.generation = new Uint32Array(n);
    this.committedGeneration = new Uint32Array(n);
    this.ring = [];
    for (let t = 0; t < historyTicks; t++) {
      this.ring.push({
        tick: -1,
        alive: new Uint8Array(n),
        type: new Uint8Array(n),
        parity: new Uint8Array(n),
        values: new Int32Array(n * this.stride),
      });
    }
    this.historyMask = historyTicks - 1;
    this.zeros = schema.types.map((t) => Int32Array.from(t.fields, (_, f) => encodeField(t, f, 0)));
  }

  /**
   * Creates an entity of type `typeId` in the lowest free slot, every field at the value nearest
   * 0 (0, false, or the end of a range that excludes 0), position (0, 0, 0), parity 0. Returns
   * the slot, or -1 when the store is full.
   */
  create(typeId: number): number {
    this.typeOf(typeId);
    let i = this.lowestFree;
    while (i < this.maxEntities && this.alive[i] !== 0) i++;
    if (i === this.maxEntities) {
      this.lowestFree = i;
      return -1;
    }
    this.occupy(i, typeId);
    this.lowestFree = i + 1;
    return i;
  }

  /**
   * Creates an entity of type `typeId` in slot `index`, which must be free (a mirror of another
   * store, such as a spectator stream's, keeps the indices it is given). As `create` otherwise.
   */
  createAt(index: number, typeId: number): void {
    this.typeOf(typeId);
    if (!(Number.isInteger(index) && index >= 0 && index < this.maxEntities) || this.alive[index] !== 0) {
      throw new RangeError(`EntityStore.createAt: slot ${index} is not a free slot`);
    }
    this.occupy(index, typeId);
  }

  private occupy(i: number, typeId: number): void {
    const type = this.schema.types[typeId];
    const zero = this.zeros[typeId];
    this.alive[i] = 1;
    this.type[i] = typeId;
    // A new entity in a reused slot flips the teleport parity: never blended with the old one.
    this.parity[i] ^= 1;
    this.generation[i] = (this.generation[i] + 1) >>> 0;
    const o = i * this.stride;
    for (let f = 0; f < type.fieldCount; f++) this.live[o + f] = zero[f];
    this.positions[3 * i] = 0;
    this.positions[3 * i + 1] = 0;
    this.positions[3 * i + 2] = 0;
    this.count++;
    if (i >= this.end) this.end = i + 1;
  }

  /** Frees slot `index`; throws when it holds no entity. */
  remove(index: number): void {
    this.check(index, 'remove');
    this.alive[index] = 0;
    this.count--;
    if (index < this.lowestFree) this.lowestFree = index;
    while (this.end > 0 && this.alive[this.end - 1] === 0) this.end--;
  }

  isAlive(index: number): boolean {
    return index >= 0 && index < this.maxEntities && this.alive[index] !== 0;
  }

  /** The type id of the entity in slot `index`. */
  typeIdAt(index: number): number {
    this.check(index, 'typeIdAt');
    return this.type[index];
  }

  /** The live stored values of slot `index` (a view made once per slot; valid for the store's life). */
  values(index: number): Int32Array {
    this.check(index, 'values');
    return this.views[index];
  }

  /** Quantizes `value` into field `field` of the entity in slot `index`. */
  setField(index: number, field: number, value: number | boolean): void {
    this.check(index, 'setField');
    const type = this.schema.types[this.type[index]];
    if (!(field >= 0 && field < type.fieldCount) || !Number.isInteger(field)) {
      throw new RangeError(`EntityStore.setField: field ${field} is not a field of '${type.name}'`);
    }
    this.live[index * this.stride + field] = encodeField(type, field, value);
  }

  /** The decoded value of field `field` of slot `index` (live state). */
  getField(index: number, field: number): number | boolean {
    this.check(index, 'getField');
    const type = this.schema.types[this.type[index]];
    if (!(field >= 0 && field < type.fieldCount) || !Number.isInteger(field)) {
      throw new RangeError(`EntityStore.getField: field ${field} is not a field of '${type.name}'`);
    }
    return decodeField(type, field, this.live[index * this.stride + field]);
  }

  /** Marks a discontinuity (teleport, respawn): flips the parity that tells clients not to interpolate. */
  teleport(index: number): void {
    this.check(index, 'teleport');
    this.parity[index] ^= 1;
  }

  /** Teleport parity (0 or 1) of slot `index`. */
  parityAt(index: number): number {
    this.check(index, 'parityAt');
    return this.parity[index];
  }

  /** Sets the interest position of a type without x, y, z fields (ignored at commit for one with them). */
  setPosition(index: number, x: number, y: number, z: number): void {
    this.check(index, 'setPosition');
    this.positions[3 * index] = x;
    this.positions[3 * index + 1] = y;
    this.positions[3 * index + 2] = z;
  }

  /**
   * Freezes the live state as tick `tick` (an integer above the previous commit's, below 2^32-1):
   * copies every live entity's values, type and parity into the history ring, updates
   * `createdTick` and `changedTick`, derives positions from x, y, z fields and rebuilds the
   * interest grid. Throws if a value written through `values()` is outside its field's range.
   * Allocation-free; copies only live entities' values.
   */
  commit(tick: number): void {
    if (!Number.isInteger(tick) || tick <= this.lastCommitTick || tick >= 0xffffffff) {
      throw new RangeError(
        `EntityStore.commit: tick must be an integer above ${this.lastCommitTick} and below 2^32-1, got ${tick}`,
      );
    }
    const prev = this.ring[this.lastCommitTick & this.historyMask];
    const hasPrev = this.lastCommitTick >= 0;
    const slot = this.ring[tick & this.historyMask];
    const stride = this.stride;
    const types = this.schema.types;
    const live = this.live;
    const dst = slot.values;
    for (let i = 0; i < this.end; i++) {
      if (this.alive[i] === 0) continue;
      const type = types[this.type[i]];
      const o = i * stride;
      const same = hasPrev && this.committedGeneration[i] === this.generation[i];
      let changed = !same || prev.parity[i] !== this.parity[i];
      const lo = type.lo;
      const hi = type.hi;
      for (let f = 0; f < type.fieldCount; f++) {
        const v = live[o + f];
        if (!(v >= lo[f] && v <= hi[f])) {
          throw new RangeError(
            `EntityStore.commit: entity ${i} ('${type.name}') field '${type.fields[f].name}' holds ${v}, outside [${lo[f]}, ${hi[f]}]`,
          );
        }
        if (!changed && prev.values[o + f] !== v) changed = true;
        dst[o + f] = v;
      }
      if (!same) {
        this.createdTick[i] = tick;
        this.committedGeneration[i] = this.generation[i];
      }
      if (changed) this.changedTick[i] = tick;
      const px = type.positionFields[0];
      const py = type.positionFields[1];
      const pz = type.positionFields[2];
      if (px >= 0) this.positions[3 * i] = decodeNumber(type, px, live[o + px]);
      if (py >= 0) this.positions[3 * i + 1] = decodeNumber(type, py, live[o + py]);
      if (pz >= 0) this.positions[3 * i + 2] = decodeNumber(type, pz, live[o + pz]);
    }
    slot.alive.set(this.alive);
    slot.type.set(this.type);
    slot.parity.set(this.parity);
    slot.tick = tick;
    this.lastCommitTick = tick;
    this.interest.rebuild(this.positions, this.alive, this.end);
  }

  /** The committed world at `tick`, or undefined when it is not (or no longer) in the ring. */
  history(tick: number): HistorySlot | undefined {
    const slot = this.ring[tick & this.historyMask];
    return slot.tick === tick && tick >= 0 ? slot : undefined;
  }

  private typeOf(typeId: number): EntityTypeSchema {
    if (!Number.isInteger(typeId) || typeId < 0 || typeId >= this.schema.types.length) {
      throw new RangeError(`EntityStore.create: typeId ${typeId} is not a type of the game schema`);
    }
    return this.schema.types[typeId];
  }

  private check(index: number, method: string): void {
    if (!(index >= 0 && index < this.maxEntities) || this.alive[index] === 0) {
      throw new RangeError(`EntityStore.${method}: slot ${index} holds no entity`);
    }
  }
}
