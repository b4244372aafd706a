/**
 * Generations of the Bloom filter (pure rules; connectors/redis-bloom.ts keeps them in Redis).
 *
 * A pointer names up to three generations:
 *   current  — checked and added to: the filter in force;
 *   building — being filled by `crawl bloom rebuild`; seen-test adds new URLs to it too, so
 *              URLs found during the replay are not missing from it after the switch;
 *   previous — the generation just replaced; still checked until every seen-test has had
 *              time to notice the switch (a few pointer refresh periods), then dropped.
 * Checking both current and previous during a switch means the switch can only add "seen"
 * answers the old filter gave anyway; it never makes a URL look new that was seen.
 */
import { bitOffsets, hashUrl, shardOf } from './hash';
import type { BloomParams } from './sizing';

export interface GenPointer {
  current: string | null;
  previous: string | null;
  building: string | null;
}

export const EMPTY_POINTER: GenPointer = { current: null, previous: null, building: null };

export function generationsToCheck(p: GenPointer): string[] {
  return [p.current, p.previous].filter((g): g is string => !!g && g !== '');
}

export function generationsToAdd(p: GenPointer): string[] {
  return [p.current, p.building].filter((g): g is string => !!g && g !== '');
}

/** One script call: the URLs of a batch that fall in one shard, with their k offsets each. */
export interface ShardCall {
  shard: number;
  /** Indexes into the batch. */
  urls: number[];
  /** k offsets per URL, flattened in the order of `urls`. */
  offsets: number[];
}

/** Group a batch's URLs by shard (hashing each URL once). */
export function planShards(urls: readonly string[], b: Pick<BloomParams, 'k' | 'shards' | 'shardBits'>): ShardCall[] {
  const byShard = new Map<number, ShardCall>();
  const tmp = new Array<number>(b.k);
  urls.forEach((u, i) => {
    const h = hashUrl(u);
    const s = shardOf(h, b);
    let call = byShard.get(s);
    if (!call) byShard.set(s, (call = { shard: s, urls: [], offsets: [] }));
    call.urls.push(i);
    for (const o of bitOffsets(h, b, tmp)) call.offsets.push(o);
  });
  return [...byShard.values()];
}

/** A URL counts as seen when any consulted generation holds it. */
export function mergeSeen(target: boolean[], call: ShardCall, answers: readonly number[]): void {
  call.urls.forEach((idx, j) => {
    if (answers[j] === 1) target[idx] = true;
  });
}
