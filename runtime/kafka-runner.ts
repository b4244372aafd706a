/**
 * Runs one stage as a Kafka consumer group member: decode through the registry, handle, produce
 * the emits (acks = all) to host-chosen partitions, then commit. Stages with state restore the
 * newly owned partitions from their compacted tables before handling any of their records, and
 * drop hosts they no longer own at once on a rebalance.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { createProducer, produce, readTable, runGroup, type ConsumedRecord, type RawRecord, type Kafka } from '../connectors/kafka';
import type { AvroRegistry } from '../connectors/registry';
import { avroType } from '../lib/avro';
import { partitionForHost } from '../lib/partitioner';
import { topics, type TopicId } from '../topologies/crawl';
import { Dispatcher, type InRecord, type OutRecord, type Stage } from './stage';

export interface KafkaRuntime {
  kafka: Kafka;
  registry: AvroRegistry;
  /** Schema ids by topic, from `registerSchemas`. */
  schemaIds: ReadonlyMap<TopicId, number>;
  prefix: string;
  partitions: number;
  log: Logger;
}

export interface RunningStage {
  stop(): Promise<void>;
}

const topicIdByName = (prefix: string): Map<string, TopicId> =>
  new Map((Object.keys(topics) as TopicId[]).map((id) => [prefix + topics[id].name, id]));

export async function encodeRecords(rt: KafkaRuntime, outs: readonly OutRecord[]): Promise<RawRecord[]> {
  return Promise.all(
    outs.map(async (o) => ({
      topic: rt.prefix + topics[o.topic].name,
      partition: partitionForHost(o.host, rt.partitions),
      key: o.key,
      // The id is our own schema's (registerSchemas), so its local avsc type encodes it exactly.
      value: o.value === null ? null : rt.registry.encodeWith(rt.schemaIds.get(o.topic)!, avroType(topics[o.topic].valueSchema), o.value),
    })),
  );
}

async function decodeRecords(rt: KafkaRuntime, recs: readonly ConsumedRecord[], ids: Map<string, TopicId>): Promise<InRecord[]> {
  return Promise.all(
    recs.map(async (r) => ({
      topic: ids.get(r.topic)!, partition: r.partition, offset: r.offset, key: r.key, timestamp: r.timestamp,
      value: r.value === null ? null : await rt.registry.decode(r.value),
    })),
  );
}

export async function runStageOnKafka(stage: Stage, rt: KafkaRuntime): Promise<RunningStage> {
  const log = rt.log.child({ stage: stage.id });
  const ctx = { now: Date.now, log };
  const ids = topicIdByName(rt.prefix);
  const producer = await createProducer(rt.kafka);
  const send = async (outs: readonly OutRecord[]): Promise<void> => produce(producer, await encodeRecords(rt, outs));
  const dispatcher = new Dispatcher(stage, ctx);
  let owned = new Set<number>();
  let restoring: Promise<void> = Promise.resolve();

  const restore = async (partitions: number[]): Promise<void> => {
    for (const topic of stage.restoreFrom ?? []) {
      const rows = await readTable(rt.kafka, rt.prefix + topics[topic].name, partitions);
      // Compaction semantics: only the latest value of each key counts.
      const latest = new Map<string, ConsumedRecord>();
      for (const r of rows) latest.set(r.key, r);
      const decoded = await decodeRecords(rt, [...latest.values()], ids);
      for (const d of decoded) stage.restore?.({ partition: d.partition, key: d.key, value: d.value }, topic);
      log.info({ topic, partitions, rows: latest.size }, 'state restored');
    }
  };

  const consumer = await runGroup(rt.kafka, `${rt.prefix}crawl.${stage.id}`, stage.inputs.map((t) => rt.prefix + topics[t].name), {
    onAssign(partitions) {
      const next = new Set(partitions);
      const gained = partitions.filter((p) => !owned.has(p));
      // Drop lost partitions at once; take gained ones only after their state is restored.
      stage.assigned?.([...owned].filter((p) => next.has(p)));
      owned = next;
      log.info({ partitions, gained }, 'partitions assigned');
      if (gained.length && stage.restoreFrom?.length) {
        restoring = restoring.then(() => restore(gained)).then(() => stage.assigned?.([...owned]));
      } else stage.assigned?.([...owned]);
    },
    async onBatch(records, heartbeat) {
      await restoring;
      const beat = setInterval(() => heartbeat().catch(() => undefined), 3000);
      try {
        const early: Array<Promise<void>> = [];
        const recs = await decodeRecords(rt, records, ids);
        const outs = stage.handleBatch ? await stage.handleBatch(recs, ctx) : await dispatcher.runAll(recs, (e) => early.push(send(e)));
        await Promise.all(early);
        await send(outs);
        await stage.produced?.(outs);
      } finally {
        clearInterval(beat);
      }
    },
  });

  const globals = await Promise.all((stage.globalTables ?? []).map((topic) => followGlobal(rt, stage, topic)));

  let ticking = false;
  const timer = stage.tick
    ? setInterval(() => {
        if (ticking) return;
        ticking = true;
        restoring
          .then(() => send(stage.tick!(ctx)))
          .catch((err: unknown) => log.error({ err }, 'tick failed'))
          .finally(() => (ticking = false));
      }, stage.tickMs ?? 100)
    : null;

  return {
    async stop() {
      if (timer) clearInterval(timer);
      await stage.close?.();
      await consumer.disconnect();
      for (const g of globals) await g.stop();
      await producer.disconnect();
    },
  };
}

/**
 * Every instance reads a global table whole, from the beginning, and keeps following it: its
 * own throwaway consumer group, so no other instance shares its partitions.
 */
async function followGlobal(rt: KafkaRuntime, stage: Stage, topic: TopicId): Promise<RunningStage> {
  const groupId = `${rt.prefix}crawl.${stage.id}.global.${randomUUID()}`;
  const consumer = rt.kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [rt.prefix + topics[topic].name], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message, partition }) => {
      const value = message.value === null ? null : await rt.registry.decode(message.value);
      stage.onGlobal?.({ partition, key: message.key?.toString('utf8') ?? '', value }, topic);
    },
  });
  return {
    async stop() {
      await consumer.disconnect();
      const admin = rt.kafka.admin();
      await admin.connect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    },
  };
}
