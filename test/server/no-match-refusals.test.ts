// "No such match" answers: one REFUSED packet per well-formed connect request, at most the
// allowance a second whatever the source addresses, nothing for anything else, and a malformed
// packet takes nothing from the allowance.

import { describe, expect, it } from 'vitest';
import { DEFAULT_PROTOCOL_ID } from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  PACKET_CONNECT_REQUEST,
  PACKET_REFUSED,
  REFUSE_NO_SUCH_MATCH,
  readHandshakePacket,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { type MemoryEndpoint, MemoryNetwork } from '../../src/net/transports/memory.ts';
import { NoMatchRefusals } from '../../src/server/matches.ts';

/** A server endpoint on a memory network with a client at "a:1" that collects what the server sends it. */
function rig(): { server: MemoryEndpoint; received: () => Uint8Array[] } {
  const network = new MemoryNetwork({ seed: 1 });
  const server = network.createEndpoint('server');
  const client = network.createEndpoint('a:1');
  const got: Uint8Array[] = [];
  return {
    server,
    received: () => {
      network.setTime(network.nowMs + 1000);
      client.poll(network.nowMs, (_from, data) => void got.push(data.slice()));
      return got;
    },
  };
}

function connectRequest(): Uint8Array {
  const p = createHandshakePacket();
  p.type = PACKET_CONNECT_REQUEST;
  p.clientNonce = 1234;
  return writeHandshakePacket(createHandshakeStream(), DEFAULT_PROTOCOL_ID, p).slice();
}

describe('NoMatchRefusals', () => {
  it('answers a connect request with REFUSE_NO_SUCH_MATCH', () => {
    const { server, received } = rig();
    const refusals = new NoMatchRefusals(server, DEFAULT_PROTOCOL_ID, 10);
    refusals.answer('a:1', connectRequest(), 0);
    const got = received();
    expect(got.length).toBe(1);
    const p = createHandshakePacket();
    expect(readHandshakePacket(createHandshakeStream(), DEFAULT_PROTOCOL_ID, got[0], p)).toBe('');
    expect(p.type).toBe(PACKET_REFUSED);
    expect(p.reason).toBe(REFUSE_NO_SUCH_MATCH);
  });

  it('sends at most its allowance a second from any number of addresses', () => {
    const { server } = rig();
    const refusals = new NoMatchRefusals(server, DEFAULT_PROTOCOL_ID, 50);
    const request = connectRequest();
    // 10,000 requests from 10,000 addresses over 2 s: a burst of 50, then 50 a second.
    for (let i = 0; i < 10_000; i++)
      refusals.answer(`10.0.${i >> 8}.${i & 255}:9`, request, (i * 2000) / 10_000);
    expect(refusals.sent).toBeGreaterThanOrEqual(140);
    expect(refusals.sent).toBeLessThanOrEqual(151);
  });

  it('answers nothing else, and what it does not answer costs no allowance', () => {
    const { server, received } = rig();
    const refusals = new NoMatchRefusals(server, DEFAULT_PROTOCOL_ID, 1);
    const request = connectRequest();
    const corrupt = request.slice();
    corrupt[corrupt.length - 1] ^= 0xff;
    const otherType = request.slice();
    otherType[0] = PACKET_REFUSED;
    for (const bad of [corrupt, otherType, new Uint8Array(0), new Uint8Array([PACKET_CONNECT_REQUEST])]) {
      refusals.answer('a:1', bad, 0);
    }
    expect(refusals.sent).toBe(0);
    refusals.answer('a:1', request, 0);
    refusals.answer('a:1', request, 10);
    expect(refusals.sent).toBe(1);
    expect(received().length).toBe(1);
  });
});
