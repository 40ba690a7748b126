// The up-link end to end: command packets from real clients over the conditioner, on simulated
// time. Each command goes in as many packets as the measured loss needs, so the bytes a client
// sends grow with loss and not with the round trip, and stay within the up-link budget. A command
// that may fire a shot also rides along until acknowledged, in at most SHOT_SENDS packets.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import {
  DEFAULT_CLIENT_CONFIG,
  HEAD_COMMANDS,
  SHOT_COPIES,
  SHOT_SPAN_PACKETS,
  SHOT_TAIL_STRIDE,
  STARTUP_PACKETS,
} from '../../src/client/client.ts';
import { type NetworkProfile, parseProfile } from '../../src/net/profile.ts';

/**
 * The most packets a shot goes in on a link losing none: SHOT_COPIES in a row (the sparse copies
 * to SHOT_SPAN_PACKETS, every SHOT_TAIL_STRIDE-th, go only where the loss asks for more than one).
 */
const SHOT_SENDS = SHOT_COPIES;
const SHOT_SENDS_LOSSY = SHOT_COPIES + (SHOT_SPAN_PACKETS - SHOT_COPIES) / SHOT_TAIL_STRIDE;

const WARM_UP_MS = 10_000;
const MEASURE_MS = 20_000;

/**
 * Two aiming clients on a link of `rttMs` round trip and `loss`, with an up-link budget of
 * `upRateBytesPerSecond`; the first one's up-link figures.
 */
function upLink(seed: number, rttMs: number, loss: number, upRateBytesPerSecond?: number) {
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, seed);
  const profile = parseProfile({ name: 'link', latencyMs: rttMs / 2, jitterMs: rttMs / 20, loss });
  const config = upRateBytesPerSecond === undefined ? undefined : { upRateBytesPerSecond };
  const entries = [0, 1].map((i) =>
    match.addClient({ profile, drive: aimBot(seed + i), frameJitterMs: 2, ...(config && { config }) }),
  );
  match.run(WARM_UP_MS);
  const client = entries[0].client;
  // Past the start, whose copies assume loss until STARTUP_PACKETS are acknowledged (on the 1 s
  // round trip the connection takes seconds, and the start may last past WARM_UP_MS).
  for (let t = 0; (client.channel?.stats.packetsAcked ?? 0) < STARTUP_PACKETS && t < WARM_UP_MS; t += 100)
    match.run(100);
  const server = match.server.clients[client.slot];
  if (server === null || server === undefined) throw new Error(`seed ${seed}: client not connected`);
  const bytes0 = server.channel.stats.bytesReceived;
  const sent0 = client.stats.commandsSent;
  const made0 = client.predictor.newestSequence;
  const packets0 = client.stats.commandPackets;
  const shots0 = client.stats.shotCommands;
  const tail0 = client.stats.shotTailCopies;
  match.run(MEASURE_MS);
  const seconds = MEASURE_MS / 1000;
  const figures = {
    bytesPerSecond: (server.channel.stats.bytesReceived - bytes0) / seconds,
    packetsPerSecond: (client.stats.commandPackets - packets0) / seconds,
    copiesPerCommand: (client.stats.commandsSent - sent0) / (client.predictor.newestSequence - made0),
    sent: client.stats.commandsSent - sent0,
    made: client.predictor.newestSequence - made0,
    shots: client.stats.shotCommands - shots0,
    tailCopies: client.stats.shotTailCopies - tail0,
    lost: server.commandStats.lost,
    overBudget: server.commandStats.overBudget,
    corrections: client.predictor.stats.corrections,
  };
  match.close();
  return figures;
}

/**
 * One running client on `profile` for 10 s (`frames`: its frame timing; `server`: the server's
 * configuration beside its defaults); the server's command figures for it, its corrections and its
 * probe-timeout resends.
 */
function runner(
  seed: number,
  profile: NetworkProfile,
  frames: { frameMs?: number; frameJitterMs?: number },
  server: { maxSilentWaitMs?: number } = {},
) {
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, seed, server);
  const c = match.addClient({ profile, drive: runnerBot(seed), ...frames });
  match.run(10_000);
  const stats = { ...match.server.clients[c.client.slot]!.commandStats };
  const corrections = c.client.predictor.stats.corrections;
  const probeResends = c.client.stats.probeResends;
  match.close();
  return { stats, corrections, probeResends };
}

/**
 * Runs `runner` on each seed and checks that the server ran at least `executed` of the client's
 * commands, skipped none as lost and the client corrected nothing; `more` checks the rest.
 */
function expectNoCommandLost(
  seeds: readonly number[],
  profile: NetworkProfile,
  frames: { frameMs?: number; frameJitterMs?: number },
  executed: number,
  more?: (r: ReturnType<typeof runner>, msg: string) => void,
): void {
  for (const seed of seeds) {
    const r = runner(seed, profile, frames);
    const msg = `seed ${seed}: ${JSON.stringify({ ...r.stats, probeResends: r.probeResends })}`;
    expect(r.stats.executed, msg).toBeGreaterThan(executed);
    expect(r.stats.lost, msg).toBe(0);
    expect(r.corrections, msg).toBe(0);
    more?.(r, msg);
  }
}

describe('the up-link', () => {
  it('does not grow with the round trip: one copy of each command on a loss-free link, shots until acknowledged', () => {
    const near = upLink(71, 50, 0);
    const far = upLink(72, 1000, 0);
    const msg = `seeds 71, 72: ${JSON.stringify({ near, far })}`;
    for (const f of [near, far]) {
      expect(f.bytesPerSecond, msg).toBeLessThanOrEqual(DEFAULT_CLIENT_CONFIG.upRateBytesPerSecond);
      expect(f.packetsPerSecond, msg).toBeGreaterThan(50);
      // Commands that cannot fire go once (a few more while the loss measure starts up, at one
      // acknowledgement a round trip); one that may fire rides in the next packets until one
      // carrying it is acknowledged, in SHOT_SENDS at most.
      expect(f.shots, msg).toBeGreaterThan(0.01 * f.made);
      expect(f.sent - f.made, msg).toBeLessThanOrEqual(0.1 * f.made + f.shots * (SHOT_SENDS - 1));
      expect(f.lost, msg).toBe(0);
      // Losing nothing, the measured loss asks for one copy: no sparse copies.
      expect(f.tailCopies, msg).toBe(0);
    }
    // At 50 ms the acknowledgement comes a few packets on; at 1000 ms every shot takes all its copies.
    expect(near.sent - near.made, msg).toBeLessThan(near.shots * 6);
    expect(far.sent - far.made, msg).toBeGreaterThan(0.9 * far.shots * (SHOT_SENDS - 1));
    // Beyond the shots' copies, only each packet's first command costs more: it is encoded against
    // the newest command known received, a round trip back (20 times further at 1000 ms).
    expect(far.bytesPerSecond / near.bytesPerSecond, msg).toBeLessThan(1.3);
  });

  it('repeats each command as often as the measured loss needs, and none is lost', () => {
    const f = upLink(73, 200, 0.1);
    const msg = `seed 73: ${JSON.stringify(f)}`;
    // 10 % loss: the smallest n with 0.1^n <= 0.0001, plus one; the budget pays for four or five.
    expect(f.copiesPerCommand, msg).toBeGreaterThan(3.5);
    expect(f.copiesPerCommand, msg).toBeLessThan(5.5);
    expect(f.lost, msg).toBe(0);
    expect(f.overBudget, msg).toBe(0);
    expect(f.bytesPerSecond, msg).toBeLessThanOrEqual(DEFAULT_CLIENT_CONFIG.upRateBytesPerSecond);
  });

  it('on a lossy link a shot goes on, past SHOT_COPIES in a row, in every SHOT_TAIL_STRIDE-th packet', () => {
    // 1000 ms round trip: a shot is acknowledged about 56 packets on, so it goes in about
    // (56 - SHOT_COPIES) / SHOT_TAIL_STRIDE sparse copies (a budget that lets packets go at 60 a
    // second; the default one spaces them out, and the acknowledgement comes fewer packets on).
    const f = upLink(75, 1000, 0.1, 20_000);
    const msg = `seed 75: ${JSON.stringify(f)}`;
    expect(f.shots, msg).toBeGreaterThan(50);
    expect(f.tailCopies / f.shots, msg).toBeGreaterThan(10);
    expect(f.tailCopies / f.shots, msg).toBeLessThanOrEqual(SHOT_SENDS_LOSSY - SHOT_COPIES);
    expect(f.lost, msg).toBe(0);
  });

  it('stays within its budget where the loss asks for more copies than it pays for', () => {
    const f = upLink(74, 500, 0.3);
    const msg = `seed 74: ${JSON.stringify(f)}`;
    expect(f.bytesPerSecond, msg).toBeLessThanOrEqual(DEFAULT_CLIENT_CONFIG.upRateBytesPerSecond);
    // Packets go further apart (at most three new commands each) rather than copies vanish.
    expect(f.packetsPerSecond, msg).toBeGreaterThanOrEqual(19);
    expect(f.copiesPerCommand, msg).toBeGreaterThan(3);
  });

  it('sends the oldest first when the commands not yet received outgrow a packet: nothing skipped', () => {
    // A 700 ms cut of the up-link at 144 frames a second leaves about 100 commands to send, more
    // than a packet holds (64). Packets that kept the newest left out the oldest, the very ones
    // the server waits for, packet after packet, until its reorder window ran out (16 and 10
    // commands skipped on seeds 1 and 2). A full packet now keeps the oldest, and the newest.
    const profile = parseProfile({
      name: 'cut',
      latencyMs: 40,
      jitterMs: 5,
      events: [{ atMs: 5000, durationMs: 700, up: { loss: 1 } }],
    });
    expectNoCommandLost([1, 2], profile, { frameMs: 1000 / 144 }, 1300);
  });

  it('sends the oldest commands not known received again after a probe timeout, when the down-link hides the loss', () => {
    // The up-link loses 100 ms of packets (every copy of their commands: a loss-free link sends
    // one) while the down-link, which brings the acknowledgements, loses 1.5 s. No acknowledgement
    // shows those commands lost until the down-link is back, after the server's reorder window
    // gave up on them: 6 and 5 commands skipped on seeds 1 and 2 before the probe timeout. Sent again a round trip and four deviations after their
    // last copy, they arrive while the server still waits.
    const profile = parseProfile({
      name: 'hidden-loss',
      latencyMs: 40,
      jitterMs: 2,
      events: [
        { atMs: 5000, durationMs: 100, up: { loss: 1 } },
        { atMs: 5000, durationMs: 1500, down: { loss: 1 } },
      ],
    });
    expectNoCommandLost([1, 2], profile, { frameJitterMs: 2 }, 500, (r, msg) =>
      expect(r.probeResends, msg).toBeGreaterThan(0),
    );
  });

  it('sends the commands the server waits for in every packet while its acknowledged command stands still', () => {
    // The down-link is cut for a second: the client hears no acknowledgement, so the command the
    // server last acknowledged running stands still. After a probe timeout the oldest
    // HEAD_COMMANDS not known received go in every packet (the server runs commands in order: it
    // waits for the first of them), besides the resends; before the cut, on a clean link, never.
    const profile = parseProfile({
      name: 'down-cut',
      latencyMs: 40,
      jitterMs: 2,
      events: [{ atMs: 5000, durationMs: 1000, down: { loss: 1 } }],
    });
    for (const seed of [1, 2]) {
      const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, seed);
      const c = match.addClient({ profile, drive: runnerBot(seed), frameJitterMs: 2 });
      match.run(5000);
      const clean = c.client.stats.headResends;
      // Past the probe timeout (the round trip and four deviations, about 100 ms here).
      match.run(300);
      const head0 = c.client.stats.headResends;
      const packets0 = c.client.stats.commandPackets;
      match.run(600);
      const perPacket = (c.client.stats.headResends - head0) / (c.client.stats.commandPackets - packets0);
      match.run(4100);
      const stats = match.server.clients[c.client.slot]!.commandStats;
      const msg = `seed ${seed}: ${JSON.stringify({ clean, perPacket, lost: stats.lost, overBudget: stats.overBudget })}`;
      expect(clean, msg).toBe(0);
      expect(perPacket, msg).toBeGreaterThan(HEAD_COMMANDS / 2);
      expect(perPacket, msg).toBeLessThanOrEqual(HEAD_COMMANDS);
      expect(stats.lost, msg).toBe(0);
      expect(c.client.predictor.stats.corrections, msg).toBe(0);
      match.close();
    }
  });

  it('keeps sending about DROUGHT_PACKET_RATE packets a second while the up-link is cut', () => {
    // While the up-link loses everything, the server has nothing to acknowledge: every command
    // not known received goes again, and the packets grew with them (on `bursty`, to 10 a second
    // and fewer at 2 KB/s: a loss burst counted in packets lasted that much longer in time, and
    // the server heard nothing for up to 2.7 s). A packet now carries what the budget pays for at
    // DROUGHT_PACKET_RATE (the oldest and the newest; the first command's base and the run
    // heads cost a little more than the average command): 31.8 a second through this cut on
    // seed 1, against 20 at 20 packets' worth and 14.5 before either (seed 1). After the cut every
    // command still reaches the server.
    const profile = parseProfile({
      name: 'up-cut',
      latencyMs: 40,
      jitterMs: 2,
      events: [{ atMs: 5000, durationMs: 1500, up: { loss: 1 } }],
    });
    for (const seed of [1, 2]) {
      const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, seed);
      const c = match.addClient({ profile, drive: runnerBot(seed), frameJitterMs: 2 });
      match.run(5300);
      const packets0 = c.client.stats.commandPackets;
      match.run(1100);
      const rate = (c.client.stats.commandPackets - packets0) / 1.1;
      match.run(3600);
      const stats = match.server.clients[c.client.slot]!.commandStats;
      const msg = `seed ${seed}: ${JSON.stringify({ rate, lost: stats.lost, overBudget: stats.overBudget })}`;
      expect(rate, msg).toBeGreaterThanOrEqual(27);
      expect(stats.lost, msg).toBe(0);
      expect(c.client.predictor.stats.corrections, msg).toBe(0);
      match.close();
    }
  });

  it('waits for a missing command through an up-link silence past the longest wait: none lost', () => {
    // 60 ms of command packets are lost (one copy each on a clean link), then, before the client
    // can learn it and send them again, the up-link is cut for 2 s: the server holds newer
    // commands and waits for the missing ones while it hears nothing. Skipped at
    // maxReorderWindowMs (1500 ms, maxSilentWaitMs 0) they are lost, a correction; waited for
    // (maxSilentWaitMs, 1000 ms more while the client is silent) the first packets after the cut
    // bring them.
    const profile = parseProfile({
      name: 'gap-then-silence',
      latencyMs: 40,
      jitterMs: 2,
      events: [
        { atMs: 5000, durationMs: 60, up: { loss: 1 } },
        { atMs: 5100, durationMs: 2000, up: { loss: 1 } },
      ],
    });
    for (const seed of [1, 2]) {
      const waited = runner(seed, profile, { frameJitterMs: 2 });
      const skipped = runner(seed, profile, { frameJitterMs: 2 }, { maxSilentWaitMs: 0 });
      const msg = `seed ${seed}: waited ${JSON.stringify(waited)}, skipped ${JSON.stringify(skipped)}`;
      expect(skipped.stats.lost, msg).toBeGreaterThan(0);
      expect(skipped.corrections, msg).toBeGreaterThan(0);
      expect(waited.stats.lost, msg).toBe(0);
      expect(waited.corrections, msg).toBe(0);
      expect(waited.stats.executed, msg).toBeGreaterThan(500);
    }
  });

  it('waits for the commands a latency spike left behind the ones sent after it: none lost', () => {
    // The `spikes` profile's spike, twice: 40 ms one way, then 1.2 s for 1.5 s. Packets sent
    // during it are still on their way when those sent after it arrive; the acknowledgements'
    // delay (which sets the reorder window) is back to 40 ms by then.
    const spike = { durationMs: 1500, latencyMs: 1200, jitterMs: 50 };
    const profile = parseProfile({
      name: 'spiky',
      latencyMs: 40,
      jitterMs: 5,
      events: [
        { atMs: 3000, ...spike },
        { atMs: 6500, ...spike },
      ],
    });
    // Seed 7 loses a command with a window that falls back with the delay at once.
    expectNoCommandLost([1, 2, 3, 4, 5, 6, 7, 8], profile, { frameJitterMs: 2 }, 400, (r, msg) => {
      expect(r.stats.reordered, msg).toBeGreaterThan(0);
      expect(r.stats.late, msg).toBe(0);
    });
  });

  it('sends a command again in time when every copy is lost just after the link turned slow and jittery', () => {
    // A second after the round trip stepped from 40 to 700 ms with 80 ms of jitter each way, the
    // up-link loses 60 ms of packets (each command went in one: no loss measured). The step
    // inflates the round trip's deviation for seconds; taken as the reordering to wait for before
    // a packet counts as lost, it delayed the resend until after the server's longest wait (5 and
    // 5 commands skipped on seeds 2 and 3). The reordering the acknowledgements show (at most
    // about twice the jitter) is the wait now.
    const profile = parseProfile({
      name: 'turning-slow',
      latencyMs: 20,
      jitterMs: 2,
      events: [
        { atMs: 5000, durationMs: 6000, latencyMs: 350, jitterMs: 80 },
        { atMs: 6000, durationMs: 60, up: { loss: 1 } },
      ],
    });
    expectNoCommandLost([1, 2, 3, 4, 5, 6], profile, { frameJitterMs: 2 }, 500, (r, msg) =>
      expect(r.stats.late, msg).toBe(0),
    );
  });
});
