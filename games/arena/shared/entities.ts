// The arena's replicated entity types (what other clients see of a player, as a field table
// ordered by how often each field changes), and how a player entity becomes a hit target.

import type { UserCommand } from 'backstep/protocol';
import { defineEntityType, defineGameSchema, type FieldTable, typeIdOf } from 'backstep/protocol';
import type { HitscanDefinition } from 'backstep/sim';
import { dsinCos, type Vec3, vec3 } from 'backstep/sim';
import { PLAYER_CODE_COUNTS, PROJECTILE_CODE_COUNTS } from './codes.ts';
import {
  ANGLE_BITS,
  ARENA_MAX_ENTITIES,
  BUTTON_ATTACK,
  MAX_VELOCITY,
  ORIGIN_LIMIT,
  ORIGIN_PRECISION,
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_STAND_EYE_HEIGHT,
  WEAPON_COUNT,
} from './constants.ts';
import { HITBOX_COUNT, type HitTarget, hitboxBounds, viewHeight } from './hitboxes.ts';
import type { ArenaPlayerState, ArenaWorld } from './player.ts';
import { commandMsec, WEAPONS } from './weapons.ts';

/** shotSegment's sines and cosines: the pitch's, then the yaw's (dsinCos). */
const shotSinCos = new Float64Array(4);

/**
 * A player as other clients see it. `ducked` and `alive` are 0 or 1 and, like `weapon`, switch
 * when the frame that changed them is reached (not blended).
 */
export interface PlayerEntity {
  x: number;
  y: number;
  yaw: number;
  pitch: number;
  z: number;
  ducked: number;
  weapon: number;
  alive: number;
}

const coordinate = {
  kind: 'float',
  min: -ORIGIN_LIMIT,
  max: ORIGIN_LIMIT,
  precision: ORIGIN_PRECISION,
  interp: 'linear',
} as const;

/**
 * Every field a hit test depends on, at the owner's precision, most often changed first; its
 * snapshot codes trained on the arena's own matches (codes.ts, `npm run train-codes`).
 */
export const PLAYER_ENTITY = defineEntityType<PlayerEntity>(
  'player',
  {
    x: coordinate,
    y: coordinate,
    yaw: { kind: 'angle', bits: ANGLE_BITS, interp: 'angle' },
    pitch: { kind: 'angle', bits: ANGLE_BITS, interp: 'angle' },
    z: coordinate,
    ducked: { kind: 'int', min: 0, max: 1, interp: 'step' },
    weapon: { kind: 'int', min: 0, max: WEAPON_COUNT - 1, interp: 'step' },
    alive: { kind: 'int', min: 0, max: 1, interp: 'step' },
  } satisfies FieldTable<PlayerEntity>,
  { code: PLAYER_CODE_COUNTS },
);

/** A launcher projectile in flight (a server-controlled object). */
export interface ProjectileEntity {
  x: number;
  y: number;
  z: number;
}

export const PROJECTILE_ENTITY = defineEntityType<ProjectileEntity>(
  'projectile',
  {
    x: coordinate,
    y: coordinate,
    z: coordinate,
  } satisfies FieldTable<ProjectileEntity>,
  { code: PROJECTILE_CODE_COUNTS },
);

export const ARENA_SCHEMA = defineGameSchema([PLAYER_ENTITY, PROJECTILE_ENTITY], {
  maxEntities: ARENA_MAX_ENTITIES,
});

/** Type ids in ARENA_SCHEMA. */
export const PLAYER_ENTITY_TYPE = typeIdOf(ARENA_SCHEMA, PLAYER_ENTITY);
export const PROJECTILE_ENTITY_TYPE = typeIdOf(ARENA_SCHEMA, PROJECTILE_ENTITY);

const {
  x: X,
  y: Y,
  yaw: YAW,
  pitch: PITCH,
  z: Z,
  ducked: DUCKED,
  weapon: WEAPON,
  alive: ALIVE,
} = PLAYER_ENTITY.index;

/** Writes the player entity's fields (decoded values, by field index) from a player's state. */
export function writePlayerEntity(state: ArenaPlayerState, out: Float64Array): void {
  out[X] = state.originX;
  out[Y] = state.originY;
  out[YAW] = state.yaw;
  out[PITCH] = state.pitch;
  out[Z] = state.originZ;
  out[DUCKED] = state.ducked ? 1 : 0;
  out[WEAPON] = state.activeWeapon;
  out[ALIVE] = state.health > 0 ? 1 : 0;
}

/** The hit pose of player entity `entity` from its decoded values at `values[offset ..]`. */
export function targetFromEntity(
  values: Float64Array,
  offset: number,
  entity: number,
  out: HitTarget,
): HitTarget {
  out.slot = entity;
  out.originX = values[offset + X];
  out.originY = values[offset + Y];
  out.originZ = values[offset + Z];
  out.yaw = values[offset + YAW];
  out.pitch = values[offset + PITCH];
  out.ducked = values[offset + DUCKED] !== 0;
  out.alive = values[offset + ALIVE] !== 0;
  return out;
}

const boxMins = vec3();
const boxMaxs = vec3();

/** Largest distance from a player's origin to any point of its hitboxes (standing or crouched). */
function hitboxRadius(): number {
  let r = 0;
  for (const ducked of [false, true]) {
    for (let box = 0; box < HITBOX_COUNT; box++) {
      hitboxBounds(ducked, box, boxMins, boxMaxs);
      const x = Math.max(-boxMins.x, boxMaxs.x);
      const y = Math.max(-boxMins.y, boxMaxs.y);
      const z = Math.max(-boxMins.z, boxMaxs.z);
      r = Math.max(r, Math.sqrt(x * x + y * y + z * z));
    }
  }
  return r;
}

/** shotSegment: a step up, a snap to the ground and a duck's change of eye height, with room to spare. */
const EYE_MARGIN = 2 * (PLAYER_STAND_EYE_HEIGHT - PLAYER_DUCK_EYE_HEIGHT);

let maxRange = 0;
let maxSpread = 0;
for (const w of WEAPONS) {
  if (w.range > maxRange) maxRange = w.range;
  if (w.spread > maxSpread) maxSpread = w.spread;
}

/** How the engine lets the arena's shared weapon code see the other players. */
export const arenaHitscan: HitscanDefinition<ArenaPlayerState, ArenaWorld> = {
  targetType: PLAYER_ENTITY_TYPE,
  targetRadius: hitboxRadius(),
  fires(state: ArenaPlayerState, cmd: UserCommand): boolean {
    // Conservative: any command that holds attack while alive with a hit-scan weapon in hand or
    // coming up may fire; the weapon code decides whether it really does. A weapon still busy
    // (firing, reloading, switching) past the command's end takes no step in it, so it cannot
    // fire: a rifle held down is rewound for once per refire, not for every command.
    if ((cmd.buttons & BUTTON_ATTACK) === 0 || state.health <= 0) return false;
    if (state.weaponTimeMs - commandMsec(cmd) > 0) return false;
    return (
      WEAPONS[state.activeWeapon].range > 0 || WEAPONS[state.pendingWeapon].range > 0 || cmd.impulse !== 0
    );
  },
  shotSegment(state: ArenaPlayerState, cmd: UserCommand, start: Vec3, end: Vec3): number {
    // The weapon that can fire: the one in hand, unless a switch is asked for or under way (then
    // any weapon's range and spread).
    const steady = state.pendingWeapon === state.activeWeapon && cmd.impulse === 0;
    const weapon = WEAPONS[state.activeWeapon];
    const range = steady ? weapon.range : maxRange;
    const spread = steady ? weapon.spread : maxSpread;
    start.x = state.originX;
    start.y = state.originY;
    start.z = state.originZ + viewHeight(state.ducked);
    const t = shotSinCos;
    dsinCos(cmd.pitch, t, 0);
    dsinCos(cmd.yaw, t, 2);
    const cp = t[1];
    end.x = start.x + cp * t[3] * range;
    end.y = start.y + cp * t[2] * range;
    end.z = start.z - t[0] * range;
    // Spread widens the cone: at full range a pellet strays at most range * spread. The eye fires
    // after the command's movement: at most MAX_VELOCITY on each axis for the command's msec, plus
    // a step up, a snap to the ground and the eye height changing with a duck.
    return range * spread * 1.5 + (MAX_VELOCITY * Math.sqrt(3) * commandMsec(cmd)) / 1000 + EYE_MARGIN;
  },
  setTargets(
    world: ArenaWorld,
    self: number,
    count: number,
    entities: ArrayLike<number>,
    values: Float64Array,
    stride: number,
  ): void {
    // Never fewer than given: a target left out is one the other side may have tested.
    if (!(count >= 0 && count <= world.targets.length)) {
      throw new RangeError(
        `arenaHitscan.setTargets: ${count} targets, the world holds ${world.targets.length}`,
      );
    }
    const n = count;
    for (let i = 0; i < n; i++) {
      const e = entities[i];
      targetFromEntity(values, e * stride, e, world.targets[i]);
    }
    world.targetCount = n;
    world.ownerSlot = self;
  },
};
