// The demo recorder: attached to a server through its hooks, it writes the match as a demo file
// (layout: src/protocol/demo.ts, SPEC.md) to a sink, one TICK chunk per server tick: the world
// through the snapshot codec (its own SnapshotWriter over the server's entity store, seeing every
// entity, each tick delta-encoded against the one before and a keyframe every
// keyframeInterval ticks), the effect events, the shots with the views they named and their
// verdicts, and the kills (with killcams when the game hands them in). Start and stop at any time.

import { BitStream } from '../protocol/bitstream.ts';
import {
  CHUNK_END,
  CHUNK_KILLCAM,
  CHUNK_TICK,
  createDemoShot,
  DEMO_LAG_MODES,
  DEMO_MAX_CHUNK,
  DEMO_MAX_EVENTS_PER_TICK,
  DEMO_MAX_KILLS_PER_TICK,
  DEMO_MAX_SHOT_EVENTS,
  DEMO_MAX_SHOTS_PER_TICK,
  type DemoKill,
  type DemoPose,
  type DemoShot,
  type DemoTickHead,
  encodeDemoChunk,
  encodeDemoPreamble,
  type Killcam,
  serializeDemoEnd,
  serializeKillcam,
  serializeTickHead,
} from '../protocol/demo.ts';
import { copyWireEvent, createWireEvent, type WireEvent } from '../protocol/frames.ts';
import { copyUserCommand, type UserCommand } from '../protocol/usercmd.ts';
import { drawEntity } from '../sim/blend.ts';
import { type GameDefinition, gameSchemaHash } from '../sim/game.ts';
import { vec3 } from '../sim/math.ts';
import type { EventCapture } from './events.ts';
import type { ServerHooks } from './hooks.ts';
import { NamedView, NamedViewBuilder } from './named-view.ts';
import type { GameServer, ServerClient } from './server.ts';
import { SnapshotWriter } from './snapshot-writer.ts';

export interface DemoRecorderConfig {
  /** Ticks from one keyframe to the next: how far a seek decodes at most. 0: five seconds' worth. */
  keyframeInterval: number;
}

export const DEFAULT_DEMO_RECORDER_CONFIG: DemoRecorderConfig = { keyframeInterval: 0 };

export interface DemoRecorderStats {
  ticks: number;
  keyframes: number;
  shots: number;
  kills: number;
  killcams: number;
  /** Bytes handed to the sink, and of them the snapshots'. */
  bytes: number;
  snapshotBytes: number;
  /** Effect events the server's log no longer held when the tick was written (never with a log of 1024). */
  eventsLost: number;
}

/** Where the demo's bytes go, in order (a file, a buffer, a spectator stream). */
export type DemoSink = (bytes: Uint8Array) => void;

/** Records a server's match as a demo file; pass `hooks` to the server (combineHooks). */
export class DemoRecorder<P, W> {
  readonly config: DemoRecorderConfig;
  readonly stats: DemoRecorderStats = {
    ticks: 0,
    keyframes: 0,
    shots: 0,
    kills: 0,
    killcams: 0,
    bytes: 0,
    snapshotBytes: 0,
    eventsLost: 0,
  };
  readonly hooks: ServerHooks<P, W>;
  private readonly game: GameDefinition<P, W>;
  private sink: DemoSink | null = null;
  private server: GameServer<P, W> | null = null;
  private writer: SnapshotWriter | null = null;
  private builder: NamedViewBuilder | null = null;
  private readonly stream: BitStream;
  private readonly head: DemoTickHead = { tick: 0, roster: null, events: [], shots: [], kills: [] };
  private readonly eventPool: WireEvent[] = [];
  private readonly shotPool: DemoShot[] = [];
  private readonly pendingKills: DemoKill[] = [];
  private readonly pendingKillcams: Killcam[] = [];
  private readonly namedView: NamedView;
  private readonly segment = { start: vec3(), end: vec3() };
  private keyframeInterval = 0;
  private lastKeyframe = -1;
  private eventCursor = 0;
  private rosterChanged = true;
  private lastTick = 0;
  /** Bits of the largest snapshot entry of any type (a create with every field). */
  private readonly entryBits: number;

  constructor(game: GameDefinition<P, W>, config: Partial<DemoRecorderConfig> = {}) {
    this.config = { ...DEFAULT_DEMO_RECORDER_CONFIG, ...config };
    const k = this.config.keyframeInterval;
    if (!Number.isInteger(k) || k < 0 || k > 65535) {
      throw new RangeError(`demo recorder: keyframeInterval must be an integer in 0..65535, got ${k}`);
    }
    this.game = game;
    this.stream = new BitStream(DEMO_MAX_CHUNK);
    this.namedView = new NamedView(game.entities.stride);
    const schema = game.entities;
    this.entryBits = 40 + schema.typeBits + Math.max(...schema.types.map((t) => t.valueBits + t.fieldCount));
    this.hooks = {
      afterTick: (server, tick) => this.writeTick(server, tick),
      beforeShot: (_server, client, cmd) => this.aim(client, cmd),
      onShot: (server, client, cmd, events) => this.shot(server, client, cmd, events),
      onConnect: () => {
        this.rosterChanged = true;
      },
      onDisconnect: () => {
        this.rosterChanged = true;
      },
    };
  }

  get recording(): boolean {
    return this.sink !== null;
  }

  /**
   * Starts recording `server` (whose hooks include this recorder's) into `sink`: the file's
   * preamble goes at once, then one chunk per tick from the next tick on.
   */
  start(server: GameServer<P, W>, sink: DemoSink): void {
    if (this.sink !== null) throw new Error('demo recorder: already recording (stop first)');
    if (server.game !== this.game) throw new Error('demo recorder: the server runs another game');
    this.server = server;
    this.sink = sink;
    this.keyframeInterval =
      this.config.keyframeInterval || Math.max(1, Math.round(server.config.tickRate * 5));
    this.writer = new SnapshotWriter(server.entities);
    this.builder = new NamedViewBuilder(server.entities);
    this.lastKeyframe = -1;
    this.eventCursor = server.events.head;
    this.rosterChanged = true;
    this.pendingKills.length = 0;
    this.pendingKillcams.length = 0;
    this.head.shots.length = 0;
    this.lastTick = server.tick;
    this.emit(
      encodeDemoPreamble({
        schemaHash: gameSchemaHash(this.game),
        tickRate: server.config.tickRate,
        keyframeInterval: this.keyframeInterval,
        startTick: server.tick + 1,
        gameName: truncateUtf8(this.game.name, 64),
      }),
    );
  }

  /** Ends the file (its END chunk goes to the sink) and stops recording. */
  stop(): void {
    if (this.sink === null) return;
    const s = this.stream;
    s.beginWrite();
    serializeDemoEnd(s, { ticks: this.stats.ticks, lastTick: this.lastTick });
    this.emit(encodeDemoChunk(CHUNK_END, s.bytes));
    this.sink = null;
    this.server = null;
    this.writer = null;
  }

  /**
   * Records a kill at the current tick (the game's rules call this: the engine does not know what
   * a kill is). `killer` null: the world (a fall, a projectile whose owner left).
   */
  kill(killer: ServerClient<P> | null, victim: ServerClient<P>, cause = 0): void {
    if (this.sink === null) return;
    if (this.pendingKills.length >= DEMO_MAX_KILLS_PER_TICK) return;
    this.pendingKills.push({
      killerSlot: killer?.slot ?? victim.slot,
      victimSlot: victim.slot,
      killerEntity: killer?.entity ?? victim.entity,
      victimEntity: victim.entity,
      cause: Math.max(0, Math.min(255, Math.round(cause))) | 0,
    });
  }

  /** Adds a killcam (KillcamRecorder.capture) to the demo, after the current tick's chunk. */
  killcam(killcam: Killcam): void {
    if (this.sink !== null) this.pendingKillcams.push(killcam);
  }

  private emit(bytes: Uint8Array): void {
    this.stats.bytes += bytes.length;
    (this.sink as DemoSink)(bytes);
  }

  private aim(client: ServerClient<P>, cmd: UserCommand): void {
    const hitscan = this.game.hitscan;
    if (this.sink === null || hitscan === undefined) return;
    hitscan.shotSegment(client.state, cmd, this.segment.start, this.segment.end);
  }

  private shot(
    server: GameServer<P, W>,
    client: ServerClient<P>,
    cmd: UserCommand,
    events: EventCapture,
  ): void {
    const lag = server.lagCompensation;
    const head = this.head;
    if (this.sink === null || lag === null || head.shots.length >= DEMO_MAX_SHOTS_PER_TICK) return;
    // A command that might have fired but emitted nothing fired nothing.
    if (events.count === 0) return;
    if (this.shotPool.length <= head.shots.length) this.shotPool.push(createDemoShot());
    const shot = this.shotPool[head.shots.length];
    head.shots.push(shot);
    const schema = this.game.entities;
    const stride = schema.stride;
    const report = lag.report;
    shot.shooterSlot = client.slot;
    shot.shooterEntity = client.entity;
    copyUserCommand(shot.command, cmd);
    shot.mode = DEMO_LAG_MODES.indexOf(report.mode);
    shot.exact = report.exact;
    shot.rewindTicks = Math.max(0, Math.min(65535, server.tick - report.viewTick));
    copyPoint(shot.start, this.segment.start);
    copyPoint(shot.end, this.segment.end);
    const targetType = this.game.hitscan?.targetType ?? 0;
    const fields = schema.types[targetType].fieldCount;
    shot.tested.length = 0;
    for (let k = 0; k < report.count; k++) {
      const e = report.entities[k];
      shot.tested.push({
        entity: e,
        typeId: targetType,
        values: report.values.slice(e * stride, e * stride + fields),
      });
    }
    shot.drawn.length = 0;
    // The view the shooter drew, when the server did not honour it but can still rebuild it.
    const view = this.namedView;
    if (
      !report.exact &&
      cmd.viewTickB !== 0 &&
      (this.builder as NamedViewBuilder).build(
        client.snapshots,
        cmd.viewTickA,
        cmd.viewTickB,
        view,
        targetType,
      )
    ) {
      shot.drawn = drawnPoses(view, schema, cmd.viewFraction);
    }
    // The judgement's events were forwarded to the server's log: they are the tick's newest.
    const count = Math.min(events.count, DEMO_MAX_SHOT_EVENTS);
    shot.firstEvent = Math.max(0, server.events.head - this.eventCursor - events.count);
    shot.eventCount = count;
    this.stats.shots++;
  }

  private writeTick(server: GameServer<P, W>, tick: number): void {
    if (this.sink === null || server !== this.server) return;
    const writer = this.writer as SnapshotWriter;
    const head = this.head;
    head.tick = tick;
    const keyframe = this.lastKeyframe < 0 || tick - this.lastKeyframe >= this.keyframeInterval;
    if (keyframe) {
      writer.resetBaseline();
      this.lastKeyframe = tick;
      this.stats.keyframes++;
    }
    head.roster = null;
    if (keyframe || this.rosterChanged) {
      head.roster = [];
      for (const c of server.clients) if (c !== null) head.roster.push({ slot: c.slot, entity: c.entity });
      this.rosterChanged = false;
    }
    this.collectEvents(server);
    for (const shot of head.shots) {
      if (shot.firstEvent > head.events.length) shot.firstEvent = head.events.length;
      if (shot.firstEvent + shot.eventCount > head.events.length)
        shot.eventCount = head.events.length - shot.firstEvent;
    }
    head.kills = this.pendingKills;
    const s = this.stream;
    // Room for the head and the largest snapshot this world can need (every live entity and
    // every one the last frame held, each whole): the writer must never defer an entity.
    s.beginMeasure();
    serializeTickHead(s, head, this.game);
    const store = server.entities;
    const snapshotBits = 64 + (store.end + writer.stats.lastInView) * this.entryBits;
    s.beginWrite(Math.min(DEMO_MAX_CHUNK, ((s.bitsProcessed + snapshotBits) >>> 3) + 16));
    serializeTickHead(s, head, this.game);
    // The snapshot starts on a byte, so a player reads it without parsing the head again.
    s.uint(0, (8 - (s.bitsProcessed & 7)) & 7);
    const before = s.bitsProcessed;
    writer.write(s, tick, 0, 0, 0, s.bitsRemaining - 8);
    if (!s.ok || writer.stats.lastDeferred !== 0) {
      throw new Error(`demo recorder: tick ${tick} does not fit a chunk (${s.error || 'entities deferred'})`);
    }
    this.stats.snapshotBytes += (s.bitsProcessed - before) / 8;
    writer.acknowledge(tick);
    this.emit(encodeDemoChunk(CHUNK_TICK, s.bytes));
    this.stats.ticks++;
    this.stats.kills += head.kills.length;
    this.lastTick = tick;
    head.shots.length = 0;
    this.pendingKills.length = 0;
    for (const k of this.pendingKillcams) {
      s.beginWrite();
      if (!serializeKillcam(s, k, this.game.entities)) continue;
      this.emit(encodeDemoChunk(CHUNK_KILLCAM, s.bytes));
      this.stats.killcams++;
    }
    this.pendingKillcams.length = 0;
  }

  private collectEvents(server: GameServer<P, W>): void {
    const log = server.events;
    const events = this.head.events;
    events.length = 0;
    if (this.eventCursor < log.tail) {
      this.stats.eventsLost += log.tail - this.eventCursor;
      this.eventCursor = log.tail;
    }
    for (let p = this.eventCursor; p < log.head && events.length < DEMO_MAX_EVENTS_PER_TICK; p++) {
      const e = log.at(p);
      while (this.eventPool.length <= events.length) this.eventPool.push(createWireEvent());
      const out = this.eventPool[events.length];
      copyWireEvent(out, e);
      events.push(out);
    }
    this.eventCursor = log.head;
  }
}

function copyPoint(out: { x: number; y: number; z: number }, p: { x: number; y: number; z: number }): void {
  out.x = p.x;
  out.y = p.y;
  out.z = p.z;
}

/** The entities of a rebuilt view drawn at fraction `f`, as poses. */
function drawnPoses(
  view: NamedView,
  schema: GameDefinition<unknown, unknown>['entities'],
  f: number,
): DemoPose[] {
  const out: DemoPose[] = [];
  const stride = view.stride;
  for (let k = 0; k < view.count; k++) {
    const type = schema.types[view.types[k]];
    const values = new Float64Array(type.fieldCount);
    const drawn = drawEntity(
      type,
      view.inA(k) ? view.a : null,
      k * stride,
      view.parityA(k),
      view.inB(k) ? view.b : null,
      k * stride,
      view.parityB(k),
      f,
      schema.teleportDistance,
      values,
      0,
    );
    if (drawn) out.push({ entity: view.entities[k], typeId: view.types[k], values });
  }
  return out;
}

function truncateUtf8(text: string, maxBytes: number): string {
  let out = text;
  while (new TextEncoder().encode(out).length > maxBytes) out = out.slice(0, -1);
  return out;
}
