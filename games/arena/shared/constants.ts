// The arena's shared constants: button bits, impulses, event types, weapon ids and states, movement tuning, hull sizes and the state's quantization.

// Buttons: bits of UserCommand.buttons. upMove > 0 also means jump, upMove < 0 also means crouch.
/**
 * Entity slots in the arena (players and projectiles). Every one of them may be a target a view
 * draws, so the hit-target table holds as many (MAX_HIT_TARGETS).
 */
export const ARENA_MAX_ENTITIES = 1024;

export const BUTTON_JUMP = 1 << 0;
export const BUTTON_CROUCH = 1 << 1;
export const BUTTON_ATTACK = 1 << 2;
export const BUTTON_ATTACK2 = 1 << 3;
export const BUTTON_RELOAD = 1 << 4;
export const BUTTON_USE = 1 << 5;

// Events the movement emits through the GameEventSink (type, then p0..p3).
/** A footstep: p0 = horizontal speed (whole units/s). */
export const EVENT_FOOTSTEP = 1;
/** The player left the ground by jumping: p0 = jump velocity (units/s). */
export const EVENT_JUMP = 2;
/** The player came down on walkable ground: p0 = downward speed when the command began (units/s). */
export const EVENT_LAND = 3;

// Events the weapons emit (see weapons.ts for the packed directions). A trigger pull emits
// WEAPON_FIRE, then for a hit-scan weapon, for each ray (pellet) in order, SHOT followed by exactly
// one of HIT, IMPACT_WORLD or MISS; for the launcher, PROJECTILE_FIRED.
/** Muzzle flash and sound: p0 = weapon id, p1 = rounds left in the clip. */
export const EVENT_WEAPON_FIRE = 4;
/** A tracer: p0, p1, p2 = the ray's start (the eye), p3 = pellet * 2^20 + packUnitVector(direction, 10). */
export const EVENT_SHOT = 5;
/** The ray hit a player: p0 = target entity index, p1 = hitbox id, p2 = pellet, p3 = distance (1/16 unit steps). */
export const EVENT_HIT = 6;
/** The ray hit the level: p0, p1, p2 = impact point (1/16 unit steps), p3 = pellet * 2^20 + packUnitVector(normal, 10). */
export const EVENT_IMPACT_WORLD = 7;
/** The ray hit nothing within the weapon's range: p0 = pellet, p1 = range (units). */
export const EVENT_MISS = 8;
/**
 * The launcher fired: p0, p1, p2 = the projectile's start (the eye), p3 = packUnitVector(direction,
 * 12). The direction is exactly the forward vector of the shooter's pitch and yaw after the command.
 */
export const EVENT_PROJECTILE_FIRED = 9;
/** A reload began: p0 = weapon id, p1 = its duration (ms). */
export const EVENT_RELOAD = 10;
/** The active weapon is being put away: p0 = weapon id, p1 = the weapon that comes next. */
export const EVENT_HOLSTER = 11;
/** A weapon is being brought out (and is now the active one): p0 = weapon id, p1 = its deploy time (ms). */
export const EVENT_DEPLOY = 12;

// Impulses (UserCommand.impulse): IMPULSE_WEAPON_1 + w selects weapon w.
export const IMPULSE_WEAPON_1 = 1;

// Weapons, by id (the impulse selecting weapon w is IMPULSE_WEAPON_1 + w).
export const WEAPON_RIFLE = 0;
export const WEAPON_SHOTGUN = 1;
export const WEAPON_LAUNCHER = 2;
export const WEAPON_COUNT = 3;

// The weapon's state machine: what the weapon is doing until weaponTimeMs runs out.
/** Ready: fires, reloads or starts a switch as soon as asked. */
export const WEAPON_IDLE = 0;
/** A shot went off; the next may follow when weaponTimeMs runs out (the refire time). */
export const WEAPON_FIRING = 1;
/** Reloading; the clip is filled from the reserve when weaponTimeMs runs out. */
export const WEAPON_RELOADING = 2;
/** Bringing out the active weapon. */
export const WEAPON_DEPLOYING = 3;
/** Putting away the active weapon; pendingWeapon becomes active when weaponTimeMs runs out. */
export const WEAPON_HOLSTERING = 4;
export const WEAPON_STATE_COUNT = 5;

/** Health of a freshly spawned player. A player with health 0 is dead and does nothing. */
export const SPAWN_HEALTH = 100;

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
/** Health lies in [0, HEALTH_LIMIT] (whole points). */
export const HEALTH_LIMIT = 255;
/** weaponTimeMs lies in [0, WEAPON_TIME_LIMIT] (whole milliseconds; every weapon duration fits). */
export const WEAPON_TIME_LIMIT = 4095;
/** Rounds in a clip lie in [0, CLIP_LIMIT]. */
export const CLIP_LIMIT = 63;
/** Reserve rounds of a weapon lie in [0, RESERVE_LIMIT]. */
export const RESERVE_LIMIT = 255;
