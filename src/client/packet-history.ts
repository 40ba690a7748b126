// The client's recent packets, for net_graph: each one's time, direction, size on the wire and,
// for a sent packet once the server acknowledged it, its round trip. A power-of-two ring.

/** A packet that came from the server. */
export const PACKET_IN = 0;
/** A packet sent to the server. */
export const PACKET_OUT = 1;

export class PacketHistory {
  /** Entries kept (a power of two). */
  readonly capacity: number;
  /** Entries ever recorded; entry n (n >= total - capacity) is at index n & mask. */
  total = 0;
  readonly timeMs: Float64Array;
  readonly bytes: Uint16Array;
  readonly direction: Uint8Array;
  /** Round trip of a sent packet, ms; NaN until acknowledged, and for received packets. */
  readonly rttMs: Float32Array;
  private readonly mask: number;

  constructor(capacity = 512) {
    if (!Number.isInteger(capacity) || capacity < 2 || (capacity & (capacity - 1)) !== 0) {
      throw new RangeError(`PacketHistory: capacity must be a power of two >= 2, got ${capacity}`);
    }
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.timeMs = new Float64Array(capacity);
    this.bytes = new Uint16Array(capacity);
    this.direction = new Uint8Array(capacity);
    this.rttMs = new Float32Array(capacity);
  }

  /** Records a packet; returns its entry number (for `acknowledged`). */
  record(nowMs: number, direction: number, bytes: number): number {
    const n = this.total++;
    const i = n & this.mask;
    this.timeMs[i] = nowMs;
    this.bytes[i] = Math.min(bytes, 0xffff);
    this.direction[i] = direction;
    this.rttMs[i] = Number.NaN;
    return n;
  }

  /** Entry `n` (a sent packet) was acknowledged after `rttMs`; ignored once it left the ring. */
  acknowledged(n: number, rttMs: number): void {
    if (n < 0 || n >= this.total || n < this.total - this.capacity) return;
    this.rttMs[n & this.mask] = rttMs;
  }

  /** Index of entry `n` in the arrays (n must be within the last `capacity` entries). */
  indexOf(n: number): number {
    return n & this.mask;
  }

  /** The oldest entry number still held. */
  get oldest(): number {
    return Math.max(0, this.total - this.capacity);
  }
}
