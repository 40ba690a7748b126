// The WebSocket client endpoint (browser or Node), a PipeClientEndpoint (pipe-client.ts).
//
// On the wire each datagram is one binary WebSocket message carrying exactly its bytes:
//   +---------+--------------------------------------------------+
//   | message | binary, 1..MAX_PACKET_BYTES bytes: one datagram  |
//   +---------+--------------------------------------------------+
// A text message, or a binary one over MAX_PACKET_BYTES, is not a datagram: it is dropped and
// counted (the server closes the socket that sent it). The WebRTC client's data channel carries
// datagrams the same way, so both clients are a PipeClientEndpoint: one peer (the server), one
// pipe, the same send checks, inbound queue and counters.
//
// Browser-safe: no Node module is imported; the WebSocket constructor is the global one unless
// one is passed in (Node 20 has none: pass the `ws` package's WebSocket).

import {
  CLOSE_WAIT_MS,
  type MessagePipe,
  PipeClientEndpoint,
  type PipeClientOptions,
  type PipeClientSettings,
  pipeClientSettings,
} from './pipe-client.ts';

/** What a received message event carries: an ArrayBuffer for binary, a string for text. */
export interface SocketMessageEvent {
  readonly data: unknown;
}

/** What a close event carries. */
export interface SocketCloseEvent {
  readonly code: number;
}

/** The part of the WebSocket API this endpoint uses: the browser's and the `ws` package's both fit. */
export interface ClientWebSocket {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: (event: unknown) => void): void;
  addEventListener(type: 'message', listener: (event: SocketMessageEvent) => void): void;
  addEventListener(type: 'close', listener: (event: SocketCloseEvent) => void): void;
  addEventListener(type: 'error', listener: (event: unknown) => void): void;
}

/** A WebSocket constructor: the global one in a browser, `ws`'s WebSocket in Node. */
export type WebSocketConstructor = new (url: string) => ClientWebSocket;

/** The WebSocket readyState of an open socket. */
export const SOCKET_OPEN = 1;

export interface WebSocketClientOptions extends PipeClientOptions {
  /** The server's WebSocket URL, e.g. "ws://127.0.0.1:4000/ws". */
  url: string;
  /** Constructor to use instead of the global WebSocket. */
  WebSocket?: WebSocketConstructor;
}

/** The global WebSocket constructor, or an Error naming what is missing. */
export function globalWebSocket(): WebSocketConstructor {
  const ctor = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof ctor !== 'function') {
    throw new Error('WebSocket: no global WebSocket here; pass options.WebSocket (in Node: the ws package)');
  }
  return ctor;
}

/** A client endpoint over one WebSocket to a Backstep server. */
export class WebSocketClientEndpoint extends PipeClientEndpoint {
  /** The close code the socket ended with (0 while open). */
  closeCode = 0;
  private readonly socket: ClientWebSocket;
  private closedPromise: Promise<void> | null = null;
  private resolveClosed: () => void = () => {};
  private socketClosed = false;

  private constructor(socket: ClientWebSocket, settings: PipeClientSettings) {
    super(settings);
    this.socket = socket;
    socket.addEventListener('message', (event) => this.receive(event.data));
    socket.addEventListener('close', (event) => {
      this.socketClosed = true;
      this.closeCode = event.code;
      this.resolveClosed();
    });
  }

  /**
   * Opens a WebSocket to `options.url` and resolves with the endpoint once it is open; rejects
   * with an Error, once the socket is closed, if it fails, closes or times out first; or naming a
   * bad option, before opening anything.
   */
  static async connect(options: WebSocketClientOptions): Promise<WebSocketClientEndpoint> {
    const settings = pipeClientSettings('WebSocketClientEndpoint', options);
    const Ctor = options.WebSocket ?? globalWebSocket();
    const timeoutMs = settings.connectTimeoutMs;
    const socket = new Ctor(options.url);
    socket.binaryType = 'arraybuffer';
    const endpoint = new WebSocketClientEndpoint(socket, settings);
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const error = new Error(`WebSocket ${options.url}: ${why}`);
        void endpoint.close().then(() => reject(error));
      };
      const timer = setTimeout(() => fail(`not open after ${timeoutMs} ms`), timeoutMs);
      socket.addEventListener('open', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(endpoint);
      });
      socket.addEventListener('error', () => fail('connection failed'));
      socket.addEventListener('close', (event) => fail(`closed before opening (code ${event.code})`));
    });
  }

  get isOpen(): boolean {
    return this.open && !this.socketClosed;
  }

  /**
   * Closes the socket; resolves once it is closed (or CLOSE_WAIT_MS passed without the socket
   * saying so). Idempotent.
   */
  close(): Promise<void> {
    if (this.closedPromise !== null) return this.closedPromise;
    this.shut();
    this.closedPromise = new Promise<void>((resolve) => {
      if (this.socketClosed) {
        resolve();
        return;
      }
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      this.resolveClosed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    try {
      this.socket.close(1000, 'bye');
    } catch {
      this.socketClosed = true;
      this.resolveClosed();
    }
    return this.closedPromise;
  }

  protected openPipe(): MessagePipe | null {
    return this.socket.readyState === SOCKET_OPEN ? this.socket : null;
  }
}
