// Client-side prediction end to end: real server and client objects over the memory transport
// and its conditioner, on simulated time, with the arena's shared movement.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import type { GameClient } from '../../src/client/client.ts';
import { NAMED_PROFILES, parseProfile } from '../../src/net/profile.ts';
import type { DatagramEndpoint } from '../../src/net/transport.ts';

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

function profileFor(rttMs: number, loss: number) {
  const oneWay = rttMs / 2;
  return parseProfile({
    name: `rtt${rttMs}`,
    latencyMs: oneWay,
    jitterMs: oneWay * 0.2,
    loss,
  });
}

/** Records the client's first prediction of every command and the server's result for it. */
function recordAgreement(client: Client) {
  const predicted = new Map<number, ArenaPlayerState>();
  const executed = new Map<number, ArenaPlayerState>();
  const player = arenaGame.player;
  let seen = 0;
  const afterFrame = () => {
    const p = client.predictor;
    if (p.newestSequence > seen) {
      // The newest command was just predicted for the first time.
      seen = p.newestSequence;
      const copy = player.create();
      player.copy(copy, p.current);
      predicted.set(seen, copy);
    }
  };
  const onCommand = (slot: number, sequence: number, state: ArenaPlayerState) => {
    if (slot !== client.slot) return;
    const copy = player.create();
    player.copy(copy, state);
    executed.set(sequence, copy);
  };
  return { predicted, executed, afterFrame, onCommand };
}

describe('prediction over the conditioner', () => {
  for (const rtt of [0, 100, 250, 500]) {
    for (const loss of [0, 0.1]) {
      it(`predicts every command bit for bit at ${rtt} ms round trip, ${loss * 100}% loss`, () => {
        const seed = 1000 + rtt + loss * 10;
        const commandHook: { fn: (slot: number, seq: number, s: ArenaPlayerState) => void } = {
          fn: () => {},
        };
        const match = new Match(
          arenaGame,
          seed,
          {},
          {
            onCommand: (_server, client, cmd) => commandHook.fn(client.slot, cmd.sequence, client.state),
          },
        );
        // Over the lossy link the client replays on every acknowledgement, the paper's loop as
        // written; over the clean one only after a correction (none here: every one confirms).
        const replay = loss > 0 ? 'always' : 'on-mismatch';
        const c = match.addClient({
          profile: profileFor(rtt, loss),
          drive: runnerBot(seed),
          frameJitterMs: 4,
          config: { prediction: { replay } },
        });
        const rec = recordAgreement(c.client);
        c.afterFrame = rec.afterFrame;
        commandHook.fn = rec.onCommand;
        match.run(60_000);
        const msg = `seed ${seed}`;
        expect(c.client.state, msg).toBe('connected');
        expect(rec.executed.size, msg).toBeGreaterThan(3000);
        let compared = 0;
        for (const [seq, server] of rec.executed) {
          const mine = rec.predicted.get(seq);
          expect(mine, `${msg}: command ${seq} never predicted`).toBeDefined();
          expect(arenaGame.player.equals(mine!, server), `${msg}: command ${seq} predicted differently`).toBe(
            true,
          );
          expect([mine!.originX, mine!.originY, mine!.originZ], `${msg}: command ${seq}`).toEqual([
            server.originX,
            server.originY,
            server.originZ,
          ]);
          compared++;
        }
        expect(compared, msg).toBeGreaterThan(3000);
        expect(c.client.predictor.stats.corrections, msg).toBe(0);
        expect(c.client.predictor.stats.visibleCorrections, msg).toBe(0);
        const { replays, confirmations } = c.client.predictor.stats;
        expect(replay === 'always' ? replays : confirmations, msg).toBeGreaterThan(100);
        expect(replay === 'always' ? confirmations : replays, msg).toBe(0);
        const stats = match.server.clients[c.client.slot]!.commandStats;
        expect(stats.lost, msg).toBe(0);
        expect(stats.overBudget, msg).toBe(0);
        match.close();
      });
    }
  }

  // A stall sends a client's commands late and together: after a 1.5 s latency spike each way
  // (spikes), a handover (mobile) or seconds of a terrible link (flapping), the server runs the
  // late backlog from the time the client left unused, and waits for a command whose copies were
  // lost while the client can still send it again, so the client's prediction stands.
  for (const name of ['spikes', 'mobile', 'flapping']) {
    it(`predicts every command through the stalls of ${name}: nothing dropped, no correction`, () => {
      const seed = 77 + name.length;
      const match = new Match(arenaGame, seed);
      const c = match.addClient({ profile: NAMED_PROFILES[name], drive: runnerBot(seed), frameJitterMs: 2 });
      match.run(30_000);
      const msg = `seed ${seed}, ${name}`;
      expect(c.client.state, msg).toBe('connected');
      const stats = match.server.clients[c.client.slot]!.commandStats;
      expect(stats.executed, msg).toBeGreaterThan(1500);
      expect(stats.overBudget, msg).toBe(0);
      expect(stats.lost, msg).toBe(0);
      expect(c.client.predictor.stats.corrections, msg).toBe(0);
      match.close();
    });
  }

  // A link turning bad (flapping: 40 ms round trip, then 400 ms with 20 % loss for 4 s in 10):
  // the measured loss says one copy a command, so the first commands of a bad spell go once and
  // some are lost; each is sent again once the acknowledgements show it, in at least four
  // packets, and arrives within the server's reorder window. With one copy a resend (the first
  // send's), a lost resend cost another 400 ms round trip and the server had skipped the command.
  it('sends a command again in enough packets when the link turns bad: none skipped, none late', () => {
    const seed = 11;
    const match = new Match(arenaGame, seed);
    const entries = [];
    for (let i = 0; i < 8; i++) {
      entries.push(
        match.addClient({ profile: NAMED_PROFILES.flapping, drive: runnerBot(seed + i), frameJitterMs: 2 }),
      );
    }
    match.run(30_000);
    let lost = 0;
    let late = 0;
    let corrections = 0;
    let executed = 0;
    for (const c of entries) {
      const stats = match.server.clients[c.client.slot]!.commandStats;
      lost += stats.lost;
      late += stats.late;
      executed += stats.executed;
      corrections += c.client.predictor.stats.corrections;
    }
    const msg = `seed ${seed}: lost ${lost}, late ${late}, corrections ${corrections}`;
    expect(executed, msg).toBeGreaterThan(8 * 1500);
    expect(lost, msg).toBe(0);
    expect(late, msg).toBe(0);
    expect(corrections, msg).toBe(0);
    match.close();
  });

  // Burst loss both ways (bursty: runs of about eight packets lost) sometimes takes every copy
  // of a command and its resends; the server waits, then goes on without it. Filling each lost
  // command with the one before it (as Source does) keeps the player moving as its client
  // predicted: the same match without filling corrects the clients by far more. The server here
  // waits at most 600 ms for a missing command (`maxReorderWindowMs`, and no longer while the
  // client is silent: `maxSilentWaitMs` 0): with the default 1500 ms
  // every command of this seed's 40 s arrives in time and none is lost, and since the commands
  // the server waits for go in every packet (HEAD_COMMANDS), none at 1000 ms either. (Seed 1: 27
  // commands lost in the 40 s, 8 corrections either way, 101 units of them in all skipped and 7
  // filled; at 1000 ms before HEAD_COMMANDS, 8 lost.)
  it('fills lost commands with the one before: the corrections after a loss are a fraction of standing still', () => {
    const seed = 1;
    const run = (fillLostMs: number) => {
      const match = new Match(arenaGame, seed, { fillLostMs, maxReorderWindowMs: 600, maxSilentWaitMs: 0 });
      const entries = [];
      for (let i = 0; i < 8; i++) {
        entries.push(
          match.addClient({ profile: NAMED_PROFILES.bursty, drive: runnerBot(seed + i), frameJitterMs: 2 }),
        );
      }
      match.run(40_000);
      let lost = 0;
      let filled = 0;
      let corrections = 0;
      let distance = 0;
      for (const c of entries) {
        const stats = match.server.clients[c.client.slot]!.commandStats;
        lost += stats.lost;
        filled += stats.filled;
        corrections += c.client.predictor.stats.corrections;
        distance += c.client.predictor.stats.correctionDistanceTotal;
      }
      match.close();
      return { lost, filled, corrections, distance };
    };
    const skip = run(0);
    const fill = run(1000);
    const msg = `seed ${seed}: skipped ${JSON.stringify(skip)}, filled ${JSON.stringify(fill)}`;
    expect(skip.lost, msg).toBeGreaterThan(4);
    expect(skip.filled, msg).toBe(0);
    expect(fill.lost, msg).toBeGreaterThan(4);
    expect(fill.filled, msg).toBeGreaterThan(fill.lost / 2);
    expect(fill.corrections, msg).toBeGreaterThan(0);
    // Per correction and in all, the filled match's prediction errors are a fraction.
    expect(fill.distance / fill.corrections, msg).toBeLessThan((0.5 * skip.distance) / skip.corrections);
    expect(fill.distance, msg).toBeLessThan(0.5 * skip.distance);
  });

  it('corrects an outside push within one round trip, smoothly', () => {
    const seed = 77;
    const rtt = 250;
    const pushAtMs = 5000;
    let pushTick = -1;
    const match = new Match(
      arenaGame,
      seed,
      {},
      {
        onTick: (server, tick) => {
          if (pushTick < 0 && server.timeMs >= pushAtMs) {
            pushTick = tick;
            for (const cl of server.clients) if (cl) cl.state.velocityX += 250;
          }
        },
      },
    );
    const c = match.addClient({ profile: profileFor(rtt, 0), drive: runnerBot(seed) });
    const client = c.client;
    const rendered = { x: 0, y: 0, z: 0 };
    const predictedNow = { x: 0, y: 0, z: 0 };
    let prevRendered: { x: number; y: number; z: number } | null = null;
    let prevPredicted: { x: number; y: number; z: number } | null = null;
    let correctedAtMs = -1;
    let maxExcess = 0;
    c.afterFrame = (nowMs) => {
      if (!client.isSpawned) return;
      if (correctedAtMs < 0 && client.predictor.stats.corrections > 0) correctedAtMs = nowMs;
      client.predictor.renderOrigin(nowMs, rendered);
      arenaGame.player.origin(client.predictor.current, predictedNow);
      if (prevRendered && prevPredicted) {
        // A frame's rendered step may exceed the predicted step only by the blend rate.
        const stepR = Math.hypot(
          rendered.x - prevRendered.x,
          rendered.y - prevRendered.y,
          rendered.z - prevRendered.z,
        );
        const stepP = Math.hypot(
          predictedNow.x - prevPredicted.x,
          predictedNow.y - prevPredicted.y,
          predictedNow.z - prevPredicted.z,
        );
        const allowed = stepP + (client.predictor.stats.visibleErrorMax * (1000 / 60)) / 100 + 1e-6;
        maxExcess = Math.max(maxExcess, stepR - allowed);
      }
      prevRendered = { ...rendered };
      prevPredicted = { ...predictedNow };
    };
    match.run(10_000);
    const msg = `seed ${seed}`;
    expect(pushTick, msg).toBeGreaterThan(0);
    expect(client.predictor.stats.corrections, msg).toBeGreaterThan(0);
    // The push lands in the next frame the server sends: one-way latency plus at most one
    // snapshot interval, plus jitter; within one round trip.
    expect(correctedAtMs - pushAtMs, msg).toBeLessThanOrEqual(rtt + 1000 / 32 + rtt * 0.2);
    expect(client.predictor.stats.snaps, msg).toBe(0);
    expect(client.predictor.stats.visibleErrorMax, msg).toBeGreaterThan(1);
    expect(client.predictor.stats.visibleCorrections, msg).toBeGreaterThan(0);
    expect(maxExcess, msg).toBeLessThanOrEqual(0);
    // After the correction, prediction agrees again.
    const after = client.predictor.stats.corrections;
    match.run(10_000);
    expect(client.predictor.stats.corrections, msg).toBe(after);
    match.close();
  });

  it('holds a speed-hacking client to real time plus the slack, and its neighbour is unaffected', () => {
    const seed = 99;
    const slack = 200;
    const match = new Match(arenaGame, seed, { commandSlackMs: slack });
    const honest = match.addClient({ profile: profileFor(100, 0), drive: runnerBot(seed) });
    // The cheat runs the client's clock twice as fast: every frame claims twice its real time.
    const cheat = match.addClient({
      profile: profileFor(100, 0),
      drive: (_c, _t, input) => {
        input.forwardMove = 127;
      },
      clientTime: (t) => t * 2,
      wrapEndpoint: (e: DatagramEndpoint) => ({
        address: e.address,
        send: (to, data) => e.send(to, data),
        poll: (nowMs, onPacket) => e.poll(nowMs / 2, onPacket),
        close: () => e.close(),
      }),
    });
    match.run(2000);
    const slot = cheat.client.slot;
    const stats = match.server.clients[slot]!.commandStats;
    const executedBefore = stats.executedMs;
    const startMs = match.nowMs;
    match.run(30_000);
    const realMs = match.nowMs - startMs;
    const msg = `seed ${seed}`;
    expect(stats.executedMs - executedBefore, msg).toBeLessThanOrEqual(realMs + slack);
    expect(stats.overBudget, msg).toBeGreaterThan(100);
    expect(stats.overBudgetMs, msg).toBeGreaterThan(realMs * 0.8);
    expect(honest.client.predictor.stats.corrections, msg).toBe(0);
    match.close();
  });
});
