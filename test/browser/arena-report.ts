// What the arena page reports (window.arena) as the browser tests read it, and a wait on it.

import type { Page } from 'playwright-core';
import type { ArenaReport } from '../../games/arena/client/main.ts';

/** The page's report without its frame time ring (large, and not JSON-worthy). */
export type Report = Omit<ArenaReport, 'frameTimes'>;

export function report(page: Page): Promise<Report> {
  return page.evaluate(() => {
    const { frameTimes: _, ...rest } = window.arena;
    return JSON.parse(JSON.stringify(rest)) as Omit<ArenaReport, 'frameTimes'>;
  });
}

/** Polls the report every 100 ms until `test` holds; throws naming `what` and the last report after `timeoutMs`. */
export async function waitFor(
  page: Page,
  what: string,
  test: (r: Report) => boolean,
  timeoutMs = 15_000,
): Promise<Report> {
  const start = Date.now();
  let r = await report(page);
  while (!test(r)) {
    if (Date.now() - start > timeoutMs)
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify({ ...r, netGraph: null })}`);
    await page.waitForTimeout(100);
    r = await report(page);
  }
  return r;
}
