// The arena drawn with three.js: the level's brushes, the players (their hitboxes as they are
// drawn), projectiles, the first-person weapon, and short-lived effects (muzzle flashes,
// tracers, impacts, footprints). It draws whatever it is handed: a live session's prediction and
// remote view, or any other source of world state (a demo), through `render` and `playEffect`.

import { type Vec3, vec3 } from 'backstep/sim';
import {
  AmbientLight,
  BoxGeometry,
  BufferGeometry,
  Color,
  DirectionalLight,
  Float32BufferAttribute,
  Group,
  HemisphereLight,
  Line,
  LineBasicMaterial,
  LineSegments,
  Mesh,
  MeshBasicMaterial,
  MeshLambertMaterial,
  PerspectiveCamera,
  Scene,
  SphereGeometry,
  WebGLRenderer,
} from 'three';
import { HITBOX_COUNT, hitboxBounds } from '../shared/hitboxes.ts';
import type { Brush, Level } from '../shared/level.ts';

/** Entities as drawn this frame (the engine's RemoteView has this shape; a demo can fill one too). */
export interface DrawnEntities {
  readonly count: number;
  readonly list: ArrayLike<number>;
  readonly types: ArrayLike<number>;
  readonly values: Float64Array;
  readonly stride: number;
}

/** Where the camera is and what the local player holds. */
export interface ViewPoint {
  eyeX: number;
  eyeY: number;
  eyeZ: number;
  yaw: number;
  pitch: number;
  weapon: number;
  alive: boolean;
}

/** Field indices of the player and projectile entity types. */
export interface EntityLayout {
  playerType: number;
  projectileType: number;
  player: { x: number; y: number; z: number; yaw: number; ducked: number; alive: number };
  projectile: { x: number; y: number; z: number };
}

const WEAPON_COLORS = [0x8fa3b8, 0xb8864f, 0x6c9a5a];
const PLAYER_COLORS = [0xd9534f, 0xe8a33d, 0x5bc0de, 0x9b59b6, 0x5cb85c, 0xf0e68c, 0xe377c2, 0x17becf];

interface Fading {
  object: Mesh | Line;
  untilMs: number;
  lifeMs: number;
}

/** One player's drawn model: its three hitboxes and a facing marker. */
class PlayerModel {
  readonly group = new Group();
  readonly boxes: Mesh[] = [];
  readonly nose: Mesh;
  private ducked = -1;

  constructor(unit: BoxGeometry, color: number) {
    const shades = [0xf2d4b6, color, new Color(color).multiplyScalar(0.6).getHex()];
    for (let b = 0; b < HITBOX_COUNT; b++) {
      const mesh = new Mesh(unit, new MeshLambertMaterial({ color: shades[b] }));
      this.boxes.push(mesh);
      this.group.add(mesh);
    }
    this.nose = new Mesh(unit, new MeshLambertMaterial({ color: 0x222222 }));
    this.nose.scale.set(14, 4, 4);
    this.group.add(this.nose);
  }

  pose(ducked: boolean, alive: boolean, yawDegrees: number, mins: Vec3, maxs: Vec3): void {
    const d = ducked ? 1 : 0;
    if (d !== this.ducked) {
      this.ducked = d;
      for (let b = 0; b < HITBOX_COUNT; b++) {
        hitboxBounds(ducked, b, mins, maxs);
        const m = this.boxes[b];
        m.scale.set(maxs.x - mins.x, maxs.y - mins.y, maxs.z - mins.z);
        m.position.set((mins.x + maxs.x) / 2, (mins.y + maxs.y) / 2, (mins.z + maxs.z) / 2);
      }
      this.nose.position.z = ducked ? 28 : 64;
    }
    const yaw = (yawDegrees * Math.PI) / 180;
    this.nose.position.x = Math.cos(yaw) * 10;
    this.nose.position.y = Math.sin(yaw) * 10;
    this.nose.rotation.z = yaw;
    // A dead player lies flat where it fell.
    this.group.scale.z = alive ? 1 : 0.15;
  }
}

export class ArenaScene {
  readonly renderer: WebGLRenderer;
  readonly scene = new Scene();
  readonly camera: PerspectiveCamera;
  /** Objects other layers (the lag compensation overlay) add to the world. */
  readonly world = new Group();
  private readonly unit = new BoxGeometry(1, 1, 1);
  private readonly players = new Map<number, PlayerModel>();
  private readonly projectiles: Mesh[] = [];
  private readonly projectileGeometry = new SphereGeometry(6, 8, 6);
  private readonly projectileMaterial = new MeshBasicMaterial({ color: 0xffaa33 });
  private readonly viewModel: Mesh;
  private readonly muzzle: Mesh;
  private muzzleUntilMs = 0;
  private readonly fading: Fading[] = [];
  private readonly seen = new Uint8Array(4096);
  private readonly mins = vec3();
  private readonly maxs = vec3();
  private readonly layout: EntityLayout;
  private weapon = -1;

  constructor(canvas: HTMLCanvasElement, level: Level, layout: EntityLayout) {
    this.layout = layout;
    this.renderer = new WebGLRenderer({ canvas, antialias: false, powerPreference: 'low-power' });
    this.renderer.setPixelRatio(1);
    this.scene.background = new Color(0x9ec9e8);
    this.camera = new PerspectiveCamera(80, 16 / 9, 2, 6000);
    this.camera.up.set(0, 0, 1);
    this.scene.add(new HemisphereLight(0xdde8ff, 0x6b5a45, 1.6));
    this.scene.add(new AmbientLight(0xffffff, 0.3));
    const sun = new DirectionalLight(0xffffff, 1.4);
    sun.position.set(0.4, 0.7, 1);
    this.scene.add(sun);
    this.scene.add(this.world);
    this.buildLevel(level);
    // The weapon in hand: a box below and right of the eye, and its muzzle flash.
    this.viewModel = new Mesh(this.unit, new MeshLambertMaterial({ color: WEAPON_COLORS[0] }));
    this.viewModel.scale.set(2, 2, 14);
    this.viewModel.position.set(7, -7, -24);
    this.camera.add(this.viewModel);
    this.muzzle = new Mesh(new SphereGeometry(2, 8, 6), new MeshBasicMaterial({ color: 0xfff2a8 }));
    this.muzzle.position.set(7, -6.4, -32);
    this.muzzle.visible = false;
    this.camera.add(this.muzzle);
    this.scene.add(this.camera);
  }

  /** Matches the drawing buffer to the canvas's CSS size. */
  resize(width: number, height: number): void {
    this.renderer.setSize(width, height, false);
    this.camera.aspect = width / Math.max(1, height);
    this.camera.updateProjectionMatrix();
  }

  /** Draws one frame: the camera at `view`, `entities` as drawn (players, projectiles). */
  render(nowMs: number, view: ViewPoint, entities: DrawnEntities): void {
    const cam = this.camera;
    cam.position.set(view.eyeX, view.eyeY, view.eyeZ);
    const yaw = (view.yaw * Math.PI) / 180;
    const pitch = (view.pitch * Math.PI) / 180;
    const cp = Math.cos(pitch);
    cam.lookAt(view.eyeX + cp * Math.cos(yaw), view.eyeY + cp * Math.sin(yaw), view.eyeZ - Math.sin(pitch));
    if (view.weapon !== this.weapon && view.weapon >= 0 && view.weapon < WEAPON_COLORS.length) {
      this.weapon = view.weapon;
      (this.viewModel.material as MeshLambertMaterial).color.setHex(WEAPON_COLORS[view.weapon]);
      this.viewModel.scale.z = view.weapon === 1 ? 11 : view.weapon === 2 ? 16 : 14;
      this.viewModel.scale.x = this.viewModel.scale.y = view.weapon === 2 ? 3.4 : 2;
    }
    this.viewModel.visible = view.alive;
    this.muzzle.visible = view.alive && nowMs < this.muzzleUntilMs;
    this.drawEntities(entities);
    this.fade(nowMs);
    this.renderer.render(this.scene, cam);
  }

  /** The local weapon fired: a muzzle flash for a few frames. */
  muzzleFlash(nowMs: number): void {
    this.muzzleUntilMs = nowMs + 60;
  }

  /** A tracer from (x0, y0, z0) to (x1, y1, z1), fading over `lifeMs`. */
  tracer(
    nowMs: number,
    x0: number,
    y0: number,
    z0: number,
    x1: number,
    y1: number,
    z1: number,
    mine: boolean,
  ): void {
    const geometry = new BufferGeometry();
    // Start a little ahead of the eye so one's own tracer does not cover the view.
    const dx = x1 - x0;
    const dy = y1 - y0;
    const dz = z1 - z0;
    const len = Math.hypot(dx, dy, dz) || 1;
    const skip = mine ? Math.min(24, len) / len : 0;
    geometry.setAttribute(
      'position',
      new Float32BufferAttribute(
        [x0 + dx * skip, y0 + dy * skip, z0 + dz * skip - (mine ? 4 : 0), x1, y1, z1],
        3,
      ),
    );
    const line = new Line(
      geometry,
      new LineBasicMaterial({ color: mine ? 0xfff6b0 : 0xffd27a, transparent: true }),
    );
    this.addFading(line, nowMs, 250);
  }

  /** A mark where a shot hit the level (or a player: red). */
  impact(nowMs: number, x: number, y: number, z: number, player: boolean): void {
    const mesh = new Mesh(
      this.unit,
      new MeshBasicMaterial({ color: player ? 0xff2020 : 0x333333, transparent: true }),
    );
    mesh.scale.set(4, 4, 4);
    mesh.position.set(x, y, z);
    this.addFading(mesh, nowMs, player ? 400 : 1500);
  }

  /** A footprint at (x, y, z): the footstep's visible stand-in. */
  footprint(nowMs: number, x: number, y: number, z: number): void {
    const mesh = new Mesh(this.unit, new MeshBasicMaterial({ color: 0x2b2b2b, transparent: true }));
    mesh.scale.set(10, 6, 0.5);
    mesh.position.set(x, y, z + 0.6);
    this.addFading(mesh, nowMs, 1200);
  }

  /** An explosion's flash (a projectile's end). */
  burst(nowMs: number, x: number, y: number, z: number): void {
    const mesh = new Mesh(
      this.projectileGeometry,
      new MeshBasicMaterial({ color: 0xff7b1c, transparent: true }),
    );
    mesh.scale.setScalar(8);
    mesh.position.set(x, y, z);
    this.addFading(mesh, nowMs, 350);
  }

  dispose(): void {
    this.renderer.dispose();
  }

  private addFading(object: Mesh | Line, nowMs: number, lifeMs: number): void {
    this.world.add(object);
    this.fading.push({ object, untilMs: nowMs + lifeMs, lifeMs });
  }

  private fade(nowMs: number): void {
    let kept = 0;
    for (let i = 0; i < this.fading.length; i++) {
      const f = this.fading[i];
      const left = f.untilMs - nowMs;
      if (left <= 0) {
        this.world.remove(f.object);
        f.object.geometry !== this.unit &&
          f.object.geometry !== this.projectileGeometry &&
          f.object.geometry.dispose();
        (f.object.material as MeshBasicMaterial).dispose();
        continue;
      }
      (f.object.material as MeshBasicMaterial).opacity = Math.min(1, left / (f.lifeMs * 0.5));
      this.fading[kept++] = f;
    }
    this.fading.length = kept;
  }

  private drawEntities(entities: DrawnEntities): void {
    const L = this.layout;
    const seen = this.seen;
    let projectiles = 0;
    for (let k = 0; k < entities.count; k++) {
      const e = entities.list[k];
      const o = e * entities.stride;
      const v = entities.values;
      if (entities.types[e] === L.playerType) {
        let model = this.players.get(e);
        if (model === undefined) {
          model = new PlayerModel(this.unit, PLAYER_COLORS[e % PLAYER_COLORS.length]);
          this.players.set(e, model);
          this.scene.add(model.group);
        }
        model.group.visible = true;
        model.group.position.set(v[o + L.player.x], v[o + L.player.y], v[o + L.player.z]);
        model.pose(
          v[o + L.player.ducked] !== 0,
          v[o + L.player.alive] !== 0,
          v[o + L.player.yaw],
          this.mins,
          this.maxs,
        );
        if (e < seen.length) seen[e] = 1;
      } else if (entities.types[e] === L.projectileType) {
        let mesh = this.projectiles[projectiles];
        if (mesh === undefined) {
          mesh = new Mesh(this.projectileGeometry, this.projectileMaterial);
          this.projectiles.push(mesh);
          this.scene.add(mesh);
        }
        mesh.visible = true;
        mesh.position.set(v[o + L.projectile.x], v[o + L.projectile.y], v[o + L.projectile.z]);
        projectiles++;
      }
    }
    for (const [e, model] of this.players) {
      if (e < seen.length && seen[e] === 0) model.group.visible = false;
      if (e < seen.length) seen[e] = 0;
    }
    for (let i = projectiles; i < this.projectiles.length; i++) this.projectiles[i].visible = false;
  }

  private buildLevel(level: Level): void {
    const floor = new MeshLambertMaterial({ color: 0x8a8f7a });
    const wall = new MeshLambertMaterial({ color: 0xb9b2a3 });
    const crate = new MeshLambertMaterial({ color: 0xa0703c });
    const step = new MeshLambertMaterial({ color: 0x7d8a99 });
    for (const brush of level.brushes) {
      const size = vec3(
        brush.maxs.x - brush.mins.x,
        brush.maxs.y - brush.mins.y,
        brush.maxs.z - brush.mins.z,
      );
      const isFloor = brush.maxs.z <= 0;
      const isWall = size.z >= 200;
      const material = isFloor ? floor : isWall ? wall : size.x <= 64 && size.y <= 64 ? crate : step;
      const slope = slopeOf(brush);
      const mesh =
        slope === null ? new Mesh(this.unit, material) : new Mesh(wedgeGeometry(brush, slope), material);
      if (slope === null) {
        mesh.scale.set(size.x, size.y, size.z);
        mesh.position.set(
          (brush.mins.x + brush.maxs.x) / 2,
          (brush.mins.y + brush.maxs.y) / 2,
          (brush.mins.z + brush.maxs.z) / 2,
        );
      }
      this.scene.add(mesh);
    }
    // Floor lines every 128 units, so motion reads at a glance.
    const lines: number[] = [];
    for (let v = -1024; v <= 1024; v += 128)
      lines.push(v, -1008, 0.5, v, 1008, 0.5, -1008, v, 0.5, 1008, v, 0.5);
    const grid = new BufferGeometry();
    grid.setAttribute('position', new Float32BufferAttribute(lines, 3));
    this.scene.add(new LineSegments(grid, new LineBasicMaterial({ color: 0x6f735f })));
  }
}

/** The horizontal direction a ramp brush rises toward ('+x' ...), or null for a box. */
function slopeOf(brush: Brush): { x: number; y: number } | null {
  for (let i = 0; i < brush.planeCount; i++) {
    const nx = brush.planes[i * 4];
    const ny = brush.planes[i * 4 + 1];
    const nz = brush.planes[i * 4 + 2];
    if (nz > 0 && nz < 0.999) return { x: -Math.sign(nx), y: -Math.sign(ny) };
  }
  return null;
}

/** A wedge filling `brush`'s bounds, its top rising toward `rise`. */
function wedgeGeometry(brush: Brush, rise: { x: number; y: number }): BufferGeometry {
  const { mins: a, maxs: b } = brush;
  // Corner heights: the high side at maxs.z, the low side at mins.z.
  const top = (x: number, y: number): number => {
    const high = rise.x > 0 ? x === b.x : rise.x < 0 ? x === a.x : rise.y > 0 ? y === b.y : y === a.y;
    return high ? b.z : a.z;
  };
  const corners = [
    [a.x, a.y],
    [b.x, a.y],
    [b.x, b.y],
    [a.x, b.y],
  ];
  const p: number[] = [];
  const tri = (u: number[], v: number[], w: number[]) => p.push(...u, ...v, ...w);
  const up = corners.map(([x, y]) => [x, y, top(x, y)]);
  const down = corners.map(([x, y]) => [x, y, a.z]);
  tri(up[0], up[1], up[2]);
  tri(up[0], up[2], up[3]);
  tri(down[0], down[2], down[1]);
  tri(down[0], down[3], down[2]);
  for (let i = 0; i < 4; i++) {
    const j = (i + 1) % 4;
    tri(down[i], down[j], up[j]);
    tri(down[i], up[j], up[i]);
  }
  const g = new BufferGeometry();
  g.setAttribute('position', new Float32BufferAttribute(p, 3));
  g.computeVertexNormals();
  return g;
}
