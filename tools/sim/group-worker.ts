// A worker thread of the sim: runs a group of bots on its own memory network, window by window,
// in lockstep with the server on the main thread (lockstep.ts). Datagrams to the server leave
// through a relay and are handed back with each window; the server's datagrams to these bots
// come with the next window's request and enter the bots' endpoints (and their down links).

import { parentPort, workerData } from 'node:worker_threads';
import { ArenaShotLedger } from '../../games/arena/testing/shots.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import {
  BotGroup,
  botAddress,
  DatagramBatch,
  type GroupRequest,
  type GroupWorkerData,
  readBatch,
  type WindowReply,
} from './lockstep.ts';

const data = workerData as GroupWorkerData;
const port = parentPort;
if (port === null) throw new Error('group-worker: not a worker thread');

// The network's own seed draws nothing here: every endpoint is given its seeds.
const network = new MemoryNetwork({ seed: 0 });
const toServer = new DatagramBatch();
const indexOf = new Map<string, number>();
for (const i of data.indices) indexOf.set(botAddress(i), i);
network.createRelay('server', (from, bytes, atMs) => {
  const i = indexOf.get(from);
  if (i !== undefined) toServer.add(i, atMs, bytes);
});
const ledger = new ArenaShotLedger();
const group = new BotGroup(data.plan, data.indices, data.seeds, network, ledger);
const endpoints = new Map(group.bots.map((b) => [b.index, b.endpoint]));

port.on('message', (request: GroupRequest) => {
  if (request.type === 'close') {
    group.disconnect();
    port.close();
    return;
  }
  readBatch(request.datagrams, (bot, atMs, bytes) => {
    endpoints.get(bot)?.deliver('server', bytes, atMs);
  });
  group.runUntil(request.untilMs);
  const datagrams = toServer.take();
  const reply: WindowReply = {
    type: 'window',
    datagrams,
    shots: ledger.takePending(),
    summaries: request.summarize ? group.summaries() : null,
  };
  port.postMessage(reply, [datagrams]);
});
