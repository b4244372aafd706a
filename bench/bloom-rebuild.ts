/**
 * `crawl bloom rebuild` over a compacted crawl.urls of ≥ 1 M URLs while a crawl runs (issue #4):
 * generates the rows into a topic with a unique prefix (1 % of them later tombstoned, as
 * expired URLs are), keeps a live seen-test adding new URLs (and their rows) during the
 * rebuild, runs the real CLI as a child process, and then checks that no URL is hidden or
 * lost: every live URL and every URL added during the rebuild is seen; tombstoned and
 * never-added URLs look seen only at the designed false-positive rate.
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json && node dist/bench/bloom-rebuild.js [urls]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { connectKafka, ensureTopics } from '../connectors/kafka';
import { RedisSeenSet } from '../connectors/redis-seen';
import { bloomParams } from '../lib/bloom/sizing';
import { topics } from '../topologies/crawl';

const N = Number(process.argv[2] ?? 1_000_000);
const PARTITIONS = 8;
const P = 0.01;
const url = (set: string, i: number): string => `https://www.site${(i * 7) % 49_999}.example/${set}/${i % 1000}/page-${i}.html`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const env = process.env;
  if (!env.CRAWL_REDIS_URL || !env.CRAWL_KAFKA_BROKERS) throw new Error('eval "$(bash stack/stack.sh env)" first');
  const prefix = `bench-rebuild-${process.pid}-${Date.now()}.`;
  const topic = prefix + topics.urls.name;
  const kafka = connectKafka({ brokers: env.CRAWL_KAFKA_BROKERS.split(',') });
  await ensureTopics(kafka, [topics.urls], PARTITIONS, prefix);
  const producer = kafka.producer();
  await producer.connect();
  // A key always goes to one partition (the crawl routes by host), so its tombstone follows its rows.
  const partitionOf = (key: string): number => Number(/page-(\d+)/.exec(key)![1]) % PARTITIONS;
  const send = (keys: string[], value: Buffer | null): Promise<unknown> =>
    producer.send({ topic, acks: -1, messages: keys.map((key) => ({ key, value, partition: partitionOf(key) })) });
  const row = Buffer.alloc(120, 1); // about a UrlState row; the rebuild reads keys and tombstones only
  let t = Date.now();
  for (let i = 0; i < N; i += 20_000) await send(Array.from({ length: Math.min(20_000, N - i) }, (_, j) => url('live', i + j)), row);
  const expired = Array.from({ length: Math.floor(N / 100) }, (_, i) => url('live', i * 100));
  for (let i = 0; i < expired.length; i += 20_000) await send(expired.slice(i, i + 20_000), null);
  process.stdout.write(`generated ${N} rows + ${expired.length} tombstones into ${topic} in ${((Date.now() - t) / 1000).toFixed(1)} s\n`);

  const redisPrefix = `${prefix}crawl:bloom:`;
  const seen = new RedisSeenSet({ url: env.CRAWL_REDIS_URL, prefix: redisPrefix, params: bloomParams(2 * N, P), log: pino({ level: 'error' }) });
  await seen.start();
  const oldGen = seen.generations.current;
  // The running crawl: new URLs forwarded by seen-test, their rows written by the frontier.
  const duringRebuild: string[] = [];
  let stop = false;
  const crawl = (async () => {
    for (let i = 0; !stop; i++) {
      const batch = Array.from({ length: 50 }, (_, j) => url('crawl', i * 50 + j));
      await send(batch, row);
      await seen.add(batch);
      duringRebuild.push(...batch);
      await sleep(10);
    }
  })();

  t = Date.now();
  const child = spawn(process.execPath, [join(__dirname, '..', '..', 'bin', 'crawl.js'), 'bloom', 'rebuild'], {
    env: { ...env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_BLOOM_EXPECTED_URLS: String(2 * N), CRAWL_BLOOM_FALSE_POSITIVE_RATE: String(P), CRAWL_BLOOM_SWITCH_WAIT_MS: '3000', CRAWL_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  const seconds = (Date.now() - t) / 1000;
  stop = true;
  await crawl;
  await producer.disconnect();
  if (code !== 0) throw new Error(`crawl bloom rebuild exited with ${code}`);
  process.stdout.write(`crawl bloom rebuild: ${out.trim()}\n  wall time ${seconds.toFixed(1)} s (including 2 x 3 s switch waits)\n`);

  for (let i = 0; i < 100 && (seen.generations.current === oldGen || seen.generations.previous); i++) await sleep(100);
  const count = async (urls: string[]): Promise<number> => {
    let n = 0;
    for (let i = 0; i < urls.length; i += 10_000) n += (await seen.check(urls.slice(i, i + 10_000))).filter(Boolean).length;
    return n;
  };
  const dead = new Set(expired);
  const live = Array.from({ length: N }, (_, i) => url('live', i)).filter((u) => !dead.has(u));
  const fresh = Array.from({ length: 100_000 }, (_, i) => url('never', i));
  const [liveSeen, crawlSeen, deadSeen, freshSeen] = [await count(live), await count(duringRebuild), await count(expired), await count(fresh)];
  process.stdout.write(
    `after the switch (generation ${seen.generations.current}, old ${oldGen} dropped: ${seen.generations.previous === null}):\n` +
      `  live URLs seen ${liveSeen}/${live.length} (false negatives ${live.length - liveSeen})\n` +
      `  URLs added by the running crawl during the rebuild seen ${crawlSeen}/${duringRebuild.length}\n` +
      `  tombstoned URLs seen ${deadSeen}/${expired.length} (${((deadSeen / expired.length) * 100).toFixed(2)}%, expected ~ the filter's rate)\n` +
      `  never-added URLs seen ${freshSeen}/${fresh.length} (${((freshSeen / fresh.length) * 100).toFixed(2)}%)\n` +
      `  ${liveSeen === live.length && crawlSeen === duringRebuild.length ? 'no URL hidden or lost' : 'URLS MISSING'}\n`,
  );
  if (liveSeen !== live.length || crawlSeen !== duringRebuild.length) process.exitCode = 1;

  const keys = await seen.bloom.redis.keys(`${redisPrefix}*`);
  if (keys.length) await seen.bloom.redis.del(...keys);
  await seen.close();
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
