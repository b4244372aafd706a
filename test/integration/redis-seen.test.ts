/**
 * The Redis seen set against the stack's real Redis (CRAWL_REDIS_URL) and Kafka: agreement
 * with the in-memory filter, generations and the switch, degradation while Redis is
 * unreachable and recovery, and a flushed filter restored by `rebuild` from crawl.urls.
 * Every test uses its own key prefix (and topic prefix); keys are deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pino from 'pino';
import { Kafka, logLevel } from 'kafkajs';
import { rebuild } from '../../cli/bloom';
import { ensureTopics } from '../../connectors/kafka';
import { connectRedis, RedisBloom } from '../../connectors/redis-bloom';
import { RedisSeenSet } from '../../connectors/redis-seen';
import { bitOffsets, hashUrl } from '../../lib/bloom/hash';
import { MemoryBloom } from '../../lib/bloom/memory';
import { bloomParams } from '../../lib/bloom/sizing';
import { DEFAULTS } from '../../lib/config';
import { topics } from '../../topologies/crawl';

const log = pino({ level: 'silent' });
const redisUrl = (): string => {
  const u = process.env.CRAWL_REDIS_URL;
  if (!u) throw new Error('CRAWL_REDIS_URL is not set: the integration global setup should provide it');
  return u;
};
const run = `${Date.now()}-${randomBytes(3).toString('hex')}`;
const prefixes: string[] = [];
const newPrefix = (name: string): string => {
  const p = `test:${run}:${name}:`;
  prefixes.push(p);
  return p;
};
const urls = (tag: string, n: number): string[] => Array.from({ length: n }, (_, i) => `https://h${i % 31}.example/${tag}/${i}`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean | Promise<boolean>, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for: ${what}`);
}

async function seenSet(prefix: string, url = redisUrl(), params = bloomParams(100_000, 0.001, 50_000)): Promise<RedisSeenSet> {
  const s = new RedisSeenSet({ url, prefix, params, refreshMs: 100, warnEveryMs: 60_000, log });
  await s.start();
  return s;
}

afterAll(async () => {
  const r = connectRedis(redisUrl());
  await r.connect();
  for (const p of prefixes) {
    const keys = await r.keys(`${p}*`);
    if (keys.length) await r.del(...keys);
  }
  r.disconnect();
});

describe('Redis Bloom filter', () => {
  it('answers exactly as the in-memory filter over several shards, one pipeline per batch', async () => {
    const params = bloomParams(20_000, 0.01, 4_000);
    expect(params.shards).toBeGreaterThan(4);
    const seen = await seenSet(newPrefix('agree'), redisUrl(), params);
    // The set creates generation 1 with its params on an empty prefix.
    const mem = new MemoryBloom(params);
    expect(seen.stats()).toMatchObject({ added: 0, capacity: 20_000 });
    // Count round trips: a check of a batch over several shards is one pipeline.
    const pipelines = jest.spyOn(seen.bloom.redis, 'pipeline');
    const added = urls('in', 20_000);
    for (let i = 0; i < added.length; i += 1000) await seen.add(added.slice(i, i + 1000));
    await mem.add(added);
    const probe = [...added.slice(0, 3000), ...urls('out', 20_000)];
    pipelines.mockClear();
    const [fromRedis, fromMemory] = [await seen.check(probe), await mem.check(probe)];
    expect(pipelines).toHaveBeenCalledTimes(1);
    expect(pipelines.mock.results[0].value.length).toBeGreaterThanOrEqual(params.shards);
    pipelines.mockRestore();
    // Same hash, same offsets, same shards: the same answer for every URL, false positives included.
    expect(fromRedis).toEqual(fromMemory);
    expect(fromRedis.slice(0, 3000).every(Boolean)).toBe(true);
    const fp = fromRedis.slice(3000).filter(Boolean).length / 20_000;
    expect(fp).toBeGreaterThan(0.005);
    expect(fp).toBeLessThan(0.015);
    expect(fromMemory.slice(3000).filter(Boolean).length / 20_000).toBeLessThan(0.015);
    await seen.refresh();
    expect(seen.stats()!.added).toBeGreaterThan(19_800);
    await seen.close();
  });

  it('sets and tests the very bits the in-memory filter computes, offsets past 2^24 included', async () => {
    // One shard of 48 million bits (6 MB in Redis): offsets need all four bytes of the packed
    // argument, so a wrong byte order or width would miss the bits read back here one by one.
    const params = bloomParams(5_000_000, 0.01, 8_000_000);
    expect(params.shards).toBe(1);
    expect(params.shardBits).toBeGreaterThan(2 ** 25);
    const prefix = newPrefix('wide');
    const seen = await seenSet(prefix, redisUrl(), params);
    const added = urls('wide', 3000);
    await seen.add(added);
    const offsets = added.flatMap((u) => bitOffsets(hashUrl(u), params));
    expect(offsets.filter((o) => o >= 2 ** 24).length).toBeGreaterThan(offsets.length / 2);
    const key = seen.bloom.shardKey(seen.generations.current!, 0);
    const pipe = seen.bloom.redis.pipeline();
    for (const o of offsets) pipe.getbit(key, o);
    const bits = (await pipe.exec())!.map(([err, v]) => (err ? -1 : v));
    expect(bits.every((b) => b === 1)).toBe(true);
    expect(await seen.bloom.redis.bitcount(key)).toBe(new Set(offsets).size);
    // And the checks agree with the in-memory filter, new URLs included.
    const mem = new MemoryBloom(params);
    await mem.add(added);
    const probe = [...added, ...urls('wide-out', 3000)];
    const fromRedis = await seen.check(probe);
    expect(fromRedis).toEqual(await mem.check(probe));
    expect(fromRedis.slice(0, 3000).every(Boolean)).toBe(true);
    expect(fromRedis.slice(3000).filter(Boolean).length).toBeLessThan(10);
    await seen.close();
  });

  it('adds to the building generation, consults both after the switch, then only the new one', async () => {
    const prefix = newPrefix('gens');
    const seen = await seenSet(prefix);
    const admin = new RedisBloom(connectRedis(redisUrl()), prefix);
    await admin.redis.connect();
    const before = urls('before', 500);
    await seen.add(before);
    const first = seen.generations.current!;
    const gen = await admin.startBuilding(bloomParams(100_000, 0.001, 50_000));
    await until('seen-test notices the building generation', () => seen.generations.building === gen.id);
    const during = urls('during', 500);
    await seen.add(during);
    await admin.addTo([gen], before.slice(0, 100)); // a partial replay
    expect(await admin.switchTo(gen.id)).toBe(first);
    await until('seen-test notices the switch', () => seen.generations.current === gen.id);
    expect(seen.generations.previous).toBe(first);
    // Both consulted: nothing seen before the switch looks new.
    expect((await seen.check([...before, ...during])).every(Boolean)).toBe(true);
    await admin.drop(first);
    await until('seen-test notices the drop', () => seen.generations.previous === null);
    const after = await seen.check([...before, ...during]);
    expect(after.slice(500).every(Boolean)).toBe(true); // added while building
    expect(after.slice(100, 500).filter(Boolean).length).toBeLessThan(5); // not replayed: gone with the old one
    expect(await admin.redis.exists(`${prefix}gen:${first}`, `${prefix}gen:${first}:0`)).toBe(0);
    admin.redis.disconnect();
    await seen.close();
  });
});

/** A TCP relay to the real Redis on a 127.0.4.x address, which the test can cut and restore. */
class Relay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(private readonly target: URL) {}
  async open(): Promise<void> {
    this.server = net.createServer((client) => {
      const up = net.connect(Number(this.target.port), this.target.hostname);
      for (const s of [client, up]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(up).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.4.10', resolve));
    this.port = (this.server!.address() as net.AddressInfo).port;
  }
  async cut(): Promise<void> {
    const closed = new Promise<void>((r) => this.server!.close(() => r()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

describe('degradation', () => {
  it('answers "not seen" while Redis is unreachable and recovers when it returns', async () => {
    const relay = new Relay(new URL(redisUrl()));
    await relay.open();
    const seen = await seenSet(newPrefix('degrade'), `redis://127.0.4.10:${relay.port}`);
    const known = urls('known', 200);
    await seen.add(known);
    expect((await seen.check(known)).every(Boolean)).toBe(true);
    await relay.cut();
    await until('the outage is noticed', async () => !(await seen.check(known)).some(Boolean));
    expect(seen.healthy).toBe(false);
    await seen.add(urls('lost', 10)); // dropped, without throwing
    await relay.open();
    await until('Redis is back', async () => (await seen.check(known)).every(Boolean));
    expect(seen.healthy).toBe(true);
    await seen.close();
    await relay.cut();
  });

  it('starts degraded when Redis is down from the start', async () => {
    const seen = await seenSet(newPrefix('down'), 'redis://127.0.4.11:1');
    expect(seen.healthy).toBe(false);
    expect(await seen.check(['https://a.example/'])).toEqual([false]);
    await seen.close();
  });
});

describe('rebuild by replay of crawl.urls', () => {
  const kafka = new Kafka({ clientId: `redis-seen-${run}`, brokers: (process.env.CRAWL_KAFKA_BROKERS ?? '').split(','), logLevel: logLevel.NOTHING });
  const topicPrefix = `t-bloom-${run}.`;
  const urlsTopic = topicPrefix + topics.urls.name;

  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [urlsTopic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('restores a flushed filter, leaves tombstoned URLs out, and keeps URLs added during the rebuild', async () => {
    const prefix = newPrefix('rebuild');
    await ensureTopics(kafka, [topics.urls], 4, topicPrefix);
    const live = urls('live', 3000);
    const expired = urls('expired', 40);
    const revived = urls('revived', 40);
    const producer = kafka.producer();
    await producer.connect();
    const msg = (key: string, value: Buffer | null, i: number) => ({ key, value, partition: i % 4 });
    // Values are opaque to the rebuild (only keys and tombstones count).
    await producer.send({ topic: urlsTopic, messages: [...live, ...expired, ...revived].map((u, i) => msg(u, Buffer.from('row'), i)) });
    await producer.send({ topic: urlsTopic, messages: [...expired, ...revived].map((u, i) => msg(u, null, i)) });
    await producer.send({ topic: urlsTopic, messages: revived.map((u, i) => msg(u, Buffer.from('again'), i)) });
    await producer.disconnect();

    const seen = await seenSet(prefix);
    await seen.add(live.slice(0, 100));
    // A flush of this crawl's keys: the set starts an empty generation; nothing looks seen.
    const r = connectRedis(redisUrl());
    await r.connect();
    await r.del(...(await r.keys(`${prefix}*`)));
    r.disconnect();
    await until('an empty generation replaces the flushed one', async () => {
      await seen.refresh();
      return seen.healthy && !(await seen.check(live.slice(0, 100))).some(Boolean);
    });

    const admin = new RedisBloom(connectRedis(redisUrl()), prefix);
    await admin.redis.connect();
    const config = { ...DEFAULTS, bloomExpectedUrls: 100_000, bloomFalsePositiveRate: 0.0001, bloomMaxShardBytes: 50_000, bloomSwitchWaitMs: 500 };
    // The crawl goes on: seen-test forwards URLs, the frontier writes their rows, seen-test adds them.
    const duringRebuild: string[] = [];
    let stop = false;
    const crawlProducer = kafka.producer();
    await crawlProducer.connect();
    const crawl = (async () => {
      for (let i = 0; !stop && i < 2000; i++) {
        const batch = urls(`crawl${i}`, 5);
        await crawlProducer.send({ topic: urlsTopic, messages: batch.map((u, j) => msg(u, Buffer.from('new'), j)) });
        await seen.add(batch);
        duringRebuild.push(...batch);
        await sleep(20);
      }
    })();
    const report = await rebuild({ kafka, urlsTopic, bloom: admin, config, log });
    stop = true;
    await crawl;
    await crawlProducer.disconnect();
    // Rows of the running crawl written before the replay's end offsets are replayed too.
    expect(report.tombstoned).toBe(40);
    expect(report.urls).toBeGreaterThanOrEqual(3000 + 40 + 40);
    expect(report.rows - report.urls).toBe(80 + 40);
    await until('seen-test is on the new generation alone', () => seen.generations.current === report.generation && seen.generations.previous === null);
    expect((await seen.check(live)).every(Boolean)).toBe(true);
    expect((await seen.check(revived)).every(Boolean)).toBe(true);
    expect((await seen.check(expired)).some(Boolean)).toBe(false);
    // Every URL forwarded while the rebuild ran was added to the new generation too: none hidden, none lost.
    expect(duringRebuild.length).toBeGreaterThan(10);
    expect((await seen.check(duringRebuild)).every(Boolean)).toBe(true);
    expect((await admin.pointer()).building).toBeNull();
    admin.redis.disconnect();
    await seen.close();
  });
});
