/** `crawl explain --kafka`: the crawl's state as the Kafka topics hold it (loaded lazily: kafkajs). */
import { readTable } from '../connectors/kafka';
import type { CrawlConfig } from '../lib/config';
import { HostPolicyTable } from '../lib/host-policy';
import { createLogger } from '../lib/logger';
import type { FeedStateMsg, HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import { partitionForHost } from '../lib/partitioner';
import type { KafkaRuntime } from '../runtime/kafka-runner';
import { topics, type TopicId } from '../topologies/crawl';
import type { CrawlState } from './explain';
import { kafkaEnv, runtimeFor } from './kafka-commands';

async function latest(rt: KafkaRuntime, topic: TopicId, partitions: number[]): Promise<Map<string, unknown>> {
  const rows = new Map<string, unknown>();
  for (const r of await readTable(rt.kafka, rt.prefix + topics[topic].name, partitions)) {
    rows.set(r.key, r.value === null ? null : await rt.registry.decode(r.value));
  }
  return rows;
}

export async function stateFromKafka(url: string, config: CrawlConfig): Promise<CrawlState> {
  const rt = await runtimeFor(kafkaEnv(), config, createLogger({ level: 'warn' }));
  const all = Array.from({ length: rt.partitions }, (_, p) => p);
  const policy = new HostPolicyTable();
  for (const [k, v] of await latest(rt, 'hostPolicy', all)) policy.apply(k, v as HostPolicyMsg | null);
  const optout = new OptOutRegistry();
  for (const [k, v] of await latest(rt, 'optout', all)) optout.apply(k, v as OptOutMsg | null);
  const host = new URL(url).hostname;
  const own = [partitionForHost(host, rt.partitions)];
  const row = ((await latest(rt, 'urls', own)).get(url) as UrlStateMsg | null | undefined) ?? null;
  const feed = ((await latest(rt, 'feeds', own)).get(url) as FeedStateMsg | null | undefined) ?? null;
  return { policy, optout, row, feed };
}
