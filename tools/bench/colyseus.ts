// The bandwidth scene replayed through @colyseus/schema (v5): a MapSchema of players whose fields
// are set from the values Backstep's server committed, encoded as Colyseus patches at the same
// rate. Colyseus encodes the changes since the previous patch once and sends every client the
// same bytes over a reliable, ordered WebSocket.

import { Encoder, schema, t } from '@colyseus/schema';
import { ARENA_LEVEL } from '../../games/arena/shared/level.ts';
import { type PlayerRecording, RECORDED_FIELDS } from './scene.ts';

/** The player fields as a Colyseus user declares them; the number type is the variant's. */
interface PlayerFields {
  x: number;
  y: number;
  z: number;
  yaw: number;
  pitch: number;
  ducked: boolean;
}

const NumberPlayer = schema(
  { x: t.number(), y: t.number(), z: t.number(), yaw: t.number(), pitch: t.number(), ducked: t.boolean() },
  'NumberPlayer',
);
const NumberState = schema({ players: t.map(NumberPlayer) }, 'NumberState');

const Float32Player = schema(
  {
    x: t.float32(),
    y: t.float32(),
    z: t.float32(),
    yaw: t.float32(),
    pitch: t.float32(),
    ducked: t.boolean(),
  },
  'Float32Player',
);
const Float32State = schema({ players: t.map(Float32Player) }, 'Float32State');

// The careful declaration: positions on 32 bits over the level's bounds (finer than Backstep's
// 1/32 unit), yaw as a 16-bit wrapping angle, pitch clamped to [-90, 90] degrees on 16 bits.
const LEVEL = ARENA_LEVEL;
const QuantizedPlayer = schema(
  {
    x: t.quantized({ min: LEVEL.mins.x, max: LEVEL.maxs.x, bits: 32 }),
    y: t.quantized({ min: LEVEL.mins.y, max: LEVEL.maxs.y, bits: 32 }),
    z: t.quantized({ min: LEVEL.mins.z, max: LEVEL.maxs.z, bits: 32 }),
    yaw: t.angle(),
    pitch: t.quantized({ min: -90, max: 90, bits: 16 }),
    ducked: t.boolean(),
  },
  'QuantizedPlayer',
);
const QuantizedState = schema({ players: t.map(QuantizedPlayer) }, 'QuantizedState');

/** Which Colyseus types the position and angle fields use ('quantized': t.quantized and t.angle). */
export type ColyseusNumberType = 'number' | 'float32' | 'quantized';

export const COLYSEUS_NUMBER_TYPES: readonly ColyseusNumberType[] = ['number', 'float32', 'quantized'];

/** Degrees in [0, 360) to radians in [0, 2π): what t.angle() takes. */
const RADIANS = Math.PI / 180;
/** Backstep's pitch, degrees in [0, 360), as the signed pitch a Colyseus user keeps in [-90, 90]. */
function signedPitch(deg: number): number {
  return deg > 180 ? deg - 360 : deg;
}

interface ColyseusRoom {
  encoder: Encoder;
  /** Adds a player under `key` and returns it. */
  add(key: string): PlayerFields;
}

function createRoom(kind: ColyseusNumberType): ColyseusRoom {
  if (kind === 'quantized') {
    const state = new QuantizedState();
    return {
      encoder: new Encoder(state),
      add(key) {
        const p = new QuantizedPlayer();
        state.players.set(key, p);
        return p;
      },
    };
  }
  if (kind === 'number') {
    const state = new NumberState();
    return {
      encoder: new Encoder(state),
      add(key) {
        const p = new NumberPlayer();
        state.players.set(key, p);
        return p;
      },
    };
  }
  const state = new Float32State();
  return {
    encoder: new Encoder(state),
    add(key) {
      const p = new Float32Player();
      state.players.set(key, p);
      return p;
    },
  };
}

/** A Colyseus session id: 9 characters, as the server's generator makes them. */
function sessionId(i: number): string {
  return `s${i.toString(36).padStart(8, '0')}`;
}

export interface ColyseusResult {
  type: ColyseusNumberType;
  /** Bytes of the full state a joining client receives (encodeAll), before any patch. */
  fullStateBytes: number;
  /** Patches sent (an encode with no changes sends nothing) and their encoded bytes. */
  patches: number;
  patchBytes: number;
  /** Patch bytes as framed on the wire: + 1 byte ROOM_STATE_PATCH + the WebSocket frame header. */
  wireBytes: number;
  /** Player entries that changed in some field, summed over the patches. */
  changedEntities: number;
  /** Largest single patch, bytes. */
  largestPatchBytes: number;
}

/** Server-to-client WebSocket frame header (unmasked): 2 bytes up to 125, 4 up to 65535, else 10. */
export function webSocketHeaderBytes(payloadBytes: number): number {
  if (payloadBytes <= 125) return 2;
  return payloadBytes <= 0xffff ? 4 : 10;
}

/**
 * Replays `rec` through a Colyseus room: frame 0 is the state a client joins with (encodeAll),
 * every later frame sets each player's fields (Colyseus itself skips assignments of an equal
 * value) and encodes one patch, as the room's patch interval does, then discards the changes.
 */
export function encodeRecording(rec: PlayerRecording, kind: ColyseusNumberType): ColyseusResult {
  const width = RECORDED_FIELDS.length;
  const room = createRoom(kind);
  const quantized = kind === 'quantized';
  const players: PlayerFields[] = [];
  for (let p = 0; p < rec.players; p++) players.push(room.add(sessionId(p)));
  const v = rec.values;
  const apply = (frame: number) => {
    for (let p = 0; p < rec.players; p++) {
      const o = (frame * rec.players + p) * width;
      const player = players[p];
      player.x = v[o];
      player.y = v[o + 1];
      player.z = v[o + 2];
      player.yaw = quantized ? v[o + 3] * RADIANS : v[o + 3];
      player.pitch = quantized ? signedPitch(v[o + 4]) : v[o + 4];
      player.ducked = v[o + 5] !== 0;
    }
  };
  const result: ColyseusResult = {
    type: kind,
    fullStateBytes: 0,
    patches: 0,
    patchBytes: 0,
    wireBytes: 0,
    changedEntities: 0,
    largestPatchBytes: 0,
  };
  if (rec.frames === 0) return result;
  apply(0);
  result.fullStateBytes = room.encoder.encodeAll().length;
  room.encoder.discardChanges();
  for (let frame = 1; frame < rec.frames; frame++) {
    apply(frame);
    for (let p = 0; p < rec.players; p++) {
      const a = ((frame - 1) * rec.players + p) * width;
      const b = (frame * rec.players + p) * width;
      for (let k = 0; k < width; k++) {
        if (v[a + k] !== v[b + k]) {
          result.changedEntities++;
          break;
        }
      }
    }
    if (!room.encoder.hasChanges) continue;
    const bytes = room.encoder.encode().length;
    room.encoder.discardChanges();
    result.patches++;
    result.patchBytes += bytes;
    result.wireBytes += bytes + 1 + webSocketHeaderBytes(bytes + 1);
    if (bytes > result.largestPatchBytes) result.largestPatchBytes = bytes;
  }
  return result;
}

/** Makes Colyseus' shared encode buffer big enough for `players` up front (it warns when it grows). */
export function sizeColyseusBuffer(players: number): void {
  const needed = 64 * 1024 + players * 64;
  if (Encoder.BUFFER_SIZE < needed) Encoder.BUFFER_SIZE = needed;
}
