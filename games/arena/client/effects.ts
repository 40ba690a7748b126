// The arena's effect events turned into what a player sees and hears, each played once: muzzle
// flash, tracer, impact, hit marker, footstep (a footprint, a HUD mark and a tick). A live
// session feeds it its predicted events (the local player's, the first time a command runs) and
// the server's (everyone else's); a demo player can feed it recorded events the same way.

import { vec3 } from 'backstep/sim';
import {
  EVENT_FOOTSTEP,
  EVENT_HIT,
  EVENT_IMPACT_WORLD,
  EVENT_MISS,
  EVENT_PROJECTILE_FIRED,
  EVENT_SHOT,
  EVENT_WEAPON_FIRE,
} from '../shared/constants.ts';
import { unpackPelletDirection } from '../shared/weapons.ts';
import type { ArenaScene } from './scene.ts';

/** An effect event as the engine delivers it (WireEvent has this shape). */
export interface EffectEvent {
  readonly type: number;
  readonly p0: number;
  readonly p1: number;
  readonly p2: number;
  readonly p3: number;
}

/** Longest tracer drawn for a ray that hit nothing, units. */
const MISS_TRACER_UNITS = 3000;

export class ArenaEffects {
  /** Until when the hit marker and the footstep mark show (ms, the frame clock). */
  hitMarkerUntilMs = 0;
  footstepUntilMs = 0;
  /** Trigger pulls and hits of the local player (its predicted events). */
  shotsFired = 0;
  predictedHits = 0;
  private readonly shotStart = vec3();
  private readonly shotDir = vec3();
  private shotMine = false;
  private audio: AudioContext | null = null;

  constructor(private readonly scene: ArenaScene) {}

  /** Enables sound (browsers allow it only after a user gesture: call it from one). */
  unlockAudio(): void {
    if (this.audio === null && typeof AudioContext !== 'undefined') this.audio = new AudioContext();
    void this.audio?.resume().catch(() => {});
  }

  /**
   * Plays `e` at `nowMs`. `mine`: the local player's own predicted event; `feet` is where the
   * local player stands (for its footprints).
   */
  play(nowMs: number, e: EffectEvent, mine: boolean, feet: { x: number; y: number; z: number }): void {
    const s = this.shotStart;
    const d = this.shotDir;
    switch (e.type) {
      case EVENT_WEAPON_FIRE:
      case EVENT_PROJECTILE_FIRED:
        if (!mine) break;
        this.scene.muzzleFlash(nowMs);
        this.shotsFired++;
        break;
      case EVENT_SHOT:
        s.x = e.p0;
        s.y = e.p1;
        s.z = e.p2;
        unpackPelletDirection(e.p3, d);
        this.shotMine = mine;
        break;
      case EVENT_HIT: {
        const t = e.p3;
        this.scene.tracer(nowMs, s.x, s.y, s.z, s.x + d.x * t, s.y + d.y * t, s.z + d.z * t, this.shotMine);
        this.scene.impact(nowMs, s.x + d.x * t, s.y + d.y * t, s.z + d.z * t, true);
        if (mine) {
          this.hitMarkerUntilMs = nowMs + 180;
          this.predictedHits++;
        }
        break;
      }
      case EVENT_IMPACT_WORLD:
        this.scene.tracer(nowMs, s.x, s.y, s.z, e.p0, e.p1, e.p2, this.shotMine);
        this.scene.impact(nowMs, e.p0, e.p1, e.p2, false);
        break;
      case EVENT_MISS: {
        const r = Math.min(e.p1, MISS_TRACER_UNITS);
        this.scene.tracer(nowMs, s.x, s.y, s.z, s.x + d.x * r, s.y + d.y * r, s.z + d.z * r, this.shotMine);
        break;
      }
      case EVENT_FOOTSTEP:
        if (!mine) break;
        this.scene.footprint(nowMs, feet.x, feet.y, feet.z);
        this.footstepUntilMs = nowMs + 150;
        this.tick();
        break;
    }
  }

  private tick(): void {
    const audio = this.audio;
    if (audio === null || audio.state !== 'running') return;
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.frequency.value = 90;
    gain.gain.setValueAtTime(0.05, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + 0.06);
    osc.connect(gain).connect(audio.destination);
    osc.start();
    osc.stop(audio.currentTime + 0.07);
  }
}
