/**
 * `crawl serve` in Kafka mode: the API's view is fed by following crawl.host-policy,
 * crawl.optout, crawl.optout-applied, the webmaster accounts and sites, crawl.fetch-status and
 * crawl.feeds, and reads URL rows from its own copy of crawl.urls on disk (api/serve-url-table.ts); writes
 * (the operator's and the webmaster API's) are produced with acks=all through the same
 * encoder as the processors; queue sizes are the processors' consumer lag, polled from admin.
 */
import { createProducer, produce } from '../connectors/kafka';
import { consumerLag, followTopics, type Follower } from '../connectors/kafka-tail';
import { createPageStore, pageStoreConfigFromEnv } from '../connectors/page-store';
import type { PageStore } from '../connectors/types';
import type { CrawlConfig } from '../lib/config';
import type { Logger } from '../lib/logger';
import { metrics, setMetricSources, trackRegistryVersion } from '../lib/metrics';
import type { StageName } from '../runtime/build-stages';
import { encodeRecords, type KafkaRuntime } from '../runtime/kafka-runner';
import type { OutRecord } from '../runtime/stage';
import { topics, type TopicId } from '../topologies/crawl';
import { CrawlView } from './crawl-view';
import { ServeUrlTable } from './serve-url-table';
import type { ApiBackend } from './server';
import { webmasterBackend } from './webmaster-backend';

/** Each processor's consumer group reads these topics (processors/*.ts `inputs`). */
export const PROCESSOR_INPUTS: Record<StageName, TopicId[]> = {
  'seen-test': ['links'],
  frontier: ['frontier', 'fetchStatus'],
  fetch: ['fetch'],
  parse: ['fetched'],
  handoff: ['parsed'],
};

/** How often consumer lag is measured (each poll is a few admin round trips per group). */
export const LAG_POLL_MS = 5000;

export interface KafkaBackend {
  backend: ApiBackend;
  stop(): Promise<void>;
}

export async function startKafkaBackend(rt: KafkaRuntime, config: CrawlConfig, log: Logger, pages: PageStore = createPageStore(pageStoreConfigFromEnv())): Promise<KafkaBackend> {
  const urls = await ServeUrlTable.start(rt, config, log);
  const view = new CrawlView({ registryLagAlarmMs: config.optoutLagAlarmMs, registryReportMs: config.optoutReportMs, urls });
  const producer = await createProducer(rt.kafka);
  const followed: TopicId[] = ['hostPolicy', 'optout', 'optoutApplied', 'webmasterAccounts', 'webmasterSites', 'fetchStatus', 'feeds'];
  const byName = new Map(followed.map((id) => [rt.prefix + topics[id].name, id]));
  const follower: Follower = await followTopics(rt.kafka, `${rt.prefix}crawl.serve`, [...byName.keys()], async (topic, _p, key, raw) => {
    const id = byName.get(topic);
    if (id) view.applyRow(id, key, raw === null ? null : await rt.registry.decode(raw));
  });

  const lag: Record<string, number> = {};
  const pollLag = async (): Promise<void> => {
    for (const [stage, inputs] of Object.entries(PROCESSOR_INPUTS)) {
      const group = `${rt.prefix}crawl.${stage}`;
      const byTopic = await consumerLag(rt.kafka, group, inputs.map((t) => rt.prefix + topics[t].name));
      for (const [topic, n] of byTopic) {
        const name = topic.slice(rt.prefix.length);
        lag[name] = n;
        metrics.consumerLag.set({ group: `crawl.${stage}`, topic: name }, n);
      }
    }
  };
  let polling = false;
  const lagTimer = setInterval(() => {
    if (polling) return;
    polling = true;
    pollLag().catch((err: unknown) => log.warn({ err }, 'consumer lag not measured')).finally(() => (polling = false));
  }, LAG_POLL_MS);
  void pollLag().catch((err: unknown) => log.warn({ err }, 'consumer lag not measured'));

  setMetricSources({
    frontier: () => view.frontierNumbers(Date.now()),
    prices: { processHourUsd: config.costProcessHourUsd, storedGbMonthUsd: config.costStoredGbMonthUsd },
    registryLag: () => view.registryLag(Date.now()),
  });
  trackRegistryVersion('serve', () => view.optouts.version);
  const send = async (outs: OutRecord[]): Promise<void> => produce(producer, await encodeRecords(rt, outs));

  return {
    backend: {
      view,
      pages,
      lag: () => ({ ...lag }),
      send,
      webmaster: webmasterBackend(config, send),
    },
    async stop() {
      clearInterval(lagTimer);
      await follower.stop();
      await urls.close();
      await producer.disconnect();
      await pages.close();
    },
  };
}
