/**
 * Bit positions of a URL in a sharded Bloom filter, from ONE 128-bit hash.
 *
 * Why MD5: 128 bits wide and uniform on non-adversarial input, and the positions of every
 * Bloom generation already stored (Redis, `crawl bloom rebuild`) are MD5's. It is computed in
 * JavaScript (lib/md5-utf8.ts, the same digest as node:crypto's): 0.3 µs for a URL here, where
 * a call into OpenSSL cost 1.1-1.5 µs. Collision resistance does not matter here; at worst a
 * crafted URL looks seen and the frontier's exact check never sees it, which is the false
 * positive we accept anyway.
 *
 * The four 32-bit words: word 0 picks the shard; words 1 and 2 are h1 and h2 of enhanced
 * double hashing (Dillinger & Manolios): g_i = h1 + i·h2 + (i³ − i)/6 mod m, which avoids
 * the short cycles of plain h1 + i·h2 when h2 shares a factor with m. Shards hold at most
 * 2^30 bits, so 32-bit h1/h2 cover every position, and all arithmetic stays exact in doubles.
 */
import { md5Utf8 } from '../md5-utf8';
import type { BloomParams } from './sizing';

export interface UrlHash {
  w0: number;
  h1: number;
  h2: number;
}

/**
 * seen-test hashes each URL twice moments apart: when it checks a batch, and again when it adds
 * the URLs whose candidates were produced. The last RECENT_MAX hashes are kept for that second
 * use (the Map is emptied when full, so memory stays a few MiB).
 */
const RECENT_MAX = 1 << 15;
const recent = new Map<string, UrlHash>();
const digest = new Uint32Array(4);

export function hashUrl(url: string): UrlHash {
  const known = recent.get(url);
  if (known !== undefined) return known;
  md5Utf8(url, digest);
  const h = { w0: digest[0], h1: digest[1], h2: digest[2] };
  if (recent.size >= RECENT_MAX) recent.clear();
  recent.set(url, h);
  return h;
}

export function shardOf(h: UrlHash, b: Pick<BloomParams, 'shards'>): number {
  return h.w0 % b.shards;
}

/** The k bit offsets inside the URL's shard, written into `out` (length ≥ k). */
export function bitOffsets(h: UrlHash, b: Pick<BloomParams, 'k' | 'shardBits'>, out: number[] = new Array<number>(b.k)): number[] {
  const m = b.shardBits;
  let x = h.h1 % m;
  let y = h.h2 % m;
  for (let i = 0; i < b.k; i++) {
    out[i] = x;
    x = (x + y) % m;
    y = (y + i + 1) % m;
  }
  return out;
}
