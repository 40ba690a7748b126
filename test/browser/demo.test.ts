// Demo playback in the browser game end to end: a short bot match recorded on simulated time (with
// its killcams), the arena's client built with Vite and served by an ArenaHost beside the file,
// played by Debian's Chromium: the timeline advances, the lag compensation overlay draws the
// recorded shots, the camera follows a player, a seek decodes from a keyframe, a killcam plays,
// and corrupt and truncated files are refused on the page with their problem named.
// Screenshots go to out/test/demo/ (git-ignored).

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Match } from 'backstep/testing';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArenaHost } from '../../games/arena/server/host.ts';
import { arenaRules } from '../../games/arena/server/rules.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { aimBot } from '../../games/arena/testing/shots.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { closeWebRtc } from '../../src/node.ts';
import { combineHooks } from '../../src/server/hooks.ts';
import { KillcamRecorder } from '../../src/server/killcam.ts';
import { DemoRecorder, type DemoRecorderStats } from '../../src/server/recorder.ts';
import { BotSwarm } from '../../tools/play/bots.ts';
import { buildClient } from '../../tools/play/build.ts';
import { launchChromium } from '../../tools/play/chromium.ts';
import { report, waitFor } from './arena-report.ts';

const OUT = fileURLToPath(new URL('../../out/test/demo/', import.meta.url));
const SEED = 23;
const MATCH_MS = 12_000;

let host: ArenaHost;
let demo: Uint8Array;
let stats: DemoRecorderStats;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
/** The live test's bot: the host puts it in front of the page's player when the page joins. */
let killer: BotSwarm | null = null;

/** A 12 s match of six aim bots over a lossy link, recorded with a killcam for each kill. */
function recordMatch(): Uint8Array {
  const recorder = new DemoRecorder(arenaGame);
  const killcams = new KillcamRecorder(arenaGame);
  const rules = arenaRules({
    respawnMs: 800,
    onKill: (_server, killer, victim, weapon) => {
      recorder.kill(killer, victim, weapon < 0 ? 255 : weapon);
      const cam = killer === null ? null : killcams.capture(killer, victim, 2000);
      if (cam !== null) recorder.killcam(cam);
    },
  });
  const match = new Match(arenaGame, SEED, {}, combineHooks(rules, recorder.hooks, killcams.hooks));
  const profile = parseProfile({ name: 'lossy', latencyMs: 40, jitterMs: 8, loss: 0.05, duplicate: 0 });
  for (let i = 0; i < 6; i++) {
    match.addClient({ profile, drive: aimBot(SEED * 31 + i, { aimErrorUnits: 16 }), frameJitterMs: 3 });
  }
  const parts: Uint8Array[] = [];
  recorder.start(match.server, (b) => parts.push(b.slice()));
  match.run(MATCH_MS);
  recorder.stop();
  match.close();
  stats = recorder.stats;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

beforeAll(async () => {
  await mkdir(OUT, { recursive: true });
  demo = recordMatch();
  const staticDir = await buildClient(join(OUT, 'client'));
  await writeFile(join(staticDir, 'match.demo'), demo);
  // One byte changed inside a chunk (its checksum no longer matches), and a file cut short.
  const corrupt = demo.slice();
  corrupt[Math.floor(demo.length / 2)] ^= 0x40;
  await writeFile(join(staticDir, 'corrupt.demo'), corrupt);
  await writeFile(join(OUT, 'truncated.demo'), demo.subarray(0, Math.floor(demo.length * 0.7)));
  host = await ArenaHost.start({
    port: 0,
    staticDir,
    cookieSecret: new Uint8Array(32).fill(5),
    respawnMs: 4000,
    placeInFront: (address) => killer?.addresses.has(address) === true,
  });
}, 90_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await host?.close();
  closeWebRtc();
});

async function open(query: string): Promise<{ page: Page; errors: string[] }> {
  const { context, close } = await launchChromium({
    prefix: 'backstep-demo-',
    viewport: { width: 960, height: 540 },
  });
  cleanups.push(close);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(`http://127.0.0.1:${host.port}/?${query}`);
  return { page, errors };
}

async function seek(page: Page, ms: number): Promise<void> {
  await page.$eval(
    '#demo-timeline',
    (el, value) => {
      const input = el as HTMLInputElement;
      input.value = String(value);
      input.dispatchEvent(new Event('input'));
    },
    ms,
  );
}

describe('demo playback in Chromium', () => {
  it('plays a recorded match: the timeline advances, the overlay draws each shot, follow, seek and the killcam', async () => {
    expect(stats.shots, `seed ${SEED}`).toBeGreaterThan(10);
    expect(stats.killcams, `seed ${SEED}`).toBeGreaterThan(0);
    const { page, errors } = await open('demo=match.demo&overlay=1');
    const msg = () => `seed ${SEED}; page errors ${JSON.stringify(errors)}`;
    const opened = await waitFor(
      page,
      'the demo to open',
      (r) => r.demo.phase !== 'loading' && r.demo.phase !== 'none',
    );
    expect(opened.demo.phase, `${opened.demo.error}; ${msg()}`).toBe('playing');
    expect(opened.demo.bytes, msg()).toBe(demo.length);
    expect(opened.demo.keyframes, msg()).toBeGreaterThan(1);
    expect(opened.demo.durationMs, msg()).toBeGreaterThan(MATCH_MS - 1000);
    expect(await page.isVisible('#demo-bar'), msg()).toBe(true);

    // The timeline advances at twice the speed, and the overlay draws the recorded shots.
    await page.selectOption('#demo-speed', '2');
    const first = await report(page);
    const shown = await waitFor(
      page,
      'the overlay',
      (r) =>
        r.demo.renderTick > first.demo.renderTick + 32 &&
        r.overlay.serverBoxes > 0 &&
        r.overlay.clientBoxes > 0,
    );
    expect(shown.demo.shots, msg()).toBeGreaterThan(0);
    expect(shown.demo.drawn, msg()).toBeGreaterThan(0);
    expect(shown.demo.lastVerdict, msg()).toMatch(
      /^player \d+ fired \((exact|estimate|off).*\): (hit|missed)/,
    );
    expect(Number(await page.inputValue('#demo-timeline')), msg()).toBeGreaterThan(0);
    // Paused, the boxes stay and time stands still.
    await page.click('#demo-play');
    const paused = await waitFor(page, 'the pause', (r) => !r.demo.playing);
    await page.waitForTimeout(300);
    expect((await report(page)).demo.renderTick, msg()).toBe(paused.demo.renderTick);
    expect(paused.overlay.serverBoxes, msg()).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUT, 'overlay.png') });

    // From a player's eyes.
    const slot = paused.demo.slots[0];
    await page.selectOption('#demo-camera', String(slot));
    await page.click('#demo-play');
    const followed = await waitFor(
      page,
      'the follow camera',
      (r) => r.demo.camera === 'follow' && r.demo.playing,
    );
    expect(followed.demo.followSlot, msg()).toBe(slot);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(OUT, 'follow.png') });

    // Seeking decodes from the keyframe at or before the tick, not from the start.
    const keyframeTicks = opened.demo.keyframeInterval;
    expect(keyframeTicks, msg()).toBeGreaterThan(0);
    await seek(page, opened.demo.durationMs - 1500);
    const late = await waitFor(page, 'the seek', (r) => r.demo.seeks === 1);
    expect(late.demo.timeMs, msg()).toBeGreaterThanOrEqual(opened.demo.durationMs - 1500);
    expect(late.demo.lastSeekDecoded, msg()).toBeGreaterThan(0);
    expect(late.demo.lastSeekDecoded, msg()).toBeLessThanOrEqual(keyframeTicks + 1);
    await seek(page, 0);
    const back = await waitFor(page, 'the seek back', (r) => r.demo.seeks === 2);
    expect(back.demo.lastSeekDecoded, msg()).toBe(1);

    // The newest killcam before the end: the killer's commands from its eyes.
    await seek(page, opened.demo.durationMs);
    await waitFor(page, 'the end', (r) => r.demo.seeks === 3);
    // At a quarter speed the 2 s killcam plays for 8 s: a loaded machine's slow polls still see it.
    await page.selectOption('#demo-speed', '0.25');
    await waitFor(page, 'a quarter speed', (r) => r.demo.speed === 0.25);
    await page.keyboard.press('KeyK');
    const cam = await waitFor(page, 'the killcam', (r) => (r.demo.killcam?.frame ?? 0) > 10);
    expect(cam.demo.camera, msg()).toBe('killcam');
    expect(cam.demo.killcam?.drawn, msg()).toBeGreaterThan(0);
    expect(cam.demo.killcam?.killer, msg()).not.toBe(cam.demo.killcam?.victim);
    await page.screenshot({ path: join(OUT, 'killcam.png') });
    await page.keyboard.press('KeyK');
    const stopped = await waitFor(page, 'the end of the killcam', (r) => r.demo.killcam === null);
    expect(stopped.demo.camera, msg()).toBe('follow');
    expect(errors, msg()).toEqual([]);
  });

  it('refuses a corrupt or truncated file on the page, naming the problem, then plays a dropped file', async () => {
    const { page, errors } = await open('demo=corrupt.demo');
    const corrupt = await waitFor(page, 'the refusal', (r) => r.demo.phase === 'failed');
    expect(corrupt.demo.error).toMatch(
      /^corrupt\.demo: (chunk checksum mismatch|bad chunk|bad snapshot) at byte \d+/,
    );
    expect(await page.isVisible('#status')).toBe(true);
    expect(await page.textContent('#status-text')).toMatch(
      /Could not open the demo corrupt\.demo: .*at byte \d+/,
    );
    // The file picker.
    await page.setInputFiles('#demo-file', join(OUT, 'truncated.demo'));
    const truncated = await waitFor(page, 'the second refusal', (r) =>
      r.demo.error.startsWith('truncated.demo'),
    );
    expect(truncated.demo.phase).toBe('failed');
    expect(truncated.demo.error).toMatch(/truncated at byte \d+/);
    expect(await page.textContent('#status-text')).toMatch(/truncated\.demo: truncated/);
    await page.screenshot({ path: join(OUT, 'refused.png') });
    // A good file dropped on the page plays.
    const data = await page.evaluateHandle((b64) => {
      const transfer = new DataTransfer();
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      transfer.items.add(new File([bytes], 'dropped.demo'));
      return transfer;
    }, Buffer.from(demo).toString('base64'));
    await page.dispatchEvent('#view', 'drop', { dataTransfer: data });
    const dropped = await waitFor(
      page,
      'the dropped demo',
      (r) => r.demo.phase === 'playing' && r.demo.renderTick > r.demo.firstTick,
    );
    expect(dropped.demo.name).toBe('dropped.demo');
    expect(dropped.demo.error).toBe('');
    expect(await page.isVisible('#status')).toBe(false);
    // The refusals were shown, never thrown.
    expect(errors).toEqual([]);
  });

  it("after a death in the live game, shows the killer's killcam the server sent", async () => {
    // One sharp-shooting bot in the match with the page's player, standing where the host puts it
    // when the page joins (in front of the page's player): a bot running about can lose sight of
    // its target for longer than the wait below.
    const bot = await BotSwarm.start(host.port, {
      count: 1,
      kind: 'aim',
      aimErrorUnits: 0,
      move: false,
      seed: 3,
    });
    killer = bot;
    cleanups.push(() => bot.close());
    const joined = Date.now();
    while (bot.connected < 1) {
      if (Date.now() - joined > 10_000) throw new Error('the bot did not connect within 10 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const { page, errors } = await open('transport=websocket');
    const msg = () => `page errors ${JSON.stringify(errors)}; killcams sent ${host.killcamsSent}`;
    // Its first commands may come before the page's player was in the killer's view (a quick
    // kill after joining); the last ones drew the victim it shot.
    const shown = await waitFor(
      page,
      'a killcam drawing the victim',
      (r) => (r.killcam?.drawn ?? 0) > 0,
      40_000,
    );
    expect(shown.killcamsReceived, msg()).toBeGreaterThan(0);
    expect(host.killcamsSent, msg()).toBeGreaterThan(0);
    expect(shown.health, msg()).toBe(0);
    expect(shown.killcam?.victim, msg()).toBe(shown.slot);
    expect(shown.killcam?.killer, msg()).not.toBe(shown.slot);
    expect(shown.killcam?.drawn, msg()).toBeGreaterThan(0);
    expect(await page.isVisible('#killcam-banner'), msg()).toBe(true);
    await page.screenshot({ path: join(OUT, 'live-killcam.png') });
    // The killer leaves, so no second death (a loaded machine's slow polls can miss the respawn
    // between two) starts another killcam before the checks below.
    await bot.close();
    // Back in the game after the respawn: the killcam is over.
    const back = await waitFor(page, 'the respawn', (r) => r.health > 0, 10_000);
    expect(back.killcam, msg()).toBeNull();
    expect(await page.isVisible('#killcam-banner'), msg()).toBe(false);
    expect(errors, msg()).toEqual([]);
  });
});
