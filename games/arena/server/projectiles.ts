// The launcher's projectiles: server-controlled objects that fly, explode on the level or a
// player, and damage everyone within the blast. Not lag compensated (the paper's footnote 9):
// they live in the server's present. Optionally a new projectile is advanced by part of its
// shooter's latency, so it starts closer to where the shooter's screen put it.

import type { GameServer, ServerClient } from 'backstep/server';
import { vec3 } from 'backstep/sim';
import { EVENT_PROJECTILE_FIRED, WEAPON_LAUNCHER } from '../shared/constants.ts';
import { PROJECTILE_ENTITY, PROJECTILE_ENTITY_TYPE } from '../shared/entities.ts';
import type { ArenaPlayerState, ArenaWorld } from '../shared/game.ts';
import { createHitTarget, createRayHit, type HitTarget, rayVsTargets } from '../shared/hitboxes.ts';
import { damageArenaPlayer, writeHitTarget } from '../shared/player.ts';
import { createTraceResult } from '../shared/trace.ts';
import { unpackUnitVector, WEAPONS } from '../shared/weapons.ts';

type Server = GameServer<ArenaPlayerState, ArenaWorld>;
type Client = ServerClient<ArenaPlayerState>;

export interface ProjectileConfig {
  /** Blast radius (units) and damage at its centre, falling off linearly to 0 at the edge. */
  blastRadius: number;
  blastDamage: number;
  /** A projectile that hits nothing is removed after this long. */
  lifetimeMs: number;
  /** Advance a new projectile by this share of its shooter's round trip / 2 (0: none). */
  latencyAdvance: number;
  /** ... but by no more than this. */
  maxAdvanceMs: number;
}

export const DEFAULT_PROJECTILE_CONFIG: ProjectileConfig = {
  blastRadius: 120,
  blastDamage: 100,
  lifetimeMs: 5000,
  latencyAdvance: 0,
  maxAdvanceMs: 100,
};

interface Projectile {
  entity: number;
  /** The shooter's entity and slot (its blast's kills are its). */
  owner: number;
  ownerSlot: number;
  x: number;
  y: number;
  z: number;
  vx: number;
  vy: number;
  vz: number;
  bornMs: number;
}

const { x: X, y: Y, z: Z } = PROJECTILE_ENTITY.index;
const POINT = vec3();

/** All live projectiles of one server. */
export class Projectiles {
  readonly config: ProjectileConfig;
  /** Projectiles fired, exploded (on anything), that struck a player, and players damaged by blasts. */
  fired = 0;
  exploded = 0;
  directHits = 0;
  blastHits = 0;
  kills = 0;
  /** Live projectiles in live[0 .. liveCount); records are reused, never freed. */
  private readonly live: Projectile[] = [];
  private liveCount = 0;
  private targetCount = 0;
  /** Whether `targets` holds this tick's players (gathered when a projectile first moves). */
  private targetsFresh = false;
  private eventCursor = 0;
  private readonly trace = createTraceResult();
  private readonly start = vec3();
  private readonly end = vec3();
  private readonly dir = vec3();
  /** One per server slot, made when the server's slots are first seen (a 512-slot server: 512). */
  private readonly targets: HitTarget[] = [];
  private readonly hit = createRayHit();
  private readonly onDeath: (server: Server, victim: Client, killer: Client | null) => void;

  /**
   * `onDeath` is called for each player a blast kills, with the projectile's shooter (null when
   * the shooter has left; the victim itself for one's own blast).
   */
  constructor(
    config: Partial<ProjectileConfig>,
    onDeath: (server: Server, victim: Client, killer: Client | null) => void,
  ) {
    this.config = { ...DEFAULT_PROJECTILE_CONFIG, ...config };
    this.onDeath = onDeath;
  }

  /** Spawns projectiles for the launcher shots fired since the last call, then moves them all. */
  tick(server: Server): void {
    this.targetsFresh = false;
    const log = server.events;
    if (this.eventCursor < log.tail) this.eventCursor = log.tail;
    for (; this.eventCursor < log.head; this.eventCursor++) {
      const e = log.at(this.eventCursor);
      // Its parameters in emitted order: x, y, z, direction (PROJECTILE_FIRED_EVENT).
      if (e.type === EVENT_PROJECTILE_FIRED) this.spawn(server, e.source, e.p0, e.p1, e.p2, e.p3);
    }
    const dt = server.tickIntervalMs / 1000;
    for (let i = this.liveCount - 1; i >= 0; i--) {
      const p = this.live[i];
      if (this.step(server, p, dt) || server.timeMs - p.bornMs > this.config.lifetimeMs) {
        server.entities.remove(p.entity);
        // Swap the last live record into this place; the freed record is kept for reuse.
        this.liveCount--;
        this.live[i] = this.live[this.liveCount];
        this.live[this.liveCount] = p;
      }
    }
  }

  private spawn(server: Server, slot: number, x: number, y: number, z: number, packed: number): void {
    const owner = server.clients[slot];
    if (owner === null) return;
    const entity = server.entities.create(PROJECTILE_ENTITY_TYPE);
    if (entity < 0) return;
    unpackUnitVector(packed, 12, this.dir);
    const speed = WEAPONS[WEAPON_LAUNCHER].projectileSpeed;
    if (this.liveCount === this.live.length) {
      this.live.push({ entity: 0, owner: 0, ownerSlot: 0, x: 0, y: 0, z: 0, vx: 0, vy: 0, vz: 0, bornMs: 0 });
    }
    const p = this.live[this.liveCount];
    p.entity = entity;
    p.owner = owner.entity;
    p.ownerSlot = owner.slot;
    p.x = x;
    p.y = y;
    p.z = z;
    p.vx = this.dir.x * speed;
    p.vy = this.dir.y * speed;
    p.vz = this.dir.z * speed;
    p.bornMs = server.timeMs;
    this.fired++;
    const advanceMs = Math.min(
      this.config.maxAdvanceMs,
      (this.config.latencyAdvance * owner.channel.stats.rttMs) / 2,
    );
    if (advanceMs > 0 && this.step(server, p, advanceMs / 1000)) {
      server.entities.remove(entity);
      return;
    }
    this.place(server, p);
    this.liveCount++;
  }

  /** Moves `p` for `dt` seconds; returns true when it exploded. */
  private step(server: Server, p: Projectile, dt: number): boolean {
    const s = this.start;
    const e = this.end;
    s.x = p.x;
    s.y = p.y;
    s.z = p.z;
    e.x = p.x + p.vx * dt;
    e.y = p.y + p.vy * dt;
    e.z = p.z + p.vz * dt;
    server.world.trace(s, e, POINT, POINT, this.trace);
    if (!this.targetsFresh) this.gatherTargets(server);
    const dx = e.x - s.x;
    const dy = e.y - s.y;
    const dz = e.z - s.z;
    const length = Math.sqrt(dx * dx + dy * dy + dz * dz);
    const reach = this.trace.fraction * length;
    this.dir.x = (e.x - s.x) / (length || 1);
    this.dir.y = (e.y - s.y) / (length || 1);
    this.dir.z = (e.z - s.z) / (length || 1);
    if (length > 0 && rayVsTargets(s, this.dir, reach, this.targets, this.targetCount, p.owner, this.hit)) {
      this.directHits++;
      this.explode(server, p, this.hit.point.x, this.hit.point.y, this.hit.point.z);
      return true;
    }
    if (this.trace.fraction < 1) {
      this.explode(server, p, this.trace.endPos.x, this.trace.endPos.y, this.trace.endPos.z);
      return true;
    }
    p.x = e.x;
    p.y = e.y;
    p.z = e.z;
    this.place(server, p);
    return false;
  }

  /**
   * Every player in the present (projectiles are not lag compensated) as a hit target: indexed
   * loops, and records made once, as many as the server has slots.
   */
  private gatherTargets(server: Server): void {
    const clients = server.clients;
    const targets = this.targets;
    while (targets.length < clients.length) targets.push(createHitTarget());
    let count = 0;
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      if (c !== null) writeHitTarget(c.state, c.entity, targets[count++]);
    }
    this.targetCount = count;
    this.targetsFresh = true;
  }

  private place(server: Server, p: Projectile): void {
    server.entities.setField(p.entity, X, p.x);
    server.entities.setField(p.entity, Y, p.y);
    server.entities.setField(p.entity, Z, p.z);
  }

  private explode(server: Server, p: Projectile, x: number, y: number, z: number): void {
    this.exploded++;
    // The shooter, if it is still the player in the slot that fired.
    const shooter = server.clients[p.ownerSlot] ?? null;
    const killer = shooter !== null && shooter.entity === p.owner ? shooter : null;
    const { blastRadius, blastDamage } = this.config;
    const clients = server.clients;
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      if (c === null || c.state.health <= 0) continue;
      // Distance to the player's middle.
      const dx = c.state.originX - x;
      const dy = c.state.originY - y;
      const dz = c.state.originZ + 36 - z;
      const d = Math.sqrt(dx * dx + dy * dy + dz * dz);
      if (d >= blastRadius) continue;
      this.blastHits++;
      if (damageArenaPlayer(c.state, blastDamage * (1 - d / blastRadius))) {
        this.kills++;
        this.onDeath(server, c, killer);
        // The dead are no longer targets for the projectiles still flying this tick.
        this.gatherTargets(server);
      }
    }
  }
}
