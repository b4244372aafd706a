/**
 * Feeds end to end in `crawl run` (the built CLI in a child process) against a loopback site
 * whose home page names an RSS feed (<link rel="alternate">): the feed is found, polled at its
 * interval (3 s here, CRAWL_FEED_*_POLL_MS) with conditional GETs, and an item added to it is
 * handed off within the poll interval plus 10 s. The crawl is then stopped and run again on
 * the same --out: the feed's state comes back from the journal (the first poll after the
 * restart is conditional, with the ETag from before) and a new item again arrives in time.
 * Judged from the outside: the server's own request log and the handoff .avro file.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HandoffEvent } from '../../lib/messages';
import { FixtureWeb, page } from '../fixtures/web';
import { readHandoff, runCli, waitFor, type RunningCli } from '../support/cli';

const IP = '127.39.2.1';
const POLL_MS = 3000;
const ENV = { CRAWL_FEED_POLL_MS: String(POLL_MS), CRAWL_FEED_MIN_POLL_MS: '1000', CRAWL_FEED_MAX_POLL_MS: String(POLL_MS) };

describe('crawl run: feeds', () => {
  let web: FixtureWeb;
  let out: string;
  /** The feed's items, newest first, as the site serves them now. */
  const items: string[] = ['a1'];
  /** Each request to the feed: when, and the If-None-Match it sent. */
  const feedRequests: Array<{ at: number; ifNoneMatch: string | null; status: number }> = [];
  const etag = (): string => `"${items.join('.')}"`;

  beforeAll(async () => {
    const article = (name: string): string => page(`Article ${name}`, [], `The article called ${name}, with some English words so the language is plain to see.`);
    web = await FixtureWeb.start([
      {
        ip: IP,
        pages: {
          '/': `<!doctype html><html lang="en"><head><title>News home</title><link rel="alternate" type="application/rss+xml" title="News" href="/feed.xml"></head>` +
            '<body><p>The news home page, in English words for the language check.</p><a href="/about">about</a></body></html>',
          '/about': page('About', []),
          '/feed.xml': (req, res, site) => {
            const inm = (req.headers['if-none-match'] as string | undefined) ?? null;
            const notModified = inm === etag();
            feedRequests.push({ at: Date.now(), ifNoneMatch: inm, status: notModified ? 304 : 200 });
            if (notModified) return void res.writeHead(304, { etag: etag() }).end();
            const body = '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>News</title>' +
              items.map((i) => `<item><title>${i}</title><link>${site.origin}/news/${i}</link><guid isPermaLink="false">news-${i}</guid></item>`).join('') +
              '</channel></rss>';
            res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8', etag: etag() }).end(body);
          },
          ...Object.fromEntries(['a1', 'a2', 'a3'].map((a) => [`/news/${a}`, article(a)])),
        },
      },
    ]);
    out = mkdtempSync(join(tmpdir(), 'crawl-feeds-'));
  });

  afterAll(async () => {
    await web?.stop();
  });

  const handoffFile = (): string => join(out, 'handoff', 'crawl.handoff.v3.avro');
  async function events(): Promise<HandoffEvent[]> {
    if (!existsSync(handoffFile())) return []; // a missing file fails avsc's read stream outside its promise
    try {
      return await readHandoff(handoffFile());
    } catch {
      return []; // not there yet, or a block being written
    }
  }
  const handedOff = async (path: string): Promise<boolean> => (await events()).some((e) => e.url === `${web.origin(IP)}${path}`);

  function crawl(): RunningCli {
    return runCli(['run', '--seed', `${web.origin(IP)}/`, '--out', out, '--allow-private-network', '--keep-running', '--max-secs', '90'], ENV);
  }

  /** Adds an item to the feed and returns how long until its handoff event was in the file (ms), or Infinity. */
  async function addAndTime(item: string): Promise<number> {
    items.unshift(item);
    const added = Date.now();
    const ok = await waitFor(() => handedOff(`/news/${item}`), 300, 100);
    return ok ? Date.now() - added : Infinity;
  }

  test('an item added to a feed is handed off within the poll interval plus 10 s; the feed survives a restart', async () => {
    const first = crawl();
    try {
      // Found from the home page, read once (a1 handed off), then polled with conditional GETs.
      expect(await waitFor(() => handedOff('/news/a1'), 400, 100)).toBe(true);
      expect(await waitFor(() => feedRequests.filter((r) => r.status === 304).length >= 2, 200, 100)).toBe(true);
      const ms = await addAndTime('a2');
      expect(ms).toBeLessThanOrEqual(POLL_MS + 10_000);
    } finally {
      first.child.kill('SIGINT');
    }
    const r1 = await first.done;
    expect(r1.code).toBe(0);

    // Polled at its interval, never faster than the host's 1 s gap, one request at a time.
    const polls = feedRequests.map((r) => r.at);
    for (let i = 1; i < polls.length; i++) expect(polls[i] - polls[i - 1]).toBeGreaterThanOrEqual(POLL_MS - 50);
    const reqs = web.requestsTo(web.origin(IP));
    for (let i = 1; i < reqs.length; i++) expect(reqs[i].at - reqs[i - 1].at).toBeGreaterThanOrEqual(995);
    expect(reqs.every((r) => r.concurrent === 1)).toBe(true);

    // The same --out again: the feed's state (interval, ETag, items seen) comes back from the journal.
    const before = feedRequests.length;
    const second = crawl();
    try {
      expect(await waitFor(() => feedRequests.length > before, 200, 100)).toBe(true);
      expect(feedRequests[before]).toMatchObject({ ifNoneMatch: etag(), status: 304 });
      const ms = await addAndTime('a3');
      expect(ms).toBeLessThanOrEqual(POLL_MS + 10_000);
    } finally {
      second.child.kill('SIGINT');
    }
    expect((await second.done).code).toBe(0);
    const urls = (await events()).map((e) => e.url);
    // Every page once: the feed itself is no page, and a known item is not fetched again as new.
    expect(urls.filter((u) => u.includes('/news/')).sort()).toEqual(['a1', 'a2', 'a3'].map((a) => `${web.origin(IP)}/news/${a}`));
    expect(new Set(urls).size).toBe(urls.length);
    expect(urls).not.toContain(`${web.origin(IP)}/feed.xml`);
  });
});
