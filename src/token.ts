// The connect token entry point (browser-safe, no Node modules): what a game's web backend needs
// to issue tokens (issueConnectToken, encodeConnectToken), what a client needs to read one
// (decodeConnectToken), and what a server opens them with. See SPEC.md section 5.2.

export {
  CONNECT_TOKEN_KEY_BYTES,
  type ConnectToken,
  type ConnectTokenOptions,
  type ConnectTokenRefusal,
  type ConnectTokensConfig,
  DEFAULT_TOKEN_LIFETIME_MS,
  decodeConnectToken,
  encodeConnectToken,
  issueConnectToken,
  MAX_CONNECT_TOKEN_BYTES,
  type OpenedConnectToken,
  openConnectToken,
} from './net/connect-token.ts';
