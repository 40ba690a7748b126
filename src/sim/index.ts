// The sim entry point (browser-safe): the game definition a game plugs in through, deterministic math, seeded randomness, sequence rings and the remote-entity blend.

export { blendEntity, drawEntity } from './blend.ts';
export {
  type GameDefinition,
  type GameEventSink,
  gameSchemaHash,
  type HitscanDefinition,
  NO_EVENTS,
  type PlayerDefinition,
  type TraceResult,
  type TraceWorld,
} from './game.ts';
export {
  angleDelta,
  angleVectors,
  clamp,
  copyVec3,
  dcos,
  dot,
  dsin,
  length,
  lerp,
  lerpAngle,
  type Vec3,
  vec3,
  wrapDegrees180,
} from './math.ts';
export { Random, sharedRandom, sharedRandomRange } from './random.ts';
export { SequenceBuffer } from './ring.ts';
