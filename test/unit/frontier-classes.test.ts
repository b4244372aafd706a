/**
 * The frontier with priority classes, the fetch budget and feeds, on real stores (test/support/
 * frontier.ts), with a simulated clock and fetchers that answer at once.
 */
import type { CandidateMsg, FeedStateMsg, FetchRequestMsg, FetchStatusMsg } from '../../lib/messages';
import { FEED_MAX_FAILURES, nextPollInterval } from '../../processors/frontier-feeds';
import type { FrontierState, FrontierPolicy, FrontierTuning } from '../../processors/frontier-state';
import { restartedFrontier, testFrontier } from '../support/frontier';

// Minutes of simulated crawl through LevelDB: seconds each on a busy machine.
jest.setTimeout(180_000);

const BASE: FrontierPolicy = { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 600_000, retryBackoffMs: [5_000], maxAttempts: 5 };
const MIN = 60_000;

function ids(): () => string {
  let n = 0;
  return () => `L${++n}`;
}

function make(tuning: Partial<FrontierTuning> = {}): Promise<FrontierState> {
  return testFrontier({ ...BASE, domainMinGapMs: 0, ...tuning }, ids());
}

function cand(url: string, fields: Partial<CandidateMsg> = {}): CandidateMsg {
  return { url, host: new URL(url).hostname, depth: 0, discovered_at: 0, source_url: null, ...fields };
}

function status(f: FetchRequestMsg, fields: Partial<FetchStatusMsg> & { finished_at: number }): FetchStatusMsg {
  return {
    url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null,
    started_at: fields.finished_at, response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: 'x', etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, ...fields,
  };
}

/** Candidates of each class: class 1 by a given class (a feed item), 2 by importance, 3 by depth. */
const OF_CLASS: Record<1 | 2 | 3, Partial<CandidateMsg>> = {
  1: { priority_class: 1, depth: 1 },
  2: { priority: 0.3, depth: 1 },
  3: { priority: 0.3, depth: 3 },
};

/**
 * Runs `secs` of crawl in 50 ms ticks, answering every fetch at once. `arrive(t)` gives the
 * candidates found at time t. Returns leases per class counted from `countFrom` on.
 */
async function run(fs: FrontierState, secs: number, arrive: (t: number) => CandidateMsg[], countFrom = 0): Promise<[number, number, number]> {
  const counts: [number, number, number] = [0, 0, 0];
  for (let t = 0; t <= secs * 1000; t += 50) {
    const cands = arrive(t);
    if (cands.length) await fs.onCandidates(cands, t);
    const answers: FetchStatusMsg[] = [];
    for (const f of (await fs.tick(t)).fetches) {
      if (t >= countFrom) counts[(f.priority_class ?? 0) - 1]++;
      answers.push(status(f, { finished_at: t }));
    }
    if (answers.length) await fs.onStatuses(answers, t);
  }
  return counts;
}

/** `n` URLs of a class spread over 100 hosts of its own. */
function backlog(cls: 1 | 2 | 3, n: number): CandidateMsg[] {
  return Array.from({ length: n }, (_, i) => cand(`http://c${cls}-h${i % 100}.test/${i}`, OF_CLASS[cls]));
}

/** One new URL of the class every `everyMs`, on rotating hosts. */
function trickle(cls: 1 | 2 | 3, everyMs: number, t: number): CandidateMsg[] {
  return t % everyMs === 0 ? [cand(`http://t${cls}-h${(t / everyMs) % 50}.test/${t}`, OF_CLASS[cls])] : [];
}

describe('FrontierState: the budget by class', () => {
  it('with a budget below demand, every class gets its share (60/30/10), counted in classStats', async () => {
    // 2 pages/s against 300 hosts that could take 300/s.
    const fs = await make({ budgetPagesPerDay: 2 * 86_400, budgetBurstSecs: 1 });
    const all = [...backlog(1, 3000), ...backlog(2, 3000), ...backlog(3, 3000)];
    const counts = await run(fs, 300, (t) => (t === 0 ? all : []), 2000);
    expect(counts[0]).toBeGreaterThanOrEqual(353);
    expect(counts[0]).toBeLessThanOrEqual(360);
    expect(Math.abs(counts[1] - 178)).toBeLessThanOrEqual(3);
    expect(Math.abs(counts[2] - 59)).toBeLessThanOrEqual(2);
    const stats = fs.classStats(300_000);
    // Leases and pages fetched per class include the full buckets of the start (2 s of each class's rate, 2 at least).
    expect(stats.map((s) => s.leased)).toEqual(stats.map((s) => s.fetched));
    expect(stats.map((s) => s.pages_per_day)).toEqual([103_680, 51_840, 17_280]);
    expect(stats.every((s) => s.waiting_hosts > 0)).toBe(true);
  });

  it('without a budget the same frontier fetches as fast as politeness allows, classes in order within a host', async () => {
    const fs = await make();
    const counts = await run(fs, 20, (t) => (t === 0 ? [...backlog(1, 300), ...backlog(2, 300), ...backlog(3, 300)] : []));
    expect(counts).toEqual([300, 300, 300]);
  });

  it('a cut budget is taken from class 3 first: classes 1 and 2 keep what they fetched', async () => {
    const arrive = (t: number): CandidateMsg[] => [...(t === 0 ? backlog(3, 5000) : []), ...trickle(1, 4000, t), ...trickle(2, 10_000, t)];
    const full = await run(await make({ budgetPagesPerDay: 86_400, budgetBurstSecs: 2 }), 600, arrive, 5000);
    const cut = await run(await make({ budgetPagesPerDay: 43_200, budgetBurstSecs: 2 }), 600, arrive, 5000);
    expect(full[0]).toBeGreaterThanOrEqual(148);
    expect(cut[0]).toBe(full[0]);
    expect(Math.abs(cut[1] - full[1])).toBeLessThanOrEqual(1);
    expect(Math.abs(full[1] - 60)).toBeLessThanOrEqual(2);
    // Class 3 had what classes 1 and 2 left of 1/s (about 390 in 595 s); of 0.5/s about 90 are left.
    expect(Math.abs(full[2] - 385)).toBeLessThanOrEqual(8);
    expect(Math.abs(cut[2] - 88)).toBeLessThanOrEqual(8);
  });

  it('a host whose only URLs are out of budget waits, and is released once its class has budget again', async () => {
    const fs = await make({ budgetPagesPerDay: 86_400, budgetBurstSecs: 1, budgetLendUnused: false });
    // Class 3 earns 0.1 a second, 2 tokens at most.
    for (let i = 0; i < 4; i++) await fs.onCandidate(cand(`http://h${i}.test/x`, OF_CLASS[3]), 0);
    expect((await fs.tick(0)).fetches).toHaveLength(2);
    expect((await fs.tick(5000)).fetches).toHaveLength(0);
    expect(fs.classStats(5000)[2].waiting_hosts).toBe(2);
    expect(fs.idle(5000)).toBe(false); // waiting for budget is still work
    expect((await fs.tick(10_000)).fetches).toHaveLength(1);
    expect((await fs.tick(20_000)).fetches).toHaveLength(1);
  });

  it('a host whose first class has no budget releases its first URL of a later class that has (read from its queue on disk)', async () => {
    // No lending: class 1 has a share of 0 and never any budget; class 2 has all of it.
    const fs = await make({ budgetPagesPerDay: 86_400, budgetBurstSecs: 1, budgetLendUnused: false, budgetClassShares: [0, 1, 0] });
    await fs.onCandidates([cand('http://a.test/item', { priority_class: 1, depth: 1 }), cand('http://a.test/page', OF_CLASS[2]), cand('http://a.test/tail', OF_CLASS[3])], 0);
    const first = (await fs.tick(0)).fetches;
    expect(first.map((f) => [f.url, f.priority_class])).toEqual([['http://a.test/page', 2]]);
    await fs.onStatus(status(first[0], { finished_at: 0 }), 0);
    // The class-1 URL stays queued, the class-3 one has no budget either: the host waits.
    expect((await fs.tick(60_000)).fetches).toEqual([]);
    expect((await fs.row('http://a.test/item'))!.state).toBe('QUEUED');
    expect(fs.classStats(60_000).map((c) => c.waiting_hosts)).toEqual([1, 0, 1]);
  });
});

describe('FrontierState: feeds', () => {
  const FEED = 'http://news.test/feed.xml';
  const P: Partial<FrontierTuning> = { feedPollMs: 10 * MIN, feedMinPollMs: MIN, feedMaxPollMs: 6 * 60 * MIN, feedMaxItems: 50, feedMaxPerHost: 2 };

  /** Lease the feed at t (it must be due) and answer it. */
  async function poll(fs: FrontierState, t: number, answer: Partial<FetchStatusMsg>): Promise<{ fetch: FetchRequestMsg; feeds: Array<{ url: string; value: FeedStateMsg | null }>; due: number | null }> {
    const fetch = (await fs.tick(t)).fetches.find((f) => f.url === FEED);
    if (!fetch) throw new Error(`feed not leased at ${t}`);
    const e = await fs.onStatus(status(fetch, { finished_at: t, ...answer }), t);
    return { fetch, feeds: e.feeds ?? [], due: e.rows.find((r) => r.url === FEED)?.next_due_at ?? null };
  }

  it('a feed is polled at its own interval with conditional GETs: shorter after new items, longer after none or a 304', async () => {
    const fs = await make(P);
    await fs.onCandidate(cand(FEED, { priority_class: 1 }), 0);
    const first = await poll(fs, 0, { feed_kind: 'rss', feed_items: ['a', 'b'], etag: '"v1"', sha256: 's1' });
    expect(first.fetch.priority_class).toBe(1);
    expect(first.due).toBe(10 * MIN);
    expect(first.feeds[0].value).toMatchObject({ kind: 'rss', interval_ms: 10 * MIN, items_seen: ['a', 'b'], new_items: 2, polls: 1, etag: '"v1"' });
    expect((await fs.tick(10 * MIN - 1)).fetches).toEqual([]);
    // Two new items: half the interval.
    const second = await poll(fs, 10 * MIN, { feed_kind: 'rss', feed_items: ['d', 'c', 'a', 'b'], etag: '"v2"', sha256: 's2' });
    expect(second.fetch).toMatchObject({ etag: '"v1"', prev_sha256: 's1' });
    expect(second.due).toBe(15 * MIN);
    expect(second.feeds[0].value).toMatchObject({ interval_ms: 5 * MIN, new_items: 2, items_total: 4, polls: 2 });
    // Not modified, without an ETag in the answer: the validators stay, the interval grows.
    const third = await poll(fs, 15 * MIN, { http_status: 304, etag: null, sha256: 's2' });
    expect(third.fetch.etag).toBe('"v2"');
    expect(third.due).toBe(15 * MIN + 7.5 * MIN);
    expect(third.feeds[0].value).toMatchObject({ interval_ms: 7.5 * MIN, last_status: 304, etag: '"v2"', new_items: 0, polls: 3 });
    expect((await fs.row(FEED))!.etag).toBe('"v2"');
  });

  it('the interval stays within [min, max]', () => {
    const p = { feedPollMs: 10 * MIN, feedMinPollMs: MIN, feedMaxPollMs: 60 * MIN, feedMaxItems: 50, feedMaxPerHost: 2 };
    expect(nextPollInterval(null, 20, p)).toBe(10 * MIN);
    expect(nextPollInterval(10 * MIN, 20, p)).toBe(2.5 * MIN);
    expect(nextPollInterval(2 * MIN, 20, p)).toBe(MIN);
    expect(nextPollInterval(10 * MIN, 1, p)).toBe(10 * MIN);
    expect(nextPollInterval(50 * MIN, 0, p)).toBe(60 * MIN);
  });

  it('a due poll goes before its host\'s other URLs of its class', async () => {
    const fs = await make(P);
    await fs.onCandidate(cand(FEED), 0);
    await poll(fs, 0, { feed_kind: 'atom', feed_items: ['a'] });
    for (let i = 0; i < 5; i++) await fs.onCandidate(cand(`http://news.test/item${i}`, { priority_class: 1, depth: 1 }), 1);
    let t = 1000;
    for (let i = 0; i < 2; i++, t += 1000) for (const f of (await fs.tick(t)).fetches) await fs.onStatus(status(f, { finished_at: t }), t);
    expect((await fs.tick(10 * MIN)).fetches.map((f) => f.url)).toEqual([FEED]);
  });

  it('stops polling a feed that is no feed any more or is gone (4xx); an outage is retried, never made a dead URL; at most feedMaxPerHost feeds a host', async () => {
    const fs = await make(P);
    const urls = ['http://news.test/a.xml', 'http://news.test/b.xml', 'http://news.test/c.xml', 'http://other.test/d.xml'];
    await fs.onCandidates(urls.map((u) => cand(u, { priority_class: 1 })), 0);
    const written: Record<string, FeedStateMsg | null> = {};
    let t = 0;
    /** `secs` seconds from now, answering each lease with `answer(url)` (null: leave it leased). */
    const during = async (secs: number, answer: (url: string) => Partial<FetchStatusMsg> | null): Promise<void> => {
      for (const end = t + secs * 1000; t < end; t += 1000) {
        for (const f of (await fs.tick(t)).fetches) {
          const a = answer(f.url);
          if (!a) continue;
          for (const w of (await fs.onStatus(status(f, { finished_at: t, ...a }), t)).feeds ?? []) written[w.url] = w.value;
        }
      }
    };
    await during(10, () => ({ feed_kind: 'rss', feed_items: ['x'] }));
    expect(Object.keys(written).sort()).toEqual([urls[0], urls[1], urls[3]]);
    expect((await fs.row(urls[2]))!.next_due_at).toBeGreaterThan(20 * 3600_000); // the third of its host: a page's recrawl
    // a.xml is a page now; b.xml answers 503s (an outage); d.xml answers 404s.
    const answer = (u: string): Partial<FetchStatusMsg> =>
      u === urls[0] ? { http_status: 200, feed_kind: null } : u === urls[1] ? { outcome: 'FAILED', http_status: 503, reason: 'http-503' } : { http_status: 404 };
    // (Three 503s in a row also pause the host for 30 minutes: the 4th and 5th tries come after.)
    await during(3 * 3600, answer);
    expect(written[urls[0]]).toBeNull();
    expect(written[urls[3]]).toBeNull(); // three 404s in a row
    expect(fs.feeds.get(urls[1])!.failures).toBeGreaterThanOrEqual(BASE.maxAttempts);
    expect(await fs.row(urls[1])).toMatchObject({ state: 'FAILED', attempts: 0 });
    expect((await fs.row(urls[1]))!.next_due_at! - fs.feeds.get(urls[1])!.last_polled_at).toBe(6 * 60 * MIN); // feedMaxPollMs after the last try
    // Seven days without a good answer: given up.
    t = 8 * 24 * 60 * MIN;
    await during(600, answer);
    expect(written[urls[1]]).toBeNull();
    expect(fs.feeds.size).toBe(0);
    expect(FEED_MAX_FAILURES).toBe(3);
  });

  it('is rebuilt from its crawl.feeds rows and forgets feeds of partitions it no longer owns', async () => {
    const first = await make(P);
    const row: FeedStateMsg = {
      url: FEED, host: 'news.test', kind: 'rss', interval_ms: 3 * MIN, added_at: 0, last_polled_at: 0, last_ok_at: 0, last_status: 200, etag: null,
      last_modified: null, items_seen: ['a'], new_items: 1, polls: 1, items_total: 1, failures: 0, updated_at: 0,
    };
    const queued = (await first.onCandidate(cand(FEED), 0)).rows[0];
    // A restarted frontier: its URL table from crawl.urls, its feeds from crawl.feeds.
    const fs = await restartedFrontier({ ...BASE, domainMinGapMs: 0, ...P }, ids(), [{ ...queued, state: 'FETCHED', fetched_at: 0, next_due_at: 3 * MIN, sha256: 's' }], 0);
    fs.restoreFeed(FEED, row);
    const p = await poll(fs, 3 * MIN, { feed_kind: 'rss', feed_items: ['a'] });
    expect(p.feeds[0].value).toMatchObject({ interval_ms: 4.5 * MIN, new_items: 0, polls: 2 });
    // Its partition moves away: its feeds go with it.
    const gone = await fs.detach(() => false);
    for (const s of gone.values()) await s.close();
    expect(fs.feeds.size).toBe(0);
    fs.restoreFeed(FEED, row);
    fs.restoreFeed(FEED, null);
    expect(fs.feeds.size).toBe(0);
  });
});
