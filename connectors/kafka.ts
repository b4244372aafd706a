/**
 * Kafka through kafkajs, behind the few operations the runtime needs: create/update topics
 * from topologies/, produce records to explicit (host-chosen) partitions, consume as a group
 * with co-partitioned assignment, and read a compacted table to its end.
 */
import { randomUUID } from 'node:crypto';
// Before kafkajs: gives its producer a native CRC-32C (see the module).
import './kafka-crc32c';
// Before kafkajs: leaner record encoding for its producer, same bytes (see the module).
import './kafka-lean-records';
// kafkajs's LZ4 codec (see the module), for producing and consuming.
import './kafka-lz4';
import {
  AssignerProtocol,
  CompressionTypes,
  Partitioners,
  Kafka,
  logLevel,
  type Admin,
  type Consumer,
  type EachBatchPayload,
  type PartitionAssigner,
  type Producer,
} from 'kafkajs';
import { DEFAULTS } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { Compression, TopicSpec } from '../topologies/crawl';
import { KafkaHealth } from './kafka-health';

/** The client and admin handles, for code outside connectors/ that passes them around. */
export type { Admin, Kafka };

export interface KafkaSettings {
  brokers: string[];
  clientId?: string;
  /** Prepended to every topic and group name (tests use a unique one per run). */
  prefix?: string;
  /** Where kafkajs's lines go (state changes, not a line per failed request); a new one on stderr if absent. */
  health?: KafkaHealth;
  /**
   * Retry broker connections without end (long-running processes). kafkajs's producers and
   * consumers give up when reconnecting their cluster runs out of retries, however many they
   * are given themselves, so this is set on the client: a produce then waits out an outage
   * instead of failing its record, and a consumer keeps its group membership instead of
   * crashing, restarting, and waiting for its old self's session to end.
   */
  retryForever?: boolean;
}

export interface RawRecord {
  topic: string;
  partition: number;
  key: string;
  value: Buffer | null;
  /** How its batch is compressed when produced (the topic's `compression`); none if unset. */
  compression?: Compression;
}

const CODEC: Record<Compression, CompressionTypes> = { lz4: CompressionTypes.LZ4, none: CompressionTypes.None };

export interface ConsumedRecord extends RawRecord {
  offset: number;
  timestamp: number;
}

/**
 * Retries of a failed request: the first after about 200 ms, doubling up to 2 s apart, so a
 * client is back within about 2 s of its broker (kafkajs's default cap, 30 s, kept a producer
 * failing for up to half a minute after the broker was healthy again). Ten retries last about
 * 12 s (one-shot commands then fail); on a `retryForever` client (long-running processes)
 * producers and group members retry without end.
 */
export const KAFKA_RETRY = { initialRetryTime: 200, maxRetryTime: 2000, retries: 10 };

export function connectKafka(s: KafkaSettings): Kafka {
  if (s.brokers.length === 0) throw new Error('no Kafka brokers: set CRAWL_KAFKA_BROKERS=host:port[,host:port]');
  const health = s.health ?? new KafkaHealth(createLogger());
  return new Kafka({
    clientId: s.clientId ?? 'kcrawl',
    brokers: s.brokers,
    logLevel: logLevel.WARN,
    logCreator: health.logCreator,
    socketFactory: health.socketFactory,
    retry: s.retryForever ? RETRY_FOREVER : KAFKA_RETRY,
  });
}

const RETRY_FOREVER = { ...KAFKA_RETRY, retries: Number.MAX_SAFE_INTEGER };

/** Create missing topics and bring existing ones to the declared config; idempotent. */
export async function ensureTopics(kafka: Kafka, specs: readonly TopicSpec[], partitions: number, prefix = ''): Promise<{ created: string[]; updated: string[] }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const configEntries = (s: TopicSpec): Array<{ name: string; value: string }> => [
      { name: 'cleanup.policy', value: s.cleanupPolicy },
      { name: 'retention.ms', value: String(s.retentionMs) },
      { name: 'max.message.bytes', value: String(s.maxMessageBytes) },
    ];
    const missing = specs.filter((s) => !existing.has(prefix + s.name));
    if (missing.length) {
      await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((s) => ({ topic: prefix + s.name, numPartitions: partitions, replicationFactor: -1, configEntries: configEntries(s) })),
      });
      await waitForLeaders(admin, missing.map((s) => prefix + s.name));
    }
    const present = specs.filter((s) => existing.has(prefix + s.name));
    if (present.length) {
      const meta = await admin.fetchTopicMetadata({ topics: present.map((s) => prefix + s.name) });
      const grow = meta.topics.filter((t) => t.partitions.length < partitions).map((t) => ({ topic: t.name, count: partitions }));
      if (grow.length) await admin.createPartitions({ topicPartitions: grow });
      // ConfigResourceTypes.TOPIC = 2
      await admin.alterConfigs({ validateOnly: false, resources: present.map((s) => ({ type: 2, name: prefix + s.name, configEntries: configEntries(s) })) });
    }
    return { created: missing.map((s) => prefix + s.name), updated: present.map((s) => prefix + s.name) };
  } finally {
    await admin.disconnect();
  }
}

/**
 * Waits until every partition of `names` has a leader. kafkajs's own wait (createTopics
 * waitForLeaders) gives up on the first answer other than LEADER_NOT_AVAILABLE, and a broker
 * just restarted answers UNKNOWN_TOPIC_OR_PARTITION for a topic it created a moment before
 * (`crawl init` failed so in the fault test); this asks again until `ms` has passed.
 */
async function waitForLeaders(admin: Admin, names: string[], ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  let last = '';
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics: names });
      const leaderless = meta.topics.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0)).map((t) => t.name);
      if (meta.topics.length === names.length && leaderless.length === 0) return;
      last = `no leader yet for ${leaderless.join(', ') || 'some topics'}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`topics created but not ready after ${ms} ms: ${last}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function partitionCounts(kafka: Kafka, topics: string[]): Promise<Map<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics });
    return new Map(meta.topics.map((t) => [t.name, t.partitions.length]));
  } finally {
    await admin.disconnect();
  }
}

/**
 * An idempotent producer: the broker keeps each batch's producer id and sequence numbers and
 * drops a batch it already has. Without it a retried produce wrote records twice: kafkajs
 * retries a produce request whole when one of its partitions fails (a broker shutting down
 * answers "not the leader" for some partitions after appending to others), and in a crawl with
 * a broker restart one fetch request was written twice 48 s apart, its URL fetched twice and
 * handed off twice as NEW with two event ids (docs/faults.md). Retries never end (kafkajs's
 * default for idempotence) on a client made with `retryForever`: a produce waits out an
 * outage instead of failing its record, whose retry would fetch the page again (with ten
 * retries, a 26 s outage failed 232 records in two processes, and 83 pages were fetched
 * twice). One request in flight (kafkajs holds a lock per broker anyway) and one `produce` at
 * a time per producer (below).
 */
export async function createProducer(kafka: Kafka): Promise<Producer> {
  // Partitions are always chosen by us (lib/partitioner.ts), so kafkajs's partitioner never runs.
  const producer = kafka.producer({
    allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner,
    retry: RETRY_FOREVER,
  });
  await producer.connect();
  return producer;
}

/** The last produce of each producer: the next one starts after it settles. */
const producing = new WeakMap<Producer, Promise<void>>();

/**
 * Bytes of keys and values per produce request. Kafka rejects a partition's record batch above
 * the topic's max.message.bytes (1 MiB on most crawl topics) as a whole, and one parse batch's
 * pages easily exceed that in one partition; the margin covers record and batch headers.
 */
export const MAX_REQUEST_BYTES = 900 * 1024;

/** Records cut into consecutive chunks of at most maxBytes each (a bigger record goes alone). */
export function chunkByBytes(records: readonly RawRecord[], maxBytes = MAX_REQUEST_BYTES): RawRecord[][] {
  const chunks: RawRecord[][] = [];
  let chunk: RawRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = Buffer.byteLength(r.key) + (r.value?.length ?? 0) + 64;
    if (chunk.length > 0 && bytes + size > maxBytes) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(r);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Produce and wait for all in-sync replicas to have them (acks = -1). Chunks go one after
 * another so a partition's records keep their order. A produce request has one compression, so
 * a chunk goes in one request per compression; a topic's records all carry its compression, so
 * one topic is never split.
 *
 * Calls on one producer run one after another. kafkajs numbers an idempotent batch when it
 * sends it and takes the numbers back when the request fails; a second call sending to the same
 * partition meanwhile would be given those numbers, and if the failed request had in fact been
 * written the broker would take the second batch for a copy of it and drop it.
 */
export function produce(producer: Producer, records: readonly RawRecord[]): Promise<void> {
  const run = (producing.get(producer) ?? Promise.resolve()).then(() => produceNow(producer, records));
  producing.set(producer, run.catch(() => undefined));
  return run;
}

async function produceNow(producer: Producer, records: readonly RawRecord[]): Promise<void> {
  for (const chunk of chunkByBytes(records)) {
    // Compression, then topic, then the records in their order.
    const byCodec = new Map<Compression, Map<string, RawRecord[]>>();
    for (const r of chunk) {
      const codec = r.compression ?? 'none';
      let byTopic = byCodec.get(codec);
      if (!byTopic) byCodec.set(codec, (byTopic = new Map()));
      let list = byTopic.get(r.topic);
      if (!list) byTopic.set(r.topic, (list = []));
      list.push(r);
    }
    await Promise.all(
      [...byCodec].map(([codec, byTopic]) =>
        producer.sendBatch({
          acks: -1,
          compression: CODEC[codec],
          topicMessages: [...byTopic].map(([topic, list]) => ({
            topic,
            messages: list.map((r) => ({ key: r.key, value: r.value, partition: r.partition })),
          })),
        }),
      ),
    );
  }
}

/**
 * Gives every member the same partition numbers of every subscribed topic, so the instance
 * that owns partition p of crawl.frontier also owns p of crawl.fetch-status (and of crawl.urls
 * for its restore): one host's whole state in one place.
 */
export const CoPartitionAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'CoPartitionAssigner',
  version: 1,
  async assign({ members, topics }) {
    const sorted = [...members].map((m) => m.memberId).sort();
    const plan = new Map<string, Record<string, number[]>>(sorted.map((id) => [id, {}]));
    for (const topic of topics) {
      const partitions = cluster.findTopicPartitionMetadata(topic).map((p) => p.partitionId).sort((a, b) => a - b);
      for (const p of partitions) {
        const owner = plan.get(sorted[p % sorted.length])!;
        (owner[topic] ??= []).push(p);
      }
    }
    return sorted.map((memberId) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: plan.get(memberId)!, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'CoPartitionAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
  },
});

export interface GroupHandlers {
  /** The partitions (of the first subscribed topic) this member owns after a rebalance. */
  onAssign(partitions: number[]): void;
  /**
   * A batch of one partition. Resolving lets the consumer fetch the partition's next batch; the
   * handler commits with `commit(next)` when every record below `next` is finished, which may be
   * later (records whose results wait on a WARC file keep being committed as they finish). The
   * member keeps heartbeating while it runs.
   */
  onBatch(records: ConsumedRecord[], commit: (next: number) => void): Promise<void>;
  /** The consumer stopped for good (an error kafkajs does not restart it after, not an outage). */
  onFatal?(err: unknown): void;
  /** kafkajs gave the consumer up in an outage; a new one joins in a second. */
  onRejoin?(err: unknown): void;
}

/**
 * Group membership timing. A member that stops heartbeating (kill -9) keeps its partitions
 * until its session times out, and its replacement waits for that before it gets them: with
 * 30 s sessions a killed process stopped fetching for 32 s. kafkajs 2.2.4 has no static
 * membership (group.instance.id, KIP-345: its JoinGroup v5 encoder has the field, but the
 * consumer never sets it) and no way to reuse a dead member's id, so the session is what
 * bounds a take-over: 6 s, the brokers' default least (group.min.session.timeout.ms), with a
 * heartbeat every second from a timer of the member's own while a batch runs (kafkajs beats
 * only between batches, and a batch may wait on host politeness or on a full pipeline for
 * seconds). An event loop held past 6 s would cost the member its partitions (a rebalance,
 * at-least-once); the crawler's work is cut into short turns (runtime/time-slice.ts).
 */
export interface GroupTiming {
  sessionTimeoutMs: number;
  heartbeatMs: number;
}

/** The configuration's defaults (CRAWL_KAFKA_SESSION_TIMEOUT_MS, CRAWL_KAFKA_HEARTBEAT_MS). */
export const GROUP_TIMING: GroupTiming = { sessionTimeoutMs: DEFAULTS.kafkaSessionTimeoutMs, heartbeatMs: DEFAULTS.kafkaHeartbeatMs };

/**
 * How long a group's first commit waits for others to join it. Offsets are committed in one
 * OffsetCommit request per group at most this often, every partition's highest finished offset
 * in it, rather than one request per partition each time a batch finished: in a Kafka-mode
 * benchmark run the two crawl processes sent about 300 commits a second, the most frequent
 * request the broker served, each a write to __consumer_offsets. Committing a little later only
 * means a few more records read again after a crash (at-least-once, as before).
 */
export const COMMIT_INTERVAL_MS = 100;

/** Offsets to commit of one group: the highest asked per partition, sent together (COMMIT_INTERVAL_MS). */
export class Committer {
  /** Highest offset asked per topic-partition (monotonic). */
  private readonly asked = new Map<string, { topic: string; partition: number; offset: number }>();
  /** Keys asked since the last request went out. */
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly send: (offsets: Array<{ topic: string; partition: number; offset: string }>) => Promise<void>,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = COMMIT_INTERVAL_MS,
  ) {}

  commit(topic: string, partition: number, next: number): void {
    const k = `${partition}\u0000${topic}`;
    const had = this.asked.get(k);
    if (had && next <= had.offset) return;
    this.asked.set(k, { topic, partition, offset: next });
    this.pending.add(k);
    this.schedule();
  }

  /** Send what is asked now and wait until every request has answered (stopping). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.inFlight || this.pending.size > 0) {
      if (this.inFlight) await this.inFlight;
      else this.sendPending();
    }
  }

  private schedule(): void {
    if (this.timer || this.inFlight) return; // the one in flight schedules the next when it answers
    this.timer = setTimeout(() => this.sendPending(), this.intervalMs);
    // Stopping flushes; a waiting commit alone must not keep the process alive.
    this.timer.unref();
  }

  private sendPending(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    const offsets = [...this.pending].map((k) => {
      const a = this.asked.get(k)!;
      return { topic: a.topic, partition: a.partition, offset: String(a.offset) };
    });
    this.pending.clear();
    // A refused commit (a broker outage, a rebalance) is sent again unless a later one was asked
    // meanwhile: its records are finished, and a commit left behind would have them read and
    // run again after the next rebalance or restart. An offset is only asked once every record
    // below it is finished, so sending it after the partition moved tells its new owner nothing
    // false.
    this.inFlight = this.send(offsets)
      .catch((err: unknown) => {
        this.onError(err);
        for (const o of offsets) {
          const k = `${o.partition}\u0000${o.topic}`;
          if (String(this.asked.get(k)?.offset) === o.offset) this.pending.add(k);
        }
      })
      .finally(() => {
        this.inFlight = null;
        if (this.pending.size > 0) this.schedule();
      });
  }
}

/** A running group member, and the commits it still has to send (flush them before disconnecting). */
export interface GroupMember {
  consumer: Consumer;
  commits: Committer;
  /** Stop heartbeating and leave the group. */
  disconnect(): Promise<void>;
}

/**
 * Whether a consumer's crash comes from brokers being away (a coordinator not found while a
 * broker shuts down, a connection lost): kafkajs gives up for good on some of these
 * (KafkaJSGroupCoordinatorNotFound is "non-retriable"), and a crawl lost a stage that way in a
 * broker restart.
 */
export function isOutageCrash(err: unknown): boolean {
  const names = /GroupCoordinatorNotFound|BrokerNotFound|NumberOfRetriesExceeded|Connection|RequestTimeout|NoBrokerAvailable/;
  for (let e = err as { name?: string; retriable?: boolean; cause?: unknown } | undefined, depth = 0; e && depth < 10; e = e.cause as typeof e, depth++) {
    if (e.retriable === true || names.test(e.name ?? '')) return true;
  }
  return false;
}

/** How long a member waits before it joins again after kafkajs gave its consumer up in an outage. */
const REJOIN_AFTER_MS = 1000;

export async function runGroup(
  kafka: Kafka, groupId: string, topics: string[], h: GroupHandlers, onCommitError: (err: unknown) => void = () => undefined,
  timing: GroupTiming = GROUP_TIMING,
): Promise<GroupMember> {
  let consumer!: Consumer;
  let stopped = false;
  const committer = new Committer((offsets) => consumer.commitOffsets(offsets), onCommitError);
  // While any batch runs, beat from here (kafkajs shares one request between concurrent calls
  // and sends none if the last is recent). A "rebalancing" answer is kafkajs's to act on once
  // the batch returns; any failure is the next beat's to retry.
  let running = 0;
  let beat: (() => Promise<void>) | null = null;
  const beats = setInterval(() => {
    if (running > 0 && beat) beat().catch(() => undefined);
  }, timing.heartbeatMs);
  beats.unref();
  const join = async (): Promise<void> => {
    const c = kafka.consumer({
      groupId,
      partitionAssigners: [CoPartitionAssigner],
      sessionTimeout: timing.sessionTimeoutMs,
      heartbeatInterval: timing.heartbeatMs,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
      // kafkajs's default is 5 retries, then a crash and a restart as a new member, which then
      // waits for the old one's session to end; on a retryForever client it retries instead.
      retry: RETRY_FOREVER,
    });
    consumer = c;
    c.on(c.events.GROUP_JOIN, (e) => h.onAssign([...(e.payload.memberAssignment[topics[0]] ?? [])]));
    c.on(c.events.CRASH, (e) => {
      if (e.payload.restart || stopped) return;
      if (!isOutageCrash(e.payload.error)) {
        h.onFatal?.(e.payload.error);
        return;
      }
      // kafkajs gave up on an outage: join again with a new consumer, as it does for the rest.
      h.onRejoin?.(e.payload.error);
      setTimeout(() => {
        if (!stopped) join().catch((err: unknown) => h.onFatal?.(err));
      }, REJOIN_AFTER_MS).unref();
    });
    await c.connect();
    await c.subscribe({ topics, fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        const records = batch.messages.map((m) => ({
          topic: batch.topic, partition: batch.partition, offset: Number(m.offset), timestamp: Number(m.timestamp),
          key: m.key?.toString('utf8') ?? '', value: m.value,
        }));
        beat = heartbeat;
        running++;
        try {
          await h.onBatch(records, (next) => committer.commit(batch.topic, batch.partition, next));
        } finally {
          running--;
        }
        // Resolve moves the consumer's own position (without it kafkajs fetches the batch again).
        resolveOffset(batch.lastOffset());
      },
    });
  };
  await join();
  return {
    get consumer() {
      return consumer;
    },
    commits: committer,
    async disconnect() {
      stopped = true;
      clearInterval(beats);
      await consumer.disconnect();
    },
  };
}

export interface GroupLag {
  /** Records of the topic the group had not committed at the last look (0 before the first). */
  lag(): number;
  stop(): Promise<void>;
}

/** A group's backlog on a topic: records not yet committed (`lag`) of all it holds (`end`), over all partitions. */
export async function groupBacklog(admin: Admin, groupId: string, topic: string): Promise<{ lag: number; end: number }> {
  const [ends, groups] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  const done = new Map((groups[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  let lag = 0;
  let end = 0;
  for (const o of ends) {
    const committed = done.get(o.partition) ?? -1;
    // -1: nothing committed yet, so the group starts from the earliest record still kept.
    lag += Number(o.high) - (committed >= 0 ? committed : Number(o.low));
    end += Number(o.high);
  }
  return { lag, end };
}

/**
 * A consumer group's backlog on a topic (groupBacklog), looked up every `everyMs`. Failed looks
 * keep the last value.
 */
export async function watchGroupLag(kafka: Kafka, groupId: string, topic: string, everyMs = 1000, onError: (err: unknown) => void = () => undefined): Promise<GroupLag> {
  const admin = kafka.admin();
  await admin.connect();
  let last = 0;
  let stopped = false;
  const look = async (): Promise<void> => {
    last = (await groupBacklog(admin, groupId, topic)).lag;
  };
  let timer: NodeJS.Timeout | null = null;
  const loop = (): void => {
    timer = setTimeout(() => {
      void look().catch(onError).finally(() => {
        if (!stopped) loop();
      });
    }, everyMs);
    timer.unref();
  };
  loop();
  return {
    lag: () => last,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await admin.disconnect();
    },
  };
}

/** Every record of a compacted topic's given partitions, from the start to the current end. */
export async function readTable(kafka: Kafka, topic: string, partitions: readonly number[]): Promise<ConsumedRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  const ends = new Map<number, number>();
  for (const o of offsets) {
    if (partitions.includes(o.partition) && Number(o.high) > Number(o.low)) ends.set(o.partition, Number(o.high));
  }
  const out: ConsumedRecord[] = [];
  if (ends.size === 0) {
    await admin.disconnect();
    return out;
  }
  const groupId = `kcrawl.restore.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        eachBatch: async ({ batch }) => {
          const end = ends.get(batch.partition);
          if (end === undefined) return;
          for (const m of batch.messages) {
            const offset = Number(m.offset);
            if (offset >= end) break;
            out.push({ topic, partition: batch.partition, offset, timestamp: Number(m.timestamp), key: m.key?.toString('utf8') ?? '', value: m.value });
          }
          if (Number(batch.lastOffset()) >= end - 1) ends.delete(batch.partition);
          if (ends.size === 0) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  await admin.deleteGroups([groupId]).catch(() => undefined);
  await admin.disconnect();
  return out;
}
