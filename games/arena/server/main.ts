// The arena's dedicated server (Node): one match on UDP, WebSocket and WebRTC at one port, with a
// health endpoint for orchestrators (GET /healthz: 200 while the tick loop runs, 503 once it
// has stalled for a second). Stops cleanly on SIGTERM or SIGINT. With --agones (or
// BACKSTEP_AGONES=1, as the Agones manifests set) it reports to the Agones SDK sidecar: Ready once
// listening, health from the tick loop, players, allocation, Shutdown when it stops.
// With --matches N it hosts matches 1..N instead, spread over --workers threads (default: every
// core); clients join one by its id (MatchClientEndpoint), and health covers every match's loop.
//
//   node --conditions=backstep-source --import tsx games/arena/server/main.ts [--port P] [--host H] [--max-clients N] [--matches N [--workers W]] [--agones] [--help]

import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AgonesAdapter } from 'backstep/agones';
import { reasonName } from 'backstep/net';
import { closeWebRtc, listen, MatchWorkers, sodiumAvailable } from 'backstep/node';
import { combineHooks, GameServer } from 'backstep/server';
import { arenaGame } from '../shared/game.ts';
import { arenaRules } from './rules.ts';

/** Which packet cipher the server seals with (the optional sodium-native, or Node's crypto). */
const CIPHER = sodiumAvailable()
  ? 'packets sealed with libsodium'
  : "packets sealed with Node's crypto (sodium-native did not load: npm install sodium-native for about 5x faster sealing)";

/** A tick loop silent this long fails the health check. */
const STALL_MS = 1000;

interface Options {
  port: number;
  host: string;
  maxClients: number;
  agones: boolean;
  /** Matches on worker threads (0: one match on the main thread). */
  matches: number;
  workers: number | undefined;
}

const USAGE = `npm run server -- [options]: the arena's dedicated server (no page: \`npm start\` serves the game)

  --port P           UDP, WebSocket (/ws), WebRTC signalling (/rtc) and health (/healthz), all on
                     this one port (default 4000; 0: any free port)
  --host H           address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --max-clients N    players per match, 1..1024 (default 32)
  --matches N        host matches 1..N on worker threads instead of one match (clients name the
                     match they join); 0 (default): one match on the main thread
  --workers W        worker threads for --matches (default: one a core)
  --agones           report to the Agones SDK sidecar (also BACKSTEP_AGONES=1)
  -h, --help         this text

Stops cleanly on SIGTERM or SIGINT. docs/deployment.md: containers, Agones, several matches.`;

function options(): Options | null {
  try {
    return checkOptions();
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)} (--help: the options)`);
  }
}

function checkOptions(): Options | null {
  const { values } = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      port: { type: 'string', default: '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      'max-clients': { type: 'string', default: '32' },
      agones: { type: 'boolean', default: false },
      matches: { type: 'string', default: '0' },
      workers: { type: 'string' },
    },
  });
  if (values.help === true) return null;
  const matches = Number(values.matches);
  const workers = values.workers === undefined ? undefined : Number(values.workers);
  if (!Number.isInteger(matches) || matches < 0 || matches > 100_000) {
    throw new RangeError(`--matches: 0..100000, got ${values.matches}`);
  }
  if (workers !== undefined && (!Number.isInteger(workers) || workers < 1 || workers > 256)) {
    throw new RangeError(`--workers: 1..256, got ${values.workers}`);
  }
  const port = Number(values.port);
  const maxClients = Number(values['max-clients']);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new RangeError(`--port: 0..65535, got ${values.port}`);
  if (!Number.isInteger(maxClients) || maxClients < 1 || maxClients > 1024) {
    throw new RangeError(`--max-clients: 1..1024, got ${values['max-clients']}`);
  }
  return {
    port,
    host: values.host as string,
    maxClients,
    agones: values.agones === true || process.env.BACKSTEP_AGONES === '1',
    matches,
    workers,
  };
}

/** The match module the workers load: the TypeScript source, or its build next to this file. */
function matchModule(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './match.ts' : './match.js', import.meta.url);
}

/** Matches 1..N on worker threads behind one port; health and Agones cover every match's loop. */
async function serveMatches(o: Options, agones: AgonesAdapter | null): Promise<void> {
  let workers: MatchWorkers | null = null;
  const health = (request: IncomingMessage, response: ServerResponse): void => {
    if (request.url !== '/healthz') {
      response.writeHead(404).end();
      return;
    }
    const alive = workers?.healthy() === true;
    response.writeHead(alive ? 200 : 503, { 'content-type': 'text/plain' }).end(alive ? 'ok\n' : 'stalled\n');
  };
  const endpoint = await listen({ port: o.port, host: o.host, httpHandler: health });
  const running = await MatchWorkers.start({
    endpoint,
    module: matchModule(),
    workers: o.workers,
    onPlayer: (address, _match, connected) => agones?.player(address, connected),
    onEnded: (e) =>
      console.log(
        `match ${e.id} ended (${reasonName(e.reason)}${e.error === undefined ? '' : `: ${e.error}`})`,
      ),
  });
  workers = running;
  for (let id = 1; id <= o.matches; id++) await running.create(id, { maxClients: o.maxClients });
  const pings = setInterval(() => agones?.check(running.healthy(), performance.now()), 250);
  console.log(
    `arena server listening on ${o.host}:${endpoint.port} (udp, ws /ws, webrtc /rtc, health /healthz): matches 1..${o.matches} on ${running.workerCount} worker threads; ${CIPHER}`,
  );
  await agones?.ready();
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    clearInterval(pings);
    await running.close();
    await agones?.shutdown();
    closeWebRtc();
    console.log('arena server stopped');
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

async function main(): Promise<void> {
  const o = options();
  if (o === null) {
    console.log(USAGE);
    return;
  }
  const { port, host, maxClients, agones: onAgones } = o;
  const agones = onAgones
    ? await AgonesAdapter.connect({
        labels: { map: 'arena', mode: 'deathmatch' },
        playerCapacity: maxClients * Math.max(1, o.matches),
        onAllocated: () => console.log('allocated by Agones'),
      })
    : null;
  if (o.matches > 0) {
    await serveMatches(o, agones);
    return;
  }
  let lastTickMs = performance.now();
  const health = (request: IncomingMessage, response: ServerResponse): void => {
    if (request.url !== '/healthz') {
      response.writeHead(404).end();
      return;
    }
    const alive = performance.now() - lastTickMs < STALL_MS;
    response.writeHead(alive ? 200 : 503, { 'content-type': 'text/plain' }).end(alive ? 'ok\n' : 'stalled\n');
  };
  const endpoint = await listen({ port, host, httpHandler: health });
  const server = new GameServer(
    arenaGame,
    endpoint,
    { maxClients },
    combineHooks(
      arenaRules(),
      {
        onTick: () => {
          lastTickMs = performance.now();
        },
      },
      agones?.hooks() ?? {},
    ),
  );
  const timer = setInterval(() => server.update(performance.now()), server.tickIntervalMs / 4);
  console.log(
    `arena server listening on ${host}:${endpoint.port} (udp, ws /ws, webrtc /rtc, health /healthz); ${CIPHER}`,
  );
  await agones?.ready();
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    await server.close();
    await agones?.shutdown();
    closeWebRtc();
    console.log('arena server stopped');
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((error: unknown) => {
  console.error(String(error instanceof Error ? error.message : error));
  process.exitCode = 2;
});
