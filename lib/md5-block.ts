/**
 * One MD5 block (RFC 1321 §3.4): the 64 rounds over sixteen little-endian message words, added
 * into the running state. Shared by lib/md5-short.ts (SimHash's shingles, one block) and
 * lib/md5-utf8.ts (the URL-seen test's URLs, one block or more).
 */

/** K[i] = floor(|sin(i + 1)| * 2^32), RFC 1321 §3.4; checked against node:crypto by the tests. */
const K = Int32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
const S = Int32Array.from([7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]);

/** The state before the first block. */
export function md5Init(h: Int32Array): void {
  h[0] = 0x67452301;
  h[1] = 0xefcdab89 | 0;
  h[2] = 0x98badcfe | 0;
  h[3] = 0x10325476;
}

/** Runs the block `x` (16 words) and adds the result into the state `h` (4 words). */
export function md5Block(x: Int32Array, h: Int32Array): void {
  let a = h[0];
  let b = h[1];
  let c = h[2];
  let d = h[3];
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
    f = (f + a + K[i] + x[g]) | 0;
    a = d;
    d = c;
    c = b;
    const s = S[((i >> 4) << 2) | (i & 3)];
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
}
