/**
 * MD5 (RFC 1321) of a short Latin-1 string packed in an int32 (up to 4 characters, 8 bits each,
 * first character highest), hashed as its UTF-8 bytes, as crypto's md5 of the string would.
 * Only the digest's last 8 bytes are returned: they are SimHash's feature hash (lib/simhash.ts).
 *
 * Why in JavaScript: such a message fits one 64-byte block, and a call into OpenSSL (string to
 * bytes, a Buffer per digest) costs several times the 64 rounds themselves. SimHash hashes
 * thousands of distinct shingles per page, so this is most of its cost on varied text.
 */

/** K[i] = floor(|sin(i + 1)| * 2^32), RFC 1321 §3.4; checked against node:crypto by the tests. */
const K = Int32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
const S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const X = new Int32Array(16);

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
  let a = 0x67452301;
  let b = 0xefcdab89 | 0;
  let c = 0x98badcfe | 0;
  let d = 0x10325476;
  for (let i = 0; i < 64; i++) {
    let f: number;
    let g: number;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) & 15;
    }
    f = (f + a + K[i] + X[g]) | 0;
    a = d;
    d = c;
    c = b;
    const s = S[((i >> 4) << 2) | (i & 3)];
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0;
  }
  out[0] = bswap((c + (0x98badcfe | 0)) | 0);
  out[1] = bswap((d + 0x10325476) | 0);
}
