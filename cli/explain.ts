/**
 * `crawl explain URL [--json] [--out DIR] [--kafka]`: whether and when the URL would be
 * fetched and, if not, why (processors/frontier-explain.ts decides; this file gathers inputs).
 * robots.txt is fetched live with our own User-Agent (one request; nothing else is sent).
 * The crawl's state comes from an embedded run's journal (--out) or from Kafka (--kafka:
 * crawl.host-policy, crawl.optout and the URL's crawl.urls row).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createHttpClient } from '../connectors/http-undici';
import { HostPolicyTable } from '../lib/host-policy';
import { loadConfig, type CrawlConfig } from '../lib/config';
import type { FeedStateMsg, HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import { robotsFromFetch } from '../lib/robots';
import { normalizeUrl } from '../lib/url-normalize';
import { ROBOTS_BODY_CAP_BYTES, robotsFetcher } from '../processors/fetch';
import { explain, explanationText, type Explanation } from '../processors/frontier-explain';
import { readJournaledTable, readUrlRow } from './explain-state';

export interface ExplainOptions {
  json?: boolean;
  out?: string;
  kafka?: boolean;
  allowPrivateNetwork?: boolean;
  /** Skip the live robots.txt request (tests, offline). */
  noRobots?: boolean;
}

export interface CrawlState {
  policy: HostPolicyTable;
  optout: OptOutRegistry;
  row: UrlStateMsg | null;
  feed?: FeedStateMsg | null;
}

export async function stateFromJournal(out: string, url: string, host: string | null): Promise<CrawlState> {
  const dir = join(out, 'state');
  // A mistyped folder would otherwise read as a crawl that knows nothing of the URL.
  if (!existsSync(dir)) throw new Error(`--out ${out}: no crawl there (no ${dir}); give the folder \`crawl run --out\` wrote to`);
  const policy = new HostPolicyTable();
  for (const [k, v] of readJournaledTable<HostPolicyMsg>(dir, 'hostPolicy')) policy.apply(k, v);
  const optout = new OptOutRegistry();
  for (const [k, v] of readJournaledTable<OptOutMsg>(dir, 'optout')) optout.apply(k, v);
  const row = host === null ? null : await readUrlRow(dir, url, host);
  const feed = readJournaledTable<FeedStateMsg>(dir, 'feeds').get(url) ?? null;
  return { policy, optout, row, feed };
}

export async function explainUrl(url: string, o: ExplainOptions, config: CrawlConfig = loadConfig()): Promise<Explanation> {
  const n = normalizeUrl(url);
  const key = n.ok ? n.url : url;
  let state: CrawlState = { policy: new HostPolicyTable(), optout: new OptOutRegistry(), row: null };
  if (o.out) state = await stateFromJournal(o.out, key, n.ok ? n.host : null);
  else if (o.kafka) state = await (await import('./explain-kafka')).stateFromKafka(key, config);
  let robots = null;
  let robotsError: string | null = null;
  if (n.ok && !o.noRobots) {
    const cfg = { ...config, allowPrivateNetwork: config.allowPrivateNetwork || !!o.allowPrivateNetwork };
    const http = createHttpClient();
    try {
      const raw = await robotsFetcher({ http, archive: async () => ({ uri: '', offset: 0, length: 0, recordId: '' }), config: cfg })(new URL(n.url).origin);
      robots = robotsFromFetch(raw);
      if ('error' in raw) robotsError = raw.error;
    } finally {
      await http.close();
    }
  }
  return explain({ url, now: Date.now(), userAgent: config.userAgent, robots, robotsError, classPolicy: config, maxBodyBytes: ROBOTS_BODY_CAP_BYTES, ...state });
}

export async function explainCommand(url: string, o: ExplainOptions): Promise<void> {
  const e = await explainUrl(url, o);
  process.stdout.write(o.json ? JSON.stringify(e, null, 2) + '\n' : explanationText(e, Date.now()));
}
