// The server entry point (Node): the game server and its parts (entity store with history, per-client snapshot writer, command queue with time budget, interest grid).

export type { RateControllerConfig } from '../net/rate-control.ts';
export {
  type ConnectionHandler,
  type ConnectionStats,
  ServerConnection,
  ServerConnections,
  type ServerConnectionsConfig,
  type TrafficStats,
} from '../net/server-connections.ts';
export type { FrameBits } from './client-frames.ts';
export { type CommandBudgetConfig, CommandQueue, type CommandStats } from './commands.ts';
export {
  DEFAULT_ENTITY_STORE_CONFIG,
  EntityStore,
  type EntityStoreConfig,
  type HistorySlot,
} from './entities.ts';
export type { EventCapture, EventLog } from './events.ts';
export { combineHooks, type ServerHooks } from './hooks.ts';
export { DEFAULT_INTEREST_CONFIG, type InterestConfig, type InterestGrid } from './interest.ts';
export {
  DEFAULT_KILLCAM_CONFIG,
  type KillcamConfig,
  KillcamRecorder,
  type KillcamStats,
} from './killcam.ts';
export {
  DEFAULT_LAG_COMPENSATION_CONFIG,
  LAG_COMPENSATION_MODES,
  type LagCompensationConfig,
  type LagCompensationMode,
  type LagCompensationStats,
  type LagCompensator,
  type RewindReport,
  VIEW_FRAMES_NOT_SENT,
  VIEW_OUTCOME_NAMES,
  VIEW_PAST_UNLAG_SERVER_TIME,
  type ViewOutcome,
} from './lag-compensation.ts';
export {
  type HostedMatch,
  type MatchEnded,
  MatchEndpoint,
  MatchHost,
  type MatchHostOptions,
  MatchRouter,
  type MatchRouterOptions,
  type MatchRouterStats,
  type MatchSpec,
} from './matches.ts';
export { NamedView, NamedViewBuilder } from './named-view.ts';
export { PlayerData } from './player-data.ts';
export {
  DEFAULT_DEMO_RECORDER_CONFIG,
  DemoRecorder,
  type DemoRecorderConfig,
  type DemoRecorderStats,
  type DemoSink,
} from './recorder.ts';
export {
  DEFAULT_SERVER_CONFIG,
  type EntityValues,
  GameServer,
  MAX_MESSAGES_PER_TICK,
  type ServerClient,
  type ServerConfig,
  type ServerStats,
  WORLD_EVENT_SOURCE,
} from './server.ts';
export { type SnapshotCacheStats, SnapshotEncodeCache } from './snapshot-cache.ts';
export {
  DEFAULT_SNAPSHOT_WRITER_CONFIG,
  SnapshotWriter,
  type SnapshotWriterConfig,
  type SnapshotWriterStats,
} from './snapshot-writer.ts';
export {
  DEFAULT_SPECTATOR_CONFIG,
  type SpectatorConfig,
  type SpectatorHub,
  type SpectatorStream,
  type SpectatorStreamStats,
} from './spectators.ts';
