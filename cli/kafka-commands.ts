/**
 * Kafka mode: `crawl init`, `crawl seed`, `crawl process`. Services come from the environment:
 *   CRAWL_KAFKA_BROKERS   host:port[,host:port]
 *   CRAWL_REGISTRY_URL    Confluent-API base URL (Apicurio: http://host:port/apis/ccompat/v7)
 *   CRAWL_S3_ENDPOINT, CRAWL_S3_BUCKET, CRAWL_S3_ACCESS_KEY, CRAWL_S3_SECRET_KEY, CRAWL_S3_REGION
 *   CRAWL_TOPIC_PREFIX    optional prefix for every topic and consumer group
 *   CRAWL_REDIS_URL       optional: seen-test's Bloom generations in Redis (redis://host:port)
 *   CRAWL_REDIS_PREFIX    optional Redis key prefix (default `${CRAWL_TOPIC_PREFIX}crawl:bloom:`)
 * plus the CRAWL_* settings of lib/config.ts.
 */
import { join } from 'node:path';
import { createHttpClient } from '../connectors/http-undici';
import { connectKafka, createProducer, ensureTopics, partitionCounts, produce, readTable, watchGroupLag, type GroupLag, type Kafka } from '../connectors/kafka';
import { KafkaHealth } from '../connectors/kafka-health';
import { createPageStore, pageStoreConfigFromEnv } from '../connectors/page-store';
import { AvroRegistry, subjectFor } from '../connectors/registry';
import { loadSchema } from '../lib/avro';
import { loadConfig, type CrawlConfig } from '../lib/config';
import { createLogger, routeProcessWarnings, type Logger } from '../lib/logger';
import { WarcWriter } from '../lib/warc/writer';
import { buildStages, STAGE_NAMES, type StageName } from '../runtime/build-stages';
import { holdWhileOf, kafkaHoldRules, withWarcBacklog } from '../runtime/backlog-holds';
import { encodeRecords, runStageOnKafka, type KafkaRuntime, type RunningStage } from '../runtime/kafka-runner';
import { Deadline, stopSignals } from '../runtime/shutdown';
import { TimeSlice } from '../runtime/time-slice';
import { allTopics, topics, type TopicId } from '../topologies/crawl';
import { argLines, feedSeeds, seedBatches, seedLines, seedLink, SeedTally, type SeedLine } from '../lib/seed-source';
import type { OutRecord } from '../runtime/stage';
import { redisSeenFromEnv } from './bloom';

export interface KafkaEnv {
  brokers: string[];
  registryUrl: string;
  prefix: string;
}

export function kafkaEnv(env: NodeJS.ProcessEnv = process.env): KafkaEnv {
  const brokers = (env.CRAWL_KAFKA_BROKERS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (brokers.length === 0) throw new Error('CRAWL_KAFKA_BROKERS is not set (e.g. 127.0.0.1:19092; `crawl stack up` starts a local one and `crawl stack env` prints it)');
  if (!env.CRAWL_REGISTRY_URL) throw new Error('CRAWL_REGISTRY_URL is not set (e.g. http://127.0.0.1:18081/apis/ccompat/v7)');
  return { brokers, registryUrl: env.CRAWL_REGISTRY_URL, prefix: env.CRAWL_TOPIC_PREFIX ?? '' };
}

/** Register every schema under its topic's subject; returns the ids by topic. */
export async function registerSchemas(registry: AvroRegistry, prefix: string): Promise<Map<TopicId, number>> {
  const ids = new Map<TopicId, number>();
  for (const id of Object.keys(topics) as TopicId[]) {
    const spec = topics[id];
    ids.set(id, await registry.register(subjectFor(prefix + spec.name), loadSchema(spec.valueSchema), 'BACKWARD'));
  }
  return ids;
}

/**
 * A compacted topic as a table: the newest value per key, decoded (null for a tombstone), read
 * from the given partitions (all by default). Only the newest record of a key is decoded.
 */
export async function latestRows<T>(rt: KafkaRuntime, topic: TopicId, partitions = Array.from({ length: rt.partitions }, (_, p) => p)): Promise<Map<string, T | null>> {
  const newest = new Map<string, Buffer | null>();
  for (const r of await readTable(rt.kafka, rt.prefix + topics[topic].name, partitions)) newest.set(r.key, r.value);
  const rows = new Map<string, T | null>();
  for (const [key, raw] of newest) rows.set(key, raw === null ? null : ((await rt.registry.decode(raw)) as T));
  return rows;
}

/** `retryForever` for long-running processes (connectKafka); one-shot commands fail when the brokers stay away. */
export async function runtimeFor(env: KafkaEnv, config: CrawlConfig, log: Logger, health = new KafkaHealth(log), retryForever = false): Promise<KafkaRuntime> {
  const kafka = connectKafka({ brokers: env.brokers, health, retryForever });
  const registry = new AvroRegistry(env.registryUrl);
  const counts = await partitionCounts(kafka, allTopics.map((t) => env.prefix + t.name));
  for (const [topic, n] of counts) {
    if (n !== config.partitions) throw new Error(`${topic} has ${n} partitions but CRAWL_PARTITIONS is ${config.partitions}: run \`crawl init\` with the same setting`);
  }
  return {
    kafka, registry, schemaIds: await registerSchemas(registry, env.prefix), prefix: env.prefix, partitions: config.partitions, log,
    timing: { sessionTimeoutMs: config.kafkaSessionTimeoutMs, heartbeatMs: config.kafkaHeartbeatMs },
  };
}

export async function init(env = kafkaEnv(), config = loadConfig()): Promise<void> {
  const kafka: Kafka = connectKafka({ brokers: env.brokers });
  const r = await ensureTopics(kafka, allTopics, config.partitions, env.prefix);
  const ids = await registerSchemas(new AvroRegistry(env.registryUrl), env.prefix);
  process.stdout.write(`topics created: ${r.created.length}, updated: ${r.updated.length}; schemas registered: ${ids.size}\n`);
}

export interface SeedOptions {
  /** A list of seed URLs, one a line: a path, or `-` for standard input; streamed in batches. */
  file?: string;
  batchSize?: number;
  /** Where the first few refusals and added schemes are told; default stderr. */
  notice?: (line: string) => void;
  /** Feed URLs (--feed): seeds of priority class 1, which the frontier polls once they answer as feeds. */
  feeds?: readonly string[];
}

/**
 * `crawl seed`: URLs from the arguments, then from --file, to crawl.links in batches; each batch
 * is produced (acks = all) before the next lines are read. Prints what was accepted and what was
 * refused, by reason; fails when nothing was accepted.
 */
export async function seed(urls: string[], o: SeedOptions = {}, env = kafkaEnv(), config = loadConfig()): Promise<SeedTally> {
  const log = createLogger();
  const tally = new SeedTally(o.notice ?? ((line) => process.stderr.write(`crawl seed: ${line}\n`)));
  const rt = await runtimeFor(env, config, log);
  const producer = await createProducer(rt.kafka);
  const topic = `${env.prefix}${topics.links.name}`;
  try {
    async function* lines(): AsyncGenerator<SeedLine> {
      yield* argLines(urls);
      if (o.file) yield* seedLines(o.file);
    }
    const feeds = feedSeeds(o.feeds ?? [], tally, Date.now()).map(({ host, link }): OutRecord => ({ topic: 'links', key: host, host, value: link }));
    if (feeds.length) await produce(producer, await encodeRecords(rt, feeds));
    for await (const batch of seedBatches(lines(), o.batchSize ?? 1000)) {
      const now = Date.now();
      const outs: OutRecord[] = [];
      for (const s of batch) {
        tally.add(s);
        if (s.ok) outs.push({ topic: 'links', key: s.host, host: s.host, value: seedLink(s, now) });
      }
      if (outs.length) await produce(producer, await encodeRecords(rt, outs));
    }
  } finally {
    await producer.disconnect();
  }
  process.stdout.write(`seeded ${tally.accepted} URL(s) to ${topic}: ${tally.summary()}\n`);
  if (tally.accepted === 0) throw new Error('no valid seed URL');
  return tally;
}

export async function processes(names: string[], o: { allowPrivateNetwork: boolean }, env = kafkaEnv()): Promise<void> {
  const wanted = (names.includes('all') ? [...STAGE_NAMES] : names) as StageName[];
  for (const n of wanted) if (!STAGE_NAMES.includes(n)) throw new Error(`unknown processor "${n}": ${STAGE_NAMES.join(', ')} or all`);
  const config = loadConfig(process.env, { allowPrivateNetwork: o.allowPrivateNetwork || process.env.CRAWL_ALLOW_PRIVATE_NETWORK === 'true' });
  const log = createLogger();
  routeProcessWarnings(log);
  // Listening from the start: a SIGTERM while starting (the brokers away, say) starts the bound
  // at once, and the process stops as soon as it has started.
  const signals = stopSignals(log, config.stopTimeoutMs);
  const health = new KafkaHealth(log);
  const rt = await runtimeFor(env, config, log, health, true);
  const store = createPageStore(pageStoreConfigFromEnv(), log);
  const warc = new WarcWriter({
    store, prefix: `${config.warcPrefix}-${process.pid}`, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes,
    maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel, software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'), slice: new TimeSlice(),
  });
  // parse's WET-style text records: their own files, warc/<prefix>-<pid>-wet-*.warc.gz.
  const textWarc = new WarcWriter({
    store, prefix: `${config.warcPrefix}-${process.pid}-wet`, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes,
    maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel, software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'), slice: new TimeSlice(),
  });
  const http = createHttpClient({ maxPools: config.httpMaxPools });
  const running: RunningStage[] = [];
  // With CRAWL_REDIS_URL, seen-test shares Bloom generations in Redis; without it, each uses process memory.
  const seen = wanted.includes('seen-test') ? await redisSeenFromEnv(process.env, env.prefix, config, log) : undefined;
  // Fetch waits while parse (in any process) is far behind; each rule's lag is watched on the
  // brokers, whichever process consumes it.
  const rules = kafkaHoldRules(config).filter((r) => wanted.includes(r.stage as StageName));
  const lags = new Map<string, GroupLag>();
  for (const r of rules) {
    const group = env.prefix + r.group;
    const topic = env.prefix + topics[r.topic].name;
    lags.set(`${r.group} ${r.topic}`, await watchGroupLag(rt.kafka, group, topic, 1000, (err) => log.debug({ err, group, topic }, 'backlog not read')));
  }
  // And while its WARC writer is far behind (a slow store): pages would wait in this process.
  const holdWhile = withWarcBacklog(holdWhileOf(rules, (group, topic) => lags.get(`${group} ${topic}`)?.lag() ?? 0), warc, config.warcMaxBytes);
  // One folder of partition stores per crawl (topic prefix), so crawls sharing a machine never mix.
  const frontierStateDir = join(config.stateDir, `${env.prefix}frontier`);
  const parseStateDir = join(config.stateDir, `${env.prefix}parse`);
  // A consumer kafkajs gave up on leaves the process useless: stop it (a supervisor restarts it).
  const onFatal = (): void => void process.kill(process.pid, 'SIGTERM');
  for (const stage of buildStages(wanted, { config, http, warc, textWarc, seen, frontierStateDir, parseStateDir })) {
    running.push(await runStageOnKafka(stage, rt, { holdWhile: holdWhile[stage.id], onFatal }));
  }
  const stopMetrics = await (await import('../api/metrics-server')).startProcessMetrics(config, () => warc.stats, log);
  log.info({ processors: wanted, pid: process.pid }, 'processors running');

  const signal = await signals.requested;
  log.info({ signal, boundMs: config.stopTimeoutMs }, 'stopping: storing, producing and committing what is finished (a second signal exits now)');
  // The stages leave their groups together, within the bound less 1.5 s; the rest is local but
  // for S3 and Redis and has the second before the bound's last half second.
  const deadline = Deadline.in(Math.max(0, config.stopTimeoutMs - 500));
  const results = await Promise.all(running.map((r) => r.stop(new Deadline(deadline.at - 1000))));
  let complete = results.every((r) => r.complete);
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['backlog watch', async () => { for (const l of lags.values()) await l.stop(); }],
    ['Redis seen set', async () => seen?.close()],
    ['WARC files', () => warc.close()],
    ['text WARC files', () => textWarc.close()],
    ['HTTP pools', () => http.close()],
    ['page store', () => store.close()],
    ['metrics listener', () => stopMetrics()],
  ];
  for (const [what, run] of steps) complete = (await deadline.step(what, run, log)) && complete;
  const left = health.closeLeftovers();
  if (left > 0) log.info({ sockets: left }, 'closed broker connections kafkajs left open');
  signals.finish(complete);
}
