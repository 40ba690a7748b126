// The every-transport server endpoint on 127.0.0.1: hostOf and drop go to the transport an address's prefix names.

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PipeClientEndpoint } from '../../../src/net/transports/pipe-client.ts';
import { type ConnectedEndpoint, closeWebRtc, connectNode, listen } from '../../../src/node.ts';
import { closeAll, onCleanup, receive, until } from './loopback.ts';

afterEach(closeAll);

// Every peer connection is closed (and waited for) by then.
afterAll(closeWebRtc);

/** Whether a WebSocket or WebRTC client's link has ended. */
function linkEnded(client: ConnectedEndpoint): boolean {
  return client instanceof PipeClientEndpoint && !client.isOpen;
}

describe('MultiTransportServer', () => {
  it('routes hostOf and drop by address prefix: UDP has no link to drop, WebSocket and WebRTC links close', async () => {
    const multi = await listen({
      webrtc: { bindAddress: '127.0.0.1', allowedCandidateAddresses: ['127.0.0.1'] },
    });
    onCleanup(() => multi.close());
    const base = `127.0.0.1:${multi.port}`;
    const clients: ConnectedEndpoint[] = [];
    for (const scheme of ['udp', 'ws', 'webrtc']) {
      const client = await connectNode(`${scheme}://${base}`);
      onCleanup(() => client.close());
      clients.push(client);
    }
    clients.forEach((client, i) => {
      client.send(client.serverAddress, new Uint8Array([i]));
    });
    const got = await receive(multi, 3);
    const [udp, ws, rtc] = [0, 1, 2].map((i) => got.find((r) => r.data[0] === i)!.from);
    expect([udp, ws, rtc].map((a) => a.split(':')[0])).toEqual(['udp', 'ws', 'rtc']);
    expect(multi.hostOf(udp)).toBe('udp:127.0.0.1');
    expect(multi.hostOf(ws)).toBe('ws:127.0.0.1');
    expect(multi.hostOf(rtc)).toBe('rtc:127.0.0.1');
    for (const unknown of ['ws:999', 'rtc:999', 'tcp:127.0.0.1:80', '']) {
      expect(multi.hostOf(unknown), unknown).toBeNull();
    }

    multi.drop(udp);
    multi.drop(ws);
    multi.drop(rtc);
    expect(multi.websocket.socketCount).toBe(0);
    expect(multi.webrtc.peerCount).toBe(0);
    expect(multi.hostOf(ws)).toBeNull();
    expect(multi.hostOf(rtc)).toBeNull();
    expect(await until(() => linkEnded(clients[1]) && linkEnded(clients[2]))).toBe(true);
    expect(multi.websocket.stats.closedDropped).toBe(1);
    expect(multi.webrtc.stats.closedDropped).toBe(1);
    // UDP is connectionless: the address still routes.
    multi.send(udp, new Uint8Array([5]));
    expect((await receive(clients[0], 1)).map((r) => [...r.data])).toEqual([[5]]);
  });
});
