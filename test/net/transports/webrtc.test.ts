// The WebRTC transport on 127.0.0.1 (node-datachannel on the server, the browser-safe client endpoint given node-datachannel's polyfill): the signalling codec, the shared link-server suite, hostile signalling and channels, limits and options.

import { RTCPeerConnection } from 'node-datachannel/polyfill';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { MAX_PACKET_BYTES } from '../../../src/net/transport.ts';
import { routeUpgrades } from '../../../src/net/transports/link-server.ts';
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
import { closeWebRtc } from '../../../src/node.ts';
import { describeLinkServer } from './link-server.ts';
import { closeAll, listenHttp, onCleanup, rawWebSocket, receive, until } from './loopback.ts';

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

afterEach(closeAll);

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

async function setup(
  options: WebRtcServerOptions = {},
): Promise<{ server: WebRtcServerEndpoint; url: string }> {
  const { server: httpServer, port } = await listenHttp();
  const server = new WebRtcServerEndpoint({
    bindAddress: '127.0.0.1',
    allowedCandidateAddresses: ['127.0.0.1'],
    ...options,
  });
  const detach = routeUpgrades(httpServer, [server]);
  onCleanup(async () => {
    detach();
    await server.close();
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
  onCleanup(() => client.close());
  return client;
}

/**
 * A client that signals by hand (so it can also send what the endpoint never would): returns
 * its open data channel. `extraCandidates` are sent to the server after the offer.
 */
async function rawClient(url: string, extraCandidates: string[] = [], closeSignallingWhenAnswered = false) {
  const { ws } = await rawWebSocket(url);
  const pc = new RTCPeerConnection({ iceServers: [], bindAddress: '127.0.0.1' } as RTCConfiguration);
  const channel = pc.createDataChannel(DATA_CHANNEL_LABEL, DATA_CHANNEL_OPTIONS);
  channel.binaryType = 'arraybuffer';
  onCleanup(async () => {
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
        if (closeSignallingWhenAnswered) ws.close(1000, 'done');
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
  it('drops and counts received oversize datagrams and text messages, and keeps the channel', async () => {
    const { server, url } = await setup();
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
    raw.send(new Uint8Array([5]));
    expect((await receive(server, 1)).map((r) => [...r.data])).toEqual([[5]]);
  });

  it('keeps connecting a client that closes its signalling socket once it has the answer', async () => {
    // A client closes signalling when its channel opens, which may be before the server sees its
    // own end open: the server must not take that close for an abandoned connection.
    const { server, url } = await setup();
    const channel = await rawClient(url, [], true);
    expect(await until(() => server.connectedCount === 1)).toBe(true);
    channel.send(new Uint8Array([8]));
    expect((await receive(server, 1)).map((r) => [...r.data])).toEqual([[8]]);
    expect(server.stats.peersClosed).toBe(0);
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
      const { ws, closed } = await rawWebSocket(url);
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

  it('the client refuses a malformed, oversize or out-of-turn message from the server, and closes what it opened first', async () => {
    const { server: httpServer, port } = await listenHttp();
    const hostile = new WebSocketServer({ server: httpServer });
    onCleanup(() => new Promise<void>((r) => hostile.close(() => r())));
    const replies = [
      'not json',
      JSON.stringify({ type: 'answer', sdp: `v=0${'a'.repeat(MAX_SIGNAL_BYTES)}` }),
      encodeSignal({ type: 'offer', sdp: SDP }),
    ];
    let reply = '';
    hostile.on('connection', (ws) => ws.once('message', () => ws.send(reply)));
    const made: RTCPeerConnection[] = [];
    class TrackedPeerConnection extends RTCPeerConnection {
      constructor(config?: RTCConfiguration) {
        super(config);
        made.push(this);
      }
    }
    for (reply of replies) {
      const connecting = WebRtcClientEndpoint.connect({
        signallingUrl: `ws://127.0.0.1:${port}/rtc`,
        RTCPeerConnection: TrackedPeerConnection,
        WebSocket,
        rtcConfig: { iceServers: [], bindAddress: '127.0.0.1' } as RTCConfiguration,
        allowedCandidateAddresses: ['127.0.0.1'],
      });
      await expect(connecting, reply.slice(0, 40)).rejects.toThrow(
        /malformed signalling message|unexpected offer/,
      );
      expect(made.at(-1)?.connectionState, reply.slice(0, 40)).toBe('closed');
    }
    expect(made).toHaveLength(replies.length);
  });

  it('names the bad option', async () => {
    expect(() => new WebRtcServerEndpoint({ maxPeers: 0 })).toThrow(/WebRtcServerEndpoint: maxPeers/);
    expect(() => new WebRtcServerEndpoint({ maxSignalMessages: 1.5 })).toThrow(/maxSignalMessages/);
    expect(() => new WebRtcServerEndpoint({ connectTimeoutMs: 0 })).toThrow(/connectTimeoutMs/);
    expect(() => new WebRtcServerEndpoint({ answerTimeoutMs: -5 })).toThrow(/answerTimeoutMs/);
    expect(() => new WebRtcServerEndpoint({ path: 'rtc' })).toThrow(/path/);
    await expect(
      WebRtcClientEndpoint.connect({
        signallingUrl: 'ws://127.0.0.1:9/rtc',
        RTCPeerConnection,
        WebSocket,
        queueCapacity: 0,
      }),
    ).rejects.toThrow(/WebRtcClientEndpoint: queueCapacity/);
  });

  it('refuses peers over maxPeers, and times out signalling that never completes', async () => {
    const { server, url } = await setup({ maxPeers: 2, connectTimeoutMs: 1000 });
    const first = await rawWebSocket(url);
    await rawWebSocket(url);
    await expect(rawWebSocket(url)).rejects.toThrow(/503/);
    expect(server.stats.peersRefused).toBe(1);
    server.poll(0, () => {});
    server.poll(500, () => {});
    expect(server.peerCount).toBe(2);
    server.poll(1100, () => {});
    expect(server.stats.closedTimeout).toBe(2);
    expect(server.peerCount).toBe(0);
    expect(await first.closed).toBe(1008);
  });
});

describe('WebRTC pending peers', () => {
  it('closes a pending peer past maxPendingPeersPerHost from one host at once', async () => {
    const { server, url } = await setup({ maxPeers: 64, maxPendingPeers: 32, maxPendingPeersPerHost: 4 });
    // Four signalling sockets that never send an offer: the host's pending allowance.
    for (let i = 0; i < 4; i++) await rawWebSocket(url);
    const fifth = await rawWebSocket(url);
    expect(await fifth.closed).toBe(1008);
    expect(server.stats.closedPendingPerHost).toBe(1);
    expect(server.peerCount).toBe(4);
  });

  it('past maxPendingPeers the oldest half-open peer makes room, and a real client connects meanwhile', async () => {
    const { server, url } = await setup({ maxPeers: 64, maxPendingPeers: 3, maxPendingPeersPerHost: 16 });
    const stale = [];
    for (let i = 0; i < 3; i++) stale.push(await rawWebSocket(url));
    const client = await connect(url);
    expect(await stale[0].closed).toBe(1008);
    expect(server.stats.closedPendingEvicted).toBe(1);
    await until(() => server.connectedCount === 1, 3000);
    // Every further half-open peer evicts the oldest pending one, never the connected client.
    for (let i = 0; i < 6; i++) await rawWebSocket(url);
    await until(() => server.stats.closedPendingEvicted === 7, 3000);
    expect(server.connectedCount).toBe(1);
    expect(server.peerCount).toBe(4);
    await client.close();
  });

  it('closes a client whose host made maxOffersPerHostPerSecond offers within the second, before building its peer connection', async () => {
    const { server, url } = await setup({ maxOffersPerHostPerSecond: 2, maxPendingPeersPerHost: 16 });
    // Nothing polls: engine time stands still and the allowance does not refill.
    const closes: Promise<number>[] = [];
    for (let i = 0; i < 5; i++) {
      const { ws, closed } = await rawWebSocket(url);
      ws.send(encodeSignal({ type: 'offer', sdp: SDP }));
      closes.push(closed);
    }
    await Promise.all(closes);
    expect(server.stats.closedOfferRate).toBe(3);
    // The two offers read built their peer connections (this session-less SDP then fails).
    expect(server.stats.closedMalformed).toBe(2);
  });

  it("past maxPendingPeers closes the oldest pending peer of the host with the most, not another host's", async () => {
    const { server, url } = await setup({ maxPeers: 64, maxPendingPeers: 4, maxPendingPeersPerHost: 16 });
    // One pending peer from 127.0.0.1, then a flood of them from 127.0.0.2 (loopback answers
    // every 127/8 address).
    const lone = await rawWebSocket(url);
    let closedLone = false;
    void lone.closed.then(() => {
      closedLone = true;
    });
    const flood = [];
    for (let i = 0; i < 10; i++) flood.push(await rawWebSocket(url, '127.0.0.2'));
    // Past the limit each new one closed the flooding host's oldest: 7 of its 10, none of 127.0.0.1.
    expect(await until(() => server.stats.closedPendingEvicted === 7, 3000)).toBe(true);
    const closedFlood = await Promise.all(
      flood.map((f) =>
        Promise.race([f.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 200))]),
      ),
    );
    expect(closedFlood).toEqual([true, true, true, true, true, true, true, false, false, false]);
    expect(closedLone).toBe(false);
    expect(server.peerCount).toBe(4);
  });
});

describeLinkServer({
  name: 'WebRTC',
  prefix: 'rtc',
  start: ({ maxPerHost, ...options }) => setup({ ...options, maxPeersPerHost: maxPerHost }),
  connect,
  links: (server) => server.peerCount,
});
