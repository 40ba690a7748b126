// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): the packet checksum that catches garbled datagrams.

const TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c >>> 0;
}

/**
 * CRC-32 of `data[start..end)`, continuing from `previous` (the CRC of the bytes before them, 0
 * to start fresh), so `crc32(b, 0, b.length, crc32(a))` equals the CRC of `a` followed by `b`.
 * Returns an unsigned 32-bit integer. Out-of-range bounds are clamped to the array; nothing throws.
 */
export function crc32(data: Uint8Array, start = 0, end = data.length, previous = 0): number {
  if (start < 0) start = 0;
  if (end > data.length) end = data.length;
  let c = ~previous;
  for (let i = start; i < end; i++) c = TABLE[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}
