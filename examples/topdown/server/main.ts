// The top-down game's dedicated server (Node): one match on UDP, WebSocket and WebRTC at one port,
// players held for 15 s when their connection drops. Stops on SIGINT or SIGTERM.
//   node --conditions=backstep-source --import tsx examples/topdown/server/main.ts [PORT]

import { closeWebRtc, listen } from 'backstep/node';
import { GameServer } from 'backstep/server';
import { topdownGame } from '../shared/game.ts';
import { TopdownRules } from './rules.ts';

const port = Number(process.argv[2] ?? 4100);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`topdown server: the port must be an integer in 0..65535, got ${process.argv[2]}`);
  process.exit(2);
}
const endpoint = await listen({ port, host: '127.0.0.1' });
const rules = new TopdownRules();
const server = new GameServer(
  topdownGame,
  endpoint,
  { tickRate: 64, reconnectGraceMs: 15_000 },
  rules.hooks(),
);
const timer = setInterval(() => server.update(performance.now()), 2);
console.log(
  `topdown server listening on 127.0.0.1:${endpoint.port} (udp, ws /ws, webrtc /rtc); clients connect to ws://127.0.0.1:${endpoint.port}/ws or webrtc://127.0.0.1:${endpoint.port}`,
);

async function stop(): Promise<void> {
  clearInterval(timer);
  await server.close();
  closeWebRtc();
}
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
