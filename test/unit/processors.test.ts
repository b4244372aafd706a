import pino from 'pino';
import { FetchError, type HttpCapture, type HttpClient, type HttpFetchOptions } from '../../connectors/types';
import * as avro from 'avsc';
import { avroReader, avroType, loadSchema, schemaBefore } from '../../lib/avro';
import { DEFAULTS, type CrawlConfig } from '../../lib/config';
import type {
  CandidateMsg, FetchOutcome, FetchRequestMsg, FetchStatusMsg, FetchedPageMsg, HandoffEvent, FeedStateMsg, HostPolicyMsg, LinkMsg, ParsedPageMsg, UrlStateMsg,
} from '../../lib/messages';
import { HostPolicyTable } from '../../lib/host-policy';
import type { WarcEntry } from '../../lib/warc/writer';
import { classify, fetchStage, isHtml, retryAfterMs, type Archive } from '../../processors/fetch';
import { eventId, handoffStage, toHandoff, ALLOW_ALL_USAGE } from '../../processors/handoff';
import { changeOf, parsePage } from '../../processors/parse';
import { ExactSeenSet, screenLink, seenTest, type SeenTestOptions } from '../../processors/seen-test';
import type { HandleResult, InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { topics, type TopicId } from '../../topologies/crawl';

const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };

/** Asserts `value` is valid for the topic's Avro schema, naming the offending paths. */
function expectValid(topic: TopicId, value: unknown): void {
  const bad: string[] = [];
  avroType(topics[topic].valueSchema).isValid(value, { errorHook: (path) => bad.push(path.join('.')) });
  expect(bad).toEqual([]);
}
function expectAllValid(outs: readonly OutRecord[]): void {
  for (const o of outs) expectValid(o.topic, o.value);
}

function link(url: string, fields: Partial<LinkMsg> = {}): LinkMsg {
  return { url, source_url: 'http://src.test/', depth: 1, discovered_at: 5, is_seed: false, ...fields };
}

// ---------------------------------------------------------------------------------------------
describe('seen-test', () => {
  const opts = (scope: string[] = [], maxDepth = 3): SeenTestOptions => ({ maxDepth, scope: new Set(scope) });

  it.each<[string, LinkMsg, SeenTestOptions, string]>([
    ['too deep', link('http://a.test/', { depth: 4 }), opts(), 'too-deep'],
    ['unparseable', link('http://'), opts(), 'invalid-url'],
    ['ftp', link('ftp://a.test/x'), opts(), 'unsupported-scheme'],
    ['mailto', link('mailto:x@a.test'), opts(), 'unsupported-scheme'],
    ['other host', link('http://b.test/'), opts(['a.test']), 'out-of-scope'],
    ['other registered domain', link('http://www.other.co.uk/'), opts(['example.co.uk']), 'out-of-scope'],
  ])('screenLink drops %s', (_n, l, o, reason) => {
    expect(screenLink(l, o)).toEqual({ drop: reason });
  });

  it.each<[string, LinkMsg, SeenTestOptions, Partial<CandidateMsg>]>([
    ['at max depth', link('http://a.test/', { depth: 3 }), opts(), { url: 'http://a.test/', depth: 3 }],
    ['in scope by host', link('http://A.test/x'), opts(['a.test']), { url: 'http://a.test/x', host: 'a.test' }],
    ['in scope by registered domain', link('http://www.sub.example.co.uk/x'), opts(['example.co.uk']), { host: 'www.sub.example.co.uk' }],
    ['with its importance (priority) carried to the frontier', link('http://a.test/p', { priority: 0.25 }), opts(), { priority: 0.25 }],
    ['unscored (priority null)', link('http://a.test/q'), opts(), { priority: null }],
  ])('screenLink forwards a link %s', (_n, l, o, expected) => {
    const d = screenLink(l, o);
    expect('forward' in d && d.forward).toMatchObject({ ...expected, source_url: 'http://src.test/', discovered_at: 5 });
  });

  it('drops duplicates, lets seeds bypass the seen set, and collapses normalisation variants', () => {
    const seen = new ExactSeenSet();
    const rejects: Array<[string, string]> = [];
    const o: SeenTestOptions = { ...opts(), onReject: (r, u) => rejects.push([r, u]) };
    const variants = ['HTTP://Example.COM:80/a/../b?utm_source=x#frag', 'http://example.com/b', 'http://EXAMPLE.com/./b#y'];
    const out = seenTest(variants.map((u) => link(u)), seen, o);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ topic: 'frontier', key: 'example.com', host: 'example.com', value: { url: 'http://example.com/b' } });
    expect(rejects.map((r) => r[0])).toEqual(['seen', 'seen']);
    expect(seen.size).toBe(1);
    // Later batches: still a duplicate, unless a seed.
    expect(seenTest([link('http://example.com/b')], seen, o)).toEqual([]);
    const seed = seenTest([link('http://example.com/b', { is_seed: true, depth: 0 })], seen, o);
    expect(seed).toHaveLength(1);
    expectAllValid([...out, ...seed]);
    // Rejects are reported with their reason.
    seenTest([link('ftp://x.test/')], seen, o);
    expect(rejects[rejects.length - 1]).toEqual(['unsupported-scheme', 'ftp://x.test/']);
  });
});

// ---------------------------------------------------------------------------------------------
function capture(url: string, status: number, headers: Array<[string, string]> = [], body: string | Buffer = ''): HttpCapture {
  return {
    url, ip: '127.0.0.1', status, statusText: '', headers, requestHead: `GET ${url} HTTP/1.1\r\n\r\n`,
    body: Buffer.isBuffer(body) ? body : Buffer.from(body), truncated: false, startedAt: 0, elapsedMs: 150, responseMs: 120,
  };
}

function request(url = 'http://a.test/page', fields: Partial<FetchRequestMsg> = {}): FetchRequestMsg {
  return {
    url, host: new URL(url).hostname, depth: 2, lease_id: 'lease-1', lease_expires_at: 99_999, attempt: 1, prev_sha256: null, etag: null,
    last_modified: null, ...fields,
  };
}

describe('fetch: classify and helpers', () => {
  const NOW = Date.parse('2025-01-01T00:00:00Z');

  it.each<[string | null, number | null]>([
    [null, null],
    ['', null],
    ['120', 120_000],
    [' 5 ', 5000],
    ['Wed, 01 Jan 2025 00:00:30 GMT', 30_000],
    ['Tue, 31 Dec 2024 23:00:00 GMT', 0],
    ['soon', null],
  ])('retryAfterMs(%p) = %p', (v, ms) => {
    expect(retryAfterMs(v, NOW)).toBe(ms);
  });

  it.each<[Array<[string, string]>, string, boolean]>([
    [[['Content-Type', 'text/html; charset=utf-8']], '', true],
    [[['content-type', 'application/xhtml+xml']], '', true],
    [[['Content-Type', 'application/pdf']], '<html>', false],
    [[['Content-Type', 'text/htmlx']], '', false],
    [[], '  <!DOCTYPE html><p>x', true],
    [[], '%PDF-1.7', false],
  ])('isHtml(%j, %p) = %p', (headers, body, expected) => {
    expect(isHtml(capture('http://a.test/', 200, headers, body))).toBe(expected);
  });

  it('200 HTML: a page, FETCHED, an exchange entry', () => {
    const c = capture('http://a.test/page', 200, [['Content-Type', 'text/html']], '<html></html>');
    const v = classify(c, request(), NOW);
    expect(v).toMatchObject({ outcome: 'FETCHED', page: true, reason: null, links: [], retryAfter: null, entry: { type: 'exchange', capture: c } });
  });

  it('200 non-HTML: NOT_HTML with a metadata entry, no page', () => {
    const c = capture('http://a.test/f.pdf', 200, [['Content-Type', 'application/pdf']], Buffer.alloc(10));
    const v = classify(c, request('http://a.test/f.pdf'), NOW);
    expect(v.outcome).toBe('NOT_HTML');
    expect(v.page).toBe(false);
    expect(v.entry).toEqual({
      type: 'metadata', targetUri: 'http://a.test/f.pdf',
      fields: [['http-status', '200'], ['content-type', 'application/pdf'], ['content-length-seen', '10']],
    });
  });

  it('301 with a relative Location: a link, stored as an exchange, not a page', () => {
    const v = classify(capture('http://a.test/dir/page', 301, [['Location', '../other?q=1']]), request('http://a.test/dir/page'), NOW);
    expect(v).toMatchObject({ outcome: 'FETCHED', page: false, links: ['http://a.test/other?q=1'], entry: { type: 'exchange' } });
  });

  it('304 with a previous hash: a revisit entry', () => {
    const v = classify(capture('http://a.test/page', 304), request('http://a.test/page', { prev_sha256: 'abc' }), NOW);
    expect(v.outcome).toBe('FETCHED');
    expect(v.page).toBe(false);
    expect(v.entry).toMatchObject({ type: 'revisit', profile: 'server-not-modified', refersToTargetUri: 'http://a.test/page' });
    expect((v.entry as Extract<WarcEntry, { type: 'revisit' }>).refersToDate.getTime()).toBe(NOW);
  });

  it.each<[number, string, number]>([
    [429, '30', 30_000],
    [503, 'Wed, 01 Jan 2025 00:01:00 GMT', 60_000],
  ])('%i with Retry-After %p: FAILED, retry in %i ms', (status, ra, ms) => {
    const v = classify(capture('http://a.test/', status, [['Retry-After', ra]]), request(), NOW);
    expect(v).toMatchObject({ outcome: 'FAILED', reason: `http-${status}`, retryAfter: ms, page: false });
  });

  it('404 is FETCHED (a stored answer), not a page', () => {
    const v = classify(capture('http://a.test/', 404, [['Content-Type', 'text/html']], '<html>'), request(), NOW);
    expect(v).toMatchObject({ outcome: 'FETCHED', page: false, entry: { type: 'exchange' } });
  });
});

// ---------------------------------------------------------------------------------------------
type Route = HttpCapture | FetchError | ((url: string) => HttpCapture);

class FakeHttp implements HttpClient {
  readonly calls: Array<{ url: string; opts: HttpFetchOptions }> = [];
  constructor(private readonly routes: Record<string, Route>, private readonly events: string[] = []) {}
  async fetch(url: string, opts: HttpFetchOptions): Promise<HttpCapture> {
    this.calls.push({ url, opts });
    this.events.push(`GET ${url}`);
    const r = this.routes[url];
    if (!r) return capture(url, 404);
    if (r instanceof FetchError) throw r;
    return typeof r === 'function' ? r(url) : r;
  }
  async close(): Promise<void> {}
}

class FakeArchive {
  readonly entries: WarcEntry[] = [];
  fail = false;
  readonly fn: Archive = async (entry) => {
    this.entries.push(entry);
    if (this.fail) throw new Error('disk full');
    const n = this.entries.length;
    return { uri: 'file:///warc/a.warc.gz', offset: n * 1000, length: 500 + n, recordId: `<urn:uuid:${n}>` };
  };
}

const CFG: CrawlConfig = { ...DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000 };
const HTML = '<html><head><title>T</title></head><body><a href="/next">n</a></body></html>';

function robotsTxt(origin: string, text: string): HttpCapture {
  return capture(`${origin}/robots.txt`, 200, [['Content-Type', 'text/plain']], text);
}

function setup(routes: Record<string, Route>, cfg: CrawlConfig = CFG, startAt = 1_000_000) {
  const events: string[] = [];
  const http = new FakeHttp(routes, events);
  const archive = new FakeArchive();
  const sleeps: number[] = [];
  let clock = startAt;
  const outcomes: FetchOutcome[] = [];
  const stage = fetchStage({
    http, archive: archive.fn, config: cfg, now: () => clock++,
    // A fake sleep that moves the fake clock, so any wait the stage computes from now() settles.
    sleep: async (ms) => {
      sleeps.push(ms);
      events.push(`sleep ${ms}`);
      clock += ms;
    },
    onOutcome: (o) => outcomes.push(o),
  });
  const run = async (req: FetchRequestMsg): Promise<{ early: OutRecord[]; final: OutRecord[] }> => {
    const rec: InRecord = { topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 };
    const r: HandleResult = await stage.handle(rec, ctx);
    if (Array.isArray(r)) return { early: [], final: r };
    return { early: r.early ?? [], final: await r.pending };
  };
  return { http, archive, sleeps, events, outcomes, stage, run };
}

const statuses = (outs: OutRecord[]): FetchStatusMsg[] => outs.filter((o) => o.topic === 'fetchStatus').map((o) => o.value as FetchStatusMsg);
const pageCalls = (http: FakeHttp): string[] => http.calls.map((c) => c.url).filter((u) => !u.endsWith('/robots.txt'));

describe('fetch: fetchStage handler', () => {
  const origin = 'http://a.test';

  it('robots.txt disallow: ROBOTS_DISALLOWED and no page request', async () => {
    const { http, run, archive } = setup({ [`${origin}/robots.txt`]: robotsTxt(origin, 'User-agent: *\nDisallow: /page\n') });
    const { early, final } = await run(request());
    expect(early).toEqual([]);
    expect(statuses(final)).toEqual([expect.objectContaining({ outcome: 'ROBOTS_DISALLOWED', stored: true, reason: 'parsed', lease_id: 'lease-1' })]);
    expect(pageCalls(http)).toEqual([]);
    expect(archive.entries.map((e) => e.type)).toEqual(['exchange']); // robots.txt itself archived
    expectAllValid(final);
  });

  it('robots.txt 503: ROBOTS_UNAVAILABLE and no page request', async () => {
    const { http, run } = setup({ [`${origin}/robots.txt`]: capture(`${origin}/robots.txt`, 503) });
    const { final } = await run(request());
    expect(statuses(final)).toEqual([expect.objectContaining({ outcome: 'ROBOTS_UNAVAILABLE', reason: 'disallow-all-5xx' })]);
    expect(pageCalls(http)).toEqual([]);
  });

  it('robots.txt fetch refused by the SSRF guard: REFUSED, no page request', async () => {
    const { http, run, outcomes } = setup({ [`${origin}/robots.txt`]: new FetchError('SSRF_BLOCKED', 'private address', false) });
    const { final } = await run(request());
    expect(statuses(final)).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason: 'SSRF_BLOCKED', stored: true })]);
    expect(pageCalls(http)).toEqual([]);
    expect(outcomes).toEqual(['REFUSED']);
  });

  it('robots.txt unreachable for another reason: ROBOTS_UNAVAILABLE (retried), not REFUSED', async () => {
    const { run } = setup({ [`${origin}/robots.txt`]: new FetchError('CONNECT_FAILED', 'refused', true) });
    const { final } = await run(request());
    expect(statuses(final)[0].outcome).toBe('ROBOTS_UNAVAILABLE');
  });

  it.each<[string, string, number]>([
    ['no crawl-delay', 'User-agent: *\nAllow: /\n', 1000],
    ['crawl-delay 3', 'User-agent: *\nCrawl-delay: 3\n', 3000],
    ['crawl-delay capped', 'User-agent: *\nCrawl-delay: 3600\n', 10_000],
  ])('a fresh robots.txt fetch waits the host gap before the page (%s)', async (_n, robots, ms) => {
    const page = capture(`${origin}/page`, 200, [['Content-Type', 'text/html']], HTML);
    const { run, events, http } = setup({ [`${origin}/robots.txt`]: robotsTxt(origin, robots), [`${origin}/page`]: page, [`${origin}/p2`]: page });
    const first = await run(request());
    // Right after the robots.txt request and before the page: one wait of the host gap.
    const i = events.indexOf(`GET ${origin}/robots.txt`);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(events.slice(i)).toEqual([`GET ${origin}/robots.txt`, `sleep ${ms}`, `GET ${origin}/page`]);
    expect(statuses(first.early)[0].crawl_delay_ms).toBe(ms === 1000 ? 0 : ms);
    // Cached robots: no second robots request. A lease arriving at once (faster than the frontier
    // ever releases one) waits only what is left of the host's gap since the page (HostPacer).
    const before = events.length;
    await run(request(`${origin}/p2`, { lease_id: 'lease-2' }));
    expect(events.slice(before)).toEqual([expect.stringMatching(/^sleep \d+$/), `GET ${origin}/p2`]);
    const gap = Math.max(ms, CFG.responseTimeFactor * 120); // the fake page took 120 ms
    const left = Number(events[before].split(' ')[1]);
    expect(left).toBeGreaterThan(gap - 10);
    expect(left).toBeLessThanOrEqual(gap);
    expect(http.calls.map((c) => c.url)).toEqual([`${origin}/robots.txt`, `${origin}/page`, `${origin}/p2`]);
  });

  it('a fetcher that restarts or takes the host over reuses the robots.txt answer recorded in crawl.host-policy while it is fresh', async () => {
    const routes = { [`${origin}/robots.txt`]: robotsTxt(origin, 'User-agent: *\nDisallow: /private\nCrawl-delay: 2\n'), [`${origin}/page`]: capture(`${origin}/page`, 200, [['Content-Type', 'text/html']], HTML) };
    const first = setup(routes);
    const row = (await first.run(request())).early.find((o) => o.topic === 'hostPolicy')!;
    expect(row.value).toMatchObject({ field: 'robots', robots_origin: origin, robots_status: 200, min_delay_ms: 2000 });
    expectAllValid([row]);
    // What every other process keeps of the row (the whole table) leaves the body out.
    const table = new HostPolicyTable();
    table.apply(row.key, row.value as HostPolicyMsg);
    expect(table.get('a.test', 'robots')).toMatchObject({ robots_status: 200, robots_body: null });

    // 23 h later, a new fetch stage restored from the row: no robots.txt request, its rules hold.
    const later = setup(routes, CFG, 1_000_000 + 23 * 3600_000);
    later.stage.restore!({ partition: 0, key: row.key, value: row.value }, 'hostPolicy');
    expect(statuses((await later.run(request(`${origin}/private/x`))).final)[0]).toMatchObject({ outcome: 'ROBOTS_DISALLOWED' });
    const { early } = await later.run(request());
    expect(later.http.calls.map((c) => c.url)).toEqual([`${origin}/page`]);
    expect(statuses(early)[0]).toMatchObject({ outcome: 'FETCHED', crawl_delay_ms: 2000 });
    expect(early.filter((o) => o.topic === 'hostPolicy')).toEqual([]); // nothing new to record

    // Past 24 h the row is stale: robots.txt is fetched again.
    const dayAfter = setup(routes, CFG, 1_000_000 + 25 * 3600_000);
    dayAfter.stage.restore!({ partition: 0, key: row.key, value: row.value }, 'hostPolicy');
    await dayAfter.run(request());
    expect(dayAfter.http.calls.map((c) => c.url)).toEqual([`${origin}/robots.txt`, `${origin}/page`]);
  });

  it('crawl.host-policy rows written before the robots answer was added (versions 1 and 2) read with it null; a restore skips them', () => {
    const read = avroReader('crawl.HostPolicy.v1');
    const row = { host: 'a.test', field: 'robots', updated_at: 5, blocked_until: null, reason: 'parsed', min_delay_ms: null, failures: 0, timeouts: 0, gap_ms: null };
    const v2 = { ...row, expires_at: null, max_requests_per_second: null };
    const none = { robots_origin: null, robots_status: null, robots_body: null };
    expect(read(avro.Type.forSchema(schemaBefore(loadSchema('crawl.HostPolicy.v1'), 2) as avro.Schema).toBuffer(row))).toEqual({ ...v2, ...none });
    expect(read(avro.Type.forSchema(schemaBefore(loadSchema('crawl.HostPolicy.v1'), 3) as avro.Schema).toBuffer(v2))).toEqual({ ...v2, ...none });
    const stage = fetchStage({ http: new FakeHttp({}, []), archive: new FakeArchive().fn, config: CFG });
    expect(() => stage.restore!({ partition: 0, key: 'a.test|robots', value: { ...v2, ...none } }, 'hostPolicy')).not.toThrow();
  });

  it('a stored page: early status (stored=false) then the final one with the WARC pointer and a crawl.fetched record', async () => {
    const page = capture(`${origin}/page`, 200, [['Content-Type', 'text/html'], ['ETag', '"v1"'], ['X-Robots-Tag', 'noarchive']], HTML);
    const { run, archive, outcomes } = setup({ [`${origin}/robots.txt`]: robotsTxt(origin, 'User-agent: *\nAllow: /\n'), [`${origin}/page`]: page });
    const { early, final } = await run(request());
    // The early status, and what the fresh robots.txt said (crawl.host-policy field `robots`).
    expect(early.map((o) => o.topic)).toEqual(['fetchStatus', 'hostPolicy']);
    expect(early[1]).toMatchObject({ key: 'a.test|robots', value: { field: 'robots', reason: 'parsed', min_delay_ms: null } });
    expectAllValid(early);
    const e = statuses(early)[0];
    expect(e).toMatchObject({ stored: false, outcome: 'FETCHED', http_status: 200, response_ms: 120, etag: '"v1"', warc_uri: null });
    expect(e.sha256).toMatch(/^[0-9a-f]{64}$/);
    const f = statuses(final);
    expect(f).toEqual([
      { ...e, stored: true, warc_uri: 'file:///warc/a.warc.gz', warc_offset: 2000, warc_length: 502 },
    ]);
    const fetched = final.filter((o) => o.topic === 'fetched');
    expect(fetched).toHaveLength(1);
    expect(fetched[0]).toMatchObject({ key: 'a.test', host: 'a.test' });
    const msg = fetched[0].value as FetchedPageMsg;
    expect(msg).toMatchObject({
      url: `${origin}/page`, depth: 2, http_status: 200, content_type: 'text/html', truncated: false, sha256: e.sha256, prev_sha256: null,
      warc: { uri: 'file:///warc/a.warc.gz', offset: 2000, length: 502 }, x_robots_tag: 'noarchive', fetched_at: e.finished_at,
    });
    expect(msg.body.toString()).toBe(HTML);
    expect(archive.entries.map((x) => x.type)).toEqual(['exchange', 'exchange']);
    expect(outcomes).toEqual(['FETCHED']);
    expectAllValid([...early, ...final]);
  });

  it('sends conditional headers only when there is a previous copy', async () => {
    const { run, http } = setup({
      [`${origin}/robots.txt`]: robotsTxt(origin, ''),
      [`${origin}/page`]: capture(`${origin}/page`, 304),
    });
    const { final } = await run(request(`${origin}/page`, { prev_sha256: 'old', etag: '"e"', last_modified: 'Mon, 01 Jan 2024 00:00:00 GMT' }));
    const pageCall = http.calls.find((c) => c.url === `${origin}/page`)!;
    expect(pageCall.opts.headers).toMatchObject({ 'If-None-Match': '"e"', 'If-Modified-Since': 'Mon, 01 Jan 2024 00:00:00 GMT' });
    expect(statuses(final)[0]).toMatchObject({ outcome: 'FETCHED', http_status: 304, sha256: 'old' });
    expect(final.filter((o) => o.topic === 'fetched')).toEqual([]);
    const { http: http2, run: run2 } = setup({ [`${origin}/robots.txt`]: robotsTxt(origin, '') });
    await run2(request(`${origin}/page`, { etag: '"e"' }));
    expect(http2.calls.find((c) => c.url === `${origin}/page`)!.opts.headers).not.toHaveProperty('If-None-Match');
  });

  it('a redirect emits its target to crawl.links keyed by its own host', async () => {
    const { run } = setup({
      [`${origin}/robots.txt`]: robotsTxt(origin, ''),
      [`${origin}/page`]: capture(`${origin}/page`, 302, [['Location', 'http://b.test/landing']]),
    });
    const { final } = await run(request(undefined, { priority: 0.4 }));
    const links = final.filter((o) => o.topic === 'links');
    expect(links).toEqual([
      expect.objectContaining({
        host: 'b.test',
        value: expect.objectContaining({ url: 'http://b.test/landing', source_url: `${origin}/page`, depth: 2, is_seed: false, priority: 0.4 }),
      }),
    ]);
    expectAllValid(final);
  });

  it('archive rejection: final FAILED store-failed and no fetched record', async () => {
    const { run, archive, outcomes } = setup({
      [`${origin}/robots.txt`]: robotsTxt(origin, ''),
      [`${origin}/page`]: capture(`${origin}/page`, 200, [['Content-Type', 'text/html']], HTML),
    });
    archive.fail = true;
    const { early, final } = await run(request());
    expect(statuses(early)[0]).toMatchObject({ stored: false, outcome: 'FETCHED' });
    expect(final).toHaveLength(1);
    expect(statuses(final)[0]).toMatchObject({ stored: true, outcome: 'FAILED', reason: 'store-failed', warc_uri: null });
    expect(outcomes).toEqual(['FAILED']);
  });

  it.each<[FetchError | Error, FetchOutcome, string]>([
    [new FetchError('CONNECT_TIMEOUT', 'slow', true), 'FAILED', 'CONNECT_TIMEOUT'],
    [new FetchError('SSRF_BLOCKED', 'private', false), 'REFUSED', 'SSRF_BLOCKED'],
    [new FetchError('HEADERS_TOO_LARGE', 'big', false), 'REFUSED', 'HEADERS_TOO_LARGE'],
    [new Error('boom'), 'FAILED', 'error'],
  ])('a thrown %p on the page is %s', async (err, outcome, reason) => {
    const { run } = setup({
      [`${origin}/robots.txt`]: robotsTxt(origin, ''),
      [`${origin}/page`]: () => {
        throw err;
      },
    });
    const { early, final } = await run(request());
    expect(early).toEqual([]);
    expect(statuses(final)).toEqual([expect.objectContaining({ outcome, reason, stored: true })]);
    expectAllValid(final);
  });

  it('a URL that does not parse is REFUSED without any request', async () => {
    const { run, http } = setup({});
    const { final } = await run(request('http://a.test/x', { url: 'not a url' }));
    expect(statuses(final)).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason: 'bad-url' })]);
    expect(http.calls).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
function fetchedPage(html: string, fields: Partial<FetchedPageMsg> = {}): FetchedPageMsg {
  return {
    url: 'http://a.test/dir/page', final_url: 'http://a.test/dir/page', host: 'a.test', depth: 2, fetched_at: 1234, http_status: 200,
    content_type: 'text/html; charset=utf-8', body: Buffer.from(html), truncated: false, sha256: 'new', prev_sha256: null,
    warc: { uri: 'file:///w.warc.gz', offset: 10, length: 20 }, x_robots_tag: null, ...fields,
  };
}
const UA = DEFAULTS.userAgent;

describe('parse', () => {
  const HTML2 = `<html lang="en"><head><title>Hello</title><link rel="canonical" href="HTTP://A.TEST:80/dir/./canon#x"></head><body>
    <p>Some English words to read here.</p>
    <a href="sub">rel</a> <a href="http://b.test/x">other host</a> <a href="/nf" rel="nofollow">nf</a>
  </body></html>`;

  it('emits links with depth+1, keyed by their own host, skipping rel=nofollow', () => {
    const out = parsePage(fetchedPage(HTML2), { userAgent: UA });
    const links = out.filter((o) => o.topic === 'links');
    expect(links.map((o) => [o.host, o.key, (o.value as LinkMsg).url])).toEqual([
      ['a.test', 'a.test', 'http://a.test/dir/sub'],
      ['b.test', 'b.test', 'http://b.test/x'],
    ]);
    for (const l of links) expect(l.value).toMatchObject({ depth: 3, source_url: 'http://a.test/dir/page', discovered_at: 1234, is_seed: false });
    const parsed = out.filter((o) => o.topic === 'parsed');
    expect(parsed).toHaveLength(1);
    expect(parsed[0]).toMatchObject({ key: 'a.test', host: 'a.test' });
    expect(parsed[0].value).toMatchObject({
      url: 'http://a.test/dir/page', canonical_url: 'http://a.test/dir/canon', change: 'NEW', title: 'Hello', outlinks: 3, noindex: false,
      warc: { uri: 'file:///w.warc.gz', offset: 10, length: 20 }, sha256: 'new', fetched_at: 1234,
    });
    expectAllValid(out);
  });

  it('a page\'s feeds (link rel=alternate, RSS or Atom) go to crawl.links in class 1, once, and not among its other links', () => {
    const html = '<html><head><link rel="alternate" type="application/rss+xml" href="/feed.xml">' +
      '<link rel="alternate" type="application/atom+xml" href="http://b.test/atom">' +
      '<link rel="alternate" hreflang="de" href="/de/"><link rel="alternate" type="application/json" href="/feed.json"></head>' +
      '<body><a href="/feed.xml">feed</a><a href="sub">sub</a></body></html>';
    const links = parsePage(fetchedPage(html), { userAgent: UA }).filter((o) => o.topic === 'links').flatMap((o) => {
      const l = o.value as LinkMsg;
      return [l.url, ...(l.more_urls ?? [])].map((url) => [url, l.priority_class ?? null]);
    });
    expect(links.sort()).toEqual([
      ['http://a.test/de/', null], ['http://a.test/dir/sub', null], ['http://a.test/feed.json', null], ['http://a.test/feed.xml', 1], ['http://b.test/atom', 1],
    ]);
    const nofollow = parsePage(fetchedPage(html.replace('<head>', '<head><meta name="robots" content="nofollow">')), { userAgent: UA });
    expect(nofollow.filter((o) => o.topic === 'links')).toEqual([]);
  });

  it.each<[string, Partial<FetchedPageMsg>, string]>([
    ['meta robots nofollow', {}, '<meta name="robots" content="nofollow">'],
    ['X-Robots-Tag nofollow', { x_robots_tag: 'nofollow' }, ''],
  ])('%s: no links', (_n, fields, head) => {
    const out = parsePage(fetchedPage(`<html><head>${head}</head><body><a href="/a">a</a></body></html>`, fields), { userAgent: UA });
    expect(out.filter((o) => o.topic === 'links')).toEqual([]);
    expect(out.filter((o) => o.topic === 'parsed')).toHaveLength(1);
  });

  it.each<[string | null, string, string]>([
    [null, 'x', 'NEW'],
    ['x', 'x', 'UNCHANGED'],
    ['y', 'x', 'CHANGED'],
  ])('changeOf(prev=%p, sha=%p) = %s', (prev, sha, kind) => {
    expect(changeOf({ prev_sha256: prev, sha256: sha })).toBe(kind);
  });

  it('an UNCHANGED page emits no links but still a parsed record; CHANGED emits links', () => {
    const unchanged = parsePage(fetchedPage(HTML2, { prev_sha256: 'new' }), { userAgent: UA });
    expect(unchanged.map((o) => o.topic)).toEqual(['parsed']);
    expect((unchanged[0].value as ParsedPageMsg).change).toBe('UNCHANGED');
    const changed = parsePage(fetchedPage(HTML2, { prev_sha256: 'old' }), { userAgent: UA });
    expect(changed.filter((o) => o.topic === 'links')).toHaveLength(2);
    expect((changed.find((o) => o.topic === 'parsed')!.value as ParsedPageMsg).change).toBe('CHANGED');
  });

  it('meta noindex sets noindex; a bad canonical is null', () => {
    const out = parsePage(fetchedPage('<html><head><meta name="robots" content="noindex"><link rel="canonical" href="ftp://x/"></head></html>'), { userAgent: UA });
    expect(out.find((o) => o.topic === 'parsed')!.value).toMatchObject({ noindex: true, canonical_url: null });
  });
});

// ---------------------------------------------------------------------------------------------
function parsed(fields: Partial<ParsedPageMsg> = {}): ParsedPageMsg {
  return {
    url: 'http://a.test/p', canonical_url: 'http://a.test/c', host: 'a.test', fetched_at: 1_700_000_000_000, change: 'NEW', sha256: 's',
    simhash64: null, language: 'en', title: 'T', text_length: 10, outlinks: 2, noindex: false,
    warc: { uri: 'file:///w.warc.gz', offset: 1, length: 2 }, text: null, ...fields,
  };
}

describe('handoff', () => {
  it.each<[string, Partial<ParsedPageMsg>]>([
    ['UNCHANGED', { change: 'UNCHANGED' }],
    ['noindex', { noindex: true }],
  ])('%s pages produce nothing', (_n, f) => {
    expect(toHandoff(parsed(f), ALLOW_ALL_USAGE)).toBeNull();
    const stage = handoffStage();
    const rec: InRecord = { topic: 'parsed', partition: 0, offset: 0, key: 'a.test', value: parsed(f), timestamp: 0 };
    expect(stage.handle(rec, ctx)).toEqual([]);
  });

  it('event_id is stable for (url, fetched_at) and differs otherwise', () => {
    expect(eventId('http://a.test/p', 1)).toBe(eventId('http://a.test/p', 1));
    expect(eventId('http://a.test/p', 1)).toMatch(/^[0-9a-f]{32}$/);
    const ids = new Set([eventId('http://a.test/p', 1), eventId('http://a.test/p', 2), eventId('http://a.test/q', 1), eventId('http://a.test/p1', 0)]);
    expect(ids.size).toBe(4);
    expect(eventId('http://a.test/p', 12)).not.toBe(eventId('http://a.test/p1', 2)); // separator matters
  });

  it('maps fields and validates against crawl.handoff.v3', () => {
    const p = parsed({ change: 'CHANGED', simhash64: 'abcd', text: { uri: 'file:///t.wet.gz', offset: 5, length: 6 } });
    const policy = { usage: (h: string) => ({ search_index: h === 'a.test', ai_training: false, version: 7 }) };
    const ev = toHandoff(p, policy)!;
    const expected: HandoffEvent = {
      event_id: eventId(p.url, p.fetched_at), url: p.url, canonical_url: 'http://a.test/c', fetched_at: p.fetched_at, change: 'CHANGED',
      simhash64: 'abcd', simhash_version: 1, language: 'en', importance: null, usage: { search_index: true, ai_training: false }, usage_registry_version: 7,
      warc: p.warc, text: p.text,
    };
    expect(ev).toEqual(expected);
    expect(avroType('crawl.handoff.v3').isValid(ev)).toBe(true);
    const stage = handoffStage(policy);
    const rec: InRecord = { topic: 'parsed', partition: 0, offset: 0, key: 'a.test', value: p, timestamp: 0 };
    const out = stage.handle(rec, ctx) as OutRecord[];
    expect(out).toEqual([{ topic: 'handoff', key: 'a.test', host: 'a.test', value: expected }]);
    expectAllValid(out);
    // The check can fail: a wrong shape is rejected.
    expect(avroType('crawl.handoff.v3').isValid({ ...ev, change: 'UNCHANGED' })).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
describe('message types match their Avro schemas', () => {
  const url = 'http://a.test/p';
  const fullRow: UrlStateMsg = {
    url, host: 'a.test', state: 'FETCHED', depth: 1, discovered_at: 1, updated_at: 2, lease_id: 'l', lease_expires_at: 3, attempts: 1,
    next_due_at: 4, fetched_at: 5, http_status: 200, sha256: 's', etag: '"e"', last_modified: 'x', warc_uri: 'file:///w', warc_offset: 6,
    warc_length: 7, reason: 'r', redirects: 1, priority: 0.75, priority_class: 2,
  };
  const nullRow: UrlStateMsg = {
    ...fullRow, state: 'QUEUED', lease_id: null, lease_expires_at: null, next_due_at: null, fetched_at: null, http_status: null, sha256: null,
    etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null, priority: null, priority_class: null,
  };
  const status: FetchStatusMsg = {
    url, host: 'a.test', lease_id: 'l', stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: 1, finished_at: 2,
    response_ms: 3, crawl_delay_ms: 0, retry_after_ms: 1000, sha256: 's', etag: null, last_modified: null, warc_uri: 'u', warc_offset: 1,
    warc_length: 2, ip: '127.0.3.1', feed_kind: null, feed_items: [], contacted: true,
  };
  const samples: Array<[TopicId, unknown]> = [
    ['links', link(url, { redirects: 2, priority: 0.25, lastmod: 1_700_000_000_000, more_urls: ['http://a.test/b', 'http://a.test/c'], priority_class: 1 })],
    ['links', link(url, { source_url: null, is_seed: true, redirects: 0, priority: null, lastmod: null, more_urls: [], priority_class: null })],
    ['frontier', { url, host: 'a.test', depth: 0, discovered_at: 1, source_url: null, redirects: 0, priority: 0.5, more_urls: ['http://a.test/b'], priority_class: 1 } satisfies CandidateMsg],
    ['frontier', { url, host: 'a.test', depth: 0, discovered_at: 1, source_url: null, redirects: 0, priority: null, more_urls: [], priority_class: null } satisfies CandidateMsg],
    ['fetch', request(url, { redirects: 5, priority: 0.5, priority_class: 3 })],
    ['fetch', request(url, { prev_sha256: 's', etag: '"e"', last_modified: 'd', redirects: 0, priority: null, priority_class: null })],
    ...(['FETCHED', 'ROBOTS_DISALLOWED', 'ROBOTS_UNAVAILABLE', 'NOT_HTML', 'FAILED', 'REFUSED'] as FetchOutcome[]).map(
      (outcome): [TopicId, unknown] => ['fetchStatus', { ...status, outcome }],
    ),
    ['fetchStatus', { ...status, feed_kind: 'rss', feed_items: ['0123456789abcdef', 'fedcba9876543210'] }],
    ['fetchStatus', { ...status, outcome: 'ROBOTS_DISALLOWED', http_status: null, contacted: false }],
    ['fetched', fetchedPage('<html>', { record_id: '<urn:uuid:0b5c8a3e-6c1f-4d5e-9a51-1f0c2a7d9e11>', priority: 0.5, record_gz: null })],
    ['fetched', fetchedPage('<html>', { content_type: null, prev_sha256: 'p', x_robots_tag: 'noindex', truncated: true, record_id: null, priority: null, record_gz: null })],
    ['fetched', fetchedPage('', { body: Buffer.alloc(0), record_gz: Buffer.from([0x1f, 0x8b, 8, 0]), record_id: null, priority: null })],
    ['parsed', parsed({ near_duplicate_of: null, priority: 0.5, simhash_version: 2 })],
    ['parsed', parsed({ canonical_url: null, language: null, title: null, simhash64: 'ff', change: 'UNCHANGED', text: { uri: 'u', offset: 0, length: 1 }, near_duplicate_of: 'http://a.test/q', priority: null, simhash_version: 1 })],
    ['handoff', toHandoff(parsed({ priority: 0.5 }), ALLOW_ALL_USAGE)],
    ['handoff', toHandoff(parsed(), ALLOW_ALL_USAGE)],
    ...(['QUEUED', 'LEASED', 'FETCHED', 'FAILED', 'DEAD', 'DISALLOWED'] as UrlStateMsg['state'][]).map(
      (state): [TopicId, unknown] => ['urls', { ...fullRow, state }],
    ),
    ['urls', nullRow],
    ['feeds', {
      url, host: 'a.test', kind: 'atom', interval_ms: 600_000, added_at: 1, last_polled_at: 2, last_ok_at: 2, last_status: 304, etag: '"e"', last_modified: 'd',
      items_seen: ['0123456789abcdef'], new_items: 1, polls: 3, items_total: 4, failures: 0, updated_at: 5,
    } satisfies FeedStateMsg],
    ['feeds', {
      url, host: 'a.test', kind: 'news-sitemap', interval_ms: 60_000, added_at: 1, last_polled_at: 2, last_ok_at: 1, last_status: null, etag: null, last_modified: null,
      items_seen: [], new_items: 0, polls: 0, items_total: 0, failures: 2, updated_at: 5,
    } satisfies FeedStateMsg],
  ];
  it.each(samples.map(([t, v], i): [string, TopicId, unknown] => [`${t}#${i}`, t, v]))('%s is valid', (_n, topic, value) => {
    expectValid(topic, value);
    // And it round-trips through the binary encoding unchanged.
    const type = avroType(topics[topic].valueSchema);
    expect(JSON.parse(JSON.stringify(type.fromBuffer(type.toBuffer(value))))).toEqual(JSON.parse(JSON.stringify(value)));
  });

  it('every schema field is present in the TypeScript sample (no extra schema fields)', () => {
    const byTopic = new Map<TopicId, unknown>();
    for (const [t, v] of samples) if (!byTopic.has(t)) byTopic.set(t, v);
    for (const [t, v] of byTopic) {
      const fields = (avroType(topics[t].valueSchema) as unknown as { fields: Array<{ name: string }> }).fields.map((f) => f.name).sort();
      expect([t, fields]).toEqual([t, Object.keys(v as object).sort()]);
    }
  });

  it('the check can fail: a wrong type or a missing field is reported', () => {
    expect(avroType(topics.fetchStatus.valueSchema).isValid({ ...status, outcome: 'MAYBE' })).toBe(false);
    const { url: _u, ...noUrl } = nullRow;
    expect(avroType(topics.urls.valueSchema).isValid(noUrl)).toBe(false);
    expect(avroType(topics.urls.valueSchema).isValid({ ...nullRow, attempts: 1.5 })).toBe(false);
  });
});
