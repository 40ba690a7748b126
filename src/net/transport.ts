// The datagram transport interface every Backstep transport implements (memory, udp, webrtc,
// websocket): unreliable, unordered datagrams of at most MAX_PACKET_BYTES, polled with time in.

/** Largest datagram Backstep sends: fits a 1280-byte IPv6 MTU with room for UDP/IP headers. */
export const MAX_PACKET_BYTES = 1200;

/** Called once per datagram. `data` is only valid during the call: copy what you keep. */
export type PacketHandler = (from: string, data: Uint8Array) => void;

/**
 * One endpoint of a datagram transport. Addresses are opaque strings ("127.0.0.1:4000",
 * "mem:2"). Sending never throws for network reasons: a datagram may be lost, duplicated or
 * reordered, and one over MAX_PACKET_BYTES is dropped and counted.
 */
export interface DatagramEndpoint {
  readonly address: string;
  /** Queues one datagram to `to`. The bytes are copied before this returns. */
  send(to: string, data: Uint8Array): void;
  /** Delivers, in arrival order, every datagram that has arrived by `nowMs`. */
  poll(nowMs: number, onPacket: PacketHandler): void;
  /**
   * Stops sending and receiving and releases the endpoint's resources. An endpoint over real
   * sockets returns a Promise that resolves when every socket is closed; await it before exiting.
   */
  close(): void | Promise<void>;
  /**
   * The network host behind `address` ("udp:203.0.113.9", "ws:203.0.113.9"), for bans and
   * per-host limits; null when unknown. Transports whose addresses carry no host (ws:N, rtc:N)
   * implement it.
   */
  hostOf?(address: string): string | null;
  /** The server is done with `address`: a connection-based transport closes its link now. */
  drop?(address: string): void;
  /**
   * The server took the client at `address` as a connection (its handshake completed): a
   * connection-based transport no longer counts its link among those still to prove themselves
   * (see LinkServerOptions.establishTimeoutMs). An endpoint that wraps another forwards it, as it
   * forwards hostOf and drop: else the WebSocket and WebRTC links under it are closed after
   * establishTimeoutMs.
   */
  established?(address: string): void;
}
