// The WebRTC transport on 127.0.0.1: node-datachannel on the server, the browser-safe client endpoint given node-datachannel's polyfill, and hostile signalling.

import http from 'node:http';
import { RTCPeerConnection } from 'node-datachannel/polyfill';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import {
  candidateAddress,
  encodeSignal,
  filterSdpCandidates,
  MAX_SIGNAL_BYTES,
  parseSignal,
} from '../../../src/net/transports/signalling.ts';
import { WebRtcServerEndpoint, type WebRtcServerOptions } from '../../../src/net/transports/webrtc.ts';
import {
  DATA_CHANNEL_LABEL,
  DATA_CHANNEL_OPTIONS,
  WebRtcClientEndpoint,
} from '../../../src/net/transports/webrtc-client.ts';
import { routeUpgrades } from '../../../src/net/transports/websocket.ts';
import { closeWebRtc } from '../../../src/node.ts';

const SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

describe('signalling messages', () => {
  it('accepts exactly the three message shapes', () => {
    expect(parseSignal(encodeSignal({ type: 'offer', sdp: SDP }))).toEqual({
      ok: true,
      message: { type: 'offer', sdp: SDP },
    });
    expect(parseSignal('{"type":"answer","sdp":"v=0\\r\\n"}').ok).toBe(true);
    const candidate = 'candidate:1 1 UDP 2122317823 127.0.0.1 5000 typ host';
    expect(parseSignal(JSON.stringify({ type: 'candidate', candidate, mid: '0' }))).toEqual({
      ok: true,
      message: { type: 'candidate', candidate, mid: '0' },
    });
  });

  it('refuses every malformed message without throwing', () => {
    const bad: unknown[] = [
      null,
      42,
      '',
      'not json',
      '[]',
      'null',
      '"offer"',
      '{}',
      '{"type":"offer"}',
      '{"type":"offer","sdp":5}',
      '{"type":"offer","sdp":""}',
      '{"type":"offer","sdp":"x=0"}',
      '{"type":"offer","sdp":"v=0","extra":1}',
      '{"type":"offer","sdp":"v=0\\u0000"}',
      '{"type":"offer","sdp":"v=0\\u00e9"}',
      '{"type":"hello","sdp":"v=0"}',
      '{"type":"candidate","candidate":"candidate:1","mid":0}',
      '{"type":"candidate","candidate":"x","mid":"0"}',
      '{"type":"candidate","candidate":"candidate:1\\r\\na=x","mid":"0"}',
      '{"type":"candidate","candidate":"candidate:1","mid":"0 1"}',
      '{"type":"candidate","candidate":"candidate:1","mid":"01234567890123456"}',
      '{"type":"candidate","candidate":"candidate:1"}',
      JSON.stringify({ type: 'offer', sdp: `v=0${'a'.repeat(MAX_SIGNAL_BYTES)}` }),
      JSON.stringify({ type: 'candidate', candidate: `candidate:${'1'.repeat(600)}`, mid: '0' }),
      '{"type":"offer","sdp":"v=0","__proto__":{"x":1}}',
    ];
    for (const text of bad) {
      const parsed = parseSignal(text);
      expect(parsed.ok, String(text).slice(0, 80)).toBe(false);
    }
    expect(() => encodeSignal({ type: 'offer', sdp: 'nope' })).toThrow(/sdp/);
  });

  it('reads candidate addresses and filters SDP candidate lines', () => {
    expect(candidateAddress('candidate:1 1 UDP 2122317823 127.0.0.1 5000 typ host')).toBe('127.0.0.1');
    expect(candidateAddress('a=candidate:1 1 UDP 2122317823 192.0.2.2 5000 typ host')).toBe('192.0.2.2');
    expect(candidateAddress('candidate:1 1 UDP')).toBe('');
    const sdp = `${SDP}a=candidate:1 1 UDP 1 127.0.0.1 5000 typ host\r\na=candidate:2 1 UDP 1 192.0.2.2 5001 typ host\r\n`;
    const kept = filterSdpCandidates(sdp, ['127.0.0.1']);
    expect(kept).toContain('127.0.0.1 5000');
    expect(kept).not.toContain('192.0.2.2');
    expect(filterSdpCandidates(sdp, null)).toBe(sdp);
  });
});

interface Setup {
  server: WebRtcServerEndpoint;
  url: string;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

async function setup(options: WebRtcServerOptions = {}): Promise<Setup> {
  const httpServer = http.createServer((_req, res) => {
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const server = new WebRtcServerEndpoint({
    bindAddress: '127.0.0.1',
    allowedCandidateAddresses: ['127.0.0.1'],
    ...options,
  });
  const detach = routeUpgrades(httpServer, [server]);
  const address = httpServer.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  cleanups.push(async () => {
    detach();
    await server.close();
    await new Promise<void>((r) => {
      httpServer.close(() => r());
      httpServer.closeAllConnections();
    });
  });
  return { server, url: `ws://127.0.0.1:${port}/rtc` };
}

async function connect(url: string): Promise<WebRtcClientEndpoint> {
  const client = await WebRtcClientEndpoint.connect({
    signallingUrl: url,
    RTCPeerConnection,
    WebSocket,
    rtcConfig: { iceServers: [], bindAddress: '127.0.0.1' } as RTCConfiguration,
    allowedCandidateAddresses: ['127.0.0.1'],
  });
  cleanups.push(() => client.close());
  return client;
}

interface Received {
  from: string;
  data: Uint8Array;
}

interface Pollable {
  poll(nowMs: number, onPacket: (from: string, data: Uint8Array) => void): void;
}

async function receive(endpoint: Pollable, count: number, timeoutMs = 5000): Promise<Received[]> {
  const got: Received[] = [];
  const start = performance.now();
  while (got.length < count && performance.now() - start < timeoutMs) {
    endpoint.poll(performance.now(), (from, data) => got.push({ from, data: data.slice() }));
    if (got.length < count) await new Promise((r) => setTimeout(r, 5));
  }
  return got;
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<boolean> {
  const start = performance.now();
  while (!condition() && performance.now() - start < timeoutMs) await new Promise((r) => setTimeout(r, 5));
  return condition();
}

/** A signalling socket driven by hand; resolves with it once open, and a promise of its close code. */
async function rawSignal(url: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(url);
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  cleanups.push(async () => {
    ws.terminate();
    await closed;
  });
  return { ws, closed };
}

/**
 * A client that signals by hand (so it can also send what the endpoint never would): returns
 * its open data channel. `extraCandidates` are sent to the server after the offer.
 */
async function rawClient(url: string, extraCandidates: string[] = []) {
  const { ws } = await rawSignal(url);
  const pc = new RTCPeerConnection({ iceServers: [], bindAddress: '127.0.0.1' } as RTCConfiguration);
  const channel = pc.createDataChannel(DATA_CHANNEL_LABEL, DATA_CHANNEL_OPTIONS);
  channel.binaryType = 'arraybuffer';
  cleanups.push(async () => {
    channel.close();
    pc.close();
    await until(() => pc.connectionState === 'closed', 3000);
  });
  // Like the endpoint, send this side's candidates only once the answer is set (see webrtc-client.ts).
  const local: string[] = [];
  let answered = false;
  const sendCandidate = (candidate: string) =>
    ws.send(encodeSignal({ type: 'candidate', candidate, mid: '0' }));
  pc.onicecandidate = (e) => {
    const candidate = e.candidate?.candidate;
    if (!candidate) return;
    if (answered) sendCandidate(candidate);
    else local.push(candidate);
  };
  ws.on('message', (data) => {
    const parsed = parseSignal(data.toString());
    if (!parsed.ok) return;
    const m = parsed.message;
    if (m.type === 'answer') {
      void pc.setRemoteDescription({ type: 'answer', sdp: m.sdp }).then(() => {
        answered = true;
        for (const candidate of local) sendCandidate(candidate);
      });
    } else if (m.type === 'candidate') {
      void pc.addIceCandidate({ candidate: m.candidate, sdpMid: m.mid });
    }
  });
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  ws.send(encodeSignal({ type: 'offer', sdp: filterSdpCandidates(pc.localDescription!.sdp, []) }));
  for (const candidate of extraCandidates) ws.send(encodeSignal({ type: 'candidate', candidate, mid: '0' }));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('raw channel did not open')), 10_000);
    channel.onopen = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return channel;
}

describe('WebRTC transport', () => {
  it('carries datagrams both ways over the data channel, each client at its own rtc:N address', async () => {
    const { server, url } = await setup();
    const a = await connect(url);
    const b = await connect(url);
    expect(a.isOpen).toBe(true);
    a.send('server', new Uint8Array([1, 2, 3]));
    b.send('server', new Uint8Array(MAX_PACKET_BYTES).fill(7));
    const got = await receive(server, 2);
    expect(got).toHaveLength(2);
    const fromA = got.find((r) => r.data.length === 3)!;
    const fromB = got.find((r) => r.data.length === MAX_PACKET_BYTES)!;
    expect(fromA.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(fromB.data.every((v) => v === 7)).toBe(true);
    expect(fromA.from).toMatch(/^rtc:\d+$/);
    expect(fromB.from).toMatch(/^rtc:\d+$/);
    expect(fromA.from).not.toBe(fromB.from);
    expect(server.connectedCount).toBe(2);
    const reply = new Uint8Array([9, 8, 7]);
    server.send(fromA.from, reply);
    reply.fill(0);
    server.send(fromB.from, new Uint8Array([5]));
    const atA = await receive(a, 1);
    const atB = await receive(b, 1);
    expect(atA.map((r) => [r.from, [...r.data]])).toEqual([['server', [9, 8, 7]]]);
    expect(atB.map((r) => [r.from, [...r.data]])).toEqual([['server', [5]]]);
  });

  it('drops oversize datagrams both ways and text messages, counting them', async () => {
    const { server, url } = await setup();
    const client = await connect(url);
    client.send('server', new Uint8Array(MAX_PACKET_BYTES + 1));
    client.send('other', new Uint8Array(3));
    expect(client.stats.droppedOversize).toBe(1);
    expect(client.stats.droppedNoRoute).toBe(1);
    const raw = await rawClient(url);
    raw.send(new Uint8Array(MAX_PACKET_BYTES + 100));
    raw.send('text is not a datagram');
    raw.send(new Uint8Array([4, 4]));
    const got = await receive(server, 1);
    expect(got.map((r) => [...r.data])).toEqual([[4, 4]]);
    // The channel is unordered: the two refused messages may land after the good one.
    expect(
      await until(() => server.stats.droppedOversizeReceived === 1 && server.stats.badMessages === 1),
    ).toBe(true);
    server.send(got[0].from, new Uint8Array(MAX_PACKET_BYTES + 1));
    expect(server.stats.droppedOversize).toBe(1);
  });

  it('ignores remote candidates outside the allowed addresses', async () => {
    const { server, url } = await setup();
    await rawClient(url, ['candidate:9 1 UDP 2122317823 192.0.2.99 5000 typ host']);
    expect(server.stats.candidatesRefused).toBe(1);
    expect(await until(() => server.connectedCount === 1)).toBe(true);
  });

  it('closes a signalling socket that sends something malformed, oversize, binary or out of turn, and only it', async () => {
    const { server, url } = await setup();
    const good = await connect(url);
    const messages: (string | Uint8Array)[] = [
      'not json',
      JSON.stringify({ type: 'offer', sdp: `v=0${'a'.repeat(MAX_SIGNAL_BYTES + 10)}` }),
      new Uint8Array([1, 2, 3]),
      encodeSignal({ type: 'candidate', candidate: 'candidate:1 1 UDP 1 127.0.0.1 5000 typ host', mid: '0' }),
      encodeSignal({ type: 'answer', sdp: SDP }),
      encodeSignal({ type: 'offer', sdp: SDP }),
    ];
    for (const message of messages) {
      const { ws, closed } = await rawSignal(url);
      ws.send(message);
      const code = await closed;
      expect(code, String(message).slice(0, 40)).toBeGreaterThanOrEqual(1000);
    }
    expect(server.stats.closedMalformed).toBe(messages.length);
    expect(await until(() => server.peerCount === 1)).toBe(true);
    good.send('server', new Uint8Array([6]));
    const got = await receive(server, 1);
    expect(got.map((r) => r.data[0])).toEqual([6]);
  });

  it('refuses peers over maxPeers and times out signalling that never completes', async () => {
    const { server, url } = await setup({ maxPeers: 2, connectTimeoutMs: 1000 });
    const first = await rawSignal(url);
    await rawSignal(url);
    await expect(rawSignal(url)).rejects.toThrow();
    expect(server.stats.peersRefused).toBe(1);
    server.poll(0, () => {});
    server.poll(500, () => {});
    expect(server.peerCount).toBe(2);
    server.poll(1100, () => {});
    expect(server.stats.closedTimeout).toBe(2);
    expect(server.peerCount).toBe(0);
    expect(await first.closed).toBe(1008);
  });

  it('closes cleanly: the server waits for every connection to close, and clients see their channel close', async () => {
    const { server, url } = await setup();
    const a = await connect(url);
    const b = await connect(url);
    await server.close();
    expect(server.peerCount).toBe(0);
    expect(await until(() => !a.isOpen && !b.isOpen)).toBe(true);
    await a.close();
    await b.close();
    server.send('rtc:1', new Uint8Array([1]));
    expect(server.stats.packetsSent).toBe(0);
  });
});
