// The connect flood over real UDP: an arena server on 127.0.0.1 running its loop as a dedicated
// server does, an attacker in another process flooding it with connect requests from many
// sockets, and a real client connecting again and again meanwhile. Reports how long each connect
// took and where the time went (requests the client sent, the server's handshake-rate drops, its
// socket's queue drops, datagrams the kernel lost, the event loop's delay).

import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { createInputSample, GameClient } from '../../src/client/client.ts';
import { DEFAULT_PROTOCOL_ID, DEFAULT_PROTOCOL_VERSION } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import type { DatagramEndpoint } from '../../src/net/transport.ts';
import { UdpEndpoint } from '../../src/net/transports/udp.ts';
import { GameServer } from '../../src/server/server.ts';
import { gameSchemaHash } from '../../src/sim/game.ts';
import { Random } from '../../src/sim/random.ts';

export interface ConnectFloodOptions {
  /** Connect requests a second the attacker aims for. */
  rate: number;
  /** The attacker's sockets (distinct source ports, so distinct addresses to the server). */
  sockets: number;
  /** Connection attempts of the real client. */
  tries: number;
  seed: number;
  /** The client's connectRetryMs (the default: GameClient's). */
  connectRetryMs?: number;
}

export const DEFAULT_CONNECT_FLOOD_OPTIONS: ConnectFloodOptions = {
  rate: 50_000,
  sockets: 64,
  tries: 10,
  seed: 1,
};

export interface ConnectTry {
  /** From connect() to connected, ms (Infinity: not within the 5 s allowed). */
  connectMs: number;
  /** Connect requests and challenge responses the client sent. */
  requests: number;
  responses: number;
  /** When the first challenge arrived, ms after connect() (-1: none). */
  challengedMs: number;
}

export interface ConnectFloodResult {
  options: ConnectFloodOptions;
  tries: ConnectTry[];
  /** Requests the attacker sent, and over how long (s). */
  attackerSent: number;
  attackerSeconds: number;
  /** What the server's socket and connection layer made of the traffic. */
  serverReceived: number;
  queueFull: number;
  lostInKernel: number;
  challenges: number;
  handshakeRateDrops: number;
  /** Event loop delay of the server's process: mean and 99th percentile, ms. */
  loopDelayMeanMs: number;
  loopDelayP99Ms: number;
  connectRetryMs: number;
  /** CPU time of the server's process (server and client; the attacker is apart), and per datagram its socket took, µs. */
  serverCpuSeconds: number;
  cpuPerDatagramUs: number;
}

const TRY_LIMIT_MS = 5000;

/** Distinct, well-formed connect requests for the attacker to cycle through. */
function floodPackets(seed: number, count: number): string[] {
  const rng = new Random(seed);
  const p = createHandshakePacket();
  const s = createHandshakeStream();
  p.type = PACKET_CONNECT_REQUEST;
  p.version = DEFAULT_PROTOCOL_VERSION;
  p.schemaHash = gameSchemaHash(arenaGame);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    p.clientNonce = rng.nextU32();
    for (let k = 0; k < 32; k++) p.publicKey[k] = rng.int(0, 255);
    out.push(Buffer.from(writeHandshakePacket(s, DEFAULT_PROTOCOL_ID, p)).toString('base64'));
  }
  return out;
}

/** Counts the handshake packets an endpoint sends. */
function counting(
  e: DatagramEndpoint,
  counts: { requests: number; responses: number; all: number },
): DatagramEndpoint {
  return {
    address: e.address,
    send: (to, data) => {
      counts.all++;
      if (data[0] === PACKET_CONNECT_REQUEST) counts.requests++;
      if (data[0] === PACKET_CHALLENGE_RESPONSE) counts.responses++;
      e.send(to, data);
    },
    poll: (nowMs, onPacket) => e.poll(nowMs, onPacket),
    close: () => e.close(),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runConnectFlood(options: ConnectFloodOptions): Promise<ConnectFloodResult> {
  const serverSocket = await UdpEndpoint.open({ host: '127.0.0.1' });
  // Room for every try: a client's Disconnect may be lost in the flood, its slot then held until it times out.
  const server = new GameServer(arenaGame, serverSocket, { maxClients: options.tries + 8 });
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  // The loop of a dedicated server (games/arena/server/main.ts).
  const serverLoop = setInterval(() => server.update(now()), server.tickIntervalMs / 4);
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });

  const attacker = fork(new URL('./flood-attacker.mjs', import.meta.url), [], { stdio: 'inherit' });
  const stopped = new Promise<number>((resolve) =>
    attacker.on('message', (m: { type: string; sent?: number }) => {
      if (m.type === 'stopped') resolve(m.sent ?? 0);
    }),
  );
  const started = new Promise<void>((resolve) =>
    attacker.on('message', (m: { type: string }) => {
      if (m.type === 'started') resolve();
    }),
  );
  const port = Number(serverSocket.address.slice(serverSocket.address.lastIndexOf(':') + 1));
  attacker.send({
    type: 'start',
    port,
    rate: options.rate,
    sockets: options.sockets,
    packets: floodPackets(options.seed, 4096),
  });
  await started;
  const floodFrom = performance.now();
  const cpuFrom = process.cpuUsage();
  const receivedFrom = serverSocket.stats.packetsReceived;
  await sleep(1000);
  loopDelay.enable();

  const tries: ConnectTry[] = [];
  const random = new Random(options.seed);
  let connectRetryMs = 0;
  let clientPackets = 0;
  for (let i = 0; i < options.tries; i++) {
    const socket = await UdpEndpoint.open({ host: '127.0.0.1' });
    const counts = { requests: 0, responses: 0, all: 0 };
    const client = new GameClient(arenaGame, counting(socket, counts), serverSocket.address, {
      seed: random.nextU32(),
      ...(options.connectRetryMs === undefined ? {} : { connectRetryMs: options.connectRetryMs }),
    });
    connectRetryMs = client.config.connectRetryMs;
    const input = createInputSample();
    const start = now();
    let challengedMs = -1;
    client.connect(start);
    const connectMs = await new Promise<number>((resolve) => {
      const frame = setInterval(() => {
        const t = now();
        client.update(t, input);
        if (challengedMs < 0 && counts.responses > 0) challengedMs = t - start;
        if (client.state === 'connected' || t - start > TRY_LIMIT_MS) {
          clearInterval(frame);
          resolve(client.state === 'connected' ? t - start : Number.POSITIVE_INFINITY);
        }
      }, 1000 / 60);
    });
    tries.push({ connectMs, requests: counts.requests, responses: counts.responses, challengedMs });
    clientPackets += counts.all;
    client.disconnect();
    await socket.close();
    await sleep(300);
  }

  loopDelay.disable();
  const cpu = process.cpuUsage(cpuFrom);
  const received = serverSocket.stats.packetsReceived - receivedFrom;
  attacker.send({ type: 'stop' });
  const attackerSent = await stopped;
  const attackerSeconds = (performance.now() - floodFrom) / 1000;
  await sleep(100);
  server.update(now());
  clearInterval(serverLoop);
  const st = serverSocket.stats;
  const result: ConnectFloodResult = {
    options,
    tries,
    attackerSent,
    attackerSeconds,
    serverReceived: st.packetsReceived,
    queueFull: st.droppedQueueFull,
    lostInKernel: 0,
    challenges: server.connections.traffic.answered.challenge ?? 0,
    handshakeRateDrops: server.stats.rejected['handshake rate'] ?? 0,
    loopDelayMeanMs: loopDelay.mean / 1e6,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    connectRetryMs,
    serverCpuSeconds: (cpu.user + cpu.system) / 1e6,
    cpuPerDatagramUs: (cpu.user + cpu.system) / Math.max(1, received),
  };
  // Everything sent to the server that its socket never saw (taken or dropped by its queue)
  // was lost in the kernel.
  result.lostInKernel = Math.max(0, attackerSent + clientPackets - st.packetsReceived - st.droppedQueueFull);
  await server.close();
  await serverSocket.close();
  return result;
}

/** Problems with a run (empty: every try connected within a second). */
export function connectFloodVerdict(r: ConnectFloodResult): string[] {
  const slow = r.tries.filter((t) => !(t.connectMs <= 1000));
  return slow.length === 0
    ? []
    : [
        `${slow.length} of ${r.tries.length} tries took over 1 s (${slow.map((t) => t.connectMs.toFixed(0)).join(', ')} ms)`,
      ];
}
