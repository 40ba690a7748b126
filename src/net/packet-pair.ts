// Packet pairs: the client's half of the server's bottleneck probe.
//
// Two packets sent back to back leave a link's narrowest hop as far apart as that hop takes to
// send the second: its bytes over the hop's rate. So the gap between their arrivals tells the
// down-link's rate before the sender has ever sent at it, where a queue growing on the path
// (what the rate control otherwise reads) shows only once the sender is already past it, a
// round trip late. The server sends an empty packet (a keepalive) right before some frames: the
// first frames of a connection, then one a second (FramePacing). The client notes when each
// packet arrived; when a frame and the keepalive just before it in sequence have both arrived,
// it reports the gap between them in its next command packet (the client flags, SPEC section 6)
// and the server's rate control takes the sample (src/net/rate-control.ts: `onPair`).
//
// The client does not know which frames the server paired: it reports any frame whose
// predecessor was a keepalive, and the server keeps only the reports of frames it paired. A gap
// is negative when the keepalive came after the frame (jitter reordered them): the server needs
// those too, or a jittery route's gaps, all positive when read alone, would pass for a slow link.
// Times are the client's reading times (the connection stamps packets when it reads them), so on
// a client reading once a frame the gaps are whole frame intervals (0 when it read both in one
// frame); their mean over many pairs is the true gap, which is what the server takes.
// Allocation-free; every number here comes from the client's own clock and accepted packets.

import type { ClientFlags } from '../protocol/frames.ts';
import { PAIR_GAP_LIMIT } from '../protocol/frames.ts';

/** Arrivals remembered, by sequence: a pair's two packets are adjacent, so a few suffice. */
const ARRIVALS = 64;
/**
 * Reports waiting for a command packet (one goes in each); older ones are overwritten. The first
 * frames of a connection are all pairs, 32 a second, and a slow up-link's budget may send fewer
 * command packets than that.
 */
const REPORTS = 32;
const KIND_KEEPALIVE = 1;
const KIND_PAYLOAD = 2;

/** The arrivals of one connection's packets and the pair reports they make. */
export class PairArrivals {
  private readonly sequence = new Int32Array(ARRIVALS).fill(-1);
  private readonly atMs = new Float64Array(ARRIVALS);
  private readonly kind = new Uint8Array(ARRIVALS);
  private readonly reportSequence = new Int32Array(REPORTS);
  private readonly reportGap = new Int32Array(REPORTS);
  private reportCount = 0;
  private reportNext = 0;
  /** Reports made, and taken into command packets. */
  reported = 0;
  taken = 0;

  /**
   * The channel accepted packet `sequence` (16 bits) at `nowMs`; `payload`: it carried a payload
   * (a frame), else it was a keepalive.
   */
  arrived(sequence: number, nowMs: number, payload: boolean): void {
    const slot = sequence % ARRIVALS;
    this.sequence[slot] = sequence;
    this.atMs[slot] = nowMs;
    this.kind[slot] = payload ? KIND_PAYLOAD : KIND_KEEPALIVE;
    if (payload) {
      const before = (sequence + 0xffff) & 0xffff;
      const b = before % ARRIVALS;
      if (this.sequence[b] === before && this.kind[b] === KIND_KEEPALIVE) {
        this.report(sequence, nowMs - this.atMs[b]);
      }
    } else {
      const after = (sequence + 1) & 0xffff;
      const a = after % ARRIVALS;
      if (this.sequence[a] === after && this.kind[a] === KIND_PAYLOAD)
        this.report(after, this.atMs[a] - nowMs);
    }
  }

  /** Sets `flags`' pair fields: the oldest waiting report, or none. */
  take(flags: ClientFlags): void {
    if (this.reportCount === 0) {
      flags.pair = false;
      return;
    }
    const i = (this.reportNext - this.reportCount + REPORTS) % REPORTS;
    flags.pair = true;
    flags.pairSequence = this.reportSequence[i] & 0xff;
    flags.pairGap = this.reportGap[i];
    this.reportCount--;
    this.taken++;
  }

  private report(frameSequence: number, gapMs: number): void {
    const q = Math.round(gapMs * 4);
    this.reportSequence[this.reportNext] = frameSequence;
    this.reportGap[this.reportNext] = Math.min(PAIR_GAP_LIMIT, Math.max(-PAIR_GAP_LIMIT, q));
    this.reportNext = (this.reportNext + 1) % REPORTS;
    if (this.reportCount < REPORTS) this.reportCount++;
    this.reported++;
  }
}
