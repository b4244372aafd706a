/**
 * CPU of Kafka mode's seen set, client and Redis apart: batches of links checked against the
 * Redis Bloom filter and the unseen ones added, as seen-test does; the client's CPU from
 * process.cpuUsage, Redis's from its own INFO (used_cpu_user + used_cpu_sys). Run it from two
 * builds in turn to compare them.
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json && node dist/bench/redis-bloom-cpu.js [batches] [linksPerBatch]
 */
import pino from 'pino';
import { RedisSeenSet } from '../connectors/redis-seen';
import { bloomParams } from '../lib/bloom/sizing';

const BATCHES = Number(process.argv[2] ?? 1500);
const PER_BATCH = Number(process.argv[3] ?? 300);

/** The synthetic web's URL shape: an address host and a page number. */
const url = (i: number): string => `http://127.1.${(i >> 8) & 255}.${i & 255}:8080/p/${(i * 7919) % 100_000}`;

function redisCpuMs(info: string): number {
  const field = (name: string): number => {
    const m = info.match(new RegExp(`^${name}:([0-9.]+)`, 'm'));
    if (!m) throw new Error(`Redis INFO cpu has no ${name}`);
    return Number(m[1]);
  };
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

async function main(): Promise<void> {
  const redisUrl = process.env.CRAWL_REDIS_URL;
  if (!redisUrl) throw new Error('CRAWL_REDIS_URL is not set: eval "$(bash stack/stack.sh env)" first');
  const prefix = `bench:bloom-cpu:${process.pid}:${Date.now()}:`;
  const seen = new RedisSeenSet({ url: redisUrl, prefix, params: bloomParams(10_000_000, 0.01), log: pino({ level: 'error' }) });
  await seen.start();
  const batch = (b: number, base: number): string[] => Array.from({ length: PER_BATCH }, (_, i) => url(base + b * PER_BATCH + i));
  try {
    // Warm-up (scripts loaded, code optimised) on URLs the measured batches do not use.
    for (let b = 0; b < 50; b++) {
      const urls = batch(b, 10_000_000);
      await seen.check(urls);
      await seen.add(urls);
    }
    const info = (): Promise<string> => seen.bloom.redis.info('cpu');
    const redis0 = redisCpuMs(await info());
    const client0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let b = 0; b < BATCHES; b++) {
      const urls = batch(b, 0);
      const known = await seen.check(urls);
      await seen.add(urls.filter((_, i) => !known[i]));
    }
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(client0);
    const clientMs = (c.user + c.system) / 1000;
    const redisMs = redisCpuMs(await info()) - redis0;
    const links = BATCHES * PER_BATCH;
    const us = (ms: number): string => ((ms * 1000) / links).toFixed(2);
    process.stdout.write(
      `${links} links in batches of ${PER_BATCH}: client ${clientMs.toFixed(0)} ms CPU (${us(clientMs)} µs a link), ` +
        `Redis ${redisMs.toFixed(0)} ms (${us(redisMs)} µs), together ${us(clientMs + redisMs)} µs a link; wall ${wallMs.toFixed(0)} ms\n`,
    );
  } finally {
    const keys = await seen.bloom.redis.keys(`${prefix}*`);
    if (keys.length) await seen.bloom.redis.del(...keys);
    await seen.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
