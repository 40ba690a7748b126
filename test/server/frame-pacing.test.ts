// Frame pacing on the server's ticks: the update rate's schedule and the rate's wait together.

import { describe, expect, it } from 'vitest';
import { framesLostBefore } from '../../src/client/delay.ts';
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

  it('counts each update interval the rate holds a frame back, so the client reads no loss in a choked gap', () => {
    // 1,000-byte frames at 10,000 B/s and 32 a second: one every 100 ms, 6 or 7 ticks apart (3.2
    // intervals). The frame header's count (chokedSinceSent when the frame goes) must cover the
    // gap, or the client's loss model counts the frames the rate held as lost and draws the link
    // far deeper in the past than its gaps need (the count was one a frame: every frame read as
    // one or two lost).
    const pacing = new FramePacing(32, 10_000, 0);
    let lastTick = -1;
    let frames = 0;
    const choked: number[] = [];
    for (let tick = 0; tick * TICK_MS < 10_000; tick++) {
      const now = tick * TICK_MS;
      if (!pacing.due(now)) continue;
      if (lastTick >= 0) {
        choked.push(pacing.chokedSinceSent);
        expect(framesLostBefore(tick - lastTick, 2, pacing.chokedSinceSent), `tick ${tick}`).toBe(0);
      }
      pacing.sent(now, 1000);
      lastTick = tick;
      frames++;
    }
    // A frame goes on the tick after its rate wait: 92 in 10 s, 6 or 7 ticks apart.
    expect(frames).toBe(92);
    expect(Math.min(...choked)).toBeGreaterThanOrEqual(2);
    // 320 frames due in 10 s, 92 sent: the rest choked, and each frame that went late counts its
    // own slot too (as a frame held a single tick always has).
    expect(pacing.choked).toBeGreaterThanOrEqual(320 - 92 - 1);
    expect(pacing.choked).toBeLessThanOrEqual(320);
    // And a real loss still reads as one: a 6-tick gap with one frame held, 3 frames, 1 lost.
    expect(framesLostBefore(6, 2, 1)).toBe(1);
    expect(framesLostBefore(3, 2, 0)).toBe(0);
    expect(framesLostBefore(4, 2, 0)).toBe(1);
  });
});
