// Benchmarks: `npm run bench [-- SECTION...] [--page-seconds N]` prints each section's tables
// (bandwidth, server, client, matches, spectators, page, crypto, demo by default; inlining only
// when named). Figures are compared as ratios within one run, never asserted in tests.

import { performance } from 'node:perf_hooks';
import { bandwidthSection } from './bench/bandwidth.ts';
import { clientFrameSection } from './bench/client-frame.ts';
import { demoSection } from './bench/demo.ts';
import { inliningSection } from './bench/inlining.ts';
import { matchesSection } from './bench/matches.ts';
import { packetCryptoSection } from './bench/packet-crypto.ts';
import { pageSection } from './bench/page.ts';
import { machineHeader } from './bench/report.ts';
import { serverTickSection } from './bench/server-tick.ts';
import { spectatorSection } from './bench/spectators.ts';

/** Seconds the page section measures frames for (--page-seconds). */
let pageSeconds = 60;

/** `only`: run when named, not by default (a long comparison rather than a figure of the release). */
const SECTIONS: Record<string, { title: string; run: () => void | Promise<void>; only?: true }> = {
  bandwidth: { title: '1. Bandwidth', run: () => bandwidthSection() },
  server: { title: '2. Server tick cost', run: () => serverTickSection() },
  client: { title: '3. Client frame cost', run: () => clientFrameSection() },
  matches: { title: '4. Matches per core and per process', run: () => matchesSection() },
  spectators: { title: '5. Spectator cost', run: () => spectatorSection() },
  page: { title: '6. The browser game: bundle size and frame time', run: () => pageSection(pageSeconds) },
  crypto: { title: '7. Authenticated packets: cost per packet', run: () => packetCryptoSection() },
  demo: { title: '8. Demo playback: open, seek, draw', run: () => demoSection() },
  inlining: {
    title: "9. The server in four forms: modules or one bundle, V8's inlining budgets default or raised",
    run: () => inliningSection(),
    only: true,
  },
};

function usage(): string {
  const rows = Object.entries(SECTIONS).map(
    ([name, s]) => `  ${name.padEnd(12)} ${s.title}${s.only ? ' (only when named)' : ''}`,
  );
  return [
    'npm run bench [-- SECTION...] [--page-seconds N]: the benchmarks, every section but inlining by default',
    '',
    ...rows,
    '',
    '  --page-seconds N   seconds the page section measures frames for, 1..3600 (default 60)',
    '  -h, --help         this text',
    '',
    'Figures differ from run to run on a shared machine: compare within one run (npm run ab for the',
    'server tick of two source trees).',
  ].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage());
    return;
  }
  const flag = args.indexOf('--page-seconds');
  if (flag >= 0) {
    pageSeconds = Number(args[flag + 1]);
    if (!(pageSeconds >= 1 && pageSeconds <= 3600)) {
      console.error(`bench: --page-seconds must be a number of seconds in 1..3600, got ${args[flag + 1]}`);
      process.exit(2);
    }
    args.splice(flag, 2);
  }
  const asked = args;
  for (const name of asked) {
    if (!Object.hasOwn(SECTIONS, name)) {
      console.error(
        `bench: unknown section ${name} (sections: ${Object.keys(SECTIONS).join(', ')}; --help: the options)`,
      );
      process.exit(2);
    }
  }
  const names = asked.length > 0 ? asked : Object.keys(SECTIONS).filter((name) => !SECTIONS[name].only);
  console.log(`Backstep benchmarks: ${machineHeader()}`);
  const start = performance.now();
  for (const name of names) {
    const section = SECTIONS[name];
    const t0 = performance.now();
    console.log(`\n== ${section.title}`);
    await section.run();
    console.log(`  (section: ${((performance.now() - t0) / 1000).toFixed(0)} s of real time)`);
  }
  console.log(`\nAll sections: ${((performance.now() - start) / 1000).toFixed(0)} s of real time.`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
