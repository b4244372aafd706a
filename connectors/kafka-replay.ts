/**
 * Streaming replay of a compacted topic over given offset ranges, in batches, without holding
 * the table in memory (readTable in connectors/kafka.ts collects every row, which a rebuild over
 * millions of URLs cannot afford): values as on the wire (a frontier store's restore decodes
 * what it needs), or only keys and tombstone flags (`crawl bloom rebuild`).
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';

export interface KeyRow {
  partition: number;
  offset: number;
  key: string;
  tombstone: boolean;
}

/** High-water marks now, by partition (partitions with no records left out). */
export async function endOffsets(kafka: Kafka, topic: string): Promise<Map<number, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = new Map<number, number>();
    for (const o of await admin.fetchTopicOffsets(topic)) if (Number(o.high) > Number(o.low)) ends.set(o.partition, Number(o.high));
    return ends;
  } finally {
    await admin.disconnect();
  }
}

/** Every row below `ends` (all partitions), batch by batch, keys only; resolves when all are delivered. */
export async function replayKeys(kafka: Kafka, topic: string, ends: ReadonlyMap<number, number>, onBatch: (rows: KeyRow[]) => Promise<void>): Promise<number> {
  const from = new Map([...ends.keys()].map((p) => [p, 0]));
  return replayRange(kafka, topic, from, ends, (partition, rows) =>
    onBatch(rows.map((r) => ({ partition, offset: r.offset, key: r.key, tombstone: r.value === null }))));
}

export interface ValueRow {
  offset: number;
  key: string;
  /** The record's value as on the wire (Confluent header included); null for a tombstone. */
  value: Buffer | null;
}

/**
 * Records [from, to) of some partitions of a topic with their values, batch by batch: a store's
 * restore from its changelog. Only the partitions asked for are read (the others are paused),
 * each from its own start offset; resolves when every range is delivered.
 */
export async function replayRange(
  kafka: Kafka, topic: string, from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>,
  onBatch: (partition: number, rows: ValueRow[]) => Promise<void>,
): Promise<number> {
  const left = new Map([...from].filter(([p, start]) => (to.get(p) ?? start) > start));
  if (left.size === 0) return 0;
  const admin = kafka.admin();
  await admin.connect();
  const all = (await admin.fetchTopicOffsets(topic)).map((o) => o.partition);
  await admin.disconnect();
  const groupId = `kcrawl.restore.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false, maxBytesPerPartition: 4 << 20, maxBytes: 16 << 20 });
  let rows = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch, heartbeat }) => {
            const end = left.get(batch.partition) !== undefined ? to.get(batch.partition)! : undefined;
            if (end === undefined) return;
            const out: ValueRow[] = [];
            for (const m of batch.messages) {
              const offset = Number(m.offset);
              if (offset < from.get(batch.partition)!) continue;
              if (offset >= end) break;
              out.push({ offset, key: m.key?.toString('utf8') ?? '', value: m.value });
            }
            try {
              if (out.length) await onBatch(batch.partition, out);
            } catch (err) {
              reject(err);
              return;
            }
            rows += out.length;
            await heartbeat();
            if (Number(batch.lastOffset()) >= end - 1) {
              left.delete(batch.partition);
              consumer.pause([{ topic, partitions: [batch.partition] }]);
            }
            if (left.size === 0) resolve();
          },
        })
        .then(() => {
          const others = all.filter((p) => !left.has(p));
          if (others.length) consumer.pause([{ topic, partitions: others }]);
          for (const [p, start] of left) consumer.seek({ topic, partition: p, offset: String(start) });
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
    const a = kafka.admin();
    await a.connect();
    await a.deleteGroups([groupId]).catch(() => undefined);
    await a.disconnect();
  }
  return rows;
}
