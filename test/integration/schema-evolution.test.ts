/**
 * crawl.handoff.v3 evolution against the real schema registry and Kafka (unique subject and
 * topic prefix per run): a newer producer adds an optional field, and the example indexer,
 * built against v3, still decodes its events and reads the page bytes by WARC offset from the
 * real S3 store (a ranged GET); an incompatible change is refused by the registry.
 */
import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { connectKafka, createProducer, ensureTopics, produce } from '../../connectors/kafka';
import { createPageStore, pageStoreConfigFromEnv } from '../../connectors/page-store';
import { AvroRegistry, IncompatibleSchemaError, subjectFor } from '../../connectors/registry';
import type { PageStore } from '../../connectors/types';
import * as avsc from 'avsc';
import { avroType, loadSchema, schemaBefore } from '../../lib/avro';
import type { HandoffEvent } from '../../lib/messages';
import { WarcWriter } from '../../lib/warc/writer';
import { followHandoff, type IndexedPage } from '../../examples/indexer';
import { eventId } from '../../processors/handoff';
import { topics } from '../../topologies/crawl';
import { capture } from '../unit/warc-fixtures';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the integration global setup should start the stack and set it`);
  return value;
}

type AvroRecordSchema = { type: 'record'; name: string; namespace?: string; doc?: string; fields: Array<Record<string, unknown>> };

const run = `${Date.now()}-${randomBytes(4).toString('hex')}`;
const prefix = `t-evo-${run}.`;
const subject = subjectFor(prefix + topics.handoff.name);
const v3 = loadSchema('crawl.handoff.v3') as AvroRecordSchema;
const withField = (field: Record<string, unknown>): AvroRecordSchema => ({ ...v3, fields: [...v3.fields, field] });

async function waitFor<T>(buffer: T[], n: number, ms = 60_000): Promise<T[]> {
  const until = Date.now() + ms;
  while (buffer.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  if (buffer.length < n) throw new Error(`only ${buffer.length} of ${n} messages within ${ms} ms`);
  return buffer;
}

describe('crawl.handoff.v3 schema evolution (real registry)', () => {
  let registry: AvroRegistry;
  let kafka: Kafka;
  let store: PageStore;

  beforeAll(async () => {
    registry = new AvroRegistry(requireEnv('CRAWL_REGISTRY_URL'));
    kafka = connectKafka({ brokers: requireEnv('CRAWL_KAFKA_BROKERS').split(',') });
    store = createPageStore({ ...pageStoreConfigFromEnv(), s3Prefix: `t-evo-${run}` });
    await ensureTopics(kafka, [topics.handoff], 1, prefix);
  });

  afterAll(async () => {
    await store?.close();
  });

  test('an added optional field is accepted, and a v3 consumer reads events written with it', async () => {
    const v3Id = await registry.register(subject, v3, 'BACKWARD');
    const evolved = withField({ name: 'reading_time_s', type: ['null', 'int'], default: null, doc: 'Estimated reading time (a later producer).' });
    const evolvedId = await registry.register(subject, evolved, 'BACKWARD');
    expect(evolvedId).not.toBe(v3Id);

    // A real page in the real S3 store, so the indexer's ranged read is checked too.
    const warc = new WarcWriter({ store, prefix: 'evo' });
    const body = Buffer.from('<html><head><title>Evolved</title></head><body>schema evolution page</body></html>');
    const ptr = await (async () => {
      const p = warc.append({ type: 'exchange', capture: capture('http://127.0.7.9/evolved', { body }) });
      await warc.flush();
      return p;
    })();
    expect(ptr.uri).toMatch(/^s3:\/\//);

    const event: HandoffEvent = {
      event_id: eventId('http://127.0.7.9/evolved', 1_700_000_000_000), url: 'http://127.0.7.9/evolved', canonical_url: null,
      fetched_at: 1_700_000_000_000, change: 'NEW', simhash64: '0123456789abcdef', simhash_version: 2, language: 'en', importance: null,
      usage: { search_index: true, ai_training: false }, usage_registry_version: 3, warc: { uri: ptr.uri, offset: ptr.offset, length: ptr.length }, text: null,
    };
    // The runtime's own encoder gives the library's bytes for the schema registered under the id.
    const direct = registry.encodeWith(v3Id, avroType('crawl.handoff.v3'), event);
    expect(direct.equals(await registry.encode(v3Id, event))).toBe(true);
    expect(await registry.decode(direct)).toEqual(event);

    const producer = await createProducer(kafka);
    const topic = prefix + topics.handoff.name;
    // The same event twice (at-least-once): the indexer must drop the copy by event_id.
    const value = await registry.encode(evolvedId, { ...event, reading_time_s: 4 });
    expect(value.readUInt32BE(1)).toBe(evolvedId);
    await produce(producer, [{ topic, partition: 0, key: 'h', value }, { topic, partition: 0, key: 'h', value }]);
    // And one written with the v3 schema itself, to show the end of the stream.
    const last = { ...event, event_id: eventId(event.url, 1), fetched_at: 1 };
    await produce(producer, [{ topic, partition: 0, key: 'h', value: await registry.encode(v3Id, last) }]);
    await producer.disconnect();

    const pages: IndexedPage[] = [];
    const stop = await followHandoff(
      { brokers: requireEnv('CRAWL_KAFKA_BROKERS').split(','), registryUrl: registry.url, prefix, groupId: `${prefix}indexer`, store },
      (p) => void pages.push(p),
    );
    try {
      await waitFor(pages, 2);
    } finally {
      await stop();
    }
    expect(pages.map((p) => p.event.event_id)).toEqual([event.event_id, last.event_id]);
    expect(pages[0].event).toEqual(event); // the added field is dropped by the v3 reader, the rest intact
    expect('reading_time_s' in pages[0].event).toBe(false);
    expect(pages[0].page.httpStatus).toBe(200);
    expect(pages[0].page.payload.equals(body)).toBe(true);
    expect(pages[0].page.warcHeaders.get('warc-target-uri')).toBe(event.url);
  });

  test.each<[string, Record<string, unknown>]>([
    ['a new field without a default', { name: 'reading_time_s2', type: 'int', doc: 'required: old events cannot fill it' }],
    ['a field whose type changes', { name: 'url', type: 'int' }],
  ])('%s is refused by the registry', async (_name, field) => {
    await registry.register(subject, v3, 'BACKWARD');
    const changed = field.name === 'url' ? { ...v3, fields: v3.fields.map((f) => (f.name === 'url' ? field : f)) } : withField(field);
    expect(await registry.isCompatible(subject, changed)).toBe(false);
    await expect(registry.register(subject, changed, 'BACKWARD')).rejects.toBeInstanceOf(IncompatibleSchemaError);
  });

  test.each<[string, string, number]>([
    ['crawl.Link.v1', 'more_urls', 2],
    ['crawl.Candidate.v1', 'more_urls', 2],
    ['crawl.FetchedPage.v1', 'record_gz', 2],
    ['crawl.ParsedPage.v1', 'simhash_version', 2],
    ['crawl.Content.v1', 'simhash_version', 2],
    ['crawl.handoff.v3', 'simhash_version', 2],
    ['crawl.HostPolicy.v1', 'expires_at', 2],
    // robots.txt answers kept across restarts (issue #37).
    ['crawl.HostPolicy.v1', 'robots_body', 3],
    // Priority classes and feeds (issue #39): every version before registered first, then the current one.
    ['crawl.Link.v1', 'priority_class', 3],
    ['crawl.Candidate.v1', 'priority_class', 3],
    ['crawl.UrlState.v1', 'priority_class', 2],
    ['crawl.FetchRequest.v1', 'priority_class', 2],
    ['crawl.FetchStatus.v1', 'feed_items', 2],
    // Whether a lease sent the host a request: only a request starts the host's gap.
    ['crawl.FetchStatus.v1', 'contacted', 3],
  ])('%s with %s is a BACKWARD change from the version before (kcrawl.since %i)', async (name, added, since) => {
    const internal = subjectFor(`${prefix}${name}.${added}`);
    const fieldNames = (schema: object): string[] => (schema as AvroRecordSchema).fields.map((f) => String(f.name));
    for (let v = 2; v <= since; v++) {
      const before = schemaBefore(loadSchema(name), v);
      if (v === since) expect(fieldNames(before)).not.toContain(added);
      await registry.register(internal, before, 'BACKWARD');
    }
    expect(fieldNames(loadSchema(name))).toContain(added);
    expect(await registry.isCompatible(internal, loadSchema(name))).toBe(true);
    await registry.register(internal, loadSchema(name), 'BACKWARD');
    // Every added field has a default and a doc (what BACKWARD needs, and what a reader needs).
    for (const f of (loadSchema(name) as AvroRecordSchema).fields) {
      if (f['kcrawl.since'] !== undefined) expect([f.name, 'default' in f, typeof f.doc]).toEqual([f.name, true, 'string']);
    }
  });

  test('crawl.OptOut.v2 (the design shape) is a BACKWARD change from crawl.OptOut.v1, and v1 rows read on through it', async () => {
    const optoutSubject = subjectFor(`${prefix}crawl.optout`);
    const v1Id = await registry.register(optoutSubject, loadSchema('crawl.OptOut.v1'), 'BACKWARD');
    expect(await registry.isCompatible(optoutSubject, loadSchema('crawl.OptOut.v2'))).toBe(true);
    const v2Id = await registry.register(optoutSubject, loadSchema('crawl.OptOut.v2'), 'BACKWARD');
    expect(v2Id).not.toBe(v1Id);
    // A row written by the first version's writers, read by a v2 reader (Avro resolution from the registered writer schema).
    const old = await registry.encode(v1Id, { subject: 'example.org', purpose: 'ai_training', allowed: false, registry_version: 3, updated_at: 5 });
    expect(old.readUInt32BE(1)).toBe(v1Id);
    const writer = avsc.Type.forSchema(loadSchema('crawl.OptOut.v1') as avsc.Schema);
    const reader = avroType('crawl.OptOut.v2');
    const row = reader.fromBuffer(old.subarray(5), reader.createResolver(writer));
    expect(row).toMatchObject({ subject: 'example.org', purpose: 'ai_training', allowed: false, registry_version: 3, purposes: null, scope: null });
    // Dropping the first version's fields would lose what its rows say: v2 keeps them, optional.
    const dropped = { ...(loadSchema('crawl.OptOut.v2') as AvroRecordSchema) };
    dropped.fields = dropped.fields.filter((f) => f.name !== 'registry_version');
    expect(await registry.isCompatible(optoutSubject, { ...dropped, fields: [...dropped.fields, { name: 'registry_version', type: 'string' }] })).toBe(false);
  });
});
