// A TypeScript consumer of the public types: a game definition, a server and a client, the Node
// transports and the connect tokens.
import { createServer } from 'node:http';
import { GameClient, type InputSample } from 'backstep/client';
import { MemoryNetwork } from 'backstep/net';
import {
  type ConnectedEndpoint,
  connectNode,
  listen,
  type MultiTransportServer,
  nodeCipher,
  type PacketCipher,
  routeUpgrades,
  WebRtcServerEndpoint,
  WebSocketServerEndpoint,
} from 'backstep/node';
import {
  type BitStream,
  defineEntityType,
  defineGameSchema,
  type FieldTable,
  type UserCommand,
} from 'backstep/protocol';
import { GameServer, type ServerHooks } from 'backstep/server';
import type { GameDefinition, Vec3 } from 'backstep/sim';
import { type InputDriver, Match } from 'backstep/testing';
import { type ConnectToken, decodeConnectToken, encodeConnectToken, issueConnectToken } from 'backstep/token';

interface Dot {
  x: number;
  y: number;
}
const coordinate = { kind: 'float', min: -1024, max: 1024, precision: 1 / 16 } as const;
const DOT = defineEntityType<Dot>('dot', { x: coordinate, y: coordinate } satisfies FieldTable<Dot>);

const game: GameDefinition<Dot, object> = {
  name: 'dots',
  player: {
    create: () => ({ x: 0, y: 0 }),
    copy: (out: Dot, from: Dot) => Object.assign(out, from),
    move: (state: Dot, cmd: UserCommand) => {
      state.x += cmd.forwardMove * cmd.msec * 1e-4;
    },
    serialize: (s: BitStream, state: Dot) => {
      state.x = s.float(state.x, -1024, 1024, 1 / 16);
      state.y = s.float(state.y, -1024, 1024, 1 / 16);
      return s.ok;
    },
    equals: (a: Dot, b: Dot) => a.x === b.x && a.y === b.y,
    copyClientOnly: () => {},
    origin: (state: Dot, out: Vec3) => {
      out.x = state.x;
      out.y = state.y;
      out.z = 0;
      return out;
    },
  },
  createWorld: () => ({}),
  spawn: () => {},
  entities: defineGameSchema([DOT]),
  input: { buttons: 0, maxImpulse: 0 },
  playerEntity: { typeId: 0, write: (state: Dot, out: Float64Array) => void out.set([state.x, state.y]) },
};

const hooks: ServerHooks<Dot, object> = {
  onConnect: (_server, client) => {
    void client.slot;
    // @ts-expect-error the per-client frame scheduling is internal
    void client.pacing;
  },
};
const network = new MemoryNetwork({ seed: 1 });
const server = new GameServer(game, network.createEndpoint('server'), { tickRate: 64 }, hooks);
const client = new GameClient(game, network.createEndpoint('client'), 'server');
const input: InputSample = {
  pitch: 0,
  yaw: 0,
  roll: 0,
  forwardMove: 1,
  sideMove: 0,
  upMove: 0,
  buttons: 0,
  impulse: 0,
};
client.update(0, input);
server.update(0);
// @ts-expect-error the public types catch a wrong argument
server.update('soon');
export const slot: number = client.slot;

const still: InputDriver<Dot, object> = (_client, _nowMs, sample) => {
  sample.forwardMove = 0;
};
const match = new Match(game, 1);
match.addClient({ drive: still });
match.run(100);
// @ts-expect-error a driver takes the game's client, not a number
match.addClient({ drive: (n: number) => n });

// The Node transports: typed without any of their dependencies' type packages installed.
export async function serve(): Promise<MultiTransportServer> {
  const multi = await listen({ port: 0 });
  const gameServer = new GameServer(game, multi, { tickRate: 64 });
  gameServer.update(0);
  const endpoint: ConnectedEndpoint = await connectNode(`ws://127.0.0.1:${multi.port}`, {
    connectTimeoutMs: 1000,
  });
  const cipher: (key: Uint8Array) => PacketCipher = nodeCipher;
  new GameClient(game, endpoint, endpoint.serverAddress, { packetCipher: cipher });
  const websocket = new WebSocketServerEndpoint({ path: '/game' });
  const webrtc = new WebRtcServerEndpoint({ path: '/signal' });
  const stop = routeUpgrades(createServer(), [websocket, webrtc]);
  stop();
  const sent: number = websocket.stats.packetsSent + webrtc.stats.packetsSent;
  void sent;
  return multi;
}

// Connect tokens, as a backend issues them and a client reads them.
const issued: ConnectToken = issueConnectToken({
  key: new Uint8Array(32),
  userId: 'player-1',
  servers: ['eu-1'],
  nowMs: Date.now(),
});
export const reread: ConnectToken | null = decodeConnectToken(encodeConnectToken(issued));
