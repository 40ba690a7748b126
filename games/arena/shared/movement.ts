// Shared player movement (the arena's pm_shared): (state, cmd, world) -> state, run identically by client and server.
//
// One command runs as: checkDuck, groundTrace, then walkMove (friction, acceleration along the
// ground plane, stepSlideMove, stayOnGround, footsteps) or airMove (half gravity, air
// acceleration, slideMove, half gravity); then snapOrigin puts the origin on the wire's grid and
// groundTrace runs again from where the player now stands. Only IEEE-exact arithmetic and the
// engine's dsin/dcos (dsinCos) are used, and nothing is allocated.

import type { UserCommand } from 'backstep/protocol';
import { quantize, quantizeAngle, quantizeAngles, quantizeValues } from 'backstep/protocol';
import {
  copyVec3,
  dot,
  dsinCosInPlace,
  type GameEventSink,
  NO_EVENTS,
  type TraceWorld,
  type Vec3,
  vec3,
} from 'backstep/sim';
import {
  ACCELERATE,
  AIR_ACCELERATE,
  AIR_WISH_SPEED_CAP,
  ANGLE_BITS,
  BUTTON_CROUCH,
  BUTTON_JUMP,
  DUCK_SPEED_SCALE,
  EVENT_FOOTSTEP,
  EVENT_JUMP,
  EVENT_LAND,
  FOOTSTEP_DISTANCE,
  FRICTION,
  GRAVITY,
  GROUND_TRACE_DISTANCE,
  JUMP_VELOCITY,
  MAX_SPEED,
  MAX_VELOCITY,
  MIN_WALK_NORMAL,
  ORIGIN_LIMIT,
  ORIGIN_PRECISION,
  OVERCLIP,
  PLAYER_DUCK_HEIGHT,
  PLAYER_HALF_WIDTH,
  PLAYER_STAND_HEIGHT,
  STEP_DISTANCE_PRECISION,
  STEP_SIZE,
  STOP_SPEED,
  VELOCITY_LIMIT,
  VELOCITY_PRECISION,
} from './constants.ts';
import { createTraceResult } from './trace.ts';

/**
 * The movement part of the arena player's state (a flat record, copied field by field). The
 * origin is the centre of the feet.
 */
export interface MovementState {
  originX: number;
  originY: number;
  originZ: number;
  velocityX: number;
  velocityY: number;
  velocityZ: number;
  /** View angles, degrees in [0, 360), 16-bit steps. */
  pitch: number;
  yaw: number;
  roll: number;
  onGround: boolean;
  ducked: boolean;
  /** The jump input was held during the previous command (a jump needs a new press). */
  jumpHeld: boolean;
  /** Distance walked since the last footstep, [0, FOOTSTEP_DISTANCE]. */
  stepDistance: number;
}

const MAX_BUMPS = 4;
const MAX_CLIP_PLANES = 5;
/** Moving up faster than this along the ground's normal means the player has left the ground. */
const LEAVE_GROUND_SPEED = 10;
/** A snapped origin must be clear of every solid by this much (in each axis of the hull). */
const SNAP_MARGIN = ORIGIN_PRECISION;
/** How high stay-on-ground starts its downward trace above the feet. */
const STAY_ON_GROUND_LIFT = 2;

/** The hull [mins, maxs] for a standing or crouched player, written into `mins` and `maxs`. */
export function playerHull(ducked: boolean, mins: Vec3, maxs: Vec3): void {
  mins.x = -PLAYER_HALF_WIDTH;
  mins.y = -PLAYER_HALF_WIDTH;
  mins.z = 0;
  maxs.x = PLAYER_HALF_WIDTH;
  maxs.y = PLAYER_HALF_WIDTH;
  maxs.z = ducked ? PLAYER_DUCK_HEIGHT : PLAYER_STAND_HEIGHT;
}

export function quantizeOrigin(v: number): number {
  return quantize(v, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
}

export function quantizeVelocity(v: number): number {
  return quantize(v, -VELOCITY_LIMIT, VELOCITY_LIMIT, VELOCITY_PRECISION);
}

export function quantizeStepDistance(v: number): number {
  return quantize(v, 0, FOOTSTEP_DISTANCE, STEP_DISTANCE_PRECISION);
}

export function quantizeViewAngle(v: number): number {
  return quantizeAngle(v, ANGLE_BITS);
}

// The locals of one move. All of them are zeroed before each move, just to make
// sure there are no differences between running on the client and on the server.
const locals = {
  frametime: 0,
  forwardMove: 0,
  sideMove: 0,
  jumpPressed: false,
  crouchPressed: false,
  /** On walkable ground. */
  walking: false,
  /** Touching ground of any slope (too steep to walk on when !walking). */
  groundPlane: false,
  /** This command moved the player along the ground (no jump). */
  walked: false,
  /** Downward speed when the command began (for the landing event). */
  fallSpeed: 0,
};
const origin = vec3();
const velocity = vec3();
const startOrigin = vec3();
const liftedOrigin = vec3();
const groundNormal = vec3();
const forward = vec3();
/** A move's view angles (0..2) and start origin (3..5) while they are quantized. */
const moveScratch = new Float64Array(6);

/** The yaw's sine and cosine (dsinCos). */
const sinCos = new Float64Array(2);
const right = vec3();
const mins = vec3();
const maxs = vec3();
const wishDir = vec3();
const end = vec3();
const clip = vec3();
const hitNormal = vec3();
const crease = vec3();
const stepStartOrigin = vec3();
const stepStartVelocity = vec3();
const slideOrigin = vec3();
const slideVelocity = vec3();
const testMins = vec3();
const snapped = vec3();
const cellLow = vec3();
const cellCorner = vec3();
const testMaxs = vec3();
const planes: Vec3[] = [vec3(), vec3(), vec3(), vec3(), vec3()];
const trace = createTraceResult();

function zero(v: Vec3): void {
  v.x = 0;
  v.y = 0;
  v.z = 0;
}

function resetLocals(): void {
  locals.frametime = 0;
  locals.forwardMove = 0;
  locals.sideMove = 0;
  locals.jumpPressed = false;
  locals.crouchPressed = false;
  locals.walking = false;
  locals.groundPlane = false;
  locals.walked = false;
  locals.fallSpeed = 0;
  zero(origin);
  zero(velocity);
  zero(startOrigin);
  zero(liftedOrigin);
  zero(groundNormal);
  zero(forward);
  zero(right);
  zero(mins);
  zero(maxs);
  zero(wishDir);
  zero(end);
  zero(clip);
  zero(hitNormal);
  zero(crease);
  zero(stepStartOrigin);
  zero(stepStartVelocity);
  zero(slideOrigin);
  zero(slideVelocity);
  zero(testMins);
  zero(snapped);
  zero(cellLow);
  zero(cellCorner);
  zero(testMaxs);
  for (let i = 0; i < MAX_CLIP_PLANES; i++) zero(planes[i]);
}

/** Scales `v` to unit length in place (leaves a zero vector alone); returns the old length. */
function normalize(v: Vec3): number {
  const len = Math.sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
  if (len > 0) {
    v.x /= len;
    v.y /= len;
    v.z /= len;
  }
  return len;
}

function clampMove(v: number): number {
  if (!(v >= -127)) return -127;
  return Math.min(v, 127);
}

/** Slides `v` along a plane: removes its part into the plane, and a hair more (`overbounce`). */
function clipVelocity(v: Vec3, normal: Vec3, out: Vec3, overbounce: number): void {
  let backoff = dot(v, normal);
  if (backoff < 0) backoff *= overbounce;
  else backoff /= overbounce;
  out.x = v.x - normal.x * backoff;
  out.y = v.y - normal.y * backoff;
  out.z = v.z - normal.z * backoff;
}

/** True when the hull, grown by `margin` on every side, is clear of solid at `point`. */
function positionClear(world: TraceWorld, point: Vec3, margin: number, ducked: boolean): boolean {
  playerHull(ducked, testMins, testMaxs);
  testMins.x -= margin;
  testMins.y -= margin;
  testMins.z -= margin;
  testMaxs.x += margin;
  testMaxs.y += margin;
  testMaxs.z += margin;
  world.trace(point, point, testMins, testMaxs, trace);
  return !trace.startSolid;
}

/** Crouch while asked to; stand up only when the standing hull fits. Sets the hull. */
function checkDuck(state: MovementState, world: TraceWorld): void {
  if (locals.crouchPressed) {
    state.ducked = true;
  } else if (state.ducked && positionClear(world, origin, SNAP_MARGIN, false)) {
    state.ducked = false;
  }
  playerHull(state.ducked, mins, maxs);
}

/**
 * Finds what the player stands on, a little below the feet. Walkable ground (normal.z >=
 * MIN_WALK_NORMAL) makes the player walk; arriving on it emits a landing and removes the
 * velocity into it. Steeper ground is remembered so the air move slides along it. A player
 * moving up and away from the ground faster than LEAVE_GROUND_SPEED has left it, unless the
 * command walked it there (over the top of a ramp).
 */
function groundTrace(state: MovementState, world: TraceWorld, events: GameEventSink): void {
  end.x = origin.x;
  end.y = origin.y;
  end.z = origin.z - GROUND_TRACE_DISTANCE;
  world.trace(origin, end, mins, maxs, trace);
  // Moving up and away from the ground (a jump, a kick) leaves it; walking over a crest does not.
  const kicked = !locals.walked && velocity.z > 0 && dot(velocity, trace.normal) > LEAVE_GROUND_SPEED;
  if (trace.fraction === 1 || trace.allSolid || kicked) {
    locals.groundPlane = false;
    locals.walking = false;
    state.onGround = false;
    return;
  }
  locals.groundPlane = true;
  groundNormal.x = trace.normal.x;
  groundNormal.y = trace.normal.y;
  groundNormal.z = trace.normal.z;
  if (groundNormal.z < MIN_WALK_NORMAL) {
    locals.walking = false;
    state.onGround = false;
    return;
  }
  locals.walking = true;
  if (!state.onGround) events.emit(EVENT_LAND, locals.fallSpeed, 0, 0, 0);
  state.onGround = true;
  // Landing kills the velocity into the ground; a walking player's velocity follows the new ground.
  const into = dot(velocity, groundNormal);
  if (into < 0 || locals.walked) {
    velocity.x -= groundNormal.x * into;
    velocity.y -= groundNormal.y * into;
    velocity.z -= groundNormal.z * into;
  }
}

/** Jumps on a new press of the jump input while on walkable ground. */
function checkJump(state: MovementState, events: GameEventSink): boolean {
  if (!locals.jumpPressed || state.jumpHeld) return false;
  velocity.z = JUMP_VELOCITY;
  locals.walking = false;
  locals.groundPlane = false;
  state.onGround = false;
  events.emit(EVENT_JUMP, JUMP_VELOCITY, 0, 0, 0);
  return true;
}

/** Ground friction: speed drops by max(speed, STOP_SPEED) * FRICTION * frametime. */
function friction(): void {
  const speed = Math.sqrt(velocity.x * velocity.x + velocity.y * velocity.y);
  if (speed < 1) {
    velocity.x = 0;
    velocity.y = 0;
    return;
  }
  const control = Math.max(speed, STOP_SPEED);
  let newSpeed = speed - control * FRICTION * locals.frametime;
  if (newSpeed < 0) newSpeed = 0;
  const scale = newSpeed / speed;
  velocity.x *= scale;
  velocity.y *= scale;
  velocity.z *= scale;
}

/**
 * Quake acceleration: tops up the speed along `wishDir` toward `capSpeed`, gaining at most
 * accel * wishSpeed * frametime. On the ground capSpeed is wishSpeed; in the air it is small,
 * which is what lets a player steer (and strafe) in the air without gaining straight-line speed.
 */
function accelerate(wishSpeed: number, capSpeed: number, accel: number): void {
  const addSpeed = capSpeed - dot(velocity, wishDir);
  if (addSpeed <= 0) return;
  let accelSpeed = accel * locals.frametime * wishSpeed;
  if (accelSpeed > addSpeed) accelSpeed = addSpeed;
  velocity.x += accelSpeed * wishDir.x;
  velocity.y += accelSpeed * wishDir.y;
  velocity.z += accelSpeed * wishDir.z;
}

/**
 * Builds the wish direction from the forward and right vectors and the command's moves, and
 * returns the wish speed: MAX_SPEED times the larger move over 127 (diagonals are not faster),
 * limited while crouched.
 */
function wishVelocity(ducked: boolean): number {
  const fmove = locals.forwardMove;
  const smove = locals.sideMove;
  wishDir.x = forward.x * fmove + right.x * smove;
  wishDir.y = forward.y * fmove + right.y * smove;
  wishDir.z = forward.z * fmove + right.z * smove;
  normalize(wishDir);
  const largest = Math.max(Math.abs(fmove), Math.abs(smove));
  if (largest === 0) return 0;
  let wishSpeed = (MAX_SPEED * largest) / 127;
  if (ducked && wishSpeed > MAX_SPEED * DUCK_SPEED_SCALE) wishSpeed = MAX_SPEED * DUCK_SPEED_SCALE;
  return wishSpeed;
}

/**
 * Moves the origin by velocity * frametime, sliding along whatever it hits: up to MAX_BUMPS
 * traces, the velocity clipped against every plane touched, along the crease of two planes, and
 * stopped dead in a corner of three. A walking player meets a slope too steep to stand on as a
 * vertical wall. Returns true if anything was hit.
 */
function slideMove(world: TraceWorld): boolean {
  let planeCount = 0;
  if (locals.groundPlane) {
    planes[planeCount].x = groundNormal.x;
    planes[planeCount].y = groundNormal.y;
    planes[planeCount].z = groundNormal.z;
    planeCount++;
  }
  // Never turn back against the original velocity.
  planes[planeCount].x = velocity.x;
  planes[planeCount].y = velocity.y;
  planes[planeCount].z = velocity.z;
  normalize(planes[planeCount]);
  planeCount++;
  let timeLeft = locals.frametime;
  let bump = 0;
  for (; bump < MAX_BUMPS; bump++) {
    end.x = origin.x + velocity.x * timeLeft;
    end.y = origin.y + velocity.y * timeLeft;
    end.z = origin.z + velocity.z * timeLeft;
    world.trace(origin, end, mins, maxs, trace);
    if (trace.allSolid) {
      velocity.z = 0;
      return true;
    }
    if (trace.fraction > 0) {
      origin.x = trace.endPos.x;
      origin.y = trace.endPos.y;
      origin.z = trace.endPos.z;
    }
    if (trace.fraction === 1) break;
    timeLeft -= timeLeft * trace.fraction;
    if (planeCount >= MAX_CLIP_PLANES) {
      zero(velocity);
      return true;
    }
    // A walking player meets a slope too steep to stand on as a wall: it cannot run up it.
    hitNormal.x = trace.normal.x;
    hitNormal.y = trace.normal.y;
    hitNormal.z = trace.normal.z;
    if (locals.walking && hitNormal.z > 0 && hitNormal.z < MIN_WALK_NORMAL) {
      hitNormal.z = 0;
      normalize(hitNormal);
    }
    // The same plane again: nudge the velocity out along it (non-axial planes and epsilons).
    let repeated = false;
    for (let i = 0; i < planeCount; i++) {
      if (dot(hitNormal, planes[i]) > 0.99) {
        velocity.x += hitNormal.x;
        velocity.y += hitNormal.y;
        velocity.z += hitNormal.z;
        repeated = true;
        break;
      }
    }
    if (repeated) continue;
    planes[planeCount].x = hitNormal.x;
    planes[planeCount].y = hitNormal.y;
    planes[planeCount].z = hitNormal.z;
    planeCount++;
    if (!clipAgainstPlanes(planeCount)) {
      zero(velocity);
      return true;
    }
  }
  return bump !== 0;
}

/**
 * Replaces the velocity with one that runs along every plane it would enter: clipped against
 * one plane, or sent along the crease of two. Returns false in a corner of three planes.
 */
function clipAgainstPlanes(planeCount: number): boolean {
  for (let i = 0; i < planeCount; i++) {
    const pi = planes[i];
    if (dot(velocity, pi) >= 0.1) continue;
    clipVelocity(velocity, pi, clip, OVERCLIP);
    for (let j = 0; j < planeCount; j++) {
      if (j === i) continue;
      const pj = planes[j];
      if (dot(clip, pj) >= 0.1) continue;
      clipVelocity(clip, pj, clip, OVERCLIP);
      if (dot(clip, pi) >= 0) continue;
      // Clipping against the second plane pushed back into the first: run along their crease.
      crease.x = pi.y * pj.z - pi.z * pj.y;
      crease.y = pi.z * pj.x - pi.x * pj.z;
      crease.z = pi.x * pj.y - pi.y * pj.x;
      normalize(crease);
      const along = dot(crease, velocity);
      clip.x = crease.x * along;
      clip.y = crease.y * along;
      clip.z = crease.z * along;
      for (let k = 0; k < planeCount; k++) {
        if (k === i || k === j) continue;
        if (dot(clip, planes[k]) < 0.1) return false;
      }
    }
    velocity.x = clip.x;
    velocity.y = clip.y;
    velocity.z = clip.z;
    return true;
  }
  return true;
}

/**
 * Slide move that climbs steps: if the plain slide hits something, the move is tried again
 * STEP_SIZE higher and pushed back down; the stepped result is kept only when it lands on
 * walkable ground and got further horizontally than the plain one.
 */
function stepSlideMove(world: TraceWorld): void {
  stepStartOrigin.x = origin.x;
  stepStartOrigin.y = origin.y;
  stepStartOrigin.z = origin.z;
  stepStartVelocity.x = velocity.x;
  stepStartVelocity.y = velocity.y;
  stepStartVelocity.z = velocity.z;
  if (!slideMove(world)) return;
  slideOrigin.x = origin.x;
  slideOrigin.y = origin.y;
  slideOrigin.z = origin.z;
  slideVelocity.x = velocity.x;
  slideVelocity.y = velocity.y;
  slideVelocity.z = velocity.z;

  end.x = stepStartOrigin.x;
  end.y = stepStartOrigin.y;
  end.z = stepStartOrigin.z + STEP_SIZE;
  world.trace(stepStartOrigin, end, mins, maxs, trace);
  const stepHeight = trace.endPos.z - stepStartOrigin.z;
  if (trace.allSolid || stepHeight <= 0) return;
  origin.x = trace.endPos.x;
  origin.y = trace.endPos.y;
  origin.z = trace.endPos.z;
  velocity.x = stepStartVelocity.x;
  velocity.y = stepStartVelocity.y;
  velocity.z = stepStartVelocity.z;
  slideMove(world);

  end.x = origin.x;
  end.y = origin.y;
  end.z = origin.z - stepHeight;
  world.trace(origin, end, mins, maxs, trace);
  const slideX = slideOrigin.x - stepStartOrigin.x;
  const slideY = slideOrigin.y - stepStartOrigin.y;
  const stepX = trace.endPos.x - stepStartOrigin.x;
  const stepY = trace.endPos.y - stepStartOrigin.y;
  const landed = !trace.allSolid && trace.fraction < 1 && trace.normal.z >= MIN_WALK_NORMAL;
  if (!landed || stepX * stepX + stepY * stepY <= slideX * slideX + slideY * slideY) {
    origin.x = slideOrigin.x;
    origin.y = slideOrigin.y;
    origin.z = slideOrigin.z;
    velocity.x = slideVelocity.x;
    velocity.y = slideVelocity.y;
    velocity.z = slideVelocity.z;
    return;
  }
  origin.x = trace.endPos.x;
  origin.y = trace.endPos.y;
  origin.z = trace.endPos.z;
  clipVelocity(velocity, trace.normal, velocity, OVERCLIP);
}

/**
 * Keeps a walking player on the ground going down steps and slopes: if walkable ground lies
 * within STEP_SIZE below, the player is put on it (traced from a little above the feet, which also
 * restores the full TRACE_EPSILON clearance above the ground).
 */
function stayOnGround(world: TraceWorld): void {
  end.x = origin.x;
  end.y = origin.y;
  end.z = origin.z + STAY_ON_GROUND_LIFT;
  world.trace(origin, end, mins, maxs, trace);
  if (trace.allSolid) return;
  liftedOrigin.x = trace.endPos.x;
  liftedOrigin.y = trace.endPos.y;
  liftedOrigin.z = trace.endPos.z;
  end.z = origin.z - STEP_SIZE;
  world.trace(liftedOrigin, end, mins, maxs, trace);
  if (trace.fraction > 0 && trace.fraction < 1 && !trace.startSolid && trace.normal.z >= MIN_WALK_NORMAL) {
    origin.x = trace.endPos.x;
    origin.y = trace.endPos.y;
    origin.z = trace.endPos.z;
  }
}

/** Half of this move's gravity (applied before and after the air move: exact for constant gravity). */
function halfGravity(): void {
  velocity.z -= GRAVITY * 0.5 * locals.frametime;
}

/**
 * In the air (or on a slope too steep to stand on): gravity, a little air control toward the
 * wish direction (AIR_WISH_SPEED_CAP), and a slide move.
 */
function airMove(state: MovementState, world: TraceWorld): void {
  halfGravity();
  forward.z = 0;
  right.z = 0;
  normalize(forward);
  normalize(right);
  const wishSpeed = wishVelocity(state.ducked);
  accelerate(wishSpeed, Math.min(wishSpeed, AIR_WISH_SPEED_CAP), AIR_ACCELERATE);
  // Sliding down a slope too steep to stand on.
  if (locals.groundPlane) clipVelocity(velocity, groundNormal, velocity, OVERCLIP);
  slideMove(world);
  halfGravity();
}

/**
 * On walkable ground: a jump turns it into an air move; otherwise friction, acceleration along
 * the ground plane, a step slide move, staying on the ground going down, and footsteps.
 */
function walkMove(state: MovementState, world: TraceWorld, events: GameEventSink): void {
  if (checkJump(state, events)) {
    airMove(state, world);
    return;
  }
  locals.walked = true;
  friction();
  // Move along the ground plane: the yaw's forward and right, projected onto it.
  forward.z = 0;
  right.z = 0;
  clipVelocity(forward, groundNormal, forward, OVERCLIP);
  clipVelocity(right, groundNormal, right, OVERCLIP);
  normalize(forward);
  normalize(right);
  const wishSpeed = wishVelocity(state.ducked);
  accelerate(wishSpeed, wishSpeed, ACCELERATE);
  // Follow the ground plane without losing speed going up or down a slope.
  const speed = Math.sqrt(dot(velocity, velocity));
  clipVelocity(velocity, groundNormal, velocity, OVERCLIP);
  const clipped = normalize(velocity);
  if (clipped > 0) {
    velocity.x *= speed;
    velocity.y *= speed;
    velocity.z *= speed;
  }
  if (velocity.x === 0 && velocity.y === 0) return;
  const fromX = origin.x;
  const fromY = origin.y;
  stepSlideMove(world);
  stayOnGround(world);
  if (!state.ducked) {
    const dx = origin.x - fromX;
    const dy = origin.y - fromY;
    footsteps(state, Math.sqrt(dx * dx + dy * dy), events);
  }
}

/** Adds the distance walked to the step accumulator and emits a footstep each FOOTSTEP_DISTANCE. */
function footsteps(state: MovementState, distance: number, events: GameEventSink): void {
  let total = state.stepDistance + distance;
  if (total >= FOOTSTEP_DISTANCE) {
    total -= FOOTSTEP_DISTANCE * Math.floor(total / FOOTSTEP_DISTANCE);
    // Whole units per second: what the event carries on the wire, the same on both sides.
    events.emit(
      EVENT_FOOTSTEP,
      Math.round(Math.sqrt(velocity.x * velocity.x + velocity.y * velocity.y)),
      0,
      0,
      0,
    );
  }
  state.stepDistance = total;
}

/**
 * Puts the origin on the wire's grid. Rounding moves it at most 1/64 per axis, which the trace's
 * TRACE_EPSILON clearance absorbs; should the rounded origin still come within SNAP_MARGIN of a
 * solid (the player was already inside a surface's epsilon shell), the corners of the grid cell
 * around the origin are tried in a fixed order, then the rounded origin with no margin, then the
 * origin the command started from (on the grid and clear).
 */
function snapOrigin(world: TraceWorld, ducked: boolean): void {
  snapped.x = quantizeOrigin(origin.x);
  snapped.y = quantizeOrigin(origin.y);
  snapped.z = quantizeOrigin(origin.z);
  if (positionClear(world, snapped, SNAP_MARGIN, ducked)) {
    copyVec3(origin, snapped);
    return;
  }
  cellLow.x = quantizeOrigin(origin.x - ORIGIN_PRECISION / 2);
  cellLow.y = quantizeOrigin(origin.y - ORIGIN_PRECISION / 2);
  cellLow.z = quantizeOrigin(origin.z - ORIGIN_PRECISION / 2);
  for (let corner = 0; corner < 8; corner++) {
    cellCorner.x = corner & 1 ? quantizeOrigin(cellLow.x + ORIGIN_PRECISION) : cellLow.x;
    cellCorner.y = corner & 2 ? quantizeOrigin(cellLow.y + ORIGIN_PRECISION) : cellLow.y;
    cellCorner.z = corner & 4 ? quantizeOrigin(cellLow.z + ORIGIN_PRECISION) : cellLow.z;
    if (positionClear(world, cellCorner, SNAP_MARGIN, ducked)) {
      copyVec3(origin, cellCorner);
      return;
    }
  }
  copyVec3(origin, positionClear(world, snapped, 0, ducked) ? snapped : startOrigin);
}

function clampVelocity(v: number): number {
  return Math.max(-MAX_VELOCITY, Math.min(v, MAX_VELOCITY));
}

/**
 * Runs one user command on `state` in place: `(state, cmd, world) -> state`. The world is only
 * traced, never changed. Effects go to `events` (EVENT_JUMP, EVENT_LAND, EVENT_FOOTSTEP). Ends
 * with every field quantized exactly as the player's serialize writes it, and with the player
 * out of solid if it started out of solid. Deterministic and allocation-free.
 */
export function movePlayer(
  state: MovementState,
  cmd: UserCommand,
  world: TraceWorld,
  events: GameEventSink,
): void {
  resetLocals();
  let msec = Math.round(cmd.msec);
  if (!(msec >= 1)) msec = 1;
  if (msec > 250) msec = 250;
  locals.frametime = msec / 1000;
  locals.forwardMove = Math.round(clampMove(cmd.forwardMove));
  locals.sideMove = Math.round(clampMove(cmd.sideMove));
  const upMove = clampMove(cmd.upMove);
  locals.jumpPressed = (cmd.buttons & BUTTON_JUMP) !== 0 || upMove > 0;
  locals.crouchPressed = (cmd.buttons & BUTTON_CROUCH) !== 0 || upMove < 0;
  // The view angles and the start origin are quantized in an array: a number passed to or
  // returned from a call V8 does not inline is a heap allocation (this runs for every command).
  const v = moveScratch;
  v[0] = cmd.pitch;
  v[1] = cmd.yaw;
  v[2] = cmd.roll;
  quantizeAngles(v, 0, 3, ANGLE_BITS);
  state.pitch = v[0];
  state.yaw = v[1];
  state.roll = v[2];
  // Movement follows the yaw only: forward and right on the horizontal plane.
  sinCos[0] = v[1];
  dsinCosInPlace(sinCos);
  const sinYaw = sinCos[0];
  const cosYaw = sinCos[1];
  forward.x = cosYaw;
  forward.y = sinYaw;
  right.x = sinYaw;
  right.y = -cosYaw;
  origin.x = state.originX;
  origin.y = state.originY;
  origin.z = state.originZ;
  v[3] = origin.x;
  v[4] = origin.y;
  v[5] = origin.z;
  quantizeValues(v, 3, 3, -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
  startOrigin.x = v[3];
  startOrigin.y = v[4];
  startOrigin.z = v[5];
  velocity.x = state.velocityX;
  velocity.y = state.velocityY;
  velocity.z = state.velocityZ;
  locals.fallSpeed = velocity.z < 0 ? -velocity.z : 0;

  checkDuck(state, world);
  groundTrace(state, world, events);
  if (locals.walking) walkMove(state, world, events);
  else airMove(state, world);

  snapOrigin(world, state.ducked);
  groundTrace(state, world, events);

  state.originX = origin.x;
  state.originY = origin.y;
  state.originZ = origin.z;
  state.velocityX = quantizeVelocity(clampVelocity(velocity.x));
  state.velocityY = quantizeVelocity(clampVelocity(velocity.y));
  state.velocityZ = quantizeVelocity(clampVelocity(velocity.z));
  state.jumpHeld = locals.jumpPressed;
  state.stepDistance = quantizeStepDistance(state.stepDistance);
}

/**
 * Settles a player just placed at (originX, originY, originZ) (spawn, teleport): drops it onto
 * walkable ground within STEP_SIZE below, snaps the origin to the grid and finds the ground.
 * Returns false, leaving the state unchanged, if the hull is in solid there.
 */
export function settlePlayer(state: MovementState, world: TraceWorld): boolean {
  resetLocals();
  origin.x = state.originX;
  origin.y = state.originY;
  origin.z = state.originZ;
  playerHull(state.ducked, mins, maxs);
  if (!positionClear(world, origin, 0, state.ducked)) return false;
  end.x = origin.x;
  end.y = origin.y;
  end.z = origin.z - STEP_SIZE;
  world.trace(origin, end, mins, maxs, trace);
  origin.x = trace.endPos.x;
  origin.y = trace.endPos.y;
  origin.z = trace.endPos.z;
  startOrigin.x = quantizeOrigin(origin.x);
  startOrigin.y = quantizeOrigin(origin.y);
  startOrigin.z = quantizeOrigin(origin.z);
  snapOrigin(world, state.ducked);
  if (!positionClear(world, origin, 0, state.ducked)) return false;
  velocity.x = state.velocityX;
  velocity.y = state.velocityY;
  velocity.z = state.velocityZ;
  state.onGround = true;
  groundTrace(state, world, NO_EVENTS);
  state.originX = origin.x;
  state.originY = origin.y;
  state.originZ = origin.z;
  state.velocityX = quantizeVelocity(clampVelocity(velocity.x));
  state.velocityY = quantizeVelocity(clampVelocity(velocity.y));
  state.velocityZ = quantizeVelocity(clampVelocity(velocity.z));
  return true;
}
