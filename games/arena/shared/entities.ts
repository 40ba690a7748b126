// The arena's replicated entity types: what other clients see of a player, as field tables
// ordered by how often each field changes.

import { defineEntityType, defineGameSchema, type FieldTable } from '../../../src/protocol/schema.ts';
import { ANGLE_BITS, ORIGIN_LIMIT, ORIGIN_PRECISION } from './constants.ts';
import type { ArenaPlayerState } from './player.ts';

/** A player as other clients see it. */
export interface PlayerEntity {
  x: number;
  y: number;
  yaw: number;
  z: number;
  pitch: number;
  ducked: boolean;
}

const coordinate = {
  kind: 'float',
  min: -ORIGIN_LIMIT,
  max: ORIGIN_LIMIT,
  precision: ORIGIN_PRECISION,
  interp: 'linear',
} as const;

export const PLAYER_ENTITY = defineEntityType<PlayerEntity>('player', {
  x: coordinate,
  y: coordinate,
  yaw: { kind: 'angle', bits: ANGLE_BITS, interp: 'angle' },
  z: coordinate,
  pitch: { kind: 'angle', bits: ANGLE_BITS, interp: 'angle' },
  ducked: { kind: 'bool' },
} satisfies FieldTable<PlayerEntity>);

export const ARENA_SCHEMA = defineGameSchema([PLAYER_ENTITY], { maxEntities: 1024 });

/** Type id of players in ARENA_SCHEMA. */
export const PLAYER_ENTITY_TYPE = 0;

const X = PLAYER_ENTITY.fieldNames.indexOf('x');
const Y = PLAYER_ENTITY.fieldNames.indexOf('y');
const Z = PLAYER_ENTITY.fieldNames.indexOf('z');
const YAW = PLAYER_ENTITY.fieldNames.indexOf('yaw');
const PITCH = PLAYER_ENTITY.fieldNames.indexOf('pitch');
const DUCKED = PLAYER_ENTITY.fieldNames.indexOf('ducked');

/** Writes the player entity's fields (decoded values, by field index) from a player's state. */
export function writePlayerEntity(state: ArenaPlayerState, out: Float64Array): void {
  out[X] = state.originX;
  out[Y] = state.originY;
  out[Z] = state.originZ;
  out[YAW] = state.yaw;
  out[PITCH] = state.pitch;
  out[DUCKED] = state.ducked ? 1 : 0;
}
