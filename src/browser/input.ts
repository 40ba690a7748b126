// Input sampling for a browser game: keyboard, mouse buttons and pointer-locked mouse look turned
// into the engine's InputSample once a frame. Bindings come from the game; angles follow the
// Quake convention the engine's commands use (yaw grows to the left, pitch grows looking down).

import type { InputSample } from '../client/client.ts';

/** Which keys (KeyboardEvent.code) and mouse buttons ("Mouse0", "Mouse1", "Mouse2") do what. */
export interface InputBindings {
  forward: readonly string[];
  back: readonly string[];
  left: readonly string[];
  right: readonly string[];
  /** Positive and negative upMove (jump, crouch in most games). */
  up: readonly string[];
  down: readonly string[];
  /** Keys or mouse buttons that set a button bit while held (a press shorter than a frame still counts once). */
  buttons: Readonly<Record<string, number>>;
  /** Keys that send an impulse, once per press. */
  impulses: Readonly<Record<string, number>>;
}

export interface InputSamplerOptions {
  bindings: InputBindings;
  /** Degrees turned per pixel of mouse movement. */
  sensitivity: number;
  /** forwardMove / sideMove / upMove of a held key. */
  moveScale: number;
  /** Pitch is kept within [-pitchLimit, pitchLimit] degrees. */
  pitchLimit: number;
  invertPitch: boolean;
  /** Mouse buttons count only while the pointer is locked (the click that locks it does nothing else). */
  mouseNeedsLock: boolean;
}

export const DEFAULT_INPUT_SAMPLER_OPTIONS: Omit<InputSamplerOptions, 'bindings'> = {
  sensitivity: 0.15,
  moveScale: 127,
  pitchLimit: 89,
  invertPitch: false,
  mouseNeedsLock: true,
};

/** Elements whose keys belong to them (a panel's fields), not to the game. */
function isFormField(target: EventTarget | null): boolean {
  const tag = (target as HTMLElement | null)?.tagName;
  return tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA';
}

/**
 * Listens on `element` (mouse, pointer lock: a click locks the pointer) and its window (keys).
 * `sample(out)` fills a command's input; `yaw` and `pitch` are the view angles it will carry.
 * `enabled = false` ignores the game's keys and buttons (a menu is open). `dispose()` removes
 * every listener.
 */
export class InputSampler {
  readonly options: InputSamplerOptions;
  yaw = 0;
  pitch = 0;
  enabled = true;
  private readonly element: HTMLElement;
  private readonly held = new Set<string>();
  /** Buttons pressed since the last sample (a tap shorter than a frame). */
  private tapped = 0;
  private impulse = 0;
  private readonly listeners: [EventTarget, string, EventListener][] = [];

  constructor(element: HTMLElement, options: Partial<InputSamplerOptions> & { bindings: InputBindings }) {
    this.options = { ...DEFAULT_INPUT_SAMPLER_OPTIONS, ...options };
    const o = this.options;
    for (const key of ['sensitivity', 'moveScale', 'pitchLimit'] as const) {
      if (!(typeof o[key] === 'number' && o[key] > 0 && Number.isFinite(o[key]))) {
        throw new RangeError(`InputSampler: ${key} must be a positive number, got ${String(o[key])}`);
      }
    }
    this.element = element;
    const win = element.ownerDocument.defaultView as Window;
    this.listen(win, 'keydown', (e) => this.onKey(e as KeyboardEvent, true));
    this.listen(win, 'keyup', (e) => this.onKey(e as KeyboardEvent, false));
    this.listen(win, 'blur', () => this.held.clear());
    this.listen(element, 'mousedown', (e) => this.onMouseButton(e as MouseEvent, true));
    this.listen(win, 'mouseup', (e) => this.onMouseButton(e as MouseEvent, false));
    this.listen(element.ownerDocument, 'mousemove', (e) => this.onMouseMove(e as MouseEvent));
    this.listen(element, 'contextmenu', (e) => e.preventDefault());
  }

  /** True while the pointer is locked to the element (mouse look). */
  get locked(): boolean {
    return this.element.ownerDocument.pointerLockElement === this.element;
  }

  /** Asks for pointer lock (the browser grants it only during a user gesture). Never throws. */
  requestLock(): void {
    try {
      const result = this.element.requestPointerLock() as unknown;
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // Not granted (no user gesture, or not supported): mouse look waits for the next click.
    }
  }

  /** Sets the view angles (a spawn or teleport facing). */
  setView(yaw: number, pitch: number): void {
    this.yaw = yaw;
    this.pitch = Math.max(-this.options.pitchLimit, Math.min(this.options.pitchLimit, pitch));
  }

  /** True while `code` (a key or "MouseN") is held. */
  isHeld(code: string): boolean {
    return this.held.has(code);
  }

  /** Fills `out` with this frame's input; taps and the impulse are consumed. */
  sample(out: InputSample): void {
    const b = this.options.bindings;
    const scale = this.options.moveScale;
    const on = this.enabled;
    out.yaw = this.yaw;
    out.pitch = this.pitch;
    out.roll = 0;
    out.forwardMove = on ? (this.any(b.forward) - this.any(b.back)) * scale : 0;
    out.sideMove = on ? (this.any(b.right) - this.any(b.left)) * scale : 0;
    out.upMove = on ? (this.any(b.up) - this.any(b.down)) * scale : 0;
    let buttons = this.tapped;
    if (on) {
      for (const code in b.buttons) if (this.held.has(code)) buttons |= b.buttons[code];
    }
    out.buttons = on ? buttons : 0;
    out.impulse = on ? this.impulse : 0;
    this.tapped = 0;
    this.impulse = 0;
  }

  dispose(): void {
    for (const [target, type, listener] of this.listeners) target.removeEventListener(type, listener);
    this.listeners.length = 0;
    this.held.clear();
  }

  private listen(target: EventTarget, type: string, listener: EventListener): void {
    target.addEventListener(type, listener);
    this.listeners.push([target, type, listener]);
  }

  private any(codes: readonly string[]): number {
    for (const c of codes) if (this.held.has(c)) return 1;
    return 0;
  }

  private bound(code: string): boolean {
    const b = this.options.bindings;
    return (
      b.forward.includes(code) ||
      b.back.includes(code) ||
      b.left.includes(code) ||
      b.right.includes(code) ||
      b.up.includes(code) ||
      b.down.includes(code) ||
      Object.hasOwn(b.buttons, code) ||
      Object.hasOwn(b.impulses, code)
    );
  }

  private press(code: string, down: boolean): void {
    if (!down) {
      this.held.delete(code);
      return;
    }
    if (!this.enabled) return;
    const b = this.options.bindings;
    if (!this.held.has(code)) {
      if (Object.hasOwn(b.buttons, code)) this.tapped |= b.buttons[code];
      if (Object.hasOwn(b.impulses, code)) this.impulse = b.impulses[code];
    }
    this.held.add(code);
  }

  private onKey(e: KeyboardEvent, down: boolean): void {
    if (isFormField(e.target) || !this.bound(e.code)) return;
    if (down && this.enabled) e.preventDefault();
    this.press(e.code, down);
  }

  private onMouseButton(e: MouseEvent, down: boolean): void {
    const code = `Mouse${e.button}`;
    if (down && this.options.mouseNeedsLock && !this.locked) {
      if (e.target === this.element) this.requestLock();
      return;
    }
    this.press(code, down);
  }

  private onMouseMove(e: MouseEvent): void {
    if (!this.locked || !this.enabled) return;
    const o = this.options;
    this.yaw -= e.movementX * o.sensitivity;
    if (this.yaw >= 360 || this.yaw < 0) this.yaw = ((this.yaw % 360) + 360) % 360;
    this.setView(this.yaw, this.pitch + (o.invertPitch ? -1 : 1) * e.movementY * o.sensitivity);
  }
}
