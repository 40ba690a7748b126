// Spectators (HLTV's idea, in the server): clients that joined with no player and send no
// commands watch the match a fixed delay behind, so a spectator cannot tell a player where the
// others are now (ghosting). Each offered delay is one stream, encoded once per frame for all of
// its spectators, whatever their number:
//
//   server world --(one delta per tick, like a demo)--> source ring
//     --(after the delay: decoded into the stream's own entity store)--> stream writer
//     --(one spectator frame, src/protocol/spectator.ts)--> the same bytes to every spectator
//
// A stream's frames are delta-encoded against the newest frame every one of its spectators
// acknowledged (so each can decode the one encoding); a spectator joining, or asking for a full
// update, sends the next frame against nothing for all. A spectator that has acknowledged no
// frame for staleAckMs no longer holds that baseline back: the frames go on against what the
// others acknowledged (it asks for a full update once it hears again and cannot decode).

import { SnapshotReader } from '../client/snapshot-reader.ts';
import type { ServerConnection } from '../net/server-connections.ts';
import { BitStream } from '../protocol/bitstream.ts';
import {
  copyWireEvent,
  createClientFlags,
  createWireEvent,
  MAX_EVENTS_PER_FRAME,
  serializeClientFlags,
  type WireEvent,
} from '../protocol/frames.ts';
import { type SpectatorFrame, serializeSpectatorFrame } from '../protocol/spectator.ts';
import type { GameDefinition } from '../sim/game.ts';
import { SequenceBuffer } from '../sim/ring.ts';
import { EntityStore } from './entities.ts';
import type { EventLog } from './events.ts';
import { SnapshotWriter } from './snapshot-writer.ts';

export interface SpectatorConfig {
  /** Spectators the server takes besides its players (0: none). */
  maxSpectators: number;
  /**
   * The delays offered, ms: a spectator gets the smallest at or above the delay it asked for (the
   * largest when it asked for more). Each is one stream.
   */
  delaysMs: readonly number[];
  /** Spectator frames per second. */
  updateRate: number;
  /** Room a spectator frame may take in a packet, bytes. */
  frameBytes: number;
  /**
   * A spectator whose newest acknowledged frame is this much older than the frame being sent
   * no longer holds its stream's baseline back (until it acknowledges again), so one that stops
   * acknowledging cannot make every frame bigger for the rest until it times out.
   */
  staleAckMs: number;
}

export const DEFAULT_SPECTATOR_CONFIG: SpectatorConfig = {
  maxSpectators: 0,
  delaysMs: [3000],
  updateRate: 32,
  frameBytes: 1100,
  staleAckMs: 1000,
};

export interface SpectatorStreamStats {
  readonly delayMs: number;
  spectators: number;
  /** Frames encoded (once each, for every spectator of the stream) and their bytes. */
  framesEncoded: number;
  bytesEncoded: number;
  /** Frames encoded against nothing (a spectator joined or asked for a full update). */
  keyframes: number;
  /** Packets sent to spectators (one per spectator per frame). */
  packetsSent: number;
  /** Events past a frame's 63. */
  eventsDropped: number;
  /** Spectators the newest frame left out of the baseline (acknowledging nothing for staleAckMs). */
  stale: number;
  /** Frames sent to a stale spectator, in all. */
  staleFrames: number;
}

const FLAGS = createClientFlags();

/** One world tick as the source encoded it, with its events. */
class SourceTick {
  tick = -1;
  bytes = new Uint8Array(256);
  length = 0;
  readonly events: WireEvent[] = [];
  eventCount = 0;
}

class Spectator {
  readonly connection: ServerConnection;
  readonly stream: DelayStream;
  /** The frame tick each packet carried, by packet sequence, and whether its acknowledgement counts toward the baseline. */
  readonly frameTicks = new SequenceBuffer<{ tick: number; counted: boolean }>(1024, () => ({
    tick: -1,
    counted: false,
  }));
  /** The newest frame tick it acknowledged (at joining: its first frame's, a grace; -1 before). */
  ackedTick = -1;
  /** The frame being sent counts its acknowledgement (it is not stale). */
  counted = true;
  constructor(connection: ServerConnection, stream: DelayStream) {
    this.connection = connection;
    this.stream = stream;
  }
}

/** One offered delay's stream, as SpectatorHub.streams shows it. */
export interface SpectatorStream {
  /** Its counters (`delayMs`: its delay). */
  readonly stats: SpectatorStreamStats;
}

/** One delay: its own entity store (the world that many ticks ago), writer and spectators. */
class DelayStream implements SpectatorStream {
  readonly stats: SpectatorStreamStats;
  readonly delayTicks: number;
  /** staleAckMs in ticks. */
  readonly staleTicks: number;
  readonly store: EntityStore;
  readonly reader: SnapshotReader;
  readonly writer: SnapshotWriter;
  readonly members: Spectator[] = [];
  /** The next source tick to apply. */
  cursor = -1;
  nextFrameMs = 0;
  lastResetMs = -Infinity;
  /** Frames sent: tick, spectators sent to, spectators that acknowledged. */
  readonly frameTick: Float64Array;
  readonly frameSent: Int32Array;
  readonly frameAcked: Int32Array;
  readonly frameMask: number;
  /** Frames before this tick cannot be baselines (a spectator joined after them). */
  minBaseline = 0;
  /** The tick of the last frame written (-1: none). */
  lastFrameTick = -1;
  readonly frame: SpectatorFrame;
  readonly payload: BitStream;
  payloadBytes = 0;
  readonly writeShared: (s: BitStream) => void;

  constructor(
    game: GameDefinition<unknown, unknown>,
    delayMs: number,
    tickIntervalMs: number,
    frameBytes: number,
    staleAckMs: number,
  ) {
    this.delayTicks = Math.max(0, Math.round(delayMs / tickIntervalMs));
    this.staleTicks = Math.max(1, Math.round(staleAckMs / tickIntervalMs));
    this.stats = {
      delayMs,
      spectators: 0,
      framesEncoded: 0,
      bytesEncoded: 0,
      keyframes: 0,
      packetsSent: 0,
      eventsDropped: 0,
      stale: 0,
      staleFrames: 0,
    };
    const schema = game.entities;
    this.store = new EntityStore(schema, { historyTicks: nextPow2(schema.frameHistory * 2) });
    this.reader = new SnapshotReader(schema);
    this.writer = new SnapshotWriter(this.store);
    const n = schema.frameHistory;
    this.frameTick = new Float64Array(n).fill(-1);
    this.frameSent = new Int32Array(n);
    this.frameAcked = new Int32Array(n);
    this.frameMask = n - 1;
    const events: WireEvent[] = [];
    for (let i = 0; i < MAX_EVENTS_PER_FRAME; i++) events.push(createWireEvent());
    this.frame = { serverTick: 0, liveTick: 0, eventCount: 0, events, snapshotOk: false };
    this.payload = new BitStream(frameBytes);
    const payload = this.payload;
    this.writeShared = (s) => {
      s.uint(0, (8 - (s.bitsProcessed & 7)) & 7);
      s.bytesField(payload.buffer, this.payloadBytes);
    };
  }

  /** Every spectator of the stream must be able to decode what comes next: no baseline before it. */
  reset(nowMs: number): void {
    this.writer.resetBaseline();
    this.minBaseline = this.store.lastCommitTick + 1;
    this.lastResetMs = nowMs;
  }

  acknowledged(tick: number): void {
    const i = tick & this.frameMask;
    if (this.frameTick[i] === tick) this.frameAcked[i]++;
  }

  /** The newest frame every spectator it counted acknowledged, and none joined since. */
  commonBaseline(): number {
    let best = -1;
    for (let i = 0; i <= this.frameMask; i++) {
      const t = this.frameTick[i];
      if (
        t >= this.minBaseline &&
        t > best &&
        this.frameSent[i] > 0 &&
        this.frameAcked[i] >= this.frameSent[i]
      ) {
        best = t;
      }
    }
    return best;
  }
}

/**
 * A server's spectators: every offered delay's stream and its members. The GameServer runs it
 * (config.spectators); `tick` once per server tick after the world is committed.
 */
export class SpectatorHub<P, W> {
  readonly config: SpectatorConfig;
  /** Every offered delay's stream, shortest delay first. */
  readonly streams: readonly SpectatorStream[];
  private readonly delays: readonly DelayStream[];
  private readonly game: GameDefinition<P, W>;
  private readonly source: SnapshotWriter;
  private readonly sourceStore: EntityStore;
  private readonly ring: SourceTick[];
  private readonly ringMask: number;
  private readonly scratch: BitStream;
  private readonly read = new BitStream(0);
  private readonly bySlot: (Spectator | null)[] = [];
  private readonly entryBits: number;
  private eventCursor = 0;
  private count = 0;

  constructor(
    game: GameDefinition<P, W>,
    store: EntityStore,
    events: EventLog,
    tickIntervalMs: number,
    config: Partial<SpectatorConfig> = {},
  ) {
    this.config = { ...DEFAULT_SPECTATOR_CONFIG, ...config };
    validate(this.config);
    this.game = game;
    this.sourceStore = store;
    this.source = new SnapshotWriter(store);
    const maxDelayTicks = Math.max(...this.config.delaysMs.map((d) => Math.round(d / tickIntervalMs)));
    const size = nextPow2(maxDelayTicks + 4);
    this.ring = [];
    for (let i = 0; i < size; i++) this.ring.push(new SourceTick());
    this.ringMask = size - 1;
    this.delays = [...new Set(this.config.delaysMs)]
      .sort((a, b) => a - b)
      .map(
        (d) =>
          new DelayStream(
            game as GameDefinition<unknown, unknown>,
            d,
            tickIntervalMs,
            this.config.frameBytes,
            this.config.staleAckMs,
          ),
      );
    this.streams = this.delays;
    const schema = game.entities;
    this.entryBits = 40 + schema.typeBits + Math.max(...schema.types.map((t) => t.valueBits + t.fieldCount));
    this.scratch = new BitStream(1024);
    this.eventCursor = events.head;
  }

  get spectatorCount(): number {
    return this.count;
  }

  /** Takes a spectator into the stream of its delay; returns 0, or false when full. */
  accept(connection: ServerConnection, nowMs: number): boolean {
    if (this.count >= this.config.maxSpectators) return false;
    const asked = connection.spectatorDelayMs;
    let stream = this.delays[this.delays.length - 1];
    for (const s of this.delays) {
      if (s.stats.delayMs >= asked) {
        stream = s;
        break;
      }
    }
    const spectator = new Spectator(connection, stream);
    connection.channel.onAck = (sequence) => {
      const f = spectator.frameTicks.get(sequence);
      if (f === undefined) return;
      if (f.tick > spectator.ackedTick) spectator.ackedTick = f.tick;
      // Only the spectators a frame was counted for make it a common baseline.
      if (f.counted) stream.acknowledged(f.tick);
    };
    stream.members.push(spectator);
    stream.stats.spectators++;
    stream.reset(nowMs);
    this.bySlot[connection.slot] = spectator;
    this.count++;
    return true;
  }

  isSpectator(connection: ServerConnection): boolean {
    return this.bySlot[connection.slot]?.connection === connection;
  }

  remove(connection: ServerConnection): void {
    const spectator = this.bySlot[connection.slot];
    if (spectator === null || spectator === undefined || spectator.connection !== connection) return;
    this.bySlot[connection.slot] = null;
    const members = spectator.stream.members;
    members.splice(members.indexOf(spectator), 1);
    spectator.stream.stats.spectators--;
    this.count--;
  }

  /** A spectator's packet: only its flags (a full update when it lost track). */
  payload(connection: ServerConnection, s: BitStream, nowMs: number): void {
    const spectator = this.bySlot[connection.slot];
    if (spectator === null || spectator === undefined || !serializeClientFlags(s, FLAGS)) return;
    // At most one reset a second per stream: a spectator cannot make every frame a keyframe.
    if (FLAGS.resetBaseline && nowMs - spectator.stream.lastResetMs >= 1000) spectator.stream.reset(nowMs);
  }

  /**
   * After the server committed `tick`: encodes the world's change once (the source), moves each
   * stream to its delayed tick, and sends each stream's frame, when due, to all its spectators.
   */
  tick(tick: number, events: EventLog, nowMs: number): void {
    this.encodeSource(tick, events);
    for (const stream of this.delays) {
      this.advance(stream, tick);
      if (stream.members.length === 0) continue;
      if (nowMs >= stream.nextFrameMs && stream.store.lastCommitTick > stream.lastFrameTick) {
        stream.nextFrameMs = Math.max(stream.nextFrameMs + 1000 / this.config.updateRate, nowMs);
        this.send(stream, tick, nowMs);
      } else {
        for (const m of stream.members) m.connection.channel.update(nowMs);
      }
    }
  }

  private encodeSource(tick: number, events: EventLog): void {
    const slot = this.ring[tick & this.ringMask];
    const s = this.scratch;
    const need = 8 + (((this.sourceStore.end + this.source.stats.lastInView) * this.entryBits + 64) >>> 3);
    if (slot.bytes.length < need) slot.bytes = new Uint8Array(nextPow2(need));
    s.beginWrite(need, slot.bytes);
    this.source.write(s, tick, 0, 0, 0, s.bitsRemaining - 8);
    this.source.acknowledge(tick);
    slot.tick = tick;
    slot.length = s.bytesProcessed;
    let n = 0;
    for (let p = Math.max(this.eventCursor, events.tail); p < events.head; p++) {
      if (n === slot.events.length) slot.events.push(createWireEvent());
      const e = events.at(p);
      const out = slot.events[n++];
      copyWireEvent(out, e);
    }
    slot.eventCount = n;
    this.eventCursor = events.head;
  }

  /** Applies every source tick up to `liveTick - delay` to the stream's store. */
  private advance(stream: DelayStream, liveTick: number): void {
    const upTo = liveTick - stream.delayTicks;
    if (stream.cursor < 0) stream.cursor = liveTick;
    const frame = stream.frame;
    while (stream.cursor <= upTo) {
      const slot = this.ring[stream.cursor & this.ringMask];
      stream.cursor++;
      if (slot.tick !== stream.cursor - 1) continue;
      this.read.beginRead(slot.bytes, slot.length);
      if (!stream.reader.read(this.read, slot.tick)) continue;
      this.mirror(stream, slot.tick);
      for (let i = 0; i < slot.eventCount; i++) {
        if (frame.eventCount === MAX_EVENTS_PER_FRAME) {
          stream.stats.eventsDropped++;
          continue;
        }
        const out = frame.events[frame.eventCount++];
        const e = slot.events[i];
        copyWireEvent(out, e);
      }
    }
  }

  /** Makes the stream's store hold the world the reader decoded, and commits it as `tick`. */
  private mirror(stream: DelayStream, tick: number): void {
    const store = stream.store;
    const r = stream.reader;
    for (let k = 0; k < r.removedCount; k++) {
      const e = r.removed[k];
      if (store.isAlive(e)) store.remove(e);
    }
    const types = this.game.entities.types;
    for (let k = 0; k < r.viewCount; k++) {
      const e = r.view[k];
      const t = r.typeOf(e);
      if (!store.isAlive(e)) store.createAt(e, t);
      if (store.parityAt(e) !== r.parityOf(e)) store.teleport(e);
      if (!r.changedThisFrame(e)) continue;
      const n = types[t].fieldCount;
      const src = r.values(e);
      const dst = store.values(e);
      for (let f = 0; f < n; f++) dst[f] = src[f];
    }
    store.commit(tick);
  }

  private send(stream: DelayStream, liveTick: number, nowMs: number): void {
    const baseline = stream.commonBaseline();
    if (baseline >= 0) stream.writer.acknowledge(baseline);
    const tick = stream.store.lastCommitTick;
    const f = stream.frame;
    f.serverTick = tick;
    f.liveTick = liveTick;
    const s = stream.payload;
    s.beginWrite();
    const writer = stream.writer;
    const table = this.game.events ?? null;
    const ok = serializeSpectatorFrame(s, f, table, (w, t) =>
      writer.write(w, t, 0, 0, 0, w.bitsRemaining - 8),
    );
    f.eventCount = 0;
    if (!ok || !f.snapshotOk) return;
    stream.payloadBytes = s.bytesProcessed;
    stream.lastFrameTick = tick;
    const st = stream.stats;
    st.framesEncoded++;
    st.bytesEncoded += s.bytesProcessed;
    if (writer.stats.lastBaselineTick < 0) st.keyframes++;
    const i = tick & stream.frameMask;
    // Those who acknowledged nothing for staleAckMs do not hold the next baselines back.
    let counted = 0;
    for (const m of stream.members) {
      if (m.ackedTick < 0) m.ackedTick = tick;
      m.counted = tick - m.ackedTick <= stream.staleTicks;
      if (m.counted) counted++;
    }
    st.stale = stream.members.length - counted;
    st.staleFrames += st.stale;
    stream.frameTick[i] = tick;
    stream.frameSent[i] = counted;
    stream.frameAcked[i] = 0;
    for (const m of stream.members) {
      const sequence = m.connection.channel.send(nowMs, stream.writeShared);
      const entry = m.frameTicks.insert(sequence);
      entry.tick = tick;
      entry.counted = m.counted;
      st.packetsSent++;
    }
  }
}

function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

function validate(c: SpectatorConfig): void {
  if (!Number.isInteger(c.maxSpectators) || c.maxSpectators < 0 || c.maxSpectators > 65535) {
    throw new RangeError(`spectators.maxSpectators must be an integer in 0..65535, got ${c.maxSpectators}`);
  }
  if (
    !Array.isArray(c.delaysMs) ||
    c.delaysMs.length === 0 ||
    c.delaysMs.some((d) => !(d >= 0 && d <= 60_000) || !Number.isFinite(d))
  ) {
    throw new RangeError(
      `spectators.delaysMs must list 1 or more delays in 0..60000 ms, got ${String(c.delaysMs)}`,
    );
  }
  if (!(c.updateRate > 0 && c.updateRate <= 255)) {
    throw new RangeError(`spectators.updateRate must be in (0, 255], got ${c.updateRate}`);
  }
  if (!Number.isInteger(c.frameBytes) || c.frameBytes < 64 || c.frameBytes > 1200) {
    throw new RangeError(`spectators.frameBytes must be an integer in 64..1200, got ${c.frameBytes}`);
  }
  if (!(c.staleAckMs >= 100 && c.staleAckMs <= 60_000)) {
    throw new RangeError(`spectators.staleAckMs must be in 100..60000 ms, got ${c.staleAckMs}`);
  }
}
