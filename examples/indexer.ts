/**
 * An example indexer: the crawler's customer side of crawl.handoff.v3.
 *
 *   Kafka mode:   node dist/examples/indexer.js            (CRAWL_KAFKA_BROKERS, CRAWL_REGISTRY_URL,
 *                                                          CRAWL_S3_* for s3:// pointers, CRAWL_TOPIC_PREFIX)
 *   Embedded:     node dist/examples/indexer.js --avro <out>/handoff/crawl.handoff.v3.avro
 *
 * For each event it: decodes it through the schema registry *as v3* (the reader schema is the
 * one this indexer was built against, so events written by a newer producer with added optional
 * fields still decode); drops copies by event_id (delivery is at-least-once); reads the page
 * bytes by WARC offset (one gzip member at [offset, offset+length): an S3 ranged GET, or a file
 * read for file:// pointers) and the extracted text the same way; and hands them to `onPage`
 * together with the usage flags it must honour.
 */
import { open } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import type { RawAvroSchema } from '@kafkajs/confluent-schema-registry/dist/@types';
import * as avro from 'avsc';
import { connectKafka } from '../connectors/kafka';
import { createPageStore, pageStoreConfigFromEnv } from '../connectors/page-store';
import { AvroRegistry } from '../connectors/registry';
import type { PageStore } from '../connectors/types';
import { loadSchema } from '../lib/avro';
import type { HandoffEvent, RecordPointer } from '../lib/messages';
import { parseWarcRecord, type WarcRecordRead } from '../lib/warc/read';

export { parseWarcRecord, type WarcRecordRead };

export interface IndexedPage {
  event: HandoffEvent;
  page: WarcRecordRead;
  text: string | null;
}

/** Decode one Kafka value (Confluent wire format) with crawl.handoff.v3 as the reader schema. */
export async function decodeHandoff(registry: AvroRegistry, value: Buffer): Promise<HandoffEvent> {
  return (await registry.client.decode(value, { [SchemaType.AVRO]: { readerSchema: loadSchema('crawl.handoff.v3') as RawAvroSchema } })) as HandoffEvent;
}

/** Read one record by pointer: file:// directly, anything else (s3://) through the page store. */
export async function readRecord(ptr: RecordPointer, store: PageStore | null): Promise<WarcRecordRead> {
  let member: Buffer;
  if (ptr.uri.startsWith('file://')) {
    const fh = await open(new URL(ptr.uri), 'r');
    try {
      member = Buffer.alloc(ptr.length);
      await fh.read(member, 0, ptr.length, ptr.offset);
    } finally {
      await fh.close();
    }
  } else {
    if (!store) throw new Error(`no page store for ${ptr.uri}: set CRAWL_S3_BUCKET and friends`);
    member = await store.read(ptr.uri, ptr.offset, ptr.length);
  }
  return parseWarcRecord(gunzipSync(member));
}

/** Everything an indexer needs of one event, or null for a copy already seen. */
export class HandoffReader {
  private readonly seen = new Set<string>();

  constructor(private readonly store: PageStore | null, private readonly maxRemembered = 100_000) {}

  async read(event: HandoffEvent): Promise<IndexedPage | null> {
    if (this.seen.has(event.event_id)) return null;
    if (this.seen.size >= this.maxRemembered) this.seen.clear(); // copies arrive close together; old ids can go
    this.seen.add(event.event_id);
    const page = await readRecord(event.warc, this.store);
    const text = event.text ? (await readRecord(event.text, this.store)).payload.toString('utf8') : null;
    return { event, page, text };
  }
}

/** Follow crawl.handoff.v3 on Kafka under a consumer group; returns a stop function. */
export async function followHandoff(
  opts: { brokers: string[]; registryUrl: string; prefix?: string; groupId: string; store: PageStore | null },
  onPage: (p: IndexedPage) => Promise<void> | void,
): Promise<() => Promise<void>> {
  const kafka = connectKafka({ brokers: opts.brokers });
  const registry = new AvroRegistry(opts.registryUrl);
  const reader = new HandoffReader(opts.store);
  const consumer = kafka.consumer({ groupId: opts.groupId, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [`${opts.prefix ?? ''}crawl.handoff.v3`], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (!message.value) return;
      const page = await reader.read(await decodeHandoff(registry, message.value));
      if (page) await onPage(page);
    },
  });
  return async () => consumer.disconnect();
}

/** Read the embedded default's handoff file (an Avro container file) the same way. */
export async function readHandoffFile(file: string, onPage: (p: IndexedPage) => Promise<void> | void): Promise<number> {
  const events: HandoffEvent[] = [];
  await new Promise<void>((resolve, reject) => {
    avro.createFileDecoder(file).on('data', (e: HandoffEvent) => events.push(e)).on('end', resolve).on('error', reject);
  });
  const reader = new HandoffReader(null);
  let n = 0;
  for (const e of events) {
    const page = await reader.read(e);
    if (page) {
      n++;
      await onPage(page);
    }
  }
  return n;
}

function show(p: IndexedPage): void {
  const { event: e } = p;
  const use = `search_index=${e.usage.search_index} ai_training=${e.usage.ai_training} (registry v${e.usage_registry_version})`;
  const snippet = (p.text ?? '').replace(/\s+/g, ' ').slice(0, 80);
  process.stdout.write(`${e.change} ${e.url} http=${p.page.httpStatus} bytes=${p.page.payload.length} ${use}\n  ${snippet}\n`);
}

async function main(argv: string[]): Promise<void> {
  const at = argv.indexOf('--avro');
  if (at >= 0) {
    const n = await readHandoffFile(argv[at + 1] ?? '', show);
    process.stdout.write(`${n} page(s)\n`);
    return;
  }
  const brokers = (process.env.CRAWL_KAFKA_BROKERS ?? '').split(',').filter(Boolean);
  if (!brokers.length || !process.env.CRAWL_REGISTRY_URL) throw new Error('set CRAWL_KAFKA_BROKERS and CRAWL_REGISTRY_URL, or give --avro <file>');
  const cfg = pageStoreConfigFromEnv();
  const store = cfg.s3Bucket ? createPageStore(cfg) : null;
  const stop = await followHandoff(
    { brokers, registryUrl: process.env.CRAWL_REGISTRY_URL, prefix: process.env.CRAWL_TOPIC_PREFIX, groupId: 'example-indexer', store },
    show,
  );
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await stop();
  await store?.close();
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
