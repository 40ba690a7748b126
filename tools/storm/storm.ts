// The storm: a live arena match with bots while hostile datagrams pour into the server, beside a
// baseline run of the same match without them. Over the memory transport (source addresses can
// be forged, so forgeries come "from" connected clients; reproducible from a seed), or over real
// UDP on 127.0.0.1 in real time (every hostile datagram from the attacker's own socket).

import { fork } from 'node:child_process';
import type { ShotAgreement } from 'backstep/testing';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { ArenaShotLedger, aimBot } from '../../games/arena/testing/shots.ts';
import { createInputSample, GameClient, type InputSample } from '../../src/client/client.ts';
import { DEFAULT_PROTOCOL_VERSION, PacketType, writePacketChecksum } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  peekPacketType,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { parseProfile } from '../../src/net/profile.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../../src/net/transport.ts';
import { MemoryNetwork } from '../../src/net/transports/memory.ts';
import { UdpEndpoint } from '../../src/net/transports/udp.ts';
import { combineHooks } from '../../src/server/hooks.ts';
import { GameServer, type ServerClient } from '../../src/server/server.ts';
import { gameSchemaHash } from '../../src/sim/game.ts';
import { Random } from '../../src/sim/random.ts';

/** The kinds of hostile datagram, in the order the report lists them. */
export const STORM_KINDS = [
  'forged from a client',
  'random',
  'truncated',
  'mutated',
  'mutated, valid checksum',
  'replayed',
  'spoofed connect request',
  'forged challenge response',
  'oversized',
] as const;
export type StormKind = (typeof STORM_KINDS)[number];

export interface StormOptions {
  /** 'memory' (forged source addresses, simulated time) or 'udp' (127.0.0.1, real time). */
  transport: 'memory' | 'udp';
  seed: number;
  /** Hostile datagrams in all. */
  datagrams: number;
  /** Share of them forged from connected clients' addresses with valid framing (0..1). */
  forgedShare: number;
  bots: number;
  /** Simulated seconds of play; the storm runs from the third second to the end. */
  seconds: number;
  /** A network profile name or object for every bot's link ('lan' unless given). */
  latencyMs: number;
  loss: number;
}

export const DEFAULT_STORM_OPTIONS: StormOptions = {
  transport: 'memory',
  seed: 1,
  datagrams: 1_000_000,
  forgedShare: 0.25,
  bots: 8,
  seconds: 60,
  latencyMs: 30,
  loss: 0.02,
};

/** What the bots saw in one run. */
export interface BotFigures {
  agreement: ShotAgreement;
  commandsExecuted: number;
  commandsLost: number;
  snapshotsReceived: number;
  disconnects: number;
}

export interface StormResult {
  options: StormOptions;
  baseline: BotFigures;
  storm: BotFigures;
  /** Hostile datagrams sent, by kind. */
  sent: Record<StormKind, number>;
  /** Every datagram the server's connection layer took, and how each ended, by reason. */
  datagramsIn: number;
  accounted: Record<string, number>;
  uncounted: number;
  /** Over UDP: hostile datagrams the attacker sent that the server's socket never received (kernel). */
  lostInKernel: number;
  crashes: number;
  /** Real seconds each run took (not reproducible). */
  baselineSeconds: number;
  stormSeconds: number;
}

/** A recorded datagram from a real client: the material of replays and forgeries. */
interface Captured {
  from: string;
  data: Uint8Array;
}

const CAPTURE = 512;
const STORM_START_MS = 3000;

/**
 * The server's endpoint, and the storm: hostile datagrams due by each poll are made and handed to
 * the server among the real ones. Real datagrams from clients are recorded for replays and
 * forgeries.
 */
class StormEndpoint implements DatagramEndpoint {
  readonly sent = Object.fromEntries(STORM_KINDS.map((k) => [k, 0])) as Record<StormKind, number>;
  delivered = 0;
  private readonly captured: Captured[] = [];
  /** Each client's newest data packet: forgeries start from its sequence, so the window takes them. */
  private readonly latest = new Map<string, Uint8Array>();
  private made = 0;
  private readonly rng: Random;
  private readonly buffer = new Uint8Array(2048);
  private readonly hs = createHandshakePacket();
  private readonly hsStream = createHandshakeStream();
  private readonly record: PacketHandler;
  private readonly clients: Set<string>;
  private onPacket: PacketHandler = () => {};

  constructor(
    private readonly inner: DatagramEndpoint,
    private readonly options: StormOptions,
    private readonly clientAddresses: readonly string[],
    private readonly protocolId: number,
    private readonly schemaHash: number,
  ) {
    this.rng = new Random((options.seed ^ 0x570a) >>> 0);
    this.clients = new Set(clientAddresses);
    this.record = (from, data) => {
      this.delivered++;
      // Only the bots' own datagrams are material (over UDP the attacker's arrive here too).
      if (!this.clients.has(from)) {
        this.onPacket(from, data);
        return;
      }
      if (data.length >= 30 && peekPacketType(data) === PacketType.Data) this.latest.set(from, data.slice());
      if (this.captured.length < CAPTURE) this.captured.push({ from, data: data.slice() });
      else if (this.rng.int(0, 7) === 0)
        this.captured[this.rng.int(0, CAPTURE - 1)] = { from, data: data.slice() };
      this.onPacket(from, data);
    };
  }

  get address(): string {
    return this.inner.address;
  }

  send(to: string, data: Uint8Array): void {
    this.inner.send(to, data);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.onPacket = onPacket;
    const o = this.options;
    const spanMs = o.seconds * 1000 - STORM_START_MS;
    const due =
      o.datagrams === 0 || nowMs < STORM_START_MS
        ? 0
        : Math.min(o.datagrams, Math.floor((o.datagrams * (nowMs - STORM_START_MS)) / spanMs));
    const half = this.made + ((due - this.made) >> 1);
    while (this.made < half) this.hostile(onPacket);
    this.inner.poll(nowMs, this.record);
    while (this.made < due) this.hostile(onPacket);
  }

  close(): void | Promise<void> {
    return this.inner.close();
  }

  /**
   * Makes the next hostile datagram and hands it to `onPacket` with the source address it claims
   * (over UDP the address is the attacker socket's whatever it claims).
   */
  hostile(onPacket: PacketHandler): void {
    const n = this.made++;
    const rng = this.rng;
    const forged = n % 1000 < this.options.forgedShare * 1000;
    const kind: StormKind = forged ? 'forged from a client' : STORM_KINDS[rng.int(1, STORM_KINDS.length - 1)];
    this.sent[kind]++;
    const b = this.buffer;
    const real = this.captured.length > 0 ? this.captured[rng.int(0, this.captured.length - 1)] : null;
    const randomAddress = () =>
      `spoof:${rng.int(1, 223)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}:${rng.int(1024, 65535)}`;
    const anyAddress = () =>
      rng.int(0, 1) === 0
        ? randomAddress()
        : this.clientAddresses[rng.int(0, this.clientAddresses.length - 1)];
    switch (kind) {
      case 'forged from a client': {
        // A real packet of a connected client, re-framed: a sequence the window would take (or
        // far ahead), acks of packets the server sent, other bytes, sometimes a Disconnect.
        // Only the key would make it authentic.
        const from = this.clientAddresses[rng.int(0, this.clientAddresses.length - 1)];
        const base = this.latest.get(from) ?? null;
        const length = base === null ? rng.int(30, 200) : base.length;
        if (base === null) for (let i = 0; i < length; i++) b[i] = rng.int(0, 255);
        else b.set(base);
        // A sealed header (channel.ts) the server reads: a short sequence near its window
        // (byte 1 is the low byte of a real packet's sequence in either form) or, one time in
        // ten, a long one anywhere; a short ack, 4 bytes of ack bits; then flipped bytes.
        const pick = rng.int(0, 9);
        const type = rng.int(0, 9) === 0 ? PacketType.Disconnect : PacketType.Data;
        let o = 1;
        if (pick === 0) {
          b[0] = type | (2 << 4) | (3 << 6);
          const seq = rng.int(0, 0xffff);
          b[o++] = seq & 0xff;
          b[o++] = seq >>> 8;
        } else {
          const jump = pick === 1 ? rng.int(-40, 0) : rng.int(1, 64);
          b[0] = type | 0x08 | (1 << 4) | (3 << 6);
          b[o] = (b[o] + jump) & 0xff;
          o++;
        }
        b[o++] = rng.int(0, 255);
        for (let i = 0; i < 4; i++) b[o++] = rng.int(0, 255);
        for (let i = 0, flips = rng.int(1, 8); i < flips; i++) b[rng.int(o, length - 1)] = rng.int(0, 255);
        onPacket(from, b.subarray(0, length));
        return;
      }
      case 'random': {
        const length = rng.int(0, MAX_PACKET_BYTES);
        for (let i = 0; i < length; i++) b[i] = rng.int(0, 255);
        if (length > 0 && rng.int(0, 1) === 0) b[0] = rng.int(0, 7);
        onPacket(anyAddress(), b.subarray(0, length));
        return;
      }
      case 'truncated':
      case 'mutated':
      case 'mutated, valid checksum':
      case 'replayed': {
        if (real === null) {
          onPacket(randomAddress(), b.subarray(0, 0));
          return;
        }
        b.set(real.data);
        let length = real.data.length;
        if (kind === 'truncated') length = rng.int(0, length - 1);
        if (kind === 'mutated' || kind === 'mutated, valid checksum') {
          for (let i = 0, flips = rng.int(1, 4); i < flips; i++)
            b[rng.int(0, length - 1)] ^= 1 << rng.int(0, 7);
          // Only lifecycle packets carry a checksum (sealed ones have the tag instead).
          const type = peekPacketType(b.subarray(0, length));
          if (
            kind === 'mutated, valid checksum' &&
            length >= 13 &&
            type !== PacketType.Data &&
            type !== PacketType.Disconnect
          )
            writePacketChecksum(this.protocolId, b, length);
        }
        onPacket(real.from, b.subarray(0, length));
        return;
      }
      case 'spoofed connect request':
      case 'forged challenge response': {
        const p = this.hs;
        p.type = kind === 'spoofed connect request' ? PACKET_CONNECT_REQUEST : PACKET_CHALLENGE_RESPONSE;
        p.version = DEFAULT_PROTOCOL_VERSION;
        p.schemaHash = this.schemaHash;
        p.clientNonce = rng.nextU32();
        p.issuedAt = rng.nextU32();
        p.cookieHi = rng.nextU32();
        p.cookieLo = rng.nextU32();
        p.updateRate = 32;
        p.rate = 0;
        for (let i = 0; i < 32; i++) p.publicKey[i] = rng.int(0, 255);
        onPacket(
          kind === 'spoofed connect request' ? randomAddress() : anyAddress(),
          writeHandshakePacket(this.hsStream, this.protocolId, p),
        );
        return;
      }
      case 'oversized': {
        const length = rng.int(MAX_PACKET_BYTES + 1, b.length);
        for (let i = 0; i < length; i++) b[i] = rng.int(0, 255);
        b[0] = rng.int(0, 7);
        onPacket(anyAddress(), b.subarray(0, length));
        return;
      }
    }
  }
}

type Client = GameClient<ArenaPlayerState, ArenaWorld>;

/** One aiming bot: its client, its input and when its next frame is due. */
interface Bot {
  client: Client;
  input: InputSample;
  drive: ReturnType<typeof aimBot>;
  nextMs: number;
}

/** The match both transports run: the server (its clients recorded as they connect) and the bots. */
interface Match {
  server: GameServer<ArenaPlayerState, ArenaWorld>;
  serverClients: ServerClient<ArenaPlayerState>[];
  ledger: ArenaShotLedger;
  bots: Bot[];
}

/**
 * The arena server on `endpoint` and `options.bots` aiming bots, each on the endpoint
 * `botEndpoint(i)` gives, connecting to `serverAddress`. The same seed gives the same bots.
 */
function startMatch(
  options: StormOptions,
  random: Random,
  endpoint: DatagramEndpoint,
  serverConfig: { cookieSecret?: Uint8Array; protocolId: number },
  serverAddress: string,
  botEndpoint: (i: number) => DatagramEndpoint,
): Match {
  const ledger = new ArenaShotLedger();
  const serverClients: ServerClient<ArenaPlayerState>[] = [];
  const server = new GameServer(
    arenaGame,
    endpoint,
    { ...serverConfig, maxClients: options.bots },
    combineHooks(ledger.serverHooks(), { onConnect: (_s, c) => serverClients.push(c) }),
  );
  const seeds = new Random((options.seed ^ 0x5eed5eed) >>> 0);
  const bots: Bot[] = [];
  for (let i = 0; i < options.bots; i++) {
    let client: Client | null = null;
    client = new GameClient(
      arenaGame,
      botEndpoint(i),
      serverAddress,
      { seed: random.nextU32() },
      ledger.clientHooks(() => client as Client),
    );
    client.connect(0);
    bots.push({ client, input: createInputSample(), drive: aimBot(seeds.nextU32()), nextMs: 0 });
  }
  return { server, serverClients, ledger, bots };
}

/** Runs every bot whose frame is due at `now`. */
function driveBots(bots: Bot[], now: number): void {
  const frameMs = 1000 / 60;
  for (const b of bots) {
    if (b.nextMs > now) continue;
    b.drive(b.client, now, b.input);
    b.client.update(now, b.input);
    b.nextMs = now + frameMs;
  }
}

/** The bots' figures at the end of a run. */
function matchFigures(m: Match): BotFigures {
  let executed = 0;
  let lost = 0;
  for (const c of m.serverClients) {
    executed += c.commandStats.executed;
    lost += c.commandStats.lost;
  }
  let snapshots = 0;
  let disconnects = 0;
  for (const b of m.bots) {
    snapshots += b.client.snapshots.stats.framesRead;
    if (b.client.state !== 'connected') disconnects++;
  }
  return {
    agreement: m.ledger.agreement('exact'),
    commandsExecuted: executed,
    commandsLost: lost,
    snapshotsReceived: snapshots,
    disconnects: Math.max(disconnects, m.server.stats.disconnects),
  };
}

interface RunOutcome {
  udpStats: {
    packetsReceived: number;
    droppedOversizeReceived: number;
    droppedQueueFull: number;
    sentToServer: number;
  } | null;
  figures: BotFigures;
  endpoint: StormEndpoint;
  server: GameServer<ArenaPlayerState, ArenaWorld>;
  crashes: number;
  seconds: number;
}

/** One run of the match: with `options.datagrams` hostile datagrams, or none (the baseline). */
function run(options: StormOptions): RunOutcome {
  const started = performance.now();
  const random = new Random(options.seed);
  const network = new MemoryNetwork({ seed: random.nextU32() });
  const addresses = Array.from({ length: options.bots }, (_, i) => `client${i}`);
  const protocolId = 0x42535450;
  const endpoint = new StormEndpoint(
    network.createEndpoint('server'),
    options,
    addresses,
    protocolId,
    gameSchemaHash(arenaGame),
  );
  const profile = parseProfile({
    name: 'storm',
    latencyMs: options.latencyMs,
    jitterMs: options.latencyMs * 0.2,
    loss: options.loss,
  });
  const match = startMatch(
    options,
    random,
    endpoint,
    { cookieSecret: new Uint8Array(32).fill(7), protocolId },
    'server',
    (i) => network.createEndpoint(addresses[i], profile),
  );
  const { server, bots } = match;
  const endMs = options.seconds * 1000;
  let nextTickMs = 0;
  let crashes = 0;
  for (let now = 0; now <= endMs; ) {
    network.setTime(now);
    try {
      if (nextTickMs <= now) {
        server.update(now);
        nextTickMs += server.tickIntervalMs;
      }
      driveBots(bots, now);
    } catch (e) {
      crashes++;
      if (crashes === 1) console.error(e);
      if (crashes > 10) break;
    }
    let next = nextTickMs;
    for (const b of bots) if (b.nextMs < next) next = b.nextMs;
    now = next;
  }
  const figures = matchFigures(match);
  for (const b of bots) b.client.disconnect();
  server.close();
  return {
    udpStats: null,
    figures,
    endpoint,
    server,
    crashes,
    seconds: (performance.now() - started) / 1000,
  };
}

/** One run over real UDP on 127.0.0.1, in real time; hostile datagrams from an attacker socket in another process. */
async function runUdp(options: StormOptions): Promise<RunOutcome> {
  const started = performance.now();
  const random = new Random(options.seed);
  const protocolId = 0x42535450;
  const sockets: UdpEndpoint[] = [];
  const open = async (port = 0) => {
    const s = await UdpEndpoint.open({ host: '127.0.0.1', port, queueCapacity: 65_536 });
    sockets.push(s);
    return s;
  };
  const serverSocket = await open();
  const botSockets: UdpEndpoint[] = [];
  for (let i = 0; i < options.bots; i++) botSockets.push(await open());
  // The attacker: another process (tools/storm/flood-attacker.mjs) with a plain socket, so its
  // sending costs this process nothing and oversized datagrams leave too (an endpoint refuses to
  // send them). This process makes the datagrams (from the traffic it sees) and hands them over
  // in batches.
  const attacker = fork(new URL('./flood-attacker.mjs', import.meta.url), [], {
    stdio: 'inherit',
    serialization: 'advanced',
  });
  const attackerMessages: { type: string; sent?: number }[] = [];
  const waitFor = (type: string) =>
    new Promise<{ type: string; sent?: number }>((resolve) => {
      const found = attackerMessages.find((m) => m.type === type);
      if (found !== undefined) resolve(found);
      else
        attacker.on('message', (m: { type: string; sent?: number }) => {
          if (m.type === type) resolve(m);
        });
    });
  attacker.on('message', (m: { type: string; sent?: number }) => attackerMessages.push(m));
  const serverPort = Number(serverSocket.address.slice(serverSocket.address.lastIndexOf(':') + 1));
  attacker.send({ type: 'relay', port: serverPort });
  await waitFor('started');
  const batch = new Uint8Array(1 << 20);
  const batchLengths: number[] = [];
  let batchBytes = 0;
  const flush = () => {
    if (batchLengths.length === 0) return;
    attacker.send({ type: 'batch', bytes: batch.slice(0, batchBytes), lengths: batchLengths.slice() });
    batchLengths.length = 0;
    batchBytes = 0;
  };
  const addresses = botSockets.map((s) => s.address);
  const endpoint = new StormEndpoint(
    serverSocket,
    { ...options, datagrams: 0 },
    addresses,
    protocolId,
    gameSchemaHash(arenaGame),
  );
  const match = startMatch(
    options,
    random,
    endpoint,
    { protocolId },
    serverSocket.address,
    (i) => botSockets[i],
  );
  const { server, bots } = match;
  const endMs = options.seconds * 1000;
  const spanMs = endMs - STORM_START_MS;
  const t0 = performance.now();
  let nextTickMs = 0;
  let crashes = 0;
  let made = 0;
  const send = (_from: string, data: Uint8Array) => {
    if (batchBytes + data.length > batch.length) flush();
    batch.set(data, batchBytes);
    batchBytes += data.length;
    batchLengths.push(data.length);
  };
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now() - t0;
      try {
        const due =
          now < STORM_START_MS
            ? 0
            : Math.min(options.datagrams, Math.floor((options.datagrams * (now - STORM_START_MS)) / spanMs));
        while (made < due) {
          endpoint.hostile(send);
          made++;
        }
        flush();
        while (nextTickMs <= now) {
          server.update(now);
          nextTickMs += server.tickIntervalMs;
        }
        driveBots(bots, now);
      } catch (e) {
        crashes++;
        if (crashes === 1) console.error(e);
      }
      if (now >= endMs || crashes > 10) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  const figures = matchFigures(match);
  // The attacker stops (everything handed over sent), then datagrams still in flight are read
  // before the count is taken.
  attacker.send({ type: 'stop' });
  let sentToServer = (await waitFor('stopped')).sent ?? 0;
  await new Promise((r) => setTimeout(r, 50));
  server.update(performance.now() - t0);
  for (const b of botSockets) sentToServer += b.stats.packetsSent;
  const udpStats = { ...serverSocket.stats, sentToServer };
  for (const b of bots) b.client.disconnect();
  await server.close();
  await Promise.all(sockets.map((s) => s.close()));
  return { udpStats, figures, endpoint, server, crashes, seconds: (performance.now() - started) / 1000 };
}

/** Runs the baseline and the storm with the same seed and returns both and the accounting. */
export async function runStorm(options: StormOptions): Promise<StormResult> {
  const go = options.transport === 'udp' ? runUdp : (o: StormOptions) => Promise.resolve(run(o));
  const baseline = await go({ ...options, datagrams: 0 });
  const storm = await go(options);
  const stats = storm.server.stats;
  const traffic = storm.server.connections.traffic;
  const accounted: Record<string, number> = {};
  for (const [reason, n] of Object.entries(stats.rejected)) accounted[`rejected: ${reason}`] = n;
  for (const [reason, n] of Object.entries(traffic.answered)) accounted[`answered: ${reason}`] = n;
  for (const [reason, n] of Object.entries(traffic.data)) accounted[`connected: ${reason}`] = n;
  const hostile = Object.values(storm.endpoint.sent).reduce((a, b) => a + b, 0);
  // Over UDP the socket's own drops (oversize, queue full) are accounted before the connection layer.
  const udp = storm.udpStats;
  if (udp !== null) {
    accounted['transport: oversize'] = udp.droppedOversizeReceived;
    accounted['transport: queue full'] = udp.droppedQueueFull;
  }
  const total = Object.values(accounted).reduce((a, b) => a + b, 0);
  const datagramsIn =
    udp === null
      ? storm.endpoint.delivered + hostile
      : udp.packetsReceived + udp.droppedOversizeReceived + udp.droppedQueueFull;
  return {
    options,
    baseline: baseline.figures,
    storm: storm.figures,
    sent: storm.endpoint.sent,
    datagramsIn,
    accounted,
    uncounted: datagramsIn - total,
    lostInKernel: udp === null ? 0 : Math.max(0, udp.sentToServer - datagramsIn),
    crashes: baseline.crashes + storm.crashes,
    baselineSeconds: baseline.seconds,
    stormSeconds: storm.seconds,
  };
}

/** What keeps the run from passing (empty: it passed): the "done when" of the storm. */
export function verdict(r: StormResult): string[] {
  const problems: string[] = [];
  const b = r.baseline;
  const s = r.storm;
  if (r.crashes > 0) problems.push(`${r.crashes} crashes`);
  if (r.uncounted !== 0) problems.push(`${r.uncounted} datagrams uncounted`);
  if (s.disconnects > 0) problems.push(`${s.disconnects} disconnects`);
  if (s.agreement.compared === 0 || s.agreement.agreed !== s.agreement.compared)
    problems.push(`exact agreement ${(s.agreement.share * 100).toFixed(2)} % (${s.agreement.compared} rays)`);
  const within = (storm: number, base: number) => Math.abs(storm - base) <= Math.max(1, base * 0.01);
  // Over UDP the runs are in real time on a shared machine: the bots' frame counts differ with
  // scheduling, so commands and snapshots are compared per executed command, not exactly.
  if (r.options.transport === 'udp') {
    const rate = (x: BotFigures) => x.snapshotsReceived / Math.max(1, x.commandsExecuted);
    if (Math.abs(rate(s) - rate(b)) > rate(b) * 0.05)
      problems.push(
        `snapshots per command ${rate(s).toFixed(3)} against ${rate(b).toFixed(3)} in the baseline`,
      );
    if (s.commandsLost > b.commandsLost + Math.max(1, b.commandsExecuted * 0.01))
      problems.push(`commands lost ${s.commandsLost} against ${b.commandsLost} in the baseline`);
    return problems;
  }
  if (!within(s.commandsLost, b.commandsLost))
    problems.push(`commands lost ${s.commandsLost} against ${b.commandsLost} in the baseline`);
  if (!within(s.snapshotsReceived, b.snapshotsReceived))
    problems.push(`snapshots received ${s.snapshotsReceived} against ${b.snapshotsReceived} in the baseline`);
  return problems;
}
