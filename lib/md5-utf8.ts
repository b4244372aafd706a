/**
 * MD5 (RFC 1321) of a string's UTF-8 bytes, as `crypto.hash('md5', s)` computes it (lone
 * surrogates become U+FFFD there as here), written as the digest's four little-endian 32-bit
 * words: out[i] is what `digest.readUInt32LE(4 * i)` reads.
 *
 * Why in JavaScript: the URL-seen test hashes every link (25 a page), and a call into OpenSSL
 * for a 40-byte URL cost 1.1-1.5 µs here, most of it the call and the Buffer of each digest:
 * 5% of the crawl's event loop. A URL is one or two 64-byte blocks; nothing is allocated.
 */

/** K[i] = floor(|sin(i + 1)| * 2^32), RFC 1321 §3.4; checked against node:crypto by the tests. */
const K = Int32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
const S = Int32Array.from([7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]);
const X = new Int32Array(16);
const H = new Int32Array(4);
const encoder = new TextEncoder();
/** The message and its padding; grown (never shrunk below this) for long strings. */
let bytes = new Uint8Array(1024);

function compress(b: Uint8Array, off: number): void {
  for (let i = 0; i < 16; i++) {
    const p = off + 4 * i;
    X[i] = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24);
  }
  let a = H[0];
  let bb = H[1];
  let c = H[2];
  let d = H[3];
  for (let i = 0; i < 64; i++) {
    let f: number;
    let g: number;
    if (i < 16) {
      f = (bb & c) | (~bb & d);
      g = i;
    } else if (i < 32) {
      f = (d & bb) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (i < 48) {
      f = bb ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (bb | ~d);
      g = (7 * i) & 15;
    }
    f = (f + a + K[i] + X[g]) | 0;
    a = d;
    d = c;
    c = bb;
    const s = S[((i >> 4) << 2) | (i & 3)];
    bb = (bb + ((f << s) | (f >>> (32 - s)))) | 0;
  }
  H[0] = (H[0] + a) | 0;
  H[1] = (H[1] + bb) | 0;
  H[2] = (H[2] + c) | 0;
  H[3] = (H[3] + d) | 0;
}

/** The MD5 of s's UTF-8 bytes as four little-endian words, into out. */
export function md5Utf8(s: string, out: Uint32Array): void {
  const n = s.length;
  // At most 3 bytes per UTF-16 unit, then 0x80, zeros and the 8-byte length.
  if (bytes.length < 3 * n + 72) bytes = new Uint8Array(2 * (3 * n + 72));
  let len = 0;
  for (; len < n; len++) {
    const u = s.charCodeAt(len);
    if (u > 0x7f) break;
    bytes[len] = u;
  }
  if (len < n) len = encoder.encodeInto(s, bytes).written;
  const total = (((len + 8) >> 6) + 1) << 6;
  bytes[len] = 0x80;
  bytes.fill(0, len + 1, total - 8);
  // Length in bits, 64-bit little-endian.
  const lo = (len << 3) >>> 0;
  const hi = Math.floor(len / 0x20000000);
  for (let i = 0; i < 4; i++) {
    bytes[total - 8 + i] = (lo >>> (8 * i)) & 0xff;
    bytes[total - 4 + i] = (hi >>> (8 * i)) & 0xff;
  }
  H[0] = 0x67452301;
  H[1] = 0xefcdab89 | 0;
  H[2] = 0x98badcfe | 0;
  H[3] = 0x10325476;
  for (let off = 0; off < total; off += 64) compress(bytes, off);
  out[0] = H[0];
  out[1] = H[1];
  out[2] = H[2];
  out[3] = H[3];
}
