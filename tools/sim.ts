// The simulation harness: `npm run sim -- [options]` runs a server and bot clients over the
// memory transport on simulated time, from a network profile and a seed, and reports figures.

import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../games/arena/shared/game.ts';
import { NAMED_PROFILES, type NetworkProfile, parseProfile, profileByName } from '../src/net/profile.ts';
import { runnerBot } from './harness/bots.ts';
import { Match } from './harness/match.ts';

interface SimOptions {
  bots: number;
  profile: string;
  seconds: number;
  seed: number;
  json: string | null;
  tickRate: number;
  updateRate: number;
}

const USAGE = `usage: npm run sim -- [--bots N] [--profile NAME|FILE] [--seconds S] [--seed N]
                      [--tick-rate HZ] [--update-rate HZ] [--json FILE]
profiles: ${Object.keys(NAMED_PROFILES).join(', ')} or a JSON file (see profiles/README.md)`;

/** Parses and checks every option before anything runs; throws naming the bad one. */
export function parseSimOptions(argv: string[]): SimOptions {
  const o: SimOptions = {
    bots: 8,
    profile: 'dsl',
    seconds: 30,
    seed: 1,
    json: null,
    tickRate: 64,
    updateRate: 32,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    const need = () => {
      if (value === undefined || value.startsWith('--')) throw new Error(`option ${flag} needs a value`);
      i++;
      return value;
    };
    const int = (min: number, max: number) => {
      const v = need();
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        throw new Error(`option ${flag} must be an integer in [${min}, ${max}], got ${v}`);
      }
      return n;
    };
    switch (flag) {
      case '--bots':
        o.bots = int(1, 512);
        break;
      case '--profile':
        o.profile = need();
        break;
      case '--seconds':
        o.seconds = int(1, 24 * 3600);
        break;
      case '--seed':
        o.seed = int(0, 0xffffffff);
        break;
      case '--json':
        o.json = need();
        break;
      case '--tick-rate':
        o.tickRate = int(1, 255);
        break;
      case '--update-rate':
        o.updateRate = int(1, 255);
        break;
      case '--help':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${flag}\n${USAGE}`);
    }
  }
  return o;
}

/** A named profile, or a profile file; a malformed file is refused naming the field. */
export function loadProfile(nameOrPath: string): NetworkProfile {
  if (Object.hasOwn(NAMED_PROFILES, nameOrPath)) return profileByName(nameOrPath);
  let text: string;
  try {
    text = readFileSync(nameOrPath, 'utf8');
  } catch {
    throw new Error(
      `--profile ${nameOrPath}: not a named profile (${Object.keys(NAMED_PROFILES).join(', ')}) nor a readable file`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`--profile ${nameOrPath}: not valid JSON (${(e as Error).message})`);
  }
  return parseProfile(json);
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export function runSim(o: SimOptions, log: (line: string) => void = console.log): Record<string, number> {
  const profile = loadProfile(o.profile);
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, o.seed, {
    tickRate: o.tickRate,
    maxClients: o.bots,
    defaultUpdateRate: o.updateRate,
  });
  for (let i = 0; i < o.bots; i++) {
    match.addClient({
      profile,
      drive: runnerBot(o.seed * 7919 + i),
      frameJitterMs: 2,
      config: { updateRate: o.updateRate },
    });
  }
  // Time every server update (the tick and its sends) on the real clock.
  const server = match.server;
  const update = server.update.bind(server);
  const tickTimes: number[] = [];
  server.update = (nowMs: number) => {
    const t0 = performance.now();
    update(nowMs);
    tickTimes.push(performance.now() - t0);
  };
  const totalMs = o.seconds * 1000;
  const step = Math.max(1000, Math.floor(totalMs / 20));
  for (let t = 0; t < totalMs; t += step) {
    match.run(Math.min(step, totalMs - t));
    log(
      `  ${((match.nowMs / totalMs) * 100).toFixed(0).padStart(3)}%  simulated ${(match.nowMs / 1000).toFixed(0)} s`,
    );
  }
  const seconds = match.nowMs / 1000;
  let corrections = 0;
  let correctionDistance = 0;
  let bytesDown = 0;
  let bytesUp = 0;
  let choked = 0;
  let frames = 0;
  let lostCommands = 0;
  let overBudget = 0;
  for (const c of match.clients) {
    const p = c.client.predictor.stats;
    corrections += p.corrections;
    correctionDistance += p.correctionDistanceTotal;
    const sc = server.clients[c.client.slot];
    if (sc) {
      bytesDown += sc.channel.stats.bytesSent;
      bytesUp += sc.channel.stats.bytesReceived;
      choked += sc.choked;
      frames += sc.framesSent;
      lostCommands += sc.commandStats.lost;
      overBudget += sc.commandStats.overBudget;
    }
  }
  const sorted = Float64Array.from(tickTimes).sort();
  const n = match.clients.length;
  const figures: Record<string, number> = {
    bots: n,
    simulatedSeconds: seconds,
    'prediction.correctionsPerMinute': corrections / n / (seconds / 60),
    'prediction.meanCorrectionUnits': corrections > 0 ? correctionDistance / corrections : 0,
    'bytesPerClientPerSecond.down': bytesDown / n / seconds,
    'bytesPerClientPerSecond.up': bytesUp / n / seconds,
    'choke.share': frames + choked > 0 ? choked / (frames + choked) : 0,
    'commands.lost': lostCommands,
    'commands.overBudget': overBudget,
    'serverTickMs.p50': percentile(sorted, 0.5),
    'serverTickMs.p99': percentile(sorted, 0.99),
    'serverTickMs.max': sorted.length > 0 ? sorted[sorted.length - 1] : 0,
  };
  match.close();
  return figures;
}

function main(): void {
  let options: SimOptions;
  try {
    options = parseSimOptions(process.argv.slice(2));
    loadProfile(options.profile);
  } catch (e) {
    console.error(`sim: ${(e as Error).message}`);
    process.exit(2);
  }
  console.log(
    `Backstep sim: ${options.bots} bots, profile ${options.profile}, ${options.seconds} s, seed ${options.seed}`,
  );
  const figures = runSim(options);
  console.table(
    Object.entries(figures).map(([name, value]) => ({
      figure: name,
      value: Number.isInteger(value) ? value : Number(value.toFixed(3)),
    })),
  );
  if (options.json !== null) {
    writeFileSync(options.json, `${JSON.stringify({ options, figures }, null, 2)}\n`);
    console.log(`wrote ${options.json}`);
  }
}

if (process.argv[1]?.endsWith('sim.ts')) main();
