/**
 * The feeds a frontier polls, pure: which URLs of its partitions are feeds (RSS, Atom, news
 * sitemaps), their poll interval and the items they last held. No I/O and no clock; the
 * frontier (frontier-state.ts) hands it each final fetch status and emits the crawl.feeds rows
 * it returns, and rebuilds it from crawl.feeds after a restart.
 *
 * A URL becomes a feed when a fetch of it answers with one (FetchStatus.feed_kind), however it
 * was found, up to feedMaxPerHost feeds a host (the rest are recrawled like pages: a site that
 * links a comments feed from every post must not turn into thousands of polls). Each poll is a
 * lease like any other, so politeness, robots.txt and the budget (class 1) apply, and a
 * conditional GET: the URL-table row keeps the ETag and Last-Modified.
 *
 * The interval: feedPollMs after the first read; then, aiming at about one new item a poll,
 * divided by the number of new items a poll found (at most by 4) and times 1.5 after a poll that
 * found none (a 304 included), always within [feedMinPollMs, feedMaxPollMs].
 *
 * A feed stops being polled as one (a tombstone in crawl.feeds; the URL is then recrawled like a
 * page) when a 2xx answer is no feed, on a redirect (its target is a URL of its own), when
 * robots.txt disallows it or the fetcher refuses it, after FEED_MAX_FAILURES 4xx answers in a
 * row, or after FEED_GIVE_UP_MS without a good answer. An outage is retried with the frontier's
 * back-off, and a feed is never given up as a dead URL: after maxAttempts it is asked again at
 * feedMaxPollMs (frontier-state.ts fail()).
 */
import type { CrawlConfig } from '../lib/config';
import type { FeedStateMsg, FetchStatusMsg } from '../lib/messages';

export type FeedPolicy = Pick<CrawlConfig, 'feedPollMs' | 'feedMinPollMs' | 'feedMaxPollMs' | 'feedMaxItems' | 'feedMaxPerHost'>;

export const FEED_MAX_FAILURES = 3;
export const FEED_GIVE_UP_MS = 7 * 24 * 3600_000;
const QUIET_FACTOR = 1.5;
const MAX_SPEEDUP = 4;

/** The next poll interval after a poll that found `newItems` new items (prev null: the first read). */
export function nextPollInterval(prevMs: number | null, newItems: number, p: FeedPolicy): number {
  let next: number;
  if (prevMs === null) next = p.feedPollMs;
  else if (newItems <= 0) next = prevMs * QUIET_FACTOR;
  else next = prevMs / Math.min(MAX_SPEEDUP, newItems);
  return Math.round(Math.min(p.feedMaxPollMs, Math.max(p.feedMinPollMs, next)));
}

/** What a status means for the feeds: when to poll next (null: not a feed, recrawl as a page) and the row to write. */
export interface FeedPoll {
  intervalMs: number | null;
  /** A crawl.feeds row (value null: a tombstone), or null when nothing changed. */
  write: { url: string; host: string; value: FeedStateMsg | null } | null;
}

const NONE: FeedPoll = { intervalMs: null, write: null };

export class FeedTable {
  private readonly feeds = new Map<string, FeedStateMsg>();
  private readonly perHost = new Map<string, number>();

  constructor(private readonly p: FeedPolicy) {}

  get size(): number {
    return this.feeds.size;
  }

  has(url: string): boolean {
    return this.feeds.has(url);
  }

  get(url: string): FeedStateMsg | undefined {
    return this.feeds.get(url);
  }

  /** A crawl.feeds row read back after a restart (null: a tombstone). */
  restore(url: string, value: FeedStateMsg | null): void {
    if (value) this.set(value);
    else this.delete(url);
  }

  /** Forget the feeds of hosts this process no longer owns. */
  retain(owns: (host: string) => boolean): void {
    for (const f of [...this.feeds.values()]) if (!owns(f.host)) this.delete(f.url);
  }

  private set(f: FeedStateMsg): void {
    if (!this.feeds.has(f.url)) this.perHost.set(f.host, (this.perHost.get(f.host) ?? 0) + 1);
    this.feeds.set(f.url, f);
  }

  private delete(url: string): void {
    const f = this.feeds.get(url);
    if (!f) return;
    this.feeds.delete(url);
    const n = (this.perHost.get(f.host) ?? 1) - 1;
    if (n > 0) this.perHost.set(f.host, n);
    else this.perHost.delete(f.host);
  }

  private drop(url: string, host: string): FeedPoll {
    this.delete(url);
    return { intervalMs: null, write: { url, host, value: null } };
  }

  private keep(f: FeedStateMsg): FeedPoll {
    this.set(f);
    return { intervalMs: f.interval_ms, write: { url: f.url, host: f.host, value: f } };
  }

  /** A final fetch status (stored = true) of any URL of this frontier. */
  onStatus(s: FetchStatusMsg, now: number): FeedPoll {
    const known = this.feeds.get(s.url);
    if (!known && !s.feed_kind) return NONE; // most answers: a page
    const at = { last_polled_at: s.finished_at, updated_at: now, last_status: s.http_status };
    if (s.outcome === 'FETCHED' && s.feed_kind) {
      if (!known && (this.perHost.get(s.host) ?? 0) >= this.p.feedMaxPerHost) return NONE;
      const items = (s.feed_items ?? []).slice(0, this.p.feedMaxItems);
      const seen = new Set(known?.items_seen ?? []);
      const fresh = items.filter((k) => !seen.has(k)).length;
      return this.keep({
        url: s.url, host: s.host, kind: s.feed_kind, interval_ms: nextPollInterval(known?.interval_ms ?? null, fresh, this.p),
        added_at: known?.added_at ?? now, ...at, last_ok_at: s.finished_at, etag: s.etag, last_modified: s.last_modified, items_seen: items,
        new_items: fresh, polls: (known?.polls ?? 0) + 1, items_total: (known?.items_total ?? 0) + fresh, failures: 0,
      });
    }
    if (!known) return NONE;
    const status = s.http_status;
    if (s.outcome === 'FETCHED' && status === 304) {
      return this.keep({
        ...known, ...at, last_ok_at: s.finished_at, interval_ms: nextPollInterval(known.interval_ms, 0, this.p), etag: s.etag ?? known.etag,
        last_modified: s.last_modified ?? known.last_modified, new_items: 0, polls: known.polls + 1, failures: 0,
      });
    }
    // A 2xx that is no feed (now a page, JSON, a sitemap) or a redirect; robots.txt or the fetcher saying never.
    const notAFeed = status !== null && status >= 200 && status < 400 && (s.outcome === 'FETCHED' || s.outcome === 'NOT_HTML');
    const never = s.outcome === 'ROBOTS_DISALLOWED' || (s.outcome === 'REFUSED' && s.reason !== 'blocked');
    if (notAFeed || never) return this.drop(s.url, s.host);
    const failures = known.failures + 1;
    const gone = s.outcome === 'FETCHED' && failures >= FEED_MAX_FAILURES; // 4xx in a row
    if (gone || s.finished_at - known.last_ok_at > FEED_GIVE_UP_MS) return this.drop(s.url, s.host);
    return this.keep({ ...known, ...at, failures });
  }
}
