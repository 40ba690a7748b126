// The payloads of connected data packets: the client's command run, and the server's frame (its
// tick, the last command it ran, the owner's player state, effect events and the snapshot), each
// written, read and measured by one serialize function.
//
// Client packet payload:
//   +-------------------+-------+--------------------------------------------------+
//   | resetBaseline     | 1     | the client lost its snapshot baseline: send full  |
//   | commandCount      | expG  | 0..64 (exp-Golomb)                               |
//   | firstSequence     | 1+8   | 1: its low 8 bits, nearest the server's newest    |
//   |                   | or 1+32 | received command; 0: the whole number (count > 0) |
//   | baseGap           | expG  | first minus its base (a received command), 0: none |
//   | commands          | var   | compact form, each against the one before it,    |
//   |                   |       | after 1 bit "next" or a skip 1..255 (SPEC.md 6)   |
//   +-------------------+-------+--------------------------------------------------+
//
// Server packet payload (serializeServerFrame):
//   +-------------------+---------+------------------------------------------------+
//   | serverTick        | 1 + 12  | 1: the tick's low 12 bits, nearest the reader's |
//   |                   | or 1+32 | newest tick; 0: the whole tick                  |
//   | choked            | 1 (+ 8) | 1: frames held back by the rate since the last |
//   | player part       | var     | baseline, acked command, the owner's state     |
//   |                   |         | (delta-encoded; layout in player-state.ts)     |
//   | eventCount        | expGolomb | 0..63 effect events of other players         |
//   | event: type       | var     | the table's type code (no table: 8)            |
//   | event: source     | varuint | (source + 1) mod 65536 (no table: uint 16)     |
//   | event: params     | var     | at the table's precision (no table: 4 x 32)    |
//   | snapshot          | var     | the entity delta snapshot (layout in snapshot.ts) |
//   +-------------------+---------+------------------------------------------------+

import { type BitStream, serializeExpGolomb } from './bitstream.ts';
import type { PlayerStateHistory } from './player-state.ts';
import { PrefixCode } from './prefix-code.ts';
import type { NumberFieldSpec } from './schema.ts';
import { createUserCommand, serializeCompactUserCommand, type UserCommand } from './usercmd.ts';

export const MAX_COMMANDS_PER_PACKET = 64;
export const MAX_EVENTS_PER_FRAME = 63;
/**
 * A frame's tick travels as its low 12 bits when the reader is known to hold a frame within 2047
 * ticks (32 s at 64 Hz): far more than the packet channel's 33-packet window lets a late packet be.
 */
const SHORT_TICK_BITS = 12;
const SHORT_TICK_SPAN = 2 ** SHORT_TICK_BITS;

const ZERO_COMMAND = createUserCommand();

/**
 * The largest arrival gap a pair report carries, in quarter milliseconds either way (1.024 s): a
 * gap the link's own serialization of one packet makes is far less on any link a game runs over.
 */
export const PAIR_GAP_LIMIT = 4095;

/** Flags at the start of every client packet payload. */
export interface ClientFlags {
  /** The client could not decode a snapshot: the server should send the next against nothing. */
  resetBaseline: boolean;
  /**
   * A packet pair's arrival gap follows (the server's frame sent right after a keepalive, both
   * received: src/net/packet-pair.ts): `pairSequence` and `pairGap` are meaningful only then.
   */
  pair: boolean;
  /** The low 8 bits of the channel sequence of the pair's second packet (the frame). */
  pairSequence: number;
  /**
   * When the frame arrived less when the keepalive before it did, in quarter milliseconds within
   * +-PAIR_GAP_LIMIT (negative: the keepalive came after the frame).
   */
  pairGap: number;
}

export function createClientFlags(): ClientFlags {
  return { resetBaseline: false, pair: false, pairSequence: 0, pairGap: 0 };
}

export function serializeClientFlags(s: BitStream, f: ClientFlags): boolean {
  f.resetBaseline = s.bool(f.resetBaseline);
  f.pair = s.bool(f.pair);
  if (f.pair) {
    f.pairSequence = s.uint(f.pairSequence, 8);
    f.pairGap = s.int(f.pairGap, -PAIR_GAP_LIMIT, PAIR_GAP_LIMIT);
  } else if (s.isReading) {
    f.pairSequence = 0;
    f.pairGap = 0;
  }
  return s.ok;
}

/** The commands of a client packet: how many, and the command the first is encoded against. */
export interface CommandRun {
  count: number;
  /** The first command's number minus its base's (1..255), or 0: encoded against a zero command. */
  baseGap: number;
  /**
   * The first command's number goes as its low FIRST_SEQUENCE_SHORT_BITS bits, read as the number
   * with those bits nearest the newest command the reader received (`near`). The writer sets it
   * only when every number the reader can hold as its newest (from the newest command the server
   * is known to have received to the newest sent) is within half the short span of the first.
   */
  shortFirst: boolean;
}

/**
 * The commands a reader or writer holds by number (the client: the ones it made; the server: the
 * ones it received), for a run's base; undefined when not held.
 */
export type CommandLookup = (sequence: number) => UserCommand | undefined;

/** Largest gap between a run's first command and its base. */
export const MAX_COMMAND_BASE_GAP = 255;
/** Largest number of commands skipped between two commands of one run. */
export const MAX_COMMAND_SKIP = 255;
/** Bits of a first command number in its short form. */
export const FIRST_SEQUENCE_SHORT_BITS = 8;
/** A short first number is read within this many commands of the reader's newest, either way. */
export const FIRST_SEQUENCE_SHORT_REACH = 2 ** (FIRST_SEQUENCE_SHORT_BITS - 1) - 1;
const FIRST_SEQUENCE_SHORT_SPAN = 2 ** FIRST_SEQUENCE_SHORT_BITS;

/**
 * Reads or writes the commands of a client packet: `cmds[0..count)`, in increasing sequence
 * order, not necessarily consecutive (a packet carries resent commands before its new ones). The
 * count goes as an exp-Golomb code; the first number whole (32 bits) or short (`run.shortFirst`,
 * extended near `near`, the newest command number the reader received); the base gap as an
 * exp-Golomb code. The first command is encoded against its base: a command the server is known
 * to have received (the writer chose `run.baseGap`; `lookup` gives it on both sides), or a zero
 * command; each other against the one before it in the packet, after one bit for "next in
 * sequence" or the number of commands skipped. Commands are in the compact form
 * (`serializeCompactUserCommand`, its view predicted at `tickMs` a server tick). Reading fails when
 * the base is not held or any value is out of range.
 */
export function serializeCommandRun(
  s: BitStream,
  cmds: UserCommand[],
  run: CommandRun,
  lookup: CommandLookup,
  near: number,
  tickMs: number,
): boolean {
  run.count = serializeExpGolomb(s, run.count, MAX_COMMANDS_PER_PACKET);
  if (run.count === 0 || !s.ok) return s.ok;
  if (run.count > cmds.length) return s.fail('command run longer than the buffer');
  let first: number;
  run.shortFirst = s.bool(run.shortFirst);
  if (run.shortFirst) {
    const low = s.uint(cmds[0].sequence % FIRST_SEQUENCE_SHORT_SPAN, FIRST_SEQUENCE_SHORT_BITS);
    let diff =
      (low - (near % FIRST_SEQUENCE_SHORT_SPAN) + FIRST_SEQUENCE_SHORT_SPAN) % FIRST_SEQUENCE_SHORT_SPAN;
    if (diff > FIRST_SEQUENCE_SHORT_REACH) diff -= FIRST_SEQUENCE_SHORT_SPAN;
    first = s.isReading ? near + diff : cmds[0].sequence;
  } else {
    first = s.uint(cmds[0].sequence, 32);
  }
  // Commands count from 1.
  if (!(first >= 1 && first <= 0xffffffff)) return s.fail('command sequence out of range');
  run.baseGap = serializeExpGolomb(s, run.baseGap, MAX_COMMAND_BASE_GAP);
  if (!s.ok) return false;
  let base = ZERO_COMMAND;
  if (run.baseGap > 0) {
    const held = first - run.baseGap >= 1 ? lookup(first - run.baseGap) : undefined;
    if (held === undefined) return s.fail('command run base not held');
    base = held;
  }
  let sequence = first;
  for (let i = 0; i < run.count && s.ok; i++) {
    const c = cmds[i];
    if (i > 0) {
      const skip = c.sequence - sequence - 1;
      sequence += 1 + (s.bool(skip === 0) ? 0 : s.int(skip, 1, MAX_COMMAND_SKIP));
    }
    c.sequence = sequence;
    serializeCompactUserCommand(s, c, i === 0 ? base : cmds[i - 1], tickMs);
  }
  if (s.ok && sequence > 0xffffffff) return s.fail('command sequence out of range');
  return s.ok;
}

/** One effect event as it travels: a type, what caused it, and four parameters. */
export interface WireEvent {
  type: number;
  source: number;
  p0: number;
  p1: number;
  p2: number;
  p3: number;
}

export function createWireEvent(): WireEvent {
  return { type: 0, source: 0, p0: 0, p1: 0, p2: 0, p3: 0 };
}

/** Copies `from` into `to` (pooled events are reused, never replaced). */
export function copyWireEvent(to: WireEvent, from: Readonly<WireEvent>): void {
  to.type = from.type;
  to.source = from.source;
  to.p0 = from.p0;
  to.p1 = from.p1;
  to.p2 = from.p2;
  to.p3 = from.p3;
}

/** How one event type's parameters travel: up to four quantized numbers, in order. */
export interface EventSpec {
  readonly name: string;
  readonly params: readonly NumberFieldSpec[];
  /** Each parameter's name, in order (the position it travels at and is emitted at). */
  readonly paramNames: readonly string[];
  /**
   * How often the type is sent relative to the table's others (default 1): the event type
   * travels in a prefix code built from these, so frequent types cost fewer bits.
   */
  readonly weight?: number;
}

/** An event type whose parameters are named by `K`: `index` gives each name's position. */
export interface NamedEventSpec<K extends string> extends EventSpec {
  readonly index: { readonly [P in K]: number };
}

/**
 * Declares one event type: its parameters by name, in the order they are emitted
 * (`emit(type, p0, p1, p2, p3)`) and travel, each at its own precision (at most four).
 * Read a parameter by name with `wireEventParam(event, spec.index.name)`.
 */
export function defineEvent<K extends string>(
  name: string,
  params: { readonly [P in K]: NumberFieldSpec },
  options: { readonly weight?: number } = {},
): NamedEventSpec<K> {
  const paramNames = Object.keys(params) as K[];
  if (paramNames.length > 4)
    throw new RangeError(`event ${name}: at most 4 parameters, got ${paramNames.length}`);
  const weight = options.weight ?? 1;
  if (!(weight > 0) || !Number.isFinite(weight))
    throw new RangeError(`event ${name}: weight must be a finite number > 0, got ${weight}`);
  return {
    name,
    weight,
    params: paramNames.map((p) => params[p]),
    paramNames,
    index: Object.freeze(Object.fromEntries(paramNames.map((p, i) => [p, i]))) as {
      readonly [P in K]: number;
    },
  };
}

/** Parameter `k` (0..3: a NamedEventSpec's `index.name`) of an event. */
export function wireEventParam(e: WireEvent, k: number): number {
  return k === 0 ? e.p0 : k === 1 ? e.p1 : k === 2 ? e.p2 : e.p3;
}

/**
 * A game's event types by type number (the index). With a table, an event costs its type, its
 * source and its parameters at their own precision; a type without a spec cannot be sent or
 * read. Without one, every event carries four float32 parameters.
 */
export type EventTable = readonly (EventSpec | undefined)[];

/** Bits of one event without an event table. */
export const WIRE_EVENT_BITS = 8 + 16 + 4 * 32;

/** Checks an event table, throwing an Error that names the event and parameter at fault. */
export function checkEventTable(table: EventTable): void {
  if (table.length === 0 || table.length > 256) {
    throw new RangeError(`event table: must list 1 to 256 types, got ${table.length}`);
  }
  table.forEach((spec, type) => {
    if (spec === undefined) return;
    if (spec.params.length > 4) throw new RangeError(`event ${spec.name} (${type}): at most 4 parameters`);
    const w = spec.weight ?? 1;
    if (!(w > 0) || !Number.isFinite(w))
      throw new RangeError(`event ${spec.name} (${type}): weight must be a finite number > 0, got ${w}`);
    if (spec.paramNames.length !== spec.params.length)
      throw new RangeError(`event ${spec.name} (${type}): every parameter needs a name (defineEvent)`);
    spec.params.forEach((p, i) => {
      const where = `event ${spec.name} (${type}), parameter ${spec.paramNames[i] ?? i}`;
      if (p.kind === 'angle') {
        if (!Number.isInteger(p.bits) || p.bits < 1 || p.bits > 32)
          throw new RangeError(`${where}: bits must be 1..32`);
        return;
      }
      if (!(p.min < p.max) || !Number.isFinite(p.min) || !Number.isFinite(p.max)) {
        throw new RangeError(`${where}: needs finite min < max, got [${p.min}, ${p.max}]`);
      }
      if (
        p.kind === 'int' &&
        (!Number.isInteger(p.min) || !Number.isInteger(p.max) || p.max - p.min > 0xffffffff)
      ) {
        throw new RangeError(`${where}: int range must be integers at most 2^32 - 1 wide`);
      }
      if (p.kind === 'float' && (!(p.precision > 0) || (p.max - p.min) / p.precision > 0xffffffff)) {
        throw new RangeError(`${where}: precision must be > 0 and leave at most 2^32 - 1 steps`);
      }
    });
  });
}

/**
 * An event's four parameters while they are written, read or measured: in an array, so that no
 * fraction is passed to or returned from a call (V8 boxes each one that crosses a call it does
 * not inline: every event of every client's frame).
 */
const eventParams = new Float64Array(4);

/** The parameters `v[0 .. 4)` at their specs' precision (0 where the spec has none). */
function serializeParams(
  s: BitStream,
  v: Float64Array,
  params: readonly (NumberFieldSpec | undefined)[],
): void {
  for (let k = 0; k < 4; k++) {
    const p = params[k];
    if (p === undefined) {
      v[k] = 0;
      continue;
    }
    switch (p.kind) {
      case 'float':
        s.floats(v, k, 1, p.min, p.max, p.precision);
        break;
      case 'angle':
        s.angles(v, k, 1, p.bits);
        break;
      default: {
        // Writing clamps to the declared range, as floats do; reading checks it.
        const r = Math.round(v[k]);
        v[k] = s.int(Number.isNaN(r) ? p.min : Math.min(p.max, Math.max(p.min, r)), p.min, p.max);
      }
    }
  }
}

const typeCodes = new WeakMap<EventTable, PrefixCode>();
let lastTable: EventTable | null = null;
let lastCode: PrefixCode | null = null;

/**
 * The prefix code an event table's types travel in: a canonical Huffman code (prefix-code.ts)
 * over the table's indices, from each type's weight scaled to at most 4096 (a type without a
 * spec: 0, so it gets one of the longest codes and fails the read). Built once per table.
 */
export function eventTypeCode(table: EventTable): PrefixCode {
  if (table === lastTable && lastCode !== null) return lastCode;
  let code = typeCodes.get(table);
  if (code === undefined) {
    let most = 0;
    for (const spec of table) if (spec !== undefined) most = Math.max(most, spec.weight ?? 1);
    // An index loop, not map: a table may be a sparse array (holes are types without a spec).
    const counts: number[] = [];
    for (let type = 0; type < table.length; type++) {
      const spec = table[type];
      counts.push(spec === undefined ? 0 : Math.max(1, Math.round((4096 * (spec.weight ?? 1)) / most)));
    }
    code = new PrefixCode(counts);
    typeCodes.set(table, code);
  }
  lastTable = table;
  lastCode = code;
  return code;
}

/**
 * One event, with the game's event table (its type in the table's type code, parameters at
 * their own precision; an unknown type fails the read) or without one (four float32 parameters).
 */
export function serializeWireEvent(s: BitStream, e: WireEvent, table: EventTable | null = null): boolean {
  if (table === null) {
    e.type = s.uint(e.type, 8);
    e.source = s.uint(e.source, 16);
    e.p0 = s.float32(e.p0);
    e.p1 = s.float32(e.p1);
    e.p2 = s.float32(e.p2);
    e.p3 = s.float32(e.p3);
    return s.ok;
  }
  e.type = eventTypeCode(table).serialize(s, e.type);
  if (!s.ok) return false;
  const spec = table[e.type];
  if (spec === undefined) return s.fail('unknown event type');
  // Player slots are small and the world's source is 65535: (source + 1) mod 65536 in a varuint.
  const source = s.varuint((e.source + 1) & 0xffff, 0xffff);
  e.source = source === 0 ? 0xffff : source - 1;
  const v = eventParams;
  // A read overwrites the event's parameters without looking at them: an event's number fields
  // are boxes of their own, and a client reads dozens of events a frame into a pool it last
  // touched long ago.
  const reading = s.isReading;
  v[0] = reading ? 0 : e.p0;
  v[1] = reading ? 0 : e.p1;
  v[2] = reading ? 0 : e.p2;
  v[3] = reading ? 0 : e.p3;
  serializeParams(s, v, spec.params);
  e.p0 = v[0];
  e.p1 = v[1];
  e.p2 = v[2];
  e.p3 = v[3];
  return s.ok;
}

/**
 * One server-to-client frame: what serializeServerFrame writes from, reads into and measures.
 * `events[0 .. eventCount)` are the effect events it carries (a pool of MAX_EVENTS_PER_FRAME).
 */
export interface ServerFrame<P> {
  serverTick: number;
  /** Frames the server held back by the client's rate since the previous frame (saturates). */
  choked: number;
  /**
   * A tick the reader is known to hold a frame near (within 2047 ticks), or -1: the writer's is
   * the client's acknowledged frame, the reader's its newest frame. With one the tick travels as
   * its low 12 bits.
   */
  tickReference: number;
  /** The newest of the client's commands the server has run (the player state is its result). */
  ackedCommand: number;
  /**
   * The frame whose player state this one's is delta-encoded against (-1: none). The writer
   * proposes the client's acknowledged frame; it becomes -1 when that cannot serve.
   */
  playerBaseline: number;
  /** The owner's player state. */
  player: P;
  eventCount: number;
  readonly events: readonly WireEvent[];
  /** After a read: whether the snapshot decoded (a frame whose snapshot failed still brings the rest). */
  snapshotOk: boolean;
}

/** How a frame's game-defined parts travel: the player state, the event table, the snapshot. */
export interface ServerFrameCodec<P> {
  /** This end's record of the player states frames carried (the player part's baselines; the server sets its client's before each frame). */
  players: PlayerStateHistory<P>;
  readonly events: EventTable | null;
  /**
   * Writes or reads the snapshot of `serverTick` at the stream's position (the server's writer
   * fills what room is left; the client's reader decodes), given the frame's player baseline
   * tick (-1: none), which its baseline usually repeats. False when it failed.
   */
  serializeSnapshot(s: BitStream, serverTick: number, playerBaseline: number): boolean;
  /**
   * When set, writing (not reading or measuring) puts the frame's event `index` into the stream
   * through this instead of serializeWireEvent: the same bits (a writer that encoded the event
   * once for many frames copies them).
   */
  writeEvent?(s: BitStream, index: number): boolean;
  /**
   * When set, writing (not reading or measuring) puts the frame's player part into the stream
   * through this instead of `players.serialize`: the same bits (a writer that wrote the part once
   * to learn its size copies it).
   */
  writePlayer?(s: BitStream, f: ServerFrame<P>): boolean;
}

export function createServerFrame<P>(player: P): ServerFrame<P> {
  const events: WireEvent[] = [];
  for (let i = 0; i < MAX_EVENTS_PER_FRAME; i++) events.push(createWireEvent());
  return {
    serverTick: 0,
    choked: 0,
    tickReference: -1,
    ackedCommand: 0,
    playerBaseline: -1,
    player,
    eventCount: 0,
    events,
    snapshotOk: false,
  };
}

/**
 * The frame's head: tick, choke and the player part (what comes before the events). Writing
 * and measuring need the frame's player state recorded in `codec.players` first.
 */
export function serializeFrameHead<P>(s: BitStream, f: ServerFrame<P>, codec: ServerFrameCodec<P>): boolean {
  if (!serializeFrameTick(s, f, codec)) return false;
  if (codec.writePlayer !== undefined && s.isWriting) return codec.writePlayer(s, f);
  return codec.players.serialize(s, f);
}

/** The head's tick and choke, before its player part. */
export function serializeFrameTick<P>(s: BitStream, f: ServerFrame<P>, codec: ServerFrameCodec<P>): boolean {
  const ref = f.tickReference;
  if (s.isReading) {
    if (s.bool(false)) {
      const low = s.uint(0, SHORT_TICK_BITS);
      if (!s.ok) return false;
      if (ref < 0) {
        codec.players.needsFullUpdate = true;
        return s.fail('no reference tick');
      }
      let d = (((low - ref) % SHORT_TICK_SPAN) + SHORT_TICK_SPAN) % SHORT_TICK_SPAN;
      if (d >= SHORT_TICK_SPAN / 2) d -= SHORT_TICK_SPAN;
      const tick = ref + d;
      if (tick < 0 || tick > 0xffffffff) return s.fail('tick out of range');
      f.serverTick = tick;
    } else {
      f.serverTick = s.uint(0, 32);
    }
  } else {
    const short = ref >= 0 && Math.abs(f.serverTick - ref) < SHORT_TICK_SPAN / 2;
    if (s.bool(short)) s.uint(f.serverTick % SHORT_TICK_SPAN, SHORT_TICK_BITS);
    else s.uint(f.serverTick, 32);
  }
  if (s.bool(f.choked !== 0)) f.choked = s.uint(f.choked, 8);
  else f.choked = 0;
  return s.ok;
}

/**
 * The whole server frame (layout above), one function for write, read and measure. Returns false
 * when the header, the player state or the events failed to read; the snapshot's own result is
 * in `f.snapshotOk`, since its reader recovers on its own (it asks for a full update).
 */
export function serializeServerFrame<P>(
  s: BitStream,
  f: ServerFrame<P>,
  codec: ServerFrameCodec<P>,
): boolean {
  if (!serializeFrameHead(s, f, codec)) return false;
  f.eventCount = serializeExpGolomb(s, f.eventCount, MAX_EVENTS_PER_FRAME);
  const copied = codec.writeEvent !== undefined && s.isWriting;
  for (let i = 0; i < f.eventCount && s.ok; i++) {
    if (copied) codec.writeEvent?.(s, i);
    else serializeWireEvent(s, f.events[i], codec.events);
  }
  if (!s.ok) return false;
  f.snapshotOk = codec.serializeSnapshot(s, f.serverTick, f.playerBaseline);
  return true;
}
