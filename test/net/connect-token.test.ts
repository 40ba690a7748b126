// Connect tokens on their own: issued by a backend, opened by a server; every refusal by reason,
// and no bytes that make either throw.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConnectTokenGate,
  decodeConnectToken,
  encodeConnectToken,
  issueConnectToken,
  MAX_CONNECT_TOKEN_BYTES,
  openConnectToken,
} from '../../src/net/connect-token.ts';

const KEY = new Uint8Array(32).fill(42);
const PROTOCOL_ID = 0x42535450;
const NOW = 1_767_225_600_000;

function issue(overrides: Partial<Parameters<typeof issueConnectToken>[0]> = {}) {
  return issueConnectToken({
    key: KEY,
    userId: 'alice',
    servers: ['eu-1', '203.0.113.7:27015'],
    nowMs: NOW,
    userData: new Uint8Array([1, 2, 3]),
    ...overrides,
  });
}

describe('connect tokens', () => {
  it('a server named in the token opens it and reads who it names', () => {
    const t = issue();
    for (const server of ['eu-1', '203.0.113.7:27015']) {
      const opened = openConnectToken(KEY, PROTOCOL_ID, t.token, NOW + 1000, server);
      if (typeof opened === 'string') throw new Error(opened);
      expect(opened.userId).toBe('alice');
      expect(opened.servers).toEqual(['eu-1', '203.0.113.7:27015']);
      expect([...opened.userData]).toEqual([1, 2, 3]);
      expect(opened.createdAtMs).toBe(NOW);
      expect(opened.expiresAtMs).toBe(NOW + 30_000);
      expect(opened.clientKey).toEqual(t.clientKey);
    }
    expect(t.expiresAtMs).toBe(NOW + 30_000);
    // The client's part never travels inside the token in clear.
    expect(indexOf(t.token, t.clientKey)).toBe(-1);
    expect(indexOf(t.token, new TextEncoder().encode('alice'))).toBe(-1);
  });

  it('refuses an expired token, one for another server, one sealed with another key, another protocol', () => {
    const t = issue({ lifetimeMs: 5000 });
    expect(openConnectToken(KEY, PROTOCOL_ID, t.token, NOW + 4999, 'eu-1')).not.toBeTypeOf('string');
    expect(openConnectToken(KEY, PROTOCOL_ID, t.token, NOW + 5000, 'eu-1')).toBe('token expired');
    expect(openConnectToken(KEY, PROTOCOL_ID, t.token, NOW, 'us-2')).toBe('token wrong server');
    const other = new Uint8Array(32).fill(43);
    expect(openConnectToken(other, PROTOCOL_ID, t.token, NOW, 'eu-1')).toBe('token forged');
    expect(openConnectToken(KEY, PROTOCOL_ID + 1, t.token, NOW, 'eu-1')).toBe('token forged');
    expect(openConnectToken(KEY, PROTOCOL_ID, new Uint8Array(0), NOW, 'eu-1')).toBe('token missing');
  });

  it('any changed byte is refused: the expiry in clear is sealed in too', () => {
    const t = issue();
    const reasons = new Set<string>();
    for (let i = 0; i < t.token.length; i++) {
      for (const bit of [0, 3, 7]) {
        const tampered = t.token.slice();
        tampered[i] ^= 1 << bit;
        const r = openConnectToken(KEY, PROTOCOL_ID, tampered, NOW, 'eu-1');
        expect(typeof r, `byte ${i} bit ${bit}`).toBe('string');
        reasons.add(r as string);
      }
    }
    // A version byte changed is malformed; a later expiry, nonce or body byte fails the seal; an
    // expiry moved into the past is expired before the seal is tried.
    expect([...reasons].sort()).toEqual(['token expired', 'token forged', 'token malformed']);
    expect(openConnectToken(KEY, PROTOCOL_ID, t.token.subarray(0, t.token.length - 1), NOW, 'eu-1')).toBe(
      'token forged',
    );
  });

  it('random and mutated token bytes never throw and never open', () => {
    const t = issue();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: MAX_CONNECT_TOKEN_BYTES + 40 }), (bytes) => {
        const r = openConnectToken(KEY, PROTOCOL_ID, bytes, NOW, 'eu-1');
        expect(typeof r).toBe('string');
      }),
      { numRuns: 2000, seed: 13 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(t.token.length - 1), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 8,
        }),
        (edits) => {
          const bytes = t.token.slice();
          for (const [at, x] of edits) bytes[at] ^= x;
          expect(typeof openConnectToken(KEY, PROTOCOL_ID, bytes, NOW, 'eu-1')).toBe('string');
        },
      ),
      { numRuns: 2000, seed: 14 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const d = decodeConnectToken(text);
        expect(d === null || d.token instanceof Uint8Array).toBe(true);
      }),
      { numRuns: 2000, seed: 15 },
    );
  });

  it('travels to the client as one string and back', () => {
    const t = issue();
    const text = encodeConnectToken(t);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeConnectToken(text)).toEqual(t);
    expect(decodeConnectToken(`${text}!`)).toBeNull();
    expect(decodeConnectToken(text.slice(0, 30))).toBeNull();
  });

  it('a gate takes a token once per address: another address is refused as replayed until it expires', () => {
    let now = NOW;
    const gate = new ConnectTokenGate({ key: KEY, server: 'eu-1', protocolId: PROTOCOL_ID, now: () => now });
    const t = issue();
    const first = gate.check(t.token, 'udp:198.51.100.1:5000');
    if (typeof first === 'string') throw new Error(first);
    gate.admit(first, 'udp:198.51.100.1:5000');
    expect(gate.check(t.token, 'udp:198.51.100.1:5000')).not.toBeTypeOf('string');
    expect(gate.check(t.token, 'udp:198.51.100.2:5000')).toBe('token replayed');
    now = NOW + 30_000;
    expect(gate.check(t.token, 'udp:198.51.100.2:5000')).toBe('token expired');
  });

  it('bad arguments get a message naming them', () => {
    expect(() => issue({ key: new Uint8Array(31) })).toThrow(/key must be a 32-byte/);
    expect(() => issue({ userId: '' })).toThrow(/userId must be 1\.\.64/);
    expect(() => issue({ userId: 'x'.repeat(65) })).toThrow(/userId/);
    expect(() => issue({ servers: [] })).toThrow(/servers must list 1\.\.8/);
    expect(() => issue({ servers: ['a'.repeat(65)] })).toThrow(/servers\[0\]/);
    expect(() => issue({ userData: new Uint8Array(257) })).toThrow(/userData/);
    expect(() => issue({ lifetimeMs: 0 })).toThrow(/lifetimeMs/);
    expect(() => issue({ nowMs: Number.NaN })).toThrow(/nowMs/);
    expect(() => new ConnectTokenGate({ key: KEY, server: '', protocolId: 1 })).toThrow(/server must be/);
    expect(() => new ConnectTokenGate({ key: new Uint8Array(8), server: 'eu-1', protocolId: 1 })).toThrow(
      /key must be/,
    );
  });

  it('the largest token fits the longest challenge response', () => {
    const t = issue({
      userId: 'u'.repeat(64),
      servers: Array.from({ length: 8 }, (_, i) => `${i}`.repeat(64)),
      userData: new Uint8Array(256),
    });
    expect(t.token.length).toBe(MAX_CONNECT_TOKEN_BYTES);
    expect(openConnectToken(KEY, PROTOCOL_ID, t.token, NOW, '7'.repeat(64))).not.toBeTypeOf('string');
  });
});

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
