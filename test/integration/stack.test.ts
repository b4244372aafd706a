/**
 * The local stack itself: each service that test/setup/global-setup.ts started (or that the
 * environment names) answers the client library the crawler uses for it.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import Redis from 'ioredis';
import { GetObjectCommand, PutObjectCommand, DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the integration global setup should start the stack and set it`);
  return value;
}

const run = `${Date.now()}-${randomBytes(4).toString('hex')}`;

describe('local stack', () => {
  test('Kafka: create a topic, produce, consume with a consumer group, commit offsets', async () => {
    const kafka = new Kafka({
      clientId: `stack-test-${run}`,
      brokers: requireEnv('CRAWL_KAFKA_BROKERS').split(','),
      logLevel: logLevel.NOTHING,
    });
    const topic = `t-stack-${run}`;
    const groupId = `g-stack-${run}`;
    const admin = kafka.admin();
    const producer = kafka.producer({ idempotent: true });
    const consumer = kafka.consumer({ groupId });
    await admin.connect();
    try {
      expect(await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }], waitForLeaders: true })).toBe(true);
      await producer.connect();
      await producer.send({ topic, messages: [{ key: 'k', value: `hello ${run}` }] });

      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      const received = await new Promise<{ key: string; value: string; partition: number; offset: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no message consumed within 60 s')), 60_000);
        consumer
          .run({
            eachMessage: async ({ partition, message }) => {
              clearTimeout(timer);
              resolve({ key: String(message.key), value: String(message.value), partition, offset: message.offset });
            },
          })
          .catch((err: unknown) => {
            clearTimeout(timer);
            reject(err);
          });
      });
      expect(received.key).toBe('k');
      expect(received.value).toBe(`hello ${run}`);

      await consumer.commitOffsets([{ topic, partition: received.partition, offset: String(Number(received.offset) + 1) }]);
      const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
      const committed = offsets[0].partitions.find((p) => p.partition === received.partition);
      expect(committed?.offset).toBe(String(Number(received.offset) + 1));
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
    }
  });

  test('Redis: SET and GET', async () => {
    const redis = new Redis(requireEnv('CRAWL_REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 2 });
    await redis.connect();
    try {
      const key = `stack-test:${run}`;
      expect(await redis.set(key, 'value', 'EX', 60)).toBe('OK');
      expect(await redis.get(key)).toBe('value');
      await redis.del(key);
    } finally {
      redis.disconnect();
    }
  });

  test('S3: PutObject, GetObject and a ranged GetObject on the bucket', async () => {
    const s3 = new S3Client({
      endpoint: requireEnv('CRAWL_S3_ENDPOINT'),
      region: process.env.CRAWL_S3_REGION || 'us-east-1',
      forcePathStyle: process.env.CRAWL_S3_FORCE_PATH_STYLE !== 'false',
      credentials: { accessKeyId: requireEnv('CRAWL_S3_ACCESS_KEY'), secretAccessKey: requireEnv('CRAWL_S3_SECRET_KEY') },
    });
    const Bucket = requireEnv('CRAWL_S3_BUCKET');
    const Key = `stack-test/${run}.txt`;
    try {
      await s3.send(new PutObjectCommand({ Bucket, Key, Body: '0123456789abcdefghij', ContentType: 'text/plain' }));
      const whole = await s3.send(new GetObjectCommand({ Bucket, Key }));
      expect(await whole.Body?.transformToString()).toBe('0123456789abcdefghij');
      const range = await s3.send(new GetObjectCommand({ Bucket, Key, Range: 'bytes=10-15' }));
      expect(await range.Body?.transformToString()).toBe('abcdef');
      expect(range.ContentRange).toBe('bytes 10-15/20');
      await s3.send(new DeleteObjectCommand({ Bucket, Key }));
    } finally {
      s3.destroy();
    }
  });

  test('schema registry: register, encode/decode, and BACKWARD rejects an incompatible change', async () => {
    const base = requireEnv('CRAWL_REGISTRY_URL');
    const registry = new SchemaRegistry({ host: base });
    const subject = `stack-test-${run}-value`;
    const v1 = {
      type: 'record',
      name: 'StackTest',
      namespace: 'crawl.test',
      fields: [{ name: 'url', type: 'string' }],
    };
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });
    const encoded = await registry.encode(id, { url: 'https://example.com/' });
    expect(encoded[0]).toBe(0); // Confluent wire format: magic byte, then the 4-byte schema id
    expect(encoded.readInt32BE(1)).toBe(id);
    expect(await registry.decode(encoded)).toEqual({ url: 'https://example.com/' });

    const put = await fetch(`${base}/config/${encodeURIComponent(subject)}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'BACKWARD' }),
    });
    expect(put.status).toBe(200);
    const config = (await (await fetch(`${base}/config/${encodeURIComponent(subject)}`)).json()) as { compatibilityLevel?: string };
    expect(config.compatibilityLevel).toBe('BACKWARD');

    // A new field with a default is a BACKWARD-compatible change...
    const v2 = { ...v1, fields: [...v1.fields, { name: 'depth', type: 'int', default: 0 }] };
    const second = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2) }, { subject });
    expect(second.id).not.toBe(id);
    // ...one without a default is not: the registry refuses it with 409.
    const v3 = { ...v1, fields: [...v2.fields, { name: 'status', type: 'int' }] };
    await expect(registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v3) }, { subject })).rejects.toMatchObject({
      status: 409,
    });
    const check = await fetch(`${base}/compatibility/subjects/${encodeURIComponent(subject)}/versions/latest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema: JSON.stringify(v3) }),
    });
    expect(((await check.json()) as { is_compatible?: boolean }).is_compatible).toBe(false);
  });
});
