// A live network conditioner on the send side of any endpoint, per destination: what it sends to
// an address with a shape set is delayed, jittered, lost or duplicated as that shape says, in
// real time. A server shapes what it sends one client (that client's down link); a client shapes
// what it sends its server (its up link). Shapes change at any moment (a control panel).

import { Random } from '../sim/random.ts';
import { LinkConditioner } from './conditioner.ts';
import { HeldDatagrams } from './held-datagrams.ts';
import { DEFAULT_CONDITIONS, type NetworkProfile } from './profile.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from './transport.ts';

/** How one direction of one link is made worse. */
export interface LinkShape {
  /** Added one-way latency, ms. */
  latencyMs: number;
  /** Each packet's latency gets a uniform extra in [-jitterMs, +jitterMs] (never below 0 in all). */
  jitterMs: number;
  /** Probability a packet is lost, 0..1. */
  loss: number;
  /** Probability a packet is delivered twice, 0..1. */
  duplicate: number;
}

/** The range of each LinkShape field. */
export const LINK_SHAPE_LIMITS: Readonly<Record<keyof LinkShape, { min: number; max: number }>> = {
  latencyMs: { min: 0, max: 2000 },
  jitterMs: { min: 0, max: 1000 },
  loss: { min: 0, max: 1 },
  duplicate: { min: 0, max: 1 },
};

/** Null when every field of `shape` is a finite number in its range, else what is wrong. */
export function checkLinkShape(shape: LinkShape): string | null {
  for (const key of Object.keys(LINK_SHAPE_LIMITS) as (keyof LinkShape)[]) {
    const v = shape[key];
    const { min, max } = LINK_SHAPE_LIMITS[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
      return `${key} must be a number in [${min}, ${max}], got ${String(v)}`;
    }
  }
  return null;
}

/** True when `shape` changes nothing. */
export function isPerfectLink(shape: LinkShape): boolean {
  return shape.latencyMs === 0 && shape.jitterMs === 0 && shape.loss === 0 && shape.duplicate === 0;
}

interface ShapedLink {
  readonly shape: LinkShape;
  readonly conditioner: LinkConditioner;
}

/**
 * Wraps `inner`. Its clock is the latest time given to `pump` or `poll`; sends are stamped with
 * it, so pump just before a burst of sends (a client frame) and call poll or pump every few
 * milliseconds so held datagrams leave on time. Addresses without a shape pass straight through.
 */
export class ShapedEndpoint implements DatagramEndpoint {
  readonly inner: DatagramEndpoint;
  private readonly links = new Map<string, ShapedLink>();
  private readonly held = new HeldDatagrams();
  private readonly random: Random;
  private clockMs = 0;
  private readonly forward = (to: string, data: Uint8Array): void => this.inner.send(to, data);

  constructor(inner: DatagramEndpoint, seed = 1) {
    this.inner = inner;
    this.random = new Random(seed);
  }

  get address(): string {
    return this.inner.address;
  }

  /** Datagrams waiting to leave. */
  get heldCount(): number {
    return this.held.size;
  }

  /**
   * Sets how sends to `to` are shaped from now on (null or a perfect link: unshaped). Datagrams
   * already held keep their times. Throws a RangeError naming the field when a value is out of
   * range (see LINK_SHAPE_LIMITS): check hostile values with checkLinkShape first.
   */
  shape(to: string, shape: LinkShape | null): void {
    if (shape === null || isPerfectLink(shape)) {
      this.links.delete(to);
      return;
    }
    const problem = checkLinkShape(shape);
    if (problem !== null) throw new RangeError(`ShapedEndpoint.shape: ${problem}`);
    const conditions = {
      ...DEFAULT_CONDITIONS,
      latencyMs: shape.latencyMs,
      jitterMs: shape.jitterMs,
      loss: shape.loss,
      duplicate: shape.duplicate,
    };
    const profile: NetworkProfile = {
      name: 'live',
      description: 'set at run time',
      up: conditions,
      down: conditions,
      events: [],
    };
    this.links.set(to, {
      shape: { ...shape },
      conditioner: new LinkConditioner({ seed: this.random.nextU32(), profile, direction: 'down' }),
    });
  }

  /** The shape of sends to `to`, or null when unshaped. */
  shapeOf(to: string): Readonly<LinkShape> | null {
    return this.links.get(to)?.shape ?? null;
  }

  send(to: string, data: Uint8Array): void {
    const link = this.links.get(to);
    if (link === undefined || data.length > MAX_PACKET_BYTES) {
      this.inner.send(to, data);
      return;
    }
    const v = link.conditioner.submit(this.clockMs, data.length);
    if (v.copies >= 1) this.held.hold(to, data, v.firstMs);
    if (v.copies === 2) this.held.hold(to, data, v.secondMs);
    this.held.release(this.clockMs, this.forward);
  }

  /** Moves the clock to `nowMs` (never backwards) and sends every held datagram now due. */
  pump(nowMs: number): void {
    if (nowMs > this.clockMs) this.clockMs = nowMs;
    this.held.release(this.clockMs, this.forward);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.pump(nowMs);
    this.inner.poll(nowMs, onPacket);
  }

  hostOf(address: string): string | null {
    return this.inner.hostOf?.(address) ?? null;
  }

  drop(address: string): void {
    this.links.delete(address);
    this.inner.drop?.(address);
  }

  established(address: string): void {
    this.inner.established?.(address);
  }

  /** Drops what is held and closes the inner endpoint. */
  close(): void | Promise<void> {
    this.held.clear();
    this.links.clear();
    return this.inner.close();
  }
}
