/**
 * What the webmaster controls do inside the crawl (the frontier on real stores in a temporary folder): a webmaster rate in place of our
 * default least gap in the frontier (raised or lowered, dropped at `until`), a crawl=deny
 * opt-out holding a host in the frontier (no lease) until lifted, the per-host summary of the
 * last day, and the per-account rate limit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HostDays } from '../../api/host-day';
import { RateLimiter } from '../../api/rate-limit';
import { HostPolicyTable } from '../../lib/host-policy';
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg, HostPolicyMsg, OptOutMsg } from '../../lib/messages';
import { OptOutRegistry } from '../../lib/optout-registry';
import { frontierStage } from '../../processors/frontier';
import { OPTOUT_RECHECK_MS } from '../../processors/frontier-holds';
import type { FrontierState, FrontierPolicy } from '../../processors/frontier-state';
import { testFrontier } from '../support/frontier';
import { MemoryChangelog } from '../support/memory-changelog';

function ids(): () => string {
  let n = 0;
  return () => `L${++n}`;
}

const POLICY: FrontierPolicy = { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 600_000, retryBackoffMs: [5_000], maxAttempts: 5 };

function cand(url: string): CandidateMsg {
  return { url, host: new URL(url).hostname, depth: 0, discovered_at: 0, source_url: null };
}

function answer(f: FetchRequestMsg, at: number): FetchStatusMsg {
  return {
    url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: at, finished_at: at,
    response_ms: 1, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null,
  };
}

function rate(host: string, rps: number, until: number): HostPolicyMsg {
  return {
    host, field: 'webmaster-rate', updated_at: 0, blocked_until: null, reason: 'webmaster account wm_1', min_delay_ms: Math.ceil(1000 / rps),
    expires_at: until, max_requests_per_second: rps,
  };
}

/** Lease times of a host over [0, endMs]: each lease answered at once, ticks every 10 ms. */
async function leaseTimes(fs: FrontierState, endMs: number): Promise<number[]> {
  const at: number[] = [];
  for (let t = 0; t <= endMs; t += 10) {
    for (const f of (await fs.tick(t)).fetches) {
      at.push(t);
      await fs.onStatus(answer(f, t), t);
    }
  }
  return at;
}

const gaps = (ts: number[]): number[] => ts.slice(1).map((t, i) => t - ts[i]);

describe('a webmaster rate in the frontier', () => {
  it('0.5 requests/s spaces leases 2 s apart until `until`, then our default (1 s) applies again', async () => {
    const table = new HostPolicyTable();
    table.apply('a.test|webmaster-rate', rate('a.test', 0.5, 20_000));
    const fs = await testFrontier(POLICY, ids(), { table });
    for (let i = 0; i < 40; i++) await fs.onCandidate(cand(`http://a.test/${i}`), 0);
    const ts = await leaseTimes(fs, 30_000);
    const before = gaps(ts.filter((t) => t <= 20_000));
    const after = gaps(ts.filter((t) => t >= 22_000));
    expect(Math.min(...before)).toBeGreaterThanOrEqual(2000);
    expect(Math.max(...after)).toBeLessThan(1100);
    expect(Math.min(...after)).toBeGreaterThanOrEqual(1000);
  });

  it('a rate above our default raises it (4/s: 250 ms apart), never below an operator ceiling', async () => {
    const table = new HostPolicyTable();
    table.apply('a.test|webmaster-rate', rate('a.test', 4, 60_000));
    expect(table.leastGapMs('a.test', 0, 1000)).toBe(250);
    const fs = await testFrontier(POLICY, ids(), { table });
    for (let i = 0; i < 30; i++) await fs.onCandidate(cand(`http://a.test/${i}`), 0);
    const g = gaps(await leaseTimes(fs, 4000));
    expect(Math.min(...g)).toBeGreaterThanOrEqual(250);
    expect(Math.max(...g)).toBeLessThan(400);
    table.apply('a.test|crawl-rate', { host: 'a.test', field: 'crawl-rate', updated_at: 0, blocked_until: null, reason: null, min_delay_ms: 3000 });
    expect(table.leastGapMs('a.test', 0, 1000)).toBe(3000);
    expect(table.leastGapMs('a.test', 60_000, 1000)).toBe(3000);
    table.apply('a.test|crawl-rate', null);
    expect(table.leastGapMs('a.test', 60_000, 1000)).toBe(1000);
    expect(table.webmasterRate('a.test', 59_999)).toEqual({ maxRequestsPerSecond: 4, gapMs: 250, until: 60_000 });
  });
});

describe('crawl=deny in the frontier', () => {
  const deny = (version: number, crawl: 'allow' | 'deny'): OptOutMsg => ({
    subject: 'example.org', registry_version: version, updated_at: 0, scope: 'registered_domain',
    purposes: { crawl, search_index: 'allow', ai_training: 'allow' }, source: 'operator_api', verified: false, effective_at: 0,
  });

  it('holds every host of the domain (no lease) while it stands; a lift reaches them within the recheck', async () => {
    const optout = new OptOutRegistry();
    const fs = await testFrontier(POLICY, ids(), { optout });
    await fs.onCandidate(cand('http://www.example.org/'), 0);
    await fs.onCandidate(cand('http://other.test/'), 0);
    optout.apply('example.org', deny(1, 'deny'));
    const first = (await fs.tick(0)).fetches.map((f) => f.host);
    expect(first).toEqual(['other.test']);
    for (let t = 10; t < 5000; t += 10) expect((await fs.tick(t)).fetches.filter((f) => f.host === 'www.example.org')).toEqual([]);
    optout.apply('example.org', deny(2, 'allow'));
    const released = [];
    for (let t = 5000; t <= 5000 + OPTOUT_RECHECK_MS; t += 100) released.push(...(await fs.tick(t)).fetches.filter((f) => f.host === 'www.example.org'));
    expect(released).toHaveLength(1);
  });

  it('the stage follows crawl.optout: a deny row stops leases, its tombstone wakes the host at once', async () => {
    let clock = 0;
    const dir = mkdtempSync(join(tmpdir(), 'wm-stage-'));
    const ctx = { now: () => clock, log: pino({ level: 'silent' }) };
    const stage = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock });
    await stage.restoreChangelog!([0], new MemoryChangelog(), ctx);
    stage.onGlobal!({ partition: 0, key: 'www.example.org', value: { ...deny(1, 'deny'), subject: 'www.example.org', scope: 'host' } }, 'optout');
    await stage.handle({ topic: 'frontier', partition: 0, offset: 0, key: 'www.example.org', value: cand('http://www.example.org/'), timestamp: 0 }, ctx);
    expect((await stage.tick!(ctx)).filter((o) => o.topic === 'fetch')).toEqual([]);
    expect(stage.optoutRegistry.version).toBe(1);
    clock = 1000;
    stage.onGlobal!({ partition: 0, key: 'www.example.org', value: null }, 'optout');
    expect((await stage.tick!(ctx)).filter((o) => o.topic === 'fetch')).toHaveLength(1);
    await stage.close!();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('HostDays: what we fetched from a host in the last day', () => {
  const st = (host: string, at: number, fields: Partial<FetchStatusMsg> = {}): FetchStatusMsg => ({
    ...answer({ url: `http://${host}/`, host, lease_id: 'x' } as FetchRequestMsg, at), ...fields,
  });

  it('counts requests and errors, and the mean and least gap between starts, over 24 hours', async () => {
    const d = new HostDays();
    const h = 3600_000;
    d.apply(st('a.test', 10 * h));
    d.apply(st('a.test', 10 * h + 2000, { http_status: 503, outcome: 'FAILED' }));
    d.apply(st('a.test', 10 * h + 6000, { http_status: null, outcome: 'FAILED', reason: 'CONNECT_TIMEOUT' }));
    d.apply(st('a.test', 10 * h + 7000, { http_status: null, outcome: 'REFUSED', reason: 'opted-out' })); // no request made
    d.apply(st('a.test', 10 * h + 8000, { stored: false })); // the early status of a fetch
    d.apply(st('b.test', 10 * h));
    expect(d.summary('a.test', 11 * h)).toMatchObject({
      requests: 3, errors: 2, by_status_class: { '2xx': 1, '5xx': 1, none: 1 }, mean_gap_ms: 3000, min_gap_ms: 2000, first_request_at: 10 * h, last_request_at: 10 * h + 6000,
    });
    expect(d.summary('a.test', 35 * h)).toMatchObject({ requests: 0, mean_gap_ms: null });
    expect(d.summary('c.test', 11 * h).requests).toBe(0);
  });

  it('stays bounded: at most maxHosts hosts, the least recently active dropped', async () => {
    const d = new HostDays(3);
    for (const host of ['a', 'b', 'c']) d.apply(st(host, 1000));
    d.apply(st('a', 2000));
    d.apply(st('d', 3000));
    expect(d.size).toBe(3);
    expect(d.summary('b', 4000).requests).toBe(0);
    expect(d.summary('a', 4000).requests).toBe(2);
  });
});

describe('RateLimiter', () => {
  it('allows a burst of perMinute, then one per 60/perMinute s, and says how long to wait', async () => {
    const r = new RateLimiter(6);
    for (let i = 0; i < 6; i++) expect(r.take('wm_1', 0)).toBe(0);
    expect(r.take('wm_1', 0)).toBe(10);
    expect(r.take('wm_2', 0)).toBe(0);
    expect(r.take('wm_1', 9_000)).toBe(1);
    expect(r.take('wm_1', 10_000)).toBe(0);
  });
});
