import { describe, expect, it } from 'vitest';
import { CMD_MSEC_MAX, createUserCommand, type UserCommand } from '../../src/protocol/usercmd.ts';
import { CommandQueue, clearInvalidInput, MAX_LOST_PER_CLAIM, sanitize } from '../../src/server/commands.ts';

function cmd(sequence: number, msec = 16): UserCommand {
  const c = createUserCommand();
  c.sequence = sequence;
  c.msec = msec;
  return c;
}

/** A queue with the server's defaults but for the slack. */
function queue(commandSlackMs: number): CommandQueue {
  return new CommandQueue({
    commandSlackMs,
    validButtons: 0x0f,
    maxImpulse: 3,
    catchUpRate: 0.1,
  });
}

function drain(q: CommandQueue): number[] {
  const out: number[] = [];
  for (let c = q.next(); c !== undefined; c = q.next()) out.push(c.sequence);
  return out;
}

describe('CommandQueue', () => {
  it('runs each command exactly once, in order, whatever order and how often they arrive', () => {
    const q = queue(1000);
    q.receive(cmd(2), false);
    q.receive(cmd(1), true);
    q.receive(cmd(1), true);
    q.receive(cmd(3), false);
    q.receive(cmd(2), false);
    expect(drain(q)).toEqual([1, 2, 3]);
    q.receive(cmd(2), true);
    q.receive(cmd(3), false);
    q.receive(cmd(4), false);
    expect(drain(q)).toEqual([4]);
    expect(q.stats.executed).toBe(4);
    expect(q.stats.duplicates).toBe(4);
  });

  it('waits for a missing command until a packet shows it will never come', () => {
    const q = queue(1000);
    q.receive(cmd(1), true);
    q.receive(cmd(3), false);
    expect(drain(q)).toEqual([1]);
    // A packet that starts at 3: the client will not send 2 again.
    q.receive(cmd(3), true);
    q.receive(cmd(4), false);
    expect(drain(q)).toEqual([3, 4]);
    expect(q.stats.lost).toBe(1);
  });

  it('does not skip commands that are queued but held by the budget', () => {
    const q = queue(32);
    for (let s = 1; s <= 4; s++) q.receive(cmd(s), s === 1);
    expect(drain(q)).toEqual([1, 2]);
    // The client saw 1..4 acknowledged at the packet level and now starts at 5.
    q.receive(cmd(5), true);
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
      q.receive(cmd(++seq, 32), frame === 0);
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
        for (let i = 0; i < 10; i++) q.receive(cmd(++seq, 16), i === 0);
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
        q.receive(cmd(++seq, 16), true);
      } else if (frame === 161) {
        const first = seq + 1;
        for (let i = 0; i < 62; i++) q.receive(cmd(++seq, 16), i === 0 && seq === first);
      }
      drain(q);
      backlog.push(seq - q.lastDone);
      const lead = q.stats.executedMs - realMs;
      gain = Math.max(gain, lead - lowest);
      lowest = Math.min(lowest, lead);
    }
    expect(q.stats.lost).toBe(0);
    expect(q.stats.overBudget).toBeGreaterThan(0);
    // No stretch of time ran more than itself plus the slack, the burst included.
    expect(gain).toBeLessThanOrEqual(slack);
    // Right after the stall at most max(slack, CMD_MSEC_MAX) waits; three seconds later nothing does.
    expect(Math.max(...backlog.slice(162)) * 16).toBeLessThanOrEqual(Math.max(slack, CMD_MSEC_MAX) + 16);
    expect(Math.max(...backlog.slice(350))).toBeLessThanOrEqual(1);
  });

  it('never lends time: a client that idles and then bursts gains at most the slack', () => {
    const slack = 200;
    const q = queue(slack);
    let seq = 0;
    // Ten seconds of silence, then commands worth five seconds all at once, then 10x real time.
    q.addRealTime(10_000);
    for (let i = 0; i < 300; i++) {
      q.receive(cmd(++seq, 16), i === 0);
      if (i % 50 === 49) drain(q);
    }
    drain(q);
    expect(q.stats.executedMs).toBeLessThanOrEqual(slack);
    let realMs = 0;
    const before = q.stats.executedMs;
    for (let frame = 0; frame < 200; frame++) {
      for (let i = 0; i < 10; i++) q.receive(cmd(++seq, 16), i === 0);
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
        q.receive(cmd(++seq, CMD_MSEC_MAX), true);
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
      q.receive(cmd(s, CMD_MSEC_MAX), s === 1);
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
    q.receive(cmd(1_000_000), true);
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
  });

  it('a claimed packet start costs exactly the commands it claims, and a far-ahead one at most half the queue', () => {
    const q = queue(100_000);
    q.addRealTime(100_000);
    for (let s = 1; s <= 10; s++) q.receive(cmd(s), s === 1);
    expect(drain(q)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Within the window, a packet starting at 30 says 11..29 will never come: exactly 19 lost.
    q.receive(cmd(30), true);
    expect(drain(q)).toEqual([30]);
    expect(q.stats.lost).toBe(19);
    // Far ahead, first in its packet: refused, and 31..30+MAX_LOST_PER_CLAIM marked lost, no more.
    q.receive(cmd(1_000_000), true);
    expect(q.stats.tooFarAhead).toBe(1);
    expect(drain(q)).toEqual([]);
    expect(q.stats.lost).toBe(19 + MAX_LOST_PER_CLAIM);
    q.receive(cmd(31 + MAX_LOST_PER_CLAIM), false);
    q.receive(cmd(32 + MAX_LOST_PER_CLAIM), false);
    expect(drain(q)).toEqual([31 + MAX_LOST_PER_CLAIM, 32 + MAX_LOST_PER_CLAIM]);
    expect(q.stats.lost).toBe(19 + MAX_LOST_PER_CLAIM);
    expect(q.stats.executed).toBe(13);
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
    q.receive(Object.assign(cmd(1), { buttons: 0x10 }), true);
    q.receive(Object.assign(cmd(2), { impulse: 4 }), false);
    q.receive(Object.assign(cmd(3), { buttons: 1, impulse: 1 }), false);
    expect(q.stats.invalidInput).toBe(2);
    expect(drain(q).length).toBe(3);
  });
});
