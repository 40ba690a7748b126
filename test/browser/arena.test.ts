// The arena's browser game end to end: the client built with Vite, served by an ArenaHost with a
// bot standing in front of each player, played by Debian's Chromium over WebRTC and over the
// WebSocket fallback (WebRTC blocked in the browser). Assertions are on real state (the page's
// report, the server's); screenshots go to out/test/arena/ (git-ignored).

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArenaHost } from '../../games/arena/server/host.ts';
import { closeWebRtc } from '../../src/node.ts';
import { BotSwarm } from '../../tools/play/bots.ts';
import { buildClient } from '../../tools/play/build.ts';
import { launchChromium } from '../../tools/play/chromium.ts';
import { until } from '../net/transports/loopback.ts';
import { report, waitFor } from './arena-report.ts';

/**
 * Run in the page before its scripts: WebRTC may only use relays (as behind a firewall that
 * blocks UDP) and there are none, so no data channel can open and the page must fall back.
 */
function blockWebRtc(): void {
  const Original = window.RTCPeerConnection;
  window.RTCPeerConnection = function (this: unknown, config?: RTCConfiguration) {
    return new Original({ ...config, iceTransportPolicy: 'relay' });
  } as unknown as typeof RTCPeerConnection;
  window.RTCPeerConnection.prototype = Original.prototype;
}

const OUT = fileURLToPath(new URL('../../out/test/arena/', import.meta.url));

let host: ArenaHost;
let bots: BotSwarm;
let strafer: BotSwarm;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  await mkdir(OUT, { recursive: true });
  const staticDir = await buildClient(join(OUT, 'client'));
  let swarm: BotSwarm | null = null;
  let moving: BotSwarm | null = null;
  host = await ArenaHost.start({
    port: 0,
    staticDir,
    respawnMs: 300,
    cookieSecret: new Uint8Array(32).fill(3),
    webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    placeInFront: (address) =>
      swarm?.addresses.has(address) === true || moving?.addresses.has(address) === true,
  });
  // A target standing still 200 units ahead of each player who joins, and one strafing behind it.
  swarm = await BotSwarm.start(host.port, { count: 1, kind: 'still' });
  bots = swarm;
  expect(await until(() => bots.connected === 1, 5000)).toBe(true);
  moving = await BotSwarm.start(host.port, { count: 1, kind: 'strafe', seed: 2 });
  strafer = moving;
  expect(await until(() => strafer.connected === 1, 5000)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await bots?.close();
  await strafer?.close();
  await host?.close();
  closeWebRtc();
});

async function open(
  blockRtc: boolean,
  query: string,
): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
  const { context, close } = await launchChromium({
    prefix: 'backstep-arena-',
    viewport: { width: 960, height: 540 },
  });
  cleanups.push(close);
  const page = await context.newPage();
  if (blockRtc) await page.addInitScript(blockWebRtc);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (m) => {
    // The browser's own log of the refused socket the unreachable-server case opens on purpose.
    if (m.type() === 'error' && !m.text().startsWith("WebSocket connection to 'ws://127.0.0.1:9/")) {
      errors.push(m.text());
    }
  });
  await page.goto(`http://127.0.0.1:${host.port}/?${query}`);
  return { page, errors, close };
}

/** Presses `key` for `ms`. */
async function hold(page: Page, key: string, ms: number): Promise<void> {
  await page.keyboard.down(key);
  await page.waitForTimeout(ms);
  await page.keyboard.up(key);
}

/** One trigger pull (the first click on the view locks the pointer). */
async function fire(page: Page): Promise<void> {
  await page.mouse.move(480, 270);
  await page.mouse.down();
  await page.waitForTimeout(50);
  await page.mouse.up();
}

/** The page moves, hits the bot in front of it on the server, and shows net_graph. */
async function playAndShoot(page: Page, label: string, msg: () => string): Promise<void> {
  const spawned = await waitFor(page, 'spawn', (r) => r.spawned && r.phase === 'playing');
  // Back off (the bot stands ahead): the predicted player moves at once, the server agrees.
  await hold(page, 'KeyS', 500);
  const moved = await waitFor(
    page,
    'the move',
    (r) => Math.hypot(r.origin.x - spawned.origin.x, r.origin.y - spawned.origin.y) > 60,
  );
  expect(
    Math.hypot(moved.origin.x - spawned.origin.x, moved.origin.y - spawned.origin.y),
    msg(),
  ).toBeGreaterThan(60);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(OUT, `${label}-normal.png`) });
  // Lock the pointer, then shoot the bot standing still in front.
  await page.click('#view');
  const hitsBefore = host.stats.hits;
  for (let i = 0; i < 4 && host.stats.hits === hitsBefore; i++) {
    await fire(page);
    await page.waitForTimeout(400);
  }
  expect(host.stats.hits, `server hits after the shots; ${msg()}`).toBeGreaterThan(hitsBefore);
  // net_graph: a ping and bytes both ways.
  await page.keyboard.press('KeyG');
  const graph = await waitFor(
    page,
    'net_graph figures',
    (r) =>
      r.netGraphVisible &&
      r.netGraphLines.length > 0 &&
      (r.netGraph?.pingMs ?? 0) > 0 &&
      (r.netGraph?.inBytesPerSecond ?? 0) > 0,
  );
  expect(graph.netGraph?.outBytesPerSecond, msg()).toBeGreaterThan(0);
  expect(graph.netGraphLines.join('\n'), msg()).toMatch(/ping \d+ ms/);
  await page.screenshot({ path: join(OUT, `${label}-net-graph.png`) });
}

describe('the arena in Chromium', () => {
  it('plays over WebRTC: moves, hits on the server, net_graph, the overlay after a shot, 200 ms of latency from the panel', async () => {
    const { page, errors, close } = await open(false, 'transport=auto&rtcTimeoutMs=10000');
    const msg = () => `page errors ${JSON.stringify(errors)}; host ${JSON.stringify(host.stats)}`;
    await playAndShoot(page, 'webrtc', msg);
    const r = await report(page);
    expect(r.transport, msg()).toBe('webrtc');
    // The overlay turned on after the shot: both sets of boxes, one upon the other (exact mode).
    await page.keyboard.press('KeyO');
    const shown = await waitFor(
      page,
      'overlay boxes',
      (x) => x.overlay.clientBoxes > 0 && x.overlay.serverBoxes > 0,
    );
    expect(shown.overlay.lastMode, msg()).toBe('exact');
    expect(shown.overlay.lastMatched, msg()).toBeGreaterThan(0);
    expect(shown.overlay.lastOffset, msg()).toBeLessThan(1);
    await page.screenshot({ path: join(OUT, 'webrtc-overlay.png') });
    // The panel: 200 ms more on the down link raises the round trip by about that much.
    // The link's own round trip: the lowest of a few reads (a read taken on a slow frame, 13 fps
    // on a loaded machine, carries the frame's wait and once made the wanted rise unreachable).
    let before = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 6; i++) {
      before = Math.min(before, (await report(page)).netGraph?.pingMs ?? Number.POSITIVE_INFINITY);
      await page.waitForTimeout(100);
    }
    if (!Number.isFinite(before)) before = 0;
    await page.keyboard.press('KeyP');
    await page.fill('#set-downLatencyMs', '200');
    await page.dispatchEvent('#set-downLatencyMs', 'change');
    const slow = await waitFor(
      page,
      'a higher ping',
      (x) => (x.netGraph?.pingMs ?? 0) > before + 170,
      15_000,
    );
    expect(slow.netGraph?.pingMs ?? 0, msg()).toBeLessThan(before + 300);
    await page.screenshot({ path: join(OUT, 'webrtc-panel.png') });
    // Lag compensation off: the server tests the strafing target where it is now, apart from where
    // this client drew it; exact mode put them on each other.
    await page.selectOption('#set-lagCompensation', 'off');
    await waitFor(page, 'the mode applied', (x) => x.serverStats?.lagCompensation === 'off');
    await page.click('#view');
    let apart = await report(page);
    for (let i = 0; i < 8 && !(apart.overlay.lastMode === 'off' && apart.overlay.lastOffset > 5); i++) {
      await fire(page);
      await page.waitForTimeout(700);
      apart = await report(page);
    }
    await page.screenshot({ path: join(OUT, 'webrtc-overlay-off.png') });
    const where = host.server.clients
      .filter((c) => c !== null)
      .map(
        (c) =>
          `${c.address} ${c.state.originX.toFixed(0)},${c.state.originY.toFixed(0)} v ${c.state.velocityY.toFixed(0)} cmds ${c.lastCommand}`,
      );
    expect(apart.overlay.lastMode, `${where.join('; ')} ${JSON.stringify(apart.overlay)}; ${msg()}`).toBe(
      'off',
    );
    expect(
      apart.overlay.lastOffset,
      `${where.join('; ')} ${JSON.stringify(apart.overlay)}; ${msg()}`,
    ).toBeGreaterThan(5);
    expect(errors, msg()).toEqual([]);
    await close();
  });

  it('falls back to WebSocket by itself when WebRTC cannot connect, and plays', async () => {
    const { page, errors, close } = await open(true, 'transport=auto&rtcTimeoutMs=2500');
    const msg = () => `page errors ${JSON.stringify(errors)}; host ${JSON.stringify(host.stats)}`;
    await playAndShoot(page, 'websocket', msg);
    const r = await report(page);
    expect(r.transport, msg()).toBe('websocket');
    expect(r.fallbackReason, msg()).toMatch(/WebRTC/);
    expect(errors, msg()).toEqual([]);
    await close();
  });

  it('says why when the server refuses (another protocol version), cannot be reached or goes away, with a retry', async () => {
    const { page, errors } = await open(false, 'transport=websocket&protocolVersion=9999');
    const refused = await waitFor(page, 'the refusal', (r) => r.phase === 'failed');
    expect(refused.failure).toMatch(/refused.*protocol version/);
    expect(await page.isVisible('#retry')).toBe(true);
    expect(await page.textContent('#status-text')).toMatch(/protocol version/);
    // A server that cannot be reached at all.
    await page.goto(`http://127.0.0.1:${host.port}/?transport=websocket&server=127.0.0.1:9`);
    const unreachable = await waitFor(page, 'the failure', (r) => r.phase === 'failed');
    expect(unreachable.failure).toMatch(/Could not reach the server at 127\.0\.0\.1:9/);
    expect(await page.isVisible('#retry')).toBe(true);
    // A server that goes away.
    const other = await ArenaHost.start({ port: 0, staticDir: host.options.staticDir });
    cleanups.push(() => other.close());
    await page.goto(`http://127.0.0.1:${other.port}/?transport=websocket`);
    await waitFor(page, 'spawn', (r) => r.spawned);
    await other.close();
    const gone = await waitFor(page, 'the loss', (r) => r.phase === 'failed');
    expect(gone.failure).toMatch(/server (closed the connection|went away)/);
    expect(await page.isVisible('#retry')).toBe(true);
    expect(errors).toEqual([]);
  });
});
