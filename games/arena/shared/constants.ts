// The arena's shared constants: button bits, event types, movement tuning, hull sizes and the state's quantization.

// Buttons: bits of UserCommand.buttons. upMove > 0 also means jump, upMove < 0 also means crouch.
export const BUTTON_JUMP = 1 << 0;
export const BUTTON_CROUCH = 1 << 1;
export const BUTTON_ATTACK = 1 << 2;
export const BUTTON_ATTACK2 = 1 << 3;
export const BUTTON_RELOAD = 1 << 4;
export const BUTTON_USE = 1 << 5;

// Events the movement emits through the GameEventSink (type, then p0..p3).
/** A footstep: p0 = horizontal speed (units/s). */
export const EVENT_FOOTSTEP = 1;
/** The player left the ground by jumping: p0 = jump velocity (units/s). */
export const EVENT_JUMP = 2;
/** The player came down on walkable ground: p0 = downward speed when the command began (units/s). */
export const EVENT_LAND = 3;

// Movement tuning (units are game units, 1 unit ~ 1 inch; speeds in units/s).
/** Downward acceleration, units/s^2. */
export const GRAVITY = 800;
/** Top ground speed with a full move. */
export const MAX_SPEED = 320;
/** Share of MAX_SPEED a crouched player can reach. */
export const DUCK_SPEED_SCALE = 0.333;
/** Ground acceleration: a share of the wish speed gained per second. */
export const ACCELERATE = 10;
/** Air acceleration (same form as ACCELERATE, limited by AIR_WISH_SPEED_CAP). */
export const AIR_ACCELERATE = 10;
/** In the air, velocity along the wish direction is only topped up to this speed (air strafing). */
export const AIR_WISH_SPEED_CAP = 30;
/** Ground friction: a share of the speed lost per second. */
export const FRICTION = 4;
/** Below this speed friction acts as if the player moved at this speed (so slow players stop). */
export const STOP_SPEED = 100;
/** Upward speed given by a jump (apex about JUMP_VELOCITY^2 / (2 * GRAVITY) = 45.6 units). */
export const JUMP_VELOCITY = 270;
/** Highest ledge the player walks up without jumping. */
export const STEP_SIZE = 18;
/** A surface is walkable ground when its normal's z is at least this (slopes up to ~45 degrees). */
export const MIN_WALK_NORMAL = 0.7;
/** How far below the hull the ground trace looks. */
export const GROUND_TRACE_DISTANCE = 0.25;
/** Velocity clipped against a plane keeps this small share moving away from it. */
export const OVERCLIP = 1.001;
/** Upper bound on each velocity component (units/s). */
export const MAX_VELOCITY = 2000;
/** Horizontal distance walked on the ground between two footsteps. */
export const FOOTSTEP_DISTANCE = 96;

// Hull: the origin is at the centre of the feet; the hull spans [-16, 16] in x and y, [0, height] in z.
export const PLAYER_HALF_WIDTH = 16;
export const PLAYER_STAND_HEIGHT = 72;
export const PLAYER_DUCK_HEIGHT = 36;
/** Eye height above the origin. */
export const PLAYER_STAND_EYE_HEIGHT = 64;
export const PLAYER_DUCK_EYE_HEIGHT = 28;

// Quantization of the player state: `move` ends with exactly these, `serialize` writes exactly these.
/** Origin components lie in [-ORIGIN_LIMIT, ORIGIN_LIMIT] (every level must fit inside). */
export const ORIGIN_LIMIT = 4096;
export const ORIGIN_PRECISION = 1 / 32;
/** Velocity components lie in [-VELOCITY_LIMIT, VELOCITY_LIMIT]. */
export const VELOCITY_LIMIT = 2048;
export const VELOCITY_PRECISION = 1 / 8;
export const ANGLE_BITS = 16;
export const STEP_DISTANCE_PRECISION = 1 / 32;
