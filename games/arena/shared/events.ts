// How the arena's effect events travel: each type's parameters at the precision the code that
// emits them already uses (see constants.ts for what each parameter means).

import type { EventTable } from '../../../src/protocol/frames.ts';
import type { NumberFieldSpec } from '../../../src/protocol/schema.ts';
import {
  EVENT_DEPLOY,
  EVENT_FOOTSTEP,
  EVENT_HIT,
  EVENT_HOLSTER,
  EVENT_IMPACT_WORLD,
  EVENT_JUMP,
  EVENT_LAND,
  EVENT_MISS,
  EVENT_PROJECTILE_FIRED,
  EVENT_RELOAD,
  EVENT_SHOT,
  EVENT_WEAPON_FIRE,
} from './constants.ts';

/** Speeds: velocities are on the 1/8 unit/s grid; footsteps carry whole units. */
const speed: NumberFieldSpec = { kind: 'float', min: 0, max: 4096, precision: 1 / 8 };
/** Eye positions: origins on the 1/32 grid plus whole eye heights. */
const eye: NumberFieldSpec = { kind: 'float', min: -8192, max: 8192, precision: 1 / 32 };
/** Impact points and distances: quantized to 1/16 unit by the weapon code. */
const point: NumberFieldSpec = { kind: 'float', min: -16384, max: 16384, precision: 1 / 16 };
const distance: NumberFieldSpec = { kind: 'float', min: 0, max: 16384, precision: 1 / 16 };
/** A pellet index times 2^20 plus a direction packed at 10 bits a component; or a 12-bit direction. */
const packed: NumberFieldSpec = { kind: 'int', min: 0, max: 0xffffff };
const weapon: NumberFieldSpec = { kind: 'int', min: 0, max: 7 };
const small: NumberFieldSpec = { kind: 'int', min: 0, max: 255 };
const ms: NumberFieldSpec = { kind: 'int', min: 0, max: 8191 };

const table: EventTable[number][] = [];
table[EVENT_FOOTSTEP] = { name: 'footstep', params: [speed] };
table[EVENT_JUMP] = { name: 'jump', params: [speed] };
table[EVENT_LAND] = { name: 'land', params: [speed] };
table[EVENT_WEAPON_FIRE] = { name: 'weapon fire', params: [weapon, small] };
table[EVENT_SHOT] = { name: 'shot', params: [eye, eye, eye, packed] };
table[EVENT_HIT] = { name: 'hit', params: [{ kind: 'int', min: 0, max: 65535 }, weapon, small, distance] };
table[EVENT_IMPACT_WORLD] = { name: 'impact', params: [point, point, point, packed] };
table[EVENT_MISS] = { name: 'miss', params: [small, { kind: 'int', min: 0, max: 16384 }] };
table[EVENT_PROJECTILE_FIRED] = { name: 'projectile fired', params: [eye, eye, eye, packed] };
table[EVENT_RELOAD] = { name: 'reload', params: [weapon, ms] };
table[EVENT_HOLSTER] = { name: 'holster', params: [weapon, weapon] };
table[EVENT_DEPLOY] = { name: 'deploy', params: [weapon, ms] };

/** The arena's event table, by event type. */
export const ARENA_EVENTS: EventTable = Array.from({ length: table.length }, (_, i) => table[i]);
