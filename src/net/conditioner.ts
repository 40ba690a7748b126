// The network conditioner: decides the fate of each packet on one direction of one link.
//
// A packet submitted at `nowMs` goes through, in order:
//   1. the bandwidth queue (when `bandwidthKbps` > 0): the link is busy until `busyUntilMs`; the
//      packet starts at max(now, busyUntil) and departs (byteLength + WIRE_OVERHEAD_BYTES) * 8 /
//      bandwidthKbps ms later. If it would wait more than `queueMs` it is dropped ("queue") and
//      takes no link time.
//   2. the Gilbert-Elliott chain: one step per packet that passed the queue (good -> bad with
//      probability burst.enter, bad -> good with burst.exit), then loss with probability `loss`
//      in the good state ("random") or burst.loss in the bad state ("burst"). A lost packet has
//      still used its link time.
//   3. delivery at departure + max(0, latencyMs + uniform[-jitterMs, +jitterMs]), plus
//      reorderDelayMs with probability `reorder`; with probability `duplicate` a second copy with
//      its own latency (and reorder) draw.
// Conditions are those of the profile at `nowMs` (events included). Every random draw comes from
// the conditioner's own seeded Random, so a seed and a sequence of submissions give one schedule.
// Jitter draws are independent per packet, so packets sent closer together than the jitter may
// arrive out of order as well.

import { Random } from '../sim/random.ts';
import type { Direction, LinkConditions, NetworkProfile } from './profile.ts';
import { conditionsAt, createLinkConditions } from './profile.ts';

/** Bytes of IPv4 + UDP header a datagram costs on the link beyond its payload. */
export const WIRE_OVERHEAD_BYTES = 28;

export type DropReason = 'random' | 'burst' | 'queue';

/** Counters of one link direction; packets and bytes are payload (as submitted). */
export interface LinkStats {
  /** Packets submitted. */
  sent: number;
  bytesSent: number;
  /** Copies scheduled for delivery (a duplicated packet counts twice). */
  delivered: number;
  bytesDelivered: number;
  /** Packets delivered twice. */
  duplicated: number;
  droppedRandom: number;
  droppedBurst: number;
  droppedQueue: number;
  /**
   * Packets that went through the bandwidth queue (when the link has a bandwidth), and the sum of
   * the time they waited in it for the packets before them, ms: queueWaitMs / queued is the
   * mean queueing delay this direction adds (the link's own serialization time is not in it).
   */
  queued: number;
  queueWaitMs: number;
}

/** What happened to one submitted packet. Owned by the conditioner: valid until the next submit. */
export interface LinkVerdict {
  /** 0 when dropped, 1, or 2 when duplicated. */
  copies: 0 | 1 | 2;
  /** Delivery time of the first copy, ms (when copies >= 1). */
  firstMs: number;
  /** Delivery time of the second copy, ms (when copies is 2); may be earlier than firstMs. */
  secondMs: number;
  /** Why the packet was dropped, or null. */
  drop: DropReason | null;
}

export interface LinkConditionerOptions {
  /** Seed of this link's own random sequence. */
  seed: number;
  profile: NetworkProfile;
  direction: Direction;
}

export class LinkConditioner {
  readonly profile: NetworkProfile;
  readonly direction: Direction;
  readonly stats: LinkStats = {
    sent: 0,
    bytesSent: 0,
    delivered: 0,
    bytesDelivered: 0,
    duplicated: 0,
    droppedRandom: 0,
    droppedBurst: 0,
    droppedQueue: 0,
    queued: 0,
    queueWaitMs: 0,
  };
  private readonly random: Random;
  private readonly conditions: LinkConditions = createLinkConditions();
  private readonly verdict: LinkVerdict = { copies: 0, firstMs: 0, secondMs: 0, drop: null };
  private bad = false;
  private busyUntil = Number.NEGATIVE_INFINITY;

  constructor(options: LinkConditionerOptions) {
    if (!Number.isInteger(options.seed)) {
      throw new Error(`LinkConditioner: seed must be an integer, got ${options.seed}`);
    }
    if (options.direction !== 'up' && options.direction !== 'down') {
      throw new Error(`LinkConditioner: direction must be "up" or "down", got ${String(options.direction)}`);
    }
    this.random = new Random(options.seed);
    this.profile = options.profile;
    this.direction = options.direction;
  }

  /** True while the Gilbert-Elliott chain is in its bad (bursty) state. */
  get inBurst(): boolean {
    return this.bad;
  }

  /** Time until which the bandwidth queue is busy, ms (-Infinity before the first packet). */
  get busyUntilMs(): number {
    return this.busyUntil;
  }

  /**
   * Decides the fate of a packet of `byteLength` payload bytes sent at `nowMs` (ms since the
   * network's start) and updates the counters. Submissions are expected in non-decreasing time
   * order (the bandwidth queue assumes it). Returns the conditioner's reused verdict. Throws on
   * a non-finite time or a byte length that is not a non-negative integer.
   */
  submit(nowMs: number, byteLength: number): LinkVerdict {
    if (!Number.isFinite(nowMs))
      throw new Error(`LinkConditioner.submit: nowMs must be finite, got ${nowMs}`);
    if (!Number.isInteger(byteLength) || byteLength < 0) {
      throw new Error(`LinkConditioner.submit: byteLength must be a non-negative integer, got ${byteLength}`);
    }
    const c = conditionsAt(this.profile, this.direction, nowMs, this.conditions);
    const v = this.verdict;
    const stats = this.stats;
    v.copies = 0;
    v.firstMs = 0;
    v.secondMs = 0;
    v.drop = null;
    stats.sent++;
    stats.bytesSent += byteLength;

    let departMs = nowMs;
    if (c.bandwidthKbps > 0) {
      const startMs = Math.max(nowMs, this.busyUntil);
      if (startMs - nowMs > c.queueMs) {
        v.drop = 'queue';
        stats.droppedQueue++;
        return v;
      }
      stats.queued++;
      stats.queueWaitMs += startMs - nowMs;
      this.busyUntil = startMs + ((byteLength + WIRE_OVERHEAD_BYTES) * 8) / c.bandwidthKbps;
      departMs = this.busyUntil;
    }

    this.bad = this.bad ? !this.roll(c.burst.exit) : this.roll(c.burst.enter);
    if (this.roll(this.bad ? c.burst.loss : c.loss)) {
      if (this.bad) {
        v.drop = 'burst';
        stats.droppedBurst++;
      } else {
        v.drop = 'random';
        stats.droppedRandom++;
      }
      return v;
    }

    v.copies = 1;
    v.firstMs = departMs + this.delay(c);
    if (this.roll(c.duplicate)) {
      v.copies = 2;
      v.secondMs = departMs + this.delay(c);
      stats.duplicated++;
    }
    stats.delivered += v.copies;
    stats.bytesDelivered += v.copies * byteLength;
    return v;
  }

  /** True with probability p; draws nothing when the outcome is certain. */
  private roll(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.random.chance(p);
  }

  private delay(c: LinkConditions): number {
    let ms = c.latencyMs;
    if (c.jitterMs > 0) ms += this.random.range(-c.jitterMs, c.jitterMs);
    if (ms < 0) ms = 0;
    if (this.roll(c.reorder)) ms += c.reorderDelayMs;
    return ms;
  }
}
