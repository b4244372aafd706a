/**
 * Streaming replay of a compacted topic from the beginning to given end offsets, in batches,
 * without holding the table in memory (readTable in connectors/kafka.ts collects every row,
 * which a rebuild over millions of URLs cannot afford). Only keys and tombstone flags are
 * passed on: `crawl bloom rebuild` needs no decoded values.
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

/** Every row below `ends` (all partitions), batch by batch; resolves when all are delivered. */
export async function replayKeys(kafka: Kafka, topic: string, ends: ReadonlyMap<number, number>, onBatch: (rows: KeyRow[]) => Promise<void>): Promise<number> {
  const left = new Map(ends);
  if (left.size === 0) return 0;
  const groupId = `kcrawl.replay.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false, maxBytesPerPartition: 2 << 20, maxBytes: 8 << 20 });
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
            const end = left.get(batch.partition);
            if (end === undefined) return;
            const out: KeyRow[] = [];
            for (const m of batch.messages) {
              const offset = Number(m.offset);
              if (offset >= end) break;
              out.push({ partition: batch.partition, offset, key: m.key?.toString('utf8') ?? '', tombstone: m.value === null });
            }
            try {
              await onBatch(out);
            } catch (err) {
              // kafkajs would retry the batch forever; a failed replay must end the command.
              reject(err);
              return;
            }
            rows += out.length;
            await heartbeat();
            if (Number(batch.lastOffset()) >= end - 1) left.delete(batch.partition);
            if (left.size === 0) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return rows;
}
