// Demo playback in the browser game: a demo file (from a URL, the file picker or a drop) opened
// with the engine's DemoPlayer, every byte checked first (a refused file names its problem on the
// page); played, paused, sped up or slowed and sought on a timeline (the player decodes from the
// keyframe at or before the tick); watched with a free camera or from any player's eyes; each
// recorded shot drawn by the lag compensation overlay (where the shooter drew its targets, where
// the server tested them, and the verdict); and each recorded killcam played from the killer's
// eyes, drawn from what the killer's commands named.

import { type DemoKillcam, DemoPlayer } from 'backstep/client';
import { DEMO_LAG_MODES, type DemoPose, type DemoShot, type WireEvent } from 'backstep/protocol';
import { EVENT_HIT } from '../shared/constants.ts';
import { PLAYER_ENTITY, PLAYER_ENTITY_TYPE } from '../shared/entities.ts';
import { arenaGame } from '../shared/game.ts';
import { viewHeight } from '../shared/hitboxes.ts';
import type { ShotReport } from '../shared/messages.ts';
import type { ArenaEffects } from './effects.ts';
import type { Hud } from './hud.ts';
import { KillcamView } from './killcam-view.ts';
import type { DrawnShot, LagCompensationOverlay } from './overlay.ts';
import type { ArenaScene, ViewPoint } from './scene.ts';

/** What the page reports about the demo it plays (tests read it). */
export interface DemoReport {
  /** 'none' (no demo), 'loading', 'playing' (a demo is open, paused or not), 'failed'. */
  phase: string;
  /** Why the last file was refused (the player's problem, byte offset and detail). */
  error: string;
  name: string;
  bytes: number;
  firstTick: number;
  lastTick: number;
  keyframes: number;
  /** Ticks from one keyframe to the next (the header's). */
  keyframeInterval: number;
  /** The tick drawn now (fractional: between two recorded ticks). */
  renderTick: number;
  durationMs: number;
  timeMs: number;
  playing: boolean;
  speed: number;
  /** 'free', 'follow' or 'killcam'. */
  camera: string;
  /** The player slot followed (-1: none). */
  followSlot: number;
  /** Player slots in the roster at the drawn tick. */
  slots: number[];
  /** Entities drawn in the last frame. */
  drawn: number;
  /** Shots handed to the overlay, kills shown, since the demo opened. */
  shots: number;
  kills: number;
  /** The newest shot's verdict as shown. */
  lastVerdict: string;
  /** Seeks made, and ticks decoded by the newest one (the player starts from a keyframe). */
  seeks: number;
  lastSeekDecoded: number;
  killcams: number;
  /** The killcam playing: its frame, frame count, killer and victim slots. */
  killcam: { frame: number; frames: number; killer: number; victim: number; drawn: number } | null;
}

export interface DemoControls {
  bar: HTMLElement;
  play: HTMLButtonElement;
  timeline: HTMLInputElement;
  time: HTMLElement;
  speed: HTMLSelectElement;
  camera: HTMLSelectElement;
  killcam: HTMLButtonElement;
  title: HTMLElement;
}

const P = PLAYER_ENTITY.index;
const SPEEDS = [0.25, 0.5, 1, 2, 4];
/** Heads of at most this many ticks are played when time moves on; a longer jump is a seek. */
const MAX_CATCH_UP_TICKS = 64;
const FREE_SPEED = 700;
const HITBOX_NAMES = ['head', 'body', 'legs'];

function formatTime(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function slotName(slot: number): string {
  return slot < 0 || slot === 0xffff ? 'the world' : `player ${slot}`;
}

/** Plays demos in the arena's scene, HUD, effects and overlay. */
export class DemoView {
  readonly report: DemoReport = {
    phase: 'none',
    error: '',
    name: '',
    bytes: 0,
    firstTick: -1,
    lastTick: -1,
    keyframes: 0,
    keyframeInterval: 0,
    renderTick: -1,
    durationMs: 0,
    timeMs: 0,
    playing: false,
    speed: 1,
    camera: 'free',
    followSlot: -1,
    slots: [],
    drawn: 0,
    shots: 0,
    kills: 0,
    lastVerdict: '',
    seeks: 0,
    lastSeekDecoded: 0,
    killcams: 0,
    killcam: null,
  };
  private player: DemoPlayer | null = null;
  private timeMs = 0;
  private lastFrameMs = -1;
  /** Index in the player's ticks of the newest tick whose events, shots and kills were played. */
  private played = -1;
  private readonly view: ViewPoint = {
    eyeX: 0,
    eyeY: -900,
    eyeZ: 700,
    yaw: 90,
    pitch: 35,
    weapon: 0,
    alive: false,
  };
  private readonly free = { x: 0, y: -900, z: 700, yaw: 90, pitch: 35 };
  private readonly keys = new Set<string>();
  private dragging = false;
  /** The entities drawn, less the one whose eyes the camera is in. */
  private readonly shown: {
    count: number;
    list: Uint16Array;
    types: ArrayLike<number>;
    values: Float64Array;
    stride: number;
  };
  private killcam: { cam: DemoKillcam } | null = null;
  private readonly killcamView: KillcamView;
  private readonly feet = { x: 0, y: 0, z: 0 };

  constructor(
    private readonly scene: ArenaScene,
    private readonly effects: ArenaEffects,
    private readonly overlay: LagCompensationOverlay,
    private readonly hud: Hud,
    private readonly ui: DemoControls,
    /** Shows a message over the page (a refused file), or hides it (null). */
    private readonly status: (text: string | null) => void,
    /** Shows the newest shot's verdict beside the overlay's legend. */
    private readonly verdict: (text: string) => void,
  ) {
    const schema = arenaGame.entities;
    this.shown = {
      count: 0,
      list: new Uint16Array(schema.maxEntities),
      types: new Uint8Array(schema.maxEntities),
      values: new Float64Array(0),
      stride: schema.stride,
    };
    this.killcamView = new KillcamView(scene);
    for (const s of SPEEDS) ui.speed.add(new Option(`${s}x`, String(s), s === 1, s === 1));
    ui.play.addEventListener('click', () => this.setPlaying(!this.report.playing));
    ui.timeline.addEventListener('input', () => this.seekMs(Number(ui.timeline.value)));
    ui.speed.addEventListener('change', () => this.setSpeed(Number(ui.speed.value)));
    ui.camera.addEventListener('change', () => {
      const v = ui.camera.value;
      if (v === 'free') this.freeCamera();
      else this.follow(Number(v));
    });
    ui.killcam.addEventListener('click', () => this.playKillcam());
  }

  get active(): boolean {
    return this.player !== null;
  }

  /** Shows that `name` is loading (fetching a URL). */
  loading(name: string): void {
    this.report.phase = 'loading';
    this.report.name = name;
    this.status(`Loading demo ${name}…`);
  }

  /** A file could not even be read (a failed fetch): says so on the page. */
  fail(name: string, why: string): void {
    this.report.phase = this.player === null ? 'failed' : 'playing';
    this.report.error = `${name}: ${why}`;
    this.status(`Could not open the demo ${name}: ${why}`);
  }

  /**
   * Opens `bytes` as a demo: every chunk is checked and decoded first, so a refused file (a
   * truncated or corrupt one, another game's) shows its problem on the page and changes nothing
   * else. Returns whether it opened.
   */
  open(bytes: Uint8Array, name: string): boolean {
    const opened = DemoPlayer.open(bytes, arenaGame);
    if (!(opened instanceof DemoPlayer)) {
      // "demo refused: <problem> at byte <offset>: <detail>"
      this.fail(name, opened.message.replace(/^demo refused: /, ''));
      return false;
    }
    const p = opened;
    this.player = p;
    this.shown.values = p.view.values;
    const r = this.report;
    r.phase = 'playing';
    r.error = '';
    r.name = name;
    r.bytes = bytes.length;
    r.firstTick = p.firstTick;
    r.lastTick = p.lastTick;
    r.keyframes = p.ticks.filter((t) => t.keyframe).length;
    r.keyframeInterval = p.header.keyframeInterval;
    r.durationMs = this.msOf(p.lastTick);
    r.shots = 0;
    r.kills = 0;
    r.seeks = 0;
    r.lastVerdict = '';
    r.killcams = p.killcams.length;
    this.killcam = null;
    r.killcam = null;
    this.ui.bar.hidden = false;
    this.ui.title.textContent = `${name} · ${p.header.gameName} · ${p.ticks.length} ticks at ${p.header.tickRate} Hz`;
    this.ui.timeline.min = '0';
    this.ui.timeline.max = String(Math.round(r.durationMs));
    this.ui.timeline.step = String(Math.max(1, Math.round(1000 / p.header.tickRate)));
    this.status(null);
    this.overlay.clear();
    this.timeMs = 0;
    this.lastFrameMs = -1;
    p.seek(p.firstTick);
    this.played = p.position;
    this.playHeads(p.position, p.position);
    this.freeCamera();
    this.setPlaying(true);
    return true;
  }

  setPlaying(on: boolean): void {
    this.report.playing = on && this.player !== null;
    this.ui.play.textContent = this.report.playing ? '❚❚ Pause' : '▶ Play';
  }

  setSpeed(speed: number): void {
    if (!Number.isFinite(speed) || speed <= 0) return;
    this.report.speed = speed;
    this.ui.speed.value = String(speed);
  }

  /** Jumps to `ms` after the demo's first tick: decodes from the keyframe at or before it. */
  seekMs(ms: number): void {
    const p = this.player;
    if (p === null) return;
    this.stopKillcam();
    this.timeMs = Math.min(Math.max(0, ms), this.report.durationMs);
    const before = p.decodedTicks;
    p.seek(Math.floor(this.tickAt(this.timeMs)));
    this.report.lastSeekDecoded = p.decodedTicks - before;
    this.report.seeks++;
    this.played = p.position;
    this.overlay.clear();
  }

  freeCamera(): void {
    this.stopKillcam();
    this.report.camera = 'free';
    this.report.followSlot = -1;
    this.ui.camera.value = 'free';
  }

  /** Watches from the eyes of the player in `slot`. */
  follow(slot: number): void {
    this.stopKillcam();
    this.report.camera = 'follow';
    if (this.report.followSlot !== slot) this.overlay.clear();
    this.report.followSlot = slot;
    this.syncCameraChoices();
    this.ui.camera.value = String(slot);
  }

  /** Follows the next player in the roster (or the first). */
  followNext(): void {
    const slots = this.report.slots;
    if (slots.length === 0) return;
    const i = slots.indexOf(this.report.followSlot);
    this.follow(slots[(i + 1) % slots.length]);
  }

  /** Plays the newest killcam recorded at or before the tick shown; false when there is none. */
  playKillcam(): boolean {
    const p = this.player;
    if (p === null) return false;
    let cam: DemoKillcam | null = null;
    for (const k of p.killcams)
      if (k.afterTick <= this.report.renderTick && k.killcam.frames.length > 0) cam = k;
    if (cam === null || !this.killcamView.start(cam.killcam)) return false;
    this.killcam = { cam };
    this.report.camera = 'killcam';
    this.ui.camera.disabled = true;
    this.overlay.clear();
    this.setPlaying(false);
    return true;
  }

  /** Keys while a demo plays (returns true when it used the key). */
  keyDown(code: string): boolean {
    if (this.player === null) return false;
    switch (code) {
      case 'Space':
        this.setPlaying(!this.report.playing);
        return true;
      case 'ArrowLeft':
        this.seekMs(this.timeMs - 5000);
        return true;
      case 'ArrowRight':
        this.seekMs(this.timeMs + 5000);
        return true;
      case 'BracketLeft':
      case 'BracketRight': {
        const i = SPEEDS.indexOf(this.report.speed);
        const j = Math.min(
          SPEEDS.length - 1,
          Math.max(0, (i < 0 ? 2 : i) + (code === 'BracketLeft' ? -1 : 1)),
        );
        this.setSpeed(SPEEDS[j]);
        return true;
      }
      case 'KeyF':
        this.freeCamera();
        return true;
      case 'Tab':
        this.followNext();
        return true;
      case 'KeyK':
        if (this.killcam !== null) this.stopKillcam();
        else this.playKillcam();
        return true;
    }
    this.keys.add(code);
    return false;
  }

  keyUp(code: string): void {
    this.keys.delete(code);
  }

  /** Mouse look for the free camera: drag with a button held. */
  mouse(kind: 'down' | 'up' | 'move', dx: number, dy: number): void {
    if (kind === 'down') this.dragging = true;
    else if (kind === 'up') this.dragging = false;
    else if (this.dragging && this.report.camera === 'free') {
      this.free.yaw -= dx * 0.25;
      this.free.pitch = Math.max(-89, Math.min(89, this.free.pitch + dy * 0.25));
    }
  }

  /** One animation frame: moves time on, plays what the ticks passed hold, draws. */
  frame(nowMs: number): void {
    const p = this.player;
    if (p === null) return;
    const dt = this.lastFrameMs < 0 ? 0 : Math.min(250, nowMs - this.lastFrameMs);
    this.lastFrameMs = nowMs;
    if (this.killcam !== null) {
      this.killcamFrame(nowMs, dt);
      return;
    }
    const r = this.report;
    if (r.playing) {
      this.timeMs += dt * r.speed;
      if (this.timeMs >= r.durationMs) {
        this.timeMs = r.durationMs;
        this.setPlaying(false);
      }
    }
    const renderTick = this.tickAt(this.timeMs);
    p.draw(renderTick);
    r.renderTick = renderTick;
    r.timeMs = this.timeMs;
    // What the ticks passed since the last frame hold: events, shots (the overlay), kills.
    const upTo = p.indexOf(Math.floor(renderTick));
    if (upTo > this.played) {
      if (upTo - this.played > MAX_CATCH_UP_TICKS) this.played = upTo - 1;
      this.playHeads(this.played + 1, upTo);
      this.played = upTo;
    } else if (upTo < this.played) {
      this.played = upTo;
    }
    this.syncCameraChoices();
    this.moveCamera(dt, p);
    this.overlay.update(this.timeMs);
    this.scene.render(nowMs, this.view, this.shown);
    r.drawn = this.shown.count;
    this.ui.timeline.value = String(Math.round(this.timeMs));
    this.ui.time.textContent = `${formatTime(this.timeMs)} / ${formatTime(r.durationMs)} · tick ${Math.floor(renderTick)}`;
    let hasKillcam = false;
    for (const k of p.killcams) if (k.afterTick <= renderTick) hasKillcam = true;
    this.ui.killcam.disabled = !hasKillcam;
    this.hud.expire(nowMs);
  }

  private msOf(tick: number): number {
    const p = this.player;
    return p === null ? 0 : ((tick - p.firstTick) * 1000) / p.header.tickRate;
  }

  private tickAt(ms: number): number {
    const p = this.player;
    return p === null ? -1 : p.firstTick + (ms * p.header.tickRate) / 1000;
  }

  /** Plays the events, shots and kills of ticks `from`..`to` (indices). */
  private playHeads(from: number, to: number): void {
    const p = this.player;
    if (p === null) return;
    for (let i = Math.max(0, from); i <= to; i++) {
      const tick = p.ticks[i];
      const head = tick.head;
      const at = this.msOf(tick.tick);
      for (const e of head.events) this.effects.play(performance.now(), e, false, this.feet);
      for (const shot of head.shots) this.showShot(at, shot, head.events);
      for (const k of head.kills) {
        this.hud.kill(
          performance.now(),
          {
            killer: k.killerSlot === 0xffff ? -1 : k.killerSlot,
            victim: k.victimSlot,
            weapon: k.cause === 255 ? -1 : k.cause,
          },
          slotName,
        );
        this.report.kills++;
      }
    }
  }

  /**
   * One recorded shot through the overlay: blue where its shooter drew its target, red where the
   * server tested it. The target is each player the shot hit or, for a miss, the player nearest
   * the ray (the one aimed at); while a player is followed, only that player's shots are shown.
   */
  private showShot(atMs: number, shot: DemoShot, events: readonly WireEvent[]): void {
    const r = this.report;
    if (r.camera === 'follow' && shot.shooterSlot !== r.followSlot) return;
    const hit: number[] = [];
    const names: string[] = [];
    for (let i = shot.firstEvent; i < shot.firstEvent + shot.eventCount && i < events.length; i++) {
      const e = events[i];
      if (e.type !== EVENT_HIT) continue;
      if (!hit.includes(e.p0)) hit.push(e.p0);
      names.push(`${this.nameOfEntity(e.p0)} (${HITBOX_NAMES[e.p1] ?? `box ${e.p1}`})`);
    }
    const targets = hit.length > 0 ? hit : nearestToRay(shot);
    // An honoured named view was tested where the shooter drew it; otherwise the recorded drawn
    // poses, when the server could rebuild them.
    const drawnPoses = shot.exact ? shot.tested : shot.drawn;
    const command = r.shots + 1;
    const drawn: DrawnShot = { command, count: 0, entities: [], origins: [], ducked: [] };
    for (const pose of drawnPoses) {
      if (pose.typeId !== PLAYER_ENTITY_TYPE || !targets.includes(pose.entity)) continue;
      drawn.entities.push(pose.entity);
      drawn.origins.push(pose.values[P.x], pose.values[P.y], pose.values[P.z]);
      drawn.ducked.push(pose.values[P.ducked] !== 0);
      drawn.count++;
    }
    const tested = shot.tested.filter(
      (t: DemoPose) => t.typeId === PLAYER_ENTITY_TYPE && targets.includes(t.entity),
    );
    const mode = `${DEMO_LAG_MODES[shot.mode]}${shot.exact ? ', named view' : ''}, rewound ${shot.rewindTicks.toFixed(2)} ticks`;
    const text = `${slotName(shot.shooterSlot)} fired (${mode}): ${names.length > 0 ? `hit ${names.join(', ')}` : 'missed'}`;
    r.lastVerdict = text;
    this.verdict(text);
    if (tested.length === 0) return;
    if (drawn.count > 0) this.overlay.drawn(drawn);
    this.overlay.report(atMs, {
      command,
      mode: DEMO_LAG_MODES[shot.mode],
      exact: shot.exact,
      count: tested.length,
      entities: Int32Array.from(tested, (t) => t.entity),
      origins: Float64Array.from(tested.flatMap((t) => [t.values[P.x], t.values[P.y], t.values[P.z]])),
      ducked: Uint8Array.from(tested, (t) => (t.values[P.ducked] !== 0 ? 1 : 0)),
    } satisfies ShotReport);
    r.shots++;
  }

  private nameOfEntity(entity: number): string {
    const p = this.player;
    if (p !== null && p.position >= 0) {
      for (const r of p.ticks[p.position].roster) if (r.entity === entity) return slotName(r.slot);
    }
    return `entity ${entity}`;
  }

  /** Keeps the camera choice list equal to the roster at the drawn tick. */
  private syncCameraChoices(): void {
    const p = this.player;
    if (p === null || p.position < 0) return;
    const roster = p.ticks[p.position].roster;
    const slots = this.report.slots;
    let same = slots.length === roster.length;
    for (let i = 0; same && i < roster.length; i++) same = slots[i] === roster[i].slot;
    if (same) return;
    this.report.slots = roster.map((r) => r.slot);
    const select = this.ui.camera;
    const keep = select.value;
    select.replaceChildren(new Option('free camera', 'free'));
    for (const s of this.report.slots) select.add(new Option(`follow ${slotName(s)}`, String(s)));
    select.value = keep;
  }

  /** Places the camera (free flight, or a followed player's eyes) and picks what is drawn. */
  private moveCamera(dt: number, p: DemoPlayer): void {
    const v = p.view;
    const shown = this.shown;
    const view = this.view;
    let skip = -1;
    if (this.report.camera === 'follow') {
      const e = p.entityOf(this.report.followSlot);
      let found = false;
      for (let k = 0; k < v.count && !found; k++)
        found = v.list[k] === e && v.types[e] === PLAYER_ENTITY_TYPE;
      if (found) {
        const o = e * v.stride;
        view.eyeX = v.values[o + P.x];
        view.eyeY = v.values[o + P.y];
        view.eyeZ = v.values[o + P.z] + viewHeight(v.values[o + P.ducked] !== 0);
        view.yaw = v.values[o + P.yaw];
        view.pitch = v.values[o + P.pitch];
        view.weapon = v.values[o + P.weapon];
        view.alive = v.values[o + P.alive] !== 0;
        skip = e;
      }
    } else {
      const f = this.free;
      const k = this.keys;
      const step = (FREE_SPEED * dt) / 1000;
      const yaw = (f.yaw * Math.PI) / 180;
      const pitch = (f.pitch * Math.PI) / 180;
      const fwd = (k.has('KeyW') ? 1 : 0) - (k.has('KeyS') ? 1 : 0);
      const side = (k.has('KeyD') ? 1 : 0) - (k.has('KeyA') ? 1 : 0);
      const up = (k.has('KeyE') ? 1 : 0) - (k.has('KeyQ') ? 1 : 0);
      f.x += step * (fwd * Math.cos(pitch) * Math.cos(yaw) + side * Math.sin(yaw));
      f.y += step * (fwd * Math.cos(pitch) * Math.sin(yaw) - side * Math.cos(yaw));
      f.z += step * (up - fwd * Math.sin(pitch));
      view.eyeX = f.x;
      view.eyeY = f.y;
      view.eyeZ = f.z;
      view.yaw = f.yaw;
      view.pitch = f.pitch;
      view.alive = false;
    }
    let n = 0;
    for (let k = 0; k < v.count; k++) {
      const e = v.list[k];
      if (e === skip) continue;
      shown.list[n++] = e;
    }
    shown.count = n;
    shown.types = v.types;
  }

  private stopKillcam(): void {
    if (this.killcam === null) return;
    this.killcam = null;
    this.killcamView.stop();
    this.report.killcam = null;
    this.ui.camera.disabled = false;
    if (this.report.camera === 'killcam')
      this.report.camera = this.report.followSlot >= 0 ? 'follow' : 'free';
    this.overlay.clear();
  }

  /** A frame of the killcam: the killer's commands one after another, each at its own length. */
  private killcamFrame(nowMs: number, dt: number): void {
    const k = this.killcam;
    if (k === null) return;
    const cam = k.cam.killcam;
    const going = this.killcamView.draw(nowMs, dt, this.report.speed);
    this.report.killcam = this.killcamView.report;
    const r = this.killcamView.report;
    if (r !== null) {
      this.ui.time.textContent = `KILLCAM ${slotName(cam.killerSlot)} killed ${slotName(cam.victimSlot)}: command ${r.frame + 1} / ${r.frames} from the killer's eyes (K: back)`;
    }
    if (!going) this.stopKillcam();
  }
}

/** Misses farther than this from every target (units, to the target's middle) show no target. */
const AIMED_AT_UNITS = 96;

/** The tested player nearest the shot's ray (to its middle), within AIMED_AT_UNITS; else none. */
function nearestToRay(shot: DemoShot): number[] {
  const { start: a, end: b } = shot;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const dz = b.z - a.z;
  const len2 = dx * dx + dy * dy + dz * dz || 1;
  let best = -1;
  let bestDistance = AIMED_AT_UNITS;
  for (const t of shot.tested) {
    if (t.typeId !== PLAYER_ENTITY_TYPE) continue;
    const px = t.values[P.x];
    const py = t.values[P.y];
    const pz = t.values[P.z] + (t.values[P.ducked] !== 0 ? 18 : 32);
    const u = Math.max(0, Math.min(1, ((px - a.x) * dx + (py - a.y) * dy + (pz - a.z) * dz) / len2));
    const d = Math.hypot(a.x + dx * u - px, a.y + dy * u - py, a.z + dz * u - pz);
    if (d < bestDistance) {
      bestDistance = d;
      best = t.entity;
    }
  }
  return best < 0 ? [] : [best];
}
