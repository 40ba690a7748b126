// The client entry point (browser-safe): the game client and its parts (prediction, server clock, snapshot reader, remote view, interpolation delay, net_graph figures and packet history) and the demo player and the spectator client.

export type { PacketCipher } from '../net/packet-crypto.ts';
export {
  type ClientConfig,
  type ClientHooks,
  type ClientState,
  type ClientStats,
  createInputSample,
  DEFAULT_CLIENT_CONFIG,
  GameClient,
  type InputSample,
  type ResumeToken,
} from './client.ts';
export { DEFAULT_SERVER_CLOCK_CONFIG, ServerClock, type ServerClockConfig } from './clock.ts';
export {
  AdaptiveDelay,
  type AdaptiveDelayConfig,
  DEFAULT_ADAPTIVE_DELAY_CONFIG,
  defaultInterpolationDelayMs,
} from './delay.ts';
export {
  type DemoKillcam,
  DemoPlayer,
  type DemoTick,
  decodeKillcam,
  drawKillcamFrame,
} from './demo-player.ts';
export { createNetGraphFigures, NetGraph, type NetGraphFigures } from './net-graph.ts';
export { PACKET_IN, PACKET_OUT, PacketHistory } from './packet-history.ts';
export {
  DEFAULT_PREDICTION_CONFIG,
  type PredictionConfig,
  type PredictionStats,
  Predictor,
} from './prediction.ts';
export {
  type DecodedFrame,
  SnapshotReader,
  type SnapshotReaderStats,
} from './snapshot-reader.ts';
export {
  DEFAULT_SPECTATOR_CLIENT_CONFIG,
  SpectatorClient,
  type SpectatorClientConfig,
  type SpectatorClientHooks,
  type SpectatorClientStats,
  type SpectatorGame,
} from './spectator.ts';
export {
  DEFAULT_REMOTE_VIEW_CONFIG,
  RemoteView,
  type RemoteViewConfig,
  type RemoteViewStats,
  VIEW_EMPTY,
  VIEW_EXTRAPOLATED,
  VIEW_HELD,
  VIEW_INTERPOLATED,
  type ViewMode,
} from './view.ts';
