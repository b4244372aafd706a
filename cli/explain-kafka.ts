/** `crawl explain --kafka`: the crawl's state as the Kafka topics hold it (loaded lazily: kafkajs). */
import type { CrawlConfig } from '../lib/config';
import { HostPolicyTable } from '../lib/host-policy';
import { createLogger } from '../lib/logger';
import type { FeedStateMsg, HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import { partitionForHost } from '../lib/partitioner';
import { topics } from '../topologies/crawl';
import { avroReader } from '../lib/avro';
import { kafkaChangelog } from '../runtime/kafka-changelog';
import type { CrawlState } from './explain';
import { kafkaEnv, latestRows, runtimeFor } from './kafka-commands';

export async function stateFromKafka(url: string, config: CrawlConfig): Promise<CrawlState> {
  const rt = await runtimeFor(kafkaEnv(), config, createLogger({ level: 'warn' }));
  const all = Array.from({ length: rt.partitions }, (_, p) => p);
  const policy = new HostPolicyTable();
  for (const [k, v] of await latestRows<HostPolicyMsg>(rt, 'hostPolicy', all)) policy.apply(k, v);
  const optout = new OptOutRegistry();
  for (const [k, v] of await latestRows<OptOutMsg>(rt, 'optout', all)) optout.apply(k, v);
  // The URL's partition of crawl.urls, read through keeping only that URL's latest record (the
  // table itself lives in the frontiers' stores; a partition may hold millions of rows).
  const host = new URL(url).hostname;
  const p = partitionForHost(host, rt.partitions);
  const source = kafkaChangelog(rt, 'urls');
  let latestRow: Buffer | null = null;
  await source.read(new Map([[p, 0]]), await source.ends([p]), async (_p, recs) => {
    for (const r of recs) if (r.key === url) latestRow = r.value;
  });
  const row = latestRow === null ? null : (avroReader(topics.urls.valueSchema)(latestRow) as UrlStateMsg);
  // crawl.feeds is a small table (feedMaxPerHost feeds a host at most): read whole.
  const feed = (await latestRows<FeedStateMsg>(rt, 'feeds', [p])).get(url) ?? null;
  return { policy, optout, row, feed };
}
