// Benchmark section 4: the cost of authenticated packets. Sealing and opening one packet with
// ChaCha20-Poly1305 (Node's crypto, as the server does; @noble/ciphers, as the browser-safe client
// does) at the sizes Backstep sends, a whole channel send and receive with and without keys, and
// one key agreement on each side.

import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { PacketChannel } from '../../src/net/channel.ts';
import { nodeCipher, ServerKeyExchange } from '../../src/net/node-packet-crypto.ts';
import {
  clientPacketKeys,
  createClientKeyPair,
  nobleCipher,
  PACKET_TAG_BYTES,
  type PacketCipher,
  type PacketKeys,
  writeNonce,
} from '../../src/net/packet-crypto.ts';
import { sodiumCipher } from '../../src/net/sodium-packet-crypto.ts';
import { type Row, round, table, timePerCall } from './report.ts';

/**
 * The noble cipher as Backstep first used it, kept here as the yardstick of the in-place one: a
 * new AEAD object per packet over fresh views of the input and output.
 */
function nobleOneShot(key: Uint8Array): PacketCipher {
  return {
    seal(nonce, aad, data, start, end, out) {
      chacha20poly1305(key, nonce, aad).encrypt(
        data.subarray(start, end),
        out.subarray(start, end + PACKET_TAG_BYTES),
      );
    },
    open(nonce, aad, data, start, end, out) {
      try {
        chacha20poly1305(key, nonce, aad).decrypt(
          data.subarray(start, end),
          out.subarray(start, end - PACKET_TAG_BYTES),
        );
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** Payload sizes: a command packet, a small snapshot, a full one. */
const SIZES = [100, 400, 1150];

function sealOpen(cipher: PacketCipher, length: number): { seal: number; open: number } {
  const data = new Uint8Array(length + PACKET_TAG_BYTES).fill(7);
  const out = new Uint8Array(data.length);
  const nonce = new Uint8Array(12);
  const aad = new Uint8Array(9);
  let sequence = 0;
  const seal = timePerCall(() => {
    writeNonce(nonce, sequence++);
    cipher.seal(nonce, aad, data, 13, length, data);
  });
  writeNonce(nonce, 1);
  cipher.seal(nonce, aad, data, 13, length, data);
  const open = timePerCall(() => {
    cipher.open(nonce, aad, data, 13, length + PACKET_TAG_BYTES, out);
  });
  return { seal, open };
}

/** A packet of `payload` bytes sent by one channel and received by the other, per packet. */
function channelRoundTrip(payload: number, keys: [PacketKeys, PacketKeys] | null): number {
  let packet: Uint8Array = new Uint8Array(0);
  const a = new PacketChannel((d) => (packet = d), { protocolId: 1 }, keys?.[0] ?? null);
  const b = new PacketChannel(() => {}, { protocolId: 1 }, keys?.[1] ?? null);
  let now = 0;
  const write = (s: { uint(v: number, bits: number): number }) => {
    for (let i = 0; i < payload; i++) s.uint(i & 0xff, 8);
  };
  return timePerCall(() => {
    now += 1;
    a.send(now, write);
    b.receive(now, packet);
  });
}

export function packetCryptoSection(): void {
  const key = new Uint8Array(32).fill(3);
  const rows: Record<string, Row> = {};
  for (const size of SIZES) {
    for (const [name, cipher] of [
      ['sodium', sodiumCipher(key)],
      ['node', nodeCipher(key)],
      ['noble', nobleCipher(key)],
      ['noble, a new AEAD per packet', nobleOneShot(key)],
    ] as const) {
      const t = sealOpen(cipher, size);
      rows[`${name}, ${size} B`] = {
        'seal (us)': round(t.seal * 1000, 2),
        'open (us)': round(t.open * 1000, 2),
        'MB/s sealed': round(size / (t.seal * 1000), 0),
      };
    }
  }
  table('ChaCha20-Poly1305 per packet (payload bytes, 16-byte tag added)', rows, [
    'sodium: the server (libsodium through the optional sodium-native, in place); node: the server',
    'where sodium-native does not load (OpenSSL through node:crypto, an object per packet); noble: the browser-safe client (@noble/ciphers),',
    'in place through cached views; "a new AEAD per packet": the earlier noble cipher, for the ratio',
  ]);

  const server = new ServerKeyExchange();
  const pair = createClientKeyPair();
  const clientKeys = clientPacketKeys(pair, server.publicKey, 1, 1);
  const serverKeys = server.packetKeys(pair.publicKey, 1, 1);
  if (clientKeys === null || serverKeys === null) throw new Error('key agreement failed');
  const channelRows: Record<string, Row> = {};
  for (const size of SIZES) {
    const plain = channelRoundTrip(size, null);
    const serverToClient = channelRoundTrip(size, [serverKeys, clientKeys]);
    const clientToServer = channelRoundTrip(size, [clientKeys, serverKeys]);
    channelRows[`${size} B payload`] = {
      'checksummed (us)': round(plain * 1000, 2),
      'sealed, server to client (us)': round(serverToClient * 1000, 2),
      'sealed, client to server (us)': round(clientToServer * 1000, 2),
      'ratio s->c': round(serverToClient / plain, 2),
    };
  }
  table('Channel send + receive of one packet (both ends in this process)', channelRows, [
    'server to client: the server seals (sodium), noble opens; client to server: noble seals, the server opens',
  ]);

  const agreeRows: Record<string, Row> = {
    'client: key pair + agreement (noble)': {
      'per connect (us)': round(
        timePerCall(() => {
          clientPacketKeys(createClientKeyPair(), server.publicKey, 1, 1);
        }, 300) * 1000,
        0,
      ),
    },
    'server: agreement on a valid response (node)': {
      'per connect (us)': round(timePerCall(() => server.packetKeys(pair.publicKey, 1, 1), 300) * 1000, 0),
    },
  };
  table('Key agreement (once per connection)', agreeRows);
}
