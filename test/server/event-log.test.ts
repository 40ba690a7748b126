import { describe, expect, it } from 'vitest';
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
