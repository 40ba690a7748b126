// The view acceptance rule both ends run: which named views the server honours.

import { describe, expect, it } from 'vitest';
import { createUserCommand, quantizeUserCommand, type UserCommand } from '../../src/protocol/usercmd.ts';
import {
  checkViewAcceptanceLimits,
  DEFAULT_VIEW_ACCEPTANCE_LIMITS,
  judgeView,
  namedViewTick,
  VIEW_BEYOND_UNLAG,
  VIEW_HONOURED,
  VIEW_NONE,
  VIEW_NOT_RECEIVED,
  VIEW_OLDER_THAN_DELAY,
} from '../../src/sim/view-acceptance.ts';

const TICK_MS = 1000 / 64;
const limits = DEFAULT_VIEW_ACCEPTANCE_LIMITS;

function command(a: number, b: number, fraction: number, newest: number, lerpMsec: number): UserCommand {
  const c = createUserCommand();
  c.viewTickA = a;
  c.viewTickB = b;
  c.viewFraction = fraction;
  c.viewNewest = newest;
  c.lerpMsec = lerpMsec;
  quantizeUserCommand(c);
  return c;
}

describe('judgeView', () => {
  it('honours a view as far behind the newest frame as the declared delay plus the slack, and no further', () => {
    // 100 ms at 64 Hz is 6.4 ticks: newest 1000, view 993.6.
    expect(judgeView(command(992, 994, 0.8, 1000, 100), TICK_MS, limits)).toBe(VIEW_HONOURED);
    // Slack 50 ms: up to 150 ms (9.6 ticks) behind.
    expect(judgeView(command(990, 992, 0.25, 1000, 100), TICK_MS, limits)).toBe(VIEW_HONOURED);
    const tooOld = command(988, 990, 0, 1000, 100);
    expect((1000 - namedViewTick(tooOld)) * TICK_MS).toBeGreaterThan(150);
    expect(judgeView(tooOld, TICK_MS, limits)).toBe(VIEW_OLDER_THAN_DELAY);
  });

  it('counts a declared delay only up to maxInterpolationMs', () => {
    // 1000 ms declared, 500 counted (550 with the slack): 625 ms behind is refused, 531 ms honoured.
    expect(judgeView(command(960, 962, 0, 1000, 1000), TICK_MS, limits)).toBe(VIEW_OLDER_THAN_DELAY);
    expect(judgeView(command(966, 968, 0, 1000, 1000), TICK_MS, limits)).toBe(VIEW_HONOURED);
  });

  it('honours extrapolated views past the newest frame: they are not older', () => {
    expect(judgeView(command(996, 1000, 1.5, 1000, 100), TICK_MS, limits)).toBe(VIEW_HONOURED);
  });

  it('refuses a view of a frame newer than the newest received, and no view at all', () => {
    const c = command(996, 1000, 0.5, 1000, 100);
    c.viewNewest = 998;
    expect(judgeView(c, TICK_MS, limits)).toBe(VIEW_NOT_RECEIVED);
    expect(judgeView(createUserCommand(), TICK_MS, limits)).toBe(VIEW_NONE);
  });

  it('refuses frame A more than maxUnlagMs behind the newest frame received', () => {
    const tight = { ...limits, maxUnlagMs: 100 };
    // A view 100 ms behind, between frames 120 and 0 ms behind the newest.
    expect(judgeView(command(992, 1000, 0.2, 1000, 100), TICK_MS, tight)).toBe(VIEW_BEYOND_UNLAG);
    expect(judgeView(command(994, 1000, 0.0, 1000, 100), TICK_MS, tight)).toBe(VIEW_HONOURED);
  });

  it('names the bad limit', () => {
    expect(() => checkViewAcceptanceLimits({ ...limits, viewSlackMs: -1 }, 'lagCompensation')).toThrow(
      'lagCompensation.viewSlackMs must be a finite number >= 0, got -1',
    );
    expect(() => checkViewAcceptanceLimits({ ...limits, maxUnlagMs: Number.NaN }, 'x')).toThrow(
      /x\.maxUnlagMs/,
    );
  });
});
