// How the arena's effect events travel: each type's parameters at the precision the code that
// emits them already uses (see constants.ts for what each parameter means).

import type { NumberFieldSpec } from 'backstep/protocol';
import { defineEvent, type EventTable } from 'backstep/protocol';
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

/** Speeds: velocities are on the 1/8 unit/s grid; footsteps carry whole units (at most 2048 * sqrt 2). */
const speed: NumberFieldSpec = { kind: 'float', min: 0, max: 4096, precision: 1 / 8 };
const footstepSpeed: NumberFieldSpec = { kind: 'float', min: 0, max: 4095, precision: 1 };
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

/**
 * Each type's weight: about how many thousand of it the two training matches of
 * `npm run train-codes` (runners all in view, a deathmatch of aiming bots) sent together; a type
 * they never sent weighs 0.25. Types travel in a prefix code built from these: a footstep in 1 bit.
 */
const WEIGHTS = {
  footstep: 65,
  jump: 10,
  land: 10,
  weaponFire: 23,
  shot: 24,
  hit: 18,
  impact: 5.5,
  miss: 0.5,
  projectileFired: 0.25,
  reload: 0.25,
  holster: 0.25,
  deploy: 0.25,
};

/** Each event type's parameters by name, in the order the shared code emits them (constants.ts). */
export const FOOTSTEP_EVENT = defineEvent('footstep', { speed: footstepSpeed }, { weight: WEIGHTS.footstep });
export const JUMP_EVENT = defineEvent('jump', { speed }, { weight: WEIGHTS.jump });
export const LAND_EVENT = defineEvent('land', { speed }, { weight: WEIGHTS.land });
export const WEAPON_FIRE_EVENT = defineEvent(
  'weapon fire',
  { weapon, clip: small },
  { weight: WEIGHTS.weaponFire },
);
export const SHOT_EVENT = defineEvent(
  'shot',
  { x: eye, y: eye, z: eye, pelletAndDirection: packed },
  { weight: WEIGHTS.shot },
);
export const HIT_EVENT = defineEvent(
  'hit',
  {
    target: { kind: 'int', min: 0, max: 65535 },
    box: weapon,
    pellet: small,
    distance,
  },
  { weight: WEIGHTS.hit },
);
export const IMPACT_EVENT = defineEvent(
  'impact',
  { x: point, y: point, z: point, pelletAndNormal: packed },
  { weight: WEIGHTS.impact },
);
export const MISS_EVENT = defineEvent(
  'miss',
  { pellet: small, range: { kind: 'int', min: 0, max: 16384 } },
  { weight: WEIGHTS.miss },
);
export const PROJECTILE_FIRED_EVENT = defineEvent(
  'projectile fired',
  { x: eye, y: eye, z: eye, direction: packed },
  { weight: WEIGHTS.projectileFired },
);
export const RELOAD_EVENT = defineEvent('reload', { weapon, durationMs: ms }, { weight: WEIGHTS.reload });
export const HOLSTER_EVENT = defineEvent('holster', { weapon, next: weapon }, { weight: WEIGHTS.holster });
export const DEPLOY_EVENT = defineEvent('deploy', { weapon, durationMs: ms }, { weight: WEIGHTS.deploy });

const table: EventTable[number][] = [];
table[EVENT_FOOTSTEP] = FOOTSTEP_EVENT;
table[EVENT_JUMP] = JUMP_EVENT;
table[EVENT_LAND] = LAND_EVENT;
table[EVENT_WEAPON_FIRE] = WEAPON_FIRE_EVENT;
table[EVENT_SHOT] = SHOT_EVENT;
table[EVENT_HIT] = HIT_EVENT;
table[EVENT_IMPACT_WORLD] = IMPACT_EVENT;
table[EVENT_MISS] = MISS_EVENT;
table[EVENT_PROJECTILE_FIRED] = PROJECTILE_FIRED_EVENT;
table[EVENT_RELOAD] = RELOAD_EVENT;
table[EVENT_HOLSTER] = HOLSTER_EVENT;
table[EVENT_DEPLOY] = DEPLOY_EVENT;

/** The arena's event table, by event type. */
export const ARENA_EVENTS: EventTable = Array.from({ length: table.length }, (_, i) => table[i]);
