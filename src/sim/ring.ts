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
 * A sequence buffer of numeric records: `size` (a power of two) records of `stride` numbers one
 * after another in `records`, each starting with the sequence it holds (-1: none yet), then the
 * owner's fields at offsets 1 .. stride - 1. One array, and a record in one place in memory: an
 * owner that looks a record up reads one place (with a stride of 8 or less, 64 bytes at most: one
 * or two cache lines, as the array's start falls), where an array per field was a fetch per field. `slot(seq)` is where `seq`'s record starts, or -1
 * unless that record still holds `seq`. Sequences up to 2^53.
 */
export class SequenceRecords {
  readonly size: number;
  readonly stride: number;
  readonly records: Float64Array;
  private readonly mask: number;

  constructor(size: number, stride: number) {
    checkRingSize('SequenceRecords', size);
    if (!Number.isInteger(stride) || stride < 2) {
      throw new RangeError(
        `SequenceRecords: stride must be an integer >= 2 (the tag and a field), got ${stride}`,
      );
    }
    this.size = size;
    this.stride = stride;
    this.mask = size - 1;
    this.records = new Float64Array(size * stride);
    for (let at = 0; at < this.records.length; at += stride) this.records[at] = -1;
  }

  /** Where the record holding `seq` starts in `records`, or -1. */
  slot(seq: number): number {
    const at = (seq & this.mask) * this.stride;
    return this.records[at] === seq ? at : -1;
  }

  /** Claims the record of `seq` (forgetting what it held) and returns where it starts, for the caller to fill. */
  insert(seq: number): number {
    const at = (seq & this.mask) * this.stride;
    this.records[at] = seq;
    return at;
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
