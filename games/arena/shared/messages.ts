// The arena's own reliable messages, beside the engine's frames: the browser client's settings
// (update rate, rate, lag compensation mode, its down link's conditions, the overlay), and the
// server's answers (tick time and what it applied, kills, the boxes a shot was tested against).
// One serialize function per message writes and reads it; a read of bad bytes returns false.
//
//   +---------------+------------------------------------------------------------------+
//   | message       | fields (after a type byte)                                       |
//   +---------------+------------------------------------------------------------------+
//   | settings      | updateRate 1..128, rate 1000..1e6, lagComp 0..3, down latency    |
//   |               | 0..2000 ms, jitter 0..1000 ms, loss and duplicate 0..1 (1/1000), |
//   |               | overlay bit                                                      |
//   | server stats  | tick ms mean and max (1/100), update rate, rate, lagComp, kills, |
//   |               | deaths                                                           |
//   | kill          | killer slot (or none), victim slot, weapon                       |
//   | shot report   | command 32 bits, mode 0..2, exact bit, count 0..96, per target:  |
//   |               | entity 0..1023, x y z (1/32), ducked bit                          |
//   +---------------+------------------------------------------------------------------+

import type { BitStream } from 'backstep/protocol';
import { ORIGIN_LIMIT, ORIGIN_PRECISION, WEAPON_COUNT } from './constants.ts';

export const MESSAGE_SETTINGS = 1;
export const MESSAGE_SERVER_STATS = 2;
export const MESSAGE_KILL = 3;
export const MESSAGE_SHOT_REPORT = 4;
/** A killcam's part (backstep's KILLCAM_MESSAGE_TAG, 0x4B, reads as type 11): never an arena message. */
export const MESSAGE_KILLCAM_PART = 11;

/** Targets one shot report carries (the first the broad phase kept; 96 fit a reliable message). */
export const SHOT_REPORT_MAX_TARGETS = 96;

/** Lag compensation modes by wire number; 0 asks for the server's own. */
export const LAG_COMPENSATION_BY_NUMBER = ['server', 'exact', 'estimate', 'off'] as const;
export type LagCompensationChoice = (typeof LAG_COMPENSATION_BY_NUMBER)[number];

export const SETTINGS_LIMITS = {
  updateRate: { min: 1, max: 128 },
  rateBytesPerSecond: { min: 1000, max: 1_000_000 },
  latencyMs: { min: 0, max: 2000 },
  jitterMs: { min: 0, max: 1000 },
} as const;

/** What a client asks of the server for itself. */
export interface ClientSettings {
  updateRate: number;
  rateBytesPerSecond: number;
  lagCompensation: LagCompensationChoice;
  /** Conditions the server applies to what it sends this client (its down link). */
  downLatencyMs: number;
  downJitterMs: number;
  downLoss: number;
  downDuplicate: number;
  /** Send a shot report for each of this client's shots. */
  overlay: boolean;
}

export function createClientSettings(): ClientSettings {
  return {
    updateRate: 32,
    rateBytesPerSecond: 80_000,
    lagCompensation: 'server',
    downLatencyMs: 0,
    downJitterMs: 0,
    downLoss: 0,
    downDuplicate: 0,
    overlay: false,
  };
}

export interface ServerStatsMessage {
  tickMsMean: number;
  tickMsMax: number;
  /** What the server applies to this client now. */
  updateRate: number;
  rateBytesPerSecond: number;
  lagCompensation: LagCompensationChoice;
  kills: number;
  deaths: number;
}

export function createServerStatsMessage(): ServerStatsMessage {
  return {
    tickMsMean: 0,
    tickMsMax: 0,
    updateRate: 0,
    rateBytesPerSecond: 0,
    lagCompensation: 'exact',
    kills: 0,
    deaths: 0,
  };
}

/** A player died: killer slot (-1: no player, a projectile's owner unknown), victim slot, weapon. */
export interface KillMessage {
  killer: number;
  victim: number;
  weapon: number;
}

/** The targets the server tested one of this client's shots against, as lag compensation rebuilt them. */
export interface ShotReport {
  command: number;
  mode: 'exact' | 'estimate' | 'off';
  /** The command's named view was honoured exactly. */
  exact: boolean;
  count: number;
  readonly entities: Int32Array;
  /** x, y, z per target. */
  readonly origins: Float64Array;
  readonly ducked: Uint8Array;
}

export function createShotReport(): ShotReport {
  return {
    command: 0,
    mode: 'exact',
    exact: false,
    count: 0,
    entities: new Int32Array(SHOT_REPORT_MAX_TARGETS),
    origins: new Float64Array(SHOT_REPORT_MAX_TARGETS * 3),
    ducked: new Uint8Array(SHOT_REPORT_MAX_TARGETS),
  };
}

const MAX_SLOT = 1023;
const PROBABILITY_PRECISION = 1 / 1000;
const MODES = ['exact', 'estimate', 'off'] as const;

/** Writes or reads the message type; reading returns -1 on bad data. */
export function serializeMessageType(s: BitStream, type: number): number {
  const t = s.int(type, 0, 15);
  return s.ok ? t : -1;
}

export function serializeClientSettings(s: BitStream, m: ClientSettings): boolean {
  const L = SETTINGS_LIMITS;
  m.updateRate = s.int(m.updateRate, L.updateRate.min, L.updateRate.max);
  m.rateBytesPerSecond = s.int(m.rateBytesPerSecond, L.rateBytesPerSecond.min, L.rateBytesPerSecond.max);
  const lag = s.int(LAG_COMPENSATION_BY_NUMBER.indexOf(m.lagCompensation), 0, 3);
  m.lagCompensation = LAG_COMPENSATION_BY_NUMBER[lag];
  m.downLatencyMs = s.int(m.downLatencyMs, L.latencyMs.min, L.latencyMs.max);
  m.downJitterMs = s.int(m.downJitterMs, L.jitterMs.min, L.jitterMs.max);
  m.downLoss = s.float(m.downLoss, 0, 1, PROBABILITY_PRECISION);
  m.downDuplicate = s.float(m.downDuplicate, 0, 1, PROBABILITY_PRECISION);
  m.overlay = s.bool(m.overlay);
  return s.ok;
}

export function serializeServerStats(s: BitStream, m: ServerStatsMessage): boolean {
  m.tickMsMean = s.float(m.tickMsMean, 0, 1000, 1 / 100);
  m.tickMsMax = s.float(m.tickMsMax, 0, 1000, 1 / 100);
  m.updateRate = s.int(m.updateRate, 0, 255);
  m.rateBytesPerSecond = s.int(m.rateBytesPerSecond, 0, SETTINGS_LIMITS.rateBytesPerSecond.max);
  const lag = s.int(LAG_COMPENSATION_BY_NUMBER.indexOf(m.lagCompensation), 0, 3);
  m.lagCompensation = LAG_COMPENSATION_BY_NUMBER[lag];
  m.kills = s.int(Math.min(m.kills, 65535), 0, 65535);
  m.deaths = s.int(Math.min(m.deaths, 65535), 0, 65535);
  return s.ok;
}

export function serializeKill(s: BitStream, m: KillMessage): boolean {
  m.killer = s.int(m.killer, -1, MAX_SLOT);
  m.victim = s.int(m.victim, 0, MAX_SLOT);
  m.weapon = s.int(m.weapon, -1, WEAPON_COUNT - 1);
  return s.ok;
}

export function serializeShotReport(s: BitStream, m: ShotReport): boolean {
  m.command = s.uint(m.command, 32);
  m.mode = MODES[s.int(MODES.indexOf(m.mode), 0, 2)];
  m.exact = s.bool(m.exact);
  m.count = s.int(m.count, 0, SHOT_REPORT_MAX_TARGETS);
  for (let i = 0; i < m.count && s.ok; i++) {
    m.entities[i] = s.int(m.entities[i], 0, 1023);
    for (let k = 0; k < 3; k++) {
      m.origins[i * 3 + k] = s.float(m.origins[i * 3 + k], -ORIGIN_LIMIT, ORIGIN_LIMIT, ORIGIN_PRECISION);
    }
    m.ducked[i] = s.bool(m.ducked[i] !== 0) ? 1 : 0;
  }
  return s.ok;
}
