/**
 * `crawl run --status-port N`: the same status page, /stats and /metrics as `crawl serve`,
 * read-only, over the embedded log. A small observer stage follows crawl.fetch-status (its own
 * consumer group) and the crawl.urls table and feeds a CrawlView; nothing in the crawl knows it is
 * there.
 */
import type { Logger } from 'pino';
import type { FetchStatusMsg, UrlStateMsg } from '../lib/messages';
import { setMetricSources } from '../lib/metrics';
import type { OutRecord, Stage } from '../runtime/stage';
import { CrawlView } from './crawl-view';
import { createApiServer, listen } from './server';

export interface EmbeddedStatus {
  /** Add to the embedded runner's stages. */
  stage: Stage;
  port: number;
  stop(): Promise<void>;
}

export function statusViewStage(view: CrawlView): Stage {
  return {
    id: 'status-view',
    inputs: ['fetchStatus'],
    outputs: [],
    // The embedded log keeps compacted topics as tables: their rows arrive as a global table.
    globalTables: ['urls'],
    onGlobal: (rec) => view.applyUrl(rec.key, rec.value as UrlStateMsg | null),
    handle: (rec) => {
      if (rec.value) view.applyStatus(rec.value as FetchStatusMsg);
      return [] as OutRecord[];
    },
  };
}

/** Listen on 127.0.0.1:port (0 = a free port) and say where on stderr. */
export async function startEmbeddedStatus(port: number, log: Logger, warcStats?: () => { bytes: number; files: number }): Promise<EmbeddedStatus> {
  const view = new CrawlView();
  const server = createApiServer({ view }, { token: null, log: log.child({ component: 'status' }), title: 'kcrawl run' });
  const bound = await listen(server, port, '127.0.0.1');
  setMetricSources({ frontier: () => view.frontierNumbers(Date.now()), warc: warcStats });
  process.stderr.write(`status page: http://127.0.0.1:${bound}/\n`);
  log.info({ port: bound }, 'status page listening');
  return {
    stage: statusViewStage(view),
    port: bound,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
