/**
 * `crawl serve`'s URL table (Kafka mode): a copy of crawl.urls in stores of its own under
 * CRAWL_STATE_DIR/<prefix>serve, restored like a frontier's (checkpoint, then the tail; or a
 * rebuild), then kept current by following the topic, with a SHA-256 index for
 * GET /urls/{sha256}. Its checkpoints name the offsets it has applied.
 */
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { CrawlConfig } from '../lib/config';
import type { UrlStateMsg, UrlStatus } from '../lib/messages';
import { partitionForHost } from '../lib/partitioner';
import { queueLayout, queueSlotOf } from '../processors/frontier-schedule';
import { applyChangelog, checkpoint, restoreStores } from '../processors/frontier-restore';
import { storeBudget } from '../processors/frontier';
import type { UrlStore } from '../processors/frontier-store';
import type { ChangelogRecord } from '../runtime/changelog';
import type { KafkaRuntime } from '../runtime/kafka-runner';
import { kafkaChangelog, plainValues } from '../runtime/kafka-changelog';
import { topics } from '../topologies/crawl';
import type { FrontierNumbers, UrlTableView } from './url-table';

/** How often `crawl serve`'s copy records the offsets it holds. */
const SERVE_CHECKPOINT_MS = 10_000;

export class ServeUrlTable implements UrlTableView {
  private hostsWithWork = 0;
  private readonly applied = new Map<number, number>();
  private stop: (() => Promise<void>) | null = null;

  private constructor(
    private readonly stores: Map<number, UrlStore>,
    private readonly partitions: number,
    private readonly dirOf: (p: number) => string,
    private readonly levels: number,
  ) {}

  /** Restore the copy (tail or rebuild), then follow crawl.urls from where it stands. */
  static async start(rt: KafkaRuntime, config: CrawlConfig, log: Logger): Promise<ServeUrlTable> {
    const all = Array.from({ length: rt.partitions }, (_, p) => p);
    const dirOf = (p: number): string => join(config.stateDir, `${rt.prefix}serve`, `urls-${p}`);
    // Queue keys as the frontier derives them (class, then level), so a copy reads like its stores.
    const levelOf = (r: UrlStateMsg): number => queueSlotOf(r, config);
    const levels = queueLayout(config.priorityLevels);
    const source = kafkaChangelog(rt, 'urls');
    const restored = await restoreStores(all, source, { dirOf, levelOf, levels, log, hashIndex: true, lockWaitMs: 30_000, kv: storeBudget(all.length) });
    const t = new ServeUrlTable(new Map(restored.map((r) => [r.partition, r.store])), rt.partitions, dirOf, levels);
    for (const r of restored) {
      t.applied.set(r.partition, r.offset);
      await r.store.eachHost((chunk) => void (t.hostsWithWork += chunk.filter(([, s]) => s.queued > 0).length));
    }
    await t.follow(rt, log);
    return t;
  }

  private async follow(rt: KafkaRuntime, log: Logger): Promise<void> {
    const topic = rt.prefix + topics.urls.name;
    const groupId = `${rt.prefix}crawl.serve.urls.${randomUUID()}`;
    const consumer = rt.kafka.consumer({ groupId, maxWaitTimeInMs: 200, allowAutoTopicCreation: false });
    const plain = plainValues(rt, 'urls');
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let lastCheckpoint = Date.now();
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const store = this.stores.get(batch.partition);
        const from = this.applied.get(batch.partition) ?? 0;
        if (!store) return;
        const recs: ChangelogRecord[] = [];
        for (const m of batch.messages) {
          const offset = Number(m.offset);
          if (offset < from) continue;
          recs.push({ offset, key: m.key?.toString('utf8') ?? '', value: m.value === null ? null : await plain(m.value) });
        }
        if (recs.length === 0) return;
        this.hostsWithWork += await applyChangelog(store, recs, { hashIndex: true });
        this.applied.set(batch.partition, recs[recs.length - 1].offset + 1);
        if (Date.now() - lastCheckpoint >= SERVE_CHECKPOINT_MS) {
          lastCheckpoint = Date.now();
          for (const [p, s] of this.stores) await checkpoint(this.dirOf(p), s, this.applied.get(p) ?? 0, this.levels).catch((err: unknown) => log.warn({ err }, 'serve checkpoint not written'));
        }
      },
    });
    for (const [p, offset] of this.applied) consumer.seek({ topic, partition: p, offset: String(offset) });
    this.stop = async () => {
      await consumer.disconnect();
      const admin = rt.kafka.admin();
      await admin.connect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    };
  }

  private storeOf(host: string): UrlStore | undefined {
    return this.stores.get(partitionForHost(host, this.partitions));
  }

  async row(url: string, host: string): Promise<UrlStateMsg | undefined> {
    return (await this.storeOf(host)?.rows([url]))?.[0];
  }

  async urlOfHash(hex: string): Promise<string | undefined> {
    for (const s of this.stores.values()) {
      const url = await s.urlOfHash(hex);
      if (url !== undefined) return url;
    }
    return undefined;
  }

  async hostKnown(host: string): Promise<boolean> {
    return (await this.storeOf(host)?.hasHost(host)) ?? false;
  }

  numbers(): FrontierNumbers {
    const byState: FrontierNumbers['byState'] = {};
    let urls = 0;
    for (const s of this.stores.values()) {
      for (const [k, n] of Object.entries(s.counts)) {
        byState[k as UrlStatus] = (byState[k as UrlStatus] ?? 0) + (n ?? 0);
        urls += n ?? 0;
      }
    }
    return { urls, byState, hostsInRotation: this.hostsWithWork, oldestDueAgeMs: null };
  }

  async close(): Promise<void> {
    await this.stop?.();
    for (const [p, s] of this.stores) {
      await checkpoint(this.dirOf(p), s, this.applied.get(p) ?? 0, this.levels).catch(() => undefined);
      await s.close();
    }
  }
}
