// Plain Node ESM, no TypeScript loader: the installed package's Node and client entry points run
// a server and two clients over the memory transport for a few simulated seconds, and the testing
// entry runs a match with a bot.
import { createInputSample, GameClient } from 'backstep/client';
import { MemoryNetwork, parseProfile } from 'backstep/net';
import { listen } from 'backstep/node';
import { GameServer } from 'backstep/server';
import { Match, wanderBot } from 'backstep/testing';
import { dotGame } from './game.mjs';

if (typeof listen !== 'function') throw new Error('backstep/node: no listen()');
const network = new MemoryNetwork({ seed: 7 });
const server = new GameServer(dotGame, network.createEndpoint('server'), {});
const profile = parseProfile({ name: 'wan', latencyMs: 50, jitterMs: 5, loss: 0.02 });
const clients = [0, 1].map(
  (i) => new GameClient(dotGame, network.createEndpoint(`c${i}`, profile), 'server', { seed: i + 1 }),
);
const input = createInputSample();
input.forwardMove = 400;
for (const c of clients) c.connect(0);
for (let t = 0; t <= 4000; t += 1000 / 60) {
  server.update(t);
  for (const c of clients) c.update(t, input);
}
const result = clients.map((c) => ({
  state: c.state,
  snapshots: c.snapshots.stats.framesRead,
  x: c.predictor.current.x,
  corrections: c.predictor.stats.corrections,
}));
// The testing entry: a match on simulated time with a wandering bot over a conditioned link.
const match = new Match(dotGame, 3);
const bot = match.addClient({ profile, drive: wanderBot(5, { moveAmount: 400 }) });
match.run(3000);
const matchResult = {
  state: bot.client.state,
  snapshots: bot.client.snapshots.stats.framesRead,
  corrections: bot.client.predictor.stats.corrections,
};
match.close();
console.log(JSON.stringify({ clients: result, serverClients: server.clientCount, match: matchResult }));
