// A conditioned endpoint: any datagram endpoint (a real UDP socket, say) seen through the network
// conditioner, so a profile applies to real sockets too: what it sends crosses the profile's "up"
// link, what it receives its "down" link, each held back until the conditioner's delivery time.

import { LinkConditioner } from '../net/conditioner.ts';
import type { NetworkProfile } from '../net/profile.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../net/transport.ts';
import { MinHeap } from '../sim/heap.ts';
import { Random } from '../sim/random.ts';

/** One datagram held back, in a pooled buffer. */
class Held {
  readonly bytes = new Uint8Array(MAX_PACKET_BYTES);
  length = 0;
  /** Destination (outgoing) or source (incoming). */
  address = '';
  atMs = 0;
  order = 0;
}

function earlier(a: Held, b: Held): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.order < b.order);
}

/**
 * Wraps `inner` with a profile. Its clock is the latest time given to setTime, pump or poll (ms
 * since the profile's time 0); sends are stamped with it. Call `pump(nowMs)` often (every
 * millisecond or so) so held datagrams leave and arrivals are stamped on time; `poll` pumps too.
 */
export class ConditionedEndpoint implements DatagramEndpoint {
  readonly up: LinkConditioner;
  readonly down: LinkConditioner;
  private readonly outgoing = new MinHeap<Held>(earlier);
  private readonly incoming = new MinHeap<Held>(earlier);
  private readonly pool: Held[] = [];
  private clockMs = 0;
  private order = 0;
  private readonly arrive = (from: string, data: Uint8Array): void => {
    const v = this.down.submit(this.clockMs, data.length);
    if (v.copies >= 1) this.hold(this.incoming, from, data, v.firstMs);
    if (v.copies === 2) this.hold(this.incoming, from, data, v.secondMs);
  };

  constructor(
    private readonly inner: DatagramEndpoint,
    profile: NetworkProfile,
    seed: number,
  ) {
    const seeds = new Random(seed);
    this.up = new LinkConditioner({ seed: seeds.nextU32(), profile, direction: 'up' });
    this.down = new LinkConditioner({ seed: seeds.nextU32(), profile, direction: 'down' });
  }

  get address(): string {
    return this.inner.address;
  }

  /** Moves the clock to `nowMs` (never backwards). */
  setTime(nowMs: number): void {
    if (nowMs > this.clockMs) this.clockMs = nowMs;
  }

  send(to: string, data: Uint8Array): void {
    if (data.length > MAX_PACKET_BYTES) {
      this.inner.send(to, data);
      return;
    }
    const v = this.up.submit(this.clockMs, data.length);
    if (v.copies >= 1) this.hold(this.outgoing, to, data, v.firstMs);
    if (v.copies === 2) this.hold(this.outgoing, to, data, v.secondMs);
    this.release(this.clockMs);
  }

  /** Sends every held datagram due by `nowMs`, then takes in what the inner endpoint received. */
  pump(nowMs: number): void {
    this.setTime(nowMs);
    this.release(this.clockMs);
    this.inner.poll(this.clockMs, this.arrive);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.pump(nowMs);
    const heap = this.incoming;
    for (let h = heap.peek(); h !== undefined && h.atMs <= this.clockMs; h = heap.peek()) {
      heap.pop();
      onPacket(h.address, h.bytes.subarray(0, h.length));
      this.pool.push(h);
    }
  }

  /** Closes the inner endpoint; held datagrams are dropped. */
  close(): void | Promise<void> {
    while (this.outgoing.size > 0) this.pool.push(this.outgoing.pop());
    while (this.incoming.size > 0) this.pool.push(this.incoming.pop());
    return this.inner.close();
  }

  private release(nowMs: number): void {
    const heap = this.outgoing;
    for (let h = heap.peek(); h !== undefined && h.atMs <= nowMs; h = heap.peek()) {
      heap.pop();
      this.inner.send(h.address, h.bytes.subarray(0, h.length));
      this.pool.push(h);
    }
  }

  private hold(heap: MinHeap<Held>, address: string, data: Uint8Array, atMs: number): void {
    const h = this.pool.pop() ?? new Held();
    h.bytes.set(data);
    h.length = data.length;
    h.address = address;
    h.atMs = atMs;
    h.order = this.order++;
    heap.push(h);
  }
}
