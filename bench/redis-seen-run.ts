/**
 * A Redis seen set for one benchmark run: the stack's Redis (CRAWL_REDIS_URL), a key prefix of
 * its own, and every key under that prefix deleted when the run ends, however it ends.
 */
import pino, { type Logger } from 'pino';
import { RedisSeenSet } from '../connectors/redis-seen';
import type { BloomParams } from '../lib/bloom/sizing';

export async function withRedisSeenSet<T>(name: string, params: BloomParams, run: (seen: RedisSeenSet) => Promise<T>, log: Logger = pino({ level: 'error' })): Promise<T> {
  const url = process.env.CRAWL_REDIS_URL;
  if (!url) throw new Error('CRAWL_REDIS_URL is not set: eval "$(bash stack/stack.sh env)" first');
  const prefix = `bench:${name}:${process.pid}:${Date.now()}:`;
  const seen = new RedisSeenSet({ url, prefix, params, log });
  await seen.start();
  try {
    return await run(seen);
  } finally {
    const keys = await seen.bloom.redis.keys(`${prefix}*`);
    if (keys.length) await seen.bloom.redis.del(...keys);
    await seen.close();
  }
}
