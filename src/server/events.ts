// The server's log of effect events: what shared code emitted this tick, kept in a ring so each
// client's next frame can carry the events it has not been sent yet (never its own predicted ones).

import { createWireEvent, type WireEvent } from '../protocol/frames.ts';
import type { GameEventSink } from '../sim/game.ts';

/** Events a log holds by default, and at least (a power of two). */
export const EVENT_LOG_SIZE = 1024;
/** Log room per player slot: a client sent a frame every few ticks sees every event since its last. */
const EVENTS_PER_PLAYER = 16;

/**
 * The log size for a server of `maxClients` players: EVENT_LOG_SIZE, doubled until it holds
 * EVENTS_PER_PLAYER per player (8,192 at 512 players, whose shots emit a few hundred events a tick).
 */
export function eventLogSize(maxClients: number): number {
  let n = EVENT_LOG_SIZE;
  while (n < maxClients * EVENTS_PER_PLAYER && n < 1 << 20) n *= 2;
  return n;
}

export class EventLog implements GameEventSink {
  /** Events the log holds: the newest `capacity` are kept. */
  readonly capacity: number;
  /** The slot (or entity) credited with events emitted from now on. */
  source = 0;
  /** Whether events emitted from now on were predicted by their source's client. */
  predictedBySource = false;
  /** Total events ever emitted: the position one past the newest. */
  head = 0;
  private readonly events: WireEvent[] = [];
  private readonly predicted: Uint8Array;
  private readonly mask: number;

  /** `capacity`: a power of two (default EVENT_LOG_SIZE). */
  constructor(capacity = EVENT_LOG_SIZE) {
    if (
      !Number.isInteger(capacity) ||
      capacity < 1 ||
      capacity > 1 << 20 ||
      (capacity & (capacity - 1)) !== 0
    ) {
      throw new RangeError(`EventLog: capacity must be a power of two in 1..2^20, got ${capacity}`);
    }
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.predicted = new Uint8Array(capacity);
    for (let i = 0; i < capacity; i++) this.events.push(createWireEvent());
  }

  emit(type: number, p0: number, p1: number, p2: number, p3: number): void {
    const i = this.head & this.mask;
    const e = this.events[i];
    e.type = type;
    e.source = this.source;
    e.p0 = p0;
    e.p1 = p1;
    e.p2 = p2;
    e.p3 = p3;
    this.predicted[i] = this.predictedBySource ? 1 : 0;
    this.head++;
  }

  /** The oldest position still held. */
  get tail(): number {
    return this.head > this.capacity ? this.head - this.capacity : 0;
  }

  /** The event at log position `position` (between tail and head). */
  at(position: number): WireEvent {
    return this.events[position & this.mask];
  }

  /** The slot that predicted the event at `position` itself (it goes to everyone else), or -1. */
  ownerOf(position: number): number {
    const i = position & this.mask;
    return this.predicted[i] === 1 ? this.events[i].source : -1;
  }
}

/**
 * Collects the events one command emits (to judge a shot), optionally passing each on to the
 * log as well. Holds at most `capacity` events; the rest are counted in `overflow`.
 */
export class EventCapture implements GameEventSink {
  count = 0;
  overflow = 0;
  /** Where events also go (the server's log for the run that counts); null for none. */
  forward: GameEventSink | null = null;
  readonly type: Int32Array;
  readonly p0: Float64Array;
  readonly p1: Float64Array;
  readonly p2: Float64Array;
  readonly p3: Float64Array;

  constructor(capacity = 256) {
    this.type = new Int32Array(capacity);
    this.p0 = new Float64Array(capacity);
    this.p1 = new Float64Array(capacity);
    this.p2 = new Float64Array(capacity);
    this.p3 = new Float64Array(capacity);
  }

  /** Parameter `k` (0..3: a NamedEventSpec's `index.name`) of captured event `i`. */
  param(i: number, k: number): number {
    return (k === 0 ? this.p0 : k === 1 ? this.p1 : k === 2 ? this.p2 : this.p3)[i];
  }

  reset(forward: GameEventSink | null): void {
    this.count = 0;
    this.overflow = 0;
    this.forward = forward;
  }

  emit(type: number, p0: number, p1: number, p2: number, p3: number): void {
    this.forward?.emit(type, p0, p1, p2, p3);
    const i = this.count;
    if (i === this.type.length) {
      this.overflow++;
      return;
    }
    this.type[i] = type;
    this.p0[i] = p0;
    this.p1[i] = p1;
    this.p2[i] = p2;
    this.p3[i] = p3;
    this.count = i + 1;
  }
}
