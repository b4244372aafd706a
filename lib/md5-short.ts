/**
 * MD5 (RFC 1321) of a short Latin-1 string packed in an int32 (up to 4 characters, 8 bits each,
 * first character highest), hashed as its UTF-8 bytes, as crypto's md5 of the string would.
 * Only the digest's last 8 bytes are returned: they are SimHash's feature hash (lib/simhash.ts).
 *
 * Why in JavaScript: such a message fits one 64-byte block, and a call into OpenSSL (string to
 * bytes, a Buffer per digest) costs several times the 64 rounds themselves. SimHash hashes
 * thousands of distinct shingles per page, so this is most of its cost on varied text.
 */

import { md5Block, md5Init } from './md5-block';

const X = new Int32Array(16);
const H = new Int32Array(4);

function bswap(x: number): number {
  return ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
}

/**
 * Writes the digest's bytes 8..11 and 12..15, each read as a big-endian int32 (as
 * Buffer.readInt32BE(8) / (12) would), to out[0] and out[1].
 */
export function md5Low64Latin1(key: number, width: number, out: Int32Array): void {
  // At most 4 characters of 2 UTF-8 bytes and the 0x80 terminator: words 0..2; the rest stay 0.
  X[0] = 0;
  X[1] = 0;
  X[2] = 0;
  let n = 0;
  for (let j = width - 1; j >= 0; j--) {
    const c = (key >>> (8 * j)) & 0xff;
    if (c < 0x80) {
      X[n >> 2] |= c << (8 * (n & 3));
      n++;
    } else {
      X[n >> 2] |= (0xc0 | (c >> 6)) << (8 * (n & 3));
      n++;
      X[n >> 2] |= (0x80 | (c & 0x3f)) << (8 * (n & 3));
      n++;
    }
  }
  X[n >> 2] |= 0x80 << (8 * (n & 3));
  X[14] = n * 8; // message length in bits, little-endian 64-bit; the high word stays 0
  md5Init(H);
  md5Block(X, H);
  out[0] = bswap(H[2]);
  out[1] = bswap(H[3]);
}
