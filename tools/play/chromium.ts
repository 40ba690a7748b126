// Debian's Chromium driven by playwright-core, as the browser tests and the page benchmark run
// it: exactly the flags DEVELOPERS.md lists, in a fresh user-data folder removed on close.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/**
 * The Chromium the tests drive: BACKSTEP_CHROMIUM when set (another system's Chromium or Chrome
 * binary), else Debian's (apt-get install -y chromium).
 */
export const CHROMIUM = process.env.BACKSTEP_CHROMIUM || '/usr/bin/chromium';

/** The flags Chromium runs with here (DEVELOPERS.md says why). */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
  '--enable-unsafe-swiftshader',
];

export interface LaunchedChromium {
  readonly context: BrowserContext;
  /** Closes the browser and removes its user-data folder; safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Starts Chromium with a fresh user-data folder (`prefix` names it) and the page size
 * `viewport` (Playwright's default when omitted). Throws, naming the fix, when Chromium is not
 * installed.
 */
export async function launchChromium(
  options: { prefix?: string; viewport?: { width: number; height: number } } = {},
): Promise<LaunchedChromium> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: run "apt-get update && apt-get install -y chromium", or set BACKSTEP_CHROMIUM to a Chromium or Chrome binary`,
    );
  }
  const userDataDir = await mkdtemp(join(tmpdir(), options.prefix ?? 'backstep-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_FLAGS],
      ...(options.viewport === undefined ? {} : { viewport: options.viewport }),
    });
  } catch (error) {
    await rm(userDataDir, { recursive: true, force: true });
    throw error;
  }
  let closed: Promise<void> | null = null;
  return {
    context,
    close: () => {
      closed ??= (async () => {
        try {
          await context.close();
        } finally {
          await rm(userDataDir, { recursive: true, force: true });
        }
      })();
      return closed;
    },
  };
}
