// Connect tokens between real clients and a real server over the memory network: a server that
// takes only its backend's tokens, every refusal counted by reason, tokens copied off the wire
// useless without their client key; and the resume token, which never travels in clear.

import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { SpectatorClient } from '../../src/client/spectator.ts';
import { type ConnectToken, issueConnectToken } from '../../src/net/connect-token.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE_RESPONSE,
  REFUSE_TOKEN_EXPIRED,
  REFUSE_TOKEN_INVALID,
  readHandshakePacket,
} from '../../src/net/handshake.ts';
import type { DatagramEndpoint } from '../../src/net/transport.ts';

const KEY = new Uint8Array(32).fill(42);
const EPOCH = 1_767_225_600_000;

/** A match whose server takes only tokens for 'eu-1', its wall clock EPOCH plus the match time. */
function tokenMatch(seed: number) {
  let match: Match<unknown, unknown> | null = null;
  const m = new Match(arenaGame, seed, {
    connectTokens: { key: KEY, server: 'eu-1', now: () => EPOCH + (match?.nowMs ?? 0) },
  }) as unknown as Match<unknown, unknown>;
  match = m;
  return m;
}

function token(
  userId: string,
  overrides: Partial<Parameters<typeof issueConnectToken>[0]> = {},
): ConnectToken {
  return issueConnectToken({ key: KEY, userId, servers: ['eu-1'], nowMs: EPOCH, ...overrides });
}

/** An endpoint that also hands a copy of every datagram it sends and receives to `seen`. */
function observed(seen: { from: string; data: Uint8Array }[]) {
  return (e: DatagramEndpoint): DatagramEndpoint => ({
    address: e.address,
    send: (to, data) => {
      seen.push({ from: e.address, data: data.slice() });
      e.send(to, data);
    },
    poll: (nowMs, onPacket) =>
      e.poll(nowMs, (from, data) => {
        seen.push({ from, data: data.slice() });
        onPacket(from, data);
      }),
    close: () => e.close(),
  });
}

describe('a server that takes connect tokens', () => {
  it('admits a client with a valid token and names its user; refuses the rest by reason', () => {
    const seed = 51;
    const match = tokenMatch(seed);
    const stats = match.server.stats;
    const alice = match.addClient({
      config: { connectToken: token('alice', { userData: new Uint8Array([7]) }) },
    });
    const none = match.addClient({});
    const forged = match.addClient({
      config: {
        connectToken: issueConnectToken({
          key: new Uint8Array(32).fill(1),
          userId: 'mallory',
          servers: ['eu-1'],
          nowMs: EPOCH,
        }),
      },
    });
    const tamperedToken = token('bob');
    tamperedToken.token[tamperedToken.token.length - 20] ^= 4;
    const tampered = match.addClient({ config: { connectToken: tamperedToken } });
    const wrongServer = match.addClient({ config: { connectToken: token('carol', { servers: ['us-2'] }) } });
    const expired = match.addClient({ config: { connectToken: token('dave', { nowMs: EPOCH - 60_000 }) } });
    match.run(1500);
    const where = `seed ${seed}`;
    expect(alice.client.state, where).toBe('connected');
    const server = match.server.clients[alice.client.slot];
    expect(server?.userId, where).toBe('alice');
    expect([...(server?.userData ?? [])], where).toEqual([7]);
    for (const [entry, reason, counted] of [
      [none, REFUSE_TOKEN_INVALID, 'token missing'],
      [forged, REFUSE_TOKEN_INVALID, 'token forged'],
      [tampered, REFUSE_TOKEN_INVALID, 'token forged'],
      [wrongServer, REFUSE_TOKEN_INVALID, 'token wrong server'],
      [expired, REFUSE_TOKEN_EXPIRED, 'token expired'],
    ] as const) {
      expect(entry.client.state, `${where}: ${counted}`).toBe('refused');
      expect(entry.client.endReason, `${where}: ${counted}`).toBe(reason);
      expect(stats.rejected[counted], `${where}: ${counted}`).toBeGreaterThanOrEqual(1);
    }
    expect(stats.connects, where).toBe(1);
    match.close();
  });

  it('a token used from another address is refused as replayed; one expiring while it waits is refused as expired', () => {
    const seed = 52;
    const match = tokenMatch(seed);
    const t = token('alice', { lifetimeMs: 10_000 });
    const first = match.addClient({ config: { connectToken: t } });
    match.run(1000);
    expect(first.client.state, `seed ${seed}`).toBe('connected');
    const again = match.addClient({ config: { connectToken: t } });
    match.run(1000);
    expect(again.client.state, `seed ${seed}`).toBe('refused');
    expect(match.server.stats.rejected['token replayed'], `seed ${seed}`).toBeGreaterThanOrEqual(1);
    match.run(9000);
    const late = match.addClient({ config: { connectToken: t } });
    match.run(1000);
    expect(late.client.state, `seed ${seed}`).toBe('refused');
    expect(late.client.endReason, `seed ${seed}`).toBe(REFUSE_TOKEN_EXPIRED);
    match.close();
  });

  it('a token copied off the wire is useless without its client key, and is not burnt by the attempt', () => {
    const seed = 53;
    const match = tokenMatch(seed);
    const t = token('alice');
    // The observer saw the token bytes in a challenge response; it cannot know the client key.
    const stolen: ConnectToken = { ...t, clientKey: new Uint8Array(32).fill(9) };
    const thief = match.addClient({ config: { connectToken: stolen, connectTimeoutMs: 1500 } });
    match.run(2000);
    expect(thief.client.state, `seed ${seed}`).toBe('timed out');
    expect(match.server.stats.rejected['bad seal'], `seed ${seed}`).toBeGreaterThanOrEqual(1);
    expect(match.server.stats.connects, `seed ${seed}`).toBe(0);
    const owner = match.addClient({ config: { connectToken: t } });
    match.run(1000);
    expect(owner.client.state, `seed ${seed}`).toBe('connected');
    match.close();
  });

  it('a refused challenge response replayed costs one token open per address every 100 ms', () => {
    const seed = 58;
    const msg = `seed ${seed}`;
    const match = tokenMatch(seed);
    let response: Uint8Array | null = null;
    let inner: DatagramEndpoint | null = null;
    const client = match.addClient({
      config: { connectToken: token('mallory', { servers: ['us-1'] }) },
      wrapEndpoint: (e) => {
        inner = e;
        return {
          address: e.address,
          send: (to, data) => {
            if (data[0] === PACKET_CHALLENGE_RESPONSE) response ??= data.slice();
            e.send(to, data);
          },
          poll: (nowMs, onPacket) => e.poll(nowMs, onPacket),
          close: () => e.close(),
        };
      },
    });
    match.run(500);
    expect(client.client.state, msg).toBe('refused');
    const rejected = match.server.stats.rejected;
    const opened = rejected['token wrong server'] ?? 0;
    expect(opened, msg).toBeGreaterThanOrEqual(1);
    if (response === null || inner === null) throw new Error(`${msg}: no challenge response`);
    // 5,000 copies from the client's own address in one instant: its token is opened once more at most.
    for (let i = 0; i < 5000; i++) (inner as DatagramEndpoint).send('server', response);
    match.run(50);
    expect(
      (rejected['token wrong server'] ?? 0) - opened,
      `${msg}: ${JSON.stringify(rejected)}`,
    ).toBeLessThanOrEqual(1);
    expect(rejected['key exchange rate'] ?? 0, msg).toBeGreaterThanOrEqual(4999);
    match.close();
  });

  it('a server without tokens refuses a client that brings one, and takes anyone else', () => {
    const seed = 54;
    const match = new Match(arenaGame, seed);
    const withToken = match.addClient({ config: { connectToken: token('alice') } });
    const plain = match.addClient({});
    match.run(1000);
    expect(withToken.client.state, `seed ${seed}`).toBe('refused');
    expect(match.server.stats.rejected['token unexpected'], `seed ${seed}`).toBeGreaterThanOrEqual(1);
    expect(plain.client.state, `seed ${seed}`).toBe('connected');
    expect(match.server.clients[plain.client.slot]?.userId, `seed ${seed}`).toBeNull();
    match.close();
  });

  it('a resume token brings a player back only as the same user', () => {
    const seed = 55;
    const match = tokenMatch(seed);
    (match.server.config as { reconnectGraceMs: number }).reconnectGraceMs = 5000;
    const alice = match.addClient({ config: { connectToken: token('alice') } });
    match.run(1000);
    const slot = alice.client.slot;
    const resume = { ...alice.client.resumeToken };
    match.drop(alice);
    match.run(300);
    // Bob holds alice's resume token (say she gave it away), with his own connect token.
    const bob = match.addClient({ config: { connectToken: token('bob') }, resumeToken: resume });
    match.run(1000);
    expect(bob.client.state, `seed ${seed}`).toBe('connected');
    expect(bob.client.slot, `seed ${seed}`).not.toBe(slot);
    match.close();
  });
});

describe('a spectator and connect tokens', () => {
  it('watches with a valid token; without one it is refused', () => {
    const seed = 57;
    let match: Match<unknown, unknown> | null = null;
    const m = new Match(arenaGame, seed, {
      spectators: { maxSpectators: 2, delaysMs: [1000] },
      connectTokens: { key: KEY, server: 'eu-1', now: () => EPOCH + (match?.nowMs ?? 0) },
    }) as unknown as Match<unknown, unknown>;
    match = m;
    const watcher = new SpectatorClient(arenaGame, m.network.createEndpoint('watcher'), 'server', {
      seed,
      connectToken: token('viewer'),
    });
    const stranger = new SpectatorClient(arenaGame, m.network.createEndpoint('stranger'), 'server', {
      seed: seed + 1,
    });
    for (let t = 0; t < 1500; t += 10) {
      m.run(10);
      watcher.update(m.nowMs);
      stranger.update(m.nowMs);
    }
    expect(watcher.state, `seed ${seed}`).toBe('connected');
    expect(stranger.state, `seed ${seed}`).toBe('refused');
    expect(m.server.stats.rejected['token missing'], `seed ${seed}`).toBeGreaterThanOrEqual(1);
    m.close();
  });
});

describe('the resume token', () => {
  it('never travels in clear, and an observer of a connection cannot take its slot', () => {
    const seed = 56;
    const match = new Match(arenaGame, seed, { reconnectGraceMs: 5000 });
    const seen: { from: string; data: Uint8Array }[] = [];
    const victim = match.addClient({ wrapEndpoint: observed(seen) });
    match.run(1000);
    expect(victim.client.state, `seed ${seed}`).toBe('connected');
    const slot = victim.client.slot;
    const { hi, lo } = victim.client.resumeToken;
    expect(hi | lo, `seed ${seed}`).not.toBe(0);
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setUint32(0, hi, true);
    new DataView(bytes.buffer).setUint32(4, lo, true);
    for (const { data } of seen) expect(indexOf(data, bytes), `seed ${seed}`).toBe(-1);

    // What the observer can do: read Accepted's resume field as it comes, and send the victim's
    // challenge response again from its own address.
    const p = createHandshakePacket();
    const stream = createHandshakeStream();
    let accepted: { hi: number; lo: number } | null = null;
    let response: Uint8Array | null = null;
    for (const { data } of seen) {
      if (readHandshakePacket(stream, match.server.config.protocolId, data, p) !== '') continue;
      if (p.type === PACKET_ACCEPTED) accepted = { hi: p.resumeHi, lo: p.resumeLo };
      if (p.type === PACKET_CHALLENGE_RESPONSE) response = data;
    }
    if (accepted === null || response === null) throw new Error(`seed ${seed}: no handshake seen`);
    const thief = match.addClient({ resumeToken: accepted });
    const replayer = match.network.createEndpoint('replayer');
    replayer.send('server', response);
    const badCookies = match.server.stats.rejected['bad cookie'] ?? 0;
    match.run(1000);
    expect(thief.client.state, `seed ${seed}`).toBe('connected');
    expect(thief.client.slot, `seed ${seed}`).not.toBe(slot);
    expect(match.server.stats.rejected['bad cookie'], `seed ${seed}`).toBe(badCookies + 1);
    expect(victim.client.state, `seed ${seed}`).toBe('connected');
    expect(victim.client.slot, `seed ${seed}`).toBe(slot);
    expect(match.server.clients[slot]?.address, `seed ${seed}`).toBe(victim.endpoint.address);
    match.close();
  });
});

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
