/**
 * Feeds on the control API: the feeds the frontiers poll (crawl.feeds, read) and, for the
 * operator, feeds to poll (POST /feeds: crawl.links records in priority class 1, what
 * `crawl seed --feed` writes). processors/feeds.ts and frontier-feeds.ts say how they are polled.
 */
import { normalizeUrl } from '../lib/url-normalize';
import type { OutRecord } from '../runtime/stage';
import type { CrawlView } from './crawl-view';
import { readChecked, sendJson, type Router } from './http';
import { seedRecords } from './operator-routes';
import { ApiError, parseSeeds } from './validate';

/** Most feeds one GET /feeds returns. */
export const MAX_FEEDS_PER_PAGE = 1000;

export interface FeedRouteDeps {
  view: CrawlView;
  /** POST /feeds's writer (an operator route: a read-only server answers it not_served first). */
  send: (outs: OutRecord[]) => Promise<void>;
  now: () => number;
  maxBodyBytes: number;
}

function limitOf(raw: string | null): number {
  if (raw === null) return 100;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_FEEDS_PER_PAGE) throw new ApiError(400, 'invalid_limit', `limit: expected a whole number from 1 to ${MAX_FEEDS_PER_PAGE}`);
  return n;
}

export function feedRoutes(router: Router, d: FeedRouteDeps): void {
  router
    .add('GET', '/feeds', (_req, res, m) => {
      const q = m.url.searchParams;
      const host = q.get('host')?.toLowerCase() || undefined;
      const limit = limitOf(q.get('limit'));
      const page = d.view.feeds({ host, after: q.get('after') ?? undefined, limit });
      const last = page.feeds[page.feeds.length - 1];
      sendJson(res, 200, { total: page.total, feeds: page.feeds, next_after: last && page.feeds.length === limit ? last.url : null });
    })
    .add('GET', '/feeds/{url*}', (_req, res, m) => {
      const n = normalizeUrl(m.params.url);
      if (!n.ok) throw new ApiError(400, 'invalid_url', `not a crawlable URL (${n.reason}): ${n.detail}`);
      const feed = d.view.feed(n.url);
      if (!feed) throw new ApiError(404, 'unknown_feed', `not a feed the crawl polls: ${n.url}`);
      sendJson(res, 200, feed);
    });
  router.add('POST', '/feeds', async (req, res) => {
    const urls = await readChecked(req, d.maxBodyBytes, parseSeeds);
    await d.send(seedRecords(urls, d.now(), 1));
    sendJson(res, 202, { accepted: true, feeds: urls.length, urls });
  }, { operator: true });
}
