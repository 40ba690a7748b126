// Power-of-two ring buffers indexed by masked sequence numbers (Quake 3's `& MASK` histories).

/** Rounds up to the next power of two (at least 1). */
export function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** Throws a RangeError naming `owner` unless `size` is a whole power of two (a ring's slot count). */
export function checkRingSize(owner: string, size: number): void {
  if (!Number.isInteger(size) || size < 1 || (size & (size - 1)) !== 0) {
    throw new RangeError(`${owner}: size must be a power of two, got ${size}`);
  }
}

/**
 * A sequence buffer's tags without its entries: which sequence each of `size` slots (a power of
 * two) holds, for records the owner keeps in typed arrays indexed by slot (a field per array, no
 * object per entry). `slot(seq)` is -1 unless that slot still holds `seq`. Sequences up to 2^31.
 */
export class SequenceSlots {
  readonly size: number;
  private readonly mask: number;
  private readonly tags: Int32Array;

  constructor(size: number) {
    checkRingSize('SequenceSlots', size);
    this.size = size;
    this.mask = size - 1;
    this.tags = new Int32Array(size).fill(-1);
  }

  /** The slot holding `seq`, or -1. */
  slot(seq: number): number {
    const i = seq & this.mask;
    return this.tags[i] === seq ? i : -1;
  }

  /** Claims the slot of `seq` (forgetting what it held) and returns it for the caller to fill. */
  insert(seq: number): number {
    const i = seq & this.mask;
    this.tags[i] = seq;
    return i;
  }
}

/**
 * A sequence buffer (Fiedler's): a power-of-two array of preallocated entries, each tagged with
 * the sequence number stored in it. `get(seq)` returns the entry only if that slot still holds
 * `seq`, so stale entries from a lap ago are never mistaken for current ones. Works with 16-bit wire
 * sequences as well as with widened ones, as long as the buffer is far smaller than the space.
 */
export class SequenceBuffer<T> {
  readonly size: number;
  readonly mask: number;
  private readonly entries: T[];
  private readonly tags: Float64Array;

  constructor(size: number, create: (index: number) => T) {
    checkRingSize('SequenceBuffer', size);
    this.size = size;
    this.mask = size - 1;
    this.entries = new Array(size);
    for (let i = 0; i < size; i++) this.entries[i] = create(i);
    this.tags = new Float64Array(size).fill(-1);
  }

  /** Claims the slot for `seq` and returns its (reused) entry for the caller to fill. */
  insert(seq: number): T {
    const i = seq & this.mask;
    this.tags[i] = seq;
    return this.entries[i];
  }

  /** The entry stored for exactly `seq`, or undefined. */
  get(seq: number): T | undefined {
    const i = seq & this.mask;
    return this.tags[i] === seq ? this.entries[i] : undefined;
  }

  has(seq: number): boolean {
    return this.tags[seq & this.mask] === seq;
  }

  remove(seq: number): void {
    const i = seq & this.mask;
    if (this.tags[i] === seq) this.tags[i] = -1;
  }

  clear(): void {
    this.tags.fill(-1);
  }
}
