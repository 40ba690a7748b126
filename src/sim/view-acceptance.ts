// The view acceptance rule: whether the server honours the view a user command names (exact lag
// compensation) or judges the shot from its own estimate instead. One function, run by both
// ends on the same numbers: the server before it rewinds, the client when it makes the command,
// so a shot the server will not compensate is never shown to the shooter as a hit.
//
// Everything the rule reads travels in the command or is configuration both ends share: the view
// (frames A and B and the fraction), the newest frame the client had received when it made the
// command (`viewNewest`), the interpolation delay it declared (`lerpMsec`), the tick interval and
// the limits below. No round-trip estimate enters it: the server's smoothed RTT is not something
// the client can see, and it lags every change of the link.
//
// A view is honoured when
//   1. it names one (viewTickB > 0) and frame B is not newer than the newest frame received;
//   2. it lies no further behind the newest frame received than the declared delay (at most
//      maxInterpolationMs) plus viewSlackMs:  (viewNewest - view) * tick <= min(lerp, max) + slack;
//   3. frame A is no more than maxUnlagMs behind the newest frame received.
// What a client could gain by lying is bounded in SPEC.md (section 2.1): the server checks
// `viewNewest` against the frames the client acknowledged, so the view can be pushed back by at
// most maxInterpolationMs + viewSlackMs (plus ackSlackMs) behind the newest frame it had.

import type { UserCommand } from '../protocol/usercmd.ts';

/** Limits of the rule; the server's and the client's must be equal (the defaults are). */
export interface ViewAcceptanceLimits {
  /** No view is honoured whose frame A lies more than this behind the newest frame received, ms. */
  maxUnlagMs: number;
  /** A declared interpolation delay counts up to this much, ms. */
  maxInterpolationMs: number;
  /** Room for rounding and the client's clock smoothing, ms. */
  viewSlackMs: number;
}

export const DEFAULT_VIEW_ACCEPTANCE_LIMITS: Readonly<ViewAcceptanceLimits> = Object.freeze({
  maxUnlagMs: 1000,
  maxInterpolationMs: 500,
  viewSlackMs: 50,
});

/** The rule's verdicts: 0 honoured, anything else the reason it is not. */
export const VIEW_HONOURED = 0;
/** The command names no view (nothing drawn yet). */
export const VIEW_NONE = 1;
/** Frame B is newer than the newest frame the client says it had. */
export const VIEW_NOT_RECEIVED = 2;
/** The view lies further behind the newest frame received than the declared delay allows. */
export const VIEW_OLDER_THAN_DELAY = 3;
/** Frame A lies more than maxUnlagMs behind the newest frame received. */
export const VIEW_BEYOND_UNLAG = 4;
export type ViewVerdict =
  | typeof VIEW_HONOURED
  | typeof VIEW_NONE
  | typeof VIEW_NOT_RECEIVED
  | typeof VIEW_OLDER_THAN_DELAY
  | typeof VIEW_BEYOND_UNLAG;

export const VIEW_VERDICT_NAMES: readonly string[] = [
  'honoured',
  'no view',
  'frame not received',
  'older than the declared delay',
  'beyond maxUnlagMs',
];

/** The view tick (fractional) a command names: A + (B - A) * fraction. */
export function namedViewTick(cmd: UserCommand): number {
  return cmd.viewTickA + (cmd.viewTickB - cmd.viewTickA) * cmd.viewFraction;
}

/**
 * The rule, on a quantized command: VIEW_HONOURED, or the reason the named view is not.
 * Pure; allocation-free.
 */
export function judgeView(
  cmd: UserCommand,
  tickIntervalMs: number,
  limits: ViewAcceptanceLimits,
): ViewVerdict {
  if (cmd.viewTickB === 0) return VIEW_NONE;
  if (cmd.viewTickB > cmd.viewNewest) return VIEW_NOT_RECEIVED;
  const lerp = Math.min(cmd.lerpMsec, limits.maxInterpolationMs);
  const behindMs = (cmd.viewNewest - namedViewTick(cmd)) * tickIntervalMs;
  if (behindMs > lerp + limits.viewSlackMs) return VIEW_OLDER_THAN_DELAY;
  if ((cmd.viewNewest - cmd.viewTickA) * tickIntervalMs > limits.maxUnlagMs) return VIEW_BEYOND_UNLAG;
  return VIEW_HONOURED;
}

/** Throws a RangeError naming `where` and the field when a limit is out of range. */
export function checkViewAcceptanceLimits(limits: ViewAcceptanceLimits, where: string): void {
  for (const key of ['maxUnlagMs', 'maxInterpolationMs', 'viewSlackMs'] as const) {
    const v = limits[key];
    if (!(typeof v === 'number' && v >= 0 && Number.isFinite(v))) {
      throw new RangeError(`${where}.${key} must be a finite number >= 0, got ${String(v)}`);
    }
  }
}
