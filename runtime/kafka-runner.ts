/**
 * Runs one stage as a Kafka consumer group member: decode through the registry, handle, produce
 * the emits (acks = all) to host-chosen partitions, then commit. Stages with state restore the
 * newly owned partitions from their compacted tables before handling any of their records, and
 * drop hosts they no longer own at once on a rebalance.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { createProducer, GROUP_TIMING, produce, readTable, runGroup, type ConsumedRecord, type GroupTiming, type RawRecord, type Kafka } from '../connectors/kafka';
import type { AvroRegistry } from '../connectors/registry';
import { avroType } from '../lib/avro';
import { partitionForHost } from '../lib/partitioner';
import { topics, type TopicId } from '../topologies/crawl';
import { AbandonedError, Dispatcher, type InRecord, type OutRecord, type Stage, type StageContext } from './stage';
import { InflightOffsets } from './inflight-offsets';
import { kafkaChangelog } from './kafka-changelog';
import { Deadline } from './shutdown';

export interface KafkaRuntime {
  /**
   * Long-running processes give one whose connections retry without end (connectKafka
   * retryForever): their producers and consumers wait out an outage instead of failing records
   * or restarting their group membership.
   */
  kafka: Kafka;
  registry: AvroRegistry;
  /** Schema ids by topic, from `registerSchemas`. */
  schemaIds: ReadonlyMap<TopicId, number>;
  prefix: string;
  partitions: number;
  log: Logger;
  /** Group session and heartbeat (connectors/kafka.ts GROUP_TIMING if absent). */
  timing?: GroupTiming;
}

/** How long a stage's stop waits at most when not given a deadline. */
export const STAGE_STOP_MS = 15_000;

export interface RunningStage {
  /**
   * Store, produce and commit what can be within `deadline`, then leave: each step waits only
   * for the time left (runtime/shutdown.ts), so a broker that is down or hung costs the bound,
   * not a hang. `complete` is false when a step was cut short.
   */
  stop(deadline?: Deadline): Promise<{ complete: boolean }>;
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
      compression: topics[o.topic].compression,
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

/** Most records of a stage started and not yet committed; a batch waits while there are more. */
const MAX_OUTSTANDING = 4096;
const RETRY_DELAY_MS = 1000;
/** A held batch waits at most this long (then goes on), so rebalances are never stalled by it. */
const MAX_HOLD_MS = 5000;

export interface KafkaStageOptions {
  /** While this says so, a new batch waits (bounded by MAX_HOLD_MS) before starting its records. */
  holdWhile?: () => boolean;
  /** The stage's consumer stopped for good (kafkajs does not restart it after this error). */
  onFatal?: (err: unknown) => void;
}

/**
 * Runs a stage's records without holding a partition's consumption on results that wait (a
 * fetched page is announced only once its WARC file is stored, which takes up to
 * CRAWL_WARC_MAX_AGE_MS). Offsets are committed per partition over the contiguous run of
 * finished records, as the embedded runner does; a failed record is retried and holds the
 * commit of everything after it meanwhile (at-least-once).
 */
class PipelinedStage {
  private readonly dispatcher: Dispatcher;
  /** Records started and not yet committed, per partition. */
  private readonly inflight = new InflightOffsets();
  private readonly waiters: Array<() => void> = [];
  private stopped = false;
  /** Partitions this member owns; a failed record of another one is left to its new owner. */
  private ownedNow: ReadonlySet<number> | null = null;

  constructor(private readonly stage: Stage, private readonly ctx: StageContext, private readonly send: (outs: readonly OutRecord[]) => Promise<void>) {
    this.dispatcher = new Dispatcher(stage, ctx);
  }

  get owned(): ReadonlySet<number> | null {
    return this.ownedNow;
  }

  /** The partitions owned after a rebalance; what is known of lost ones is dropped. */
  set owned(next: ReadonlySet<number> | null) {
    for (const p of this.ownedNow ?? []) {
      if (!next?.has(p)) for (const topic of this.stage.inputs) this.inflight.forget(topic, p);
    }
    this.ownedNow = next;
  }

  /** Start every record; resolves when each handler has returned (or failed) and room is left. */
  async runBatch(recs: readonly InRecord[], commit: (next: number) => void, holdWhile?: () => boolean): Promise<void> {
    const holdUntil = Date.now() + MAX_HOLD_MS;
    while (holdWhile?.() && !this.stopped && Date.now() < holdUntil) await new Promise((r) => setTimeout(r, 50));
    // Read again after a rebalance from a commit behind what this process did: run only what is new.
    const fresh = recs.filter((r) => !this.inflight.has(r.topic, r.partition, r.offset));
    if (fresh.length < recs.length) {
      this.ctx.log.debug({ partition: recs[0]!.partition, records: recs.length - fresh.length }, 'records read again and already run here: skipped');
    }
    const handled = fresh.map((rec) => this.start(rec, commit));
    await Promise.all(handled);
    while (this.inflight.running > MAX_OUTSTANDING && !this.stopped) await new Promise<void>((r) => this.waiters.push(r));
  }

  /**
   * Stopping: records still waiting for a slot are abandoned (left uncommitted: the partition's
   * next owner replays them), and a batch waiting for room goes on.
   */
  stop(): void {
    this.stopped = true;
    this.dispatcher.abandonWaiting();
    for (const w of this.waiters.splice(0)) w();
  }

  /** Wait (bounded) until every record that started is finished; how many did not. */
  async drained(ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    while (this.inflight.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.inflight.running;
  }

  private start(rec: InRecord, commit: (next: number) => void): Promise<void> {
    const tracked = this.inflight.start(rec.topic, rec.partition, rec.offset);
    let handled!: () => void;
    const handledP = new Promise<void>((r) => (handled = r));
    const attempt = (): void => {
      const early: Array<Promise<void>> = [];
      this.dispatcher
        .run(rec, (e) => early.push(this.send(e)), handled)
        .then(async (outs) => {
          await Promise.all(early);
          await this.send(outs);
          await this.stage.produced?.(outs);
          const next = tracked.finish();
          if (next >= 0) commit(next);
          if (this.inflight.running <= MAX_OUTSTANDING) for (const w of this.waiters.splice(0)) w();
        })
        .catch((err: unknown) => {
          handled();
          if (err instanceof AbandonedError || this.stopped || (this.owned && !this.owned.has(rec.partition))) {
            // Stopping, or the partition moved: left uncommitted for the partition's next owner.
            tracked.abandon();
            return;
          }
          this.ctx.log.error({ err, topic: rec.topic, partition: rec.partition, offset: rec.offset }, 'handler failed; retrying');
          setTimeout(attempt, RETRY_DELAY_MS).unref();
        });
    };
    attempt();
    return handledP;
  }
}

export async function runStageOnKafka(stage: Stage, rt: KafkaRuntime, opts: KafkaStageOptions = {}): Promise<RunningStage> {
  const log = rt.log.child({ stage: stage.id });
  const ctx = { now: Date.now, log };
  const ids = topicIdByName(rt.prefix);
  const producer = await createProducer(rt.kafka);
  // Records finish one by one now (PipelinedStage); what finishes in one turn of the event loop
  // is produced together, so produce requests stay batches of many records.
  let queued: OutRecord[] = [];
  let flushing: Promise<void> | null = null;
  const send = (outs: readonly OutRecord[]): Promise<void> => {
    if (outs.length === 0) return Promise.resolve();
    for (const o of outs) queued.push(o);
    return (flushing ??= new Promise<void>((r) => setImmediate(r)).then(async () => {
      const batch = queued;
      queued = [];
      flushing = null;
      await produce(producer, await encodeRecords(rt, batch));
    }));
  };
  const pipeline = new PipelinedStage(stage, ctx, send);
  let owned = new Set<number>();
  let restoring: Promise<void> = Promise.resolve();

  const restore = async (partitions: number[]): Promise<void> => {
    // A local store first (the frontier's URL table), from its changelog's tail or whole.
    if (stage.changelog && stage.restoreChangelog) await stage.restoreChangelog(partitions, kafkaChangelog(rt, stage.changelog), ctx);
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

  /** A failed restore (a store still locked by its previous owner, a broker away) is tried again. */
  const restoreUntilDone = async (partitions: number[]): Promise<void> => {
    for (;;) {
      const mine = partitions.filter((p) => owned.has(p));
      if (mine.length === 0) return;
      try {
        await restore(mine);
        return;
      } catch (err) {
        log.error({ err, partitions: mine }, 'restore failed; trying again in 5 s');
        await new Promise((r) => setTimeout(r, 5000));
      }
    }
  };

  const member = await runGroup(rt.kafka, `${rt.prefix}crawl.${stage.id}`, stage.inputs.map((t) => rt.prefix + topics[t].name), {
    onAssign(partitions) {
      const next = new Set(partitions);
      const gained = partitions.filter((p) => !owned.has(p));
      // Drop lost partitions at once; take gained ones only after their state is restored.
      stage.assigned?.([...owned].filter((p) => next.has(p)));
      owned = next;
      pipeline.owned = next;
      log.info({ partitions, gained }, 'partitions assigned');
      if (gained.length && (stage.restoreFrom?.length || stage.changelog)) {
        restoring = restoring.then(() => restoreUntilDone(gained)).then(() => stage.assigned?.([...owned]));
      } else stage.assigned?.([...owned]);
    },
    async onBatch(records, commit) {
      // The member heartbeats while a batch runs (connectors/kafka.ts runGroup), also while it
      // waits here for a restore (a store rebuilt from its changelog takes minutes).
      await restoring;
      const recs = await decodeRecords(rt, records, ids);
      if (stage.handleBatch) {
        const outs = await stage.handleBatch(recs, ctx);
        await send(outs);
        await stage.produced?.(outs);
        commit(recs[recs.length - 1]!.offset + 1);
      } else {
        // Returns once every handler has run; results still waiting (a WARC file to be
        // stored) finish in the background and commit as they do, in offset order.
        await pipeline.runBatch(recs, commit, opts.holdWhile);
      }
    },
    onFatal(err) {
      log.error({ err }, 'consumer stopped for good');
      opts.onFatal?.(err);
    },
    onRejoin(err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'consumer given up by kafkajs in an outage: joining again');
    },
  }, (err) => log.debug({ err }, 'offset commit refused (partition moved)'), rt.timing ?? GROUP_TIMING);

  const globals = await Promise.all((stage.globalTables ?? []).map((topic) => followGlobal(rt, stage, topic)));

  let ticking = false;
  const timer = stage.tick
    ? setInterval(() => {
        if (ticking) return;
        ticking = true;
        restoring
          .then(async () => send(await stage.tick!(ctx)))
          .catch((err: unknown) => log.error({ err }, 'tick failed'))
          .finally(() => (ticking = false));
      }, stage.tickMs ?? 100)
    : null;

  return {
    async stop(deadline = Deadline.in(STAGE_STOP_MS)) {
      if (timer) clearInterval(timer);
      pipeline.stop();
      // Each step keeps some of the bound for those after it: storing the open WARC file
      // (results wait on it), producing those results, committing, leaving.
      let complete = await deadline.step('store open files', () => stage.close?.() ?? Promise.resolve(), log, 3000);
      const left = await pipeline.drained(deadline.left(2000));
      if (left > 0) {
        complete = false;
        log.warn({ records: left }, 'stopped with records unfinished: left uncommitted for the next owner');
      }
      complete = (await deadline.step('commit', () => member.commits.flush(), log, 1000)) && complete;
      complete = (await deadline.step('leave group', () => member.disconnect(), log, 500)) && complete;
      for (const g of globals) complete = (await deadline.step('leave table feed', () => g.stop(), log, 250)) && complete;
      complete = (await deadline.step('producer', () => producer.disconnect(), log)) && complete;
      return { complete };
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
      return { complete: true };
    },
  };
}
