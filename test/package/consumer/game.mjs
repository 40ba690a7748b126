// A minimal game in plain JavaScript against the installed package: a dot on a plane that walks
// where its commands say. Shared by the Node smoke script (no TypeScript loader anywhere).
import { defineEntityType, defineGameSchema, quantize } from 'backstep/protocol';

const coordinate = { kind: 'float', min: -1024, max: 1024, precision: 1 / 16 };
export const DOT = defineEntityType('dot', { x: coordinate, y: coordinate });
const schema = defineGameSchema([DOT], { maxEntities: 64 });

/** Moves `state` by the command: 100 units per second along forward and side. */
function move(state, cmd) {
  state.x = quantize(state.x + (cmd.forwardMove * cmd.msec) / 10_000, -1024, 1024, 1 / 16);
  state.y = quantize(state.y + (cmd.sideMove * cmd.msec) / 10_000, -1024, 1024, 1 / 16);
}

export const dotGame = {
  name: 'dots',
  player: {
    create: () => ({ x: 0, y: 0 }),
    copy: (out, from) => {
      out.x = from.x;
      out.y = from.y;
    },
    move,
    serialize: (s, state) => {
      state.x = s.float(state.x, -1024, 1024, 1 / 16);
      state.y = s.float(state.y, -1024, 1024, 1 / 16);
      return s.ok;
    },
    equals: (a, b) => a.x === b.x && a.y === b.y,
    copyClientOnly: () => {},
    origin: (state, out) => {
      out.x = state.x;
      out.y = state.y;
      out.z = 0;
      return out;
    },
  },
  createWorld: () => ({}),
  spawn: (state, _world, index) => {
    state.x = index * 10;
    state.y = 0;
  },
  entities: schema,
  input: { buttons: 0, maxImpulse: 0 },
  playerEntity: {
    typeId: 0,
    write: (state, out) => {
      out[DOT.index.x] = state.x;
      out[DOT.index.y] = state.y;
    },
  },
};
