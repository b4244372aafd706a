/**
 * MD5 (RFC 1321) of a string's UTF-8 bytes (md5Utf8) or of a range of bytes (md5Bytes), as
 * `crypto.hash('md5', s)` computes it (lone surrogates become U+FFFD there as here), written as
 * the digest's four little-endian 32-bit words: out[i] is what `digest.readUInt32LE(4 * i)` reads.
 *
 * Why in JavaScript: the URL-seen test hashes every link (25 a page), and a call into OpenSSL
 * for a 40-byte URL cost 1.1-1.5 µs here, most of it the call and the Buffer of each digest:
 * 5% of the crawl's event loop. A URL is one or two 64-byte blocks; nothing is allocated.
 */

import { md5Block, md5Init } from './md5-block';

const X = new Int32Array(16);
const H = new Int32Array(4);
const encoder = new TextEncoder();
/** The message and its padding; grown (never shrunk below this) for long strings. */
let bytes = new Uint8Array(1024);

/** The MD5 of s's UTF-8 bytes as four little-endian words, into out. */
export function md5Utf8(s: string, out: Uint32Array): void {
  const n = s.length;
  // At most 3 bytes per UTF-16 unit, then 0x80, zeros and the 8-byte length.
  room(3 * n);
  let len = 0;
  for (; len < n; len++) {
    const u = s.charCodeAt(len);
    if (u > 0x7f) break;
    bytes[len] = u;
  }
  if (len < n) len = encoder.encodeInto(s, bytes).written;
  digestOf(len, out);
}

/**
 * The MD5 of src[start, end) as four little-endian words, into out: the journal cleaner hashes a
 * record's key straight from the segment's bytes (runtime/log-segments.ts), without making it a
 * string first. md5Bytes of a string's UTF-8 bytes is md5Utf8 of the string.
 */
export function md5Bytes(src: Uint8Array, start: number, end: number, out: Uint32Array): void {
  const len = end - start;
  room(len);
  bytes.set(src.subarray(start, end));
  digestOf(len, out);
}

/** Room in `bytes` for a message of up to n bytes and its padding. */
function room(n: number): void {
  if (bytes.length < n + 72) bytes = new Uint8Array(2 * (n + 72));
}

/** The digest of the message in bytes[0, len), padded in place. */
function digestOf(len: number, out: Uint32Array): void {
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
  md5Init(H);
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) {
      const p = off + 4 * i;
      X[i] = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24);
    }
    md5Block(X, H);
  }
  out[0] = H[0];
  out[1] = H[1];
  out[2] = H[2];
  out[3] = H[3];
}
