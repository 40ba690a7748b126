import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { NAMED_PROFILES } from '../../src/net/profile.ts';
import { EVENT_LOG_SIZE, EventLog, eventLogSize } from '../../src/server/events.ts';

describe('the server event log', () => {
  it('is sized by the player count: the default up to 64 players, 16 events per player beyond', () => {
    expect(eventLogSize(16)).toBe(EVENT_LOG_SIZE);
    expect(eventLogSize(64)).toBe(EVENT_LOG_SIZE);
    expect(eventLogSize(128)).toBe(2048);
    expect(eventLogSize(512)).toBe(8192);
    expect(new EventLog(eventLogSize(512)).capacity).toBe(8192);
  });

  it('keeps the newest `capacity` events, in order, and refuses a size that is not a power of two', () => {
    const log = new EventLog(8);
    for (let i = 0; i < 20; i++) {
      log.source = i % 3;
      log.emit(1, i, 0, 0, 0);
    }
    expect(log.head).toBe(20);
    expect(log.tail).toBe(12);
    for (let p = log.tail; p < log.head; p++) {
      expect(log.at(p).p0).toBe(p);
      expect(log.at(p).source).toBe(p % 3);
    }
    expect(() => new EventLog(6)).toThrow(/power of two/);
    expect(() => new EventLog(0)).toThrow(/power of two/);
  });
});

describe('events in frames', () => {
  it('an event that cannot be encoded (a type with no spec) costs its clients no frames and no connection', () => {
    // Frames copy each event's bits, encoded once; one that fails to encode is written field by
    // field as before the copies, and the frames after it come as usual.
    const seed = 3;
    const msg = `seed ${seed}`;
    const match = new Match(arenaGame, seed, {});
    for (let i = 0; i < 2; i++) {
      match.addClient({ profile: NAMED_PROFILES.dsl, drive: aimBot(seed + i, { aimErrorUnits: 12 }) });
    }
    match.run(2000);
    const before = match.clients.map((c) => c.client.stats.framesReceived);
    const eventsBefore = match.clients.map((c) => c.client.stats.eventsReceived);
    // Type 0 has no spec in the arena's table.
    match.server.events.emit(0, 1, 2, 3, 4);
    match.run(2000);
    for (let i = 0; i < 2; i++) {
      // 32 frames a second: a frame or two may be lost on the link, none to the bad event.
      expect(match.clients[i].client.stats.framesReceived - before[i], msg).toBeGreaterThanOrEqual(62);
      expect(match.clients[i].client.stats.eventsReceived - eventsBefore[i], msg).toBeGreaterThan(0);
    }
    expect(match.server.clientCount, msg).toBe(2);
    match.close();
  });
});
