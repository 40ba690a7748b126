// The arena in the browser, live: connects (WebRTC, else WebSocket), samples input, runs the
// client each animation frame and hands what it knows to the parts that show it: the scene (the
// local player from prediction, the others from the interpolated remote view), the effects, the
// HUD, net_graph (G), the lag compensation overlay (O) and the panel (P). Scene, effects and HUD
// take plain state, so a demo drives them too: `?demo=URL`, the "Open demo" button or a file
// dropped on the page plays one instead of the live match (demo-view.ts). Any failure shows on
// the page (a live one with a retry).

import { FrameLoop, InputSampler } from 'backstep/browser';
import { createInputSample, type NetGraphFigures } from 'backstep/client';
import type { Killcam, WireEvent } from 'backstep/protocol';
import { vec3 } from 'backstep/sim';
import {
  BUTTON_ATTACK,
  BUTTON_CROUCH,
  BUTTON_JUMP,
  BUTTON_RELOAD,
  EVENT_WEAPON_FIRE,
  IMPULSE_WEAPON_1,
} from '../shared/constants.ts';
import {
  PLAYER_ENTITY,
  PLAYER_ENTITY_TYPE,
  PROJECTILE_ENTITY,
  PROJECTILE_ENTITY_TYPE,
} from '../shared/entities.ts';
import { ARENA_LEVEL } from '../shared/level.ts';
import type { KillMessage, ServerStatsMessage, ShotReport } from '../shared/messages.ts';
import { eyeHeight } from '../shared/player.ts';
import { type DemoReport, DemoView } from './demo-view.ts';
import { ArenaEffects } from './effects.ts';
import { Hud } from './hud.ts';
import { type KillcamReport, KillcamView } from './killcam-view.ts';
import { NetGraphView } from './net-graph-view.ts';
import { LagCompensationOverlay, type OverlayStats } from './overlay.ts';
import { Panel, type PanelValues } from './panel.ts';
import { ArenaScene, type ViewPoint } from './scene.ts';
import { ArenaSession, DEFAULT_SESSION_OPTIONS } from './session.ts';

/** What the page reports about itself (tests and benchmarks read it). */
export interface ArenaReport {
  phase: string;
  failure: string;
  transport: string;
  fallbackReason: string;
  state: string;
  slot: number;
  spawned: boolean;
  origin: { x: number; y: number; z: number };
  yaw: number;
  pitch: number;
  health: number;
  weapon: number;
  netGraph: NetGraphFigures | null;
  netGraphLines: string[];
  netGraphVisible: boolean;
  overlay: OverlayStats;
  overlayVisible: boolean;
  panelVisible: boolean;
  serverStats: ServerStatsMessage | null;
  frames: number;
  /** Shots this client fired, and hits its own prediction saw. */
  shotsFired: number;
  predictedHits: number;
  killFeed: string[];
  /** The demo played (phase 'none' while the page plays live). */
  demo: DemoReport;
  /** Killcams the server sent after this player's deaths, and the one playing (null: none). */
  killcamsReceived: number;
  killcam: KillcamReport | null;
  /** Frame time over the frames since the last reset: mean and 99th percentile, ms. */
  frameTimes(reset: boolean): {
    frames: number;
    workMean: number;
    workP99: number;
    intervalMean: number;
    intervalP99: number;
  };
}

declare global {
  interface Window {
    arena: ArenaReport;
  }
}

const params = new URLSearchParams(location.search);
const transportParam = params.get('transport');
const options = {
  ...DEFAULT_SESSION_OPTIONS,
  host: params.get('server') ?? location.host,
  transport: transportParam === 'webrtc' || transportParam === 'websocket' ? transportParam : 'auto',
  secure: location.protocol === 'https:',
  protocolVersion: Number(params.get('protocolVersion') ?? DEFAULT_SESSION_OPTIONS.protocolVersion),
  webRtcTimeoutMs: Number(params.get('rtcTimeoutMs') ?? DEFAULT_SESSION_OPTIONS.webRtcTimeoutMs),
} as const;

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const canvas = $('view') as HTMLCanvasElement;
const statusBox = $('status');
const statusText = $('status-text');
const retryButton = $('retry') as HTMLButtonElement;
const legend = $('overlay-legend');

const P = PLAYER_ENTITY.index;
const scene = new ArenaScene(canvas, ARENA_LEVEL, {
  playerType: PLAYER_ENTITY_TYPE,
  projectileType: PROJECTILE_ENTITY_TYPE,
  player: { x: P.x, y: P.y, z: P.z, yaw: P.yaw, ducked: P.ducked, alive: P.alive },
  projectile: PROJECTILE_ENTITY.index,
});
const overlay = new LagCompensationOverlay();
overlay.visible = params.get('overlay') === '1';
scene.world.add(overlay.group);
const netGraphView = new NetGraphView($('side'));
netGraphView.visible = params.get('netgraph') === '1';
let methods: PanelValues;
const panel = new Panel($('panel'), (values) => applyPanel(values));
methods = panel.values;
panel.visible = params.get('panel') === '1';

const sampler = new InputSampler(canvas, {
  bindings: {
    forward: ['KeyW', 'ArrowUp'],
    back: ['KeyS', 'ArrowDown'],
    left: ['KeyA', 'ArrowLeft'],
    right: ['KeyD', 'ArrowRight'],
    up: [],
    down: [],
    buttons: {
      Space: BUTTON_JUMP,
      KeyC: BUTTON_CROUCH,
      ShiftLeft: BUTTON_CROUCH,
      Mouse0: BUTTON_ATTACK,
      KeyR: BUTTON_RELOAD,
    },
    impulses: { Digit1: IMPULSE_WEAPON_1, Digit2: IMPULSE_WEAPON_1 + 1, Digit3: IMPULSE_WEAPON_1 + 2 },
  },
});
const input = createInputSample();

const report: ArenaReport = {
  phase: 'connecting',
  failure: '',
  transport: '',
  fallbackReason: '',
  state: '',
  slot: -1,
  spawned: false,
  origin: { x: 0, y: 0, z: 0 },
  yaw: 0,
  pitch: 0,
  health: 0,
  weapon: 0,
  netGraph: null,
  netGraphLines: [],
  netGraphVisible: netGraphView.visible,
  overlay: overlay.stats,
  overlayVisible: overlay.visible,
  panelVisible: panel.visible,
  serverStats: null,
  frames: 0,
  shotsFired: 0,
  predictedHits: 0,
  killFeed: [],
  demo: undefined as unknown as DemoReport,
  killcamsReceived: 0,
  killcam: null,
  frameTimes: (reset) => {
    const w = loop.workTimes;
    const i = loop.intervals;
    const out = {
      frames: w.count,
      workMean: w.mean(),
      workP99: w.percentile(99),
      intervalMean: i.mean(),
      intervalP99: i.percentile(99),
    };
    if (reset) {
      w.clear();
      i.clear();
    }
    return out;
  },
};
window.arena = report;

const effects = new ArenaEffects(scene);
const hud = new Hud(document);
let session: ArenaSession | null = null;
let viewSet = false;
/** The page plays a demo (from a URL, the file picker or a drop) instead of the live match. */
let demoMode = false;
const demo = new DemoView(
  scene,
  effects,
  overlay,
  hud,
  {
    bar: $('demo-bar'),
    play: $('demo-play') as HTMLButtonElement,
    timeline: $('demo-timeline') as HTMLInputElement,
    time: $('demo-time'),
    speed: $('demo-speed') as HTMLSelectElement,
    camera: $('demo-camera') as HTMLSelectElement,
    killcam: $('demo-killcam') as HTMLButtonElement,
    title: $('demo-title'),
  },
  (text) => {
    if (text === null) statusBox.hidden = true;
    else showStatus(text, false);
  },
  (text) => {
    $('overlay-mode').textContent = text;
  },
);
report.demo = demo.report;
/** The killcam after this player's death (live): it plays at once unless ?killcam=0; K skips or replays. */
const liveKillcam = new KillcamView(scene);
const killcamAuto = params.get('killcam') !== '0';
let lastKillcam: Killcam | null = null;
let lastLiveFrameMs = -1;
const killcamBanner = $('killcam-banner');

/**
 * A killcam that came before this client saw its own death (the reliable message can overtake
 * the frame with the health), and when (performance.now()): it starts once the death shows.
 */
let pendingKillcam: Killcam | null = null;
let pendingKillcamAtMs = 0;
/** How long a killcam waits for the death it is about. */
const KILLCAM_PENDING_MS = 1000;

function onKillcam(cam: Killcam): void {
  lastKillcam = cam;
  report.killcamsReceived++;
  if (!killcamAuto) return;
  const dead = (session?.client?.predictor.current.health ?? 0) <= 0;
  if (dead) liveKillcam.start(cam);
  else {
    pendingKillcam = cam;
    pendingKillcamAtMs = performance.now();
  }
}

function playerName(slot: number): string {
  if (slot < 0) return 'a rocket';
  return slot === session?.client?.slot ? 'you' : `player ${slot}`;
}

function onEvent(e: WireEvent, predicted: boolean, command: number): void {
  const client = session?.client ?? null;
  if (client === null) return;
  const s = client.predictor.current;
  effects.play(performance.now(), e, predicted, { x: s.originX, y: s.originY, z: s.originZ });
  if (predicted && e.type === EVENT_WEAPON_FIRE) rememberDrawnShot(command);
}

/** The targets as this client drew them for the command that fired (the overlay's blue boxes). */
function rememberDrawnShot(command: number): void {
  const view = session?.client?.view;
  if (view === undefined) return;
  const shot = {
    command,
    count: 0,
    entities: [] as number[],
    origins: [] as number[],
    ducked: [] as boolean[],
  };
  for (let k = 0; k < view.count; k++) {
    const e = view.list[k];
    if (view.types[e] !== PLAYER_ENTITY_TYPE) continue;
    const o = e * view.stride;
    shot.entities.push(e);
    shot.origins.push(view.values[o + P.x], view.values[o + P.y], view.values[o + P.z]);
    shot.ducked.push(view.values[o + P.ducked] !== 0);
    shot.count++;
  }
  overlay.drawn(shot);
}

function onKill(kill: KillMessage): void {
  hud.kill(performance.now(), kill, playerName);
  report.killFeed = hud.feed.map((f) => f.text);
}

function onShotReport(r: ShotReport): void {
  overlay.report(performance.now(), r);
}

/** Applies the panel's values: link shapes, the methods the client runs, and the server's part. */
function applyPanel(values: PanelValues): void {
  methods = values;
  if (session === null) return;
  session.setUpShape({
    latencyMs: values.upLatencyMs,
    jitterMs: values.upJitterMs,
    loss: values.upLossPercent / 100,
    duplicate: values.upDuplicatePercent / 100,
  });
  const s = session.settings;
  s.downLatencyMs = values.downLatencyMs;
  s.downJitterMs = values.downJitterMs;
  s.downLoss = values.downLossPercent / 100;
  s.downDuplicate = values.downDuplicatePercent / 100;
  s.lagCompensation = values.lagCompensation;
  s.updateRate = values.updateRate;
  s.rateBytesPerSecond = values.rateBytesPerSecond;
  s.overlay = overlay.visible;
  const client = session.client;
  if (client !== null) {
    client.interpolate = values.interpolation;
    client.setInterpolationDelay(values.interpolationDelay);
    client.setMaxExtrapolationMs(values.maxExtrapolationMs);
    client.setUpdateRate(values.updateRate);
  }
  session.sendSettings();
}

function showStatus(text: string, retry: boolean): void {
  statusBox.hidden = false;
  statusText.textContent = text;
  retryButton.hidden = !retry;
}

function startSession(): void {
  viewSet = false;
  showStatus(`Connecting to ${options.host}…`, false);
  const s = new ArenaSession(options, { onEvent }, { onKill, onShotReport, onKillcam });
  session = s;
  void s
    .start(() => performance.now())
    .then(() => {
      if (s.client !== null && session === s) applyPanel(methods);
    });
}

retryButton.addEventListener('click', () => {
  const old = session;
  void (old?.close() ?? Promise.resolve()).finally(() => {
    startSession();
    if (!loop.isRunning) loop.start();
  });
});

/** Leaves the live match (if any) for demo playback. */
function enterDemoMode(): void {
  if (!demoMode) {
    demoMode = true;
    document.body.classList.add('demo');
    sampler.enabled = false;
    panel.visible = false;
    netGraphView.visible = false;
    if (document.pointerLockElement !== null) document.exitPointerLock();
    const old = session;
    session = null;
    void old?.close();
    ($('overlay-legend').querySelector('.client') as HTMLElement).textContent = '■ drawn by the shooter';
  }
  if (!loop.isRunning) loop.start();
}

/** Plays `bytes` as a demo; a refused file shows why on the page. */
function openDemo(bytes: Uint8Array, name: string): void {
  enterDemoMode();
  demo.open(bytes, name);
}

async function fetchDemo(url: string): Promise<void> {
  enterDemoMode();
  demo.loading(url);
  let bytes: Uint8Array;
  try {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    demo.fail(url, error instanceof Error ? error.message : String(error));
    return;
  }
  openDemo(bytes, url.split('/').pop() || url);
}

async function openDemoFile(file: File): Promise<void> {
  enterDemoMode();
  demo.loading(file.name);
  try {
    openDemo(new Uint8Array(await file.arrayBuffer()), file.name);
  } catch (error) {
    demo.fail(file.name, error instanceof Error ? error.message : String(error));
  }
}

const fileInput = $('demo-file') as HTMLInputElement;
$('demo-open-button').addEventListener('click', () => fileInput.click());
fileInput.addEventListener('change', () => {
  const file = fileInput.files?.[0];
  fileInput.value = '';
  if (file !== undefined) void openDemoFile(file);
});
window.addEventListener('dragover', (e) => {
  if (!e.dataTransfer?.types.includes('Files')) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = 'copy';
  document.body.classList.add('dragging');
});
window.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
window.addEventListener('drop', (e) => {
  document.body.classList.remove('dragging');
  const file = e.dataTransfer?.files[0];
  if (file === undefined) return;
  e.preventDefault();
  void openDemoFile(file);
});

window.addEventListener('keyup', (e) => demo.keyUp(e.code));
window.addEventListener('keydown', (e) => {
  const tag = (e.target as HTMLElement | null)?.tagName;
  if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || e.repeat) return;
  if (demoMode) {
    if (e.code === 'KeyO') {
      overlay.visible = !overlay.visible;
      if (!overlay.visible) overlay.clear();
    } else if (demo.keyDown(e.code)) e.preventDefault();
    return;
  }
  if (session === null) return;
  if (e.code === 'KeyG') netGraphView.visible = !netGraphView.visible;
  else if (e.code === 'KeyO') {
    overlay.visible = !overlay.visible;
    if (!overlay.visible) overlay.clear();
    session.settings.overlay = overlay.visible;
    session.sendSettings();
  } else if (e.code === 'KeyK') {
    if (liveKillcam.playing) liveKillcam.stop();
    else if (lastKillcam !== null && (session.client?.predictor.current.health ?? 0) <= 0)
      liveKillcam.start(lastKillcam);
  } else if (e.code === 'KeyP') {
    panel.visible = !panel.visible;
    if (panel.visible && document.pointerLockElement !== null) document.exitPointerLock();
  }
});

canvas.addEventListener('mousedown', () => {
  effects.unlockAudio();
  if (demoMode) demo.mouse('down', 0, 0);
});
window.addEventListener('mouseup', () => demo.mouse('up', 0, 0));
window.addEventListener('mousemove', (e) => {
  if (demoMode) demo.mouse('move', e.movementX, e.movementY);
});

function resize(): void {
  scene.resize(window.innerWidth, window.innerHeight);
}
window.addEventListener('resize', resize);
resize();

const origin = vec3();
const viewPoint: ViewPoint = { eyeX: 0, eyeY: 0, eyeZ: 64, yaw: 0, pitch: 0, weapon: 0, alive: true };
let lastGraphMs = 0;

const NOTHING = { count: 0, list: [], types: [], values: new Float64Array(0), stride: 1 };

function frame(nowMs: number): void {
  report.frames++;
  if (demoMode) {
    report.phase = 'demo';
    legend.style.display = overlay.visible ? 'block' : 'none';
    report.overlayVisible = overlay.visible;
    if (demo.active) demo.frame(nowMs);
    else scene.render(nowMs, viewPoint, NOTHING);
    report.killFeed = hud.feed.map((f) => f.text);
    return;
  }
  if (session === null) return;
  const client = session.client;
  const spawned = client?.isSpawned === true;
  if (client !== null && spawned && !viewSet) {
    const s = client.predictor.current;
    sampler.setView(s.yaw, s.pitch);
    viewSet = true;
  }
  if (spawned) sampler.sample(input);
  session.frame(nowMs, spawned ? input : null);
  report.phase = session.phase;
  report.failure = session.failure;
  report.transport = session.transport;
  report.fallbackReason = session.fallbackReason;
  if (session.phase === 'failed') {
    showStatus(session.failure, true);
    loop.stop();
    return;
  }
  if (client === null || !client.isSpawned) {
    scene.render(nowMs, viewPoint, NOTHING);
    return;
  }
  statusBox.hidden = true;
  const predictor = client.predictor;
  const state = methods.prediction ? predictor.current : predictor.acked;
  if (methods.prediction) predictor.renderOrigin(nowMs, origin);
  else {
    origin.x = state.originX;
    origin.y = state.originY;
    origin.z = state.originZ;
  }
  viewPoint.eyeX = origin.x;
  viewPoint.eyeY = origin.y;
  viewPoint.eyeZ = origin.z + eyeHeight(state);
  viewPoint.yaw = sampler.yaw;
  viewPoint.pitch = sampler.pitch;
  viewPoint.weapon = state.activeWeapon;
  viewPoint.alive = state.health > 0;
  overlay.update(nowMs);
  const dtMs = lastLiveFrameMs < 0 ? 0 : Math.min(250, nowMs - lastLiveFrameMs);
  lastLiveFrameMs = nowMs;
  if (pendingKillcam !== null) {
    if (predictor.current.health <= 0) liveKillcam.start(pendingKillcam);
    if (predictor.current.health <= 0 || nowMs - pendingKillcamAtMs > KILLCAM_PENDING_MS)
      pendingKillcam = null;
  }
  // Back in the game (respawned): the killcam ends; until then it holds its last frame.
  if (liveKillcam.playing && predictor.current.health > 0) liveKillcam.stop();
  if (!(liveKillcam.playing && liveKillcam.draw(nowMs, dtMs, 1, Number.POSITIVE_INFINITY)))
    scene.render(nowMs, viewPoint, client.view);
  report.killcam = liveKillcam.report;
  const cam = liveKillcam.report;
  killcamBanner.hidden = cam === null;
  if (cam !== null) {
    killcamBanner.textContent = `KILLCAM: ${playerName(cam.killer)} killed you, seen from ${playerName(cam.killer)}'s eyes (K: skip)`;
  }

  report.state = client.state;
  report.slot = client.slot;
  report.spawned = true;
  report.origin.x = state.originX;
  report.origin.y = state.originY;
  report.origin.z = state.originZ;
  report.yaw = sampler.yaw;
  report.pitch = sampler.pitch;
  report.health = predictor.current.health;
  report.weapon = predictor.current.activeWeapon;
  report.netGraph = session.netGraph.figures;
  report.serverStats = session.serverStats;
  report.netGraphVisible = netGraphView.visible;
  report.overlayVisible = overlay.visible;
  report.panelVisible = panel.visible;
  legend.style.display = overlay.visible ? 'block' : 'none';
  if (overlay.visible && overlay.stats.shots > 0) {
    $('overlay-mode').textContent =
      `${overlay.stats.lastMode}${overlay.stats.lastExact ? ' (named view)' : ''}, apart ${overlay.stats.lastOffset.toFixed(1)} u`;
  }

  const stats = session.serverStats;
  hud.update(
    nowMs,
    predictor.current,
    stats?.kills ?? 0,
    stats?.deaths ?? 0,
    effects.hitMarkerUntilMs,
    effects.footstepUntilMs,
  );
  report.killFeed = hud.feed.map((f) => f.text);
  report.shotsFired = effects.shotsFired;
  report.predictedHits = effects.predictedHits;
  if (netGraphView.visible && nowMs - lastGraphMs >= 66) {
    lastGraphMs = nowMs;
    netGraphView.draw(
      nowMs,
      session.netGraph.figures,
      client.packets,
      session.transport,
      stats?.updateRate ?? methods.updateRate,
      stats?.rateBytesPerSecond ?? methods.rateBytesPerSecond,
    );
    report.netGraphLines = netGraphView.lines;
  }
}

const loop = new FrameLoop(frame, {
  onError: (error) => {
    showStatus(`The game stopped: ${error instanceof Error ? error.message : String(error)}`, true);
  },
});
const demoUrl = params.get('demo');
if (demoUrl !== null) void fetchDemo(demoUrl);
else startSession();
loop.start();
