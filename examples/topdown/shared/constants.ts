// The top-down game's numbers: sizes, speeds, timings, buttons and event types (both sides).

/** The plane: every coordinate lies in [-WORLD_LIMIT, WORLD_LIMIT], on the 1/16 unit grid. */
export const WORLD_LIMIT = 1024;
export const POSITION_STEP = 1 / 16;

/** Players are circles of this radius. */
export const PLAYER_RADIUS = 16;
/** Running speed at full stick, units per second. */
export const RUN_SPEED = 220;
/** A dash: this fast, for this long, then not again before the cooldown (ms) has run out. */
export const DASH_SPEED = 900;
export const DASH_MS = 150;
export const DASH_COOLDOWN_MS = 1200;
/** Dash directions are unit vectors on this grid. */
export const DIRECTION_STEP = 1 / 4096;

/** The gun: hit-scan, one ray this long, at most one shot per FIRE_COOLDOWN_MS. */
export const GUN_RANGE = 1400;
export const FIRE_COOLDOWN_MS = 150;

/** Buttons of a command. */
export const BUTTON_FIRE = 1;
export const BUTTON_DASH = 2;

/** Event types (effects the shared code emits). */
export const EVENT_HIT = 1;
export const EVENT_WALL = 2;
export const EVENT_MISS = 3;
export const EVENT_DASH = 4;

/** Entities the server may hold at once. */
export const MAX_ENTITIES = 64;
