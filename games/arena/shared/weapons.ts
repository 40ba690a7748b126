// The arena's shared weapons, run by client and server after movement: selection, holster and deploy, reload, fire rate, spread and hit-scan rays; effects go out as events.
//
// Time is the commands' own: weaponTimeMs counts down by each command's msec, and whatever the
// weapon was doing ends when it reaches 0, at that exact millisecond (the time left over carries
// into the next phase, so a rifle held down fires exactly every refireMs over any split into
// commands). The states (WEAPON_IDLE and the others, in constants.ts):
//
//   idle        a switch asked for (pendingWeapon != activeWeapon) -> holstering (holsterMs)
//               else a reload asked for, or an empty clip, with reserve left -> reloading (reloadMs)
//               else the attack button held with rounds in the clip -> fire, firing (refireMs)
//   holstering  -> pendingWeapon becomes active, deploying (deployMs)
//   reloading   -> the clip is filled from the reserve, idle
//   firing      -> idle            deploying -> idle
//
// Selecting another weapon cancels a reload at once; otherwise it waits for the current phase.
// At most one trigger pull per command (a command longer than the refire time cannot fire
// faster than once per command). Spread comes from sharedRandom(cmd.randomSeed, 2 * pellet) and
// (.., 2 * pellet + 1), so both sides fire the same pellets. Deterministic (IEEE-exact arithmetic
// and dsin/dcos only) and allocation-free.

import type { UserCommand } from 'backstep/protocol';
import { quantize } from 'backstep/protocol';
import type { GameEventSink, TraceWorld } from 'backstep/sim';
import { angleVectors, dsinCos, sharedRandom, type Vec3, vec3 } from 'backstep/sim';
import {
  BUTTON_ATTACK,
  BUTTON_RELOAD,
  EVENT_DEPLOY,
  EVENT_HIT,
  EVENT_HOLSTER,
  EVENT_IMPACT_WORLD,
  EVENT_MISS,
  EVENT_PROJECTILE_FIRED,
  EVENT_RELOAD,
  EVENT_SHOT,
  EVENT_WEAPON_FIRE,
  IMPULSE_WEAPON_1,
  WEAPON_COUNT,
  WEAPON_DEPLOYING,
  WEAPON_FIRING,
  WEAPON_HOLSTERING,
  WEAPON_IDLE,
  WEAPON_LAUNCHER,
  WEAPON_RELOADING,
  WEAPON_RIFLE,
  WEAPON_SHOTGUN,
  WEAPON_TIME_LIMIT,
} from './constants.ts';
import { createRayHit, type HitTarget, type RayHit, rayVsTargets, viewHeight } from './hitboxes.ts';
import type { MovementState } from './movement.ts';
import { createTraceResult } from './trace.ts';

/** A pellet's direction round the aim: the sine and cosine of its angle (dsinCos). */
const pelletSinCos = new Float64Array(2);

/** One weapon's tuning (times in ms, distances in units). */
export interface WeaponDefinition {
  readonly name: string;
  /** Rounds a full clip holds. */
  readonly clipSize: number;
  /** Reserve rounds given at spawn. */
  readonly spawnReserve: number;
  /** Time from one shot to the next. */
  readonly refireMs: number;
  /** Time a reload takes (the whole clip at once). */
  readonly reloadMs: number;
  /** Time to bring the weapon out. */
  readonly deployMs: number;
  /** Time to put the weapon away. */
  readonly holsterMs: number;
  /** Rays per shot; 0 for a projectile weapon. */
  readonly pellets: number;
  /** Spread: each ray leaves within a cone of this tangent (the largest sideways offset per unit forward). */
  readonly spread: number;
  /** How far a ray reaches. */
  readonly range: number;
  /** Damage of one ray hitting the body (see hitDamage); for the launcher, of a direct hit. */
  readonly damage: number;
  /** Speed of the launcher's projectile (units/s), for the server's projectile object; 0 otherwise. */
  readonly projectileSpeed: number;
}

/** The weapons, by id (WEAPON_RIFLE, WEAPON_SHOTGUN, WEAPON_LAUNCHER). */
export const WEAPONS: readonly WeaponDefinition[] = [
  {
    name: 'rifle',
    clipSize: 30,
    spawnReserve: 90,
    refireMs: 100,
    reloadMs: 2000,
    deployMs: 400,
    holsterMs: 200,
    pellets: 1,
    spread: 0.01,
    range: 8192,
    damage: 20,
    projectileSpeed: 0,
  },
  {
    name: 'shotgun',
    clipSize: 8,
    spawnReserve: 24,
    refireMs: 900,
    reloadMs: 2500,
    deployMs: 500,
    holsterMs: 200,
    pellets: 8,
    spread: 0.08,
    range: 2048,
    damage: 9,
    projectileSpeed: 0,
  },
  {
    name: 'launcher',
    clipSize: 4,
    spawnReserve: 8,
    refireMs: 800,
    reloadMs: 3000,
    deployMs: 600,
    holsterMs: 250,
    pellets: 0,
    spread: 0,
    range: 0,
    damage: 100,
    projectileSpeed: 900,
  },
];

/** Damage scale per hitbox id: head, body, legs. */
export const HITBOX_DAMAGE_SCALE: readonly number[] = [2, 1, 0.75];

/** Whole damage points one ray of `weapon` does hitting box `box` (the server applies it). */
export function hitDamage(weapon: number, box: number): number {
  return Math.round(WEAPONS[weapon].damage * HITBOX_DAMAGE_SCALE[box]);
}

/** The weapon part of the arena player's state (flat numbers, whole values, copied field by field). */
export interface WeaponState {
  /** The weapon in hand (a WEAPON_ id). */
  activeWeapon: number;
  /** The weapon asked for; differs from activeWeapon while a switch is under way. */
  pendingWeapon: number;
  /** What the weapon is doing (WEAPON_IDLE ... WEAPON_HOLSTERING). */
  weaponState: number;
  /** Time until the current state ends (the next attack is possible no earlier), ms. */
  weaponTimeMs: number;
  rifleClip: number;
  rifleReserve: number;
  shotgunClip: number;
  shotgunReserve: number;
  launcherClip: number;
  launcherReserve: number;
}

/** What the weapons read and write: the movement state (origin, view, crouch) and the weapon state. */
export type ArmedState = MovementState & WeaponState;

/** The world the weapons see: the level's trace and the players a shot can hit. */
export interface WeaponWorld extends TraceWorld {
  /**
   * Poses of the players shots can hit (preallocated), filled by the side that runs a command
   * before running it: the client with the remote players as it drew them, the server with the
   * other players moved back by lag compensation.
   */
  readonly targets: HitTarget[];
  /** How many entries of `targets` are in use. */
  targetCount: number;
  /** Slot of the player whose command runs: its own boxes are never hit (-1: none). */
  ownerSlot: number;
}

/** Rounds in the clip of `weapon`. */
export function clipOf(state: WeaponState, weapon: number): number {
  if (weapon === WEAPON_RIFLE) return state.rifleClip;
  if (weapon === WEAPON_SHOTGUN) return state.shotgunClip;
  return state.launcherClip;
}

/** Reserve rounds of `weapon`. */
export function reserveOf(state: WeaponState, weapon: number): number {
  if (weapon === WEAPON_RIFLE) return state.rifleReserve;
  if (weapon === WEAPON_SHOTGUN) return state.shotgunReserve;
  return state.launcherReserve;
}

function setClip(state: WeaponState, weapon: number, rounds: number): void {
  if (weapon === WEAPON_RIFLE) state.rifleClip = rounds;
  else if (weapon === WEAPON_SHOTGUN) state.shotgunClip = rounds;
  else state.launcherClip = rounds;
}

function setReserve(state: WeaponState, weapon: number, rounds: number): void {
  if (weapon === WEAPON_RIFLE) state.rifleReserve = rounds;
  else if (weapon === WEAPON_SHOTGUN) state.shotgunReserve = rounds;
  else state.launcherReserve = rounds;
}

/** The spawn loadout: every clip full, every reserve at spawnReserve, the rifle out and ready. */
export function giveSpawnLoadout(state: WeaponState): void {
  state.activeWeapon = WEAPON_RIFLE;
  state.pendingWeapon = WEAPON_RIFLE;
  state.weaponState = WEAPON_IDLE;
  state.weaponTimeMs = 0;
  for (let w = 0; w < WEAPON_COUNT; w++) {
    setClip(state, w, WEAPONS[w].clipSize);
    setReserve(state, w, WEAPONS[w].spawnReserve);
  }
}

/** A command's duration as the shared code runs it: msec rounded and clamped to [1, 250], as movement does. */
export function commandMsec(cmd: UserCommand): number {
  const msec = Math.round(cmd.msec);
  if (!(msec >= 1)) return 1;
  return Math.min(msec, 250);
}

/** The pellet index is multiplied by this in the p3 of EVENT_SHOT and EVENT_IMPACT_WORLD. */
export const PELLET_SCALE = 1048576;
/** Bits per component of the directions packed with a pellet index. */
export const PELLET_DIRECTION_BITS = 10;
/** Bits per component of EVENT_PROJECTILE_FIRED's direction. */
export const PROJECTILE_DIRECTION_BITS = 12;
/** Distances and points in events are whole multiples of this (exact in the wire's float32). */
export const EVENT_DISTANCE_PRECISION = 1 / 16;
const EVENT_COORD_LIMIT = 16384;

function checkDirectionBits(fn: string, bits: number): void {
  if (!Number.isInteger(bits) || bits < 1 || bits > 12) {
    throw new Error(`${fn}: bits ${bits} is not an integer in [1, 12]`);
  }
}

/**
 * Packs a direction into one whole number below 2^(2 * bits) (octahedral mapping, `bits` per
 * component, 1..12, so it is exact in a float32): at most about 0.24 degrees off at 10 bits, 0.06 at
 * 12. A zero vector packs as straight up. For effects: the shot itself uses the exact direction.
 */
export function packUnitVector(v: Vec3, bits: number): number {
  checkDirectionBits('packUnitVector', bits);
  const n = Math.abs(v.x) + Math.abs(v.y) + Math.abs(v.z);
  let px = 0;
  let py = 0;
  if (n > 0) {
    px = v.x / n;
    py = v.y / n;
    if (v.z < 0) {
      const fx = (1 - Math.abs(py)) * (px < 0 ? -1 : 1);
      const fy = (1 - Math.abs(px)) * (py < 0 ? -1 : 1);
      px = fx;
      py = fy;
    }
  }
  const steps = (1 << bits) - 1;
  return Math.round((px + 1) * 0.5 * steps) * (steps + 1) + Math.round((py + 1) * 0.5 * steps);
}

/**
 * Unpacks packUnitVector(v, bits) into the unit vector `out` (and returns it). Any number is
 * accepted (event parameters come from the network): it is floored and clamped into range first.
 */
export function unpackUnitVector(packed: number, bits: number, out: Vec3): Vec3 {
  checkDirectionBits('unpackUnitVector', bits);
  const size = 1 << bits;
  const steps = size - 1;
  let p = Math.floor(packed);
  if (!(p >= 0)) p = 0;
  if (p > size * size - 1) p = size * size - 1;
  const qx = Math.floor(p / size);
  let x = (qx / steps) * 2 - 1;
  let y = ((p - qx * size) / steps) * 2 - 1;
  const z = 1 - Math.abs(x) - Math.abs(y);
  if (z < 0) {
    const fx = (1 - Math.abs(y)) * (x < 0 ? -1 : 1);
    const fy = (1 - Math.abs(x)) * (y < 0 ? -1 : 1);
    x = fx;
    y = fy;
  }
  const len = Math.sqrt(x * x + y * y + z * z);
  out.x = x / len;
  out.y = y / len;
  out.z = z / len;
  return out;
}

/**
 * Splits the p3 of EVENT_SHOT or EVENT_IMPACT_WORLD: writes the direction (or surface normal)
 * into `out` and returns the pellet index (clamped to [0, 15] for hostile input).
 */
export function unpackPelletDirection(p3: number, out: Vec3): number {
  let pellet = Math.floor(p3 / PELLET_SCALE);
  if (!(pellet >= 0)) pellet = 0;
  if (pellet > 15) pellet = 15;
  unpackUnitVector(p3 - pellet * PELLET_SCALE, PELLET_DIRECTION_BITS, out);
  return pellet;
}

function eventDistance(d: number): number {
  return quantize(d, 0, EVENT_COORD_LIMIT, EVENT_DISTANCE_PRECISION);
}

function eventCoord(v: number): number {
  return quantize(v, -EVENT_COORD_LIMIT, EVENT_COORD_LIMIT, EVENT_DISTANCE_PRECISION);
}

/** What one ray met. */
export const SHOT_MISS = 0;
export const SHOT_WORLD = 1;
export const SHOT_PLAYER = 2;

/** The result of traceShot (allocate once with createShotResult, reuse). */
export interface ShotResult {
  /** SHOT_MISS, SHOT_WORLD or SHOT_PLAYER. */
  kind: number;
  /** Distance from the start to where the ray stopped (the range on a miss). */
  distance: number;
  /** Where it stopped. */
  point: Vec3;
  /** SHOT_WORLD: the surface normal. */
  normal: Vec3;
  /** SHOT_PLAYER: the slot, hitbox and target index (see RayHit). */
  hit: RayHit;
}

export function createShotResult(): ShotResult {
  return { kind: SHOT_MISS, distance: 0, point: vec3(), normal: vec3(), hit: createRayHit() };
}

const POINT_BOX = vec3();
const rayEnd = vec3();
const trace = createTraceResult();

/**
 * Casts one ray from `start` along the unit vector `dir` for `range` units through the level (a
 * zero-size trace) and the world's hit targets (ignoring world.ownerSlot); the nearest wins, a
 * player standing exactly where the level stops the ray included. Fills `out`.
 */
export function traceShot(world: WeaponWorld, start: Vec3, dir: Vec3, range: number, out: ShotResult): void {
  rayEnd.x = start.x + dir.x * range;
  rayEnd.y = start.y + dir.y * range;
  rayEnd.z = start.z + dir.z * range;
  world.trace(start, rayEnd, POINT_BOX, POINT_BOX, trace);
  const worldDistance = trace.fraction * range;
  if (rayVsTargets(start, dir, worldDistance, world.targets, world.targetCount, world.ownerSlot, out.hit)) {
    out.kind = SHOT_PLAYER;
    out.distance = out.hit.distance;
    out.point.x = out.hit.point.x;
    out.point.y = out.hit.point.y;
    out.point.z = out.hit.point.z;
    return;
  }
  out.kind = trace.fraction < 1 ? SHOT_WORLD : SHOT_MISS;
  out.distance = worldDistance;
  out.point.x = trace.endPos.x;
  out.point.y = trace.endPos.y;
  out.point.z = trace.endPos.z;
  out.normal.x = trace.normal.x;
  out.normal.y = trace.normal.y;
  out.normal.z = trace.normal.z;
}

const eye = vec3();
const forward = vec3();
const right = vec3();
const up = vec3();
const dir = vec3();
const shot = createShotResult();

/**
 * The direction of ray `pellet` of a shot along `forward` (with `right` and `up` its unit
 * sideways vectors) and spread `spread`, seeded by `seed`: uniform over a disc of radius
 * `spread` one unit ahead, so the ray stays within atan(spread) of forward. Written into `out`.
 */
export function pelletDirection(
  forwardDir: Vec3,
  rightDir: Vec3,
  upDir: Vec3,
  spread: number,
  seed: number,
  pellet: number,
  out: Vec3,
): Vec3 {
  const r = spread * Math.sqrt(sharedRandom(seed, 2 * pellet));
  const a = 360 * sharedRandom(seed, 2 * pellet + 1);
  dsinCos(a, pelletSinCos);
  const side = r * pelletSinCos[1];
  const lift = r * pelletSinCos[0];
  out.x = forwardDir.x + rightDir.x * side + upDir.x * lift;
  out.y = forwardDir.y + rightDir.y * side + upDir.y * lift;
  out.z = forwardDir.z + rightDir.z * side + upDir.z * lift;
  const len = Math.sqrt(out.x * out.x + out.y * out.y + out.z * out.z);
  out.x /= len;
  out.y /= len;
  out.z /= len;
  return out;
}

/** Pulls the trigger of the active weapon (the clip has already been decremented). */
function fire(state: ArmedState, cmd: UserCommand, world: WeaponWorld, events: GameEventSink): void {
  const weapon = state.activeWeapon;
  const def = WEAPONS[weapon];
  events.emit(EVENT_WEAPON_FIRE, weapon, clipOf(state, weapon), 0, 0);
  eye.x = state.originX;
  eye.y = state.originY;
  eye.z = state.originZ + viewHeight(state.ducked);
  angleVectors(state.pitch, state.yaw, 0, forward, right, up);
  if (weapon === WEAPON_LAUNCHER) {
    events.emit(
      EVENT_PROJECTILE_FIRED,
      eye.x,
      eye.y,
      eye.z,
      packUnitVector(forward, PROJECTILE_DIRECTION_BITS),
    );
    return;
  }
  for (let pellet = 0; pellet < def.pellets; pellet++) {
    pelletDirection(forward, right, up, def.spread, cmd.randomSeed, pellet, dir);
    events.emit(
      EVENT_SHOT,
      eye.x,
      eye.y,
      eye.z,
      pellet * PELLET_SCALE + packUnitVector(dir, PELLET_DIRECTION_BITS),
    );
    traceShot(world, eye, dir, def.range, shot);
    if (shot.kind === SHOT_PLAYER) {
      events.emit(EVENT_HIT, shot.hit.slot, shot.hit.box, pellet, eventDistance(shot.distance));
    } else if (shot.kind === SHOT_WORLD) {
      events.emit(
        EVENT_IMPACT_WORLD,
        eventCoord(shot.point.x),
        eventCoord(shot.point.y),
        eventCoord(shot.point.z),
        pellet * PELLET_SCALE + packUnitVector(shot.normal, PELLET_DIRECTION_BITS),
      );
    } else {
      events.emit(EVENT_MISS, pellet, def.range, 0, 0);
    }
  }
}

/**
 * Enough steps of the state machine for any command: each pair of steps either ends the command
 * or starts a phase of at least 100 ms, and a command lasts at most 250 ms.
 */
const MAX_WEAPON_STEPS = 16;

/**
 * Runs the weapons for one user command on `state` in place, after movement (it fires from the
 * origin and view the move ended with): impulse IMPULSE_WEAPON_1 + w selects weapon w,
 * BUTTON_ATTACK fires, BUTTON_RELOAD reloads, an empty clip reloads by itself (see the file
 * header for the state machine). Effects and shots go to `events` (EVENT_WEAPON_FIRE, EVENT_SHOT,
 * EVENT_HIT, EVENT_IMPACT_WORLD, EVENT_MISS, EVENT_PROJECTILE_FIRED, EVENT_RELOAD, EVENT_HOLSTER,
 * EVENT_DEPLOY), identical on every side for the same state, command and targets. The world is
 * only traced. Every field stays a whole number within its wire range. Does not look at health:
 * the caller does not run a dead player's command at all.
 */
export function runWeapons(
  state: ArmedState,
  cmd: UserCommand,
  world: WeaponWorld,
  events: GameEventSink,
): void {
  const select = cmd.impulse - IMPULSE_WEAPON_1;
  if (Number.isInteger(select) && select >= 0 && select < WEAPON_COUNT) {
    state.pendingWeapon = select;
    if (state.weaponState === WEAPON_RELOADING && select !== state.activeWeapon) {
      state.weaponState = WEAPON_IDLE;
      state.weaponTimeMs = 0;
    }
  }
  const attack = (cmd.buttons & BUTTON_ATTACK) !== 0;
  const reload = (cmd.buttons & BUTTON_RELOAD) !== 0;
  let time = state.weaponTimeMs - commandMsec(cmd);
  let fired = false;
  for (let step = 0; step < MAX_WEAPON_STEPS && time <= 0; step++) {
    const weapon = state.activeWeapon;
    const def = WEAPONS[weapon];
    if (state.weaponState === WEAPON_HOLSTERING) {
      state.activeWeapon = state.pendingWeapon;
      state.weaponState = WEAPON_DEPLOYING;
      const deployMs = WEAPONS[state.activeWeapon].deployMs;
      time += deployMs;
      events.emit(EVENT_DEPLOY, state.activeWeapon, deployMs, 0, 0);
      continue;
    }
    if (state.weaponState === WEAPON_RELOADING) {
      const clip = clipOf(state, weapon);
      const reserve = reserveOf(state, weapon);
      const take = Math.min(def.clipSize - clip, reserve);
      if (take > 0) {
        setClip(state, weapon, clip + take);
        setReserve(state, weapon, reserve - take);
      }
      state.weaponState = WEAPON_IDLE;
      continue;
    }
    if (state.weaponState !== WEAPON_IDLE) {
      state.weaponState = WEAPON_IDLE;
      continue;
    }
    if (state.pendingWeapon !== weapon) {
      state.weaponState = WEAPON_HOLSTERING;
      time += def.holsterMs;
      events.emit(EVENT_HOLSTER, weapon, state.pendingWeapon, 0, 0);
      continue;
    }
    const clip = clipOf(state, weapon);
    if ((clip === 0 || (reload && clip < def.clipSize)) && reserveOf(state, weapon) > 0) {
      state.weaponState = WEAPON_RELOADING;
      time += def.reloadMs;
      events.emit(EVENT_RELOAD, weapon, def.reloadMs, 0, 0);
      continue;
    }
    if (attack && clip > 0 && !fired) {
      fired = true;
      setClip(state, weapon, clip - 1);
      state.weaponState = WEAPON_FIRING;
      time += def.refireMs;
      fire(state, cmd, world, events);
      continue;
    }
    // Ready and nothing asked for: idle time is not saved up for later.
    time = 0;
    break;
  }
  if (time < 0) time = 0;
  state.weaponTimeMs = Math.min(time, WEAPON_TIME_LIMIT);
}
