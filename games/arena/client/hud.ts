// The HUD: health, weapon, ammo, kills and deaths, the hit marker and footstep mark, and the
// kill feed. It shows a player state and a few numbers; where they come from (a live session, a
// demo) is the caller's business. DOM text changes only when a value does.

import type { ArenaPlayerState } from '../shared/game.ts';
import type { KillMessage } from '../shared/messages.ts';
import { clipOf, reserveOf, WEAPONS } from '../shared/weapons.ts';

const FEED_MS = 6000;
const FEED_LINES = 6;

export class Hud {
  /** The kill feed's lines, oldest first. */
  readonly feed: { text: string; untilMs: number }[] = [];
  private last = '';
  private readonly el: (id: string) => HTMLElement;

  constructor(root: Document) {
    this.el = (id) => root.getElementById(id) as HTMLElement;
  }

  /** Shows `state` (its health, weapon and ammo), the score, and the marks still due at `nowMs`. */
  update(
    nowMs: number,
    state: ArenaPlayerState,
    kills: number,
    deaths: number,
    hitMarkerUntilMs: number,
    footstepUntilMs: number,
  ): void {
    this.el('hitmarker').style.opacity = nowMs < hitMarkerUntilMs ? '1' : '0';
    this.el('footstep').style.opacity = nowMs < footstepUntilMs ? '0.9' : '0';
    const w = state.activeWeapon;
    const key = `${state.health}|${w}|${clipOf(state, w)}|${reserveOf(state, w)}|${kills}|${deaths}`;
    if (key !== this.last) {
      this.last = key;
      const health = this.el('health');
      health.textContent = `♥ ${state.health}`;
      health.classList.toggle('low', state.health <= 25);
      this.el('weapon').textContent = WEAPONS[w].name;
      this.el('ammo').textContent = `${clipOf(state, w)} / ${reserveOf(state, w)}`;
      this.el('score').textContent = `kills ${kills}  deaths ${deaths}`;
    }
    this.expire(nowMs);
  }

  /** Drops the kill feed's lines that have shown long enough by `nowMs`. */
  expire(nowMs: number): void {
    if (this.feed.length > 0 && this.feed[0].untilMs <= nowMs) {
      this.feed.shift();
      this.renderFeed();
    }
  }

  /** Adds a kill to the feed; `name` names a player slot ("you" for the local one). */
  kill(nowMs: number, kill: KillMessage, name: (slot: number) => string): void {
    const weapon = kill.weapon >= 0 ? ` (${WEAPONS[kill.weapon].name})` : '';
    const text =
      kill.killer === kill.victim || kill.killer < 0
        ? `${name(kill.victim)} died${weapon}`
        : `${name(kill.killer)} killed ${name(kill.victim)}${weapon}`;
    this.feed.push({ text, untilMs: nowMs + FEED_MS });
    if (this.feed.length > FEED_LINES) this.feed.shift();
    this.renderFeed();
  }

  private renderFeed(): void {
    this.el('killfeed').replaceChildren(
      ...this.feed.map((f) => {
        const div = document.createElement('div');
        div.textContent = f.text;
        return div;
      }),
    );
  }
}
