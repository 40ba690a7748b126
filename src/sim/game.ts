// The game definition: the typed interface through which a game plugs its shared code into
// the engine (Quake 3's bg_* / Half-Life's pm_shared seen from the engine's side).

import type { BitStream } from '../protocol/bitstream.ts';
import type { EventTable } from '../protocol/frames.ts';
import { type GameSchema, schemaHash } from '../protocol/schema.ts';
import type { UserCommand } from '../protocol/usercmd.ts';
import type { Vec3 } from './math.ts';

/**
 * Where shared game code sends effects (footsteps, landing, muzzle flash, impacts). The side
 * that runs the code decides what to do with them: the client plays them only the first time
 * a command is predicted; the server sends them to everyone but the owner. Events are small
 * fixed records so that emitting one never allocates.
 */
export interface GameEventSink {
  emit(type: number, p0: number, p1: number, p2: number, p3: number): void;
}

/** An event sink that drops everything (for re-running commands whose effects already played). */
export const NO_EVENTS: GameEventSink = { emit() {} };

/** Result of sweeping a box through the world (Quake's trace_t). */
export interface TraceResult {
  /** Share of the move completed before the first hit, 0..1 (1: nothing hit). */
  fraction: number;
  /** Where the box's origin stopped. */
  endPos: Vec3;
  /** Normal of the surface hit (valid when fraction < 1). */
  normal: Vec3;
  /** The box started inside solid. */
  startSolid: boolean;
  /** The box stayed inside solid for the whole move. */
  allSolid: boolean;
}

/** The outside world as shared movement sees it: passed in, never imported. */
export interface TraceWorld {
  /** Sweeps the box [mins, maxs] (relative to the origin) from start to end. */
  trace(start: Vec3, end: Vec3, mins: Vec3, maxs: Vec3, out: TraceResult): void;
}

/**
 * The player part of a game: its state and the shared move function. `P` is the player state
 * the server replicates to the owning client (movement and weapons), plus any client-only
 * fields the game declares through `copyClientOnly`.
 */
export interface PlayerDefinition<P, W> {
  /** A new state, every field zero/default. */
  create(): P;
  /** Copies every field of `from` into `out`. */
  copy(out: P, from: P): void;
  /**
   * Runs one user command on `state` in place (`(state, cmd, world) -> state`). Pure and
   * deterministic: IEEE-exact arithmetic and the engine's dsin/dcos only, no clock, no
   * Math.random. Ends by quantizing the state exactly as `serialize` would, so the state a client
   * predicts equals the state the server sends, bit for bit.
   */
  move(state: P, cmd: UserCommand, world: W, events: GameEventSink): void;
  /** The owner's full replicated state, one serialize function for write, read and measure. */
  serialize(s: BitStream, state: P): boolean;
  /** True when the replicated fields of `a` and `b` are identical. */
  equals(a: P, b: P): boolean;
  /** Copies fields that exist only on the client (not replicated) from `from` to `out`. */
  copyClientOnly(out: P, from: P): void;
  /** The state's position, for smoothing visible corrections and for interest. */
  origin(state: P, out: Vec3): Vec3;
  /**
   * Puts the state at `origin` (quantized as the wire carries it), for server code that places
   * or teleports a player (`GameServer.teleport`). A 2D game ignores `origin.z`.
   */
  setOrigin?(state: P, origin: Vec3): void;
}

/**
 * Everything a game gives the engine. A second, different game is written against this same
 * definition without touching the engine.
 */
export interface GameDefinition<P, W> {
  /** Shown in logs and tools. */
  readonly name: string;
  /** The player: state, shared movement and weapons, its wire form. */
  readonly player: PlayerDefinition<P, W>;
  /** Builds the world shared code runs against (level geometry, trace). One per side. */
  createWorld(): W;
  /** Puts a new player's state at a spawn point; `index` is the client's slot. */
  spawn(state: P, world: W, index: number): void;
  /** The entity types the game replicates to clients (field tables). */
  readonly entities: GameSchema;
  /**
   * The input a player may send: the button bits the game defines and its highest impulse
   * (0: none). The server clears any other button bit and any impulse above it, and counts the
   * command (`CommandStats.invalidInput`): what a legitimate client never sends. `heldButtons`
   * are those a player holds through a stretch of commands (jump, crouch), which a command the
   * server fills in for a lost one keeps (`ServerConfig.fillLostMs`); default none. Never a button
   * that fires: a filled command is never lag compensated.
   */
  readonly input: { readonly buttons: number; readonly maxImpulse: number; readonly heldButtons?: number };
  /**
   * How the game's effect events travel (each type's parameters at their own precision);
   * without it, every event carries four float32 parameters.
   */
  readonly events?: EventTable;
  /** Hit-scan weapons: present when the game's shared code shoots rays at players. */
  readonly hitscan?: HitscanDefinition<P, W>;
  /** Every player is also an entity that other clients see. */
  readonly playerEntity: {
    /** Its type id in `entities`. */
    readonly typeId: number;
    /** Writes its fields (decoded values, by field index) from the player's state. */
    write(state: P, out: Float64Array): void;
  };
}

/**
 * How the engine shows shared weapon code the other players: the client as it drew them
 * (interpolated), the server as the shooter saw them (lag compensated). Targets are player
 * entities, identified by entity index.
 */
export interface HitscanDefinition<P, W> {
  /** Entity type id of the targets (players). */
  readonly targetType: number;
  /** Largest distance from a target entity's position (x, y, z fields) to any of its hitboxes. */
  readonly targetRadius: number;
  /**
   * True when running `cmd` on `state` may fire a hit-scan weapon: the server rewinds the other
   * players only for such commands. It may say true when no shot comes, never false when one does.
   */
  fires(state: P, cmd: UserCommand): boolean;
  /**
   * The segment every ray of the shot lies near: fills start and end and returns how far from
   * the segment a ray may stray (spread). Targets farther than that plus targetRadius are not
   * rewound (the broad phase).
   */
  shotSegment(state: P, cmd: UserCommand, start: Vec3, end: Vec3): number;
  /**
   * Puts the targets the next command is judged against into the world: `count` entities, their
   * indices in `entities[0 .. count)`, each one's decoded field values at `values[index * stride]`.
   * `self` is the shooter's own entity (-1 for none). Count 0 clears them. `count` is at most
   * the game schema's `maxEntities`, and the world must keep every target it is given: the
   * client passes every entity its view drew, the server those its broad phase kept, each in its
   * own order, so a table that dropped some would judge the two sides against different players.
   */
  setTargets(
    world: W,
    self: number,
    count: number,
    entities: ArrayLike<number>,
    values: Float64Array,
    stride: number,
  ): void;
}

/**
 * A 32-bit fingerprint of everything in a game definition that shapes the wire: its entity
 * tables (`schemaHash`) and its event table. Exchanged at connect: a client built against other
 * tables is refused with REFUSE_WRONG_SCHEMA instead of decoding garbage that may still parse.
 */
export function gameSchemaHash(game: {
  readonly entities: GameSchema;
  readonly events?: EventTable;
}): number {
  let h = schemaHash(game.entities);
  const mix = (text: string): void => {
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ 0xff, 0x01000193);
  };
  const events = game.events;
  if (events === undefined) mix('events:float32');
  else
    events.forEach((spec, type) => {
      if (spec === undefined) return;
      mix(`${type}:${spec.name}`);
      for (const p of spec.params) mix(JSON.stringify(p));
    });
  return h >>> 0;
}
