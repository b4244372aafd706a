/**
 * The per-process Prometheus listener (`crawl process` with CRAWL_METRICS_PORT set): GET
 * /metrics only. Bound to CRAWL_METRICS_HOST (default 0.0.0.0 so a scraper on the cluster
 * network reaches it; metrics carry no secrets).
 */
import { createServer, type Server } from 'node:http';
import { registry, setMetricSources } from '../lib/metrics';
import { listen } from './server';

export async function startMetricsServer(port: number, host = '0.0.0.0'): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(err)}\n`),
    );
  });
  return { server, port: await listen(server, port, host) };
}

/**
 * What `crawl process` calls at start: point the registry at this process's WARC writer and
 * unit prices, and listen on CRAWL_METRICS_PORT when set (0 = no listener). Returns a stopper.
 */
export async function startProcessMetrics(
  c: { metricsPort: number; costProcessHourUsd: number; costStoredGbMonthUsd: number },
  warcStats: () => { bytes: number; files: number },
  log: { info(o: object, msg: string): void },
): Promise<() => Promise<void>> {
  setMetricSources({ warc: warcStats, prices: { processHourUsd: c.costProcessHourUsd, storedGbMonthUsd: c.costStoredGbMonthUsd } });
  if (c.metricsPort <= 0) return async () => undefined;
  const { server, port } = await startMetricsServer(c.metricsPort, process.env.CRAWL_METRICS_HOST || undefined);
  log.info({ port }, 'metrics listening');
  return () => new Promise<void>((r) => server.close(() => r()));
}
