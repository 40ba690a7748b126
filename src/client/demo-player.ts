// The demo player (browser-safe): opens a demo file, checking every byte of it before it plays,
// and decodes it tick by tick with the client's own snapshot reader and remote view, so a demo
// is drawn exactly as a connected client draws the match; seeks from the nearest keyframe.
// Also draws a killcam's frames: the view each of the killer's commands named, with the same
// drawEntity the killer's client drew with.

import { BitStream } from '../protocol/bitstream.ts';
import {
  CHUNK_KILLCAM,
  createDemoTickHead,
  createKillcam,
  type DemoCodecGame,
  type DemoEnd,
  type DemoFailure,
  type DemoHeader,
  type DemoRosterEntry,
  type DemoTickHead,
  demoFailure,
  KILLCAM_MAX_VIEW_ENTITIES,
  type Killcam,
  type KillcamFrame,
  killcamViewEntities,
  readDemoContainer,
  serializeKillcam,
  serializeTickHead,
} from '../protocol/demo.ts';
import type { GameSchema } from '../protocol/schema.ts';
import { drawEntity } from '../sim/blend.ts';
import { gameSchemaHash } from '../sim/game.ts';
import { SnapshotReader } from './snapshot-reader.ts';
import { RemoteView } from './view.ts';

/** One recorded tick: its head (events, shots, kills, roster) and where its snapshot is. */
export interface DemoTick {
  readonly tick: number;
  readonly head: DemoTickHead;
  /** Its snapshot was written against nothing: decoding may start here. */
  readonly keyframe: boolean;
  /** Byte offset and length of its snapshot in the file. */
  readonly snapshotOffset: number;
  readonly snapshotLength: number;
  /** The roster in force at this tick (shared with the ticks around it until it changes). */
  readonly roster: readonly DemoRosterEntry[];
}

/** A killcam the demo holds, and the tick after which it was recorded. */
export interface DemoKillcam {
  readonly afterTick: number;
  readonly killcam: Killcam;
}

/**
 * A demo opened and checked. `seek(tick)` decodes the world at a tick into `snapshots` (the
 * entities, their values and parities, as a client's reader holds them) and `draw(renderTick)`
 * blends between recorded ticks into `view`, as a client's remote view does.
 */
export class DemoPlayer {
  readonly header: DemoHeader;
  readonly end: DemoEnd;
  readonly ticks: readonly DemoTick[];
  readonly killcams: readonly DemoKillcam[];
  readonly snapshots: SnapshotReader;
  readonly view: RemoteView;
  readonly schema: GameSchema;
  /** Index in `ticks` of the tick decoded into `snapshots` (-1: none yet). */
  position = -1;
  /** Snapshots decoded since the demo opened (a seek costs those from its keyframe on). */
  decodedTicks = 0;
  private readonly bytes: Uint8Array;
  private readonly stream = new BitStream(0);

  private constructor(
    bytes: Uint8Array,
    game: DemoCodecGame,
    header: DemoHeader,
    end: DemoEnd,
    ticks: DemoTick[],
    killcams: DemoKillcam[],
  ) {
    this.bytes = bytes;
    this.header = header;
    this.end = end;
    this.ticks = ticks;
    this.killcams = killcams;
    this.schema = game.entities;
    this.snapshots = new SnapshotReader(game.entities);
    // Every tick is recorded: the view interpolates, never extrapolates past the last one.
    this.view = new RemoteView(game.entities, this.snapshots, { maxExtrapolationMs: 0 });
  }

  /**
   * Opens a demo of `game` (its entity and event tables must be those recorded: the schema hash
   * is checked). Every chunk is checked and decoded once, so a file that opens plays to its end.
   * Never throws on any bytes: a refused file comes back as a DemoFailure naming the problem.
   */
  static open(bytes: Uint8Array, game: DemoCodecGame): DemoPlayer | DemoFailure {
    const container = readDemoContainer(bytes, gameSchemaHash(game));
    if (!container.ok) return container;
    const s = new BitStream(0);
    const reader = new SnapshotReader(game.entities);
    const ticks: DemoTick[] = [];
    const killcams: DemoKillcam[] = [];
    // The killcams' view entities over the whole file: each is an object, and one can cost as
    // little as 13 bits, so they are bounded by the file's size (an honest entity's new values
    // cost far more than 8 bytes' worth of others).
    const maxViewEntities = Math.max(KILLCAM_MAX_VIEW_ENTITIES, Math.floor(bytes.length / 8));
    let viewEntities = 0;
    let roster: readonly DemoRosterEntry[] = [];
    let lastTick = -1;
    let lastKeyframe = -1;
    for (let i = 0; i < container.chunks.length; i++) {
      const chunk = container.chunks[i];
      const payload = bytes.subarray(chunk.offset, chunk.offset + chunk.length);
      s.beginRead(payload);
      if (chunk.kind === CHUNK_KILLCAM) {
        const killcam = createKillcam();
        if (!serializeKillcam(s, killcam, game.entities) || s.bitsRemaining >= 8) {
          return demoFailure('bad chunk', chunk.offset, `killcam chunk ${i}: ${s.error || 'trailing bytes'}`);
        }
        viewEntities += killcamViewEntities(killcam);
        if (viewEntities > maxViewEntities) {
          return demoFailure(
            'bad chunk',
            chunk.offset,
            `killcam chunk ${i}: the killcams list ${viewEntities} view entities, more than ${maxViewEntities} for a file of ${bytes.length} bytes`,
          );
        }
        killcams.push({ afterTick: lastTick, killcam });
        continue;
      }
      const head = createDemoTickHead();
      if (!serializeTickHead(s, head, game)) {
        return demoFailure('bad chunk', chunk.offset, `tick chunk ${i}: ${s.error}`);
      }
      if (lastTick >= 0 && head.tick <= lastTick) {
        return demoFailure('ticks out of order', chunk.offset, `tick ${head.tick} follows tick ${lastTick}`);
      }
      const snapshotAt = (s.bitsProcessed + 7) >>> 3;
      s.beginRead(payload.subarray(snapshotAt));
      if (!reader.read(s, head.tick)) {
        const reason = Object.entries(reader.stats.dropped).find(([, n]) => n > 0)?.[0] ?? 'malformed';
        return demoFailure('bad snapshot', chunk.offset + snapshotAt, `tick ${head.tick}: ${reason}`);
      }
      if (s.bitsRemaining >= 8) {
        return demoFailure('bad chunk', chunk.offset, `tick ${head.tick}: bytes after the snapshot`);
      }
      // A seek decodes from the keyframe at or before its tick: no tick may need a frame before it.
      if (reader.baselineTick < 0) lastKeyframe = head.tick;
      else if (reader.baselineTick < lastKeyframe) {
        return demoFailure(
          'bad snapshot',
          chunk.offset + snapshotAt,
          `tick ${head.tick}: its baseline, tick ${reader.baselineTick}, is before the keyframe at tick ${lastKeyframe}`,
        );
      }
      if (head.roster !== null) roster = head.roster;
      ticks.push({
        tick: head.tick,
        head,
        keyframe: reader.baselineTick < 0,
        snapshotOffset: chunk.offset + snapshotAt,
        snapshotLength: chunk.length - snapshotAt,
        roster,
      });
      lastTick = head.tick;
    }
    if (ticks.length !== container.end.ticks || (ticks.length > 0 && lastTick !== container.end.lastTick)) {
      return demoFailure(
        'bad chunk',
        bytes.length,
        `the end chunk counts ${container.end.ticks} ticks up to ${container.end.lastTick}, the file holds ${ticks.length} up to ${lastTick}`,
      );
    }
    return new DemoPlayer(bytes, game, container.header, container.end, ticks, killcams);
  }

  get firstTick(): number {
    return this.ticks.length > 0 ? this.ticks[0].tick : -1;
  }

  get lastTick(): number {
    return this.ticks.length > 0 ? this.ticks[this.ticks.length - 1].tick : -1;
  }

  /** The tick decoded into `snapshots`, -1 before any. */
  get tick(): number {
    return this.position < 0 ? -1 : this.ticks[this.position].tick;
  }

  /** Index in `ticks` of the newest recorded tick at or before `tick` (-1: before the first). */
  indexOf(tick: number): number {
    let lo = 0;
    let hi = this.ticks.length - 1;
    if (hi < 0 || tick < this.ticks[0].tick) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.ticks[mid].tick <= tick) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Decodes the world at the newest recorded tick at or before `tick` (the first when before it):
   * forward from where it is when that is on the way, else from the keyframe at or before it.
   * Returns the tick decoded.
   */
  seek(tick: number): number {
    const target = Math.max(0, this.indexOf(tick));
    if (this.ticks.length === 0) return -1;
    if (target === this.position) return this.tick;
    let from = this.position + 1;
    if (target < this.position || this.position < 0 || this.keyframeAtOrBefore(target) > this.position) {
      from = this.keyframeAtOrBefore(target);
      this.snapshots.reset();
      this.view.reset();
    }
    for (let i = from; i <= target; i++) this.decode(i);
    return this.tick;
  }

  /** Decodes the next recorded tick; false at the end. */
  step(): boolean {
    if (this.position + 1 >= this.ticks.length) return false;
    this.decode(this.position + 1);
    return true;
  }

  /**
   * Draws the world at `renderTick` (fractional server ticks) into `view`: decodes up to the
   * first recorded tick at or after it and blends, as a client's remote view does.
   */
  draw(renderTick: number): void {
    const i = this.indexOf(Math.ceil(renderTick));
    const upTo = i < 0 ? 0 : i < this.ticks.length - 1 && this.ticks[i].tick < renderTick ? i + 1 : i;
    this.seek(this.ticks[upTo]?.tick ?? -1);
    this.view.update(Math.min(renderTick, this.lastTick), 1000 / this.header.tickRate);
  }

  /** The entity of the player in `slot` at the decoded tick, -1 when that slot has none. */
  entityOf(slot: number): number {
    if (this.position < 0) return -1;
    for (const r of this.ticks[this.position].roster) if (r.slot === slot) return r.entity;
    return -1;
  }

  private keyframeAtOrBefore(index: number): number {
    let i = index;
    while (i > 0 && !this.ticks[i].keyframe) i--;
    return i;
  }

  private decode(index: number): void {
    const t = this.ticks[index];
    const s = this.stream;
    s.beginRead(this.bytes.subarray(t.snapshotOffset, t.snapshotOffset + t.snapshotLength));
    // Checked when the file was opened: this read cannot fail.
    this.snapshots.read(s, t.tick);
    this.view.onFrame(t.tick);
    this.position = index;
    this.decodedTicks++;
  }
}

/**
 * Draws one killcam frame: every entity the killer's command named as its client drew it (its
 * values at `values[e * schema.stride ..]`, its type at `types[e]`), listed in `list`; returns
 * how many. The killer's own entity is `frame.player` (stored values; decode with decodeNumber).
 */
export function drawKillcamFrame(
  schema: GameSchema,
  frame: KillcamFrame,
  values: Float64Array,
  types: Uint8Array,
  list: Uint16Array,
): number {
  const f = frame.command.viewFraction;
  const stride = schema.stride;
  let count = 0;
  for (const v of frame.view) {
    const drawn = drawEntity(
      schema.types[v.typeId],
      v.inA ? v.a : null,
      0,
      v.parityA,
      v.inB ? v.b : null,
      0,
      v.parityB,
      f,
      schema.teleportDistance,
      values,
      v.entity * stride,
    );
    if (!drawn) continue;
    types[v.entity] = v.typeId;
    list[count++] = v.entity;
  }
  return count;
}

/** Decodes a killcam sent on its own (serializeKillcam's bytes); null when the bytes are bad. */
export function decodeKillcam(bytes: Uint8Array, schema: GameSchema): Killcam | null {
  const s = new BitStream(0);
  s.beginRead(bytes);
  const k = createKillcam();
  if (!serializeKillcam(s, k, schema) || s.bitsRemaining >= 8) return null;
  return k;
}
