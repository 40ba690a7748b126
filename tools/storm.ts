// The storm tool: `npm run storm [-- options]` plays an arena match with bots while hostile
// datagrams arrive at the server, beside a baseline run of the same match without them, and
// prints the bots' figures side by side, every drop counter by reason and the uncounted count.
// Exits 1 when the storm cost the bots anything or left a datagram uncounted.

import { parseArgs } from 'node:util';
import {
  type ConnectFloodResult,
  connectFloodVerdict,
  DEFAULT_CONNECT_FLOOD_OPTIONS,
  runConnectFlood,
} from './storm/connect-flood.ts';
import {
  DEFAULT_STORM_OPTIONS,
  runStorm,
  STORM_KINDS,
  type StormOptions,
  type StormResult,
  verdict,
} from './storm/storm.ts';

const USAGE = `usage: npm run storm -- [options]
  --transport T     memory (forged source addresses, simulated time; default) or udp (127.0.0.1, real time)
  --datagrams N     hostile datagrams in all (default ${DEFAULT_STORM_OPTIONS.datagrams})
  --forged SHARE    share forged from connected clients' addresses, 0..1 (default ${DEFAULT_STORM_OPTIONS.forgedShare})
  --bots N          bots in the match (default ${DEFAULT_STORM_OPTIONS.bots})
  --seconds S       simulated seconds of play (default ${DEFAULT_STORM_OPTIONS.seconds})
  --latency MS      each bot's one-way latency (default ${DEFAULT_STORM_OPTIONS.latencyMs})
  --loss P          each bot's packet loss, 0..1 (default ${DEFAULT_STORM_OPTIONS.loss})
  --seed N          seed of the match and the storm (default ${DEFAULT_STORM_OPTIONS.seed})
  --json            print the result as JSON

  --connect-flood   instead of the match: a real client connects --tries times over real UDP
                    while another process floods the server with connect requests
  --rate N          the flood's connect requests a second (default ${DEFAULT_CONNECT_FLOOD_OPTIONS.rate})
  --sockets N       the flood's source sockets (default ${DEFAULT_CONNECT_FLOOD_OPTIONS.sockets})
  --tries N         the client's connection attempts (default ${DEFAULT_CONNECT_FLOOD_OPTIONS.tries})
  --retry-ms MS     the client's connectRetryMs (default GameClient's)`;

function number(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    console.error(`storm: --${name} must be a number in ${min}..${max}, got ${value}\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      options: {
        transport: { type: 'string' },
        datagrams: { type: 'string' },
        forged: { type: 'string' },
        bots: { type: 'string' },
        seconds: { type: 'string' },
        latency: { type: 'string' },
        loss: { type: 'string' },
        seed: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
        'connect-flood': { type: 'boolean' },
        rate: { type: 'string' },
        sockets: { type: 'string' },
        tries: { type: 'string' },
        'retry-ms': { type: 'string' },
      },
    });
  } catch (e) {
    console.error(`storm: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help === true) {
    console.log(USAGE);
    return;
  }
  if (v['connect-flood'] === true) {
    const f = DEFAULT_CONNECT_FLOOD_OPTIONS;
    const result = await runConnectFlood({
      rate: Math.floor(number(v.rate as string | undefined, 'rate', f.rate, 1, 1e7)),
      sockets: Math.floor(number(v.sockets as string | undefined, 'sockets', f.sockets, 1, 1024)),
      tries: Math.floor(number(v.tries as string | undefined, 'tries', f.tries, 1, 1000)),
      seed: Math.floor(number(v.seed as string | undefined, 'seed', f.seed, 0, 2 ** 32 - 1)),
      connectRetryMs:
        v['retry-ms'] === undefined ? undefined : number(v['retry-ms'] as string, 'retry-ms', 100, 10, 5000),
    });
    if (v.json === true) console.log(JSON.stringify(result, null, 2));
    else printFlood(result);
    process.exitCode = connectFloodVerdict(result).length === 0 ? 0 : 1;
    return;
  }
  const d = DEFAULT_STORM_OPTIONS;
  const transport = v.transport ?? d.transport;
  if (transport !== 'memory' && transport !== 'udp') {
    console.error(`storm: --transport must be memory or udp, got ${String(transport)}\n${USAGE}`);
    process.exit(2);
  }
  const options: StormOptions = {
    transport,
    datagrams: Math.floor(number(v.datagrams as string | undefined, 'datagrams', d.datagrams, 0, 1e9)),
    forgedShare: number(v.forged as string | undefined, 'forged', d.forgedShare, 0, 1),
    bots: Math.floor(number(v.bots as string | undefined, 'bots', d.bots, 1, 64)),
    seconds: number(v.seconds as string | undefined, 'seconds', d.seconds, 5, 3600),
    latencyMs: number(v.latency as string | undefined, 'latency', d.latencyMs, 0, 1000),
    loss: number(v.loss as string | undefined, 'loss', d.loss, 0, 0.5),
    seed: Math.floor(number(v.seed as string | undefined, 'seed', d.seed, 0, 2 ** 32 - 1)),
  };
  const result = await runStorm(options);
  if (v.json === true) console.log(JSON.stringify(result, null, 2));
  else print(result);
  process.exitCode = verdict(result).length === 0 ? 0 : 1;
}

function print(r: StormResult): void {
  const o = r.options;
  console.log(
    `Storm: ${o.bots} bots, ${o.seconds} s simulated, ${o.latencyMs} ms one way, ${o.loss * 100} % loss, seed ${o.seed}; ` +
      `${o.datagrams.toLocaleString('en')} hostile datagrams from the third second on (${o.transport === 'udp' ? 'real UDP on 127.0.0.1, real time, from the attacker socket' : 'memory transport'})`,
  );
  const row = (name: string, f: (b: StormResult['baseline']) => string) =>
    console.log(`  ${name.padEnd(28)} ${f(r.baseline).padStart(14)} ${f(r.storm).padStart(14)}`);
  console.log(`\n  ${'bots'.padEnd(28)} ${'baseline'.padStart(14)} ${'storm'.padStart(14)}`);
  row('exact agreement', (b) => `${(b.agreement.share * 100).toFixed(2)} %`);
  row('rays compared', (b) => String(b.agreement.compared));
  row('commands executed', (b) => String(b.commandsExecuted));
  row('commands lost', (b) => String(b.commandsLost));
  row('snapshots received', (b) => String(b.snapshotsReceived));
  row('disconnects', (b) => String(b.disconnects));
  console.log('\n  hostile datagrams sent, by kind');
  for (const k of STORM_KINDS) console.log(`    ${k.padEnd(30)} ${String(r.sent[k]).padStart(10)}`);
  console.log(`\n  every datagram the server took (${r.datagramsIn}), by what became of it`);
  for (const [k, n] of Object.entries(r.accounted).sort((a, b) => b[1] - a[1]))
    console.log(`    ${k.padEnd(40)} ${String(n).padStart(10)}`);
  console.log(`\n  uncounted: ${r.uncounted}   crashes: ${r.crashes}`);
  if (o.transport === 'udp')
    console.log(`  lost in the kernel before the server's socket: ${r.lostInKernel}`);
  console.log(
    `  real time: baseline ${r.baselineSeconds.toFixed(1)} s, storm ${r.stormSeconds.toFixed(1)} s`,
  );
  const problems = verdict(r);
  console.log(
    problems.length === 0
      ? '\n  PASS: the storm cost the bots nothing'
      : `\n  FAIL:\n    ${problems.join('\n    ')}`,
  );
}

function printFlood(r: ConnectFloodResult): void {
  const o = r.options;
  console.log(
    `Connect flood over real UDP on 127.0.0.1: the attacker in another process, ${o.sockets} sockets, aiming at ${o.rate.toLocaleString('en')} requests a second`,
  );
  console.log(`  the client resends handshake packets every ${r.connectRetryMs} ms`);
  console.log(
    `  attacker sent ${r.attackerSent.toLocaleString('en')} in ${r.attackerSeconds.toFixed(1)} s (${Math.round(r.attackerSent / r.attackerSeconds).toLocaleString('en')} a second)`,
  );
  console.log(
    `  server socket took ${r.serverReceived.toLocaleString('en')}; its queue dropped ${r.queueFull.toLocaleString('en')}; the kernel lost ${r.lostInKernel.toLocaleString('en')}`,
  );
  console.log(
    `  challenges sent ${r.challenges.toLocaleString('en')}; requests dropped for the handshake rate ${r.handshakeRateDrops.toLocaleString('en')}`,
  );
  console.log(
    `  server process CPU ${r.serverCpuSeconds.toFixed(1)} s, ${r.cpuPerDatagramUs.toFixed(1)} µs per datagram its socket took`,
  );
  console.log(
    `  server process event loop delay: mean ${r.loopDelayMeanMs.toFixed(1)} ms, 99th percentile ${r.loopDelayP99Ms.toFixed(1)} ms`,
  );
  console.log(`\n  try   connect (ms)   requests   responses   first challenge answered (ms)`);
  for (const [i, t] of r.tries.entries()) {
    const ms = Number.isFinite(t.connectMs) ? t.connectMs.toFixed(0) : 'failed';
    const challenged = t.challengedMs < 0 ? '-' : t.challengedMs.toFixed(0);
    console.log(
      `  ${String(i + 1).padStart(3)}   ${ms.padStart(12)}   ${String(t.requests).padStart(8)}   ${String(t.responses).padStart(9)}   ${challenged}`,
    );
  }
  const problems = connectFloodVerdict(r);
  console.log(
    problems.length === 0 ? '\n  PASS: every try connected within 1 s' : `\n  FAIL: ${problems.join('; ')}`,
  );
}

await main();
