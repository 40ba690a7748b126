// The payloads of connected data packets: the client's command run and the server's frame
// header (its tick, the last command it ran, the owner's player state, and effect events).
//
// Client packet payload:
//   +-------------------+-------+--------------------------------------------------+
//   | resetBaseline     | 1     | the client lost its snapshot baseline: send full  |
//   | commandCount      | 7     | 0..64                                            |
//   | firstSequence     | 32    | sequence of the first command (if count > 0)     |
//   | commands          | var   | each delta-encoded against the previous one      |
//   +-------------------+-------+--------------------------------------------------+
//
// Server packet payload (the entity snapshot follows; layout in snapshot.ts):
//   +-------------------+-------+--------------------------------------------------+
//   | serverTick        | 32    | tick the frame was built at                      |
//   | choked            | 8     | frames held back by the rate since the last one  |
//   | hasPlayer         | 1     | the client owns a player                         |
//   | ackedCommand      | 32    | last command executed (if hasPlayer)             |
//   | playerState       | var   | the game's player serialize (if hasPlayer)       |
//   | eventCount        | 6     | 0..63 effect events of other players             |
//   | event: type       | 8     | game-defined                                     |
//   | event: source     | 16    | slot/entity that caused it                       |
//   | event: p0..p3     | 4x32  | float32 parameters                               |
//   +-------------------+-------+--------------------------------------------------+

import type { BitStream } from './bitstream.ts';
import { createUserCommand, serializeUserCommand, type UserCommand } from './usercmd.ts';

export const MAX_COMMANDS_PER_PACKET = 64;
export const MAX_EVENTS_PER_FRAME = 63;

const ZERO_COMMAND = createUserCommand();

/** Flags at the start of every client packet payload. */
export interface ClientFlags {
  /** The client could not decode a snapshot: the server should send the next against nothing. */
  resetBaseline: boolean;
}

export function serializeClientFlags(s: BitStream, f: ClientFlags): boolean {
  f.resetBaseline = s.bool(f.resetBaseline);
  return s.ok;
}

/** Reads or writes a run of consecutive commands. `cmds[0..count)` hold them, oldest first. */
export function serializeCommandRun(s: BitStream, cmds: UserCommand[], run: { count: number }): boolean {
  run.count = s.int(run.count, 0, MAX_COMMANDS_PER_PACKET);
  if (run.count === 0 || !s.ok) return s.ok;
  if (run.count > cmds.length) return s.fail('command run longer than the buffer');
  const first = s.uint(cmds[0].sequence, 32);
  for (let i = 0; i < run.count && s.ok; i++) {
    const c = cmds[i];
    c.sequence = first + i;
    serializeUserCommand(s, c, i === 0 ? ZERO_COMMAND : cmds[i - 1]);
  }
  if (s.ok && first + run.count - 1 > 0xffffffff) return s.fail('command sequence out of range');
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

/** Bits of one event on the wire. */
export const WIRE_EVENT_BITS = 8 + 16 + 4 * 32;

export function serializeWireEvent(s: BitStream, e: WireEvent): boolean {
  e.type = s.uint(e.type, 8);
  e.source = s.uint(e.source, 16);
  e.p0 = s.float32(e.p0);
  e.p1 = s.float32(e.p1);
  e.p2 = s.float32(e.p2);
  e.p3 = s.float32(e.p3);
  return s.ok;
}

/** The fixed part of a server frame; the player state and events follow (see the layout). */
export interface FrameHeader {
  serverTick: number;
  /** Frames the server held back by the client's rate since the previous frame (saturates). */
  choked: number;
  hasPlayer: boolean;
  ackedCommand: number;
}

export function serializeFrameHeader(s: BitStream, h: FrameHeader): boolean {
  h.serverTick = s.uint(h.serverTick, 32);
  h.choked = s.uint(h.choked, 8);
  h.hasPlayer = s.bool(h.hasPlayer);
  h.ackedCommand = h.hasPlayer ? s.uint(h.ackedCommand, 32) : 0;
  return s.ok;
}
