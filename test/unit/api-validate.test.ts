/** The control API's input checks and its view of the crawl (pure: no server, no Kafka). */
import { CrawlView, urlHash } from '../../api/crawl-view';
import { frontierTable } from '../../api/url-table';
import { ApiError, parseBlock, parseCrawlRate, parseHost, parseOptOut, parseSeeds, parseSiteHost, parseWebmasterRate } from '../../api/validate';
import type { FrontierPolicy } from '../../processors/frontier-state';
import { restartedFrontier } from '../support/frontier';
import type { FetchStatusMsg, UrlStateMsg } from '../../lib/messages';
import { estimateCostPerMillionPages } from '../../lib/metrics';

const POLICY: FrontierPolicy = { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 60_000, retryBackoffMs: [5000], maxAttempts: 3 };

const code = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return `${e.status} ${e.code}`;
    throw e;
  }
  return 'ok';
};

describe('input checks', () => {
  test.each([
    ['example.com', 'ok'], ['127.0.8.1', 'ok'], ['xn--bcher-kva.example', 'ok'], ['Example.COM', 'ok'],
    ['bücher.example', '400 invalid_host'], ['example.com:80', '400 invalid_host'], ['example.com/x', '400 invalid_host'],
    ['bad host', '400 invalid_host'], ['', '400 invalid_host'],
  ])('host %j -> %s', (raw, expected) => expect(code(() => parseHost(raw))).toBe(expected));

  test('blocks need an expiry in the future, at most 366 days out', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseBlock({ duration_s: 60, reason: 'r' }, now)).toEqual({ blocked_until: now + 60_000, reason: 'r' });
    expect(parseBlock({ expires_at: '2026-01-02T00:00:00Z' }, now).blocked_until).toBe(now + 86_400_000);
    expect(parseBlock({ expires_at: now + 5 }, now).blocked_until).toBe(now + 5);
    for (const bad of [{}, { duration_s: 0 }, { duration_s: '60' }, { expires_at: 'tomorrow' }, { expires_at: '2025-12-31T00:00:00Z' }, { duration_s: 400 * 86400 }]) {
      expect(code(() => parseBlock(bad, now))).toBe('400 invalid_expiry');
    }
    expect(code(() => parseBlock([], now))).toBe('400 invalid_body');
    expect(code(() => parseBlock({ duration_s: 5, reason: 'x'.repeat(501) }, now))).toBe('400 invalid_body');
  });

  test('crawl rates and opt-outs', () => {
    expect(parseCrawlRate({ min_delay_ms: 5000 })).toEqual({ min_delay_ms: 5000, reason: null });
    for (const bad of [{ min_delay_ms: -1 }, { min_delay_ms: 1.5 }, { min_delay_ms: '5' }, {}]) expect(code(() => parseCrawlRate(bad))).toBe('400 invalid_crawl_rate');
    const legacy = { legacy: true };
    expect(parseOptOut({ purpose: 'ai_training', allowed: false }, 'a.example', legacy)).toEqual({ purposes: { ai_training: 'deny' } });
    expect(code(() => parseOptOut({ purpose: 'all', allowed: false }, 'a.example', legacy))).toBe('400 invalid_purpose');
    expect(code(() => parseOptOut({ purpose: 'crawl', allowed: 'no' }, 'a.example', legacy))).toBe('400 invalid_body');
    // The registry record's own shape; the first version's form only where legacy is allowed.
    expect(parseOptOut({ purposes: { crawl: 'deny', ai_training: 'allow' }, scope: 'registered_domain' }, 'example.co.uk')).toEqual({
      purposes: { crawl: 'deny', ai_training: 'allow' }, scope: 'registered_domain',
    });
    expect(code(() => parseOptOut({ purpose: 'crawl', allowed: false }, 'a.example'))).toBe('400 invalid_purposes');
    for (const bad of [{ purposes: {} }, { purposes: [] }, { purposes: { crawl: false } }, { purposes: { crawl: 'no' } }]) {
      expect(code(() => parseOptOut(bad, 'a.example'))).toBe('400 invalid_purposes');
    }
    expect(code(() => parseOptOut({ purposes: { everything: 'deny' } }, 'a.example'))).toBe('400 invalid_purpose');
    expect(code(() => parseOptOut({ purposes: { crawl: 'deny' }, scope: 'site' }, 'a.example'))).toBe('400 invalid_scope');
    // www.example.co.uk is a host under a registered domain, not one.
    expect(code(() => parseOptOut({ purposes: { crawl: 'deny' }, scope: 'registered_domain' }, 'www.example.co.uk'))).toBe('400 invalid_scope');
  });

  test('webmaster sites and rates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseSiteHost({ host: 'Shop.Example.com' })).toBe('shop.example.com');
    for (const bad of [{}, { host: '' }, { host: 5 }, { host: 'http://shop.example.com/' }, { host: 'a b' }]) expect(code(() => parseSiteHost(bad))).toBe('400 invalid_host');
    expect(parseWebmasterRate({ max_requests_per_second: 0.5, until: '2026-01-02T00:00:00Z' }, now, 10)).toEqual({ max_requests_per_second: 0.5, until: now + 86_400_000 });
    for (const r of [0, -1, 11, '2', Infinity, null]) {
      expect(code(() => parseWebmasterRate({ max_requests_per_second: r, until: '2026-01-02T00:00:00Z' }, now, 10))).toBe('400 invalid_crawl_rate');
    }
    for (const until of [undefined, 'tomorrow', 1767312000000, '2025-12-31T00:00:00Z', '2027-06-01T00:00:00Z']) {
      expect(code(() => parseWebmasterRate({ max_requests_per_second: 1, until }, now, 10))).toBe('400 invalid_until');
    }
  });

  test('seeds are all normalised or all refused, naming each bad one', () => {
    expect(parseSeeds({ urls: ['HTTP://Example.com:80/a#x'] })).toEqual(['http://example.com/a']);
    let err: ApiError | undefined;
    try {
      parseSeeds({ urls: ['http://ok.example/', 'nope', 42] });
    } catch (e) {
      err = e as ApiError;
    }
    expect(err?.code).toBe('invalid_url');
    expect((err?.details as { invalid: Array<{ index: number }> }).invalid.map((i) => i.index)).toEqual([1, 2]);
    expect(code(() => parseSeeds({ urls: [] }))).toBe('400 invalid_body');
    expect(code(() => parseSeeds({ urls: new Array(10_001).fill('http://a.example/') }))).toBe('400 too_many_urls');
  });
});

const row = (url: string, state: UrlStateMsg['state'], over: Partial<UrlStateMsg> = {}): UrlStateMsg => ({
  url, host: new URL(url).hostname, state, depth: 0, discovered_at: 1000, updated_at: 1000, lease_id: null, lease_expires_at: null,
  attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null, last_modified: null,
  warc_uri: null, warc_offset: null, warc_length: null, reason: null, ...over,
});
const status = (over: Partial<FetchStatusMsg>): FetchStatusMsg => ({
  url: 'http://a.example/', host: 'a.example', lease_id: 'l', stored: true, outcome: 'FETCHED', http_status: 200, reason: null,
  started_at: 0, finished_at: 0, response_ms: 10, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null,
  last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, ...over,
});

describe('CrawlView', () => {
  test('looks URLs up in the frontier\'s store by URL, and knows hosts from rows, statuses and policy', async () => {
    const fs = await restartedFrontier(POLICY, () => 'L', [row('http://a.example/', 'FETCHED')], 0);
    const v = new CrawlView({ urls: frontierTable(fs) });
    expect((await v.url('http://a.example/', 'a.example'))?.state).toBe('FETCHED');
    // The frontier's store keeps no SHA-256 index (`crawl serve`'s copy does: test/integration/api.test.ts).
    expect(await v.url(urlHash('http://a.example/'), null)).toBeUndefined();
    expect(await v.hostKnown('a.example')).toBe(true);
    expect(await v.hostKnown('b.example')).toBe(false);
    v.applyPolicy('b.example|block', { host: 'b.example', field: 'block', updated_at: 0, blocked_until: 10_000, reason: 'r', min_delay_ms: null });
    expect(await v.hostKnown('b.example')).toBe(true);
    expect(await v.url('http://a.example/nope', 'a.example')).toBeUndefined();
    expect(await new CrawlView().url('http://a.example/', 'a.example')).toBeUndefined();
  });

  test('counts final statuses only, per second, with incidents and errors', () => {
    const v = new CrawlView();
    const t = 1_000_000_000;
    v.applyStatus(status({ finished_at: t, stored: false }));
    v.applyStatus(status({ finished_at: t }));
    v.applyStatus(status({ finished_at: t + 1000, http_status: 429, retry_after_ms: 30_000 }));
    v.applyStatus(status({ finished_at: t + 1500, outcome: 'FAILED', http_status: null, reason: 'CONNECT_TIMEOUT' }));
    const s = v.snapshot(t + 2500);
    expect(s.pages_total).toBe(2);
    expect(s.http_status).toEqual({ 200: 1, 429: 1 });
    expect(s.timeline.slice(-3).map((p) => p.pages)).toEqual([1, 1, 0]);
    expect(s.pages_per_second).toBeCloseTo(0.2);
    expect(s.politeness).toEqual([expect.objectContaining({ kind: 'HTTP 429', detail: 'Retry-After 30 s' })]);
    expect(s.errors).toEqual([expect.objectContaining({ kind: 'FAILED', detail: 'CONNECT_TIMEOUT' })]);
    expect(s.top_hosts).toEqual([{ host: 'a.example', fetched: 2, errors: 1, incidents: 1 }]);
  });

  test('frontier numbers: URLs by state, hosts with work and how long the most overdue host has waited', async () => {
    const fs = await restartedFrontier(POLICY, () => 'L', [
      row('http://a.example/1', 'QUEUED'), row('http://a.example/2', 'QUEUED'),
      row('http://b.example/', 'LEASED', { lease_id: 'x', lease_expires_at: 99_000 }), row('http://c.example/', 'FETCHED'),
    ], 1000);
    const v = new CrawlView({ urls: frontierTable(fs) });
    // Restored hosts wait a full delay (1,200 ms after the restore at 1,000).
    expect(v.frontierNumbers(5000)).toEqual({ urls: 4, hostsInRotation: 2, oldestDueAgeMs: 2800, byState: { QUEUED: 2, LEASED: 1, FETCHED: 1 } });
    expect(v.frontierNumbers(1500).oldestDueAgeMs).toBeNull();
    expect(new CrawlView().frontierNumbers(0)).toEqual({ urls: 0, byState: {}, hostsInRotation: 0, oldestDueAgeMs: null });
  });
});

test('cost per million pages from unit prices', () => {
  expect(estimateCostPerMillionPages({ pages: 0, uptimeSeconds: 3600, warcBytes: 0, processHourUsd: 1, storedGbMonthUsd: 1 })).toBeNull();
  // One process-hour at $0.08 and 1 GB stored at $0.023 for 10,000 pages: $10.30 per million.
  expect(estimateCostPerMillionPages({ pages: 10_000, uptimeSeconds: 3600, warcBytes: 1e9, processHourUsd: 0.08, storedGbMonthUsd: 0.023 })).toBeCloseTo(10.3);
});
