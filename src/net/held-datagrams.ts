// Datagrams held back until a given time (a link conditioner's delivery time), each copied into a
// pooled buffer, released in time order (ties in the order they were held). The endpoints that
// put a link shape on a real socket (ShapedEndpoint, ConditionedEndpoint) hold their traffic here.

import { MinHeap } from '../sim/heap.ts';
import { MAX_PACKET_BYTES, type PacketHandler } from './transport.ts';

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

export class HeldDatagrams {
  private readonly heap = new MinHeap<Held>(earlier);
  private readonly pool: Held[] = [];
  private order = 0;

  /** Datagrams held. */
  get size(): number {
    return this.heap.size;
  }

  /** Copies `data` (at most MAX_PACKET_BYTES) to be released at `atMs`. */
  hold(address: string, data: Uint8Array, atMs: number): void {
    const h = this.pool.pop() ?? new Held();
    h.bytes.set(data);
    h.length = data.length;
    h.address = address;
    h.atMs = atMs;
    h.order = this.order++;
    this.heap.push(h);
  }

  /** Hands every datagram due by `nowMs` to `deliver`, earliest first; the bytes are valid during the call only. */
  release(nowMs: number, deliver: PacketHandler): void {
    const heap = this.heap;
    for (let h = heap.peek(); h !== undefined && h.atMs <= nowMs; h = heap.peek()) {
      heap.pop();
      deliver(h.address, h.bytes.subarray(0, h.length));
      this.pool.push(h);
    }
  }

  /** Drops everything held. */
  clear(): void {
    while (this.heap.size > 0) this.pool.push(this.heap.pop());
  }
}
