/**
 * The fetch stage's politeness gates: operator blocks and crawl-rate ceilings
 * (crawl.host-policy), opt-outs (crawl.optout), the first contact of a restarted fetcher, and
 * the IP reported for the frontier's per-IP cap. Fakes only: no network.
 */
import pino from 'pino';
import type { HttpCapture, HttpClient, HttpFetchOptions } from '../../connectors/types';
import { DEFAULTS, type CrawlConfig } from '../../lib/config';
import type { FetchRequestMsg, FetchStatusMsg, HostPolicyMsg, OptOutMsg } from '../../lib/messages';
import { fetchStage, type Archive } from '../../processors/fetch';
import { frontierStage } from '../../processors/frontier';
import { BACKOFF_WAIT_MAX_MS, backoffWait, firstContactAt, gate, HostPacer, PartitionGains } from '../../processors/fetch-gate';
import { HostPolicyTable } from '../../lib/host-policy';
import { OptOutRegistry } from '../../lib/optout-registry';
import type { HandleResult, InRecord, OutRecord, StageContext, TableRecord } from '../../runtime/stage';
import type { TopicId } from '../../topologies/crawl';

const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };
const CFG: CrawlConfig = { ...DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000 };
const ORIGIN = 'http://a.test';
const FAR = 9_000_000_000_000;

function capture(url: string, status: number, headers: Array<[string, string]> = [], body = ''): HttpCapture {
  return {
    url, ip: '127.0.3.7', status, statusText: '', headers, requestHead: `GET ${url} HTTP/1.1\r\n\r\n`, body: Buffer.from(body),
    truncated: false, startedAt: 0, elapsedMs: 50, responseMs: 50,
  };
}

type Route = HttpCapture | (() => HttpCapture);

function setup(routes: Record<string, Route>, policy?: HostPolicyTable) {
  const events: string[] = [];
  /** When (on the fake clock) each request went out, as a server would log it. */
  const sentAt = new Map<string, number>();
  const http: HttpClient = {
    async fetch(url: string, _opts: HttpFetchOptions) {
      events.push(`GET ${url}`);
      sentAt.set(url, clock);
      const r = routes[url];
      if (!r) return capture(url, 404);
      return typeof r === 'function' ? r() : r;
    },
    async close() {},
  };
  let n = 0;
  const archive: Archive = async () => ({ uri: 'file:///w.warc.gz', offset: ++n, length: 10, recordId: `<urn:uuid:${n}>` });
  let clock = 1_000_000;
  const stage = fetchStage({
    http, archive, config: CFG, now: () => clock++, policy,
    sleep: async (ms) => {
      events.push(`sleep ${ms}`);
      clock += ms;
    },
  });
  const run = async (req: FetchRequestMsg): Promise<{ early: FetchStatusMsg[]; final: FetchStatusMsg[] }> => {
    const rec: InRecord = { topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 };
    const r: HandleResult = await stage.handle(rec, ctx);
    const st = (o: OutRecord[]): FetchStatusMsg[] => o.filter((x) => x.topic === 'fetchStatus').map((x) => x.value as FetchStatusMsg);
    if (Array.isArray(r)) return { early: [], final: st(r) };
    return { early: st(r.early ?? []), final: st(await r.pending) };
  };
  const pages = (): string[] => events.filter((e) => e.startsWith('GET') && !e.endsWith('/robots.txt'));
  return { events, stage, run, pages, sentAt };
}

function okRoutes(): Record<string, Route> {
  return {
    [`${ORIGIN}/robots.txt`]: capture(`${ORIGIN}/robots.txt`, 200, [['Content-Type', 'text/plain']], 'User-agent: *\nAllow: /\n'),
    [`${ORIGIN}/page`]: capture(`${ORIGIN}/page`, 200, [['Content-Type', 'text/html']], '<html><body>x</body></html>'),
  };
}

function request(url = `${ORIGIN}/page`): FetchRequestMsg {
  return {
    url, host: new URL(url).hostname, depth: 0, lease_id: 'L1', lease_expires_at: FAR, attempt: 1, prev_sha256: null, etag: null, last_modified: null,
  };
}

function policyRow(host: string, field: string, fields: Partial<HostPolicyMsg>): TableRecord<HostPolicyMsg> {
  return {
    partition: 0, key: `${host}|${field}`,
    value: { host, field, updated_at: 0, blocked_until: null, reason: null, min_delay_ms: null, ...fields },
  };
}

function optRow(subject: string, purpose: OptOutMsg['purpose'], allowed: boolean): TableRecord<OptOutMsg> {
  return { partition: 0, key: `${subject}|${purpose}`, value: { subject, purpose, allowed, registry_version: 1, updated_at: 0 } };
}

describe('gate (pure)', () => {
  it.each<[string, Array<[TopicId, TableRecord]>, number, string | null]>([
    ['nothing known', [], 100, null],
    ['a block in force', [['hostPolicy', policyRow('a.test', 'block', { blocked_until: 200, reason: 'complaint' })]], 100, 'blocked'],
    ['a block at its expiry', [['hostPolicy', policyRow('a.test', 'block', { blocked_until: 100 })]], 100, null],
    ['a block lifted', [['hostPolicy', policyRow('a.test', 'block', { blocked_until: 200 })], ['hostPolicy', { partition: 0, key: 'a.test|block', value: null }]], 100, null],
    ['a block of another host', [['hostPolicy', policyRow('b.test', 'block', { blocked_until: 200 })]], 100, null],
    ['crawl=deny for the host', [['optout', optRow('a.test', 'crawl', false)]], 100, 'opted-out'],
    ['crawl=deny, then allowed again', [['optout', optRow('a.test', 'crawl', false)], ['optout', optRow('a.test', 'crawl', true)]], 100, null],
    ['ai_training=deny only', [['optout', optRow('a.test', 'ai_training', false)]], 100, null],
  ])('%s', (_n, rows, now, expected) => {
    const policy = new HostPolicyTable();
    const optout = new OptOutRegistry();
    for (const [topic, r] of rows) {
      if (topic === 'hostPolicy') policy.apply(r.key, r.value as HostPolicyMsg | null);
      else optout.apply(r.key, r.value as OptOutMsg | null);
    }
    expect(gate('a.test', now, policy, optout)).toBe(expected);
  });

  it('crawl=deny on the registered domain covers its subdomains', () => {
    const optout = new OptOutRegistry();
    optout.apply('example.org|crawl', optRow('example.org', 'crawl', false).value);
    expect(gate('news.example.org', 0, new HostPolicyTable(), optout)).toBe('opted-out');
    expect(gate('example.com', 0, new HostPolicyTable(), optout)).toBeNull();
  });

  it('firstContactAt: a host gap from the frontier (backoff.gap_ms) wins over the minimum', () => {
    const policy = new HostPolicyTable();
    // No row: the host's gap is at most 20% above the minimum (a smaller one is never written).
    expect(firstContactAt('a.test', 1000, 1000, policy)).toBe(2200);
    policy.apply('a.test|backoff', policyRow('a.test', 'backoff', { gap_ms: 30_000 }).value);
    // The gap in force may be up to 20% above the one written (rows are rewritten past 20%).
    expect(firstContactAt('a.test', 1000, 1000, policy)).toBe(37_000);
    expect(firstContactAt('b.test', 1000, 1000, policy)).toBe(2200);
  });
});

describe('backoffWait (pure)', () => {
  const table = (until: number | null): HostPolicyTable => {
    const policy = new HostPolicyTable();
    policy.apply('a.test|backoff', policyRow('a.test', 'backoff', { blocked_until: until, reason: 'http-429 retry-after', gap_ms: 1000 }).value);
    return policy;
  };
  it.each<[string, number | null, number, number, number | 'backoff' | null]>([
    ['no window written', null, 100, FAR, null],
    ['a window already over', 100, 100, FAR, null],
    ['inside a short window: wait for its end', 3100, 100, FAR, 3100],
    ['a window longer than the most a fetch waits: hand the lease back', 100 + BACKOFF_WAIT_MAX_MS + 1, 100, FAR, 'backoff'],
    ['a window that outlasts the lease: hand it back', 3100, 100, 3000, 'backoff'],
  ])('%s', (_n, until, now, leaseEnd, expected) => {
    expect(backoffWait('a.test', now, leaseEnd, table(until))).toBe(expected);
    expect(backoffWait('b.test', now, leaseEnd, table(until))).toBeNull();
  });
});

describe('PartitionGains', () => {
  it('remembers when each partition was taken on; a retained one keeps its time, a lost one forgets it', () => {
    const g = new PartitionGains(100);
    expect(g.since(3)).toBe(100);
    g.assigned([0, 1], 200);
    g.assigned([1, 2], 500); // rebalance: kept 1, gained 2, lost 0
    expect([g.since(1), g.since(2)]).toEqual([200, 500]);
    g.assigned([0, 1, 2], 900);
    expect(g.since(0)).toBe(900);
  });
});

describe('HostPacer', () => {
  it('serialises turns per host and spaces them by the gap of the turn before; other hosts are not held', async () => {
    const p = new HostPacer();
    const a1 = await p.acquire('a', 1000);
    expect(a1.readyAt).toBe(0);
    const order: string[] = [];
    const a2p = p.acquire('a', 1000).then((s) => (order.push('a2'), s));
    const b1 = await p.acquire('b', 1000);
    order.push('b1');
    expect(b1.readyAt).toBe(0);
    a1.contacted = true;
    a1.gapMs = 5000;
    a1.release(10_000);
    const a2 = await a2p;
    expect(order).toEqual(['b1', 'a2']);
    expect(a2.readyAt).toBe(15_000);
    a2.release(11_000); // no request made in this turn: the host's last contact stays at 10,000
    expect((await p.acquire('a', 1000)).readyAt).toBe(15_000);
  });
});

describe('fetch stage: global tables', () => {
  it('reads crawl.host-policy and crawl.optout whole', () => {
    expect(setup({}).stage.globalTables).toEqual(['hostPolicy', 'optout']);
  });

  it.each<[string, Array<[TopicId, TableRecord]>, string]>([
    ['blocked host', [['hostPolicy', policyRow('a.test', 'block', { blocked_until: FAR, reason: 'complaint' })]], 'blocked'],
    ['opted-out host', [['optout', optRow('a.test', 'crawl', false)]], 'opted-out'],
  ])('%s: REFUSED at once, not even robots.txt is requested', async (_n, rows, reason) => {
    const { stage, run, events } = setup(okRoutes());
    for (const [topic, r] of rows) stage.onGlobal!(r, topic);
    const { early, final } = await run(request());
    expect(early).toEqual([]);
    expect(final).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason, stored: true, http_status: null })]);
    expect(events.filter((e) => e.startsWith('GET'))).toEqual([]);
  });

  it('with a host-policy table shared by the stages of one process (crawl run), a block applied through another stage refuses here', async () => {
    const shared = new HostPolicyTable();
    const frontier = frontierStage({ ...CFG }, { partitions: 1, stateDir: '/nonexistent', policy: shared });
    const { run, events } = setup(okRoutes(), shared);
    frontier.onGlobal!(policyRow('a.test', 'block', { blocked_until: FAR, reason: 'complaint' }), 'hostPolicy');
    expect(frontier.state.table).toBe(shared);
    const { final } = await run(request());
    expect(final).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason: 'blocked' })]);
    expect(events.filter((e) => e.startsWith('GET'))).toEqual([]);
  });

  it('an expired block does not refuse', async () => {
    const { stage, run, pages } = setup(okRoutes());
    stage.onGlobal!(policyRow('a.test', 'block', { blocked_until: 5 }), 'hostPolicy');
    const { final } = await run(request());
    expect(final[0]).toMatchObject({ outcome: 'FETCHED', http_status: 200 });
    expect(pages()).toEqual([`GET ${ORIGIN}/page`]);
  });

  it('a block arriving while robots.txt is fetched refuses the page (a lease already out)', async () => {
    const routes = okRoutes();
    const robots = routes[`${ORIGIN}/robots.txt`] as HttpCapture;
    const t = setup({
      ...routes,
      [`${ORIGIN}/robots.txt`]: () => {
        t.stage.onGlobal!(policyRow('a.test', 'block', { blocked_until: FAR }), 'hostPolicy');
        return robots;
      },
    });
    const { final } = await t.run(request());
    expect(final).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason: 'blocked' })]);
    expect(t.pages()).toEqual([]);
  });

  it('the statuses carry the IP the page request connected to', async () => {
    const { run } = setup(okRoutes());
    const { early, final } = await run(request());
    expect(early[0].ip).toBe('127.0.3.7');
    expect(final[0].ip).toBe('127.0.3.7');
  });

  it('a status says whether its lease sent the host any request (the frontier starts a gap only then)', async () => {
    const routes = okRoutes();
    routes[`${ORIGIN}/robots.txt`] = capture(`${ORIGIN}/robots.txt`, 200, [['Content-Type', 'text/plain']], 'User-agent: *\nDisallow: /private/\n');
    const { run, events } = setup(routes);
    // robots.txt fetched for this lease, which it then disallows: a request was sent.
    expect((await run(request(`${ORIGIN}/private/1`))).final).toEqual([expect.objectContaining({ outcome: 'ROBOTS_DISALLOWED', contacted: true })]);
    // The page: a request.
    const page = await run({ ...request(), lease_id: 'L2' });
    expect([...page.early, ...page.final].map((x) => x.contacted)).toEqual([true, true]);
    // Disallowed by the cached answer: nothing sent, so no gap starts from it.
    const sent = events.filter((e) => e.startsWith('GET')).length;
    expect((await run({ ...request(`${ORIGIN}/private/2`), lease_id: 'L3' })).final).toEqual([expect.objectContaining({ outcome: 'ROBOTS_DISALLOWED', contacted: false })]);
    expect(events.filter((e) => e.startsWith('GET'))).toHaveLength(sent);
  });

  it('a refusal before any request says nothing was sent', async () => {
    const { stage, run } = setup(okRoutes());
    stage.onGlobal!(policyRow('a.test', 'block', { blocked_until: FAR, reason: 'operator' }), 'hostPolicy');
    expect((await run(request())).final).toEqual([expect.objectContaining({ outcome: 'REFUSED', reason: 'blocked', contacted: false })]);
  });

  it("first contact waits the host's persisted gap before robots.txt", async () => {
    const { stage, run, events } = setup(okRoutes());
    stage.onGlobal!(policyRow('a.test', 'backoff', { gap_ms: 20_000 }), 'hostPolicy');
    await run(request());
    expect(events[0]).toMatch(/^sleep /);
    expect(Number(events[0].split(' ')[1])).toBeGreaterThan(19_000);
    expect(events[1]).toBe(`GET ${ORIGIN}/robots.txt`);
  });

  it("a partition taken over from another fetcher waits the host's gap before the first contact", async () => {
    const routes = {
      ...okRoutes(),
      'http://b.test/robots.txt': capture('http://b.test/robots.txt', 404),
      'http://b.test/page': capture('http://b.test/page', 200, [['Content-Type', 'text/html']], '<html></html>'),
    };
    const { stage, run, events } = setup(routes);
    const all = Array.from({ length: CFG.partitions }, (_v, p) => p);
    stage.assigned!(all);
    await run(request()); // a.test: first contact after start, then robots gap; the clock moves on
    const mark = events.length;
    await run(request('http://b.test/page')); // same process, long after start: no wait
    expect(events[mark]).toBe('GET http://b.test/robots.txt');
    stage.assigned!([]); // rebalance: partitions lost, then taken on again (a dead fetcher's leases replayed)
    stage.assigned!(all);
    const mark2 = events.length;
    await run(request('http://b.test/page'));
    expect(events[mark2]).toMatch(/^sleep (99\d|1000)$/);
  });

  it('a replayed lease meeting the next lease of its host in one process: one request at a time, a gap apart', async () => {
    const routes = { ...okRoutes(), [`${ORIGIN}/other`]: capture(`${ORIGIN}/other`, 200, [['Content-Type', 'text/html']], '<html></html>') };
    const { run, events, sentAt } = setup(routes);
    await Promise.all([run(request()), run({ ...request(`${ORIGIN}/other`), lease_id: 'L2' })]);
    const gets = events.filter((e) => e.startsWith('GET'));
    expect(gets).toEqual([`GET ${ORIGIN}/robots.txt`, `GET ${ORIGIN}/page`, `GET ${ORIGIN}/other`]);
    // As the server would see it: the second request a full host gap after the first.
    expect(sentAt.get(`${ORIGIN}/other`)! - sentAt.get(`${ORIGIN}/page`)!).toBeGreaterThanOrEqual(CFG.minHostDelayMs);
  });

  it("a replayed lease inside the host's Retry-After window (read by another fetcher) waits for its end, robots.txt included", async () => {
    const { stage, run, events, sentAt } = setup(okRoutes());
    const until = 1_000_000 + 5_000;
    stage.onGlobal!(policyRow('a.test', 'backoff', { blocked_until: until, reason: 'http-429 retry-after', gap_ms: 1000 }), 'hostPolicy');
    // First contact after start waits the host's gap first; the window outlasts it.
    const { final } = await run(request());
    expect(final[0].outcome).toBe('FETCHED');
    expect(sentAt.get(`${ORIGIN}/robots.txt`)!).toBeGreaterThanOrEqual(until);
    expect(events.filter((e) => e.startsWith('GET'))).toEqual([`GET ${ORIGIN}/robots.txt`, `GET ${ORIGIN}/page`]);
  });

  it('a window longer than a fetch waits hands the lease back unfetched (REFUSED backoff), nothing sent', async () => {
    const { stage, run, events } = setup(okRoutes());
    stage.onGlobal!(policyRow('a.test', 'backoff', { blocked_until: 1_000_000 + 600_000, reason: 'paused: 3 consecutive 503', gap_ms: 1000 }), 'hostPolicy');
    const { final } = await run(request());
    expect([final[0].outcome, final[0].reason, final[0].stored]).toEqual(['REFUSED', 'backoff', true]);
    expect(events.filter((e) => e.startsWith('GET'))).toEqual([]);
  });

  it('a crawl-rate ceiling is the least wait between robots.txt and the page', async () => {
    const { stage, run, events } = setup(okRoutes());
    stage.onGlobal!(policyRow('a.test', 'crawl-rate', { min_delay_ms: 7_000, reason: 'webmaster' }), 'hostPolicy');
    await run(request());
    const i = events.indexOf(`GET ${ORIGIN}/page`);
    expect(events[i - 1]).toBe('sleep 7000');
  });
});
