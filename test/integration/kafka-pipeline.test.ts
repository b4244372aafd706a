/**
 * Kafka mode runs a stage's records without holding the partition on results that wait (a page
 * is announced only once its WARC file is stored, up to CRAWL_WARC_MAX_AGE_MS later): a record
 * whose result waits for records that arrive after it must not stop them from being consumed,
 * and offsets are committed only over records whose results were produced. Real broker and
 * registry; unique topic prefix per run.
 */
import { randomBytes } from 'node:crypto';
import type { Admin } from '../../connectors/kafka';
import pino from 'pino';
import { connectKafka, createProducer, ensureTopics, produce } from '../../connectors/kafka';
import { AvroRegistry } from '../../connectors/registry';
import { registerSchemas } from '../../cli/kafka-commands';
import type { LinkMsg } from '../../lib/messages';
import { runStageOnKafka, encodeRecords, type KafkaRuntime, type RunningStage } from '../../runtime/kafka-runner';
import type { HandleResult, InRecord, OutRecord, Stage } from '../../runtime/stage';
import { topics } from '../../topologies/crawl';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the integration global setup should start the stack and set it`);
  return value;
}

const link = (n: number): LinkMsg => ({ url: `http://127.0.8.1/p${n}`, source_url: null, depth: 0, discovered_at: 1_700_000_000_000, is_seed: true, priority: null });

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface LinksRun {
  rt: KafkaRuntime;
  prefix: string;
  admin: Admin;
  /** Produce links to pages `from` … `from + n - 1` of 127.0.8.1. */
  sendLinks(from: number, n: number): Promise<void>;
  /** Stop the stage, then drop the run's topics and clients. */
  close(running: RunningStage): Promise<void>;
}

/** A runtime over a one-partition crawl.links of its own (unique prefix), a producer and an admin. */
async function linksRun(tag: string): Promise<LinksRun> {
  const prefix = `t-${tag}-${Date.now()}-${randomBytes(3).toString('hex')}.`;
  const kafka = connectKafka({ brokers: requireEnv('CRAWL_KAFKA_BROKERS').split(',') });
  await ensureTopics(kafka, [topics.links], 1, prefix);
  const registry = new AvroRegistry(requireEnv('CRAWL_REGISTRY_URL'));
  const rt: KafkaRuntime = { kafka, registry, schemaIds: await registerSchemas(registry, prefix), prefix, partitions: 1, log: pino({ level: 'silent' }) };
  const producer = await createProducer(kafka);
  const admin = kafka.admin();
  await admin.connect();
  return {
    rt, prefix, admin,
    async sendLinks(from, n) {
      const outs: OutRecord[] = Array.from({ length: n }, (_, i) => ({ topic: 'links', key: 'h', host: '127.0.8.1', value: link(from + i) }));
      await produce(producer, await encodeRecords(rt, outs));
    },
    async close(running) {
      await running.stop();
      await producer.disconnect();
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      await admin.deleteTopics({ topics: mine }).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

test('a record whose result waits on later records does not hold its partition; commits follow produced results', async () => {
  const run = await linksRun('pipe');

  // The first five records' results wait until the last five have been handled.
  const handled: number[] = [];
  let releaseFirst!: () => void;
  const firstMayFinish = new Promise<void>((r) => (releaseFirst = r));
  const stage: Stage = {
    id: 'pipeline-test',
    inputs: ['links'],
    outputs: [],
    concurrency: 16,
    handle(rec: InRecord): HandleResult {
      handled.push(rec.offset);
      if (handled.length === 10) releaseFirst();
      const none: OutRecord[] = [];
      return rec.offset < 5 ? { early: [], pending: firstMayFinish.then(() => none) } : none;
    },
  };
  const running = await runStageOnKafka(stage, run.rt);
  const committed = async (): Promise<number> => {
    const [t] = await run.admin.fetchOffsets({ groupId: `${run.prefix}crawl.pipeline-test`, topics: [run.prefix + topics.links.name] });
    return Number(t!.partitions[0]!.offset);
  };
  try {
    await run.sendLinks(0, 5);
    await until(() => handled.length >= 5, 30_000, 'the first five records to be handled');
    // Nothing is committed while the first results wait, even though their handlers ran.
    expect(await committed()).toBeLessThan(5);
    // The next records are consumed while the first five still wait (the old runner deadlocked here).
    await run.sendLinks(5, 5);
    await until(() => handled.length >= 10, 30_000, 'the later records to be consumed');
    let offset = -1;
    for (let i = 0; i < 300 && offset !== 10; i++) {
      offset = await committed();
      if (offset !== 10) await new Promise((r) => setTimeout(r, 100));
    }
    expect(offset).toBe(10);
    expect(handled.slice().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  } finally {
    await run.close(running);
  }
}, 120_000);

test('a stage held by holdWhile starts no record until the hold lifts', async () => {
  const run = await linksRun('hold');
  const handled: number[] = [];
  const stage: Stage = {
    id: 'hold-test',
    inputs: ['links'],
    outputs: [],
    handle(rec: InRecord): HandleResult {
      handled.push(rec.offset);
      return [];
    },
  };
  let hold = true;
  let asked = 0;
  const running = await runStageOnKafka(stage, run.rt, { holdWhile: () => (asked++, hold) });
  try {
    await run.sendLinks(100, 3);
    // The batch arrives and asks; held (well within the 5 s bound), nothing is handled.
    await until(() => asked > 3, 30_000, 'the held batch to ask');
    await new Promise((r) => setTimeout(r, 500));
    expect(handled).toEqual([]);
    hold = false;
    await until(() => handled.length === 3, 30_000, 'the records after the hold lifted');
    expect(handled).toEqual([0, 1, 2]);
  } finally {
    await run.close(running);
  }
}, 120_000);
