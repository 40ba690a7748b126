// Benchmark section 1: bytes per client per second of N players in each other's view,
// Backstep against the same positions encoded by @colyseus/schema.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PACKET_TAG_BYTES } from '../../src/net/packet-crypto.ts';
import {
  COLYSEUS_NUMBER_TYPES,
  type ColyseusResult,
  encodeRecording,
  sizeColyseusBuffer,
} from './colyseus.ts';
import { type Row, round, table } from './report.ts';
import { CLEAN_20MS, runScene, type SceneResult } from './scene.ts';

export interface BandwidthOptions {
  /** Player counts, one scene each. */
  players: readonly number[];
  seed: number;
  warmupMs: number;
  /** Simulated time measured per scene, after the warm-up. */
  measureMs: number;
}

export const DEFAULT_BANDWIDTH_OPTIONS: BandwidthOptions = {
  players: [8, 16, 32, 64, 128],
  seed: 1,
  warmupMs: 3000,
  measureMs: 20_000,
};

const TICK_RATE = 64;
/**
 * Bytes TLS 1.3 adds to each record (5-byte record header, 1-byte inner content type, 16-byte
 * AEAD tag): what a patch costs over wss, each WebSocket message written as one record.
 */
const TLS_RECORD_BYTES = 22;
const UPDATE_RATE = 32;

/** The installed @colyseus/schema version (read from its package.json). */
export function colyseusVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@colyseus/schema');
  const pkg: unknown = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8'));
  const version =
    typeof pkg === 'object' && pkg !== null ? (pkg as { version?: unknown }).version : undefined;
  return typeof version === 'string' ? version : 'unknown';
}

interface BackstepFigures {
  downPerSecond: number;
  snapshotPerSecond: number;
  bytesPerEntry: number;
  entryUpdatesPerSecond: number;
}

function backstepRows(r: SceneResult): { perSecond: Row; perFrame: Row; figures: BackstepFigures } {
  const n = r.players;
  const perClientSecond = n * r.seconds;
  const frames = Math.max(1, r.snapshotFrames);
  const down = r.downBytes / perClientSecond;
  const snapshot = r.snapshotBits / 8 / perClientSecond;
  const events = r.eventSectionBits / 8 / perClientSecond;
  const own = r.playerBits / 8 / perClientSecond;
  const header = r.frameHeaderBits / 8 / perClientSecond;
  const tag = (r.downPackets * PACKET_TAG_BYTES) / perClientSecond;
  const inView = r.inView / frames;
  const snapshotPerFrame = r.snapshotBits / 8 / frames;
  const bytesPerEntry = r.entries > 0 ? r.snapshotBits / 8 / r.entries : 0;
  const entryUpdates = r.entries / perClientSecond;
  return {
    perSecond: {
      'down (B/s)': round(down, 0),
      'up (B/s)': round(r.upBytes / perClientSecond, 0),
      'down (packets/s)': round(r.downPackets / perClientSecond, 1),
      'up (packets/s)': round(r.upPackets / perClientSecond, 1),
      'snapshot (B/s)': round(snapshot, 0),
      'events (B/s)': round(events, 0),
      'own state (B/s)': round(own, 0),
      'frame header (B/s)': round(header, 0),
      'packet headers (B/s)': round(down - snapshot - events - own - header - tag, 0),
      'tag (B/s)': round(tag, 0),
      'event (bits, mean)': round(r.eventBits, 1),
      'entity updates (/s)': round(entryUpdates, 0),
      'choked (frames)': r.choked,
    },
    perFrame: {
      'snapshot (B/frame)': round(snapshotPerFrame, 1),
      'in view (entities)': round(inView, 1),
      'B/entity in view/frame': round(inView > 0 ? snapshotPerFrame / inView : 0, 2),
      'entries (/frame)': round(r.entries / frames, 1),
      'B/entity entry': round(bytesPerEntry, 2),
      'deferred (entities/frame)': round(r.deferred / frames, 1),
      'frames without baseline': r.framesWithoutBaseline,
    },
    figures: {
      downPerSecond: down,
      snapshotPerSecond: snapshot,
      bytesPerEntry,
      entryUpdatesPerSecond: entryUpdates,
    },
  };
}

function colyseusRow(c: ColyseusResult, seconds: number): Row {
  const patches = Math.max(1, c.patches);
  return {
    'full state at join (B)': c.fullStateBytes,
    'patches (/s)': round(c.patches / seconds, 1),
    'patch (B, mean)': round(c.patchBytes / patches, 1),
    'largest patch (B)': c.largestPatchBytes,
    'payload (B/s)': round(c.patchBytes / seconds, 0),
    'on the wire (B/s)': round(c.wireBytes / seconds, 0),
    'patch (B/changed entity)': round(c.changedEntities > 0 ? c.patchBytes / c.changedEntities : 0, 2),
    'entity updates (/s)': round(c.changedEntities / seconds, 0),
  };
}

/** Prints the bandwidth tables: Backstep per player count, Colyseus on the same positions, ratios. */
export function bandwidthSection(options: BandwidthOptions = DEFAULT_BANDWIDTH_OPTIONS): void {
  const perSecond: Record<string, Row> = {};
  const perFrame: Record<string, Row> = {};
  const colyseus: Record<string, Row> = {};
  const ratios: Record<string, Row> = {};
  for (const n of options.players) {
    const scene = runScene({
      players: n,
      seed: options.seed,
      tickRate: TICK_RATE,
      updateRate: UPDATE_RATE,
      warmupMs: options.warmupMs,
      measureMs: options.measureMs,
      profile: CLEAN_20MS,
    });
    const label = `${n} players`;
    const b = backstepRows(scene);
    perSecond[label] = b.perSecond;
    perFrame[label] = b.perFrame;
    sizeColyseusBuffer(n);
    // The recording holds frames 0..F-1; patches cover F-1 intervals of 1 / UPDATE_RATE s.
    const seconds = Math.max(1, scene.recording.frames - 1) / UPDATE_RATE;
    let best: ColyseusResult | null = null;
    for (const kind of COLYSEUS_NUMBER_TYPES) {
      const c = encodeRecording(scene.recording, kind);
      colyseus[`${label}, ${kind}`] = colyseusRow(c, seconds);
      if (best === null || c.wireBytes < best.wireBytes) best = c;
    }
    if (best === null) continue;
    const payload = best.patchBytes / seconds;
    const wire = best.wireBytes / seconds;
    const wss = (best.wireBytes + TLS_RECORD_BYTES * best.patches) / seconds;
    const perEntity = best.changedEntities > 0 ? best.patchBytes / best.changedEntities : 0;
    ratios[label] = {
      'best Colyseus': best.type,
      'Colyseus wire (B/s)': round(wire, 0),
      'Backstep down (B/s)': round(b.figures.downPerSecond, 0),
      'on the wire': round(b.figures.downPerSecond / wire, 3),
      'Colyseus wss (B/s)': round(wss, 0),
      'vs wss': round(b.figures.downPerSecond / wss, 3),
      payload: round(b.figures.snapshotPerSecond / payload, 3),
      'per entity': round(b.figures.bytesPerEntry / perEntity, 3),
      'entity updates': round(b.figures.entryUpdatesPerSecond / (best.changedEntities / seconds), 3),
    };
  }
  const scene = `runner bots all in view, ${TICK_RATE} Hz tick, ${UPDATE_RATE} snapshots/s, ${CLEAN_20MS.name} (20 ms each way, no loss)`;
  table(`Bandwidth, Backstep: per client per second; ${scene}`, perSecond, [
    `${options.measureMs / 1000} s of simulated time measured after ${options.warmupMs / 1000} s of warm-up; seed ${options.seed}.`,
    'down/up: every byte of the connected data packets, from the server channel stats; down apart by part:',
    '  snapshot (SnapshotWriter.stats), events (event count and the effect events of other players: footsteps,',
    "  jumps, landings; 'event' is the mean bits of one), own state (the player part: baseline, acked command",
    "  and the owner's state as XOR bytes against the acknowledged frame's), frame header (tick and choke), and",
    '  packet headers: the rest but the tag (the sealed channel header: prefix, sequence and ack in their short',
    '  or long forms, the ack bits bytes not all ones; the reliable section; padding to whole bytes), and tag: the',
    '  16-byte Poly1305 tag of every packet. UDP/IP headers (28 B a packet) are not counted. up: the command packets',
    '  (each command in as many packets as the measured loss needs). entity updates: entity entries written to the client',
    '  (N-1: never its own).',
  ]);
  table('Bandwidth, Backstep: per snapshot (the same runs)', perFrame, [
    'snapshot: SnapshotWriter.stats.totalBits / 8 / frames: baseline delta, then per entity entry its index step',
    '  (1 bit for the next index; or, when cheaper, one step and one length per run of consecutive entries), its',
    '  head (the changed count, in a code trained on the arena) and per field below',
    '  the count its residual against the value predicted from the two the client holds (class code, then the',
    '  bits below the top one), then the end step. Each client gets its own delta against the newest frame it',
    "  acknowledged (a lost packet needs no resend). The viewer's own entity is never in it.",
    'B/entity in view/frame = totalBits / 8 / frames / mean entities in view (every bot moves every frame);',
    '  B/entity entry divides by the entries written instead: they differ when the 1200-byte packet defers some.',
  ]);
  table(`Bandwidth, @colyseus/schema ${colyseusVersion()}: per client, the same positions`, colyseus, [
    'The player entity values the Backstep server committed every other tick (32 Hz) are set on a MapSchema of',
    "  players (x, y, z, yaw, pitch as 'number' or 'float32', ducked as 'boolean'; or 'quantized': x, y, z as",
    "  t.quantized on 32 bits over the level's bounds, yaw as t.angle() on 16 bits, pitch as t.quantized over",
    "  [-90, 90] degrees on 16 bits); one Encoder.encode() per 1/32 s, then discardChanges(), as a room's patch",
    '  interval does; every client gets the same patch, which',
    "  holds all N players (the client's own too). Values are Backstep's quantized ones (multiples of 1/32 unit",
    "  and 360/65536 degree), so 'number' writes them as float32 behind a 1-byte type marker; unquantized",
    '  doubles would take 9 bytes each. The full state at join is outside the per-second figures (as are',
    "  Backstep's first frames: both sides are measured after the warm-up).",
    'on the wire = patch + 1 byte message code (ROOM_STATE_PATCH) + WebSocket frame header (2 B up to 125 B,',
    '  else 4 B); TCP/IP headers ignored, like UDP/IP for Backstep. Reliable and ordered: no loss handling',
    '  needed, but one lost segment holds back every later patch (head-of-line blocking). Inputs (up) and',
    '  effect events are game messages in Colyseus and are not modelled.',
  ]);
  table('Bandwidth ratios, Backstep / the best Colyseus declaration (below 1: Backstep sends less)', ratios, [
    'best Colyseus: the declaration with the fewest bytes on the wire at that player count.',
    'payload: snapshot bytes vs patch bytes. on the wire: Backstep down packets (headers, own state, events and',
    '  the 16-byte tag of every packet included) vs framed patches over plain ws (no TLS): the headline ratio.',
    `  vs wss: the same against Colyseus over wss (TLS 1.3, as a page served over https must use), each patch's`,
    `  WebSocket message in one TLS record of ${TLS_RECORD_BYTES} more bytes (5 header, 1 content type, 16 tag): the like-for-like`,
    '  ratio with both ends encrypted and authenticated, shown apart. per entity: bytes per entity entry vs patch',
    '  bytes per changed entity.',
    '  entity updates: entity states delivered per client per second; (N-1)/N by construction (a client is',
    '  not sent its own entity), lower when the 1200-byte packet defers entities (by priority: each is sent',
    '  less often) while Colyseus sends every change in a patch of any size.',
  ]);
}
