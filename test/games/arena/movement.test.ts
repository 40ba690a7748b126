// Tests of the arena's shared player movement: ground and air physics, steps, slopes, walls, crouching, events.

import { describe, expect, it } from 'vitest';
import {
  BUTTON_CROUCH,
  BUTTON_JUMP,
  EVENT_FOOTSTEP,
  EVENT_JUMP,
  EVENT_LAND,
  FOOTSTEP_DISTANCE,
  MAX_SPEED,
  PLAYER_DUCK_EYE_HEIGHT,
  PLAYER_DUCK_HEIGHT,
  PLAYER_STAND_EYE_HEIGHT,
  PLAYER_STAND_HEIGHT,
} from '../../../games/arena/shared/constants.ts';
import { ARENA_LEVEL, boxBrush, createLevel, rampBrush } from '../../../games/arena/shared/level.ts';
import { playerHull, settlePlayer } from '../../../games/arena/shared/movement.ts';
import {
  type ArenaPlayerState,
  type ArenaWorld,
  arenaPlayer,
  createLevelWorld,
  eyeHeight,
  spawnArenaPlayer,
} from '../../../games/arena/shared/player.ts';
import { createUserCommand, quantizeUserCommand, type UserCommand } from '../../../src/protocol/usercmd.ts';
import type { GameEventSink } from '../../../src/sim/game.ts';
import { NO_EVENTS } from '../../../src/sim/game.ts';
import { vec3 } from '../../../src/sim/math.ts';

const arena = createLevelWorld(ARENA_LEVEL);
/** Where the arena's staircase, ramp and overhang are (see ARENA_LEVEL). */
const WALL_INNER = 1008;
const PLATFORM_TOP = 96;
const REST = 0.125;

function command(fields: Partial<UserCommand>): UserCommand {
  const c = createUserCommand();
  c.msec = 16;
  Object.assign(c, fields);
  quantizeUserCommand(c);
  return c;
}

/** A player standing at (x, y) on whatever lies under (x, y, z). */
function playerAt(x: number, y: number, z = 1, world: ArenaWorld = arena): ArenaPlayerState {
  const p = arenaPlayer.create();
  spawnArenaPlayer(p, world, 0);
  p.originX = x;
  p.originY = y;
  p.originZ = z;
  expect(settlePlayer(p, world)).toBe(true);
  return p;
}

class EventLog implements GameEventSink {
  readonly types: number[] = [];
  readonly values: number[] = [];
  emit(type: number, p0: number): void {
    this.types.push(type);
    this.values.push(p0);
  }
  count(type: number): number {
    return this.types.filter((t) => t === type).length;
  }
}

function run(
  p: ArenaPlayerState,
  c: UserCommand,
  moves: number,
  each?: (p: ArenaPlayerState, i: number) => void,
  events: GameEventSink = NO_EVENTS,
  world: ArenaWorld = arena,
): ArenaPlayerState {
  for (let i = 0; i < moves; i++) {
    arenaPlayer.move(p, c, world, events);
    each?.(p, i);
  }
  return p;
}

function horizontalSpeed(p: ArenaPlayerState): number {
  return Math.sqrt(p.velocityX * p.velocityX + p.velocityY * p.velocityY);
}

describe('ground movement', () => {
  it('accelerates to MAX_SPEED on flat ground and not beyond, diagonals included', () => {
    for (const [forwardMove, sideMove] of [
      [127, 0],
      [127, 127],
      [0, -127],
      [64, 0],
    ]) {
      // Face so that the move heads along +x, through open floor.
      const yaw = (Math.atan2(sideMove, forwardMove) * 180) / Math.PI;
      const p = playerAt(-700, -850);
      let top = 0;
      run(p, command({ forwardMove, sideMove, yaw }), 120, (s) => {
        top = Math.max(top, horizontalSpeed(s));
      });
      const wanted = (MAX_SPEED * Math.max(Math.abs(forwardMove), Math.abs(sideMove))) / 127;
      expect(top, `move ${forwardMove},${sideMove}`).toBeLessThanOrEqual(wanted + 0.2);
      expect(horizontalSpeed(p), `move ${forwardMove},${sideMove}`).toBeGreaterThan(wanted - 1);
      expect(p.onGround).toBe(true);
      expect(p.originZ).toBe(REST);
    }
  });

  it('moves along the yaw: forward is +x at yaw 0, +y at yaw 90; side moves right', () => {
    const a = run(playerAt(0, 0), command({ forwardMove: 127, yaw: 90 }), 30);
    expect(a.originY).toBeGreaterThan(100);
    expect(Math.abs(a.originX)).toBeLessThan(0.1);
    const b = run(playerAt(0, 0), command({ sideMove: 127, yaw: 0 }), 30);
    expect(b.originY).toBeLessThan(-100);
  });

  it('friction brings a running player to a complete stop', () => {
    const p = run(playerAt(0, 0), command({ forwardMove: 127 }), 60);
    expect(p.velocityX).toBe(320);
    const stop = command({});
    run(p, stop, 40);
    expect(p.velocityX).toBe(0);
    expect(p.velocityY).toBe(0);
    const x = p.originX;
    run(p, stop, 10);
    expect(p.originX).toBe(x);
  });

  it('slides along a wall hit at an angle instead of stopping', () => {
    const p = playerAt(0, 900);
    run(p, command({ forwardMove: 127, yaw: 60 }), 100);
    expect(p.originY).toBe(WALL_INNER - 16 - REST);
    expect(p.originX).toBeGreaterThan(300);
    expect(p.velocityX).toBeGreaterThan(200);
  });

  it('stops dead in a corner', () => {
    const p = playerAt(900, 900);
    run(p, command({ forwardMove: 127, yaw: 45 }), 100);
    expect(p.originX).toBe(WALL_INNER - 16 - REST);
    expect(p.originY).toBe(WALL_INNER - 16 - REST);
    expect(horizontalSpeed(p)).toBe(0);
  });

  it('walks up the staircase onto the platform without leaving the ground, and back down', () => {
    const p = playerAt(-760, -536);
    let lowest = Number.POSITIVE_INFINITY;
    run(p, command({ forwardMove: 127, yaw: 0 }), 75, (s) => {
      expect(s.onGround).toBe(true);
      lowest = Math.min(lowest, horizontalSpeed(s));
    });
    expect(p.originZ).toBe(PLATFORM_TOP + REST);
    expect(p.originX).toBeGreaterThan(-448);
    const events = new EventLog();
    run(p, command({ forwardMove: 127, yaw: 180 }), 75, (s) => expect(s.onGround).toBe(true), events);
    expect(p.originZ).toBe(REST);
    expect(events.count(EVENT_LAND)).toBe(0);
  });

  it('walks up the ramp at full speed and back down it staying on the ground', () => {
    const p = playerAt(-320, 100);
    run(p, command({ forwardMove: 127, yaw: 270 }), 120, (s) => expect(s.onGround).toBe(true));
    expect(p.originY).toBeLessThan(-344);
    expect(p.originZ).toBe(PLATFORM_TOP + REST);
    const events = new EventLog();
    let z = p.originZ;
    run(
      p,
      command({ forwardMove: 127, yaw: 90 }),
      100,
      (s) => {
        expect(s.onGround).toBe(true);
        expect(s.originZ).toBeLessThanOrEqual(z);
        z = s.originZ;
      },
      events,
    );
    expect(p.originZ).toBe(REST);
    expect(events.count(EVENT_LAND)).toBe(0);
  });

  it('cannot walk up a slope too steep to stand on, and slides down it', () => {
    const steep = createLevelWorld(
      createLevel(
        'steep',
        [
          boxBrush(vec3(-512, -512, -16), vec3(512, 512, 0)),
          rampBrush(vec3(100, -256, 0), vec3(164, 256, 128), '+x'),
        ],
        [{ origin: vec3(0, 0, 0), yaw: 0 }],
      ),
    );
    const p = playerAt(0, 0, 1, steep);
    run(p, command({ forwardMove: 127 }), 100, undefined, NO_EVENTS, steep);
    expect(p.originZ).toBe(REST);
    expect(p.originX).toBeLessThan(100);
    const q = playerAt(0, 0, 1, steep);
    q.originX = 110;
    q.originZ = 60;
    q.onGround = false;
    run(q, command({}), 120, undefined, NO_EVENTS, steep);
    expect(q.originZ).toBe(REST);
    expect(q.originX).toBeLessThan(100);
  });

  it('takes one step of up to STEP_SIZE but not a higher ledge', () => {
    const ledges = createLevelWorld(
      createLevel(
        'ledges',
        [
          boxBrush(vec3(-512, -512, -16), vec3(512, 512, 0)),
          boxBrush(vec3(100, -256, 0), vec3(200, 0, 18)),
          boxBrush(vec3(100, 0, 0), vec3(200, 256, 19)),
        ],
        [{ origin: vec3(0, 0, 0), yaw: 0 }],
      ),
    );
    const low = run(
      playerAt(0, -100, 1, ledges),
      command({ forwardMove: 127 }),
      40,
      undefined,
      NO_EVENTS,
      ledges,
    );
    expect(low.originZ).toBe(18 + REST);
    const high = run(
      playerAt(0, 100, 1, ledges),
      command({ forwardMove: 127 }),
      40,
      undefined,
      NO_EVENTS,
      ledges,
    );
    expect(high.originZ).toBe(REST);
    expect(high.originX).toBe(100 - 16 - REST);
  });
});

describe('jumping and falling', () => {
  it('jumps about 45 units high, emitting JUMP then LAND', () => {
    const p = playerAt(0, 0);
    const events = new EventLog();
    let top = 0;
    run(p, command({ buttons: BUTTON_JUMP }), 1, undefined, events);
    run(
      p,
      command({}),
      80,
      (s) => {
        top = Math.max(top, s.originZ);
      },
      events,
    );
    expect(top - REST).toBeGreaterThan(44);
    expect(top - REST).toBeLessThan(47);
    expect(events.types).toContain(EVENT_JUMP);
    expect(events.count(EVENT_LAND)).toBe(1);
    expect(p.onGround).toBe(true);
    expect(p.velocityZ).toBe(0);
    expect(p.originZ).toBe(REST);
  });

  it('also jumps on upMove > 0', () => {
    const p = run(playerAt(0, 0), command({ upMove: 127 }), 1);
    expect(p.onGround).toBe(false);
    expect(p.velocityZ).toBeGreaterThan(200);
  });

  it('cannot jump in the air, and needs a new press to jump again', () => {
    const p = playerAt(0, 0);
    const jump = command({ buttons: BUTTON_JUMP });
    run(p, jump, 1);
    run(p, command({}), 5);
    let vz = p.velocityZ;
    run(p, jump, 10, (s) => {
      expect(s.velocityZ).toBeLessThan(vz);
      vz = s.velocityZ;
    });
    // Hold jump through the landing: no second jump.
    const events = new EventLog();
    run(p, jump, 80, undefined, events);
    expect(events.count(EVENT_JUMP)).toBe(0);
    expect(p.onGround).toBe(true);
    run(p, command({}), 1);
    run(p, jump, 1, undefined, events);
    expect(events.count(EVENT_JUMP)).toBe(1);
    expect(p.onGround).toBe(false);
  });

  it('lands from a fall with a LAND event carrying the fall speed, and the downward velocity killed', () => {
    const p = playerAt(0, 0);
    p.originZ = 200;
    p.onGround = false;
    const events = new EventLog();
    run(p, command({}), 80, undefined, events);
    expect(events.count(EVENT_LAND)).toBe(1);
    const fallSpeed = events.values[events.types.indexOf(EVENT_LAND)];
    expect(fallSpeed).toBeGreaterThan(Math.sqrt(2 * 800 * 200) - 20);
    expect(fallSpeed).toBeLessThan(Math.sqrt(2 * 800 * 200) + 20);
    expect(p.velocityZ).toBe(0);
    expect(p.originZ).toBe(REST);
  });

  it('air control turns the velocity a little but not a lot', () => {
    const p = run(playerAt(-800, 0), command({ forwardMove: 127 }), 60);
    run(p, command({ forwardMove: 127, buttons: BUTTON_JUMP }), 1);
    const before = Math.atan2(p.velocityY, p.velocityX);
    const strafe = command({ sideMove: 127 });
    let airborne = 0;
    while (!p.onGround && airborne < 200) {
      run(p, strafe, 1);
      if (!p.onGround) airborne++;
    }
    expect(airborne).toBeGreaterThan(20);
    const turned = (Math.abs(Math.atan2(p.velocityY, p.velocityX) - before) * 180) / Math.PI;
    expect(turned).toBeGreaterThan(1);
    expect(turned).toBeLessThan(15);
  });

  it('air strafing (turning with the strafe) gains speed', () => {
    const p = run(playerAt(-800, 600), command({ forwardMove: 127 }), 60);
    run(p, command({ forwardMove: 127, buttons: BUTTON_JUMP }), 1);
    const start = horizontalSpeed(p);
    for (let i = 0; i < 40 && !p.onGround; i++) {
      // Face so that "right" is perpendicular to the velocity: right = (sin yaw, -cos yaw).
      const heading = (Math.atan2(p.velocityY, p.velocityX) * 180) / Math.PI;
      run(p, command({ sideMove: -127, yaw: heading - 180 }), 1);
    }
    expect(horizontalSpeed(p)).toBeGreaterThan(start + 30);
  });
});

describe('crouching', () => {
  it('lowers the hull and the eyes, and slows the player', () => {
    const p = run(playerAt(0, 0), command({ forwardMove: 127, buttons: BUTTON_CROUCH }), 60);
    expect(p.ducked).toBe(true);
    expect(eyeHeight(p)).toBe(PLAYER_DUCK_EYE_HEIGHT);
    const mins = vec3();
    const maxs = vec3();
    playerHull(p.ducked, mins, maxs);
    expect(maxs.z - mins.z).toBe(PLAYER_DUCK_HEIGHT);
    expect(horizontalSpeed(p)).toBeLessThan(110);
    expect(horizontalSpeed(p)).toBeGreaterThan(100);
    run(p, command({ upMove: -127 }), 1);
    expect(p.ducked, 'upMove < 0 also crouches').toBe(true);
    run(p, command({}), 1);
    expect(p.ducked).toBe(false);
    expect(eyeHeight(p)).toBe(PLAYER_STAND_EYE_HEIGHT);
    playerHull(p.ducked, mins, maxs);
    expect(maxs.z - mins.z).toBe(PLAYER_STAND_HEIGHT);
  });

  it('fits under the overhang only crouched, and cannot stand up until out from under it', () => {
    // The overhang covers x, y in [320, 512], z in [40, 56].
    const p = playerAt(416, 250);
    run(p, command({ forwardMove: 127, yaw: 90 }), 40);
    expect(p.originY).toBe(320 - 16 - REST);
    run(p, command({ forwardMove: 127, yaw: 90, buttons: BUTTON_CROUCH }), 40);
    expect(p.originY).toBeGreaterThan(340);
    expect(p.ducked).toBe(true);
    run(p, command({}), 20);
    expect(p.ducked, 'no room to stand').toBe(true);
    let stoodAt = Number.NaN;
    run(p, command({ forwardMove: 127, yaw: 90 }), 200, (s) => {
      if (!s.ducked && Number.isNaN(stoodAt)) stoodAt = s.originY;
    });
    expect(stoodAt).toBeGreaterThan(512 + 16);
  });
});

describe('events', () => {
  it('emits a footstep every FOOTSTEP_DISTANCE walked, none while crouched or in the air', () => {
    const walk = new EventLog();
    const p = playerAt(-900, 0);
    const startX = p.originX;
    run(p, command({ forwardMove: 127 }), 200, undefined, walk);
    const walked = p.originX - startX;
    expect(walk.count(EVENT_FOOTSTEP)).toBe(Math.floor(walked / FOOTSTEP_DISTANCE));
    const quiet = new EventLog();
    run(playerAt(-900, 200), command({ forwardMove: 127, buttons: BUTTON_CROUCH }), 200, undefined, quiet);
    expect(quiet.count(EVENT_FOOTSTEP)).toBe(0);
  });
});

describe('frame rate', () => {
  it('depends on how the time is split into commands only a little', () => {
    const results = [8, 16, 33].map((msec) => {
      const p = playerAt(-900, 0);
      const moves = Math.round(1000 / msec);
      run(p, command({ msec, forwardMove: 127 }), moves);
      const x = p.originX;
      run(p, command({ msec, forwardMove: 127, buttons: BUTTON_JUMP }), 1);
      let top = 0;
      run(p, command({ msec, forwardMove: 127 }), Math.round(1500 / msec), (s) => {
        top = Math.max(top, s.originZ);
      });
      return { x: x + (1000 - moves * msec) * 0.32, top };
    });
    for (const r of results) {
      expect(Math.abs(r.x - results[0].x)).toBeLessThan(12);
      expect(Math.abs(r.top - results[0].top)).toBeLessThan(2);
    }
  });

  it('clamps an out-of-range command instead of failing', () => {
    const p = playerAt(0, 0);
    const wild = createUserCommand();
    wild.msec = 100000;
    wild.forwardMove = 1000;
    wild.sideMove = -1000;
    wild.yaw = 1e6;
    arenaPlayer.move(p, wild, arena, NO_EVENTS);
    expect(horizontalSpeed(p)).toBeLessThanOrEqual(MAX_SPEED + 0.2);
    wild.msec = -5;
    arenaPlayer.move(p, wild, arena, NO_EVENTS);
    expect(Number.isFinite(p.originX)).toBe(true);
    expect(p.onGround).toBe(true);
  });
});
