// Each client's frames: when the next may go (the update rate the client asked for, its rate in
// bytes per second, choke) and what it holds (header, the owner's player state, the effect
// events within hearing, the delta snapshot), written by the one serialize function of frames.ts.

import { RateController, type RateControllerConfig } from '../net/rate-control.ts';
import { MAX_PACKET_BYTES } from '../net/transport.ts';
import { BitStream } from '../protocol/bitstream.ts';
import {
  copyWireEvent,
  createServerFrame,
  createWireEvent,
  type EventTable,
  MAX_EVENTS_PER_FRAME,
  type ServerFrame,
  type ServerFrameCodec,
  serializeFrameTick,
  serializeServerFrame,
  serializeWireEvent,
  type WireEvent,
} from '../protocol/frames.ts';
import type { PlayerStateHistory } from '../protocol/player-state.ts';
import type { GameDefinition } from '../sim/game.ts';
import { vec3 } from '../sim/math.ts';
import type { EventLog } from './events.ts';
import type { SnapshotWriter } from './snapshot-writer.ts';

/** A frame is never cut below this many bytes to fit the rate: slower links get fewer frames. */
export const MIN_FRAME_BYTES = 300;
/**
 * Packet pairs (src/net/packet-pair.ts): the first this many frames of a connection go each right
 * after a keepalive (three quarters of a second at 32 a second: the rate control's first verdict
 * needs 14 gaps of one sign, and pairs get lost), then one frame each PAIR_INTERVAL_MS (ms) while
 * the pairs show a bottleneck or lean to one (so the rate follows it when it changes), or each
 * PAIR_IDLE_INTERVAL_MS while they show none (a link that became slow).
 */
export const PAIR_FIRST_FRAMES = 24;
export const PAIR_INTERVAL_MS = 1000;
export const PAIR_IDLE_INTERVAL_MS = 10_000;

/**
 * Room for one event's encoding in FrameWriter's cache: 256 bits. The longest an event can take is
 * 172 (a 20-bit type code, a 3-byte source, four 32-bit parameters; 152 in the plain layout).
 */
const EVENT_CODE_BYTES = 32;

/**
 * The paper's footnote 7: after each packet the server works out when the next may go, from the
 * update rate the client asked for and its rate in bytes per second, so spacing varies. A frame
 * due by the update rate but held back by the rate is counted as choke.
 *
 * With a rate controller (src/net/rate-control.ts) the rate used is the lower of the configured
 * one and what the controller found the link carries without a queue. While the controller's is
 * the lower, each frame gets rate / update rate bytes (at least MIN_FRAME_BYTES): on a slow link
 * snapshots shrink first
 * (the snapshot writer sends the highest priority entities and defers the rest), and below
 * MIN_FRAME_BYTES frames go further apart (choke), instead of a queue growing on the link.
 * The server may also hold a due frame a tick to spread the clients' frames over the ticks
 * (`holdForSpread`, ServerConfig.spreadFrames); that is not choke. Frames go on the server's
 * ticks, so one may go a tick late; once the rate has carried two frames in a row within an
 * update interval each, the next is due no sooner than its rate lets it go, so going late is not
 * counted as choke then.
 */
export class FramePacing {
  /**
   * Snapshots per second and bytes per second this client gets. Set in the constructor; these and
   * nextUpdateMs are declared with a fraction so each is laid out as a double from the start (a
   * field declared bare starts as undefined, and V8 then boxes every fraction stored in it anew).
   */
  updateRate = 0.5;
  rateBytesPerSecond = 0.5;
  /** What the link carries without a queue (null: the configured rate is trusted as it is). */
  readonly control: RateController | null;
  /** Frames sent, and frames held back by the rate (choke). */
  framesSent = 0;
  choked = 0;
  /** Frames due by the update rate but held back by the rate since the last frame sent. */
  chokedSinceSent = 0;
  private nextUpdateMs = 0.5;
  private rateFreeMs = 0;
  /** When the last frame went (-Infinity: none yet). */
  private lastSentMs = Number.NEGATIVE_INFINITY;
  /** The rate let the last frame go within an update interval (its bytes at the rate). */
  private lastCarried = false;
  /** When the last packet pair was sent. */
  private lastPairMs = Number.NEGATIVE_INFINITY;

  constructor(
    updateRate: number,
    rateBytesPerSecond: number,
    nowMs: number,
    control: Partial<RateControllerConfig> | null = null,
  ) {
    this.updateRate = updateRate;
    this.rateBytesPerSecond = rateBytesPerSecond;
    this.nextUpdateMs = nowMs;
    this.control =
      control === null ? null : new RateController({ ...control, maxBytesPerSecond: rateBytesPerSecond });
  }

  /** The rate frames are paced at now: the configured one, or less if the link carries less. */
  get effectiveRate(): number {
    const c = this.control;
    return c === null ? this.rateBytesPerSecond : Math.min(this.rateBytesPerSecond, c.rateBytesPerSecond);
  }

  /**
   * Bytes the next frame may take (its whole packet): unbounded without rate control, or while
   * the configured rate is what binds (frames then go further apart as they grow: footnote 7).
   */
  get frameBudgetBytes(): number {
    const c = this.control;
    if (c === null || c.rateBytesPerSecond >= this.rateBytesPerSecond) return Number.POSITIVE_INFINITY;
    return Math.max(MIN_FRAME_BYTES, this.effectiveRate / this.updateRate);
  }

  /** A packet of `bytes` sent at `sentMs` was acknowledged `rttMs` later. */
  onAck(sentMs: number, rttMs: number, bytes: number): void {
    this.control?.onAck(sentMs + rttMs, rttMs, bytes);
  }

  /**
   * Whether the frame going now should be the second of a packet pair (a keepalive sent right
   * before it: src/net/packet-pair.ts): the first PAIR_FIRST_FRAMES frames, then one each
   * PAIR_INTERVAL_MS or PAIR_IDLE_INTERVAL_MS, with a rate controller only. Call pairSent when
   * it is.
   */
  wantsPair(nowMs: number): boolean {
    const c = this.control;
    if (c === null || !c.config.packetPairs) return false;
    if (this.framesSent < PAIR_FIRST_FRAMES) return true;
    return nowMs - this.lastPairMs >= (c.pairsLeaning ? PAIR_INTERVAL_MS : PAIR_IDLE_INTERVAL_MS);
  }

  /** The frame going now is a pair's second packet. */
  pairSent(nowMs: number): void {
    this.lastPairMs = nowMs;
    this.control?.pairsStarted(nowMs);
  }

  /** The client reported the pair ending with a frame of `bytes`: its packets arrived `gapMs` apart. */
  onPair(gapMs: number, bytes: number): void {
    this.control?.onPair(gapMs, bytes);
  }

  /** Lets the controller decide at `nowMs` with the share of packets lost `loss`. */
  update(nowMs: number, loss: number): void {
    this.control?.update(nowMs, loss);
  }

  /**
   * Whether a frame may go at `nowMs`; counts choke when the update rate wants one the rate holds
   * back: each update slot that came while it held one since the last frame went counts once, the
   * slot the next frame then serves included (as a frame held a single tick counts one). A frame
   * held three intervals counts three, not one: the frame header's `choked` covers the gap, and
   * the client takes only what is left of a gap in server ticks as frames lost.
   */
  due(nowMs: number): boolean {
    if (nowMs < this.nextUpdateMs) return false;
    if (nowMs >= this.rateFreeMs) return true;
    // The update slots since the last frame went (those before it were counted for that frame):
    // the schedule's, nextUpdateMs and an interval apart, which may lag behind the last frame
    // when the rate held it.
    const intervalMs = 1000 / this.updateRate;
    let first = this.nextUpdateMs;
    if (first <= this.lastSentMs)
      first += (Math.floor((this.lastSentMs - first) / intervalMs) + 1) * intervalMs;
    const held = nowMs >= first ? Math.floor((nowMs - first) / intervalMs) + 1 : 0;
    if (held > this.chokedSinceSent) {
      this.choked += held - this.chokedSinceSent;
      this.chokedSinceSent = held;
    }
    return false;
  }

  /**
   * The frame due now waits `delayMs` (the server spreads frames over ticks): the schedule moves
   * by that much, so this client's later frames keep the new phase.
   */
  holdForSpread(delayMs: number): void {
    this.nextUpdateMs += delayMs;
  }

  /** A frame of `bytes` went at `nowMs`: schedules the next by update rate and by rate. */
  sent(nowMs: number, bytes: number): void {
    const intervalMs = 1000 / this.updateRate;
    const rateWaitMs = (bytes * 1000) / this.effectiveRate;
    this.framesSent++;
    this.chokedSinceSent = 0;
    this.lastSentMs = nowMs;
    // Once the rate has let two frames in a row go within an update interval each, it is not what
    // holds the next back: if this one went late (a tick after its time, or after one the rate
    // held), the next is due when this one's rate wait ends, not sooner. It goes on the same tick
    // as it would have; due on the old schedule, it was counted as choke, and so was every later
    // frame (each went a tick late and the next was due before its rate wait ran out), though the
    // rate carried all of them. After a frame the rate held (a slow link's), the old schedule
    // stands, so a smaller frame may still catch up a tick.
    const carried = rateWaitMs < intervalMs;
    const carriedTwice = carried && this.lastCarried;
    this.lastCarried = carried;
    if (carriedTwice) {
      this.nextUpdateMs = Math.max(this.nextUpdateMs + intervalMs, nowMs + rateWaitMs);
    } else {
      this.nextUpdateMs = Math.max(this.nextUpdateMs + intervalMs, nowMs);
    }
    this.rateFreeMs = nowMs + rateWaitMs;
  }
}

/** Bits of the frames written to one client, by part (the snapshot's are in its writer's stats). */
export interface FrameBits {
  frames: number;
  /** Tick and choke. */
  header: number;
  /** The player part: baseline, acked command, the owner's state. */
  player: number;
  /** Event count and events. */
  events: number;
}

export function createFrameBits(): FrameBits {
  return { frames: 0, header: 0, player: 0, events: 0 };
}

/** What the frame writer needs of one client. */
export interface FrameClient<P> {
  readonly slot: number;
  readonly state: P;
  readonly entity: number;
  readonly snapshots: SnapshotWriter;
  /** The player states its frames carried (baselines of the player part). */
  readonly players: PlayerStateHistory<P>;
  readonly pacing: FramePacing;
  /** The newest command the server ran for this client. */
  readonly lastCommand: number;
  /** Position in the server's event log of the next event to send. */
  eventCursor: number;
  /** Effect events within hearing that did not fit the frame's event budget (not resent). */
  eventsDropped: number;
  /** Events the log overwrote before this client's next frame could look at them. */
  eventsMissed: number;
  /** Bits of its frames by part. */
  readonly frameBits: FrameBits;
}

export interface FrameWriterConfig {
  /** Effect events reach only clients within this distance of the player who caused them. */
  eventRadius: number;
  /** Share of a frame's room (after the player state) that effect events may take. */
  eventBudgetShare: number;
}

/** Writes clients' frames; one per server, shared by every client. */
export class FrameWriter<P, W> {
  private readonly game: GameDefinition<P, W>;
  private readonly log: EventLog;
  private readonly clients: readonly (FrameClient<P> | null)[];
  private readonly config: FrameWriterConfig;
  private readonly frame: ServerFrame<P>;
  private readonly codec: ServerFrameCodec<P>;
  private readonly measure: BitStream;
  private readonly viewer = vec3();
  /** The frame's player part, written once per frame (and whether that succeeded). */
  private readonly playerPart = new BitStream(MAX_PACKET_BYTES);
  private playerPartOk = false;
  private readonly sourceOrigin = vec3();
  private current: FrameClient<P> | null = null;
  /** Where in the packet (bits) the frame being written must end. */
  private endBits = 0;
  /**
   * Each logged event's size on the wire and its bits (at `eventCode[slot * EVENT_CODE_BYTES]`),
   * encoded once for every client (by log position); frames copy the bits. A negative size: the
   * event failed to encode (a type the table has no spec for), so frames write it field by field
   * and fail as they did before the cache.
   */
  private readonly eventBits: Int32Array;
  private readonly eventBitsOf: Float64Array;
  private readonly eventCode: Uint8Array;
  private readonly eventStream = new BitStream(EVENT_CODE_BYTES);
  private readonly eventScratch = createWireEvent();
  /** The log slot of each event the frame being written carries. */
  private readonly frameEventSlot = new Int32Array(MAX_EVENTS_PER_FRAME);
  /**
   * Where each logged event's source player stands, four numbers per log slot: x, y, z and the
   * client slot whose own prediction the event was (-1: nobody's). x is NaN when the source is no
   * connected player (the world's, or one who left): heard everywhere, since every distance
   * computed from it compares false. Looked up once per tick, for the log positions
   * [locatedFrom, locatedTo) at tick `locatedTick`, for every client's frame.
   */
  private readonly eventWhere: Float64Array;
  private locatedTick = -1;
  private locatedFrom = 0;
  private locatedTo = 0;
  private tick = -1;

  constructor(
    game: GameDefinition<P, W>,
    log: EventLog,
    clients: readonly (FrameClient<P> | null)[],
    config: FrameWriterConfig,
    measure: BitStream,
  ) {
    this.game = game;
    this.log = log;
    this.eventBits = new Int32Array(log.capacity);
    this.eventBitsOf = new Float64Array(log.capacity).fill(-1);
    this.eventCode = new Uint8Array(log.capacity * EVENT_CODE_BYTES);
    this.eventWhere = new Float64Array(log.capacity * 4);
    this.clients = clients;
    this.config = config;
    this.measure = measure;
    this.frame = createServerFrame(game.player.create());
    this.codec = {
      players: null as unknown as PlayerStateHistory<P>,
      events: game.events ?? null,
      serializeSnapshot: (s, tick, hint) => this.writeSnapshot(s, tick, hint),
      writeEvent: (s, index) => this.writeEvent(s, index),
      writePlayer: (s, f) => this.writePlayer(s, f),
    };
  }

  /** Writes `client`'s frame of server tick `tick` into `s`. */
  write(client: FrameClient<P>, tick: number, s: BitStream): void {
    const f = this.frame;
    this.tick = tick;
    f.serverTick = tick;
    f.ackedCommand = client.lastCommand;
    f.choked = Math.min(client.pacing.chokedSinceSent, 255);
    f.player = client.state;
    // The player part goes against the newest frame the client acknowledged, as the snapshot does.
    f.playerBaseline = client.snapshots.baselineTick;
    f.tickReference = client.snapshots.baselineTick;
    client.players.record(tick, client.state, client.lastCommand);
    this.codec.players = client.players;
    const m = this.measure;
    m.beginMeasure();
    serializeFrameTick(m, f, this.codec);
    const tickBits = m.bitsProcessed;
    // The player part is written once here, to learn its size, and its bits copied into the frame.
    const part = this.playerPart.beginWrite();
    this.playerPartOk = client.players.serialize(part, f) && part.ok;
    const playerBits = part.bitsProcessed;
    const headBits = tickBits + playerBits;
    // The frame's whole packet stays within the pacing's budget (what the link carries).
    this.endBits = Math.min(s.bitsProcessed + s.bitsRemaining, client.pacing.frameBudgetBytes * 8);
    const room = this.endBits - s.bitsProcessed;
    // Tick, choke and player part come first; events may take their share of what is left.
    this.pickEvents(client, (room - headBits) * this.config.eventBudgetShare);
    this.current = client;
    const start = s.bitsProcessed;
    const snapshotsBefore = client.snapshots.stats.totalBits;
    serializeServerFrame(s, f, this.codec);
    this.current = null;
    const bits = client.frameBits;
    bits.frames++;
    bits.header += headBits - playerBits;
    bits.player += playerBits;
    bits.events += s.bitsProcessed - start - headBits - (client.snapshots.stats.totalBits - snapshotsBefore);
  }

  /** codec.writePlayer: the player part written in `write`, copied (written again if that failed). */
  private writePlayer(s: BitStream, f: ServerFrame<P>): boolean {
    if (!this.playerPartOk) return this.codec.players.serialize(s, f);
    const part = this.playerPart;
    return s.copyBits(part.buffer, 0, part.bitsProcessed);
  }

  private writeSnapshot(s: BitStream, tick: number, hint: number): boolean {
    const client = this.current as FrameClient<P>;
    const v = this.game.player.origin(client.state, this.viewer);
    const budget = Math.min(s.bitsRemaining, this.endBits - s.bitsProcessed);
    const snapshots = client.snapshots;
    const viewer = snapshots.viewer;
    viewer[0] = v.x;
    viewer[1] = v.y;
    viewer[2] = v.z;
    snapshots.writeForViewer(s, tick, budget, client.entity, hint);
    return s.ok;
  }

  /**
   * Copies into the frame the effect events this client has not been sent: only those of players
   * within eventRadius (and the world's), never its own predicted ones, within the event budget.
   * Events past the budget are dropped and counted: effects are not worth a late delivery.
   */
  private pickEvents(client: FrameClient<P>, budgetBits: number): void {
    const log = this.log;
    const f = this.frame;
    if (client.eventCursor < log.tail) {
      client.eventsMissed += log.tail - client.eventCursor;
      client.eventCursor = log.tail;
    }
    const table = this.game.events ?? null;
    const here = this.game.player.origin(client.state, this.viewer);
    const r2 = this.config.eventRadius * this.config.eventRadius;
    const hx = here.x;
    const hy = here.y;
    const hz = here.z;
    const mask = log.capacity - 1;
    const me = client.slot;
    const head = log.head;
    this.locate(client.eventCursor, head);
    const where = this.eventWhere;
    const bitsOf = this.eventBitsOf;
    const eventBits = this.eventBits;
    const frameSlots = this.frameEventSlot;
    let used = 0;
    let count = 0;
    for (let p = client.eventCursor; p < head; p++) {
      // Heard: not the client's own predicted event, and the world's or a player's within the radius.
      const slot = p & mask;
      const w = slot * 4;
      if (where[w + 3] === me) continue;
      const dx = where[w] - hx;
      const dy = where[w + 1] - hy;
      const dz = where[w + 2] - hz;
      if (dx * dx + dy * dy + dz * dz > r2) continue;
      if (bitsOf[slot] !== p) this.encodeEvent(log.at(p), slot, p, table);
      const bits = eventBits[slot];
      const size = bits < 0 ? -bits : bits;
      if (count < MAX_EVENTS_PER_FRAME && used + size <= budgetBits) {
        frameSlots[count] = slot;
        // writeEvent copies the encoded bits; only an event that failed to encode is written
        // from the frame (and fails again, as it would have).
        if (bits < 0) copyWireEvent(f.events[count], log.at(p));
        count++;
        used += size;
      } else {
        client.eventsDropped++;
      }
    }
    f.eventCount = count;
    client.eventCursor = log.head;
  }

  /**
   * Encodes logged event `e` (at log position `p`, in `slot`) once for every frame: its bits into
   * `eventCode`, its size into `eventBits` (negated, measured only, when it fails to encode). The
   * log's event is left as it was (writing quantizes the copy).
   */
  private encodeEvent(e: WireEvent, slot: number, p: number, table: EventTable | null): void {
    const es = this.eventStream;
    copyWireEvent(this.eventScratch, e);
    es.beginWrite();
    serializeWireEvent(es, this.eventScratch, table);
    this.eventBitsOf[slot] = p;
    if (es.ok) {
      const code = this.eventCode;
      const from = es.buffer;
      const at = slot * EVENT_CODE_BYTES;
      for (let i = 0; i < EVENT_CODE_BYTES; i++) code[at + i] = from[i];
      this.eventBits[slot] = es.bitsProcessed;
      return;
    }
    const m = this.measure;
    m.beginMeasure();
    serializeWireEvent(m, e, table);
    this.eventBits[slot] = -m.bitsProcessed;
  }

  /** codec.writeEvent: the frame's event `index`, copied from its encoding. */
  private writeEvent(s: BitStream, index: number): boolean {
    const slot = this.frameEventSlot[index];
    const bits = this.eventBits[slot];
    if (bits >= 0) return s.copyBits(this.eventCode, slot * EVENT_CODE_BYTES * 8, bits);
    return serializeWireEvent(s, this.frame.events[index], this.game.events ?? null);
  }

  /**
   * Makes sure the log positions [from, to) are located at this tick (eventWhere): who logged
   * each and where its source player stands. The frames of a tick ask for nearly the same
   * positions (each client's from its cursor to the log's head), so the located range only grows
   * within a tick, and each event is located once per tick.
   */
  private locate(from: number, to: number): void {
    if (this.locatedTick !== this.tick || to < this.locatedFrom || from > this.locatedTo) {
      this.locatedTick = this.tick;
      this.locatedFrom = from;
      this.locatedTo = from;
    }
    for (let p = from; p < this.locatedFrom; p++) this.locateEvent(p);
    if (from < this.locatedFrom) this.locatedFrom = from;
    for (let p = this.locatedTo; p < to; p++) this.locateEvent(p);
    if (to > this.locatedTo) this.locatedTo = to;
  }

  /** Notes in eventWhere who logged the event at log `position` and where its source player stands. */
  private locateEvent(position: number): void {
    const log = this.log;
    const w = (position & (log.capacity - 1)) * 4;
    const where = this.eventWhere;
    where[w + 3] = log.ownerOf(position);
    const source = log.at(position).source;
    const from = source < this.clients.length ? this.clients[source] : null;
    if (from === null || from === undefined) {
      where[w] = Number.NaN;
      return;
    }
    const o = this.game.player.origin(from.state, this.sourceOrigin);
    where[w] = o.x;
    where[w + 1] = o.y;
    where[w + 2] = o.z;
  }
}
