// The owner's player state on the wire, delta-encoded against the state carried by a frame the
// client acknowledged: both ends keep, per frame tick, the game's own serialization of the state
// (PlayerDefinition.serialize) and the command it followed, and a frame sends only the bytes of
// that serialization that changed, as XOR masks. Exact whatever the game's state: the client
// rebuilds the very bits the server serialized and reads them with the game's serialize.
//
// Player part of a server frame (after the frame header's tick and choke):
//   +--------------------+-----------------+--------------------------------------------------+
//   | playerBaseline     | expGolomb       | frame tick - baseline frame tick; 0: no baseline  |
//   | ackedCommand       | 32, or expGolomb| none: the command; baseline: command - its command |
//   | state              | var             | none: the game's serialize                       |
//   | changedBytes       | int [0, bytes]  | baseline: how many bytes differ                   |
//   | skip, mask         | expGolomb + 8   | per byte that differs: bytes since the previous    |
//   |                    |                 | one that differs (or the start), then its XOR mask |
//   +--------------------+-----------------+--------------------------------------------------+
// `bytes` is the baseline state's serialized length in bytes; a state whose serialization has
// another length in bits than its baseline's goes without a baseline.

import { BitStream, serializeExpGolomb } from './bitstream.ts';

/** Largest serialized player state that can serve as a baseline, in bytes. */
export const PLAYER_STATE_MAX_BYTES = 256;

/** Largest playerBaseline a reader takes (larger: 'malformed'), and largest ackedCommand step. */
const DELTA_MAX = 0xffff;
const ACKED_DELTA_MAX = 0x7ffffffe;

/** Why a frame's player part was not read (its stream error). */
export type PlayerStateDropReason =
  | 'player baseline too old'
  | 'player baseline unknown'
  | 'player state length';

class Slot {
  tick = -1;
  acked = 0;
  bits = -1;
  readonly bytes = new Uint8Array(PLAYER_STATE_MAX_BYTES);
}

/** The game's serialize of a state (a method: a history of a narrower state is still one of a wider). */
interface StateCodec<P> {
  serialize(s: BitStream, state: P): boolean;
}

/** What the player part of a frame reads and writes. */
export interface PlayerFrame<P> {
  serverTick: number;
  ackedCommand: number;
  /** Tick of the frame whose state this one is delta-encoded against; -1: none. */
  playerBaseline: number;
  player: P;
}

/**
 * One end's record of the player states its frames carried, by frame tick (the last
 * `frameHistory`), and the codec of a frame's player part against them. Allocation-free after
 * construction.
 */
export class PlayerStateHistory<P> {
  /** Set when a frame named a baseline this end does not hold; cleared by the next read. */
  needsFullUpdate = false;
  private readonly codec: StateCodec<P>;
  private readonly slots: Slot[];
  private readonly mask: number;
  private readonly scratch = new BitStream(0);
  private readonly work = new Uint8Array(PLAYER_STATE_MAX_BYTES);

  constructor(serialize: (s: BitStream, state: P) => boolean, frameHistory: number) {
    if (!Number.isInteger(frameHistory) || frameHistory < 2 || (frameHistory & (frameHistory - 1)) !== 0) {
      throw new RangeError(
        `PlayerStateHistory: frameHistory must be a power of two >= 2, got ${frameHistory}`,
      );
    }
    this.codec = { serialize };
    this.slots = [];
    for (let i = 0; i < frameHistory; i++) this.slots.push(new Slot());
    this.mask = frameHistory - 1;
  }

  /** Forgets every state (a new connection). */
  reset(): void {
    for (const slot of this.slots) slot.tick = -1;
    this.needsFullUpdate = false;
  }

  /** True while the state of frame `tick` is held. */
  has(tick: number): boolean {
    return tick >= 0 && this.slots[tick & this.mask].tick === tick;
  }

  /**
   * The writer's side: records `state` (after command `acked`) as frame `tick`'s, in the game's
   * serialization. A state too long to hold is recorded as none (its frames go without baseline).
   */
  record(tick: number, state: P, acked: number): void {
    const slot = this.slots[tick & this.mask];
    slot.tick = tick;
    slot.acked = acked;
    const s = this.scratch.beginWrite(PLAYER_STATE_MAX_BYTES, slot.bytes);
    slot.bits = this.codec.serialize(s, state) && s.ok ? s.bitsProcessed : -1;
    slot.bytes.fill(0, (s.bitsProcessed + 7) >>> 3);
  }

  /**
   * Writes, measures or reads the player part of frame `f` (layout above). Writing and measuring
   * need the frame's state recorded first; they fall back to no baseline when `f.playerBaseline`
   * is not held, too old, has another length or a later command (and set it to -1). Reading
   * records what it read; it fails on a baseline it does not hold (setting needsFullUpdate), a
   * length that does not match, or the game's serialize failing.
   */
  serialize(s: BitStream, f: PlayerFrame<P>): boolean {
    const tick = f.serverTick;
    const slot = this.slots[tick & this.mask];
    if (!s.isReading) {
      let base: Slot | null = null;
      const b = f.playerBaseline;
      if (b >= 0 && b < tick && tick - b < this.slots.length && this.has(b) && slot.tick === tick) {
        const candidate = this.slots[b & this.mask];
        if (candidate.bits >= 0 && candidate.bits === slot.bits && candidate.acked <= f.ackedCommand)
          base = candidate;
      }
      if (base === null) {
        f.playerBaseline = -1;
        serializeExpGolomb(s, 0, DELTA_MAX);
        s.uint(f.ackedCommand, 32);
        return this.codec.serialize(s, f.player) && s.ok;
      }
      serializeExpGolomb(s, tick - base.tick, DELTA_MAX);
      serializeExpGolomb(s, f.ackedCommand - base.acked, ACKED_DELTA_MAX);
      const n = (base.bits + 7) >>> 3;
      let changed = 0;
      for (let i = 0; i < n; i++) if (slot.bytes[i] !== base.bytes[i]) changed++;
      s.int(changed, 0, n);
      let next = 0;
      for (let i = 0; i < n; i++) {
        const x = slot.bytes[i] ^ base.bytes[i];
        if (x === 0) continue;
        serializeExpGolomb(s, i - next, n);
        s.uint(x, 8);
        next = i + 1;
      }
      return s.ok;
    }
    const delta = serializeExpGolomb(s, 0, DELTA_MAX);
    if (!s.ok) return false;
    if (delta === 0) {
      f.playerBaseline = -1;
      f.ackedCommand = s.uint(0, 32);
      if (!s.ok || !this.codec.serialize(s, f.player)) return false;
      this.keep(tick, f);
      return true;
    }
    if (delta >= this.slots.length) {
      this.needsFullUpdate = true;
      return s.fail('player baseline too old');
    }
    const baseTick = tick - delta;
    if (!this.has(baseTick)) {
      this.needsFullUpdate = true;
      return s.fail('player baseline unknown');
    }
    const base = this.slots[baseTick & this.mask];
    if (base.bits < 0) return s.fail('player state length');
    f.playerBaseline = baseTick;
    const acked = base.acked + serializeExpGolomb(s, 0, ACKED_DELTA_MAX);
    if (!s.ok) return false;
    if (acked > 0xffffffff) return s.fail('command sequence out of range');
    f.ackedCommand = acked;
    const n = (base.bits + 7) >>> 3;
    const changed = s.int(0, 0, n);
    const work = this.work;
    for (let i = 0; i < n; i++) work[i] = base.bytes[i];
    let next = 0;
    for (let k = 0; k < changed; k++) {
      const i = next + serializeExpGolomb(s, 0, n);
      const x = s.uint(0, 8);
      if (!s.ok) return false;
      if (i >= n || x === 0) return s.fail('malformed');
      work[i] ^= x;
      next = i + 1;
    }
    if (!s.ok) return false;
    const r = this.scratch.beginRead(work, n);
    if (!this.codec.serialize(r, f.player) || !r.ok || r.bitsProcessed !== base.bits) {
      return s.fail(r.ok ? 'player state length' : r.error || 'malformed');
    }
    this.keep(tick, f);
    return true;
  }

  /** The reader's side: records the state just read as frame `tick`'s, unless a newer frame holds its slot. */
  private keep(tick: number, f: PlayerFrame<P>): void {
    const slot = this.slots[tick & this.mask];
    if (slot.tick > tick) return;
    this.record(tick, f.player, f.ackedCommand);
    this.needsFullUpdate = false;
  }
}
