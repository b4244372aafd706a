/**
 * A compacted topic in Kafka as a stage's changelog (runtime/changelog.ts): end offsets from
 * the brokers, records read by connectors/kafka-replay.ts with their values handed on as Avro
 * bytes without the Confluent header. A value written under our own schema id is passed on as
 * it is; one written under another (an older release) is decoded through the registry and
 * encoded with our schema.
 */
import { replayRange } from '../connectors/kafka-replay';
import { avroType, encodeAvro } from '../lib/avro';
import { topics, type TopicId } from '../topologies/crawl';
import type { ChangelogRecord, ChangelogSource } from './changelog';
import type { KafkaRuntime } from './kafka-runner';

/** Confluent wire format: magic byte 0, then the schema id (big-endian int32). */
const HEADER = 5;

/** A record value of `topic` as our schema's Avro bytes, without the wire header. */
export function plainValues(rt: KafkaRuntime, topic: TopicId): (v: Buffer) => Promise<Buffer> {
  const ours = rt.schemaIds.get(topic);
  const type = avroType(topics[topic].valueSchema);
  return async (v) => (v.length >= HEADER && v[0] === 0 && v.readInt32BE(1) === ours ? v.subarray(HEADER) : encodeAvro(type, await rt.registry.decode(v)));
}

export function kafkaChangelog(rt: KafkaRuntime, topic: TopicId): ChangelogSource {
  const name = rt.prefix + topics[topic].name;
  const plain = plainValues(rt, topic);
  return {
    async ends(partitions) {
      const admin = rt.kafka.admin();
      await admin.connect();
      try {
        const offsets = await admin.fetchTopicOffsets(name);
        return new Map(partitions.map((p) => [p, Number(offsets.find((o) => o.partition === p)?.high ?? 0)]));
      } finally {
        await admin.disconnect();
      }
    },
    async read(from, to, onBatch) {
      await replayRange(rt.kafka, name, from, to, async (partition, rows) => {
        const recs: ChangelogRecord[] = [];
        for (const r of rows) recs.push({ offset: r.offset, key: r.key, value: r.value === null ? null : await plain(r.value) });
        await onBatch(partition, recs);
      });
    },
  };
}
