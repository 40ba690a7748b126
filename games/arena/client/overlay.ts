// The lag compensation overlay (Source's sv_showlagcompensation, the paper's screenshot): for
// each of the player's shots, the hitboxes of the targets where this client drew them (blue)
// and where the server rewound and tested them (red), kept on screen for a few seconds. In exact
// mode the two coincide; in estimate or off mode they stand apart.

import { vec3 } from 'backstep/sim';
import { BoxGeometry, EdgesGeometry, Group, LineBasicMaterial, LineSegments } from 'three';
import { HITBOX_COUNT, hitboxBounds } from '../shared/hitboxes.ts';
import type { ShotReport } from '../shared/messages.ts';

export const CLIENT_BOX_COLOR = 0x2f7bff;
export const SERVER_BOX_COLOR = 0xff3030;

/** The targets as this client drew them when it fired one command. */
export interface DrawnShot {
  command: number;
  count: number;
  entities: number[];
  /** x, y, z per target. */
  origins: number[];
  ducked: boolean[];
}

export interface OverlayStats {
  /** Boxes on screen now: this client's and the server's. */
  clientBoxes: number;
  serverBoxes: number;
  /** Shots shown in all; in the newest one, the targets shown both ways and the largest distance between a target's two origins. */
  shots: number;
  lastMatched: number;
  lastOffset: number;
  lastMode: string;
  lastExact: boolean;
}

interface Shown {
  group: Group;
  untilMs: number;
  client: number;
  server: number;
}

export class LagCompensationOverlay {
  readonly group = new Group();
  readonly stats: OverlayStats = {
    clientBoxes: 0,
    serverBoxes: 0,
    shots: 0,
    lastMatched: 0,
    lastOffset: 0,
    lastMode: '',
    lastExact: false,
  };
  private readonly pending = new Map<number, DrawnShot>();
  private readonly shown: Shown[] = [];
  private readonly edges = new EdgesGeometry(new BoxGeometry(1, 1, 1));
  private readonly clientMaterial = new LineBasicMaterial({ color: CLIENT_BOX_COLOR, depthTest: false });
  private readonly serverMaterial = new LineBasicMaterial({ color: SERVER_BOX_COLOR, depthTest: false });
  private readonly mins = vec3();
  private readonly maxs = vec3();

  constructor(readonly keepMs = 4000) {}

  set visible(on: boolean) {
    this.group.visible = on;
  }

  get visible(): boolean {
    return this.group.visible;
  }

  /** Remembers how this client drew the targets for `shot.command` (until the server's report). */
  drawn(shot: DrawnShot): void {
    this.pending.set(shot.command, shot);
    if (this.pending.size > 64) {
      const oldest = this.pending.keys().next().value as number;
      this.pending.delete(oldest);
    }
  }

  /** The server's report of a shot: shows both sets of boxes for the targets it tested. */
  report(nowMs: number, r: ShotReport): void {
    const drawn = this.pending.get(r.command);
    this.pending.delete(r.command);
    const group = new Group();
    let client = 0;
    let server = 0;
    let offset = 0;
    let matched = 0;
    for (let i = 0; i < r.count; i++) {
      const sx = r.origins[i * 3];
      const sy = r.origins[i * 3 + 1];
      const sz = r.origins[i * 3 + 2];
      server += this.addBoxes(group, sx, sy, sz, r.ducked[i] !== 0, this.serverMaterial, 0);
      const k = drawn === undefined ? -1 : drawn.entities.indexOf(r.entities[i]);
      if (drawn !== undefined && k >= 0) {
        const cx = drawn.origins[k * 3];
        const cy = drawn.origins[k * 3 + 1];
        const cz = drawn.origins[k * 3 + 2];
        client += this.addBoxes(group, cx, cy, cz, drawn.ducked[k], this.clientMaterial, 1);
        offset = Math.max(offset, Math.hypot(cx - sx, cy - sy, cz - sz));
        matched++;
      }
    }
    if (client + server === 0) return;
    this.group.add(group);
    this.shown.push({ group, untilMs: nowMs + this.keepMs, client, server });
    this.stats.shots++;
    this.stats.lastMatched = matched;
    this.stats.lastOffset = offset;
    this.stats.lastMode = r.mode;
    this.stats.lastExact = r.exact;
    this.count();
  }

  /** Removes what has been shown long enough. */
  update(nowMs: number): void {
    let kept = 0;
    for (const s of this.shown) {
      if (s.untilMs <= nowMs) this.group.remove(s.group);
      else this.shown[kept++] = s;
    }
    if (kept !== this.shown.length) {
      this.shown.length = kept;
      this.count();
    }
  }

  clear(): void {
    for (const s of this.shown) this.group.remove(s.group);
    this.shown.length = 0;
    this.pending.clear();
    this.count();
  }

  private count(): void {
    let c = 0;
    let s = 0;
    for (const x of this.shown) {
      c += x.client;
      s += x.server;
    }
    this.stats.clientBoxes = c;
    this.stats.serverBoxes = s;
  }

  /** Adds a target's hitboxes, each grown by `grow` units a side (so coinciding sets both show). */
  private addBoxes(
    group: Group,
    x: number,
    y: number,
    z: number,
    ducked: boolean,
    material: LineBasicMaterial,
    grow: number,
  ): number {
    for (let b = 0; b < HITBOX_COUNT; b++) {
      hitboxBounds(ducked, b, this.mins, this.maxs);
      const box = new LineSegments(this.edges, material);
      box.scale.set(
        this.maxs.x - this.mins.x + 2 * grow,
        this.maxs.y - this.mins.y + 2 * grow,
        this.maxs.z - this.mins.z + 2 * grow,
      );
      box.position.set(
        x + (this.mins.x + this.maxs.x) / 2,
        y + (this.mins.y + this.maxs.y) / 2,
        z + (this.mins.z + this.maxs.z) / 2,
      );
      box.renderOrder = 10;
      group.add(box);
    }
    return HITBOX_COUNT;
  }
}
