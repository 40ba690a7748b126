// The sim entry point (browser-safe): the game definition a game plugs in through, deterministic math, seeded randomness, sequence rings, the remote-entity blend and the view acceptance rule.

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
  dsinCos,
  dsinCosInPlace,
  length,
  lerp,
  lerpAngle,
  type Vec3,
  vec3,
  wrapDegrees180,
} from './math.ts';
export { Random, sharedRandom, sharedRandomRange } from './random.ts';
export { SequenceBuffer } from './ring.ts';
export {
  checkViewAcceptanceLimits,
  DEFAULT_VIEW_ACCEPTANCE_LIMITS,
  judgeView,
  namedViewTick,
  VIEW_BEYOND_UNLAG,
  VIEW_HONOURED,
  VIEW_NONE,
  VIEW_NOT_RECEIVED,
  VIEW_OLDER_THAN_DELAY,
  VIEW_VERDICT_NAMES,
  type ViewAcceptanceLimits,
  type ViewVerdict,
} from './view-acceptance.ts';
