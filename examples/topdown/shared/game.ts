// The top-down game as the engine sees it: what other clients see of a player (its entity), how
// its events travel, how the gun's targets are shown to shared code, and the game definition.

import {
  type BitStream,
  defineEntityType,
  defineEvent,
  defineGameSchema,
  type EventTable,
  type FieldTable,
  quantize,
  type UserCommand,
} from 'backstep/protocol';
import { dcos, dsin, type GameDefinition, type HitscanDefinition, type Vec3 } from 'backstep/sim';
import {
  BUTTON_DASH,
  BUTTON_FIRE,
  DASH_COOLDOWN_MS,
  DASH_MS,
  DIRECTION_STEP,
  EVENT_DASH,
  EVENT_HIT,
  EVENT_MISS,
  EVENT_WALL,
  FIRE_COOLDOWN_MS,
  GUN_RANGE,
  MAX_ENTITIES,
  PLAYER_RADIUS,
  POSITION_STEP,
  WORLD_LIMIT,
} from './constants.ts';
import { SPAWNS, WALLS } from './level.ts';
import {
  copyPlayer,
  createPlayer,
  movePlayer,
  playersEqual,
  type TopdownPlayer,
  type TopdownWorld,
} from './player.ts';

/** A player as other clients see it: where it stands, where it aims, whether it is dashing. */
export interface PlayerEntity {
  x: number;
  y: number;
  yaw: number;
  dashing: number;
}

const coordinate = { kind: 'float', min: -WORLD_LIMIT, max: WORLD_LIMIT, precision: POSITION_STEP } as const;

/** A 2D game: no z field (its origin's z is 0). */
export const PLAYER = defineEntityType<PlayerEntity>('player', {
  x: coordinate,
  y: coordinate,
  yaw: { kind: 'angle', bits: 16 },
  dashing: { kind: 'int', min: 0, max: 1, interp: 'step' },
} satisfies FieldTable<PlayerEntity>);

export const SCHEMA = defineGameSchema([PLAYER], { maxEntities: MAX_ENTITIES });
const { x: X, y: Y, yaw: YAW, dashing: DASHING } = PLAYER.index;

const distance = { kind: 'float', min: 0, max: 2048, precision: 1 / 16 } as const;
const unit = { kind: 'float', min: -1, max: 1, precision: DIRECTION_STEP } as const;
export const HIT_EVENT = defineEvent('hit', {
  target: { kind: 'int', min: 0, max: MAX_ENTITIES - 1 },
  distance,
});
export const WALL_EVENT = defineEvent('wall', { distance });
export const MISS_EVENT = defineEvent('miss', {});
export const DASH_EVENT = defineEvent('dash', { x: unit, y: unit });

const events: EventTable[number][] = [];
events[EVENT_HIT] = HIT_EVENT;
events[EVENT_WALL] = WALL_EVENT;
events[EVENT_MISS] = MISS_EVENT;
events[EVENT_DASH] = DASH_EVENT;

/** A world with the level's walls and room for every other player as a target. */
export function createWorld(): TopdownWorld {
  const targets = Array.from({ length: MAX_ENTITIES }, () => ({ entity: -1, x: 0, y: 0 }));
  return { walls: WALLS, targets, targetCount: 0, self: -1 };
}

/** How the engine shows the gun the other players: as the shooter's client drew them, or rewound to it. */
export const hitscan: HitscanDefinition<TopdownPlayer, TopdownWorld> = {
  targetType: 0,
  targetRadius: PLAYER_RADIUS,
  fires: (state: TopdownPlayer, cmd: UserCommand) =>
    (cmd.buttons & BUTTON_FIRE) !== 0 && state.fireCooldownMs <= cmd.msec,
  shotSegment(state: TopdownPlayer, cmd: UserCommand, start: Vec3, end: Vec3): number {
    start.x = state.x;
    start.y = state.y;
    start.z = 0;
    end.x = state.x + dcos(cmd.yaw) * GUN_RANGE;
    end.y = state.y + dsin(cmd.yaw) * GUN_RANGE;
    end.z = 0;
    return 1;
  },
  setTargets(world, self, count, entities, values, stride): void {
    if (!(count >= 0 && count <= world.targets.length)) {
      throw new RangeError(`topdown setTargets: ${count} targets, the world holds ${world.targets.length}`);
    }
    for (let i = 0; i < count; i++) {
      const e = entities[i];
      const t = world.targets[i];
      t.entity = e;
      t.x = values[e * stride + X];
      t.y = values[e * stride + Y];
    }
    world.targetCount = count;
    world.self = self;
  },
};

function serializePlayer(s: BitStream, p: TopdownPlayer): boolean {
  p.x = s.float(p.x, -WORLD_LIMIT, WORLD_LIMIT, POSITION_STEP);
  p.y = s.float(p.y, -WORLD_LIMIT, WORLD_LIMIT, POSITION_STEP);
  p.yaw = s.angle(p.yaw, 16);
  p.dashMs = s.int(p.dashMs, 0, DASH_MS);
  p.dashX = s.float(p.dashX, -1, 1, DIRECTION_STEP);
  p.dashY = s.float(p.dashY, -1, 1, DIRECTION_STEP);
  p.dashCooldownMs = s.int(p.dashCooldownMs, 0, DASH_COOLDOWN_MS);
  p.fireCooldownMs = s.int(p.fireCooldownMs, 0, FIRE_COOLDOWN_MS);
  return s.ok;
}

/** The top-down game: player slot i spawns at spawn point i modulo their count. */
export const topdownGame: GameDefinition<TopdownPlayer, TopdownWorld> = {
  name: 'topdown',
  player: {
    create: createPlayer,
    copy: copyPlayer,
    move: movePlayer,
    serialize: serializePlayer,
    equals: playersEqual,
    copyClientOnly: () => {},
    origin: (p, out) => {
      out.x = p.x;
      out.y = p.y;
      out.z = 0;
      return out;
    },
    setOrigin: (p, origin) => {
      p.x = quantize(origin.x, -WORLD_LIMIT, WORLD_LIMIT, POSITION_STEP);
      p.y = quantize(origin.y, -WORLD_LIMIT, WORLD_LIMIT, POSITION_STEP);
    },
  },
  createWorld,
  spawn(p, _world, index) {
    const at = SPAWNS[index % SPAWNS.length];
    p.x = at.x;
    p.y = at.y;
  },
  entities: SCHEMA,
  input: { buttons: BUTTON_FIRE | BUTTON_DASH, maxImpulse: 0 },
  events,
  hitscan,
  playerEntity: {
    typeId: 0,
    write(p, out) {
      out[X] = p.x;
      out[Y] = p.y;
      out[YAW] = p.yaw;
      out[DASHING] = p.dashMs > 0 ? 1 : 0;
    },
  },
};
