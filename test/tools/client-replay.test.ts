// The client frame benchmark's replay (tools/bench/client-replay.ts): a client of a match over a
// jittery, lossy link, recorded, is replayed into a fresh client that sends the same datagrams, byte
// for byte (the client is a function of its packets, frame times and input); a recording with one
// received byte changed is not.

import { describe, expect, it } from 'vitest';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { NAMED_PROFILES } from '../../src/net/profile.ts';
import { Match } from '../../src/testing/match.ts';
import {
  addRecordedClient,
  type ClientRecording,
  replayRecordings,
} from '../../tools/bench/client-replay.ts';

const SEED = 41;

function recordMatch(): ClientRecording[] {
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, SEED, {}, arenaRules());
  const profile = NAMED_PROFILES.mobile;
  const recordings: ClientRecording[] = [];
  for (let i = 0; i < 6; i++) {
    const options = { profile, drive: aimBot(SEED * 31 + i), frameJitterMs: 3 };
    if (i < 2) recordings.push(addRecordedClient(match, SEED * 100 + i, options));
    else match.addClient(options);
  }
  match.run(1500);
  for (const r of recordings) r.warmupFrames = r.frames.length;
  match.run(2500);
  for (const r of recordings) r.sentInFrames = r.sent.length;
  match.close();
  return recordings;
}

describe('a recorded client replayed alone', () => {
  const recordings = recordMatch();

  it('sends what the recorded client sent, byte for byte, on every pass', () => {
    const msg = `seed ${SEED}`;
    for (const r of recordings) {
      expect(r.sentInFrames, msg).toBeGreaterThan(100);
      expect(
        r.polls.some((batch) => batch.length > 0),
        msg,
      ).toBe(true);
    }
    const frames = recordings.reduce((n, r) => n + r.frames.length - r.warmupFrames, 0);
    const { wall } = replayRecordings({ recordings, config: {} });
    // Three timed passes of every frame after the warm-up.
    expect(wall.length, msg).toBe(3 * frames);
  });

  it('refuses a recording with one received byte changed: the replay diverges', () => {
    const r = recordings[0];
    // A datagram the client received after the warm-up, one byte of its sealed payload flipped:
    // the replayed client drops it, and what it acknowledges next differs.
    const polls = r.polls.map((batch) => batch.map((d) => ({ from: d.from, data: d.data.slice() })));
    const late = polls.findIndex((batch, i) => i > r.warmupFrames && batch.length > 0);
    expect(late, `seed ${SEED}`).toBeGreaterThan(0);
    const d = polls[late][0].data;
    d[d.length - 20] ^= 0x40;
    expect(() => replayRecordings({ recordings: [{ ...r, polls }], config: {} })).toThrow(
      /the replayed client sent \d+ datagrams, the recorded one \d+; first to differ: \d+/,
    );
  });
});
