/**
 * The crawl's topics are produced as LZ4 batches (topologies/crawl.ts `compression`, codec in
 * connectors/kafka-lz4.ts) and the handoff topic uncompressed. Real broker and registry; a
 * unique topic prefix per run.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { CompressionTypes, Partitioners } from 'kafkajs';
import { connectKafka, createProducer, ensureTopics, produce, readTable, type Kafka } from '../../connectors/kafka';
import { lz4Stats } from '../../connectors/kafka-lz4';
import { AvroRegistry } from '../../connectors/registry';
import { registerSchemas } from '../../cli/kafka-commands';
import type { LinkMsg } from '../../lib/messages';
import { encodeRecords, type KafkaRuntime } from '../../runtime/kafka-runner';
import type { OutRecord } from '../../runtime/stage';
import { topics } from '../../topologies/crawl';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the integration global setup should start the stack and set it`);
  return value;
}

let kafka: Kafka;
let prefix: string;

beforeAll(async () => {
  prefix = `t-lz4-${Date.now()}-${randomBytes(3).toString('hex')}.`;
  kafka = connectKafka({ brokers: requireEnv('CRAWL_KAFKA_BROKERS').split(',') });
  await ensureTopics(kafka, [topics.links, topics.handoff, topics.urls], 1, prefix);
});

afterAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
  await admin.deleteTopics({ topics: mine }).catch(() => undefined);
  await admin.disconnect();
});

test('crawl.links goes as one LZ4 batch and reads back the same; the handoff topic stays uncompressed', async () => {
  const registry = new AvroRegistry(requireEnv('CRAWL_REGISTRY_URL'));
  const rt: KafkaRuntime = { kafka, registry, schemaIds: await registerSchemas(registry, prefix), prefix, partitions: 1, log: pino({ level: 'silent' }) };
  const links: LinkMsg[] = Array.from({ length: 200 }, (_, i) => ({
    url: `http://127.0.9.1/section/${i % 7}/page-${i}.html`, source_url: 'http://127.0.9.1/', depth: 1, discovered_at: 1_700_000_000_000 + i, is_seed: false, priority: null,
  }));
  const outs: OutRecord[] = links.map((value) => ({ topic: 'links', key: '127.0.9.1', host: '127.0.9.1', value }));
  const raw = await encodeRecords(rt, outs);
  expect(new Set(raw.map((r) => r.compression))).toEqual(new Set(['lz4']));
  // A handoff record beside them, in the same call: its own request, uncompressed.
  const handoff = { topic: prefix + topics.handoff.name, partition: 0, key: 'k', value: Buffer.from('not avro, only bytes'), compression: topics.handoff.compression };
  expect(handoff.compression).toBe('none');

  const producer = await createProducer(kafka);
  const before = lz4Stats();
  try {
    await produce(producer, [...raw, handoff]);
  } finally {
    await producer.disconnect();
  }
  const afterProduce = lz4Stats();
  // One partition, one chunk: one LZ4 batch, and it is smaller than its records.
  expect(afterProduce.compressed - before.compressed).toBe(1);
  const inBytes = afterProduce.bytesIn - before.bytesIn;
  const outBytes = afterProduce.bytesOut - before.bytesOut;
  expect(inBytes).toBeGreaterThan(raw.reduce((n, r) => n + (r.value?.length ?? 0), 0));
  expect(outBytes).toBeLessThan(inBytes / 2);

  const back = await readTable(kafka, prefix + topics.links.name, [0]);
  expect(lz4Stats().decompressed).toBeGreaterThan(afterProduce.decompressed);
  expect(back.map((r) => r.value)).toEqual(raw.map((r) => r.value));
  const decoded = (await Promise.all(back.map((r) => registry.decode(r.value!)))) as LinkMsg[];
  expect(decoded.map((l) => [l.url, l.discovered_at])).toEqual(links.map((l) => [l.url, l.discovered_at]));

  const decompressedBefore = lz4Stats().decompressed;
  const handoffBack = await readTable(kafka, prefix + topics.handoff.name, [0]);
  expect(handoffBack.map((r) => r.value?.toString())).toEqual(['not avro, only bytes']);
  expect(lz4Stats().decompressed).toBe(decompressedBefore);
}, 120_000);

test('the broker reads our LZ4 frames: it checks every record of a compressed batch bound for a compacted topic', async () => {
  // Kafka refuses a record without a key on a compacted topic. Inside an LZ4 batch it can only
  // see that by decompressing the frame with its own (Java) LZ4 decoder: a frame it could not
  // read would fail both sends below as corrupt, and a broker that did not look would take both.
  const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 0 }, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const topic = prefix + topics.urls.name;
  try {
    await producer.send({ topic, acks: -1, compression: CompressionTypes.LZ4, messages: [{ key: 'http://127.0.9.1/a', value: Buffer.from('row a'), partition: 0 }] });
    await expect(
      producer.send({ topic, acks: -1, compression: CompressionTypes.LZ4, messages: [{ key: 'http://127.0.9.1/b', value: Buffer.from('row b'), partition: 0 }, { key: null, value: Buffer.from('no key'), partition: 0 }] }),
    ).rejects.toThrow(/failed the validation/);
  } finally {
    await producer.disconnect();
  }
  const rows = await readTable(kafka, topic, [0]);
  expect(rows.map((r) => [r.key, r.value?.toString()])).toEqual([['http://127.0.9.1/a', 'row a']]);
}, 120_000);
