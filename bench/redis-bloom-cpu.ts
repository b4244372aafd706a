/**
 * CPU of Kafka mode's seen set, client and Redis apart: batches of links checked against the
 * Redis Bloom filter and the unseen ones added, as seen-test does; the client's CPU from
 * process.cpuUsage, Redis's from its own INFO (used_cpu_user + used_cpu_sys). Run it from two
 * builds in turn to compare them.
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json && node dist/bench/redis-bloom-cpu.js [batches] [linksPerBatch]
 */
import { bloomParams } from '../lib/bloom/sizing';
import { processCpuMs } from './parser-floor';
import { withRedisSeenSet } from './redis-seen-run';

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
  await withRedisSeenSet('bloom-cpu', bloomParams(10_000_000, 0.01), async (seen) => {
    const batch = (b: number, base: number): string[] => Array.from({ length: PER_BATCH }, (_, i) => url(base + b * PER_BATCH + i));
    // Warm-up (scripts loaded, code optimised) on URLs the measured batches do not use.
    for (let b = 0; b < 50; b++) {
      const urls = batch(b, 10_000_000);
      await seen.check(urls);
      await seen.add(urls);
    }
    const info = (): Promise<string> => seen.bloom.redis.info('cpu');
    const redis0 = redisCpuMs(await info());
    const client0 = processCpuMs();
    const t0 = process.hrtime.bigint();
    for (let b = 0; b < BATCHES; b++) {
      const urls = batch(b, 0);
      const known = await seen.check(urls);
      await seen.add(urls.filter((_, i) => !known[i]));
    }
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const clientMs = processCpuMs() - client0;
    const redisMs = redisCpuMs(await info()) - redis0;
    const links = BATCHES * PER_BATCH;
    const us = (ms: number): string => ((ms * 1000) / links).toFixed(2);
    process.stdout.write(
      `${links} links in batches of ${PER_BATCH}: client ${clientMs.toFixed(0)} ms CPU (${us(clientMs)} µs a link), ` +
        `Redis ${redisMs.toFixed(0)} ms (${us(redisMs)} µs), together ${us(clientMs + redisMs)} µs a link; wall ${wallMs.toFixed(0)} ms\n`,
    );
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
