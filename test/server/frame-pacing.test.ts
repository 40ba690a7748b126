// Frame pacing on the server's ticks: the update rate's schedule and the rate's wait together.

import { describe, expect, it } from 'vitest';
import { FramePacing } from '../../src/server/client-frames.ts';

const TICK_MS = 1000 / 64;

/** Runs `seconds` of 64 Hz ticks; at each tick a due frame goes with `bytesAt(nowMs)` bytes. */
function play(pacing: FramePacing, seconds: number, bytesAt: (nowMs: number) => number) {
  const sentAt: number[] = [];
  for (let tick = 0; tick * TICK_MS < seconds * 1000; tick++) {
    const now = tick * TICK_MS;
    if (!pacing.due(now)) continue;
    pacing.sent(now, bytesAt(now));
    sentAt.push(now);
  }
  return sentAt;
}

describe('FramePacing', () => {
  it('lets one frame the rate held back shift the schedule, not hold every later frame a tick', () => {
    // 32 frames a second at 24,000 B/s: a 660-byte frame waits 27.5 ms for the rate, within the
    // 31.25 ms interval. One 900-byte frame at 2 s (37.5 ms) holds the next back a tick, and that
    // one the next (a frame after one the rate held may catch up a tick, so it is due on the old
    // schedule); on the old schedule each later frame was then due before the one before it had
    // waited its rate out, and every frame to the end went a tick late, counted as choke.
    const pacing = new FramePacing(32, 24_000, 0);
    const sentAt = play(pacing, 10, (now) => (now === 2000 ? 900 : 660));
    expect(pacing.choked).toBe(2);
    // Every frame still goes, an update interval apart (one a tick later).
    expect(sentAt.length).toBe(320);
    for (let i = 1; i < sentAt.length; i++) {
      const gap = sentAt[i] - sentAt[i - 1];
      expect(gap === 2 * TICK_MS || (sentAt[i - 1] === 2000 && gap === 3 * TICK_MS)).toBe(true);
    }
  });

  it('keeps the update rate where it does not divide the tick rate, and goes as the rate allows where frames outgrow it', () => {
    // 20 frames a second on 64 Hz ticks: gaps of 3 and 4 ticks averaging 50 ms, no choke.
    const loose = new FramePacing(20, 1_000_000, 0);
    expect(play(loose, 10, () => 500).length).toBe(200);
    expect(loose.choked).toBe(0);
    // 1,000-byte frames at 16,000 B/s (62.5 ms each): 16 a second, every other frame held back.
    const tight = new FramePacing(32, 16_000, 0);
    const sent = play(tight, 10, () => 1000);
    expect(sent.length).toBe(160);
    expect(tight.choked).toBeGreaterThan(150);
  });
});
