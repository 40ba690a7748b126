// The browser client's frame loop: one frame per requestAnimationFrame with the time passed in,
// and a slow timer that keeps frames (commands, keepalives) going while the page is hidden and
// the browser stops animation frames. Frame intervals and the time spent in each frame are kept
// in rings for a frame time report.

/** A ring of the last `capacity` samples, with mean and percentiles on demand. */
export class SampleRing {
  readonly samples: Float64Array;
  count = 0;
  private next = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`SampleRing: capacity must be a positive integer, got ${capacity}`);
    }
    this.samples = new Float64Array(capacity);
  }

  add(value: number): void {
    this.samples[this.next] = value;
    this.next = (this.next + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
  }

  clear(): void {
    this.count = 0;
    this.next = 0;
  }

  mean(): number {
    let sum = 0;
    for (let i = 0; i < this.count; i++) sum += this.samples[i];
    return this.count === 0 ? 0 : sum / this.count;
  }

  /** The p-th percentile (0..100) of the held samples (sorts a copy: call it for reports, not per frame). */
  percentile(p: number): number {
    if (this.count === 0) return 0;
    const sorted = this.samples.slice(0, this.count).sort();
    const i = Math.min(this.count - 1, Math.max(0, Math.ceil((p / 100) * this.count) - 1));
    return sorted[i];
  }
}

export interface FrameLoopOptions {
  /** Frames are run by this timer when no animation frame came for this long (hidden page), ms. */
  fallbackIntervalMs: number;
  /** Samples kept of frame intervals and of frame work times. */
  historyFrames: number;
  /** Called, and the loop stopped, when a frame throws; without it the error is rethrown. */
  onError?: (error: unknown) => void;
}

export const DEFAULT_FRAME_LOOP_OPTIONS: FrameLoopOptions = {
  fallbackIntervalMs: 100,
  historyFrames: 4096,
};

/** Runs `frame(nowMs, dtMs)` once per animation frame with performance.now() time. */
export class FrameLoop {
  readonly options: FrameLoopOptions;
  /** Time between frames, and time spent inside `frame`, ms. */
  readonly intervals: SampleRing;
  readonly workTimes: SampleRing;
  frames = 0;
  private readonly frame: (nowMs: number, dtMs: number) => void;
  private rafId = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastMs = -1;
  private running = false;
  private readonly onAnimationFrame = (): void => {
    this.rafId = 0;
    if (!this.running) return;
    this.run();
    this.rafId = requestAnimationFrame(this.onAnimationFrame);
  };

  constructor(frame: (nowMs: number, dtMs: number) => void, options: Partial<FrameLoopOptions> = {}) {
    this.options = { ...DEFAULT_FRAME_LOOP_OPTIONS, ...options };
    if (!(this.options.fallbackIntervalMs > 0)) {
      throw new RangeError(
        `FrameLoop: fallbackIntervalMs must be > 0, got ${this.options.fallbackIntervalMs}`,
      );
    }
    this.frame = frame;
    this.intervals = new SampleRing(this.options.historyFrames);
    this.workTimes = new SampleRing(this.options.historyFrames);
  }

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.lastMs = -1;
    this.rafId = requestAnimationFrame(this.onAnimationFrame);
    const every = this.options.fallbackIntervalMs;
    this.timer = setInterval(() => {
      if (this.running && performance.now() - this.lastMs >= every) this.run();
    }, every);
  }

  stop(): void {
    this.running = false;
    if (this.rafId !== 0) cancelAnimationFrame(this.rafId);
    this.rafId = 0;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private run(): void {
    const now = performance.now();
    const dt = this.lastMs < 0 ? 0 : now - this.lastMs;
    if (this.lastMs >= 0) this.intervals.add(dt);
    this.lastMs = now;
    this.frames++;
    try {
      this.frame(now, dt);
    } catch (error) {
      this.stop();
      if (this.options.onError === undefined) throw error;
      this.options.onError(error);
      return;
    }
    this.workTimes.add(performance.now() - now);
  }
}
