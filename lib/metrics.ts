/**
 * Prometheus metrics (prom-client), one registry per process. Every queue and rate the crawl
 * has is declared here, once, with its unit in the name; code elsewhere only increments.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'crawl_process_' });

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
    help: 'URLs in the frontier by state (queued, leased, retrying)',
    labelNames: ['state'] as const,
    registers: [registry],
  }),
  frontierHosts: new Gauge({ name: 'crawl_frontier_hosts', help: 'Hosts known to this frontier instance', registers: [registry] }),
  handoffEvents: new Counter({
    name: 'crawl_handoff_events_total',
    help: 'Events produced to crawl.handoff.v3, by change',
    labelNames: ['change'] as const,
    registers: [registry],
  }),
  warcBytes: new Counter({ name: 'crawl_warc_bytes_total', help: 'Compressed WARC bytes stored', registers: [registry] }),
  warcFiles: new Counter({ name: 'crawl_warc_files_total', help: 'WARC files stored', registers: [registry] }),
};

export function statusClass(status: number | null): string {
  return status === null ? 'none' : `${Math.floor(status / 100)}xx`;
}
