// The demo file: a recorded match (the world through the snapshot codec, the effect events, the
// shots with the views they named and their verdicts, kills and killcams), and the killcam
// record on its own. Browser-safe: the player decodes it in the page.
//
// File (bytes, little-endian):
//   +-------------+--------+----------------------------------------------------------+
//   | magic       | 8      | "BKSTDEMO"                                               |
//   | version     | 2      | DEMO_VERSION                                             |
//   | headerBytes | 2      | length of the header that follows, 1..DEMO_MAX_HEADER    |
//   | header      | var    | serializeDemoHeader (bit stream)                         |
//   | headerCrc   | 4      | CRC-32 of every byte before it                           |
//   | chunks      | var    | until the END chunk, which is the last bytes of the file |
//   +-------------+--------+----------------------------------------------------------+
// Chunk:
//   +-------------+--------+----------------------------------------------------------+
//   | kind        | 1      | CHUNK_TICK, CHUNK_KILLCAM or CHUNK_END                   |
//   | length      | 4      | payload bytes, at most DEMO_MAX_CHUNK                    |
//   | payload     | var    | bit stream, zero-padded to a byte                        |
//   | crc         | 4      | CRC-32 of kind, length and payload                       |
//   +-------------+--------+----------------------------------------------------------+
// Payload layouts (TICK, KILLCAM, END) are drawn in SPEC.md section 9. A TICK chunk's snapshot
// starts on a byte and is delta-encoded against the previous TICK chunk's frame, or against
// nothing (a keyframe, every header.keyframeInterval ticks and first): a player seeks to the
// keyframe at or before a tick and decodes forward.

import { crc32 } from '../net/crc32.ts';
import { BitStream } from './bitstream.ts';
import { type EventTable, serializeWireEvent, type WireEvent } from './frames.ts';
import { decodeNumber, encodeField, type GameSchema } from './schema.ts';
import { createUserCommand, serializeUserCommand, type UserCommand } from './usercmd.ts';

export const DEMO_MAGIC = 'BKSTDEMO';
export const DEMO_VERSION = 2;
export const DEMO_MAX_HEADER = 1024;
/** Largest chunk payload: a keyframe of the largest world fits (1024 entities x 32 fields x 32 bits is 128 KiB). */
export const DEMO_MAX_CHUNK = 4 * 1024 * 1024;
export const DEMO_PREAMBLE_BYTES = 12;
export const DEMO_CHUNK_OVERHEAD = 9;

export const CHUNK_TICK = 1;
export const CHUNK_KILLCAM = 2;
export const CHUNK_END = 3;

/** Most effect events, shots and kills one tick records. */
export const DEMO_MAX_EVENTS_PER_TICK = 4096;
export const DEMO_MAX_SHOTS_PER_TICK = 1024;
export const DEMO_MAX_KILLS_PER_TICK = 256;
/** Most events one shot's verdict records. */
export const DEMO_MAX_SHOT_EVENTS = 256;
/** Most players a roster lists (slots are 0..65535). */
export const DEMO_MAX_ROSTER = 65536;
/** Most commands in one killcam. */
export const KILLCAM_MAX_COMMANDS = 8192;
/**
 * Most view entities one killcam lists over all its frames (a frame that repeats the previous
 * view lists none): each decodes to an object, and one whose values repeat the previous frame's
 * costs about 13 bits, so without a bound a killcam of a few megabytes decoded to gigabytes. An
 * honest killcam of 4 s at 60 commands a second holds 240 frames: 1,000 entities in view each.
 */
export const KILLCAM_MAX_VIEW_ENTITIES = 1 << 18;

export interface DemoHeader {
  /** gameSchemaHash of the game recorded: a player built against other tables refuses the file. */
  schemaHash: number;
  tickRate: number;
  /** Ticks from one keyframe to the next (1..65535). */
  keyframeInterval: number;
  /** The first tick recorded. */
  startTick: number;
  /** The game's name (shown by tools), at most 64 bytes of UTF-8. */
  gameName: string;
}

export function serializeDemoHeader(s: BitStream, h: DemoHeader): boolean {
  h.schemaHash = s.uint(h.schemaHash, 32);
  h.tickRate = s.int(h.tickRate, 1, 255);
  h.keyframeInterval = s.int(h.keyframeInterval, 1, 65535);
  h.startTick = s.uint(h.startTick, 32);
  h.gameName = s.string(h.gameName, 64);
  return s.ok;
}

/** Which player is which entity: slot and entity index, at a keyframe and whenever it changes. */
export interface DemoRosterEntry {
  slot: number;
  entity: number;
}

/** A lag compensation mode on the wire: exact 0, estimate 1, off 2. */
export const DEMO_LAG_MODES = ['exact', 'estimate', 'off'] as const;

/** One entity as a view drew it: its index, type and decoded field values (float32 each). */
export interface DemoPose {
  entity: number;
  typeId: number;
  values: Float64Array;
}

/**
 * One hit-scan shot as the server judged it: the command (with the view it named), the ray's
 * segment, the targets where the server tested them and, when the named view was not honoured
 * but could be rebuilt, where the shooter drew them; the events the judgement emitted (hits).
 */
export interface DemoShot {
  shooterSlot: number;
  shooterEntity: number;
  command: UserCommand;
  /** Index into DEMO_LAG_MODES. */
  mode: number;
  /** The command's named view was honoured: `tested` is where the shooter drew the targets. */
  exact: boolean;
  /** Server ticks from the view tested back to the tick the shot ran (>= 0). */
  rewindTicks: number;
  start: { x: number; y: number; z: number };
  end: { x: number; y: number; z: number };
  tested: DemoPose[];
  /** Where the shooter drew the targets when `exact` is false and its view could be rebuilt (else empty). */
  drawn: DemoPose[];
  /** The verdict: the events the judgement emitted, `eventCount` of the tick's events from `firstEvent`. */
  firstEvent: number;
  eventCount: number;
}

export interface DemoKill {
  killerSlot: number;
  victimSlot: number;
  killerEntity: number;
  victimEntity: number;
  /** A game-defined cause (weapon number, say), 0..255. */
  cause: number;
}

/** One decoded TICK chunk without its snapshot (the snapshot is read by a SnapshotReader). */
export interface DemoTickHead {
  tick: number;
  /** The roster when it changed at this tick (always at a keyframe), else null. */
  roster: DemoRosterEntry[] | null;
  events: WireEvent[];
  shots: DemoShot[];
  kills: DemoKill[];
}

/** The parts of a game a demo's records need. */
export interface DemoCodecGame {
  readonly entities: GameSchema;
  readonly events?: EventTable;
}

const ZERO_COMMAND = createUserCommand();

function serializeRoster(s: BitStream, roster: DemoRosterEntry[], maxEntities: number): boolean {
  const n = s.varuint(roster.length, DEMO_MAX_ROSTER);
  if (!s.ok) return false;
  if (s.isReading) roster.length = 0;
  for (let i = 0; i < n && s.ok; i++) {
    const r = s.isReading ? { slot: 0, entity: 0 } : roster[i];
    r.slot = s.varuint(r.slot, 65535);
    r.entity = s.varuint(r.entity, maxEntities - 1);
    if (s.isReading) roster.push(r);
  }
  return s.ok;
}

function serializePoses(s: BitStream, poses: DemoPose[], schema: GameSchema): boolean {
  const n = s.varuint(poses.length, schema.maxEntities);
  if (!s.ok) return false;
  if (s.isReading) poses.length = 0;
  for (let i = 0; i < n && s.ok; i++) {
    const p = s.isReading ? { entity: 0, typeId: 0, values: new Float64Array(0) } : poses[i];
    p.entity = s.varuint(p.entity, schema.maxEntities - 1);
    p.typeId = s.int(p.typeId, 0, schema.types.length - 1);
    if (!s.ok) return false;
    const type = schema.types[p.typeId];
    if (s.isReading) p.values = new Float64Array(type.fieldCount);
    // Each value at its field's own precision (a blended value rounds to the nearest step).
    for (let f = 0; f < type.fieldCount; f++) {
      const q =
        s.uint(s.isReading ? 0 : encodeField(type, f, p.values[f]) - type.lo[f], type.bits[f]) + type.lo[f];
      if (s.isReading) {
        if (!s.ok) return false;
        if (q > type.hi[f]) return s.fail('field value out of range');
        p.values[f] = decodeNumber(type, f, q);
      }
    }
    if (s.isReading) poses.push(p);
  }
  return s.ok;
}

function serializeEvents(s: BitStream, events: WireEvent[], max: number, table: EventTable | null): boolean {
  const n = s.varuint(events.length, max);
  if (!s.ok) return false;
  if (s.isReading) events.length = 0;
  for (let i = 0; i < n && s.ok; i++) {
    const e = s.isReading ? { type: 0, source: 0, p0: 0, p1: 0, p2: 0, p3: 0 } : events[i];
    serializeWireEvent(s, e, table);
    if (s.isReading) events.push(e);
  }
  return s.ok;
}

function serializeShot(s: BitStream, shot: DemoShot, game: DemoCodecGame): boolean {
  const schema = game.entities;
  shot.shooterSlot = s.varuint(shot.shooterSlot, 65535);
  shot.shooterEntity = s.varuint(shot.shooterEntity, schema.maxEntities - 1);
  shot.command.sequence = s.uint(shot.command.sequence, 32);
  serializeUserCommand(s, shot.command, ZERO_COMMAND);
  shot.mode = s.int(shot.mode, 0, DEMO_LAG_MODES.length - 1);
  shot.exact = s.bool(shot.exact);
  shot.rewindTicks = s.float(shot.rewindTicks, 0, 65535, 1 / 4096);
  for (const p of [shot.start, shot.end]) {
    p.x = s.float32(p.x);
    p.y = s.float32(p.y);
    p.z = s.float32(p.z);
  }
  serializePoses(s, shot.tested, schema);
  serializePoses(s, shot.drawn, schema);
  shot.firstEvent = s.varuint(shot.firstEvent, DEMO_MAX_EVENTS_PER_TICK);
  shot.eventCount = s.varuint(shot.eventCount, DEMO_MAX_SHOT_EVENTS);
  return s.ok;
}

export function createDemoShot(): DemoShot {
  return {
    shooterSlot: 0,
    shooterEntity: 0,
    command: createUserCommand(),
    mode: 0,
    exact: false,
    rewindTicks: 0,
    start: { x: 0, y: 0, z: 0 },
    end: { x: 0, y: 0, z: 0 },
    tested: [],
    drawn: [],
    firstEvent: 0,
    eventCount: 0,
  };
}

function serializeKill(s: BitStream, k: DemoKill, maxEntities: number): boolean {
  k.killerSlot = s.varuint(k.killerSlot, 65535);
  k.victimSlot = s.varuint(k.victimSlot, 65535);
  k.killerEntity = s.varuint(k.killerEntity, maxEntities - 1);
  k.victimEntity = s.varuint(k.victimEntity, maxEntities - 1);
  k.cause = s.uint(k.cause, 8);
  return s.ok;
}

/**
 * The head of a TICK chunk (layout in SPEC.md): tick, roster, events, shots, kills; the snapshot
 * follows it in the same stream. Reading allocates the records (a player reads a demo once).
 */
export function serializeTickHead(s: BitStream, t: DemoTickHead, game: DemoCodecGame): boolean {
  const schema = game.entities;
  t.tick = s.uint(t.tick, 32);
  const hasRoster = s.bool(t.roster !== null);
  if (s.isReading) t.roster = hasRoster ? [] : null;
  if (hasRoster) serializeRoster(s, t.roster as DemoRosterEntry[], schema.maxEntities);
  serializeEvents(s, t.events, DEMO_MAX_EVENTS_PER_TICK, game.events ?? null);
  const shots = s.varuint(t.shots.length, DEMO_MAX_SHOTS_PER_TICK);
  if (s.isReading) t.shots.length = 0;
  for (let i = 0; i < shots && s.ok; i++) {
    const shot = s.isReading ? createDemoShot() : t.shots[i];
    serializeShot(s, shot, game);
    if (s.isReading && shot.firstEvent + shot.eventCount > t.events.length) {
      return s.fail('shot events outside the tick');
    }
    if (s.isReading) t.shots.push(shot);
  }
  const kills = s.varuint(t.kills.length, DEMO_MAX_KILLS_PER_TICK);
  if (s.isReading) t.kills.length = 0;
  for (let i = 0; i < kills && s.ok; i++) {
    const k = s.isReading
      ? { killerSlot: 0, victimSlot: 0, killerEntity: 0, victimEntity: 0, cause: 0 }
      : t.kills[i];
    serializeKill(s, k, schema.maxEntities);
    if (s.isReading) t.kills.push(k);
  }
  return s.ok;
}

export function createDemoTickHead(): DemoTickHead {
  return { tick: 0, roster: null, events: [], shots: [], kills: [] };
}

/**
 * One entity of a view as the client held it in the two frames it drew between: its stored
 * integers in frame A and in frame B (either may be absent) and its teleport parity in each.
 * drawEntity over these, at the view's fraction, gives exactly what the client drew.
 */
export interface ViewEntity {
  entity: number;
  typeId: number;
  inA: boolean;
  inB: boolean;
  parityA: number;
  parityB: number;
  /** The type's stored values in A and in B (fieldCount each; meaningful where held). */
  a: Int32Array;
  b: Int32Array;
}

/**
 * One command of a killcam: the command (its view angles and the view it names), the killer's
 * player entity after it ran (stored values) and the entities it drew.
 */
export interface KillcamFrame {
  command: UserCommand;
  /** The server tick the command ran at. */
  tick: number;
  /** The killer's own player entity after the command (stored values of the player type). */
  player: Int32Array;
  /** The entities the view named by the command drew. */
  view: ViewEntity[];
}

export interface Killcam {
  killerSlot: number;
  victimSlot: number;
  killerEntity: number;
  victimEntity: number;
  /** The player entity's type id (the type of `player` in every frame). */
  playerType: number;
  /** Oldest command first. */
  frames: KillcamFrame[];
}

function serializeStored(s: BitStream, schema: GameSchema, typeId: number, values: Int32Array): boolean {
  const type = schema.types[typeId];
  for (let f = 0; f < type.fieldCount; f++) {
    const v = s.uint(values[f] - type.lo[f], type.bits[f]) + type.lo[f];
    if (s.isReading) {
      if (!s.ok) return false;
      if (v > type.hi[f]) return s.fail('field value out of range');
      values[f] = v;
    }
  }
  return s.ok;
}

/** The values and parity a view entity holds in one frame equal another's. */
function sameHeld(
  parity: number,
  values: Int32Array,
  otherParity: number,
  other: Int32Array,
  n: number,
): boolean {
  if (parity !== otherParity) return false;
  for (let f = 0; f < n; f++) if (values[f] !== other[f]) return false;
  return true;
}

/**
 * One view entity; `prev` is the previous killcam frame's view by entity: where this entity's
 * values in A or B are what the previous frame held for it in B (the view moved on by a frame, or
 * the entity did not change), one bit says so instead of the values.
 */
function serializeViewEntity(
  s: BitStream,
  v: ViewEntity,
  schema: GameSchema,
  prev: ReadonlyMap<number, ViewEntity>,
): boolean {
  v.entity = s.varuint(v.entity, schema.maxEntities - 1);
  v.typeId = s.int(v.typeId, 0, schema.types.length - 1);
  v.inA = s.bool(v.inA);
  v.inB = s.bool(v.inB);
  if (!s.ok) return false;
  if (!v.inA && !v.inB) return s.fail('view entity in neither frame');
  const n = schema.types[v.typeId].fieldCount;
  const reading = s.isReading;
  // Reading, values that repeat the previous frame's share its array (nothing changes a decoded
  // killcam), and a frame the entity is not in shares one of zeros: a read allocates only for
  // values it reads.
  if (reading) {
    v.a = zerosOf(n);
    v.b = v.a;
  }
  const p = prev.get(v.entity);
  const known = p?.inB && p.typeId === v.typeId ? p : null;
  if (v.inA) {
    const reuse = s.bool(!reading && known !== null && sameHeld(v.parityA, v.a, known.parityB, known.b, n));
    if (reuse) {
      if (known === null) return s.fail('view entity not in the previous frame');
      v.parityA = known.parityB;
      if (reading) v.a = known.b;
    } else {
      v.parityA = s.uint(v.parityA, 1);
      if (reading) v.a = new Int32Array(n);
      serializeStored(s, schema, v.typeId, v.a);
    }
  }
  if (v.inB) {
    const reuse = s.bool(!reading && known !== null && sameHeld(v.parityB, v.b, known.parityB, known.b, n));
    if (reuse) {
      if (known === null) return s.fail('view entity not in the previous frame');
      v.parityB = known.parityB;
      if (reading) v.b = known.b;
    } else {
      v.parityB = s.uint(v.parityB, 1);
      if (reading) v.b = new Int32Array(n);
      serializeStored(s, schema, v.typeId, v.b);
    }
  }
  return s.ok;
}

/** Decoded view entities' values in a frame they are not in, by field count (shared, never written). */
const ZEROS: Int32Array[] = [];

function zerosOf(n: number): Int32Array {
  let z = ZEROS[n];
  if (z === undefined) {
    z = new Int32Array(n);
    ZEROS[n] = z;
  }
  return z;
}

function sameView(a: readonly ViewEntity[], b: readonly ViewEntity[], schema: GameSchema): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    const n = schema.types[x.typeId].fieldCount;
    if (x.entity !== y.entity || x.typeId !== y.typeId || x.inA !== y.inA || x.inB !== y.inB) return false;
    if (x.inA && !sameHeld(x.parityA, x.a, y.parityA, y.a, n)) return false;
    if (x.inB && !sameHeld(x.parityB, x.b, y.parityB, y.b, n)) return false;
  }
  return true;
}

/**
 * A killcam (CHUNK_KILLCAM payload, or a message on its own): layout in SPEC.md. Each frame is
 * written against the one before it: the command delta-encoded, the player's changed fields, and
 * the view as "the same as the previous frame's" or entity by entity. Reading allocates.
 */
export function serializeKillcam(s: BitStream, k: Killcam, schema: GameSchema): boolean {
  k.killerSlot = s.varuint(k.killerSlot, 65535);
  k.victimSlot = s.varuint(k.victimSlot, 65535);
  k.killerEntity = s.varuint(k.killerEntity, schema.maxEntities - 1);
  k.victimEntity = s.varuint(k.victimEntity, schema.maxEntities - 1);
  k.playerType = s.int(k.playerType, 0, schema.types.length - 1);
  const n = s.varuint(k.frames.length, KILLCAM_MAX_COMMANDS);
  if (!s.ok) return false;
  if (s.isReading) k.frames.length = 0;
  const playerType = schema.types[k.playerType];
  const playerFields = playerType.fieldCount;
  let prevCommand = ZERO_COMMAND;
  let prevFrame: KillcamFrame | null = null;
  let prevView = new Map<number, ViewEntity>();
  let viewEntities = 0;
  for (let i = 0; i < n && s.ok; i++) {
    const fr: KillcamFrame = s.isReading
      ? { command: createUserCommand(), tick: 0, player: new Int32Array(playerFields), view: [] }
      : k.frames[i];
    // Commands in order; a gap is a command the server never received.
    if (prevFrame === null) fr.command.sequence = s.uint(fr.command.sequence, 32);
    else {
      const gap = s.varuint(fr.command.sequence - prevFrame.command.sequence - 1);
      fr.command.sequence = prevFrame.command.sequence + 1 + gap;
      if (fr.command.sequence > 0xffffffff) return s.fail('command sequence out of range');
    }
    serializeUserCommand(s, fr.command, prevCommand);
    prevCommand = fr.command;
    if (prevFrame === null) fr.tick = s.uint(fr.tick, 32);
    else fr.tick = prevFrame.tick + s.varuint(fr.tick - prevFrame.tick);
    for (let f = 0; f < playerFields; f++) {
      const before = prevFrame === null ? null : prevFrame.player[f];
      if (before !== null && !s.bool(fr.player[f] !== before)) {
        fr.player[f] = before;
        continue;
      }
      const v = s.uint(fr.player[f] - playerType.lo[f], playerType.bits[f]) + playerType.lo[f];
      if (s.isReading) {
        if (!s.ok) return false;
        if (v > playerType.hi[f]) return s.fail('field value out of range');
        fr.player[f] = v;
      }
    }
    const same = s.bool(prevFrame !== null && sameView(fr.view, prevFrame.view, schema));
    if (same) {
      if (prevFrame === null) return s.fail('killcam view repeats before its first frame');
      if (s.isReading) fr.view = prevFrame.view;
    } else {
      const count = s.varuint(fr.view.length, schema.maxEntities);
      if (!s.ok) return false;
      viewEntities += count;
      if (viewEntities > KILLCAM_MAX_VIEW_ENTITIES) return s.fail('killcam view too large');
      for (let j = 0; j < count && s.ok; j++) {
        const v: ViewEntity = s.isReading
          ? {
              entity: 0,
              typeId: 0,
              inA: false,
              inB: false,
              parityA: 0,
              parityB: 0,
              a: new Int32Array(0),
              b: new Int32Array(0),
            }
          : fr.view[j];
        serializeViewEntity(s, v, schema, prevView);
        if (s.isReading) fr.view.push(v);
      }
      prevView = new Map(fr.view.map((v) => [v.entity, v]));
    }
    if (s.isReading && s.ok) k.frames.push(fr);
    prevFrame = fr;
  }
  return s.ok;
}

/** View entities a killcam lists (a frame that repeats the previous view, the same array, lists none). */
export function killcamViewEntities(k: Killcam): number {
  let count = 0;
  for (let i = 0; i < k.frames.length; i++) {
    if (i === 0 || k.frames[i].view !== k.frames[i - 1].view) count += k.frames[i].view.length;
  }
  return count;
}

export function createKillcam(): Killcam {
  return { killerSlot: 0, victimSlot: 0, killerEntity: 0, victimEntity: 0, playerType: 0, frames: [] };
}

/** The END chunk: how many TICK chunks the file holds and the last tick. */
export interface DemoEnd {
  ticks: number;
  lastTick: number;
}

export function serializeDemoEnd(s: BitStream, e: DemoEnd): boolean {
  e.ticks = s.uint(e.ticks, 32);
  e.lastTick = s.uint(e.lastTick, 32);
  return s.ok;
}

/** Why a demo file was refused. */
export type DemoProblem =
  | 'not a demo'
  | 'unsupported version'
  | 'bad header'
  | 'header checksum mismatch'
  | 'wrong game'
  | 'truncated'
  | 'chunk checksum mismatch'
  | 'unknown chunk'
  | 'chunk too large'
  | 'bad chunk'
  | 'ticks out of order'
  | 'bad snapshot'
  | 'data after end';

/** A demo refused: the problem, where (byte offset), and a message that names both. */
export interface DemoFailure {
  ok: false;
  problem: DemoProblem;
  offset: number;
  message: string;
}

export function demoFailure(problem: DemoProblem, offset: number, detail: string): DemoFailure {
  return { ok: false, problem, offset, message: `demo refused: ${problem} at byte ${offset}: ${detail}` };
}

/** One chunk's place in the file. */
export interface DemoChunk {
  kind: number;
  /** Byte offset of the payload and its length. */
  offset: number;
  length: number;
}

/** A demo's container read and checked: its header and its chunks in order (END excluded). */
export interface DemoContainer {
  ok: true;
  version: number;
  header: DemoHeader;
  chunks: DemoChunk[];
  end: DemoEnd;
}

function u16(b: Uint8Array, o: number): number {
  return b[o] | (b[o + 1] << 8);
}

function u32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

function putU16(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
}

function putU32(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = (v >>> 24) & 0xff;
}

/** The file's first bytes: magic, version, header, header CRC. */
export function encodeDemoPreamble(header: DemoHeader): Uint8Array {
  const s = new BitStream(DEMO_MAX_HEADER);
  s.beginWrite();
  const h = { ...header };
  if (!serializeDemoHeader(s, h)) throw new RangeError(`demo header does not fit: ${s.error}`);
  const body = s.bytes;
  const out = new Uint8Array(DEMO_PREAMBLE_BYTES + body.length + 4);
  for (let i = 0; i < 8; i++) out[i] = DEMO_MAGIC.charCodeAt(i);
  putU16(out, 8, DEMO_VERSION);
  putU16(out, 10, body.length);
  out.set(body, DEMO_PREAMBLE_BYTES);
  putU32(out, DEMO_PREAMBLE_BYTES + body.length, crc32(out, 0, DEMO_PREAMBLE_BYTES + body.length));
  return out;
}

/** One chunk: kind, length, payload, CRC. */
export function encodeDemoChunk(kind: number, payload: Uint8Array): Uint8Array {
  if (payload.length > DEMO_MAX_CHUNK) {
    throw new RangeError(`demo chunk of ${payload.length} bytes is over the limit of ${DEMO_MAX_CHUNK}`);
  }
  const out = new Uint8Array(DEMO_CHUNK_OVERHEAD + payload.length);
  out[0] = kind;
  putU32(out, 1, payload.length);
  out.set(payload, 5);
  putU32(out, 5 + payload.length, crc32(out, 0, 5 + payload.length));
  return out;
}

/**
 * Reads and checks a demo's container: magic, version, header and its CRC, the game's schema
 * hash (when `schemaHash` is given), every chunk's length, kind and CRC, and the END chunk that
 * closes the file. Never throws: a file it refuses comes back as a DemoFailure naming the problem.
 */
export function readDemoContainer(bytes: Uint8Array, schemaHash?: number): DemoContainer | DemoFailure {
  if (bytes.length < DEMO_PREAMBLE_BYTES) {
    if (!startsWithMagic(bytes)) return demoFailure('not a demo', 0, 'the file does not start with BKSTDEMO');
    return demoFailure(
      'truncated',
      bytes.length,
      `the file ends inside its ${DEMO_PREAMBLE_BYTES}-byte preamble`,
    );
  }
  if (!startsWithMagic(bytes)) return demoFailure('not a demo', 0, 'the file does not start with BKSTDEMO');
  const version = u16(bytes, 8);
  if (version !== DEMO_VERSION) {
    return demoFailure('unsupported version', 8, `version ${version}, this reader reads ${DEMO_VERSION}`);
  }
  const headerBytes = u16(bytes, 10);
  if (headerBytes === 0 || headerBytes > DEMO_MAX_HEADER) {
    return demoFailure('bad header', 10, `header length ${headerBytes} is outside 1..${DEMO_MAX_HEADER}`);
  }
  const headerEnd = DEMO_PREAMBLE_BYTES + headerBytes;
  if (bytes.length < headerEnd + 4) {
    return demoFailure('truncated', bytes.length, `the file ends inside its ${headerBytes}-byte header`);
  }
  if (crc32(bytes, 0, headerEnd) !== u32(bytes, headerEnd)) {
    return demoFailure('header checksum mismatch', headerEnd, 'the header is corrupt');
  }
  const s = new BitStream(0);
  s.beginRead(bytes.subarray(DEMO_PREAMBLE_BYTES, headerEnd));
  const header: DemoHeader = { schemaHash: 0, tickRate: 0, keyframeInterval: 0, startTick: 0, gameName: '' };
  if (!serializeDemoHeader(s, header)) {
    return demoFailure('bad header', DEMO_PREAMBLE_BYTES, s.error);
  }
  if (schemaHash !== undefined && header.schemaHash !== schemaHash >>> 0) {
    return demoFailure(
      'wrong game',
      DEMO_PREAMBLE_BYTES,
      `recorded with schema hash ${hex(header.schemaHash)} (${header.gameName}), this game's is ${hex(schemaHash >>> 0)}`,
    );
  }
  const chunks: DemoChunk[] = [];
  let at = headerEnd + 4;
  for (let index = 0; ; index++) {
    if (at + 5 > bytes.length) {
      return demoFailure(
        'truncated',
        bytes.length,
        at === bytes.length
          ? `the file ends after ${index} chunks without its end chunk (the recording did not finish)`
          : `the file ends inside the head of chunk ${index}`,
      );
    }
    const kind = bytes[at];
    const length = u32(bytes, at + 1);
    if (length > DEMO_MAX_CHUNK) {
      return demoFailure(
        'chunk too large',
        at + 1,
        `chunk ${index} claims ${length} bytes (limit ${DEMO_MAX_CHUNK})`,
      );
    }
    if (at + DEMO_CHUNK_OVERHEAD + length > bytes.length) {
      return demoFailure('truncated', bytes.length, `the file ends inside chunk ${index} (${length} bytes)`);
    }
    if (crc32(bytes, at, at + 5 + length) !== u32(bytes, at + 5 + length)) {
      return demoFailure('chunk checksum mismatch', at, `chunk ${index} is corrupt`);
    }
    if (kind !== CHUNK_TICK && kind !== CHUNK_KILLCAM && kind !== CHUNK_END) {
      return demoFailure('unknown chunk', at, `chunk ${index} has kind ${kind}`);
    }
    const payloadAt = at + 5;
    at += DEMO_CHUNK_OVERHEAD + length;
    if (kind === CHUNK_END) {
      s.beginRead(bytes.subarray(payloadAt, payloadAt + length));
      const end: DemoEnd = { ticks: 0, lastTick: 0 };
      if (!serializeDemoEnd(s, end)) return demoFailure('bad chunk', payloadAt, `end chunk: ${s.error}`);
      if (at !== bytes.length) {
        return demoFailure('data after end', at, `${bytes.length - at} bytes follow the end chunk`);
      }
      return { ok: true, version, header, chunks, end };
    }
    chunks.push({ kind, offset: payloadAt, length });
  }
}

function startsWithMagic(bytes: Uint8Array): boolean {
  const n = Math.min(8, bytes.length);
  for (let i = 0; i < n; i++) if (bytes[i] !== DEMO_MAGIC.charCodeAt(i)) return false;
  return n === 8;
}

function hex(v: number): string {
  return `0x${v.toString(16).padStart(8, '0')}`;
}

/**
 * A killcam travels to the victim as reliable game messages (the game routes them by their
 * first byte), each: tag `KILLCAM_MESSAGE_TAG` (1 byte), killcam id (2, little-endian), part
 * index (2), part count (2), then its share of serializeKillcam's bytes.
 */
export const KILLCAM_MESSAGE_TAG = 0x4b;
export const KILLCAM_MESSAGE_HEAD = 7;
/** Largest killcam sent as messages, bytes. */
export const KILLCAM_MAX_BYTES = 1 << 20;

/** Splits a killcam's bytes into messages of at most `maxMessageBytes` (with their head). */
export function killcamMessages(bytes: Uint8Array, id: number, maxMessageBytes: number): Uint8Array[] {
  const room = maxMessageBytes - KILLCAM_MESSAGE_HEAD;
  if (!(room >= 1))
    throw new RangeError(`killcamMessages: maxMessageBytes must be over ${KILLCAM_MESSAGE_HEAD}`);
  if (bytes.length > KILLCAM_MAX_BYTES)
    throw new RangeError(`killcam of ${bytes.length} bytes is over ${KILLCAM_MAX_BYTES}`);
  const count = Math.max(1, Math.ceil(bytes.length / room));
  const out: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const part = bytes.subarray(i * room, Math.min(bytes.length, (i + 1) * room));
    const m = new Uint8Array(KILLCAM_MESSAGE_HEAD + part.length);
    m[0] = KILLCAM_MESSAGE_TAG;
    putU16(m, 1, id & 0xffff);
    putU16(m, 3, i);
    putU16(m, 5, count);
    m.set(part, KILLCAM_MESSAGE_HEAD);
    out.push(m);
  }
  return out;
}

/**
 * Puts a killcam's messages back together (they arrive in order: reliable messages). A message
 * of another killcam starts over; a malformed one (wrong tag, index out of order, count past the
 * limit) is refused and resets. `receive` returns the whole killcam's bytes on its last part.
 */
export class KillcamAssembler {
  refused = 0;
  private id = -1;
  private next = 0;
  private count = 0;
  private total = 0;
  private parts: Uint8Array[] = [];

  receive(message: Uint8Array): Uint8Array | null {
    if (message.length < KILLCAM_MESSAGE_HEAD || message[0] !== KILLCAM_MESSAGE_TAG) return this.refuse();
    const id = u16(message, 1);
    const index = u16(message, 3);
    const count = u16(message, 5);
    if (index === 0) {
      this.id = id;
      this.next = 0;
      this.count = count;
      this.total = 0;
      this.parts = [];
    }
    if (id !== this.id || index !== this.next || count !== this.count || count === 0) return this.refuse();
    this.total += message.length - KILLCAM_MESSAGE_HEAD;
    if (this.total > KILLCAM_MAX_BYTES) return this.refuse();
    this.parts.push(message.subarray(KILLCAM_MESSAGE_HEAD));
    this.next++;
    if (this.next < count) return null;
    const total = this.parts.reduce((n, p) => n + p.length, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    this.id = -1;
    this.parts = [];
    return out;
  }

  private refuse(): null {
    this.refused++;
    this.id = -1;
    this.parts = [];
    return null;
  }
}
