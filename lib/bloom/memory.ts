/**
 * The Bloom filter over process memory: the embedded default, and the reference the Redis
 * implementation (connectors/redis-bloom.ts) must agree with bit for bit (same hash, same
 * offsets, same shard choice).
 */
import { bitOffsets, hashUrl, shardOf } from './hash';
import { estimatedFpRate, fillRatio, type BloomParams } from './sizing';
import type { BloomStats, SeenSet } from './types';

export class MemoryBloom implements SeenSet {
  private readonly shards: Uint8Array[];
  private readonly offsets: number[];
  private count = 0;

  constructor(readonly params: BloomParams) {
    this.shards = Array.from({ length: params.shards }, () => new Uint8Array(params.shardBits / 8));
    this.offsets = new Array<number>(params.k);
  }

  has(url: string): boolean {
    const h = hashUrl(url);
    const bits = this.shards[shardOf(h, this.params)];
    for (const o of bitOffsets(h, this.params, this.offsets)) {
      if ((bits[o >>> 3] & (1 << (o & 7))) === 0) return false;
    }
    return true;
  }

  /** Set the URL's bits; true when at least one was clear (the URL was new). */
  put(url: string): boolean {
    const h = hashUrl(url);
    const bits = this.shards[shardOf(h, this.params)];
    let fresh = false;
    for (const o of bitOffsets(h, this.params, this.offsets)) {
      const mask = 1 << (o & 7);
      if ((bits[o >>> 3] & mask) === 0) {
        fresh = true;
        bits[o >>> 3] |= mask;
      }
    }
    if (fresh) this.count++;
    return fresh;
  }

  async check(urls: readonly string[]): Promise<boolean[]> {
    return urls.map((u) => this.has(u));
  }

  async add(urls: readonly string[]): Promise<void> {
    for (const u of urls) this.put(u);
  }

  stats(): BloomStats {
    return {
      generation: 'memory',
      added: this.count,
      capacity: this.params.n,
      fillRatio: fillRatio(this.params, this.count),
      estimatedFpRate: estimatedFpRate(this.params, this.count),
    };
  }
}
