// Bit stream: one serialize function per message writes, reads and measures it (yojimbo pattern).
//
// A serialize function takes a BitStream and an object, and calls the stream once per field:
//
//   function serializeThing(s: BitStream, t: Thing): boolean {
//     t.count = s.uint(t.count, 6);
//     t.speed = s.float(t.speed, 0, 1000, 1 / 8);
//     return s.ok;
//   }
//
// Writing returns each value unchanged and packs it; reading ignores the value passed in and
// returns what was read; measuring only counts bits. A read that runs past the end or meets a
// value outside its declared range marks the stream failed (`ok` false, `error` says why) and
// returns the field's minimum; every later call is a no-op, so a serialize function can check
// `s.ok` once at the end. Nothing here throws on bad input, and nothing allocates per call
// except `string()`. Writing a value outside its declared range (or a float32 that is not
// finite) is a programming error and throws a RangeError naming the value and range; so does a
// bad argument (a bit count outside 0..32, a bad length given to beginWrite or beginRead).
//
// Bits are packed least significant first into consecutive bytes.

export const MODE_WRITE = 0;
export const MODE_READ = 1;
export const MODE_MEASURE = 2;
export type StreamMode = typeof MODE_WRITE | typeof MODE_READ | typeof MODE_MEASURE;

/** Number of bits needed to hold any integer in [0, range]; 0 for range 0. */
export function bitsRequired(range: number): number {
  if (!(range >= 0) || range > 0xffffffff || Math.floor(range) !== range) {
    throw new RangeError(`bitsRequired: range must be an integer in [0, 2^32-1], got ${range}`);
  }
  return range === 0 ? 0 : 32 - Math.clz32(range);
}

/**
 * Quantizes `value` to the grid min + k * precision, clamped to [min, max], exactly as the
 * wire does. Shared game code calls this so that a state it computes equals the state decoded.
 */
export function quantize(value: number, min: number, max: number, precision: number): number {
  const steps = Math.round((max - min) / precision);
  let q = Math.round((value - min) / precision);
  if (!(q >= 0)) q = 0; // also catches NaN
  if (q > steps) q = steps;
  // On the grid already: the caller's own number back (V8 boxes a number a call returns), -0 as 0.
  const r = min + q * precision;
  return r === value && r !== 0 ? value : r;
}

/**
 * `quantize` on `values[at .. at + count)`, in place, the same numbers: for code that keeps its
 * numbers in arrays, so that none is passed to or returned from a call (V8 boxes a number that
 * crosses a call it does not inline: see BitStream.floats).
 */
export function quantizeValues(
  values: Float64Array,
  at: number,
  count: number,
  min: number,
  max: number,
  precision: number,
): void {
  const steps = Math.round((max - min) / precision);
  for (let i = at; i < at + count; i++) {
    let q = Math.round((values[i] - min) / precision);
    if (!(q >= 0)) q = 0; // also catches NaN
    if (q > steps) q = steps;
    values[i] = min + q * precision;
  }
}

/** Angles are carried in degrees; this is the degree value an angle of `bits` bits decodes to. */
export function quantizeAngle(degrees: number, bits: number): number {
  const scale = 2 ** bits;
  const wrapped = degrees - 360 * Math.floor(degrees / 360);
  let q = Math.round((wrapped * scale) / 360);
  if (!(q > 0) || q >= scale) q = 0; // also turns -0 (from a tiny negative angle) into 0
  // On the grid already: the caller's own number back, as quantize does.
  const a = (q * 360) / scale;
  return a === degrees && a !== 0 ? degrees : a;
}

/** `quantizeAngle` on `values[at .. at + count)`, in place (see quantizeValues). */
export function quantizeAngles(values: Float64Array, at: number, count: number, bits: number): void {
  const scale = 2 ** bits;
  for (let i = at; i < at + count; i++) {
    const degrees = values[i];
    const wrapped = degrees - 360 * Math.floor(degrees / 360);
    let q = Math.round((wrapped * scale) / 360);
    if (!(q > 0) || q >= scale) q = 0; // also turns -0 (from a tiny negative angle) into 0
    values[i] = (q * 360) / scale;
  }
}

/** Notes one write in `notes` (BitStream.notes), or voids them when their arrays are full. */
function noteWrite(notes: WriteNotes, start: number, value: number, bits: number): void {
  const n = notes.fieldCount;
  if (n === notes.fieldStart.length) {
    notes.fieldCount = -1;
    return;
  }
  notes.fieldStart[n] = start;
  notes.fieldBits[n] = bits;
  // The low `bits` bits of the value as a 32-bit integer: what the stream packs. A mask, not
  // `% 2 ** bits` (a floating-point remainder: two thirds of what recording a state took).
  notes.fieldValue[n] = bits >= 32 ? value >>> 0 : (value & ((1 << bits) - 1)) >>> 0;
  notes.fieldCount = n + 1;
}

/** Bytes beginWrite clears in a loop of its own rather than with fill (a call into the runtime). */
const SMALL_CLEAR_BYTES = 64;

const textEncoder = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF in the decoded string, so every string round-trips.
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The one value `float` and `angle` hand to their runs. */
const oneValue = new Float64Array(1);

/** The `take` (1..24) bits of `source` from bit `at` on, in the stream's order (copyBits' pieces). */
function sourceBits(source: Uint8Array, at: number, take: number): number {
  const byte = at >>> 3;
  const end = source.length;
  const w =
    source[byte] |
    (byte + 1 < end ? source[byte + 1] << 8 : 0) |
    (byte + 2 < end ? source[byte + 2] << 16 : 0) |
    (byte + 3 < end ? source[byte + 3] << 24 : 0);
  return (w >>> (at & 7)) & ((1 << take) - 1);
}

function checkBits(method: string, bits: number): void {
  // Within [0, 32], bits | 0 is bits exactly when it is whole (cheaper than Math.floor per call).
  if (!(bits >= 0 && bits <= 32) || (bits | 0) !== bits) {
    throw new RangeError(`BitStream.${method}: bits must be an integer in [0, 32], got ${bits}`);
  }
}

function checkRun(method: string, values: Float64Array, at: number, count: number): void {
  if (!(values instanceof Float64Array)) {
    throw new TypeError(`BitStream.${method}: values must be a Float64Array`);
  }
  if (
    !(Number.isInteger(at) && Number.isInteger(count) && at >= 0 && count >= 0 && at + count <= values.length)
  ) {
    throw new RangeError(
      `BitStream.${method}: at and count must be whole, non-negative and within the array's ${values.length} values, got at ${at}, count ${count}`,
    );
  }
}

function checkByteLength(method: string, name: string, value: number): void {
  if (!(value >= 0) || Math.floor(value) !== value) {
    throw new RangeError(`BitStream.${method}: ${name} must be a non-negative integer, got ${value}`);
  }
}

/**
 * Where a writing stream notes each primitive write (`BitStream.notes`): its first bit, its width
 * and its value's low bits, in arrays of one length. PlayerStateHistory's field delta reads them.
 */
export interface WriteNotes {
  /** Writes noted so far; -1 once more came than the arrays hold (the notes then say nothing). */
  fieldCount: number;
  readonly fieldStart: Uint16Array;
  readonly fieldBits: Uint8Array;
  readonly fieldValue: Uint32Array;
}

export class BitStream {
  mode: StreamMode = MODE_MEASURE;
  /** False once a read failed or a write overflowed the buffer. */
  ok = true;
  /** Why the stream failed ('' while ok). A constant string: failing does not allocate. */
  error = '';
  private buf: Uint8Array;
  private readonly own: Uint8Array;
  private bitPos = 0;
  private bitLimit = 0;
  /**
   * While set, every write is noted there (null: none). One stream class with an optional note,
   * not a subclass that notes: a subclass would make every call site of the primitives in a
   * game's serialize see two stream classes, and V8 would inline both (or neither).
   */
  notes: WriteNotes | null = null;

  constructor(capacityBytes = 1500) {
    this.own = new Uint8Array(capacityBytes);
    this.buf = this.own;
  }

  /**
   * Starts writing into the stream's own buffer (or `target`), at most `limitBytes` bytes
   * (default and cap: that buffer's length). Never writes into data given to `beginRead`.
   * `dirtyBytes`, for a caller that keeps a buffer of its own: only that many leading bytes of it
   * may be other than zero (a write leaves every byte past its last bit as it found it), so only
   * they are cleared. Default: the whole limit.
   */
  beginWrite(limitBytes?: number, target?: Uint8Array, dirtyBytes?: number): this {
    const buf = target ?? this.own;
    this.buf = buf;
    if (limitBytes === undefined || limitBytes > buf.length) limitBytes = buf.length;
    checkByteLength('beginWrite', 'limitBytes', limitBytes);
    this.mode = MODE_WRITE;
    this.ok = true;
    this.error = '';
    this.bitPos = 0;
    this.bitLimit = limitBytes * 8;
    const clear =
      dirtyBytes !== undefined && dirtyBytes >= 0 && dirtyBytes < limitBytes ? dirtyBytes : limitBytes;
    // A few bytes are cleared in a loop the compiler keeps inline; more, by fill.
    if (clear <= SMALL_CLEAR_BYTES) for (let i = 0; i < clear; i++) buf[i] = 0;
    else buf.fill(0, 0, clear);
    return this;
  }

  /** Starts reading the first `byteLength` bytes of `data`. The data is not copied. */
  beginRead(data: Uint8Array, byteLength = data.length): this {
    checkByteLength('beginRead', 'byteLength', byteLength);
    this.mode = MODE_READ;
    this.buf = data;
    this.ok = true;
    this.error = '';
    this.bitPos = 0;
    this.bitLimit = Math.min(byteLength, data.length) * 8;
    return this;
  }

  /** Starts counting bits without writing anything. */
  beginMeasure(): this {
    this.mode = MODE_MEASURE;
    this.ok = true;
    this.error = '';
    this.bitPos = 0;
    this.bitLimit = Number.MAX_SAFE_INTEGER;
    return this;
  }

  get isReading(): boolean {
    return this.mode === MODE_READ;
  }
  get isWriting(): boolean {
    return this.mode === MODE_WRITE;
  }
  get bitsProcessed(): number {
    return this.bitPos;
  }
  get bytesProcessed(): number {
    return (this.bitPos + 7) >>> 3;
  }
  get bitsRemaining(): number {
    return this.bitLimit - this.bitPos;
  }
  /** The bytes written so far (a view, not a copy). */
  get bytes(): Uint8Array {
    return this.buf.subarray(0, this.bytesProcessed);
  }
  /** The underlying buffer (for callers that hand written bytes to a transport). */
  get buffer(): Uint8Array {
    return this.buf;
  }

  /** Marks the stream failed with a reason; returns false so callers can `return s.fail(...)`. */
  fail(reason: string): false {
    if (this.ok) {
      this.ok = false;
      this.error = reason;
    }
    return false;
  }

  /** Moves the write/read position back to an earlier bit position (write rollback). */
  rewind(bitPosition: number): void {
    if (bitPosition < 0 || bitPosition > this.bitPos)
      throw new RangeError(`rewind: bad position ${bitPosition}`);
    if (this.mode === MODE_WRITE) {
      const byte = bitPosition >>> 3;
      const keep = bitPosition & 7;
      this.buf[byte] &= (1 << keep) - 1;
      this.buf.fill(0, byte + 1, (this.bitPos + 7) >>> 3);
    }
    this.bitPos = bitPosition;
    this.ok = true;
    this.error = '';
  }

  private writeBits(value: number, bits: number): void {
    const notes = this.notes;
    if (notes !== null && notes.fieldCount >= 0) noteWrite(notes, this.bitPos, value, bits);
    if (this.bitPos + bits > this.bitLimit) {
      this.fail('write overflow');
      this.bitPos = this.bitLimit;
      return;
    }
    const pos = this.bitPos;
    const byte = pos >>> 3;
    const buf = this.buf;
    // Up to 24 bits land in at most 4 bytes: OR them in at once (the bytes past the position
    // are zero while writing: beginWrite and rewind clear them).
    if (bits <= 24 && byte + 3 < buf.length) {
      const w = ((value & ((1 << bits) - 1)) << (pos & 7)) >>> 0;
      buf[byte] |= w;
      buf[byte + 1] |= w >>> 8;
      buf[byte + 2] |= w >>> 16;
      buf[byte + 3] |= w >>> 24;
      this.bitPos = pos + bits;
      return;
    }
    let done = 0;
    while (done < bits) {
      const pos = this.bitPos;
      const offset = pos & 7;
      const take = Math.min(8 - offset, bits - done);
      const part = (value >>> done) & ((1 << take) - 1);
      this.buf[pos >>> 3] |= part << offset;
      this.bitPos = pos + take;
      done += take;
    }
  }

  /**
   * Writes (or, measuring, counts) `count` bits copied from `source`, starting at bit `startBit`
   * (bits in the stream's own order: a span another stream wrote there). Not for reading.
   * Returns false when the stream failed (an overflow fails it, as any write does).
   */
  copyBits(source: Uint8Array, startBit: number, count: number): boolean {
    if (this.mode === MODE_READ) throw new RangeError('BitStream.copyBits: the stream is reading');
    if (!(startBit >= 0 && count >= 0 && startBit + count <= source.length * 8)) {
      throw new RangeError(
        `BitStream.copyBits: bits ${startBit}+${count} outside a ${source.length}-byte source`,
      );
    }
    if (!this.ok) return false;
    if (this.mode === MODE_MEASURE) {
      this.bitPos += count;
      return true;
    }
    let at = startBit;
    let left = count;
    const notes = this.notes;
    if ((notes === null || notes.fieldCount < 0) && this.bitPos + count <= this.bitLimit) {
      // It fits and nothing notes the writes: each piece is ORed straight in (writeBits' fast
      // path, with its checks made once for the whole copy).
      const buf = this.buf;
      const size = buf.length;
      let pos = this.bitPos;
      while (left > 0) {
        const take = Math.min(left, 24);
        const x = (sourceBits(source, at, take) << (pos & 7)) >>> 0;
        const d = pos >>> 3;
        // The piece ends within the limit, so no bit of it lies past the buffer.
        buf[d] |= x;
        if (d + 1 < size) buf[d + 1] |= x >>> 8;
        if (d + 2 < size) buf[d + 2] |= x >>> 16;
        if (d + 3 < size) buf[d + 3] |= x >>> 24;
        pos += take;
        at += take;
        left -= take;
      }
      this.bitPos = pos;
      return true;
    }
    while (left > 0 && this.ok) {
      const take = Math.min(left, 24);
      this.writeBits(sourceBits(source, at, take), take);
      at += take;
      left -= take;
    }
    return this.ok;
  }

  private readBits(bits: number): number {
    if (this.bitPos + bits > this.bitLimit) {
      this.fail('read past end');
      return 0;
    }
    const pos = this.bitPos;
    const byte = pos >>> 3;
    const buf = this.buf;
    if (bits <= 24 && byte + 3 < buf.length) {
      const w = buf[byte] | (buf[byte + 1] << 8) | (buf[byte + 2] << 16) | (buf[byte + 3] << 24);
      this.bitPos = pos + bits;
      return (w >>> (pos & 7)) & ((1 << bits) - 1);
    }
    let value = 0;
    let done = 0;
    while (done < bits) {
      const pos = this.bitPos;
      const offset = pos & 7;
      const take = Math.min(8 - offset, bits - done);
      const part = (this.buf[pos >>> 3] >>> offset) & ((1 << take) - 1);
      value |= part << done;
      this.bitPos = pos + take;
      done += take;
    }
    return value >>> 0;
  }

  /**
   * Reading: the next `bits` bits (1..24) without moving, zeros past the end of the data; how many
   * of them the data holds is `bitsRemaining`. For table-driven decoders; `skip` then consumes.
   */
  peek(bits: number): number {
    const pos = this.bitPos;
    const byte = pos >>> 3;
    const buf = this.buf;
    const end = this.bitLimit >>> 3;
    const w =
      (byte < end ? buf[byte] : 0) |
      (byte + 1 < end ? buf[byte + 1] << 8 : 0) |
      (byte + 2 < end ? buf[byte + 2] << 16 : 0) |
      (byte + 3 < end ? buf[byte + 3] << 24 : 0);
    return (w >>> (pos & 7)) & ((1 << bits) - 1);
  }

  /** Reading: moves past `bits` bits a `peek` showed; fails with 'read past end' beyond the data. */
  skip(bits: number): void {
    if (this.bitPos + bits > this.bitLimit) {
      this.fail('read past end');
      return;
    }
    this.bitPos += bits;
  }

  /** Unsigned integer of `bits` bits (0..32). */
  uint(value: number, bits: number): number {
    checkBits('uint', bits);
    if (!this.ok) return 0;
    if (bits === 0) return 0;
    switch (this.mode) {
      case MODE_READ:
        return this.readBits(bits);
      case MODE_WRITE: {
        const max = bits === 32 ? 0xffffffff : (1 << bits) >>> 0;
        // Below 2^32, value >>> 0 is value exactly when it is whole.
        if (!(value >= 0 && (bits === 32 ? value <= max : value < max)) || value >>> 0 !== value) {
          throw new RangeError(`BitStream.uint: ${value} does not fit in ${bits} bits`);
        }
        this.writeBits(value, bits);
        return value;
      }
      default:
        this.bitPos += bits;
        return value;
    }
  }

  /** Integer in [min, max] (inclusive), written in the fewest bits that hold the range. */
  int(value: number, min: number, max: number): number {
    if (!this.ok) return min;
    const bits = bitsRequired(max - min);
    switch (this.mode) {
      case MODE_READ: {
        const v = this.readBits(bits);
        if (v > max - min) {
          this.fail('integer out of range');
          return min;
        }
        return min + v;
      }
      case MODE_WRITE:
        if (!(value >= min && value <= max) || Math.floor(value) !== value) {
          throw new RangeError(`BitStream.int: ${value} is outside [${min}, ${max}]`);
        }
        this.writeBits(value - min, bits);
        return value;
      default:
        this.bitPos += bits;
        return value;
    }
  }

  bool(value: boolean): boolean {
    if (!this.ok) return false;
    switch (this.mode) {
      case MODE_READ:
        return this.readBits(1) === 1;
      case MODE_WRITE:
        this.writeBits(value ? 1 : 0, 1);
        return value;
      default:
        this.bitPos += 1;
        return value;
    }
  }

  /**
   * Float quantized to min + k * precision within [min, max]. Writing clamps; reading returns
   * exactly `quantize(written, min, max, precision)`.
   */
  float(value: number, min: number, max: number, precision: number): number {
    const v = oneValue;
    v[0] = value;
    this.floatRun(v, 0, 1, min, max, precision);
    // A value already on the grid (a game's state, quantized as it moves) is handed back as it
    // came: the caller's own number, not a new one (V8 boxes a number a call returns). Zero is
    // returned as computed, so -0 comes back as 0.
    const r = v[0];
    return r === value && r !== 0 ? value : r;
  }

  /** Angle in degrees, any value, wrapped into [0, 360) with `bits` bits of resolution. */
  angle(value: number, bits: number): number {
    checkBits('angle', bits);
    const v = oneValue;
    v[0] = value;
    this.angleRun(v, 0, 1, bits);
    // As float: the caller's own number when it is already on the grid (-0 becomes 0).
    const a = v[0];
    return a === value && a !== 0 ? value : a;
  }

  /**
   * `float` on `values[at .. at + count)`, each in place: the same bits and values as `count`
   * calls of `float`. A serializer of many fractional fields that calls this with its fields in
   * a scratch array allocates nothing, where one that calls `float` for each allocates a heap
   * number for every argument and result V8 passes through a call it does not inline (a function
   * with many calls runs out of V8's inlining budget after a few). Returns `ok`.
   */
  floats(
    values: Float64Array,
    at: number,
    count: number,
    min: number,
    max: number,
    precision: number,
  ): boolean {
    checkRun('floats', values, at, count);
    this.floatRun(values, at, count, min, max, precision);
    return this.ok;
  }

  /** `angle` on `values[at .. at + count)`, each in place (see `floats`). Returns `ok`. */
  angles(values: Float64Array, at: number, count: number, bits: number): boolean {
    checkBits('angles', bits);
    checkRun('angles', values, at, count);
    this.angleRun(values, at, count, bits);
    return this.ok;
  }

  /** `floats` without the argument checks. */
  private floatRun(
    values: Float64Array,
    at: number,
    count: number,
    min: number,
    max: number,
    precision: number,
  ): void {
    const steps = Math.round((max - min) / precision);
    const bits = bitsRequired(steps);
    for (let i = at; i < at + count; i++) {
      if (!this.ok) {
        values[i] = min;
        continue;
      }
      switch (this.mode) {
        case MODE_READ: {
          const q = this.readBits(bits);
          if (q > steps) {
            this.fail('quantized float out of range');
            values[i] = min;
          } else values[i] = min + q * precision;
          break;
        }
        default:
          // Writing or measuring: onto the grid, then (writing) its step, which the division
          // gives back exactly (rounded: its error is far below half a step).
          quantizeValues(values, i, 1, min, max, precision);
          if (this.mode === MODE_WRITE) this.writeBits(Math.round((values[i] - min) / precision), bits);
          else this.bitPos += bits;
      }
    }
  }

  /** `angles` without the argument checks. */
  private angleRun(values: Float64Array, at: number, count: number, bits: number): void {
    const scale = 2 ** bits;
    for (let i = at; i < at + count; i++) {
      if (!this.ok) {
        values[i] = 0;
        continue;
      }
      if (this.mode === MODE_READ) {
        values[i] = (this.readBits(bits) * 360) / scale;
        continue;
      }
      // Writing or measuring: onto the grid, then (writing) its step: q * 360 / scale times
      // scale / 360 is q exactly (scale is a power of two).
      quantizeAngles(values, i, 1, bits);
      if (this.mode === MODE_WRITE) this.writeBits((values[i] * scale) / 360, bits);
      else this.bitPos += bits;
    }
  }

  /**
   * Full-precision 32-bit float (rarely needed: prefer `float`). Reading returns exactly
   * `Math.fround(written)` and fails on NaN or infinity; writing one (or a number that rounds to
   * infinity in 32 bits) throws.
   */
  float32(value: number): number {
    if (!this.ok) return 0;
    switch (this.mode) {
      case MODE_READ: {
        scratchU32[0] = this.readBits(32);
        const v = scratchF32[0];
        if (!Number.isFinite(v)) {
          this.fail('non-finite float');
          return 0;
        }
        return v;
      }
      case MODE_WRITE:
        scratchF32[0] = value;
        if (!Number.isFinite(scratchF32[0])) {
          throw new RangeError(`BitStream.float32: ${value} is not a finite 32-bit float`);
        }
        this.writeBits(scratchU32[0], 32);
        return scratchF32[0];
      default:
        this.bitPos += 32;
        scratchF32[0] = value;
        return scratchF32[0];
    }
  }

  /**
   * Variable-length unsigned integer in [0, max] (max up to 2^32-1): groups of 7 bits, each
   * followed by a continuation bit. Small values cost 8 bits.
   */
  varuint(value: number, max = 0xffffffff): number {
    if (!this.ok) return 0;
    switch (this.mode) {
      case MODE_READ: {
        let result = 0;
        let scale = 1;
        for (let group = 0; group < 5; group++) {
          const part = this.readBits(7);
          result += part * scale;
          scale *= 128;
          if (!this.ok) return 0;
          const more = this.readBits(1);
          if (!this.ok) return 0;
          if (more === 0) {
            if (result > max) {
              this.fail('varuint out of range');
              return 0;
            }
            return result;
          }
        }
        this.fail('varuint too long');
        return 0;
      }
      case MODE_WRITE: {
        if (!(value >= 0 && value <= max) || Math.floor(value) !== value) {
          throw new RangeError(`BitStream.varuint: ${value} is outside [0, ${max}]`);
        }
        let rest = value;
        for (;;) {
          const part = rest % 128;
          rest = (rest - part) / 128;
          this.writeBits(part, 7);
          this.writeBits(rest > 0 ? 1 : 0, 1);
          if (rest === 0) return value;
        }
      }
      default:
        this.bitPos += varuintBits(value);
        return value;
    }
  }

  /**
   * `length` raw bytes from/to `target[0..length)`. Reading checks that `length` fits `target`
   * and the remaining data; the caller bounds `length` before it reads it from the wire.
   */
  bytesField(target: Uint8Array, length: number): boolean {
    if (!this.ok) return false;
    if (!(length >= 0 && length <= target.length) || Math.floor(length) !== length) {
      return this.fail('byte field longer than its buffer');
    }
    switch (this.mode) {
      case MODE_READ:
        if (this.bitPos + length * 8 > this.bitLimit) return this.fail('read past end');
        for (let i = 0; i < length; i++) target[i] = this.readBits(8);
        return true;
      case MODE_WRITE:
        if ((this.bitPos & 7) === 0 && this.bitPos + length * 8 <= this.bitLimit) {
          // On a byte boundary: one copy (the buffer is zeroed past the position).
          this.buf.set(target.subarray(0, length), this.bitPos >>> 3);
          this.bitPos += length * 8;
          return true;
        }
        for (let i = 0; i < length; i++) this.writeBits(target[i], 8);
        return this.ok;
      default:
        this.bitPos += length * 8;
        return true;
    }
  }

  /** UTF-8 string of at most `maxBytes` bytes, length-prefixed. Reading allocates the string. */
  string(value: string, maxBytes: number): string {
    if (!this.ok) return '';
    switch (this.mode) {
      case MODE_READ: {
        const length = this.int(0, 0, maxBytes);
        if (!this.ok) return '';
        if (this.bitPos + length * 8 > this.bitLimit) {
          this.fail('read past end');
          return '';
        }
        const bytes = new Uint8Array(length);
        for (let i = 0; i < length; i++) bytes[i] = this.readBits(8);
        try {
          return textDecoder.decode(bytes);
        } catch {
          this.fail('invalid utf-8');
          return '';
        }
      }
      default: {
        const bytes = textEncoder.encode(value);
        if (bytes.length > maxBytes) {
          throw new RangeError(`BitStream.string: ${bytes.length} bytes is over the limit of ${maxBytes}`);
        }
        this.int(bytes.length, 0, maxBytes);
        this.bytesField(bytes, bytes.length);
        return value;
      }
    }
  }
}

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** Bits `varuint` takes for `value`: 8 per group of 7 bits. */
/** Bits of `value` (0 .. 2^31 - 2) as an order-0 exponential-Golomb code: 2 * bitLength(value + 1) - 1. */
export function expGolombBits(value: number): number {
  return 2 * (32 - Math.clz32(value + 1)) - 1;
}

/**
 * Writes, reads or measures `value` in [0, max] (max at most 2^31 - 2) as an order-0
 * exponential-Golomb code: n - 1 zero bits, a one, then the n - 1 bits of value + 1 below its top
 * bit (n = its bit length). 0 costs 1 bit, 1-2 cost 3, 3-6 cost 5. A read fails with 'malformed'
 * on more zeros than any value up to max has, and with 'expGolomb out of range' above max.
 */
export function serializeExpGolomb(s: BitStream, value: number, max: number): number {
  if (!s.isReading) {
    if (!(value >= 0 && value <= max) || Math.floor(value) !== value) {
      throw new RangeError(`serializeExpGolomb: ${value} is outside [0, ${max}]`);
    }
    const v = value + 1;
    const n = 32 - Math.clz32(v);
    s.uint(2 ** (n - 1), n);
    if (n > 1) s.uint(v - 2 ** (n - 1), n - 1);
    return value;
  }
  const limit = 31 - Math.clz32(max + 1);
  let zeros = 0;
  while (s.uint(0, 1) === 0) {
    if (!s.ok) return 0;
    if (++zeros > limit) {
      s.fail('malformed');
      return 0;
    }
  }
  const v = (zeros === 0 ? 1 : 2 ** zeros + s.uint(0, zeros)) - 1;
  if (!s.ok) return 0;
  if (v > max) {
    s.fail('expGolomb out of range');
    return 0;
  }
  return v;
}

export function varuintBits(value: number): number {
  let groups = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    groups++;
  }
  return groups * 8;
}
