// Authenticated packets: the AEAD and key agreement (Node's crypto on the server, @noble in the
// browser-safe client, interchangeable), sealed channels, and forged packets that move nothing.

import { x25519 } from '@noble/curves/ed25519.js';
import { Match } from 'backstep/testing';
import { describe, expect, it } from 'vitest';
import { arenaGame } from '../../games/arena/shared/game.ts';
import {
  PacketChannel,
  PacketType,
  readSealedHeader,
  SEALED_HEADER_MAX_BYTES,
  type SealedHeader,
  writePacketChecksum,
  writeSealedHeader,
} from '../../src/net/channel.ts';
import {
  createHandshakePacket,
  createHandshakeStream,
  openHandshakePacket,
  PACKET_ACCEPTED,
  PACKET_CHALLENGE_RESPONSE,
  readHandshakePacket,
  writeHandshakePacket,
} from '../../src/net/handshake.ts';
import { nodeCipher, ServerKeyExchange } from '../../src/net/node-packet-crypto.ts';
import {
  clientPacketKeys,
  createClientKeyPair,
  nobleCipher,
  PACKET_TAG_BYTES,
  type PacketCipher,
  type PacketKeys,
  ViewCache,
  writeNonce,
} from '../../src/net/packet-crypto.ts';
import { sodiumAvailable, sodiumCipher } from '../../src/net/sodium-packet-crypto.ts';
import { MAX_PACKET_BYTES } from '../../src/net/transport.ts';
import type { BitStream } from '../../src/protocol/bitstream.ts';
import { Random } from '../../src/sim/random.ts';

const PROTOCOL_ID = 0x42535450;

function key(fill: number): Uint8Array {
  return new Uint8Array(32).fill(fill);
}

/** A client (noble) and a server (Node) that agreed keys as the handshake does. */
function agree(): { client: PacketKeys; server: PacketKeys } {
  const server = new ServerKeyExchange();
  const pair = createClientKeyPair();
  const nonce = 0x1234abcd;
  const client = clientPacketKeys(pair, server.publicKey, PROTOCOL_ID, nonce);
  const serverKeys = server.packetKeys(pair.publicKey, PROTOCOL_ID, nonce);
  if (client === null || serverKeys === null) throw new Error('key agreement failed');
  return { client, server: serverKeys };
}

/** A sealed link: a is the client (noble), b the server (Node), queues delivered by hand. */
function sealedLink() {
  const { client, server } = agree();
  const toB: Uint8Array[] = [];
  const toA: Uint8Array[] = [];
  const a = new PacketChannel((d) => toB.push(d.slice()), { protocolId: PROTOCOL_ID }, client);
  const b = new PacketChannel((d) => toA.push(d.slice()), { protocolId: PROTOCOL_ID }, server);
  return { a, b, toA, toB };
}

describe('packet ciphers', () => {
  it('sodium-native loads (an optional dependency, installed with this repository: the server seals with it)', () => {
    expect(sodiumAvailable()).toBe(true);
  });

  it('libsodium, Node and noble ChaCha20-Poly1305 produce the same bytes and open each other', () => {
    const rng = new Random(3);
    const ciphers: [string, PacketCipher, PacketCipher][] = [
      ['noble to node', nobleCipher(key(9)), nodeCipher(key(9))],
      ['node to noble', nodeCipher(key(9)), nobleCipher(key(9))],
    ];
    if (sodiumAvailable()) {
      ciphers.push(
        ['sodium to noble', sodiumCipher(key(9)), nobleCipher(key(9))],
        ['noble to sodium', nobleCipher(key(9)), sodiumCipher(key(9))],
        ['node to sodium', nodeCipher(key(9)), sodiumCipher(key(9))],
      );
    }
    const nonce = new Uint8Array(12);
    const aad = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const [name, seal, open] of ciphers) {
      for (let trial = 0; trial < 50; trial++) {
        const length = rng.int(0, 1100);
        const data = new Uint8Array(13 + length + PACKET_TAG_BYTES);
        for (let i = 0; i < 13 + length; i++) data[i] = rng.int(0, 255);
        const plain = data.slice();
        const sequence = rng.int(0, 1 << 30) * 4096 + trial;
        writeNonce(nonce, sequence);
        seal.seal(nonce, aad, data, 13, 13 + length, data);
        const other = plain.slice();
        open.seal(nonce, aad, other, 13, 13 + length, other);
        expect(other, name).toEqual(data);
        const out = new Uint8Array(data.length);
        expect(open.open(nonce, aad, data, 13, data.length, out), name).toBe(true);
        expect(out.subarray(13, 13 + length), name).toEqual(plain.subarray(13, 13 + length));
        // Any flipped bit, another nonce or other additional data fails.
        const flipped = data.slice();
        flipped[rng.int(13, flipped.length - 1)] ^= 1 << rng.int(0, 7);
        expect(open.open(nonce, aad, flipped, 13, data.length, out), name).toBe(false);
        writeNonce(nonce, sequence + 1);
        expect(open.open(nonce, aad, data, 13, data.length, out), name).toBe(false);
        writeNonce(nonce, sequence);
        expect(open.open(nonce, new Uint8Array(9), data, 13, data.length, out), name).toBe(false);
        expect(open.open(nonce, aad, data, 13, 13 + PACKET_TAG_BYTES - 1, out), name).toBe(false);
      }
    }
  });

  it('seal and open in place in one reused buffer, at changing lengths and AAD sizes, as RFC 8439 does', () => {
    // One buffer, as the channel uses: each packet sealed and opened where it lies, lengths and
    // additional data changing between packets, and every result equal to Node's (OpenSSL).
    const rng = new Random(11);
    for (const [name, seal, open] of [
      ['noble', nobleCipher(key(4)), nobleCipher(key(4))],
      ['node', nodeCipher(key(4)), nodeCipher(key(4))],
      ...(sodiumAvailable() ? ([['sodium', sodiumCipher(key(4)), sodiumCipher(key(4))]] as const) : []),
    ] as const) {
      const reference = nodeCipher(key(4));
      const buffer = new Uint8Array(MAX_PACKET_BYTES);
      const nonce = new Uint8Array(12);
      for (let trial = 0; trial < 200; trial++) {
        const length = rng.int(0, MAX_PACKET_BYTES - 13 - PACKET_TAG_BYTES);
        const aad = new Uint8Array(rng.int(0, 2) === 0 ? 5 : 9).map(() => rng.int(0, 255));
        for (let i = 0; i < 13 + length; i++) buffer[i] = rng.int(0, 255);
        const plain = buffer.slice(0, 13 + length);
        writeNonce(nonce, trial);
        const expected = new Uint8Array(13 + length + PACKET_TAG_BYTES);
        expected.set(plain);
        reference.seal(nonce, aad, expected, 13, 13 + length, expected);
        seal.seal(nonce, aad, buffer, 13, 13 + length, buffer);
        expect(buffer.subarray(0, 13 + length + PACKET_TAG_BYTES), name).toEqual(expected);
        expect(open.open(nonce, aad, buffer, 13, 13 + length + PACKET_TAG_BYTES, buffer), name).toBe(true);
        expect(buffer.subarray(0, 13 + length), name).toEqual(plain);
      }
    }
  });

  it('open refuses a range outside the buffer or not made of whole non-negative offsets, and never throws', () => {
    const nonce = new Uint8Array(12);
    const aad = new Uint8Array(9);
    for (const [name, c] of [
      ['noble', nobleCipher(key(5))],
      ['node', nodeCipher(key(5))],
      ...(sodiumAvailable() ? ([['sodium', sodiumCipher(key(5))]] as const) : []),
    ] as const) {
      const data = new Uint8Array(40 + PACKET_TAG_BYTES).fill(1);
      c.seal(nonce, aad, data, 10, 40, data);
      const out = new Uint8Array(data.length);
      expect(c.open(nonce, aad, data.slice(), 10, data.length, out), name).toBe(true);
      for (const [start, end] of [
        [-90, 56],
        [10, data.length + 1],
        [10.5, data.length],
        [Number.NaN, data.length],
        [10, Number.POSITIVE_INFINITY],
        [40, 20],
      ]) {
        expect(
          () => c.open(nonce, aad, data.slice(), start, end, out),
          `${name} ${start} ${end}`,
        ).not.toThrow();
        expect(c.open(nonce, aad, data.slice(), start, end, out), `${name} ${start} ${end}`).toBe(false);
      }
    }
  });

  it('keeps no view of a range past what its key tells apart (65,535), so ranges never share a view', () => {
    const cache = new ViewCache();
    const big = new Uint8Array(70_000);
    const wide = cache.get(big, 0, 65_537);
    const narrow = cache.get(big, 1, 1);
    expect(wide.length).toBe(65_537);
    expect(narrow.length).toBe(0);
    expect(narrow.byteOffset).toBe(1);
  });

  it('keeps at most MAX_VIEWS views of a buffer, each the exact range asked for, reused while held', () => {
    const cache = new ViewCache();
    const buffer = new Uint8Array(MAX_PACKET_BYTES);
    const rng = new Random(5);
    for (let i = 0; i < 20_000; i++) {
      const start = rng.int(0, 20);
      const end = rng.int(start, MAX_PACKET_BYTES);
      const view = cache.get(buffer, start, end);
      expect(view.buffer).toBe(buffer.buffer);
      expect(view.byteOffset).toBe(start);
      expect(view.length).toBe(end - start);
      expect(cache.size).toBeLessThanOrEqual(ViewCache.MAX_VIEWS);
    }
    // A steady length makes one view and reuses it; another buffer starts afresh.
    const steady = cache.get(buffer, 3, 103);
    expect(cache.get(buffer, 3, 103)).toBe(steady);
    const other = new Uint8Array(MAX_PACKET_BYTES);
    expect(cache.get(other, 3, 103).buffer).toBe(other.buffer);
    expect(cache.size).toBe(1);
    // A range no call used for IDLE_FACTOR times the slots' calls is let go: a rare range seen
    // once is not kept for good, and one in steady use is never made again.
    const fresh = new ViewCache();
    fresh.get(buffer, 0, 7);
    const kept = fresh.get(buffer, 1, 101);
    const idle = ViewCache.MAX_VIEWS * ViewCache.IDLE_FACTOR;
    for (let i = 2; i <= idle; i++) expect(fresh.get(buffer, 1, 101)).toBe(kept);
    expect(fresh.size).toBe(2);
    for (let i = 0; i < ViewCache.MAX_VIEWS; i++) expect(fresh.get(buffer, 1, 101)).toBe(kept);
    expect(fresh.size).toBe(1);
    // A cache of more slots holds more ranges apart.
    const wide = new ViewCache(4096);
    const made = new Set<Uint8Array>();
    for (let end = 16; end <= MAX_PACKET_BYTES; end++) made.add(wide.get(buffer, 3, end));
    expect(wide.size).toBe(MAX_PACKET_BYTES - 15);
    for (let end = 16; end <= MAX_PACKET_BYTES; end++) expect(made.has(wide.get(buffer, 3, end))).toBe(true);
    // ... and every packet's tag (16 bytes at each start) apart as well: no length takes another's slot.
    const tags = new ViewCache(4096);
    const tagViews = new Set<Uint8Array>();
    for (let start = 3; start + 16 <= MAX_PACKET_BYTES; start++)
      tagViews.add(tags.get(buffer, start, start + 16));
    expect(tags.size).toBe(MAX_PACKET_BYTES - 18);
    for (let start = 3; start + 16 <= MAX_PACKET_BYTES; start++)
      expect(tagViews.has(tags.get(buffer, start, start + 16))).toBe(true);
    expect(() => new ViewCache(100)).toThrow(/slots must be a power of two/);
    expect(() => new ViewCache(64, 0)).toThrow(/idleGets must be an integer/);
  });

  it('the client (noble X25519) and the server (Node X25519) derive the same keys, per direction', () => {
    const { client, server } = agree();
    const nonce = new Uint8Array(12);
    const aad = new Uint8Array(9);
    const data = new Uint8Array(64 + PACKET_TAG_BYTES).fill(5);
    const out = new Uint8Array(data.length);
    client.send.seal(nonce, aad, data, 13, 64, data);
    expect(server.receive.open(nonce, aad, data, 13, data.length, out)).toBe(true);
    // The other direction's key does not open it: a packet cannot be reflected back.
    expect(client.receive.open(nonce, aad, data, 13, data.length, out)).toBe(false);
    expect(server.send === server.receive).toBe(false);
    const back = new Uint8Array(64 + PACKET_TAG_BYTES).fill(6);
    server.send.seal(nonce, aad, back, 13, 64, back);
    expect(client.receive.open(nonce, aad, back, 13, back.length, out)).toBe(true);
    // A stranger's key pair agrees other keys.
    const stranger = clientPacketKeys(
      createClientKeyPair(),
      new ServerKeyExchange().publicKey,
      PROTOCOL_ID,
      0x1234abcd,
    );
    expect(stranger!.receive.open(nonce, aad, back, 13, back.length, out)).toBe(false);
  });

  it('refuses a low-order public key on either side', () => {
    const zero = new Uint8Array(32);
    expect(new ServerKeyExchange().packetKeys(zero, PROTOCOL_ID, 1)).toBeNull();
    expect(clientPacketKeys(createClientKeyPair(), zero, PROTOCOL_ID, 1)).toBeNull();
  });
});

describe('a sealed channel', () => {
  it('carries reliable messages and payloads both ways, every packet sealed', () => {
    const { a, b, toA, toB } = sealedLink();
    const message = new Uint8Array([1, 2, 3, 4, 5]);
    a.sendReliable(message);
    for (let t = 0; t < 40; t++) {
      a.send(t * 10, (s) => s.uint(0xabcd, 16));
      b.send(t * 10, (s) => s.uint(0x1234, 16));
      for (const p of toB.splice(0)) {
        // The message's bytes never appear in clear on the wire.
        expect(p.join(',').includes('1,2,3,4,5'), 'ciphertext').toBe(false);
        const s = b.receive(t * 10 + 5, p);
        expect(s).not.toBeNull();
        expect(s!.uint(0, 16)).toBe(0xabcd);
      }
      for (const p of toA.splice(0)) expect(a.receive(t * 10 + 5, p)!.uint(0, 16)).toBe(0x1234);
    }
    expect(b.receiveReliable()).toEqual(message);
    expect(a.stats.packetsAcked).toBeGreaterThanOrEqual(39);
    expect(b.stats.dropped.forged).toBe(0);
    // Room for the tag is kept: the largest payload still fits a datagram.
    a.send(500, (s) => {
      while (s.bitsRemaining >= 8) s.uint(7, 8);
    });
    expect(toB[0].length).toBeLessThanOrEqual(MAX_PACKET_BYTES);
    expect(b.receive(505, toB[0])).not.toBeNull();
  });

  it('drops a packet forged without the key (valid framing) and moves nothing', () => {
    const { a, b, toA, toB } = sealedLink();
    const rng = new Random(11);
    for (let t = 0; t < 10; t++) {
      a.send(t);
      b.send(t);
      for (const p of toB.splice(0)) b.receive(t, p);
      for (const p of toA.splice(0)) a.receive(t, p);
    }
    const before = JSON.stringify({
      remote: b.remoteSequenceReceived,
      rtt: b.stats.rttMs,
      acked: b.stats.packetsAcked,
      received: b.stats.packetsReceived,
      last: b.lastReceivedMs,
    });
    // A stranger with its own keys, an attacker flipping bytes, one re-sealing under a guessed key,
    // behind a well-formed header in every form (short and long sequence and ack, any ack bits).
    const stranger = sealedLink();
    const h: SealedHeader = { prefix: 0, type: 0, sequence: 0, hasAck: true, ack: 0, ackBits: 0 };
    let forged = 0;
    for (let i = 0; i < 2000; i++) {
      stranger.a.send(100, (s) => {
        s.uint(rng.int(0, 0xffffffff), 32);
        s.uint(rng.int(0, 0xffffffff), 32);
      });
      const p = stranger.toB.pop()!;
      // Any sequence the window would take, acks of packets b really sent.
      h.type = i % 5 === 0 ? PacketType.Disconnect : PacketType.Data;
      h.sequence = (b.remoteSequenceReceived + rng.int(1, 180)) & 0xffff;
      h.hasAck = i % 7 !== 0;
      h.ack = h.hasAck ? rng.int(0, 9) : 0xffff;
      h.ackBits = h.hasAck ? [0xffffffff, 0xffffff00 | rng.int(0, 255), rng.int(0, 0xffffffff)][i % 3] : 0;
      const shortFrom = i % 2 === 0 ? b.remoteSequenceReceived : -1;
      const n = writeSealedHeader(p, h, shortFrom, i % 3 === 0 ? 0 : -1);
      if (i % 2 === 1) p[rng.int(n, p.length - 1)] ^= 0xff;
      expect(b.receive(100, p)).toBeNull();
      expect(b.lastDropReason).toBe('forged');
      expect(b.peerDisconnectReason).toBe(0);
      forged++;
    }
    expect(b.stats.dropped.forged).toBe(forged);
    const after = JSON.stringify({
      remote: b.remoteSequenceReceived,
      rtt: b.stats.rttMs,
      acked: b.stats.packetsAcked,
      received: b.stats.packetsReceived,
      last: b.lastReceivedMs,
    });
    expect(after).toBe(before);
    // The real packets carry on.
    a.send(200, (s) => s.uint(9, 8));
    expect(b.receive(200, toB.pop()!)!.uint(0, 8)).toBe(9);
  });

  it('a replayed packet is a duplicate; a replay from before the window is stale; neither moves anything', () => {
    const { a, b, toB } = sealedLink();
    const sent: Uint8Array[] = [];
    for (let t = 0; t < 50; t++) {
      a.send(t);
      const p = toB.pop()!;
      sent.push(p);
      expect(b.receive(t, p)).not.toBeNull();
    }
    for (const p of sent) expect(b.receive(60, p)).toBeNull();
    expect(b.stats.dropped.duplicate + b.stats.dropped.stale).toBe(50);
    expect(b.stats.packetsReceived).toBe(50);
  });

  it('channels share one send buffer: a payload writer that sends on another channel, or throws, leaves every packet its own bytes', () => {
    const keys = (send: number, receive: number) => ({
      send: sodiumCipher(key(send)),
      receive: sodiumCipher(key(receive)),
      disconnectToken: key(0).subarray(0, 16),
    });
    const links = [1, 2, 3].map((n) => {
      const wire: Uint8Array[] = [];
      const a = new PacketChannel((d) => wire.push(d.slice()), { protocolId: PROTOCOL_ID }, keys(n, n + 10));
      const b = new PacketChannel(() => {}, { protocolId: PROTOCOL_ID }, keys(n + 10, n));
      return { a, b, wire };
    });
    const rng = new Random(11);
    const payload = (length: number, seed: number) =>
      Array.from({ length }, (_, i) => (seed * 31 + i * 7) & 0xff);
    const write = (bytes: number[]) => (s: BitStream) => {
      for (const v of bytes) s.uint(v, 8);
    };
    const expectReceived = (link: (typeof links)[number], t: number, bytes: number[]) => {
      const s = link.b.receive(t, link.wire.shift()!);
      expect(s, `packet at ${t}`).not.toBeNull();
      // Read before any other channel receives: the stream and its buffer are shared.
      const got = bytes.map(() => s!.uint(0, 8));
      expect(s!.ok).toBe(true);
      expect(got).toEqual(bytes);
    };
    for (let t = 0; t < 300; t++) {
      const [outer, inner, third] = links;
      const first = payload(rng.int(1, 500), t);
      const nested = payload(rng.int(1, 900), t + 1000);
      const rest = payload(rng.int(0, 200), t + 2000);
      // The outer packet is being written when the inner one is sent, both whole after it.
      outer.a.send(t, (s) => {
        write(first)(s);
        inner.a.send(t, write(nested));
        write(rest)(s);
      });
      expect(inner.wire.length).toBe(1);
      expectReceived(inner, t, nested);
      expectReceived(outer, t, [...first, ...rest]);
      // A payload writer that throws leaves the shared buffer free for the next send.
      if (t % 50 === 0) {
        expect(() =>
          third.a.send(t, () => {
            throw new Error('game bug');
          }),
        ).toThrow('game bug');
      }
      const plain = payload(rng.int(1, 1000), t + 3000);
      third.a.send(t, write(plain));
      expectReceived(third, t, plain);
    }
    for (const { b } of links) expect(b.stats.dropped.forged).toBe(0);
  });

  it('extends the 16-bit sequence past its wrap: the nonces keep counting', () => {
    const toB: Uint8Array[] = [];
    const keys = (send: number, receive: number) => ({
      send: nodeCipher(key(send)),
      receive: nodeCipher(key(receive)),
      disconnectToken: key(0).subarray(0, 16),
    });
    const a = new PacketChannel((d) => toB.push(d.slice()), { protocolId: PROTOCOL_ID }, keys(1, 2));
    const b = new PacketChannel(() => {}, { protocolId: PROTOCOL_ID }, keys(2, 1));
    for (let t = 0; t < 70_000; t++) {
      a.send(t);
      const p = toB.pop()!;
      if (t % 3 === 0) continue;
      expect(b.receive(t, p), `packet ${t}`).not.toBeNull();
    }
    expect(b.stats.dropped.forged).toBe(0);
  });

  it('ends only on an authenticated Disconnect', () => {
    const { a, b, toB } = sealedLink();
    a.send(0);
    b.receive(0, toB.pop()!);
    a.sendDisconnect(1, 16);
    const disconnect = toB.pop()!;
    const tampered = disconnect.slice();
    tampered[tampered.length - PACKET_TAG_BYTES - 1] ^= 1;
    expect(b.receive(1, tampered)).toBeNull();
    expect(b.peerDisconnectReason).toBe(0);
    expect(b.receive(1, disconnect)).toBeNull();
    expect(b.peerDisconnectReason).toBe(16);
    const unsealed = new PacketChannel(() => {}, { protocolId: PROTOCOL_ID });
    expect(() => unsealed.sendDisconnect(0, 16)).toThrow(/no packet keys/);
  });
});

describe('sealed handshake fields', () => {
  it('a challenge response and an Accepted carry the resume token sealed: it opens only with the key, the cookie and every byte as sent', () => {
    const rng = new Random(21);
    for (const [seal, open] of [
      [nobleCipher(key(3)), nodeCipher(key(3))],
      [nodeCipher(key(3)), nobleCipher(key(3))],
    ] as const) {
      for (const type of [PACKET_CHALLENGE_RESPONSE, PACKET_ACCEPTED]) {
        const p = createHandshakePacket();
        p.type = type;
        p.updateRate = 32;
        p.tickRate = 64;
        p.resumeHi = rng.nextU32();
        p.resumeLo = rng.nextU32();
        p.issuedAt = rng.nextU32();
        p.cookieHi = rng.nextU32();
        p.cookieLo = rng.nextU32();
        p.connectTokenLength = type === PACKET_CHALLENGE_RESPONSE ? rng.int(0, 300) : 0;
        for (let i = 0; i < p.connectTokenLength; i++) p.connectToken[i] = rng.int(0, 255);
        const bytes = writeHandshakePacket(createHandshakeStream(), PROTOCOL_ID, p, seal).slice();
        const token = new Uint8Array(8);
        new DataView(token.buffer).setUint32(0, p.resumeHi, true);
        new DataView(token.buffer).setUint32(4, p.resumeLo, true);
        expect(indexOfBytes(bytes, token)).toBe(-1);
        const q = createHandshakePacket();
        const read = () => readHandshakePacket(createHandshakeStream(), PROTOCOL_ID, bytes, q);
        expect(read()).toBe('');
        expect(openHandshakePacket(bytes, q, open, p.issuedAt, p.cookieHi, p.cookieLo)).toBe(true);
        expect([q.resumeHi, q.resumeLo]).toEqual([p.resumeHi, p.resumeLo]);
        // Another cookie, another key, or any byte changed (checksum made valid again): refused.
        expect(read()).toBe('');
        expect(openHandshakePacket(bytes, q, open, p.issuedAt, p.cookieHi ^ 1, p.cookieLo)).toBe(false);
        expect(openHandshakePacket(bytes, q, nodeCipher(key(4)), p.issuedAt, p.cookieHi, p.cookieLo)).toBe(
          false,
        );
        for (let i = 0; i < bytes.length; i++) {
          if (i >= 1 && i <= 4) continue;
          const saved = bytes[i];
          bytes[i] ^= 1 << rng.int(0, 7);
          writePacketChecksum(PROTOCOL_ID, bytes, bytes.length);
          if (read() === '')
            expect(openHandshakePacket(bytes, q, open, p.issuedAt, p.cookieHi, p.cookieLo), `byte ${i}`).toBe(
              false,
            );
          bytes[i] = saved;
        }
        // Written without a cipher (as tools forging packets do): never opens.
        const unsealed = writeHandshakePacket(createHandshakeStream(), PROTOCOL_ID, p).slice();
        expect(readHandshakePacket(createHandshakeStream(), PROTOCOL_ID, unsealed, q)).toBe('');
        expect(openHandshakePacket(unsealed, q, open, p.issuedAt, p.cookieHi, p.cookieLo)).toBe(false);
      }
    }
  });
});

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

describe('the sealed header', () => {
  const header = (): SealedHeader => ({ prefix: 0, type: 0, sequence: 0, hasAck: false, ack: 0, ackBits: 0 });

  it('reads back what was written, short forms near the references the reader holds', () => {
    const rng = new Random(21);
    const out = new Uint8Array(SEALED_HEADER_MAX_BYTES + 4);
    const h = header();
    const r = header();
    const sizes = new Set<number>();
    for (let i = 0; i < 20_000; i++) {
      h.type = rng.int(0, 1) === 0 ? PacketType.Data : PacketType.Disconnect;
      h.sequence = rng.int(0, 0xffff);
      h.hasAck = rng.int(0, 5) !== 0;
      h.ack = h.hasAck ? rng.int(0, 0xffff) : 0xffff;
      const bits = [0xffffffff, 0xffffff00 | rng.int(0, 255), 0xffff0000 | rng.int(0, 0xffff)];
      h.ackBits = h.hasAck ? (bits[rng.int(0, 3)] ?? rng.int(0, 0xffffffff)) >>> 0 : 0;
      // What the writer knows the reader holds at least, and what the reader really holds (a
      // little newer, or older by a reorder of up to 64).
      const seqFrom = rng.int(0, 3) === 0 ? -1 : (h.sequence - rng.int(1, 191)) & 0xffff;
      const ackFrom = rng.int(0, 3) === 0 ? -1 : (h.ack - rng.int(0, 191)) & 0xffff;
      const near = (value: number, from: number) =>
        from < 0 ? rng.int(0, 0xffff) : (from + rng.int(0, ((value - from) & 0xffff) + 64)) & 0xffff;
      const seqHeld = near(h.sequence, seqFrom);
      const ackHeld = near(h.ack, ackFrom);
      const n = writeSealedHeader(out, h, seqFrom, ackFrom);
      sizes.add(n);
      out[n] = 0xa5;
      expect(readSealedHeader(out, n + 1, r, seqHeld, ackHeld), `case ${i}`).toBe(n);
      expect({ ...r, prefix: 0 }, `case ${i}`).toEqual({ ...h, prefix: 0 });
      expect(r.prefix).toBe(h.prefix);
      // One byte short is malformed.
      expect(readSealedHeader(out, n - 1, r, seqHeld, ackHeld)).toBe(0);
    }
    expect([...sizes].sort((x, y) => x - y)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('refuses a prefix no sender writes and a short form without its reference', () => {
    const { a, b, toA, toB } = sealedLink();
    const data = new Uint8Array(40);
    const r = header();
    data[0] = PacketType.Data | (3 << 4); // ack form 3
    expect(readSealedHeader(data, 40, r, 5, 5)).toBe(0);
    data[0] = PacketType.Data | (1 << 6); // no ack, yet ack bits
    expect(readSealedHeader(data, 40, r, 5, 5)).toBe(0);
    data[0] = PacketType.Data | 0x08; // short sequence, nothing taken yet
    expect(readSealedHeader(data, 40, r, -1, 5)).toBe(0);
    data[0] = PacketType.Data | (1 << 4); // short ack, no ack taken yet
    expect(readSealedHeader(data, 40, r, 5, -1)).toBe(0);
    data[0] = PacketType.Challenge;
    expect(readSealedHeader(data, 40, r, 5, 5)).toBe(0);
    expect(r.type).toBe(-1);
    // Through a channel: counted with their reasons, nothing moved.
    data[0] = PacketType.Data | 0x08;
    expect(b.receive(0, data)).toBeNull();
    expect(b.lastDropReason).toBe('malformed');
    data[0] = PacketType.Accepted;
    expect(b.receive(0, data)).toBeNull();
    expect(b.lastDropReason).toBe('bad type');
    expect(b.receive(0, data.subarray(0, 18))).toBeNull();
    expect(b.lastDropReason).toBe('truncated');
    expect(b.stats.packetsReceived).toBe(0);
    a.send(1);
    expect(b.receive(1, toB.pop()!)).not.toBeNull();
    expect(toA.length).toBe(0);
  });

  it('needs 3 header bytes once both ends have acknowledged each other, and no checksum', () => {
    const { a, b, toA, toB } = sealedLink();
    for (let t = 0; t < 40; t++) {
      a.send(t, (s) => s.uint(7, 8));
      b.send(t);
      for (const p of toB.splice(0)) b.receive(t, p);
      for (const p of toA.splice(0)) a.receive(t, p);
    }
    a.send(50, (s) => s.uint(7, 8));
    const p = toB.pop()!;
    // Prefix, sequence and ack in one byte each, every ack bit set; the reliable count (1 bit: none)
    // and the payload byte share 2 bytes; the tag.
    expect(p.length).toBe(3 + 2 + PACKET_TAG_BYTES);
    expect(p[0]).toBe(PacketType.Data | 0x08 | (1 << 4));
    expect(b.receive(50, p)!.uint(0, 8)).toBe(7);
  });

  it('a packet reordered past a short form cannot be misread: dropped, nothing moved', () => {
    const { a, b, toA, toB } = sealedLink();
    const held: Uint8Array[] = [];
    for (let t = 0; t < 300; t++) {
      a.send(t);
      b.send(t);
      const p = toB.pop()!;
      if (t === 100) held.push(p);
      else b.receive(t, p);
      for (const q of toA.splice(0)) a.receive(t, q);
    }
    const remote = b.remoteSequenceReceived;
    const received = b.stats.packetsReceived;
    expect(held[0][0] & 0x08).toBe(0x08);
    expect(b.receive(300, held[0])).toBeNull();
    expect(['forged', 'stale']).toContain(b.lastDropReason);
    expect(b.remoteSequenceReceived).toBe(remote);
    expect(b.stats.packetsReceived).toBe(received);
  });

  it('keeps every in-window packet over a lossy, reordering link across the sequence wrap', () => {
    const { a, b, toA, toB } = sealedLink();
    const rng = new Random(41);
    const late: { at: number; p: Uint8Array }[] = [];
    let accepted = 0;
    let sent = 0;
    for (let t = 0; t < 70_000; t++) {
      a.send(t);
      sent++;
      const p = toB.pop()!;
      if (rng.int(0, 9) === 0) continue; // lost
      if (rng.int(0, 9) === 0) late.push({ at: t + rng.int(1, 30), p });
      else if (b.receive(t, p) !== null) accepted++;
      for (let i = late.length - 1; i >= 0; i--) {
        if (late[i].at > t) continue;
        if (b.receive(t, late[i].p) !== null) accepted++;
        late.splice(i, 1);
      }
      if (t % 2 === 0) {
        b.send(t);
        const q = toA.pop()!;
        if (rng.int(0, 9) !== 0) a.receive(t, q);
      }
    }
    expect(b.stats.dropped.forged).toBe(0);
    expect(b.stats.dropped.malformed).toBe(0);
    expect(a.stats.dropped.forged).toBe(0);
    expect(accepted).toBe(b.stats.packetsReceived);
    // Every packet not lost arrives within the 33-packet window, so all of them are taken.
    expect(accepted).toBeGreaterThan(sent * 0.85);
    expect(a.stats.packetsAcked).toBeGreaterThan(sent * 0.85);
  });
});

describe('a pinned server key', () => {
  it('connects to the server whose key it holds, and ignores a challenge with any other', () => {
    const seed = 31;
    const match = new Match(arenaGame, seed);
    const pinned = match.addClient({ config: { serverPublicKey: match.server.publicKey } });
    const other = new Uint8Array(match.server.publicKey);
    other[0] ^= 1;
    const wrong = match.addClient({ config: { serverPublicKey: other, connectTimeoutMs: 1500 } });
    match.run(2000);
    expect(pinned.client.state, `seed ${seed}`).toBe('connected');
    expect(wrong.client.state, `seed ${seed}`).toBe('timed out');
    expect(() => match.addClient({ config: { serverPublicKey: new Uint8Array(31) } })).toThrow(
      /serverPublicKey/,
    );
    match.close();
  });
});

describe("a server's secret key", () => {
  it('keeps its public key across restarts, so a client pinning it connects to the restarted server', () => {
    const seed = 37;
    const secretKey = new Uint8Array(32).map((_, i) => (i * 29 + 5) & 0xff);
    const first = new Match(arenaGame, seed, { secretKey });
    const pinnedKey = first.server.publicKey.slice();
    first.close();
    // The key the secret key gives is X25519's (the browser client's implementation agrees).
    expect(Buffer.from(pinnedKey).toString('hex')).toBe(
      Buffer.from(x25519.getPublicKey(secretKey)).toString('hex'),
    );
    const restarted = new Match(arenaGame, seed + 1, { secretKey });
    const fresh = new Match(arenaGame, seed + 2);
    expect(Buffer.compare(fresh.server.publicKey, pinnedKey)).not.toBe(0);
    const pinned = restarted.addClient({ config: { serverPublicKey: pinnedKey } });
    const refused = fresh.addClient({ config: { serverPublicKey: pinnedKey, connectTimeoutMs: 1500 } });
    restarted.run(2000);
    fresh.run(2000);
    expect(pinned.client.state, `seed ${seed}`).toBe('connected');
    expect(refused.client.state, `seed ${seed}`).toBe('timed out');
    restarted.close();
    fresh.close();
  });

  it('must be 32 bytes: anything else is refused with a message naming it', () => {
    for (const bad of [new Uint8Array(31), new Uint8Array(33)]) {
      expect(() => new Match(arenaGame, 1, { secretKey: bad })).toThrow(RangeError);
      expect(() => new Match(arenaGame, 1, { secretKey: bad })).toThrow(
        /secretKey must be a Uint8Array of 32 bytes, got 3[13] bytes/,
      );
    }
    const notBytes = [1, 2, 3] as unknown as Uint8Array;
    expect(() => new Match(arenaGame, 1, { secretKey: notBytes })).toThrow(TypeError);
    expect(() => new Match(arenaGame, 1, { secretKey: notBytes })).toThrow(/secretKey must be a Uint8Array/);
  });
});
