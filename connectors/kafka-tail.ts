/**
 * Kafka reads for observers (crawl serve): follow whole topics from the beginning under a
 * throwaway group, and measure consumer lag of the processors' groups from admin offsets.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';

export interface Follower {
  stop(): Promise<void>;
}

/**
 * Read every partition of `topics` from the start and keep following. The group is unique
 * and deleted on stop, so observers never share partitions or leave offsets behind.
 */
export async function followTopics(
  kafka: Kafka,
  groupPrefix: string,
  topics: string[],
  onMessage: (topic: string, partition: number, key: string, value: Buffer | null) => Promise<void>,
): Promise<Follower> {
  const groupId = `${groupPrefix}.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: ({ topic, partition, message }) => onMessage(topic, partition, message.key?.toString('utf8') ?? '', message.value),
  });
  return {
    async stop() {
      await consumer.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

/**
 * Lag of one consumer group on each of its topics: log-end offset minus committed offset,
 * summed over partitions. A partition with no commit yet counts from its log start.
 */
export async function consumerLag(kafka: Kafka, groupId: string, topics: string[]): Promise<Map<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const lag = new Map<string, number>();
    const committed = await admin.fetchOffsets({ groupId, topics });
    for (const t of committed) {
      const ends = await admin.fetchTopicOffsets(t.topic);
      const byPartition = new Map(t.partitions.map((p) => [p.partition, Number(p.offset)]));
      let sum = 0;
      for (const e of ends) {
        const c = byPartition.get(e.partition) ?? -1;
        sum += Math.max(0, Number(e.high) - (c >= 0 ? c : Number(e.low)));
      }
      lag.set(t.topic, sum);
    }
    return lag;
  } finally {
    await admin.disconnect();
  }
}
