/**
 * The page's importance travels with it to the indexer: Link.priority -> Candidate (seen-test)
 * -> URL-table row and lease (frontier) -> FetchedPage (fetch) -> ParsedPage (parse) ->
 * handoff event `importance`. Seeds start at SEED_PRIORITY. Pure handlers and fakes only: no
 * network, every message checked against its Avro schema on the way.
 */
import pino from 'pino';
import type { HttpCapture, HttpClient } from '../../connectors/types';
import { avroType } from '../../lib/avro';
import { expandLink } from '../../lib/link-groups';
import { DEFAULTS, type CrawlConfig } from '../../lib/config';
import type { CandidateMsg, FetchRequestMsg, FetchedPageMsg, HandoffEvent, LinkMsg, ParsedPageMsg, UrlStateMsg } from '../../lib/messages';
import { fetchStage, type Archive } from '../../processors/fetch';
import type { FrontierState, FrontierPolicy } from '../../processors/frontier-state';
import { restartedFrontier, testFrontier } from '../support/frontier';
import { ALLOW_ALL_USAGE, importanceOf, toHandoff } from '../../processors/handoff';
import { parsePage, parseStage } from '../../processors/parse';
import { linkShare } from '../../processors/parse-dedup';
import { ExactSeenSet, SEED_PRIORITY, seenTest, type SeenTestOptions } from '../../processors/seen-test';
import type { HandleResult, InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { topics, type TopicId } from '../../topologies/crawl';

const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };
const POLICY: FrontierPolicy = {
  minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 60_000, retryBackoffMs: [5_000], maxAttempts: 3,
};
const CFG: CrawlConfig = { ...DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000 };
const SEEN_OPTS: SeenTestOptions = { maxDepth: 5, scope: new Set() };
const T0 = 1_700_000_000_000;

function expectValid(topic: TopicId, value: unknown): void {
  const bad: string[] = [];
  avroType(topics[topic].valueSchema).isValid(value, { errorHook: (path) => bad.push(path.join('.')) });
  expect([topic, bad]).toEqual([topic, []]);
}

const html = (links: string[]): string =>
  `<html><head><title>t</title></head><body><p>Some words about gardening and tomatoes.</p>${links.map((l) => `<a href="${l}">x</a>`).join('')}</body></html>`;

function capture(url: string, status: number, contentType: string, body: string): HttpCapture {
  return {
    url, ip: '127.0.7.1', status, statusText: '', headers: [['Content-Type', contentType]], requestHead: `GET ${url} HTTP/1.1\r\n\r\n`,
    body: Buffer.from(body), truncated: false, startedAt: 0, elapsedMs: 5, responseMs: 5,
  };
}

/** A fetch stage over a fake web: robots.txt allows all; `pages` maps URL -> HTML. */
function fakeFetch(pages: Record<string, string>) {
  const http: HttpClient = {
    async fetch(url: string) {
      if (url.endsWith('/robots.txt')) return capture(url, 200, 'text/plain', 'User-agent: *\nAllow: /\n');
      const body = pages[url];
      return body === undefined ? capture(url, 404, 'text/html', 'gone') : capture(url, 200, 'text/html', body);
    },
    async close() {},
  };
  let n = 0;
  const archive: Archive = async () => ({ uri: 'file:///w.warc.gz', offset: ++n, length: 10, recordId: `<urn:uuid:${n}>` });
  let clock = T0;
  const stage = fetchStage({ http, archive, config: CFG, now: () => clock++, sleep: async (ms) => void (clock += ms) });
  return async (req: FetchRequestMsg): Promise<FetchedPageMsg> => {
    const rec: InRecord = { topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 };
    const r: HandleResult = await stage.handle(rec, ctx);
    const outs: OutRecord[] = Array.isArray(r) ? r : [...(r.early ?? []), ...(await r.pending)];
    const fetched = outs.filter((o) => o.topic === 'fetched');
    expect(fetched).toHaveLength(1);
    return fetched[0].value as FetchedPageMsg;
  };
}

/** seen-test -> frontier (candidate, lease) for one link; returns the lease and the frontier. */
async function lease(link: LinkMsg, frontier?: FrontierState, now = T0): Promise<{ req: FetchRequestMsg; cand: CandidateMsg; rows: UrlStateMsg[] }> {
  const f = frontier ?? (await testFrontier(POLICY, () => 'L1'));
  const outs = seenTest([link], new ExactSeenSet(), SEEN_OPTS);
  expect(outs).toHaveLength(1);
  const cand = outs[0].value as CandidateMsg;
  expectValid('frontier', cand);
  const rows = (await f.onCandidate(cand, now)).rows;
  const { fetches } = await f.tick(now + 10_000);
  expect(fetches).toHaveLength(1);
  expectValid('fetch', fetches[0]);
  for (const r of rows) expectValid('urls', r);
  return { req: fetches[0], cand, rows };
}

/** fetch -> parse (pure) -> handoff for one lease. */
async function handOff(req: FetchRequestMsg, pages: Record<string, string>): Promise<{ page: FetchedPageMsg; parsed: ParsedPageMsg; event: HandoffEvent }> {
  const page = await fakeFetch(pages)(req);
  expectValid('fetched', page);
  const parsed = parsePage(page, { userAgent: DEFAULTS.userAgent }).find((o) => o.topic === 'parsed')!.value as ParsedPageMsg;
  expectValid('parsed', parsed);
  const event = toHandoff(parsed, ALLOW_ALL_USAGE)!;
  expectValid('handoff', event);
  return { page, parsed, event };
}

describe('importance: Link.priority reaches the handoff event', () => {
  it('a link scored 0.25 is handed off with importance 0.25 (seen-test -> frontier lease -> fetch -> parse -> handoff)', async () => {
    const url = 'http://a.test/scored';
    const link: LinkMsg = { url, source_url: 'http://a.test/', depth: 1, discovered_at: T0, is_seed: false, priority: 0.25 };
    const { cand, rows, req } = await lease(link);
    expect(cand.priority).toBe(0.25);
    expect(rows[0].priority).toBe(0.25); // journaled in the URL table
    expect(req.priority).toBe(0.25);
    const { page, parsed, event } = await handOff(req, { [url]: html([]) });
    expect([page.priority, parsed.priority, event.importance]).toEqual([0.25, 0.25, 0.25]);
  });

  it('a seed gets SEED_PRIORITY (1), and its links carry parse\'s OPIC share on to their own events', async () => {
    expect(SEED_PRIORITY).toBe(1);
    const home = 'http://b.test/';
    const children = ['http://b.test/one', 'http://b.test/two', 'http://b.test/three', 'http://b.test/four'];
    const pages = { [home]: html(children), ...Object.fromEntries(children.map((c) => [c, html([])])) };
    const seed: LinkMsg = { url: home, source_url: null, depth: 0, discovered_at: T0, is_seed: true };
    const { req } = await lease(seed);
    expect(req.priority).toBe(SEED_PRIORITY);
    const { page: seedPage, event: seedEvent } = await handOff(req, pages);
    expect(seedEvent.importance).toBe(1);

    // The stage form of parse gives the links their share; one of them goes round again.
    const outs = parseStage({ userAgent: DEFAULTS.userAgent }).handle(
      { topic: 'fetched', partition: 0, offset: 0, key: 'b.test', value: seedPage, timestamp: 0 }, ctx,
    ) as OutRecord[];
    const links = outs.filter((o) => o.topic === 'links').flatMap((o) => expandLink(o.value as LinkMsg));
    expect(links.map((l) => l.url).sort()).toEqual([...children].sort());
    const share = linkShare(children.length);
    expect(share).toBe(0.5);
    expect(links.every((l) => l.priority === share)).toBe(true);
    const child = links.find((l) => l.url === 'http://b.test/two')!;
    const { event } = await handOff((await lease(child)).req, pages);
    expect(event.url).toBe('http://b.test/two');
    expect(event.importance).toBe(0.5);
  });

  it('an unscored link is handed off with importance null', async () => {
    const url = 'http://c.test/plain';
    const { req, rows } = await lease({ url, source_url: 'http://c.test/', depth: 1, discovered_at: T0, is_seed: false });
    expect(req.priority).toBeUndefined();
    expect(rows[0].priority).toBeUndefined();
    const { page, parsed, event } = await handOff(req, { [url]: html([]) });
    expect([page.priority, parsed.priority, event.importance]).toEqual([null, null, null]);
  });

  it('a seed link that already carries a priority keeps it', async () => {
    const { req } = await lease({ url: 'http://d.test/', source_url: null, depth: 0, discovered_at: T0, is_seed: true, priority: 0.4 });
    expect(req.priority).toBe(0.4);
  });
});

describe('importance: the frontier keeps it in the URL table', () => {
  const url = 'http://e.test/kept';

  it('a restored QUEUED row is leased with its priority, and ranked by it', async () => {
    const first = await testFrontier(POLICY, () => 'L1');
    const { rows } = await lease({ url, source_url: 'http://e.test/', depth: 3, discovered_at: T0, is_seed: false, priority: 0.9 }, first);
    // A new frontier rebuilt from the journaled rows (the QUEUED one, as written by onCandidate).
    // Restored first, an unscored depth-1 URL (level 1) would go first if the 0.9 were lost (depth 3: level 3).
    const restarted = await restartedFrontier({ ...POLICY, priorityLevels: 4 }, () => 'L2', [{ ...rows[0], url: 'http://e.test/shallow-unscored', priority: null, depth: 1 }, rows[0]], T0);
    const { fetches } = await restarted.tick(T0 + 10_000);
    // One per host at a time: the 0.9 URL (level 0) goes first.
    expect(fetches.map((f) => [f.url, f.priority])).toEqual([[url, 0.9]]);
  });

  it('a recrawl of a fetched URL still carries its priority (also after a restart)', async () => {
    const f = await testFrontier({ ...POLICY, recrawlInitialMs: 60_000, recrawlMinMs: 60_000 }, () => 'L1');
    const { req } = await lease({ url, source_url: 'http://e.test/', depth: 1, discovered_at: T0, is_seed: false, priority: 0.6 }, f);
    const done = await f.onStatus({
      url, host: req.host, lease_id: req.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: T0 + 10_000,
      finished_at: T0 + 10_000, response_ms: 5, crawl_delay_ms: 0, retry_after_ms: null, sha256: 's1', etag: null, last_modified: null,
      warc_uri: 'file:///w', warc_offset: 1, warc_length: 2,
    }, T0 + 10_000);
    const fetchedRow = done.rows[0];
    expect(fetchedRow).toMatchObject({ state: 'FETCHED', priority: 0.6 });
    expectValid('urls', fetchedRow);
    const due = fetchedRow.next_due_at!;
    expect((await f.tick(due + 5_000)).fetches.map((r) => r.priority)).toEqual([0.6]);
    const restarted = await restartedFrontier({ ...POLICY, recrawlInitialMs: 60_000, recrawlMinMs: 60_000 }, () => 'L9', [fetchedRow], T0 + 10_000);
    expect((await restarted.tick(due + 5_000)).fetches.map((r) => r.priority)).toEqual([0.6]);
  });
});

describe('importanceOf (the event field)', () => {
  it.each<[number | null | undefined, number | null]>([
    [0.3, 0.3], [0, 0], [1, 1], [1.7, 1], [-0.2, 0], [Number.NaN, null], [Number.POSITIVE_INFINITY, null], [null, null], [undefined, null],
  ])('priority %p -> importance %p', async (p, expected) => {
    expect(importanceOf(p)).toBe(expected);
  });

  it('toHandoff clamps an out-of-range priority and the event stays schema-valid', async () => {
    const parsed: ParsedPageMsg = {
      url: 'http://f.test/', canonical_url: null, host: 'f.test', fetched_at: T0, change: 'NEW', sha256: 's', simhash64: null, language: null,
      title: null, text_length: 1, outlinks: 0, noindex: false, warc: { uri: 'u', offset: 0, length: 1 }, text: null, priority: 2.5,
    };
    const ev = toHandoff(parsed, ALLOW_ALL_USAGE)!;
    expect(ev.importance).toBe(1);
    expectValid('handoff', ev);
  });
});
