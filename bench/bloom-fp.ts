/**
 * Measured false-positive rate against the designed p (issue #4: within 20% of p):
 * 10 M generated URLs into the embedded (in-memory) filter, 1 M into the Redis one, each
 * sized for exactly that many URLs; then as many never-added URLs are probed.
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json && node dist/bench/bloom-fp.js [memoryUrls] [redisUrls] [p]
 */
import { withRedisSeenSet } from './redis-seen-run';
import { MemoryBloom } from '../lib/bloom/memory';
import { bloomParams, type BloomParams } from '../lib/bloom/sizing';
import type { SeenSet } from '../lib/bloom/types';

const MEMORY_N = Number(process.argv[2] ?? 10_000_000);
const REDIS_N = Number(process.argv[3] ?? 1_000_000);
const P = Number(process.argv[4] ?? 0.01);
const PROBES = 1_000_000;
const CHUNK = 10_000;

/** Plausible, distinct URLs: many hosts, paths and queries (`set` keeps added and probed apart). */
const url = (set: string, i: number): string =>
  `https://${['www', 'blog', 'shop', 'news'][i % 4]}.site${(i * 7) % 49_999}.example/${set}/${i % 1000}/item-${i}.html?ref=${(i * 2654435761) % 999_983}`;

async function measure(name: string, set: SeenSet, params: BloomParams, n: number): Promise<boolean> {
  const t0 = Date.now();
  for (let i = 0; i < n; i += CHUNK) {
    await set.add(Array.from({ length: Math.min(CHUNK, n - i) }, (_, j) => url('in', i + j)));
  }
  const addS = (Date.now() - t0) / 1000;
  let fp = 0;
  for (let i = 0; i < PROBES; i += CHUNK) {
    const answers = await set.check(Array.from({ length: CHUNK }, (_, j) => url('out', i + j)));
    fp += answers.filter(Boolean).length;
  }
  // No false negatives: a sample of the added URLs must all be seen.
  const sample = await set.check(Array.from({ length: CHUNK }, (_, j) => url('in', Math.floor((j * n) / CHUNK))));
  const rate = fp / PROBES;
  const within = Math.abs(rate - params.p) <= 0.2 * params.p && sample.every(Boolean);
  process.stdout.write(
    `${name.padEnd(8)} n=${n} p=${params.p} k=${params.k} shards=${params.shards} m=${params.shards * params.shardBits} bits: ` +
      `false positives ${fp}/${PROBES} = ${(rate * 100).toFixed(3)}% (${(((rate - params.p) / params.p) * 100).toFixed(1)}% from p), ` +
      `false negatives in sample ${sample.filter((s) => !s).length}/${CHUNK}, added in ${addS.toFixed(1)} s: ${within ? 'within 20% of p' : 'NOT within 20% of p'}\n`,
  );
  return within;
}

async function main(): Promise<void> {
  const memParams = bloomParams(MEMORY_N, P);
  const okMem = await measure('memory', new MemoryBloom(memParams), memParams, MEMORY_N);
  const redisParams = bloomParams(REDIS_N, P);
  const okRedis = await withRedisSeenSet('fp', redisParams, (redis) => measure('redis', redis, redisParams, REDIS_N));
  if (!okMem || !okRedis) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
