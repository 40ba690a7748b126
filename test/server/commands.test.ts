import { describe, expect, it } from 'vitest';
import { CMD_MSEC_MAX, createUserCommand, type UserCommand } from '../../src/protocol/usercmd.ts';
import {
  CommandQueue,
  clearInvalidInput,
  MAX_LOST_PER_CLAIM,
  MAX_REORDER_WINDOW_MS,
  MAX_SILENT_WAIT_MS,
  MIN_REORDER_WINDOW_MS,
  REORDER_WINDOW_FALL_PER_SECOND,
  reorderWindowFor,
  sanitize,
} from '../../src/server/commands.ts';

function cmd(sequence: number, msec = 16): UserCommand {
  const c = createUserCommand();
  c.sequence = sequence;
  c.msec = msec;
  return c;
}

/**
 * A queue with the server's defaults but for the slack (and the reorder window, and lost
 * commands filled in: none unless asked for).
 */
function queue(commandSlackMs: number, reorderWindowMs = 0, fillLostMs = 0, heldButtons = 0): CommandQueue {
  return new CommandQueue({
    commandSlackMs,
    validButtons: 0x0f,
    maxImpulse: 3,
    catchUpRate: 0.1,
    reorderWindowMs,
    heldButtons,
    fillLostMs,
  });
}

function drain(q: CommandQueue): number[] {
  const out: number[] = [];
  for (let c = q.next(); c !== undefined; c = q.next()) out.push(c.sequence);
  return out;
}

/**
 * A queue (slack 2000 ms, window 100 ms) that ran command 1 and holds 3 with 2 missing, while the
 * client is not heard.
 */
function silentGap(): CommandQueue {
  const q = queue(2000, 100);
  q.receive(cmd(1));
  q.addRealTime(16);
  expect(drain(q)).toEqual([1]);
  q.receive(cmd(3));
  q.clientHearing = false;
  return q;
}

/** Real time (ms, in 16 ms steps, at most 5000) until the queue runs something: how long it waited. */
function waitedUntilRun(q: CommandQueue): number {
  let waited = 0;
  while (drain(q).length === 0 && waited < 5000) {
    q.addRealTime(16);
    waited += 16;
  }
  return waited;
}

describe('CommandQueue', () => {
  it('runs each command exactly once, in order, whatever order and how often they arrive', () => {
    const q = queue(1000);
    q.receive(cmd(2));
    q.receive(cmd(1));
    q.receive(cmd(1));
    q.receive(cmd(3));
    q.receive(cmd(2));
    expect(drain(q)).toEqual([1, 2, 3]);
    q.receive(cmd(2));
    q.receive(cmd(3));
    q.receive(cmd(4));
    expect(drain(q)).toEqual([4]);
    expect(q.stats.executed).toBe(4);
    expect(q.stats.duplicates).toBe(4);
  });

  it('waits the reorder window for a missing command once a newer one is here, then skips it', () => {
    const q = queue(1000, 48);
    q.receive(cmd(1));
    q.receive(cmd(3));
    expect(drain(q)).toEqual([1]);
    // 2 was overtaken: it arrives within the window and runs in order.
    q.addRealTime(32);
    expect(drain(q)).toEqual([]);
    q.receive(cmd(2));
    expect(drain(q)).toEqual([2, 3]);
    expect(q.stats.reordered).toBe(1);
    expect(q.stats.lost).toBe(0);
    // 4 never comes: 5 and 6 wait the window (from when the gap was found), then 4 is skipped.
    q.receive(cmd(5));
    q.receive(cmd(6));
    expect(drain(q)).toEqual([]);
    q.addRealTime(32);
    expect(drain(q)).toEqual([]);
    q.addRealTime(16);
    expect(drain(q)).toEqual([5, 6]);
    expect(q.stats.lost).toBe(1);
    // A copy of 4 arriving after that is counted late, not run.
    q.receive(cmd(4));
    expect(q.stats.late).toBe(1);
    expect(q.stats.executed).toBe(5);
  });

  it('never skips a command while nothing newer has arrived', () => {
    const q = queue(1000, 0);
    q.receive(cmd(1));
    expect(drain(q)).toEqual([1]);
    q.addRealTime(5000);
    expect(drain(q)).toEqual([]);
    q.receive(cmd(2));
    expect(drain(q)).toEqual([2]);
    expect(q.stats.lost).toBe(0);
  });

  it('runs the reorder window only while the client hears the server, and skips after the longest wait in all', () => {
    // 2 is missing and 3 is here. The client hears nothing (a loss burst on the down-link): it
    // cannot know 2 was lost, so the window does not run.
    const q = silentGap();
    expect(drain(q)).toEqual([]);
    for (let i = 0; i < 20; i++) q.addRealTime(16);
    expect(drain(q)).toEqual([]);
    // It hears again: the window runs from here, and 2, sent again, arrives within it.
    q.clientHearing = true;
    q.addRealTime(80);
    expect(drain(q)).toEqual([]);
    q.receive(cmd(2));
    expect(drain(q)).toEqual([2, 3]);
    expect(q.stats.lost).toBe(0);
    // 4 is missing, 5 is here, the client is never heard: 4 is skipped after MAX_REORDER_WINDOW_MS
    // and MAX_SILENT_WAIT_MS more.
    q.receive(cmd(5));
    q.clientHearing = false;
    expect(drain(q)).toEqual([]);
    const waited = waitedUntilRun(q);
    expect(waited).toBeGreaterThanOrEqual(MAX_REORDER_WINDOW_MS + MAX_SILENT_WAIT_MS);
    expect(waited).toBeLessThan(MAX_REORDER_WINDOW_MS + MAX_SILENT_WAIT_MS + 16);
    expect(q.stats.lost).toBe(1);
  });

  it('waits past the longest wait only while the client is silent, and skips the moment it is heard', () => {
    // An up-link loss burst: 2 is missing, 3 came, then nothing is heard for 2 s. The client sends
    // 2 in every packet, and the first after the silence brings it: skipping it at 1500 ms would
    // have run 3 alone and cost the client a correction.
    const q = silentGap();
    for (let t = 0; t < 2000; t += 16) {
      q.addRealTime(16);
      expect(drain(q)).toEqual([]);
    }
    q.receive(cmd(2));
    q.receive(cmd(4));
    q.addRealTime(16);
    expect(drain(q)).toEqual([2, 3, 4]);
    expect(q.stats.lost).toBe(0);
    // 5 is missing, 6 came; silent past the longest wait, then heard again without 5: skipped at once.
    q.receive(cmd(6));
    for (let t = 0; t < MAX_REORDER_WINDOW_MS + 100; t += 16) {
      q.addRealTime(16);
      expect(drain(q)).toEqual([]);
    }
    q.clientHearing = true;
    expect(drain(q)).toEqual([6]);
    expect(q.stats.lost).toBe(1);
    // With no silent wait (maxSilentWaitMs 0) a silent client's command is skipped at the longest wait.
    const strict = new CommandQueue({
      commandSlackMs: 2000,
      validButtons: 0x0f,
      maxImpulse: 3,
      catchUpRate: 0.1,
      reorderWindowMs: 100,
      heldButtons: 0,
      fillLostMs: 0,
      maxSilentWaitMs: 0,
    });
    strict.receive(cmd(1));
    strict.receive(cmd(3));
    strict.clientHearing = false;
    strict.addRealTime(16);
    expect(drain(strict)).toEqual([1]);
    const waited = waitedUntilRun(strict);
    expect(waited).toBeGreaterThanOrEqual(MAX_REORDER_WINDOW_MS - 16);
    expect(waited).toBeLessThan(MAX_REORDER_WINDOW_MS + 16);
    expect(strict.stats.lost).toBe(1);
  });

  it('waits at most maxReorderWindowMs for a missing command, and refuses a bound outside [20, 10000]', () => {
    const config = {
      commandSlackMs: 2000,
      validButtons: 0x0f,
      maxImpulse: 3,
      catchUpRate: 0.1,
      reorderWindowMs: 5000,
      heldButtons: 0,
      fillLostMs: 0,
      maxReorderWindowMs: 300,
    };
    const q = new CommandQueue(config);
    q.receive(cmd(1));
    q.receive(cmd(3));
    expect(drain(q)).toEqual([1]);
    const waited = waitedUntilRun(q);
    // The window asked for 5000 ms (and the client hears): the bound skips 2 after 300.
    expect(waited).toBeGreaterThanOrEqual(300);
    expect(waited).toBeLessThan(300 + 16);
    expect(q.stats.lost).toBe(1);
    expect(reorderWindowFor(1e9, 0, 300)).toBe(300);
    expect(() => new CommandQueue({ ...config, maxReorderWindowMs: 10 })).toThrow(
      /maxReorderWindowMs must be in \[20, 10000\], got 10/,
    );
    expect(() => new CommandQueue({ ...config, maxReorderWindowMs: Number.NaN })).toThrow(
      /maxReorderWindowMs/,
    );
    expect(() => new CommandQueue({ ...config, maxSilentWaitMs: -1 })).toThrow(
      /maxSilentWaitMs must be in \[0, 10000\], got -1/,
    );
    expect(() => new CommandQueue({ ...config, maxSilentWaitMs: Number.NaN })).toThrow(/maxSilentWaitMs/);
  });

  it('sets the window from the round trip and its deviation, within its bounds', () => {
    const none = reorderWindowFor(0, 0);
    expect(none).toBeGreaterThan(MIN_REORDER_WINDOW_MS);
    expect(reorderWindowFor(50, 10)).toBe(none + 2 * (50 + 4 * 10));
    expect(reorderWindowFor(Number.NaN, Number.NaN)).toBe(none);
    expect(reorderWindowFor(1e9, 0)).toBe(MAX_REORDER_WINDOW_MS);
    expect(reorderWindowFor(0, 1e9)).toBe(MAX_REORDER_WINDOW_MS);
  });

  it('follows a longer window at once and a shorter one slowly: packets sent during a spike are still on their way after it', () => {
    const q = queue(2000, 100);
    // A spike: the acknowledgements' delay, and the window with it, jump up.
    q.followReorderWindow(1500, 16);
    expect(q.reorderWindowMs).toBe(1500);
    // It is over: the target falls back at once, the window by REORDER_WINDOW_FALL_PER_SECOND.
    for (let t = 0; t < 500; t += 16) q.followReorderWindow(516, 16);
    const fallen = 1500 - (REORDER_WINDOW_FALL_PER_SECOND * 16 * Math.ceil(500 / 16)) / 1000;
    expect(q.reorderWindowMs).toBeCloseTo(fallen, 9);
    // So a command overtaken by those sent after the spike, found missing now, is waited for past
    // the 516 ms the delay alone gives: it comes 563 ms after its gap was found and runs.
    q.receive(cmd(1));
    q.addRealTime(16);
    expect(drain(q)).toEqual([1]);
    q.receive(cmd(3));
    for (let t = 0; t < 563; t += 16) {
      q.followReorderWindow(516, 16);
      q.addRealTime(16);
      expect(drain(q)).toEqual([]);
    }
    q.receive(cmd(2));
    expect(drain(q)).toEqual([2, 3]);
    expect(q.stats.lost).toBe(0);
    // Seconds later it is back where the delay puts it.
    for (let t = 0; t < 5000; t += 16) q.followReorderWindow(516, 16);
    expect(q.reorderWindowMs).toBe(516);
    // Not past its bounds, and not moved by what is not a time.
    q.followReorderWindow(1e9, 16);
    expect(q.reorderWindowMs).toBe(q.maxReorderWindowMs);
    for (const bad of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      q.followReorderWindow(bad, 16);
      q.followReorderWindow(516, bad);
    }
    expect(q.reorderWindowMs).toBe(q.maxReorderWindowMs);
    q.followReorderWindow(0, 1e6);
    expect(q.reorderWindowMs).toBe(MIN_REORDER_WINDOW_MS);
  });

  it('does not skip commands that are queued but held by the budget', () => {
    const q = queue(32);
    for (let s = 1; s <= 4; s++) q.receive(cmd(s));
    expect(drain(q)).toEqual([1, 2]);
    // The client saw 1..4 acknowledged at the packet level and now sends 5 alone.
    q.receive(cmd(5));
    q.addRealTime(32);
    expect(drain(q)).toEqual([3, 4]);
    q.addRealTime(16);
    expect(drain(q)).toEqual([5]);
    expect(q.stats.lost).toBe(0);
  });

  it('holds a client to real time plus the slack; the excess is dropped and counted', () => {
    const slack = 100;
    const q = queue(slack);
    let seq = 0;
    let realMs = 0;
    // The client claims 32 ms of simulation for every 16 ms of real time.
    for (let frame = 0; frame < 1000; frame++) {
      q.receive(cmd(++seq, 32));
      realMs += 16;
      q.addRealTime(16);
      drain(q);
    }
    expect(q.stats.executedMs).toBeLessThanOrEqual(realMs + slack);
    expect(q.stats.executedMs).toBeGreaterThanOrEqual(realMs - 32);
    expect(q.stats.overBudget).toBeGreaterThan(400);
    expect(q.stats.overBudgetMs + q.stats.executedMs).toBeLessThanOrEqual(32 * 1000);
  });

  it('lets an honest client burst after a gap without dropping anything', () => {
    const q = queue(200);
    let seq = 0;
    for (let frame = 0; frame < 100; frame++) {
      q.addRealTime(16);
      if (frame % 10 === 9) {
        // Ten frames of commands arrive together after a 160 ms gap.
        for (let i = 0; i < 10; i++) q.receive(cmd(++seq, 16));
        drain(q);
      }
    }
    expect(q.stats.executed).toBe(100);
    expect(q.stats.overBudget).toBe(0);
  });

  it('after a stall, drops the stale backlog instead of running it faster than real time', () => {
    const slack = 200;
    const q = queue(slack);
    let seq = 0;
    let realMs = 0;
    const backlog: number[] = [];
    // Lowest (executed - real) so far: the most a window ending now can have gained is the gap.
    let lowest = 0;
    let gain = 0;
    for (let frame = 0; frame < 600; frame++) {
      realMs += 16;
      q.addRealTime(16);
      // Frames 100..160: nothing arrives (a one-second stall); then all of it at once.
      if (frame < 100 || frame >= 162) {
        q.receive(cmd(++seq, 16));
      } else if (frame === 161) {
        for (let i = 0; i < 62; i++) q.receive(cmd(++seq, 16));
      }
      drain(q);
      backlog.push(seq - q.lastDone);
      const lead = q.stats.executedMs - realMs;
      gain = Math.max(gain, lead - lowest);
      lowest = Math.min(lowest, lead);
    }
    expect(q.stats.lost).toBe(0);
    expect(q.stats.overBudget).toBeGreaterThan(0);
    // No stretch of time ran more than itself plus the slack and the reserve (real time let go
    // while the queue had nothing to run, at most another slack, paid back at catchUpRate).
    expect(q.stats.repaidMs).toBeGreaterThan(0);
    expect(gain).toBeLessThanOrEqual(2 * slack);
    // Right after the stall at most max(slack, CMD_MSEC_MAX) waits; three seconds later only the
    // newest arrival's bundle may wait beyond the budget (one command here), besides the one due.
    expect(Math.max(...backlog.slice(162)) * 16).toBeLessThanOrEqual(Math.max(slack, CMD_MSEC_MAX) + 16);
    expect(Math.max(...backlog.slice(350))).toBeLessThanOrEqual(2);
  });

  it('runs the backlog of a stall longer than the slack from the reserve, at catchUpRate, not dropped', () => {
    // A 600 ms stall with a 400 ms slack: the backlog arrives together, 400 ms of it runs at
    // once and 200 ms is left waiting beyond the budget. The client's commands then come at the
    // pace of real time, so nothing would ever pay for those 200 ms: without the reserve they
    // were drained (dropped, a prediction correction each); with it they wait and run as the
    // stall's unused time is paid back, at catchUpRate of real time.
    const slack = 400;
    const run = (withReserve: boolean) => {
      const q = queue(slack);
      let seq = 0;
      let realMs = 0;
      let lowest = 0;
      let gain = 0;
      for (let frame = 0; frame < 500; frame++) {
        q.addRealTime(16);
        realMs += 16;
        if (!withReserve) q.reserveMs = 0;
        if (frame < 100 || frame > 137) q.receive(cmd(++seq, 16));
        else if (frame === 137) for (let i = 0; i < 38; i++) q.receive(cmd(++seq, 16));
        drain(q);
        const lead = q.stats.executedMs - realMs;
        gain = Math.max(gain, lead - lowest);
        lowest = Math.min(lowest, lead);
      }
      return { q, gain, waiting: seq - q.lastDone };
    };
    const without = run(false);
    const withIt = run(true);
    expect(without.q.stats.overBudget).toBeGreaterThan(8);
    expect(withIt.q.stats.overBudget).toBe(0);
    expect(withIt.q.stats.executed).toBe(500);
    expect(withIt.waiting).toBeLessThanOrEqual(1);
    // The 200 ms of backlog were paid from the reserve, at catchUpRate (about 2 s of real time).
    expect(withIt.q.stats.repaidMs).toBeGreaterThanOrEqual(190);
    // No stretch of time ran more than itself, the slack and the reserve (at most another slack).
    expect(withIt.gain).toBeLessThanOrEqual(2 * slack);
  });

  it('never lends time: a client that idles and then bursts gains at most the slack', () => {
    const slack = 200;
    const q = queue(slack);
    let seq = 0;
    // Ten seconds of silence, then commands worth five seconds all at once, then 10x real time.
    q.addRealTime(10_000);
    for (let i = 0; i < 300; i++) {
      q.receive(cmd(++seq, 16));
      if (i % 50 === 49) drain(q);
    }
    drain(q);
    expect(q.stats.executedMs).toBeLessThanOrEqual(slack);
    let realMs = 0;
    const before = q.stats.executedMs;
    for (let frame = 0; frame < 200; frame++) {
      for (let i = 0; i < 10; i++) q.receive(cmd(++seq, 16));
      q.addRealTime(16);
      realMs += 16;
      drain(q);
      expect(q.stats.executedMs - before).toBeLessThanOrEqual(realMs + slack);
    }
  });

  it('runs every command up to CMD_MSEC_MAX after silence, even past a smaller slack', () => {
    for (const slack of [0, 50, 200]) {
      const q = queue(slack);
      let seq = 0;
      // A client hitching, then silent: one 250 ms command after each silence.
      for (let frame = 0; frame < 40; frame++) {
        q.addRealTime(frame % 10 === 0 ? 3000 : 1000);
        q.receive(cmd(++seq, CMD_MSEC_MAX));
        let waitedMs = 0;
        while (q.next() === undefined && waitedMs < 1000) {
          q.addRealTime(16);
          waitedMs += 16;
        }
        // It waits only until its msec is earned: never for ever, however small the slack.
        expect(waitedMs, `slack ${slack}`).toBeLessThanOrEqual(Math.max(0, CMD_MSEC_MAX - slack) + 16);
      }
      expect(q.stats.executed, `slack ${slack}`).toBe(40);
      expect(q.stats.overBudget, `slack ${slack}`).toBe(0);
    }
    // Back to back at real time, after silence: every one runs.
    const q = queue(200);
    q.addRealTime(5000);
    for (let s = 1; s <= 40; s++) {
      q.receive(cmd(s, CMD_MSEC_MAX));
      for (let t = 0; t < CMD_MSEC_MAX; t += 10) {
        q.addRealTime(10);
        drain(q);
      }
    }
    expect(q.stats.executed).toBe(40);
    expect(q.stats.overBudget).toBe(0);
  });

  it('refuses commands absurdly far ahead', () => {
    const q = queue(200);
    q.receive(cmd(1_000_000));
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
  });

  it('a missing run costs exactly its commands, and a far-ahead number at most half the queue', () => {
    const q = queue(100_000);
    q.addRealTime(100_000);
    for (let s = 1; s <= 10; s++) q.receive(cmd(s));
    expect(drain(q)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // 11..29 never come: exactly 19 lost once 30 is here (a zero window).
    q.receive(cmd(30));
    expect(drain(q)).toEqual([30]);
    expect(q.stats.lost).toBe(19);
    // Far ahead: refused, and 31..30+MAX_LOST_PER_CLAIM skipped as lost, no more.
    q.receive(cmd(1_000_000));
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
    expect(q.stats.lost).toBe(19 + MAX_LOST_PER_CLAIM);
    q.receive(cmd(31 + MAX_LOST_PER_CLAIM));
    q.receive(cmd(32 + MAX_LOST_PER_CLAIM));
    expect(drain(q)).toEqual([31 + MAX_LOST_PER_CLAIM, 32 + MAX_LOST_PER_CLAIM]);
    expect(q.stats.lost).toBe(19 + MAX_LOST_PER_CLAIM);
    expect(q.stats.executed).toBe(13);
  });

  it('queues a command up to the whole queue ahead and waits for the gap before it like any gap', () => {
    // A client out of a long up-link burst: its newest command comes first, 200 past the point
    // the server is at, with the ones between still to come. Nothing is skipped while they come
    // within the reorder window.
    const q = queue(100_000, 500);
    q.addRealTime(100_000);
    for (let s = 1; s <= 10; s++) q.receive(cmd(s));
    expect(drain(q)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    q.receive(cmd(210));
    expect(q.stats.tooFarAhead).toBe(0);
    expect(drain(q)).toEqual([]);
    q.addRealTime(200);
    for (let s = 11; s < 210; s++) q.receive(cmd(s));
    const all = drain(q);
    expect(all.length).toBe(200);
    expect(all[0]).toBe(11);
    expect(all[199]).toBe(210);
    expect(q.stats.lost).toBe(0);
    // A number the queue cannot hold is refused; one it can (however far) costs its own client
    // the gap before it, after the reorder window, and nothing after it.
    q.receive(cmd(210 + 256));
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
    expect(q.stats.lost).toBe(MAX_LOST_PER_CLAIM);
    q.receive(cmd(338 + 255));
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
    q.addRealTime(1_000);
    expect(drain(q)).toEqual([338 + 255]);
    expect(q.stats.lost).toBe(MAX_LOST_PER_CLAIM + 254);
  });

  it('refuses a reorder window out of range, naming it', () => {
    expect(() => queue(100, -1)).toThrow(/reorderWindowMs/);
    expect(() => queue(100, Number.NaN)).toThrow(/reorderWindowMs/);
  });

  it('fills a lost command with the one before it: moves and held buttons kept, never an attack or impulse, the view a step toward the next', () => {
    const JUMP = 1;
    const ATTACK = 4;
    const q = queue(1000, 0, 1000, JUMP);
    const first = cmd(1, 17);
    first.forwardMove = 127;
    first.sideMove = -64;
    first.buttons = JUMP | ATTACK;
    first.impulse = 2;
    first.yaw = 10;
    first.pitch = 350;
    const fourth = cmd(4, 16);
    fourth.yaw = 40;
    fourth.pitch = 20;
    q.receive(first);
    q.receive(fourth);
    const seen: {
      seq: number;
      filled: boolean;
      yaw: number;
      pitch: number;
      buttons: number;
      impulse: number;
      msec: number;
      fwd: number;
      side: number;
    }[] = [];
    for (let c = q.next(); c !== undefined; c = q.next()) {
      seen.push({
        seq: c.sequence,
        filled: q.lastFilled,
        yaw: c.yaw,
        pitch: c.pitch,
        buttons: c.buttons,
        impulse: c.impulse,
        msec: c.msec,
        fwd: c.forwardMove,
        side: c.sideMove,
      });
    }
    expect(seen.map((c) => [c.seq, c.filled])).toEqual([
      [1, false],
      [2, true],
      [3, true],
      [4, false],
    ]);
    for (const f of seen.slice(1, 3)) {
      expect(f.buttons).toBe(JUMP);
      expect(f.impulse).toBe(0);
      expect(f.msec).toBe(17);
      expect(f.fwd).toBe(127);
      expect(f.side).toBe(-64);
    }
    // A third and two thirds of the way from 10 to 40 degrees, and from 350 the short way (up
    // through 0) to 20.
    expect(seen[1].yaw).toBeCloseTo(20, 2);
    expect(seen[2].yaw).toBeCloseTo(30, 2);
    expect(seen[1].pitch).toBeCloseTo(0, 2);
    expect(seen[2].pitch).toBeCloseTo(10, 2);
    expect(q.stats.lost).toBe(2);
    expect(q.stats.filled).toBe(2);
    expect(q.stats.filledMs).toBe(34);
    expect(q.stats.executed).toBe(2);
  });

  it('fills at most fillLostMs in a row, never before a first command ran, and only with budget for it and what waits', () => {
    // Nothing ran yet: the gap before the first command received is skipped.
    const fresh = queue(1000, 0, 1000);
    fresh.receive(cmd(3));
    expect(drain(fresh)).toEqual([3]);
    expect(fresh.stats.filled).toBe(0);
    expect(fresh.stats.lost).toBe(2);

    // 50 ms of fills in a row: 2, 3 and 4 (16 ms each), then 5 to 9 are skipped.
    const q = queue(1000, 0, 50);
    q.receive(cmd(1));
    q.receive(cmd(10));
    const run: number[] = [];
    for (let c = q.next(); c !== undefined; c = q.next()) run.push(q.lastFilled ? -c.sequence : c.sequence);
    expect(run).toEqual([1, -2, -3, -4, 10]);
    expect(q.stats.lost).toBe(8);
    expect(q.stats.filled).toBe(3);
    // A command received and run starts a new run of fills.
    q.receive(cmd(12));
    expect(drain(q)).toEqual([11, 12]);
    expect(q.stats.filled).toBe(4);

    // The budget pays for the commands waiting first: with 40 ms of slack and 32 ms waiting
    // behind the gap, a 16 ms fill would make one of them wait, so the gap is skipped.
    const tight = queue(40, 0, 1000);
    tight.receive(cmd(1));
    expect(drain(tight)).toEqual([1]);
    tight.receive(cmd(3));
    tight.receive(cmd(4));
    expect(drain(tight)).toEqual([3]);
    expect(tight.stats.filled).toBe(0);
    expect(tight.stats.lost).toBe(1);
  });

  it('pays for filled commands with the time the queue starved, leaving the slack for jitter', () => {
    // A client at real time (16 ms a command), its budget full: commands 50 to 55 are lost. The
    // queue starves for their time, which the full budget's cap would let go; the fills spend
    // that, so the budget ends where skipping them leaves it.
    const run = (fillLostMs: number) => {
      const q = queue(100, 0, fillLostMs);
      for (let s = 1; s <= 120; s++) {
        q.addRealTime(16);
        if (s < 50 || s > 55) q.receive(cmd(s));
        drain(q);
      }
      return q;
    };
    const skipping = run(0);
    const filling = run(1000);
    expect(skipping.stats.lost).toBe(6);
    expect(filling.stats.filled).toBe(6);
    expect(filling.stats.executed).toBe(skipping.stats.executed);
    expect(filling.budgetMs).toBe(skipping.budgetMs);
    // Still within real time plus the slack: 120 commands' time, filled ones included.
    expect(filling.stats.executedMs + filling.stats.filledMs).toBeLessThanOrEqual(120 * 16 + 100);
  });

  it('a client leaving numbers out moves no faster: filled time comes out of real time', () => {
    // Every other number, at real time for the ones sent: the fills come from the budget, and in
    // all the queue runs no more than real time plus the slack.
    const q = queue(100, 0, 1000);
    for (let step = 1; step <= 200; step++) {
      q.addRealTime(16);
      q.receive(cmd(2 * step - 1));
      drain(q);
    }
    expect(q.stats.filled).toBeGreaterThan(0);
    expect(q.stats.executedMs + q.stats.filledMs).toBeLessThanOrEqual(200 * 16 + 100);
  });

  it('refuses fillLostMs out of range, naming it', () => {
    expect(() => queue(100, 0, -1)).toThrow(/fillLostMs/);
    expect(() => queue(100, 0, Number.NaN)).toThrow(/fillLostMs/);
    expect(() => queue(100, 0, 20_000)).toThrow(/fillLostMs/);
  });
});

describe('sanitize', () => {
  it('clamps values the wire can carry but the engine does not allow, and says so', () => {
    const c = cmd(1);
    c.viewTickA = 100;
    c.viewTickB = 50;
    expect(sanitize(c)).toBe(true);
    expect(c.viewTickB).toBe(100);
    expect(sanitize(cmd(2))).toBe(false);
  });

  it('clears buttons and impulses the game does not define, and the queue counts them', () => {
    const c = cmd(1);
    c.buttons = 0xff00 | 3;
    c.impulse = 9;
    expect(clearInvalidInput(c, 0x0f, 3)).toBe(true);
    expect(c.buttons).toBe(3);
    expect(c.impulse).toBe(0);
    const ok = cmd(2);
    ok.buttons = 0x0f;
    ok.impulse = 3;
    expect(clearInvalidInput(ok, 0x0f, 3)).toBe(false);
    const q = queue(1000);
    q.receive(Object.assign(cmd(1), { buttons: 0x10 }));
    q.receive(Object.assign(cmd(2), { impulse: 4 }));
    q.receive(Object.assign(cmd(3), { buttons: 1, impulse: 1 }));
    expect(q.stats.invalidInput).toBe(2);
    expect(drain(q).length).toBe(3);
  });
});
