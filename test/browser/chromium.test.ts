// Headless Chromium plays the arena over WebRTC against a real server: the page (test/browser/page.ts, bundled with esbuild from src/browser.ts) is served by the server's own HTTP port.

import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { closeWebRtc, listen, type MultiTransportServer } from '../../src/node.ts';
import { GameServer } from '../../src/server/server.ts';
import { launchChromium } from '../../tools/play/chromium.ts';
import { closeAll, onCleanup, until } from '../net/transports/loopback.ts';
import type { PageReport } from './page.ts';

const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>Backstep</title><script type="module" src="/page.js"></script>\n';

afterEach(closeAll);

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./page.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // The engine from its sources, as the repository runs it (package.json's exports).
    conditions: ['backstep-source'],
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

async function serve(script: string): Promise<MultiTransportServer> {
  return listen({
    webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    httpHandler: (request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if (path === '/') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end(PAGE_HTML);
      } else if (path === '/page.js') {
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
        response.end(script);
      } else {
        response.writeHead(404);
        response.end();
      }
    },
  });
}

describe('Chromium over WebRTC', () => {
  it('connects from a page, plays with prediction, and leaves cleanly', async () => {
    const script = await bundlePage();
    const multi = await serve(script);
    onCleanup(() => multi.close());
    const executed = new Map<string, number>();
    const server = new GameServer<ArenaPlayerState, ArenaWorld>(
      arenaGame,
      multi,
      { cookieSecret: new Uint8Array(32).fill(9) },
      {
        onCommand: (_server, client) => executed.set(client.address, (executed.get(client.address) ?? 0) + 1),
      },
    );
    let maxClients = 0;
    const loop = setInterval(() => {
      server.update(performance.now());
      maxClients = Math.max(maxClients, server.clientCount);
    }, 4);
    onCleanup(() => {
      clearInterval(loop);
      server.close();
    });

    const { context, close } = await launchChromium({ prefix: 'backstep-chromium-' });
    onCleanup(close);
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    await page.goto(`http://127.0.0.1:${multi.port}/?playMs=2000`);
    await page.waitForFunction(
      () => {
        const phase = (window as unknown as { backstep?: PageReport }).backstep?.phase;
        return phase === 'done' || phase === 'failed';
      },
      undefined,
      { timeout: 30_000, polling: 50 },
    );
    const report = await page.evaluate(() => (window as unknown as { backstep: PageReport }).backstep);
    const msg = `page report ${JSON.stringify(report)}; page errors ${JSON.stringify(consoleErrors)}; server WebRTC ${JSON.stringify(multi.webrtc.stats)}`;
    expect(report.phase, msg).toBe('done');
    expect(report.transport, msg).toBe('webrtc');
    expect(report.state, msg).toBe('disconnected');
    expect(report.framesReceived, msg).toBeGreaterThan(20);
    expect(report.snapshotsRead, msg).toBeGreaterThan(20);
    expect(report.corrections, msg).toBe(0);
    expect(report.confirmations, msg).toBeGreaterThan(10);
    expect(maxClients, msg).toBe(1);
    const rtcClients = [...executed.entries()].filter(([address]) => address.startsWith('rtc:'));
    expect(rtcClients.length, msg).toBe(1);
    expect(rtcClients[0][1], msg).toBeGreaterThan(50);
    expect(multi.webrtc.stats.channelsOpened, msg).toBe(1);
    // The page said goodbye: the server lets the client go without waiting for a timeout.
    expect(await until(() => server.clientCount === 0, 3000), msg).toBe(true);
    expect(server.stats.disconnects, msg).toBe(1);
  });
});
