// npm start: builds the arena's browser client and plays it: one Node process serves the page,
// runs the arena server on UDP, WebSocket and WebRTC at one port, and fills the match with bots.
// Open the URL it prints; each browser tab is another player. With --demo FILE the page serves
// that demo file too and prints the URL that plays it.
//
//   npm start -- [--port 8080] [--host 127.0.0.1] [--bots 8] [--bot-kind aim|runner|still|strafe]
//                [--aim-error 24] [--max-clients 32] [--no-build] [--demo FILE.demo]

import { copyFile, mkdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ArenaHost } from '../../games/arena/server/host.ts';
import { closeWebRtc } from '../../src/node.ts';
import { BOT_KINDS, type BotKind, BotSwarm } from './bots.ts';
import { buildClient, DEFAULT_CLIENT_OUT } from './build.ts';

const HELP = `npm start -- [options]
  --port N          TCP and UDP port of the page and the server (default 8080; 0: any free one)
  --host IP         address to listen on (default 127.0.0.1; 0.0.0.0 for other machines)
  --bots N          bots in the match (default 8)
  --bot-kind KIND   aim (run and shoot), runner (only move), still or strafe (targets placed in
                    front of each player who joins)
  --aim-error U     aim bots' aim error, standard deviation per axis in units (default 24)
  --max-clients N   players the match holds, bots included (default 32)
  --no-build        serve the client built last time (out/arena-client)
  --demo FILE       also serve this demo (npm run sim -- --record FILE) and print the URL that
                    plays it; any page also opens one from its "Open demo" button or a drop`;

function fail(message: string): never {
  console.error(`${message}\n\n${HELP}`);
  process.exit(2);
}

function integer(text: string, name: string, min: number, max: number): number {
  const v = Number(text);
  if (!Number.isInteger(v) || v < min || v > max)
    fail(`--${name}: an integer in ${min}..${max}, got ${text}`);
  return v;
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      options: {
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '127.0.0.1' },
        bots: { type: 'string', default: '8' },
        'bot-kind': { type: 'string', default: 'aim' },
        'aim-error': { type: 'string', default: '24' },
        'max-clients': { type: 'string', default: '32' },
        'no-build': { type: 'boolean', default: false },
        demo: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const v = parsed.values as Record<string, string | boolean>;
  if (v.help === true) {
    console.log(HELP);
    return;
  }
  const port = integer(v.port as string, 'port', 0, 65535);
  const maxClients = integer(v['max-clients'] as string, 'max-clients', 1, 256);
  const bots = integer(v.bots as string, 'bots', 0, maxClients - 1);
  const aimError = Number(v['aim-error']);
  if (!(aimError >= 0 && aimError <= 1000)) fail(`--aim-error: a number in 0..1000, got ${v['aim-error']}`);
  const kind = v['bot-kind'] as BotKind;
  if (!BOT_KINDS.includes(kind)) fail(`--bot-kind: one of ${BOT_KINDS.join(', ')}, got ${kind}`);
  const host = v.host as string;

  if (v['no-build'] !== true) {
    console.log('building the browser client (Vite)...');
    await buildClient(DEFAULT_CLIENT_OUT);
  }
  let demoPath: string | null = null;
  if (typeof v.demo === 'string') {
    // Served beside the page (out/arena-client/demos/), so ?demo= names it on the same origin.
    const name = basename(v.demo).replace(/[^A-Za-z0-9._-]/g, '_');
    await mkdir(join(DEFAULT_CLIENT_OUT, 'demos'), { recursive: true });
    try {
      await copyFile(resolve(v.demo), join(DEFAULT_CLIENT_OUT, 'demos', name));
    } catch (error) {
      fail(`--demo: cannot read ${v.demo}: ${error instanceof Error ? error.message : String(error)}`);
    }
    demoPath = `demos/${encodeURIComponent(name)}`;
  }
  let swarm: BotSwarm | null = null;
  const arena = await ArenaHost.start({
    port,
    host,
    maxClients,
    staticDir: DEFAULT_CLIENT_OUT,
    placeInFront: (address) =>
      (kind === 'still' || kind === 'strafe') && swarm !== null && swarm.addresses.has(address),
    ...(host === '127.0.0.1' ? { webrtc: { bindAddress: '127.0.0.1' } } : {}),
  });
  swarm = await BotSwarm.start(arena.port, { count: bots, kind, aimErrorUnits: aimError });
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host;
  console.log(`arena: ${bots} ${kind} bots; server on udp, ws /ws, webrtc /rtc`);
  console.log(`open http://${shown}:${arena.port}/   (another tab is another player; Ctrl+C stops)`);
  if (demoPath !== null) console.log(`the demo: http://${shown}:${arena.port}/?demo=${demoPath}&overlay=1`);
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await swarm?.close();
    await arena.close();
    closeWebRtc();
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((error: unknown) => {
  console.error(String(error instanceof Error ? error.message : error));
  process.exitCode = 1;
});
