// Static prefix codes (canonical Huffman), built once from symbol counts that a game trains on its
// own traffic (Quake 3 kept one static Huffman tree over its message stream; this keeps one small
// code per field). Both ends build the same code from the same counts, so nothing about the code
// travels: changing the counts changes the game schema's hash.
//
// A code's bits travel most significant first (the canonical order) inside the LSB-first stream:
// a code is written as one bit-reversed field. A read looks the next TABLE_BITS bits up in a table
// (every code that short decodes in one step) and reads longer codes one bit at a time.

import type { BitStream } from './bitstream.ts';

/** Longest code any symbol gets: counts are flattened until the tree is no deeper. */
export const MAX_CODE_LENGTH = 20;

/** Bits a read looks up at once: codes up to this long decode in one step. */
const TABLE_BITS = 9;

export class PrefixCode {
  /** Number of symbols: 0 .. size - 1. */
  readonly size: number;
  /** Code length of each symbol, in bits. */
  readonly lengths: Uint8Array;
  /** Each symbol's code, bit-reversed within its length (ready for the LSB-first stream). */
  private readonly reversed: Uint32Array;
  /** Canonical decoding: per length L, the first code, how many codes, where their symbols start. */
  private readonly first: Int32Array;
  private readonly count: Int32Array;
  private readonly offset: Int32Array;
  private readonly sorted: Uint8Array;
  private readonly maxLength: number;
  /**
   * By the next min(TABLE_BITS, maxLength) bits of the stream (LSB first): symbol + 256 * length
   * of the code they start with, or 0 when that code is longer.
   */
  private readonly table: Uint16Array;
  private readonly tableBits: number;
  /** (1 << tableBits) - 1: the window's bits the table is indexed by. */
  private readonly tableMask: number;

  /**
   * Builds the code from `counts` (one per symbol, >= 0, 1 to 256 symbols); every symbol gets a
   * code, a count of 0 the longest ones. A single symbol costs no bits at all.
   */
  constructor(counts: readonly number[]) {
    const n = counts.length;
    if (!Array.isArray(counts) || n < 1 || n > 256) {
      throw new RangeError(`PrefixCode: needs 1 to 256 symbol counts, got ${String(counts?.length)}`);
    }
    for (const c of counts) {
      if (!(c >= 0) || !Number.isFinite(c))
        throw new RangeError(`PrefixCode: counts must be finite and >= 0, got ${c}`);
    }
    this.size = n;
    let weights = counts.map((c) => Math.floor(c) + 1);
    let lengths = huffmanLengths(weights);
    while (Math.max(...lengths) > MAX_CODE_LENGTH) {
      weights = weights.map((w) => (w >>> 1) + 1);
      lengths = huffmanLengths(weights);
    }
    this.lengths = Uint8Array.from(lengths);
    const order = [...lengths.keys()].sort((a, b) => lengths[a] - lengths[b] || a - b);
    this.sorted = Uint8Array.from(order);
    const maxLength = lengths[order[n - 1]];
    this.maxLength = maxLength;
    this.first = new Int32Array(maxLength + 1);
    this.count = new Int32Array(maxLength + 1);
    this.offset = new Int32Array(maxLength + 1);
    this.reversed = new Uint32Array(n);
    let code = 0;
    let prev = 0;
    for (let k = 0; k < n; k++) {
      const sym = order[k];
      const len = lengths[sym];
      code *= 2 ** (len - prev);
      if (len !== prev) {
        this.first[len] = code;
        this.offset[len] = k;
      }
      this.count[len]++;
      let r = 0;
      for (let b = 0; b < len; b++) if (Math.floor(code / 2 ** b) % 2 === 1) r += 2 ** (len - 1 - b);
      this.reversed[sym] = r;
      code++;
      prev = len;
    }
    this.tableBits = Math.min(TABLE_BITS, maxLength);
    this.table = new Uint16Array(1 << this.tableBits);
    this.tableMask = (1 << this.tableBits) - 1;
    for (let sym = 0; sym < n; sym++) {
      const len = this.lengths[sym];
      if (len === 0 || len > this.tableBits) continue;
      // Every window whose low `len` bits are this code (the rest is the next code's start).
      for (let rest = 0; rest < 1 << (this.tableBits - len); rest++) {
        this.table[this.reversed[sym] | (rest << len)] = sym + 256 * len;
      }
    }
  }

  /**
   * Writes, reads or measures one symbol. Writing a symbol outside the code is a programming
   * error (throws); a read that meets a bit pattern no symbol has fails with 'malformed'.
   */
  serialize(s: BitStream, symbol: number): number {
    if (!s.isReading) {
      if (!(symbol >= 0 && symbol < this.size))
        throw new RangeError(`PrefixCode: symbol ${symbol} out of range`);
      s.uint(this.reversed[symbol], this.lengths[symbol]);
      return symbol;
    }
    if (this.maxLength === 0) return 0;
    if (!s.ok) return 0;
    const hit = this.table[s.peek(this.tableBits)];
    if (hit !== 0) {
      // Past the end of the data the window reads zeros: a code that needs them fails.
      s.skip(hit >>> 8);
      return s.ok ? hit & 0xff : 0;
    }
    let code = 0;
    for (let len = 1; len <= this.maxLength; len++) {
      code = code * 2 + s.uint(0, 1);
      if (!s.ok) return 0;
      const i = code - this.first[len];
      if (this.count[len] > 0 && i >= 0 && i < this.count[len]) return this.sorted[this.offset[len] + i];
    }
    s.fail('malformed');
    return 0;
  }

  /**
   * Writes (or measures) residual `u` of class `c` (0 for 0, else u's bit length): the class's
   * code, then for c >= 2 the c - 1 bits of u below its top one; one write when both fit in 24
   * bits. The same bits as `serialize(s, c)` then `s.uint(u - 2^(c - 1), c - 1)`. Not for reading.
   */
  writeResidual(s: BitStream, c: number, u: number): void {
    if (!(c >= 0 && c < this.size)) throw new RangeError(`PrefixCode: symbol ${c} out of range`);
    const len = this.lengths[c];
    if (c < 2) {
      s.uint(this.reversed[c], len);
      return;
    }
    const extra = c - 1;
    if (len + extra <= 24) {
      s.uint(this.reversed[c] | ((u - (1 << extra)) << len), len + extra);
      return;
    }
    s.uint(this.reversed[c], len);
    s.uint(u - pow2(extra), extra);
  }

  /**
   * Reads a residual written as its class in this code and then, for a class c >= 2, the c - 1
   * bits below its top bit (the snapshot codec's update fields): returns 0 for class 0, else
   * 2^(c - 1) plus those bits. The same bits and the same failures as `serialize(s, 0)` then
   * `s.uint(0, c - 1)`, from one look at the stream when the code and its bits fit in 24 bits
   * (the common case); the caller checks `s.ok`. Reading only.
   */
  readResidual(s: BitStream): number {
    // A single-symbol code (no bits) and a failed stream take serialize's path below.
    if (this.maxLength !== 0 && s.ok) {
      // Past the end of the data the window reads zeros: a code or bits that need them fail the skip.
      const w = s.peek(24);
      const hit = this.table[w & this.tableMask];
      if (hit !== 0) {
        const len = hit >>> 8;
        const c = hit & 0xff;
        if (c < 2) {
          s.skip(len);
          return c;
        }
        const extra = c - 1;
        if (len + extra <= 24) {
          s.skip(len + extra);
          return (1 << extra) + ((w >>> len) & ((1 << extra) - 1));
        }
        s.skip(len);
        return pow2(extra) + s.uint(0, extra);
      }
    }
    const c = this.serialize(s, 0);
    return c < 2 ? c : pow2(c - 1) + s.uint(0, c - 1);
  }
}

/** 2^k for k in 0..32 (a shift below 31). */
function pow2(k: number): number {
  return k < 31 ? 1 << k : 2 ** k;
}

/** Huffman code lengths for `weights` (all > 0): merges the two lightest until one tree is left. */
function huffmanLengths(weights: readonly number[]): number[] {
  const n = weights.length;
  const depth = new Array<number>(n).fill(0);
  if (n === 1) return depth;
  // Each live node: its weight and the symbols under it (n <= 256: quadratic is fine, once).
  let nodes = weights.map((w, i) => ({ w, syms: [i] }));
  while (nodes.length > 1) {
    nodes.sort((a, b) => a.w - b.w || a.syms[0] - b.syms[0]);
    const [a, b] = nodes;
    for (const s of a.syms) depth[s]++;
    for (const s of b.syms) depth[s]++;
    nodes = [{ w: a.w + b.w, syms: [...a.syms, ...b.syms] }, ...nodes.slice(2)];
  }
  return depth;
}
