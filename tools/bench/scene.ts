// The bandwidth scene: N runner bots all in each other's view, a 64 Hz server sending each client
// 32 snapshots a second over a clean simulated link; counts every byte each side sends and records
// the player entity values the server commits at the update rate (the input of the Colyseus run).

import { Match } from 'backstep/testing';
import { type ArenaPlayerState, type ArenaWorld, arenaGame } from '../../games/arena/shared/game.ts';
import { runnerBot } from '../../games/arena/testing/bots.ts';
import { type NetworkProfile, parseProfile } from '../../src/net/profile.ts';
import { BitStream } from '../../src/protocol/bitstream.ts';
import { serializeWireEvent } from '../../src/protocol/frames.ts';
import { decodeField } from '../../src/protocol/schema.ts';

/** The fields recorded per player per frame, in this order. */
export const RECORDED_FIELDS = ['x', 'y', 'z', 'yaw', 'pitch', 'ducked'] as const;

/** A clean internet link: 20 ms each way, no jitter, no loss. */
export const CLEAN_20MS: NetworkProfile = parseProfile({
  name: 'clean-20ms',
  description: '20 ms one way, no jitter, no loss, no bandwidth limit',
  latencyMs: 20,
});

export interface SceneOptions {
  players: number;
  seed: number;
  tickRate: number;
  updateRate: number;
  warmupMs: number;
  measureMs: number;
  profile: NetworkProfile;
}

/** Player entity values committed at the update rate: frame f, player p, field k at (f * players + p) * 6 + k. */
export interface PlayerRecording {
  players: number;
  frames: number;
  values: Float64Array;
}

/** Totals over the measured window, summed over every client. */
export interface SceneResult {
  players: number;
  seconds: number;
  /** Channel bytes (packet headers included) the server sent to / received from clients. */
  downBytes: number;
  upBytes: number;
  downPackets: number;
  upPackets: number;
  /** Snapshot section bits (SnapshotWriter.stats.totalBits) and frames. */
  snapshotBits: number;
  snapshotFrames: number;
  framesWithoutBaseline: number;
  /** Per frame sums: entities in view after it, entries written (create + update), entries deferred. */
  inView: number;
  entries: number;
  deferred: number;
  choked: number;
  /** Effect events delivered to clients, and the mean bits each cost on the wire. */
  events: number;
  eventBits: number;
  /** Frame parts written (FrameBits): tick and choke, the player part, event count and events. */
  frameHeaderBits: number;
  playerBits: number;
  eventSectionBits: number;
  recording: PlayerRecording;
}

/**
 * Runs the scene: warm-up, then `measureMs` of simulated time during which the server's
 * per-client channel and snapshot statistics are differenced and the committed player entities
 * recorded every tickRate / updateRate ticks. Throws if a client is not connected by the end of
 * the warm-up (the figures would be meaningless).
 */
export function runScene(o: SceneOptions): SceneResult {
  // Events are counted while measuring, each at its own size on the wire (the game's event table).
  const eventMeasure = new BitStream(0);
  let eventBitsTotal = 0;
  let measuring = false;
  const match = new Match<ArenaPlayerState, ArenaWorld>(arenaGame, o.seed, {
    tickRate: o.tickRate,
    maxClients: o.players,
    defaultUpdateRate: o.updateRate,
  });
  for (let i = 0; i < o.players; i++) {
    match.addClient({
      profile: o.profile,
      drive: runnerBot(o.seed * 7919 + i),
      frameJitterMs: 2,
      config: { updateRate: o.updateRate, rateBytesPerSecond: 200_000 },
      hooks: {
        onEvent: (e, predicted) => {
          if (predicted || !measuring) return;
          eventMeasure.beginMeasure();
          serializeWireEvent(eventMeasure, e, arenaGame.events ?? null);
          eventBitsTotal += eventMeasure.bitsProcessed;
        },
      },
    });
  }
  match.run(o.warmupMs);
  const server = match.server;
  const connected = server.clients.filter((c) => c !== null);
  if (connected.length !== o.players) {
    throw new Error(`bandwidth scene: ${connected.length} of ${o.players} clients connected after warm-up`);
  }

  const store = server.entities;
  const type = store.schema.types[arenaGame.playerEntity.typeId];
  const fieldIndex = RECORDED_FIELDS.map((name) => {
    const f = type.fields.findIndex((field) => field.name === name);
    if (f < 0) throw new Error(`bandwidth scene: the player entity has no field '${name}'`);
    return f;
  });
  const every = Math.round(o.tickRate / o.updateRate);
  const maxFrames = Math.ceil((o.measureMs * o.updateRate) / 1000) + 2;
  const width = RECORDED_FIELDS.length;
  const recording: PlayerRecording = {
    players: o.players,
    frames: 0,
    values: new Float64Array(maxFrames * o.players * width),
  };

  const before = connected.map((c) => ({
    down: c.channel.stats.bytesSent,
    up: c.channel.stats.bytesReceived,
    downPackets: c.channel.stats.packetsSent,
    upPackets: c.channel.stats.packetsReceived,
    bits: c.snapshots.stats.totalBits,
    header: c.frameBits.header,
    player: c.frameBits.player,
    eventSection: c.frameBits.events,
    frames: c.snapshots.stats.frames,
    withoutBaseline: c.snapshots.stats.framesWithoutBaseline,
    choked: c.choked,
  }));
  const eventsBefore = match.clients.map((c) => c.client.stats.eventsReceived);
  measuring = true;
  const framesSeen = connected.map((c) => c.snapshots.stats.frames);
  const result: SceneResult = {
    players: o.players,
    seconds: o.measureMs / 1000,
    downBytes: 0,
    upBytes: 0,
    downPackets: 0,
    upPackets: 0,
    snapshotBits: 0,
    snapshotFrames: 0,
    framesWithoutBaseline: 0,
    inView: 0,
    entries: 0,
    deferred: 0,
    choked: 0,
    events: 0,
    eventBits: 0,
    frameHeaderBits: 0,
    playerBits: 0,
    eventSectionBits: 0,
    recording,
  };

  const update = server.update.bind(server);
  let lastTick = server.tick;
  server.update = (nowMs: number) => {
    update(nowMs);
    for (let i = 0; i < connected.length; i++) {
      const st = connected[i].snapshots.stats;
      if (st.frames === framesSeen[i]) continue;
      framesSeen[i] = st.frames;
      result.inView += st.lastInView;
      result.entries += st.lastCreated + st.lastUpdated;
      result.deferred += st.lastDeferred;
    }
    if (server.tick === lastTick) return;
    lastTick = server.tick;
    if (server.tick % every !== 0 || recording.frames === maxFrames) return;
    const slot = store.history(server.tick);
    if (slot === undefined) return;
    let at = recording.frames * o.players * width;
    for (const c of connected) {
      const base = c.entity * store.stride;
      for (let k = 0; k < width; k++) {
        const f = fieldIndex[k];
        const v = decodeField(type, f, slot.values[base + f]);
        recording.values[at++] = typeof v === 'boolean' ? (v ? 1 : 0) : v;
      }
    }
    recording.frames++;
  };
  match.run(o.measureMs);
  server.update = update;

  for (let i = 0; i < connected.length; i++) {
    const c = connected[i];
    const b = before[i];
    if (server.clients[c.slot] !== c) throw new Error(`bandwidth scene: client ${c.slot} dropped out`);
    result.downBytes += c.channel.stats.bytesSent - b.down;
    result.upBytes += c.channel.stats.bytesReceived - b.up;
    result.downPackets += c.channel.stats.packetsSent - b.downPackets;
    result.upPackets += c.channel.stats.packetsReceived - b.upPackets;
    result.snapshotBits += c.snapshots.stats.totalBits - b.bits;
    result.frameHeaderBits += c.frameBits.header - b.header;
    result.playerBits += c.frameBits.player - b.player;
    result.eventSectionBits += c.frameBits.events - b.eventSection;
    result.snapshotFrames += c.snapshots.stats.frames - b.frames;
    result.framesWithoutBaseline += c.snapshots.stats.framesWithoutBaseline - b.withoutBaseline;
    result.choked += c.choked - b.choked;
  }
  for (let i = 0; i < match.clients.length; i++) {
    result.events += match.clients[i].client.stats.eventsReceived - eventsBefore[i];
  }
  measuring = false;
  result.eventBits = result.events > 0 ? eventBitsTotal / result.events : 0;
  match.close();
  return result;
}
