// Match routing on a shared port (browser-safe): the route header a client puts in front of each
// lifecycle packet it sends, naming the match it wants, and the client endpoint that adds it.
//
// Route header, in front of a whole lifecycle packet (connect request, challenge response,
// disconnect) that a client sends to a server hosting many matches:
//   +-----------+------+------------------------------------------------------------------+
//   | type      | 8    | MATCH_ROUTE_TYPE (0x4d): never the first byte of another packet  |
//   | match id  | 32   | little-endian, 1..2^32-1                                          |
//   | packet    | var  | the lifecycle packet, unchanged (its own type and checksum)       |
//   +-----------+------+------------------------------------------------------------------+
// Data packets carry no header: the server routes them by source address, which is bound to a
// match only once that match's connection layer accepted the address (a challenge answered
// from it). A route header can therefore never move an address that is connected: the router
// ignores the id of a bound address's packets and checks it equals the bound match.

import { PacketType } from './channel.ts';
import type { DatagramEndpoint, PacketHandler } from './transport.ts';
import { MAX_PACKET_BYTES } from './transport.ts';

/** The first byte of a routed lifecycle packet. */
export const MATCH_ROUTE_TYPE = 0x4d;
/** Bytes the route header adds in front of a lifecycle packet. */
export const MATCH_ROUTE_HEADER_BYTES = 5;
/** Largest match id (ids are 1..MAX_MATCH_ID; 0 names no match). */
export const MAX_MATCH_ID = 0xffffffff;

/** Throws a RangeError naming `where` unless `id` is an integer in 1..MAX_MATCH_ID. */
export function checkMatchId(where: string, id: number): void {
  if (!Number.isInteger(id) || id < 1 || id > MAX_MATCH_ID) {
    throw new RangeError(`${where}: a match id is an integer in 1..${MAX_MATCH_ID}, got ${String(id)}`);
  }
}

/**
 * The match id of a routed packet, or 0 when `data` is not one (another type, or too short to
 * carry a header and a packet type).
 */
export function readMatchRoute(data: Uint8Array): number {
  if (data.length <= MATCH_ROUTE_HEADER_BYTES || data[0] !== MATCH_ROUTE_TYPE) return 0;
  return (data[1] | (data[2] << 8) | (data[3] << 16) | (data[4] << 24)) >>> 0;
}

/** Writes the route header for `matchId` at the start of `out` (at least MATCH_ROUTE_HEADER_BYTES long). */
export function writeMatchRoute(out: Uint8Array, matchId: number): void {
  out[0] = MATCH_ROUTE_TYPE;
  out[1] = matchId & 0xff;
  out[2] = (matchId >>> 8) & 0xff;
  out[3] = (matchId >>> 16) & 0xff;
  out[4] = (matchId >>> 24) & 0xff;
}

/** A lifecycle packet's type byte (connect request through the reserved type). */
function isLifecycle(data: Uint8Array): boolean {
  return data.length > 0 && data[0] >= PacketType.ConnectRequest && data[0] <= PacketType.Reserved;
}

/**
 * A client endpoint that joins one match of a server hosting many: every lifecycle packet sent to
 * the server gets the route header naming `matchId`; everything else passes through unchanged.
 * Give it to GameClient in place of the endpoint it wraps.
 */
export class MatchClientEndpoint implements DatagramEndpoint {
  readonly matchId: number;
  /** Lifecycle packets that the header would have made longer than MAX_PACKET_BYTES, dropped. */
  droppedOversize = 0;
  private readonly inner: DatagramEndpoint;
  private readonly scratch = new Uint8Array(MAX_PACKET_BYTES);

  /** Throws a RangeError unless `matchId` is an integer in 1..MAX_MATCH_ID. */
  constructor(inner: DatagramEndpoint, matchId: number) {
    checkMatchId('MatchClientEndpoint', matchId);
    this.inner = inner;
    this.matchId = matchId;
    writeMatchRoute(this.scratch, matchId);
  }

  get address(): string {
    return this.inner.address;
  }

  /** Sends `data`, behind the route header when it is a lifecycle packet. */
  send(to: string, data: Uint8Array): void {
    if (!isLifecycle(data)) {
      this.inner.send(to, data);
      return;
    }
    const length = data.length + MATCH_ROUTE_HEADER_BYTES;
    if (length > MAX_PACKET_BYTES) {
      this.droppedOversize++;
      return;
    }
    this.scratch.set(data, MATCH_ROUTE_HEADER_BYTES);
    this.inner.send(to, this.scratch.subarray(0, length));
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.inner.poll(nowMs, onPacket);
  }

  close(): void | Promise<void> {
    return this.inner.close();
  }

  hostOf(address: string): string | null {
    return this.inner.hostOf?.(address) ?? null;
  }

  drop(address: string): void {
    this.inner.drop?.(address);
  }
}
