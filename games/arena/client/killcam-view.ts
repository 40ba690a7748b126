// The killcam drawn in the arena's scene: the killer's last commands one after another, each for
// its own length, from the killer's eyes (its player entity after the command), with every other
// entity exactly as the killer's client drew it for that command (drawKillcamFrame over the
// values the command's view named). A demo's recorded killcams and the one the server sends the
// victim after a death both play through it.

import { drawKillcamFrame } from 'backstep/client';
import { decodeNumber, type Killcam } from 'backstep/protocol';
import { PLAYER_ENTITY } from '../shared/entities.ts';
import { arenaGame } from '../shared/game.ts';
import { viewHeight } from '../shared/hitboxes.ts';
import type { ArenaScene, ViewPoint } from './scene.ts';

/** What the page reports about the killcam playing. */
export interface KillcamReport {
  /** The command drawn (index), of how many. */
  frame: number;
  frames: number;
  killer: number;
  victim: number;
  /** Entities drawn in the last frame. */
  drawn: number;
}

const P = PLAYER_ENTITY.index;

export class KillcamView {
  /** The killcam playing, null when none. */
  report: KillcamReport | null = null;
  private cam: Killcam | null = null;
  private atMs = 0;
  private frame = 0;
  private readonly values: Float64Array;
  private readonly types: Uint8Array;
  private readonly list: Uint16Array;
  private readonly view: ViewPoint = { eyeX: 0, eyeY: 0, eyeZ: 0, yaw: 0, pitch: 0, weapon: 0, alive: true };
  private readonly drawn: {
    count: number;
    list: Uint16Array;
    types: Uint8Array;
    values: Float64Array;
    stride: number;
  };

  constructor(private readonly scene: ArenaScene) {
    const schema = arenaGame.entities;
    this.values = new Float64Array(schema.maxEntities * schema.stride);
    this.types = new Uint8Array(schema.maxEntities);
    this.list = new Uint16Array(schema.maxEntities);
    this.drawn = { count: 0, list: this.list, types: this.types, values: this.values, stride: schema.stride };
  }

  get playing(): boolean {
    return this.cam !== null;
  }

  /** Starts `cam` from its first command; false (and nothing plays) when it has none. */
  start(cam: Killcam): boolean {
    if (cam.frames.length === 0) return false;
    this.cam = cam;
    this.atMs = 0;
    this.frame = 0;
    return true;
  }

  stop(): void {
    this.cam = null;
    this.report = null;
  }

  /**
   * Moves `dtMs` on (at `speed`) and draws the command due; returns false once the last one has
   * shown for `holdMs` (the killcam then stops).
   */
  draw(nowMs: number, dtMs: number, speed = 1, holdMs = 1000): boolean {
    const cam = this.cam;
    if (cam === null) return false;
    this.atMs += dtMs * speed;
    while (this.frame < cam.frames.length - 1 && this.atMs >= cam.frames[this.frame].command.msec) {
      this.atMs -= cam.frames[this.frame].command.msec;
      this.frame++;
    }
    const frame = cam.frames[this.frame];
    const schema = arenaGame.entities;
    const count = drawKillcamFrame(schema, frame, this.values, this.types, this.list);
    // The killer's eye: its own player entity after the command.
    const type = schema.types[cam.playerType];
    const at = (f: number) => decodeNumber(type, f, frame.player[f]);
    const view = this.view;
    view.eyeX = at(P.x);
    view.eyeY = at(P.y);
    view.eyeZ = at(P.z) + viewHeight(at(P.ducked) !== 0);
    view.yaw = at(P.yaw);
    view.pitch = at(P.pitch);
    view.weapon = at(P.weapon);
    view.alive = true;
    let n = 0;
    for (let i = 0; i < count; i++) if (this.list[i] !== cam.killerEntity) this.list[n++] = this.list[i];
    this.drawn.count = n;
    this.scene.render(nowMs, view, this.drawn);
    this.report = {
      frame: this.frame,
      frames: cam.frames.length,
      killer: cam.killerSlot,
      victim: cam.victimSlot,
      drawn: n,
    };
    if (this.frame >= cam.frames.length - 1 && this.atMs >= frame.command.msec + holdMs) {
      this.stop();
      return false;
    }
    return true;
  }
}
