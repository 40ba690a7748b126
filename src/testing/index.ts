// The testing entry point (Node): what Backstep's own tests use, for any game: a match of a server and clients on simulated time over the network conditioner, a conditioner in front of any endpoint, input drivers for bots, and the shot ledger that compares each client's hit verdicts with the server's.

export {
  aimAngles,
  type BotButton,
  DEFAULT_WANDER_BOT,
  nearestEntity,
  type WanderBotOptions,
  wanderBot,
} from './bots.ts';
export { ConditionedEndpoint } from './conditioned-endpoint.ts';
export {
  type AddClientOptions,
  type InputDriver,
  Match,
  type MatchClient,
  type MatchOptions,
} from './match.ts';
export {
  type PendingShotRecord,
  type RayVerdict,
  type ReadRayVerdict,
  type ShotAgreement,
  ShotLedger,
  type ShotLedgerOptions,
} from './shots.ts';
