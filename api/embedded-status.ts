/**
 * `crawl run --status-port N`: the same status page, /stats and /metrics as `crawl serve`,
 * over the embedded log, and the webmaster API (/webmaster/v1, for accounts made with
 * `crawl webmaster add-account --out DIR` before the run), whose changes go to the embedded log
 * like any other row. The operator's endpoints (seeds, feeds, blocks, crawl rates, opt-outs) are served
 * only when the run has an operator token (CRAWL_API_TOKEN as it starts), writing to the embedded log. A small observer stage follows
 * crawl.fetch-status (its own consumer group) and the tables the API reads, and feeds a
 * CrawlView; URL rows and the frontier's numbers are read from the frontier's own stores
 * (api/url-table.ts). Nothing in the crawl knows it is there.
 */
import type { Logger } from 'pino';
import type { CrawlConfig } from '../lib/config';
import type { HostPolicyTable } from '../lib/host-policy';
import { metrics, setMetricSources } from '../lib/metrics';
import type { OutRecord, Stage } from '../runtime/stage';
import { CrawlView } from './crawl-view';
import { createApiServer, listen } from './server';
import type { UrlTableView } from './url-table';
import { webmasterBackend } from './webmaster-backend';

export interface EmbeddedStatus {
  /** Add to the embedded runner's stages. */
  stage: Stage;
  /**
   * Listen, and say where on stderr. Call it once the runner has started: the stage has then
   * replayed the tables the API reads, so a webmaster's token made before the run is known by
   * the first request (before, it was answered invalid_token while the journal was replayed).
   */
  listen(): Promise<number>;
  stop(): Promise<void>;
}

export function statusViewStage(view: CrawlView): Stage {
  return {
    id: 'status-view',
    inputs: ['fetchStatus'],
    outputs: [],
    // Compacted tables the API reads (small ones: the URL table is read from the frontier's stores).
    globalTables: ['feeds', 'hostPolicy', 'optout', 'optoutApplied', 'webmasterAccounts', 'webmasterSites'],
    onGlobal: (rec, topic) => view.applyRow(topic, rec.key, rec.value),
    handle: (rec) => {
      view.applyRow('fetchStatus', rec.key, rec.value);
      return [] as OutRecord[];
    },
  };
}

/** Records a stage's consumer group has not committed yet on one of its input topics. */
export interface GroupLag {
  group: string;
  /** The topic's name (`crawl.frontier`). */
  topic: string;
  records: number;
}

/** The status page's "waiting in" figure per topic: the most any group reading it has to go. */
function waitingByTopic(lags: readonly GroupLag[]): Record<string, number> {
  const byTopic: Record<string, number> = {};
  for (const l of lags) byTopic[l.topic] = Math.max(byTopic[l.topic] ?? 0, l.records);
  return byTopic;
}

/** How often the embedded consumer lag is copied to crawl_consumer_lag_messages. */
const LAG_METRIC_MS = 1000;

/**
 * The status server for 127.0.0.1:port (0 = a free port), listening once `listen()` is called. `lags`, when given,
 * feeds the consumer lag gauge and the page's "waiting in" rows, as the Kafka lag poll does
 * for `crawl serve`.
 */
export function embeddedStatus(
  port: number,
  log: Logger,
  o: {
    warcStats?: () => { bytes: number; files: number };
    lags?: () => GroupLag[];
    /** With both, the webmaster API is served too, writing to the embedded log through `append`. */
    webmaster?: { config: CrawlConfig; append: (outs: OutRecord[]) => void };
    /** The frontier's URL table (api/url-table.ts frontierTable). */
    urls?: UrlTableView | null;
    /** The host-policy table the crawl's stages share (one copy of every host's rows, not two). */
    policy?: HostPolicyTable;
    /** The operator's endpoints too (as on `crawl serve`), for this bearer token, writing through `send` (the embedded log). */
    operator?: { token: string; send: (outs: OutRecord[]) => Promise<void> };
  } = {},
): EmbeddedStatus {
  const { warcStats, lags, webmaster, urls = null, policy, operator } = o;
  const view = new CrawlView({
    ...(webmaster ? { registryLagAlarmMs: webmaster.config.optoutLagAlarmMs, registryReportMs: webmaster.config.optoutReportMs } : {}),
    urls,
    ...(policy ? { policy } : {}),
  });
  const lagTimer = lags
    ? setInterval(() => {
        for (const l of lags()) metrics.consumerLag.set({ group: l.group, topic: l.topic }, l.records);
      }, LAG_METRIC_MS).unref()
    : null;
  const server = createApiServer(
    {
      view,
      ...(lags ? { lag: () => waitingByTopic(lags()) } : {}),
      ...(webmaster ? { webmaster: webmasterBackend(webmaster.config, async (outs) => webmaster.append(outs)) } : {}),
      ...(operator ? { send: operator.send } : {}),
    },
    { token: operator?.token ?? null, log: log.child({ component: 'status' }), title: 'kcrawl run' },
  );
  setMetricSources({ frontier: () => view.frontierNumbers(Date.now()), warc: warcStats, registryLag: () => view.registryLag(Date.now()) });
  return {
    stage: statusViewStage(view),
    async listen() {
      const bound = await listen(server, port, '127.0.0.1');
      process.stderr.write(`status page: http://127.0.0.1:${bound}/\n`);
      log.info({ port: bound }, 'status page listening');
      return bound;
    },
    async stop() {
      if (lagTimer) clearInterval(lagTimer);
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
