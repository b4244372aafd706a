/**
 * Bloom filter sizing: m = −n·ln p / (ln 2)² bits and k = (m/n)·ln 2 hash functions for n
 * URLs per generation at false-positive rate p, split into equal shards of at most
 * maxShardBytes each (Valkey caps one object at 128 MB; Redis strings at 512 MB).
 */

export interface BloomParams {
  /** Designed capacity: URLs per generation. */
  n: number;
  /** Designed false-positive rate at n URLs. */
  p: number;
  /** Hash functions (bits set per URL). */
  k: number;
  /** Shards, chosen by URL hash. */
  shards: number;
  /** Bits per shard (every shard the same size). */
  shardBits: number;
}

export const MAX_SHARD_BYTES = 128 * 1000 * 1000;

export class BloomSizeError extends Error {
  override name = 'BloomSizeError';
}

export function bloomParams(n: number, p: number, maxShardBytes = MAX_SHARD_BYTES): BloomParams {
  if (!Number.isFinite(n) || n < 1) throw new BloomSizeError(`bloom capacity n=${n}: set CRAWL_BLOOM_EXPECTED_URLS to a whole number >= 1`);
  if (!(p > 0 && p < 1)) throw new BloomSizeError(`bloom false-positive rate p=${p}: set CRAWL_BLOOM_FALSE_POSITIVE_RATE between 0 and 1 (e.g. 0.01)`);
  if (!(maxShardBytes >= 1 && maxShardBytes <= MAX_SHARD_BYTES)) {
    throw new BloomSizeError(`bloom shard size ${maxShardBytes} bytes: set CRAWL_BLOOM_MAX_SHARD_BYTES between 1 and ${MAX_SHARD_BYTES}`);
  }
  const m = Math.ceil((-n * Math.log(p)) / (Math.LN2 * Math.LN2));
  const k = Math.max(1, Math.round((m / n) * Math.LN2));
  const maxShardBits = maxShardBytes * 8;
  const shards = Math.ceil(m / maxShardBits);
  // Whole bytes per shard, so a shard's bit string never exceeds the cap.
  const shardBits = Math.ceil(m / shards / 8) * 8;
  return { n, p, k, shards, shardBits };
}

export function totalBits(b: BloomParams): number {
  return b.shards * b.shardBits;
}

/** Expected false-positive rate after `count` distinct URLs: (1 − e^(−k·count/m))^k. */
export function estimatedFpRate(b: BloomParams, count: number): number {
  return Math.pow(1 - Math.exp((-b.k * count) / totalBits(b)), b.k);
}

/** Share of the designed capacity used (the 80% warning threshold applies to this). */
export function fillRatio(b: BloomParams, count: number): number {
  return count / b.n;
}
