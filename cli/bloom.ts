/**
 * `crawl bloom rebuild | stats | abort` (Kafka mode with CRAWL_REDIS_URL), and the Redis seen
 * set of `crawl process seen-test`.
 *
 * rebuild: a new, empty generation is published as `building`, so every seen-test adds newly
 * forwarded URLs to it too; after bloomSwitchWaitMs (every seen-test has re-read the pointer)
 * the compacted crawl.urls is replayed from the beginning up to its end offsets at that moment
 * (URLs written after that are covered by the seen-tests' double adds). A URL whose latest row
 * is a tombstone (expired from the table) is left out. Then the switch is atomic; seen-tests
 * consult the old generation as well until they notice it, and it is dropped after another
 * bloomSwitchWaitMs. Two passes over the table (tombstoned keys first) keep memory to the
 * tombstoned keys, not the whole table.
 */
import { connectKafka, type Kafka } from '../connectors/kafka';
import { endOffsets, replayKeys } from '../connectors/kafka-replay';
import { connectRedis, RedisBloom } from '../connectors/redis-bloom';
import { RedisSeenSet } from '../connectors/redis-seen';
import { bloomParams, estimatedFpRate, fillRatio } from '../lib/bloom/sizing';
import { loadConfig, type CrawlConfig } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import { topics } from '../topologies/crawl';
import { formatDuration, ProgressReporter } from './progress';

export function redisPrefix(env: NodeJS.ProcessEnv, topicPrefix: string): string {
  return env.CRAWL_REDIS_PREFIX || `${topicPrefix}crawl:bloom:`;
}

function redisUrl(env: NodeJS.ProcessEnv): string {
  if (!env.CRAWL_REDIS_URL) throw new Error('CRAWL_REDIS_URL is not set (e.g. redis://127.0.0.1:16379; `crawl stack env` prints it)');
  return env.CRAWL_REDIS_URL;
}

/** The Redis seen set when CRAWL_REDIS_URL is set, else undefined (seen-test then uses process memory). */
export async function redisSeenFromEnv(env: NodeJS.ProcessEnv, topicPrefix: string, config: CrawlConfig, log: Logger): Promise<RedisSeenSet | undefined> {
  if (!env.CRAWL_REDIS_URL) return undefined;
  const seen = new RedisSeenSet({
    url: env.CRAWL_REDIS_URL, prefix: redisPrefix(env, topicPrefix), refreshMs: config.bloomRefreshMs, log,
    params: bloomParams(config.bloomExpectedUrls, config.bloomFalsePositiveRate, config.bloomMaxShardBytes),
  });
  await seen.start();
  return seen;
}

export interface RebuildOptions {
  kafka: Kafka;
  /** The crawl.urls topic name (with any prefix). */
  urlsTopic: string;
  bloom: RedisBloom;
  config: CrawlConfig;
  log: Logger;
  /** Told how far the replay has come (rows read of `total`) and what it is doing. */
  onProgress?: (rowsRead: number, total: number, doing: string) => void;
}

export interface RebuildReport {
  generation: string;
  replaced: string | null;
  rows: number;
  urls: number;
  tombstoned: number;
  seconds: number;
  peakRssBytes: number;
  bitFill: number;
  estimatedFpRate: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function rebuild(o: RebuildOptions): Promise<RebuildReport> {
  const t0 = Date.now();
  const c = o.config;
  const params = bloomParams(c.bloomExpectedUrls, c.bloomFalsePositiveRate, c.bloomMaxShardBytes);
  const gen = await o.bloom.startBuilding(params);
  let switched = false;
  o.log.info({ generation: gen.id, n: gen.n, p: gen.p, k: gen.k, shards: gen.shards }, 'building a Bloom generation; waiting for seen-tests to add to it');
  try {
    await sleep(c.bloomSwitchWaitMs);
    const ends = await endOffsets(o.kafka, o.urlsTopic);
    const total = [...ends.values()].reduce((a, b) => a + b, 0);
    // Pass 1: keys whose latest row is a tombstone. A key lives in one partition, read in order.
    const dead = new Set<string>();
    let scanned = 0;
    await replayKeys(o.kafka, o.urlsTopic, ends, async (rows) => {
      for (const r of rows) {
        if (r.tombstone) dead.add(r.key);
        else dead.delete(r.key);
      }
      scanned += rows.length;
      o.onProgress?.(scanned, total * 2, 'pass 1/2: tombstones');
    });
    // Pass 2: every live key into the new generation, one round trip per fetched batch.
    let urls = 0;
    const rowsRead = await replayKeys(o.kafka, o.urlsTopic, ends, async (rows) => {
      const live = rows.filter((r) => !r.tombstone && !dead.has(r.key)).map((r) => r.key);
      if (live.length) await o.bloom.addTo([gen], live);
      urls += live.length;
      scanned += rows.length;
      o.onProgress?.(scanned, total * 2, `pass 2/2: ${urls} URLs added`);
    });
    const replaced = await o.bloom.switchTo(gen.id);
    switched = true;
    o.log.info({ generation: gen.id, replaced }, 'switched Bloom generation; dropping the old one once every seen-test has noticed');
    await sleep(c.bloomSwitchWaitMs);
    if (replaced) await o.bloom.drop(replaced);
    const g = (await o.bloom.generation(gen.id))!;
    return {
      generation: gen.id, replaced, rows: rowsRead, urls, tombstoned: dead.size, seconds: (Date.now() - t0) / 1000,
      peakRssBytes: process.resourceUsage().maxRSS * 1024, bitFill: await o.bloom.bitFill(gen.id), estimatedFpRate: estimatedFpRate(g, g.added),
    };
  } catch (err) {
    // Leave nothing half-built behind: seen-tests stop adding to it at their next refresh.
    if (!switched) await o.bloom.drop(gen.id).catch(() => undefined);
    throw err;
  }
}

/** `fn` with the filter the environment names, connected, and disconnected after it either way. */
async function withBloom(env: NodeJS.ProcessEnv, fn: (bloom: RedisBloom) => Promise<void>): Promise<void> {
  const bloom = new RedisBloom(connectRedis(redisUrl(env)), redisPrefix(env, env.CRAWL_TOPIC_PREFIX ?? ''));
  await bloom.redis.connect();
  try {
    await fn(bloom);
  } finally {
    bloom.redis.disconnect();
  }
}

export async function rebuildCommand(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const brokers = (env.CRAWL_KAFKA_BROKERS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const kafka = connectKafka({ brokers });
  await withBloom(env, async (bloom) => {
    const at = { rows: 0, total: 0, doing: 'waiting for every seen-test to add to the new generation' };
    const progress = new ProgressReporter(process.stderr, () => ({
      count: at.rows,
      line: (perSec) => `${at.rows} of ${at.total} rows, ${perSec.toFixed(0)}/s, ${at.doing}${perSec > 0 ? `, ETA ${formatDuration((at.total - at.rows) / perSec)}` : ''}`,
    }));
    progress.start();
    const r = await rebuild({
      kafka, bloom, config: loadConfig(env), log: createLogger(), urlsTopic: (env.CRAWL_TOPIC_PREFIX ?? '') + topics.urls.name,
      onProgress: (rows, total, doing) => Object.assign(at, { rows, total, doing }),
    }).finally(() => progress.stop());
    process.stdout.write(
      `generation ${r.generation} in force (replaced ${r.replaced ?? 'none'}): ${r.urls} URLs from ${r.rows} rows, ${r.tombstoned} tombstoned left out, ` +
        `${r.seconds.toFixed(1)} s, peak RSS ${(r.peakRssBytes / 1048576).toFixed(0)} MiB, bits set ${(r.bitFill * 100).toFixed(1)}%, est. false positives ${(r.estimatedFpRate * 100).toFixed(2)}%\n`,
    );
  });
}

export async function statsCommand(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await withBloom(env, async (bloom) => {
    const p = await bloom.pointer();
    process.stdout.write(`pointer: current=${p.current ?? '-'} previous=${p.previous ?? '-'} building=${p.building ?? '-'}\n`);
    for (const id of [p.current, p.previous, p.building]) {
      const g = id ? await bloom.generation(id) : null;
      if (!g) continue;
      process.stdout.write(
        `generation ${g.id}: n=${g.n} p=${g.p} k=${g.k} shards=${g.shards}x${g.shardBits} bits, added ${g.added}, ` +
          `fill ${(fillRatio(g, g.added) * 100).toFixed(1)}% of capacity, est. false positives ${(estimatedFpRate(g, g.added) * 100).toFixed(3)}%\n`,
      );
    }
  });
}

/** Drop a generation left `building` by a rebuild that died. */
export async function abortCommand(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await withBloom(env, async (bloom) => {
    const p = await bloom.pointer();
    if (!p.building) process.stdout.write('no generation is being built\n');
    else {
      await bloom.drop(p.building);
      process.stdout.write(`dropped generation ${p.building}\n`);
    }
  });
}
