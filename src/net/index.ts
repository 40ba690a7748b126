// The net entry point (browser-safe): the packet channel, the connection lifecycle's codes, the datagram transport interface, the in-process memory network and its conditioner profiles. Node transports are in src/node.ts.

export {
  type ChannelStats,
  DEFAULT_CHANNEL_CONFIG,
  DEFAULT_PROTOCOL_ID,
  DEFAULT_PROTOCOL_VERSION,
  DROP_REASONS as CHANNEL_DROP_REASONS,
  type DropReason as ChannelDropReason,
  MIN_PACKET_BYTES,
  PACKET_HEADER_BYTES,
  PacketChannel,
  type PacketChannelConfig,
  PacketType,
  type PacketTypeValue,
  RELIABLE_MESSAGE_BYTES_LIMIT,
} from './channel.ts';
export {
  ClientConnection,
  type ClientConnectionConfig,
  type ClientConnectionHandler,
  type ConnectionState,
} from './client-connection.ts';
export {
  type DropReason as LinkDropReason,
  LinkConditioner,
  type LinkConditionerOptions,
  type LinkStats,
  type LinkVerdict,
  WIRE_OVERHEAD_BYTES,
} from './conditioner.ts';
export {
  type ConnectToken,
  type ConnectTokensConfig,
  decodeConnectToken,
  encodeConnectToken,
  issueConnectToken,
} from './connect-token.ts';
export {
  DISCONNECT_CLIENT_LEFT,
  DISCONNECT_KICKED,
  DISCONNECT_MATCH_ENDED,
  DISCONNECT_MATCH_FAILED,
  DISCONNECT_SERVER_SHUTDOWN,
  DISCONNECT_TIMED_OUT,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE,
  PACKET_CHALLENGE_RESPONSE,
  PACKET_CONNECT_REQUEST,
  PACKET_DISCONNECT,
  PACKET_REFUSED,
  PACKET_SERVER_DISCONNECT,
  REASON_NAMES,
  REFUSE_BANNED,
  REFUSE_NO_SPECTATORS,
  REFUSE_NO_SUCH_MATCH,
  REFUSE_SERVER_FULL,
  REFUSE_TOKEN_EXPIRED,
  REFUSE_TOKEN_INVALID,
  REFUSE_WRONG_SCHEMA,
  REFUSE_WRONG_VERSION,
  REQUEST_BYTES,
  reasonName,
} from './handshake.ts';
export {
  checkMatchId,
  MATCH_ROUTE_HEADER_BYTES,
  MATCH_ROUTE_TYPE,
  MAX_MATCH_ID,
  MatchClientEndpoint,
  readMatchRoute,
  writeMatchRoute,
} from './match-route.ts';
export type { PacketCipher, PacketKeys } from './packet-crypto.ts';
export {
  type BurstLoss,
  type ConditionOverrides,
  conditionsAt,
  createLinkConditions,
  DEFAULT_CONDITIONS,
  type Direction,
  type LinkConditions,
  NAMED_PROFILES,
  type NetworkProfile,
  type ProfileEvent,
  parseProfile,
  profileByName,
  type ResolvedConditions,
} from './profile.ts';
export { RELIABLE_MAX_PER_PACKET, RELIABLE_WINDOW } from './reliable.ts';
export {
  checkLinkShape,
  isPerfectLink,
  LINK_SHAPE_LIMITS,
  type LinkShape,
  ShapedEndpoint,
} from './shaped-endpoint.ts';
export { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from './transport.ts';
export {
  type MemoryEndpoint,
  type MemoryEndpointStats,
  MemoryNetwork,
  type MemoryNetworkOptions,
} from './transports/memory.ts';
