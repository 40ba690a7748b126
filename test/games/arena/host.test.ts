// The playable arena host: settings messages from a real client over loopback UDP are applied
// to that client alone, hostile ones are counted and ignored (and a flood of them ends the
// connection); the static file server never leaves its folder; the messages' decoders never throw.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArenaHost } from '../../../games/arena/server/host.ts';
import { arenaGame } from '../../../games/arena/shared/game.ts';
import {
  createClientSettings,
  createServerStatsMessage,
  createShotReport,
  MESSAGE_SERVER_STATS,
  MESSAGE_SETTINGS,
  serializeClientSettings,
  serializeKill,
  serializeMessageType,
  serializeServerStats,
  serializeShotReport,
} from '../../../games/arena/shared/messages.ts';
import { createInputSample, GameClient } from '../../../src/client/client.ts';
import { connectNode } from '../../../src/node.ts';
import { BitStream } from '../../../src/protocol/bitstream.ts';
import { Random } from '../../../src/sim/random.ts';
import { closeAll, onCleanup, until } from '../../net/transports/loopback.ts';

afterEach(closeAll);

async function setup() {
  const dir = await mkdtemp(join(tmpdir(), 'backstep-host-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>arena</title>');
  const host = await ArenaHost.start({ port: 0, staticDir: dir, cookieSecret: new Uint8Array(32).fill(1) });
  onCleanup(() => host.close());
  const endpoint = await connectNode(`udp://127.0.0.1:${host.port}`);
  onCleanup(() => endpoint.close());
  const client = new GameClient(arenaGame, endpoint, endpoint.serverAddress, { seed: 5 });
  const input = createInputSample();
  const timer = setInterval(() => client.update(performance.now(), input), 8);
  onCleanup(() => clearInterval(timer));
  client.connect(performance.now());
  expect(await until(() => client.state === 'connected' && host.server.clientCount === 1, 5000)).toBe(true);
  return { host, client };
}

function settingsMessage(change: (s: ReturnType<typeof createClientSettings>) => void): Uint8Array {
  const m = createClientSettings();
  change(m);
  const s = new BitStream(1200).beginWrite();
  serializeMessageType(s, MESSAGE_SETTINGS);
  serializeClientSettings(s, m);
  return s.bytes.slice();
}

describe('ArenaHost', () => {
  it('applies a client settings message to that client: rates, lag compensation mode, down link', async () => {
    const { host, client } = await setup();
    const channel = client.channel;
    if (channel === null) throw new Error('no channel');
    channel.sendReliable(
      settingsMessage((m) => {
        m.updateRate = 20;
        m.rateBytesPerSecond = 25_000;
        m.lagCompensation = 'estimate';
        m.downLatencyMs = 150;
        m.downLoss = 0.1;
      }),
    );
    expect(await until(() => host.stats.settingsApplied === 1, 3000), JSON.stringify(host.stats)).toBe(true);
    const sc = host.server.clients.find((c) => c !== null);
    if (sc == null) throw new Error('no server client');
    expect(sc.pacing.updateRate).toBe(20);
    expect(sc.pacing.rateBytesPerSecond).toBe(25_000);
    expect(sc.lagCompensationMode).toBe('estimate');
    expect(host.shaped.shapeOf(sc.address)).toEqual({ latencyMs: 150, jitterMs: 0, loss: 0.1, duplicate: 0 });
    // The server answers with its stats (what it applies) once the client has spoken.
    const stats = createServerStatsMessage();
    const reader = new BitStream(1200);
    let answered = false;
    await until(() => {
      for (let m = channel.receiveReliable(); m !== null && !answered; m = channel.receiveReliable()) {
        const r = reader.beginRead(m);
        answered = serializeMessageType(r, 0) === MESSAGE_SERVER_STATS && serializeServerStats(r, stats);
      }
      return answered;
    }, 3000);
    expect(answered, JSON.stringify(host.stats)).toBe(true);
    expect(stats.updateRate).toBe(20);
    expect(stats.lagCompensation).toBe('estimate');
  });

  it('counts and ignores bad settings, and drops a client that keeps sending them', async () => {
    const { host, client } = await setup();
    const channel = client.channel;
    if (channel === null) throw new Error('no channel');
    channel.sendReliable(new Uint8Array([MESSAGE_SETTINGS << 4]));
    channel.sendReliable(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
    expect(await until(() => host.stats.settingsRefused === 2, 3000), JSON.stringify(host.stats)).toBe(true);
    expect(host.stats.settingsApplied).toBe(0);
    const sc = host.server.clients.find((c) => c !== null);
    expect(sc?.lagCompensationMode).toBeNull();
    for (let i = 0; i < 20; i++) channel.sendReliable(new Uint8Array([0xee, i]));
    expect(await until(() => host.server.clientCount === 0, 5000), JSON.stringify(host.stats)).toBe(true);
  });

  it('applies a burst of settings once a tick (the newest wins), and refuses settings with bytes after them', async () => {
    const { host, client } = await setup();
    const channel = client.channel;
    if (channel === null) throw new Error('no channel');
    // 200 messages sent together (a reliable window's worth arrives within a tick or two).
    for (let i = 0; i < 200; i++)
      channel.sendReliable(settingsMessage((m) => (m.updateRate = 10 + (i % 20))));
    channel.sendReliable(settingsMessage((m) => (m.updateRate = 16)));
    expect(
      await until(() => host.stats.settingsApplied + host.stats.settingsReplaced === 201, 5000),
      JSON.stringify(host.stats),
    ).toBe(true);
    expect(
      await until(() => host.server.clients.find((c) => c !== null)?.pacing.updateRate === 16, 3000),
    ).toBe(true);
    expect(host.stats.settingsApplied, JSON.stringify(host.stats)).toBeLessThan(20);
    const withMore = settingsMessage((m) => (m.updateRate = 30));
    const padded = new Uint8Array(withMore.length + 4);
    padded.set(withMore);
    channel.sendReliable(padded);
    expect(await until(() => host.stats.settingsRefused === 1, 3000), JSON.stringify(host.stats)).toBe(true);
    expect(host.server.clients.find((c) => c !== null)?.pacing.updateRate).toBe(16);
    // Good settings, then settings cut short in the same packet (the same tick): the cut one's
    // first fields read before it failed leave the good ones as they were.
    channel.sendReliable(settingsMessage((m) => (m.updateRate = 12)));
    channel.sendReliable(withMore.subarray(0, withMore.length - 2));
    expect(await until(() => host.stats.settingsRefused === 2, 3000), JSON.stringify(host.stats)).toBe(true);
    expect(
      await until(() => host.server.clients.find((c) => c !== null)?.pacing.updateRate === 12, 3000),
    ).toBe(true);
  });

  it('serves only files inside its folder', async () => {
    const { host } = await setup();
    const get = (path: string) => fetch(`http://127.0.0.1:${host.port}${path}`).then((r) => r.status);
    expect(await get('/')).toBe(200);
    expect(await get('/index.html')).toBe(200);
    expect(await get('/../package.json')).toBe(404);
    expect(await get('/%2e%2e/%2e%2e/package.json')).toBe(404);
    expect(await get('/%E0%A4%A')).toBe(400);
    expect(await get('/missing.js')).toBe(404);
  });
});

describe('arena messages', () => {
  it('never throw on random bytes and fail on truncated ones', () => {
    const seed = 77;
    const rng = new Random(seed);
    const s = new BitStream(1200);
    const settings = createClientSettings();
    const stats = createServerStatsMessage();
    const report = createShotReport();
    const kill = { killer: 0, victim: 0, weapon: 0 };
    for (let i = 0; i < 20_000; i++) {
      const data = new Uint8Array(rng.int(0, 40));
      for (let k = 0; k < data.length; k++) data[k] = rng.int(0, 255);
      expect(() => {
        serializeClientSettings(s.beginRead(data), settings);
        serializeServerStats(s.beginRead(data), stats);
        serializeShotReport(s.beginRead(data), report);
        serializeKill(s.beginRead(data), kill);
      }, `seed ${seed}`).not.toThrow();
    }
    expect(serializeClientSettings(s.beginRead(new Uint8Array(2)), settings)).toBe(false);
  });
});
