// The spectator's frame: what a client that joined as a spectator (no player, no commands) gets
// instead of a player's frame. The server encodes it once per stream (one per spectator delay)
// and every spectator of the stream gets the same bytes, byte-aligned in its packet's payload.
//
// Spectator frame (after zero bits to the next byte of the payload):
//   +-------------------+-------+--------------------------------------------------+
//   | serverTick        | 32    | the delayed tick the frame shows                 |
//   | liveTick          | 32    | the server's tick when it sent the frame         |
//   | eventCount        | 6     | 0..63 effect events of that tick                 |
//   | event             | var   | as in a server frame (frames.ts)                 |
//   | snapshot          | var   | the whole world (snapshot.ts), against the        |
//   |                   |       | newest frame every spectator of the stream has    |
//   +-------------------+-------+--------------------------------------------------+
// The spectator's packets carry only the client flags (resetBaseline) and their acks.

import type { BitStream } from './bitstream.ts';
import { type EventTable, MAX_EVENTS_PER_FRAME, serializeWireEvent, type WireEvent } from './frames.ts';

export interface SpectatorFrame {
  serverTick: number;
  liveTick: number;
  eventCount: number;
  readonly events: readonly WireEvent[];
  /** After a read: whether the snapshot decoded. */
  snapshotOk: boolean;
}

/**
 * The spectator frame, one function for write, read and measure (layout above). Returns false
 * when the header or events fail; the snapshot's own result is in `f.snapshotOk`.
 */
export function serializeSpectatorFrame(
  s: BitStream,
  f: SpectatorFrame,
  events: EventTable | null,
  serializeSnapshot: (s: BitStream, tick: number) => boolean,
): boolean {
  s.uint(0, (8 - (s.bitsProcessed & 7)) & 7);
  f.serverTick = s.uint(f.serverTick, 32);
  f.liveTick = s.uint(f.liveTick, 32);
  f.eventCount = s.int(f.eventCount, 0, MAX_EVENTS_PER_FRAME);
  for (let i = 0; i < f.eventCount && s.ok; i++) serializeWireEvent(s, f.events[i], events);
  if (!s.ok) return false;
  f.snapshotOk = serializeSnapshot(s, f.serverTick);
  return true;
}
