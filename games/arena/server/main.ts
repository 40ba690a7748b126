// The arena's dedicated server (Node): one match on UDP, WebSocket and WebRTC at one port, with a
// health endpoint for orchestrators (GET /healthz: 200 while the tick loop runs, 503 once it
// has stalled for a second). Stops cleanly on SIGTERM or SIGINT. With --agones (or
// BACKSTEP_AGONES=1, as the Agones manifests set) it reports to the Agones SDK sidecar: Ready once
// listening, health from the tick loop, players, allocation, Shutdown when it stops.
//
//   node --conditions=backstep-source --import tsx games/arena/server/main.ts [--port P] [--host H] [--max-clients N] [--agones]

import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AgonesAdapter } from 'backstep/agones';
import { closeWebRtc, listen } from 'backstep/node';
import { combineHooks, GameServer } from 'backstep/server';
import { arenaGame } from '../shared/game.ts';
import { arenaRules } from './rules.ts';

/** A tick loop silent this long fails the health check. */
const STALL_MS = 1000;

function options(): { port: number; host: string; maxClients: number; agones: boolean } {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      'max-clients': { type: 'string', default: '32' },
      agones: { type: 'boolean', default: false },
    },
  });
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
  };
}

async function main(): Promise<void> {
  const { port, host, maxClients, agones: onAgones } = options();
  const agones = onAgones
    ? await AgonesAdapter.connect({
        labels: { map: 'arena', mode: 'deathmatch' },
        playerCapacity: maxClients,
        onAllocated: () => console.log('allocated by Agones'),
      })
    : null;
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
    `arena server listening on ${host}:${endpoint.port} (udp, ws /ws, webrtc /rtc, health /healthz)`,
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
