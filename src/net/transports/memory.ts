// The in-process transport: datagram endpoints on a simulated network, with the network conditioner between them.
//
// Time. Each endpoint has a clock that only moves forward: the latest of the times given to its
// poll() or setTime(), and of the network's setTime(). A send() is stamped with the sender's
// clock, so the engine's usual "poll(now), then send during the same update" stamps sends with
// `now`; a harness can instead call network.setTime(now) once per step. A time earlier than the
// clock is taken as the clock (time never goes backwards).
//
// Conditioning. An endpoint created with a profile runs one LinkConditioner for what it sends
// (the profile's "up") and one for what it receives ("down"). A datagram between two such
// endpoints crosses both in series: the sender's up link at send time, then the receiver's down
// link at the time it reaches it, decided in arrival order when the receiver polls.
//
// Delivery. Each endpoint keeps its in-flight datagrams in a binary min-heap by delivery time
// (ties in submission order); poll(now) hands out, in that order, every one due by `now`.
// Datagrams live in pooled MAX_PACKET_BYTES buffers shared by the whole network, so a send
// copies the bytes and allocates nothing once the pool has grown to the traffic (apart from the
// subarray view handed to the packet handler).

import { MinHeap } from '../../sim/heap.ts';
import { Random } from '../../sim/random.ts';
import { LinkConditioner, type LinkStats } from '../conditioner.ts';
import type { NetworkProfile } from '../profile.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../transport.ts';

export interface MemoryNetworkOptions {
  /** Seed of every link's random sequence (each endpoint draws its own from it, in creation order). */
  seed: number;
}

/** Counters of one memory endpoint; bytes are payload bytes. */
export interface MemoryEndpointStats {
  /** Datagrams accepted by send() (within MAX_PACKET_BYTES, endpoint open), whatever became of them. */
  packetsSent: number;
  bytesSent: number;
  /** Datagrams handed to poll()'s handler. */
  packetsReceived: number;
  bytesReceived: number;
  /** Sends over MAX_PACKET_BYTES, dropped. */
  droppedOversize: number;
  /** Sends to an address with no open endpoint, dropped. */
  droppedNoRoute: number;
  /** The conditioner of what this endpoint sends, when it has a profile. */
  readonly up: LinkStats | null;
  /** The conditioner of what this endpoint receives, when it has a profile. */
  readonly down: LinkStats | null;
}

/** One datagram in flight, in a pooled buffer. */
class InFlight {
  readonly bytes = new Uint8Array(MAX_PACKET_BYTES);
  length = 0;
  from = '';
  deliverAtMs = 0;
  order = 0;
  /** True while it still has to cross the receiver's down link. */
  crossDown = false;
}

function before(a: InFlight, b: InFlight): boolean {
  return a.deliverAtMs < b.deliverAtMs || (a.deliverAtMs === b.deliverAtMs && a.order < b.order);
}

/** What a datagram can be sent to: an endpoint, or a relay to another part of the network. */
interface Receiver {
  arrive(from: string, data: Uint8Array, atMs: number): void;
}

/**
 * An address whose datagrams go to `onArrive` (from, bytes valid only during the call, the time
 * they reach it) instead of an endpoint: for a network split between threads, where the endpoint
 * at that address lives in another thread's network (see `MemoryEndpoint.deliver`).
 */
class MemoryRelay implements Receiver {
  constructor(private readonly onArrive: (from: string, data: Uint8Array, atMs: number) => void) {}

  arrive(from: string, data: Uint8Array, atMs: number): void {
    this.onArrive(from, data, atMs);
  }
}

/** State shared by a network and its endpoints. */
class Fabric {
  readonly endpoints = new Map<string, Receiver>();
  readonly seeds: Random;
  private readonly pool: InFlight[] = [];
  nextOrder = 0;
  timeMs = 0;

  constructor(seed: number) {
    this.seeds = new Random(seed);
  }

  acquire(): InFlight {
    return this.pool.pop() ?? new InFlight();
  }

  readonly release = (item: InFlight): void => {
    this.pool.push(item);
  };
}

function checkTime(nowMs: number, where: string): void {
  if (!Number.isFinite(nowMs)) throw new Error(`${where}: nowMs must be a finite number, got ${nowMs}`);
}

/** A simulated datagram network: a set of endpoints that address each other by string. */
export class MemoryNetwork {
  private readonly fabric: Fabric;
  private nextAddress = 1;

  constructor(options: MemoryNetworkOptions) {
    if (!Number.isInteger(options.seed))
      throw new Error(`MemoryNetwork: seed must be an integer, got ${options.seed}`);
    this.fabric = new Fabric(options.seed);
  }

  /** The network's clock, ms: the latest time given to setTime (0 at the start). */
  get nowMs(): number {
    return this.fabric.timeMs;
  }

  /** Moves every endpoint's clock to at least `nowMs` (never backwards). Throws on a non-finite time. */
  setTime(nowMs: number): void {
    checkTime(nowMs, 'MemoryNetwork.setTime');
    if (nowMs > this.fabric.timeMs) this.fabric.timeMs = nowMs;
  }

  /**
   * Opens an endpoint at `address` (default: the first free "mem:N"), conditioned by `profile`
   * when given (its "up" for what the endpoint sends, "down" for what it receives). Its links'
   * seeds are drawn from the network's seed in creation order, or given in `seeds`. Throws if the
   * address is empty or already open.
   */
  createEndpoint(
    address?: string,
    profile?: NetworkProfile,
    seeds?: { readonly up: number; readonly down: number },
  ): MemoryEndpoint {
    const endpoint = new MemoryEndpoint(
      this.fabric,
      this.claim(address, 'createEndpoint'),
      profile ?? null,
      seeds?.up ?? this.fabric.seeds.nextU32(),
      seeds?.down ?? this.fabric.seeds.nextU32(),
    );
    this.fabric.endpoints.set(endpoint.address, endpoint);
    return endpoint;
  }

  /**
   * Opens a relay at `address`: datagrams sent to it are handed to `onArrive` with the time they
   * reach it (their bytes valid only during the call), for a network split between threads, where
   * the other side gives them to its endpoint with `MemoryEndpoint.deliver`. Throws if the
   * address is empty or already open.
   */
  createRelay(address: string, onArrive: (from: string, data: Uint8Array, atMs: number) => void): void {
    this.fabric.endpoints.set(this.claim(address, 'createRelay'), new MemoryRelay(onArrive));
  }

  /** `address`, checked free (or the first free "mem:N" when undefined). */
  private claim(address: string | undefined, where: string): string {
    const endpoints = this.fabric.endpoints;
    let chosen = address;
    if (chosen === undefined) {
      do chosen = `mem:${this.nextAddress++}`;
      while (endpoints.has(chosen));
    } else if (typeof chosen !== 'string' || chosen.length === 0) {
      throw new Error(`MemoryNetwork.${where}: address must be a non-empty string, got ${String(chosen)}`);
    } else if (endpoints.has(chosen)) {
      throw new Error(`MemoryNetwork.${where}: address ${JSON.stringify(chosen)} is already in use`);
    }
    return chosen;
  }

  /** The live counters of the open endpoint at `address`, or undefined. */
  stats(address: string): MemoryEndpointStats | undefined {
    const endpoint = this.fabric.endpoints.get(address);
    return endpoint instanceof MemoryEndpoint ? endpoint.stats : undefined;
  }
}

/** One endpoint of a MemoryNetwork; create it with network.createEndpoint(). */
export class MemoryEndpoint implements DatagramEndpoint {
  readonly address: string;
  readonly profile: NetworkProfile | null;
  readonly stats: MemoryEndpointStats;
  private readonly fabric: Fabric;
  private readonly upLink: LinkConditioner | null;
  private readonly downLink: LinkConditioner | null;
  private readonly queue = new MinHeap<InFlight>(before);
  private timeMs = 0;
  private open = true;

  /** @internal Use MemoryNetwork.createEndpoint. */
  constructor(
    fabric: Fabric,
    address: string,
    profile: NetworkProfile | null,
    upSeed: number,
    downSeed: number,
  ) {
    this.fabric = fabric;
    this.address = address;
    this.profile = profile;
    this.upLink = profile ? new LinkConditioner({ seed: upSeed, profile, direction: 'up' }) : null;
    this.downLink = profile ? new LinkConditioner({ seed: downSeed, profile, direction: 'down' }) : null;
    this.stats = {
      packetsSent: 0,
      bytesSent: 0,
      packetsReceived: 0,
      bytesReceived: 0,
      droppedOversize: 0,
      droppedNoRoute: 0,
      up: this.upLink?.stats ?? null,
      down: this.downLink?.stats ?? null,
    };
  }

  /** This endpoint's clock, ms (see the top of this file). */
  get nowMs(): number {
    return Math.max(this.timeMs, this.fabric.timeMs);
  }

  /** Datagrams in flight to this endpoint. */
  get pending(): number {
    return this.queue.size;
  }

  /**
   * Time of the earliest datagram in flight to this endpoint, ms, or Infinity: when a harness
   * should poll next. It may be the time a datagram reaches this endpoint's down link rather than
   * its delivery, so a poll at that time may deliver nothing.
   */
  get nextEventMs(): number {
    return this.queue.size > 0 ? (this.queue.peek() as InFlight).deliverAtMs : Number.POSITIVE_INFINITY;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /** Moves this endpoint's clock to at least `nowMs`. Throws on a non-finite time. */
  setTime(nowMs: number): void {
    checkTime(nowMs, 'MemoryEndpoint.setTime');
    if (nowMs > this.timeMs) this.timeMs = nowMs;
  }

  /**
   * Copies `data` and sends it to `to` at this endpoint's clock. Never throws for network
   * reasons: over MAX_PACKET_BYTES or to an address with no open endpoint it is dropped and
   * counted; after close() it is ignored.
   */
  send(to: string, data: Uint8Array): void {
    if (!this.open) return;
    const length = data.length;
    if (length > MAX_PACKET_BYTES) {
      this.stats.droppedOversize++;
      return;
    }
    this.stats.packetsSent++;
    this.stats.bytesSent += length;
    const target = this.fabric.endpoints.get(to);
    if (target === undefined) {
      this.stats.droppedNoRoute++;
      return;
    }
    const nowMs = this.nowMs;
    if (this.upLink === null) {
      target.arrive(this.address, data, nowMs);
      return;
    }
    const verdict = this.upLink.submit(nowMs, length);
    const copies = verdict.copies;
    const secondMs = verdict.secondMs;
    if (copies >= 1) target.arrive(this.address, data, verdict.firstMs);
    if (copies === 2) target.arrive(this.address, data, secondMs);
  }

  /**
   * Advances this endpoint's clock to `nowMs` and hands `onPacket` every datagram due by then, in
   * delivery-time order (ties in submission order). Datagrams due later stay queued. The data
   * passed to `onPacket` is only valid during the call. Nothing happens after close().
   */
  poll(nowMs: number, onPacket: PacketHandler): void {
    checkTime(nowMs, 'MemoryEndpoint.poll');
    if (nowMs > this.timeMs) this.timeMs = nowMs;
    const now = this.nowMs;
    const queue = this.queue;
    const fabric = this.fabric;
    while (this.open && queue.size > 0 && (queue.peek() as InFlight).deliverAtMs <= now) {
      const item = queue.pop();
      if (item.crossDown) {
        this.crossDownLink(item);
        continue;
      }
      this.stats.packetsReceived++;
      this.stats.bytesReceived += item.length;
      try {
        onPacket(item.from, item.bytes.subarray(0, item.length));
      } finally {
        fabric.release(item);
      }
    }
  }

  /** Closes the endpoint: its address is freed, datagrams in flight to it are discarded. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    if (this.fabric.endpoints.get(this.address) === this) this.fabric.endpoints.delete(this.address);
    this.queue.drain(this.fabric.release);
  }

  /**
   * Queues a copy of `data` from `from` as though it reached this endpoint at `atMs` (then it
   * crosses this endpoint's down link, if any, like any other): the far end of a relay
   * (`MemoryNetwork.createRelay`) on another thread. Ignored after close().
   */
  deliver(from: string, data: Uint8Array, atMs: number): void {
    if (!this.open) return;
    checkTime(atMs, 'MemoryEndpoint.deliver');
    this.arrive(from, data, atMs);
  }

  /**
   * Queues a copy of `data` from `from`, reaching this endpoint at `atMs` (the network's sends; see `deliver`).
   * @internal
   */
  arrive(from: string, data: Uint8Array, atMs: number): void {
    const item = this.fabric.acquire();
    item.bytes.set(data);
    item.length = data.length;
    item.from = from;
    item.deliverAtMs = atMs;
    item.order = this.fabric.nextOrder++;
    item.crossDown = this.downLink !== null;
    this.queue.push(item);
  }

  /** Runs a datagram that has reached this endpoint through its down link and requeues the survivors. */
  private crossDownLink(item: InFlight): void {
    const fabric = this.fabric;
    const verdict = this.downLink!.submit(item.deliverAtMs, item.length);
    item.crossDown = false;
    if (verdict.copies === 0) {
      fabric.release(item);
      return;
    }
    if (verdict.copies === 2) {
      const copy = fabric.acquire();
      copy.bytes.set(item.bytes);
      copy.length = item.length;
      copy.from = item.from;
      copy.deliverAtMs = verdict.secondMs;
      copy.order = fabric.nextOrder++;
      copy.crossDown = false;
      this.queue.push(copy);
    }
    item.deliverAtMs = verdict.firstMs;
    item.order = fabric.nextOrder++;
    this.queue.push(item);
  }
}
