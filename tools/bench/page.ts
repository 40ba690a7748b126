// The browser game's cost: the size of the page's JavaScript (raw and gzipped) and the frame
// time in headless Chromium (software WebGL) while 16 aim bots run and shoot in the match:
// the time each frame's work takes (input, client update, drawing) and the interval between
// frames, mean and 99th percentile.

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { ArenaReport } from '../../games/arena/client/main.ts';
import { ArenaHost } from '../../games/arena/server/host.ts';
import { closeWebRtc } from '../../src/node.ts';
import { BotSwarm } from '../play/bots.ts';
import { buildClient } from '../play/build.ts';
import { launchChromium } from '../play/chromium.ts';
import { round, table } from './report.ts';

const OUT = fileURLToPath(new URL('../../out/bench/arena-client/', import.meta.url));

async function bundleSizes(dir: string): Promise<{ raw: number; gzip: number; files: number }> {
  let raw = 0;
  let gzip = 0;
  let files = 0;
  for (const name of await readdir(join(dir, 'assets'))) {
    if (!name.endsWith('.js')) continue;
    const data = await readFile(join(dir, 'assets', name));
    raw += data.length;
    gzip += gzipSync(data, { level: 9 }).length;
    files++;
  }
  return { raw, gzip, files };
}

/** Builds the page, plays it for `seconds` with `bots` aim bots and prints the figures. */
export async function pageSection(seconds: number, bots = 16): Promise<void> {
  const dir = await buildClient(OUT);
  const size = await bundleSizes(dir);
  const host = await ArenaHost.start({
    port: 0,
    staticDir: dir,
    webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
  });
  const swarm = await BotSwarm.start(host.port, { count: bots, kind: 'aim', aimErrorUnits: 24 });
  const { context, close } = await launchChromium({
    prefix: 'backstep-bench-',
    viewport: { width: 1280, height: 720 },
  });
  try {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${host.port}/?transport=auto`);
    await page.waitForFunction(() => window.arena?.spawned === true, undefined, { timeout: 30_000 });
    // Settle, then measure from a clean ring.
    await page.waitForTimeout(2000);
    await page.evaluate(() => window.arena.frameTimes(true));
    await page.waitForTimeout(seconds * 1000);
    const t = await page.evaluate(() => window.arena.frameTimes(false));
    const seen = await page.evaluate(() => {
      const a: ArenaReport = window.arena;
      return { transport: a.transport, fps: a.netGraph?.fps ?? 0, ping: a.netGraph?.pingMs ?? 0 };
    });
    table(
      `Page: bundle and frame time (headless Chromium, software WebGL, 1280x720, ${bots} aim bots, ${seconds} s)`,
      {
        bundle: {
          'JS files': size.files,
          'raw (KB)': round(size.raw / 1024, 1),
          'gzip -9 (KB)': round(size.gzip / 1024, 1),
        },
      },
    );
    table(
      'Frames',
      {
        'frame work (ms)': { mean: round(t.workMean, 2), p99: round(t.workP99, 2), frames: t.frames },
        'frame interval (ms)': {
          mean: round(t.intervalMean, 2),
          p99: round(t.intervalP99, 2),
          frames: t.frames,
        },
      },
      [
        `transport ${seen.transport}, ${round(seen.fps, 1)} fps, ping ${round(seen.ping, 1)} ms; work is input + client update + drawing`,
        'inside requestAnimationFrame; the interval includes the browser compositing a software-rendered frame.',
      ],
    );
  } finally {
    await close();
    await swarm.close();
    await host.close();
    closeWebRtc();
  }
}
