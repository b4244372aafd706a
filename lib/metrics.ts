/**
 * Prometheus metrics (prom-client), one registry per process. Every queue and rate the crawl
 * has is declared here, once, with its unit in the name; code elsewhere only increments.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FetchStatusMsg } from './messages';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'crawl_process_' });

const pagesFetched = new Counter({
  name: 'crawl_pages_fetched_total',
  help: 'Pages fetched and stored (any HTTP status); rate() of this is pages/s',
  registers: [registry],
});

export const metrics = {
  fetchOutcomes: new Counter({
    name: 'crawl_fetch_outcomes_total',
    help: 'Final outcome of each leased fetch, by outcome and HTTP status class',
    labelNames: ['outcome', 'status_class'] as const,
    registers: [registry],
  }),
  fetchSeconds: new Histogram({
    name: 'crawl_fetch_duration_seconds',
    help: 'Duration of page requests (response time)',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  }),
  linkRejections: new Counter({
    name: 'crawl_link_rejections_total',
    help: 'Links dropped before the frontier, by reason (seen, too-deep, out-of-scope, invalid-url, …)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  frontierUrls: new Gauge({
    name: 'crawl_frontier_urls',
    help: 'URLs in the URL table by state (QUEUED, LEASED, FETCHED, FAILED, DEAD, DISALLOWED)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = sources.frontier?.();
      if (s) for (const [state, n] of Object.entries(s.byState)) this.set({ state }, n ?? 0);
    },
  }),
  frontierHosts: new Gauge({ name: 'crawl_frontier_hosts', help: 'Hosts known to this frontier instance', registers: [registry] }),
  handoffEvents: new Counter({
    name: 'crawl_handoff_events_total',
    help: 'Events produced to crawl.handoff.v3, by change',
    labelNames: ['change'] as const,
    registers: [registry],
  }),
  // Counted by the WARC writer; copied in at scrape time from its running totals.
  warcBytes: new Counter({ name: 'crawl_warc_bytes_total', help: 'Compressed WARC bytes stored', registers: [registry], collect() { catchUp(this, sources.warc?.().bytes); } }),
  warcFiles: new Counter({ name: 'crawl_warc_files_total', help: 'WARC files stored', registers: [registry], collect() { catchUp(this, sources.warc?.().files); } }),
  // --- URL-seen Bloom filter (issue #4).
  bloomFillRatio: new Gauge({
    name: 'crawl_bloom_fill_ratio',
    help: 'URLs in the current Bloom generation over its designed capacity n (a warning is logged at 0.8)',
    registers: [registry],
  }),
  bloomEstimatedFpRate: new Gauge({
    name: 'crawl_bloom_estimated_false_positive_rate',
    help: 'Estimated false-positive rate of the current Bloom generation: (1 - e^(-k*count/m))^k',
    registers: [registry],
  }),
  bloomDegradedLinks: new Counter({
    name: 'crawl_bloom_degraded_links_total',
    help: 'Links answered "not seen" without asking the filter because Redis was unreachable',
    registers: [registry],
  }),
  // --- Operating the crawl (issue #7). Sources that live elsewhere (frontier state, WARC
  // writer, unit prices) are read at scrape time through setMetricSources, so the hot paths
  // only increment counters.
  pagesFetched,
  httpResponses: new Counter({
    name: 'crawl_http_responses_total',
    help: 'Final responses of page fetches, by HTTP status code',
    labelNames: ['code'] as const,
    registers: [registry],
  }),
  robotsOutcomes: new Counter({
    name: 'crawl_robots_outcomes_total',
    help: 'robots.txt decisions on leased fetches: allowed, disallowed, unavailable',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  politenessDelaySeconds: new Histogram({
    name: 'crawl_politeness_delay_seconds',
    help: 'Gap a host must wait after a response: max(min delay, Crawl-delay, factor x response time, Retry-After)',
    buckets: [0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [registry],
  }),
  backoffs: new Counter({
    name: 'crawl_backoffs_total',
    help: 'Host back-offs: retry_after (429/503 with Retry-After), server_error (5xx), failure (network), robots_unavailable',
    labelNames: ['kind'] as const,
    registers: [registry],
  }),
  hostsInRotation: new Gauge({
    name: 'crawl_hosts_in_rotation',
    help: 'Hosts with URLs queued or in flight (frontier processes: own partitions; crawl serve: whole crawl)',
    registers: [registry],
    collect() {
      const s = sources.frontier?.();
      if (s) this.set(s.hostsInRotation);
    },
  }),
  frontierOldestDueAgeSeconds: new Gauge({
    name: 'crawl_frontier_oldest_due_age_seconds',
    help: 'How long the oldest URL that is due has been waiting (0 when none is due)',
    registers: [registry],
    collect() {
      const s = sources.frontier?.();
      if (s && s.oldestDueAgeMs !== null) this.set(s.oldestDueAgeMs / 1000);
    },
  }),
  consumerLag: new Gauge({
    name: 'crawl_consumer_lag_messages',
    help: 'Records not yet committed by a processor group, by group and topic (log end minus committed offset)',
    labelNames: ['group', 'topic'] as const,
    registers: [registry],
  }),
  parseQueueBytes: new Gauge({
    name: 'crawl_parse_worker_queue_bytes',
    help: 'Bytes of pages handed to the parse workers and not yet analysed (bounded by ANALYZER_MAX_BYTES)',
    registers: [registry],
    collect() {
      const s = sources.parseAnalyzer?.();
      if (s) this.set(s.bytes);
    },
  }),
  parseQueueWaiting: new Gauge({
    name: 'crawl_parse_worker_waiting_pages',
    help: 'Pages waiting for room in the parse workers\' queue',
    registers: [registry],
    collect() {
      const s = sources.parseAnalyzer?.();
      if (s) this.set(s.waiting);
    },
  }),
  // --- Priority classes, the fetch budget and feeds (issue #39; processors/frontier-budget.ts).
  // Read from the frontier's own counts at scrape time: frontier processes and `crawl run`.
  frontierLeasesByClass: new Counter({
    name: 'crawl_frontier_leases_total',
    help: 'Fetches the frontier leased, by priority class (1 high, 2, 3 low)',
    labelNames: ['priority_class'] as const,
    registers: [registry],
    collect() {
      for (const c of sources.classes?.() ?? []) catchUp(this, c.leased, { priority_class: String(c.priority_class) });
    },
  }),
  pagesFetchedByClass: new Counter({
    name: 'crawl_pages_fetched_by_class_total',
    help: 'Pages fetched (a final answer with an HTTP status) by priority class, as the frontier heard of them',
    labelNames: ['priority_class'] as const,
    registers: [registry],
    collect() {
      for (const c of sources.classes?.() ?? []) catchUp(this, c.fetched, { priority_class: String(c.priority_class) });
    },
  }),
  budgetLeft: new Gauge({
    name: 'crawl_budget_left',
    help: 'Fetches a priority class may start now under the budget (its bucket of tokens; absent without a budget)',
    labelNames: ['priority_class'] as const,
    registers: [registry],
    collect() {
      for (const c of sources.classes?.() ?? []) if (c.left !== null) this.set({ priority_class: String(c.priority_class) }, c.left);
    },
  }),
  budgetPagesPerDay: new Gauge({
    name: 'crawl_budget_pages_per_day',
    help: "This frontier's part of the budget for a priority class, pages a day (absent without a budget)",
    labelNames: ['priority_class'] as const,
    registers: [registry],
    collect() {
      for (const c of sources.classes?.() ?? []) if (c.pages_per_day !== null) this.set({ priority_class: String(c.priority_class) }, c.pages_per_day);
    },
  }),
  budgetWaitingHosts: new Gauge({
    name: 'crawl_budget_waiting_hosts',
    help: 'Hosts whose next URLs wait for their priority class\'s budget',
    labelNames: ['priority_class'] as const,
    registers: [registry],
    collect() {
      for (const c of sources.classes?.() ?? []) this.set({ priority_class: String(c.priority_class) }, c.waiting_hosts);
    },
  }),
  feeds: new Gauge({
    name: 'crawl_feeds',
    help: 'Feeds (RSS, Atom, news sitemaps) this frontier polls at their own interval',
    registers: [registry],
    collect() {
      const n = sources.feeds?.();
      if (n !== undefined) this.set(n);
    },
  }),
  costPerMillionPages: new Gauge({
    name: 'crawl_estimated_cost_per_million_pages_usd',
    help: 'Estimated cost of a million pages from this process: (process-hours x price + stored GB-months x price) / pages',
    registers: [registry],
    async collect() {
      const prices = sources.prices;
      if (!prices) return;
      const pages = (await pagesFetched.get()).values.reduce((n, v) => n + v.value, 0);
      const bytes = sources.warc?.().bytes ?? 0;
      const cost = estimateCostPerMillionPages({ pages, uptimeSeconds: process.uptime(), warcBytes: bytes, ...prices });
      if (cost !== null) this.set(cost);
    },
  }),
};

/** Registry versions applied, by stage (runtime/registry-report.ts); read at scrape time. */
const registryVersions = new Map<string, () => number>();

/** Export the opt-out registry version a stage (or crawl serve's view) has applied. */
export function trackRegistryVersion(stage: string, version: () => number): void {
  registryVersions.set(stage, version);
}

export const optoutMetrics = {
  versionApplied: new Gauge({
    name: 'crawl_optout_registry_version_applied',
    help: 'The opt-out registry version this process has applied, by stage (crawl serve: serve)',
    labelNames: ['stage'] as const,
    registers: [registry],
    collect() {
      for (const [stage, v] of registryVersions) this.set({ stage }, v());
    },
  }),
  // crawl serve only: from every process's crawl.optout-applied reports (api/registry-lag.ts).
  lagSeconds: new Gauge({
    name: 'crawl_optout_registry_lag_seconds',
    help: 'How long a reporting process has been behind the opt-out registry (0: up to date), by stage and instance (machine:pid)',
    labelNames: ['stage', 'instance'] as const,
    registers: [registry],
    collect() {
      const lag = sources.registryLag?.();
      if (!lag) return;
      this.reset();
      for (const p of lag.processes) if (!p.silent) this.set({ stage: p.stage, instance: p.instance }, p.behind_s);
    },
  }),
  lagAlarm: new Gauge({
    name: 'crawl_optout_registry_lag_alarm',
    help: '1 while some process is more than CRAWL_OPTOUT_LAG_ALARM_MS behind the opt-out registry, else 0',
    registers: [registry],
    collect() {
      const lag = sources.registryLag?.();
      if (lag) this.set(lag.alarm ? 1 : 0);
    },
  }),
};

export interface MetricSources {
  /** The frontier's live numbers (frontier processes, the embedded run, crawl serve's URL view). */
  frontier?: () => { hostsInRotation: number; oldestDueAgeMs: number | null; byState: Partial<Record<string, number>> };
  warc?: () => { bytes: number; files: number };
  /** The parse workers' queue (processes that parse on worker threads). */
  parseAnalyzer?: () => { bytes: number; waiting: number };
  prices?: { processHourUsd: number; storedGbMonthUsd: number };
  /** The frontier's counts by priority class (frontier processes, `crawl run`). */
  classes?: () => ReadonlyArray<{ priority_class: number; leased: number; fetched: number; left: number | null; pages_per_day: number | null; waiting_hosts: number }>;
  /** Feeds the frontier polls. */
  feeds?: () => number;
  /** crawl serve: every process's lag behind the opt-out registry (api/registry-lag.ts). */
  registryLag?: () => { alarm: boolean; processes: Array<{ stage: string; instance: string; behind_s: number; silent: boolean }> };
}

const sources: MetricSources = {};

/** Move a counter up to a running total kept elsewhere (counters only go up; totals only grow). */
const counted = new WeakMap<Counter, Map<string, number>>();
function catchUp<L extends string>(counter: Counter<L>, total: number | undefined, labels?: Partial<Record<L, string>>): void {
  let byLabels = counted.get(counter as Counter);
  if (!byLabels) counted.set(counter as Counter, (byLabels = new Map()));
  const key = labels ? JSON.stringify(labels) : '';
  const current = byLabels.get(key) ?? 0;
  if (total === undefined || total <= current) return;
  if (labels) counter.inc(labels, total - current);
  else counter.inc(total - current);
  byLabels.set(key, total);
}

/** Tell the registry where to read numbers kept by other modules (called once by the wiring). */
export function setMetricSources(s: MetricSources): void {
  Object.assign(sources, s);
}

/**
 * Cost of a million pages: compute (process-hours at a unit price) plus one month of storing
 * what was written, divided by pages. Null before the first page (no rate to divide by).
 */
export function estimateCostPerMillionPages(o: { pages: number; uptimeSeconds: number; warcBytes: number; processHourUsd: number; storedGbMonthUsd: number }): number | null {
  if (o.pages <= 0) return null;
  const compute = (o.uptimeSeconds / 3600) * o.processHourUsd;
  const storage = (o.warcBytes / 1e9) * o.storedGbMonthUsd;
  return ((compute + storage) / o.pages) * 1e6;
}

/**
 * Counts one final fetch status (what the fetch stage emits to crawl.fetch-status). The
 * politeness delay mirrors the frontier's formula so the histogram shows what hosts wait.
 */
export function recordFetchStatus(
  s: Pick<FetchStatusMsg, 'stored' | 'outcome' | 'http_status' | 'response_ms' | 'crawl_delay_ms' | 'retry_after_ms'>,
  p: { minHostDelayMs: number; responseTimeFactor: number },
): void {
  if (!s.stored) return; // the early "host free" status of the same fetch; count the final one only
  if (s.http_status !== null) {
    metrics.pagesFetched.inc();
    metrics.httpResponses.inc({ code: String(s.http_status) });
    metrics.fetchSeconds.observe(s.response_ms / 1000);
  }
  const robots = s.outcome === 'ROBOTS_DISALLOWED' ? 'disallowed' : s.outcome === 'ROBOTS_UNAVAILABLE' ? 'unavailable' : s.outcome === 'REFUSED' ? null : 'allowed';
  if (robots) metrics.robotsOutcomes.inc({ outcome: robots });
  if (s.retry_after_ms !== null && s.retry_after_ms > 0) metrics.backoffs.inc({ kind: 'retry_after' });
  else if (s.http_status !== null && s.http_status >= 500) metrics.backoffs.inc({ kind: 'server_error' });
  else if (s.outcome === 'FAILED') metrics.backoffs.inc({ kind: 'failure' });
  else if (s.outcome === 'ROBOTS_UNAVAILABLE') metrics.backoffs.inc({ kind: 'robots_unavailable' });
  const delayMs = Math.max(p.minHostDelayMs, s.crawl_delay_ms, p.responseTimeFactor * s.response_ms, s.retry_after_ms ?? 0);
  metrics.politenessDelaySeconds.observe(delayMs / 1000);
}

export function statusClass(status: number | null): string {
  return status === null ? 'none' : `${Math.floor(status / 100)}xx`;
}
