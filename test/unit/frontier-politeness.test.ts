/**
 * Adaptive politeness (AIMD), operator blocks and crawl-rate ceilings, and durable back-off in
 * the frontier. An injected clock (every call takes `now`); the frontier's stores are real, in a
 * temporary folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HostPolicyTable } from '../../lib/host-policy';
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg, HostPolicyMsg, UrlStateMsg } from '../../lib/messages';
import { frontierStage } from '../../processors/frontier';
import { AIMD_DEFAULTS, NO_BACKOFF, loadSignal, nextBackoff, type HostBackoff, type LoadSignal } from '../../processors/frontier-aimd';
import type { FrontierState, FrontierPolicy, FrontierTuning } from '../../processors/frontier-state';
import type { OutRecord } from '../../runtime/stage';
import { restartedFrontier, testFrontier } from '../support/frontier';
import { MemoryChangelog } from '../support/memory-changelog';

const POLICY: FrontierPolicy & Partial<FrontierTuning> = {
  minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 600_000, retryBackoffMs: [5_000, 10_000], maxAttempts: 10,
  ...AIMD_DEFAULTS,
};

function ids(): () => string {
  let n = 0;
  return () => `L${++n}`;
}

function cand(url: string, fields: Partial<CandidateMsg> = {}): CandidateMsg {
  return { url, host: new URL(url).hostname, depth: 0, discovered_at: 0, source_url: null, ...fields };
}

function status(f: FetchRequestMsg, fields: Partial<FetchStatusMsg> & { finished_at: number }): FetchStatusMsg {
  return {
    url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null,
    started_at: fields.finished_at, response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, ...fields,
  };
}

/** The first time in [from, from + limit] (1 ms steps) at which a tick releases a fetch. */
async function firstRelease(fs: FrontierState, from: number, limit: number, step = 1): Promise<{ at: number; fetch: FetchRequestMsg } | null> {
  for (let t = from; t <= from + limit; t += step) {
    const e = await fs.tick(t);
    if (e.fetches.length > 0) return { at: t, fetch: e.fetches[0] };
  }
  return null;
}

async function withUrls(host: string, n: number, policy = POLICY, table?: HostPolicyTable): Promise<FrontierState> {
  const fs = await testFrontier(policy, ids(), { table });
  for (let i = 0; i < n; i++) await fs.onCandidate(cand(`http://${host}/${i}`), 0);
  return fs;
}

describe('loadSignal', () => {
  it.each<[string, Partial<FetchStatusMsg>, LoadSignal['kind']]>([
    ['200', { http_status: 200 }, 'ok'],
    ['404', { http_status: 404 }, 'ok'],
    ['304', { http_status: 304 }, 'ok'],
    ['429', { outcome: 'FAILED', http_status: 429 }, 'overload'],
    ['503', { outcome: 'FAILED', http_status: 503 }, 'overload'],
    ['500', { outcome: 'FAILED', http_status: 500 }, 'neutral'],
    ['robots.txt 5xx', { outcome: 'ROBOTS_UNAVAILABLE', http_status: null, reason: 'disallow-all-5xx' }, 'overload'],
    ['robots.txt unreachable', { outcome: 'ROBOTS_UNAVAILABLE', http_status: null, reason: 'disallow-all-unreachable' }, 'neutral'],
    ['robots disallow', { outcome: 'ROBOTS_DISALLOWED', http_status: null, reason: 'parsed' }, 'neutral'],
    ['deadline', { outcome: 'FAILED', http_status: null, reason: 'DEADLINE_EXCEEDED' }, 'timeout'],
    ['connect timeout', { outcome: 'FAILED', http_status: null, reason: 'CONNECT_TIMEOUT' }, 'timeout'],
    ['connection reset', { outcome: 'FAILED', http_status: null, reason: 'CONNECTION_RESET' }, 'neutral'],
    ['blocked', { outcome: 'REFUSED', http_status: null, reason: 'blocked' }, 'neutral'],
  ])('%s -> %s', async (_n, fields, kind) => {
    expect(loadSignal({ outcome: 'FETCHED', http_status: null, reason: null, retry_after_ms: null, ...fields }).kind).toBe(kind);
  });
});

describe('nextBackoff (AIMD)', () => {
  const P = AIMD_DEFAULTS;
  const over = (status: number, retryAfterMs: number | null = null): LoadSignal => ({ kind: 'overload', status, retryAfterMs });

  it.each<[string, HostBackoff, LoadSignal, number, Partial<HostBackoff>]>([
    ['429 doubles the normal gap', NO_BACKOFF, over(429), 1000, { delayMs: 2000, failures: 1, notBefore: 0 }],
    ['429 again doubles the adapted gap', { ...NO_BACKOFF, delayMs: 2000, failures: 1 }, over(429), 1000, { delayMs: 4000, failures: 2 }],
    ['429 with Retry-After opens a window from its finish', NO_BACKOFF, over(429, 30_000), 1000, { delayMs: 2000, notBefore: 10_000 + 30_000 }],
    ['the adapted gap is capped', { ...NO_BACKOFF, delayMs: 500_000 }, over(503), 1000, { delayMs: P.aimdMaxDelayMs }],
    ['2nd 503 does not pause yet', { ...NO_BACKOFF, delayMs: 2000, failures: 1 }, over(503), 1000, { failures: 2, notBefore: 0 }],
    ['3rd consecutive 503 pauses the host', { ...NO_BACKOFF, delayMs: 4000, failures: 2 }, over(503), 1000, { failures: 3, notBefore: 10_000 + P.hostPauseMs }],
    ['3rd consecutive 429 does not pause', { ...NO_BACKOFF, delayMs: 4000, failures: 2 }, over(429), 1000, { failures: 3, notBefore: 0 }],
    ['1st timeout waits timeoutBackoffMs', NO_BACKOFF, { kind: 'timeout' }, 1000, { timeouts: 1, notBefore: 10_000 + P.timeoutBackoffMs }],
    ['3rd timeout waits 4x', { ...NO_BACKOFF, timeouts: 2 }, { kind: 'timeout' }, 1000, { timeouts: 3, notBefore: 10_000 + 4 * P.timeoutBackoffMs }],
    ['success recovers additively in rate', { ...NO_BACKOFF, delayMs: 4000, failures: 2 }, { kind: 'ok' }, 1000, { delayMs: Math.round(1000 / (0.25 + P.aimdRecoveryRatePerSec)), failures: 0 }],
    ['success at the normal pace clears', { ...NO_BACKOFF, delayMs: 1010 }, { kind: 'ok' }, 1000, { delayMs: 0, cause: null }],
    ['success resets timeouts', { ...NO_BACKOFF, timeouts: 3 }, { kind: 'ok' }, 1000, { timeouts: 0 }],
    ['neutral changes nothing', { ...NO_BACKOFF, delayMs: 3000, failures: 1 }, { kind: 'neutral' }, 1000, { delayMs: 3000, failures: 1 }],
  ])('%s', async (_n, before, sig, gap, expected) => {
    expect(nextBackoff(before, sig, gap, 10_000, P)).toMatchObject(expected);
  });

  it('recovery is slow: from an 8 s gap back to 1 s takes dozens of good answers, each gap no longer than the last', async () => {
    let b: HostBackoff = { ...NO_BACKOFF, delayMs: 8000 };
    const gaps: number[] = [];
    for (let i = 0; i < 200 && b.delayMs > 0; i++) {
      b = nextBackoff(b, { kind: 'ok' }, 1000, 0, P);
      gaps.push(b.delayMs);
    }
    expect(b.delayMs).toBe(0);
    expect(gaps.length).toBeGreaterThan(30);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeLessThanOrEqual(gaps[i - 1]);
  });
});

describe('FrontierState: adaptive politeness', () => {
  it('429 with Retry-After: no request inside the window, and the gap after it is doubled', async () => {
    const fs = await withUrls('a.test', 3);
    const f1 = (await fs.tick(0)).fetches[0];
    const e = await fs.onStatus(status(f1, { finished_at: 1000, outcome: 'FAILED', http_status: 429, retry_after_ms: 30_000 }), 1000);
    expect(e.policies).toEqual([expect.objectContaining({ host: 'a.test', field: 'backoff', blocked_until: 31_000, min_delay_ms: 2000, failures: 1 })]);
    expect(e.rows[0]).toMatchObject({ state: 'FAILED', next_due_at: 31_000 });
    const r2 = (await firstRelease(fs, 1000, 40_000, 10))!;
    expect(r2.at).toBe(31_000);
    await fs.onStatus(status(r2.fetch, { finished_at: 31_000, http_status: 200 }), 31_000);
    // Still slowed (recovering): more than the 1 s minimum.
    expect((await firstRelease(fs, 31_000, 10_000))!.at).toBeGreaterThan(32_000);
  });

  it('three consecutive 503s pause the host for hostPauseMs', async () => {
    const fs = await withUrls('a.test', 5);
    let t = 0;
    let f = (await fs.tick(t)).fetches[0];
    for (let i = 0; i < 3; i++) {
      await fs.onStatus(status(f, { finished_at: t, outcome: 'FAILED', http_status: 503 }), t);
      if (i < 2) {
        const r = (await firstRelease(fs, t, 60_000, 10))!;
        t = r.at;
        f = r.fetch;
      }
    }
    expect(fs.host('a.test')!.backoff).toMatchObject({ failures: 3, notBefore: t + POLICY.hostPauseMs! });
    expect((await fs.tick(t + POLICY.hostPauseMs! - 1)).fetches).toEqual([]);
    expect((await fs.tick(t + POLICY.hostPauseMs!)).fetches).toHaveLength(1);
  });

  it('timeouts back off exponentially', async () => {
    const fs = await withUrls('a.test', 4);
    let f = (await fs.tick(0)).fetches[0];
    let t = 0;
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) {
      await fs.onStatus(status(f, { finished_at: t, outcome: 'FAILED', http_status: null, reason: 'DEADLINE_EXCEEDED' }), t);
      const r = (await firstRelease(fs, t, 200_000, 100))!;
      waits.push(r.at - t);
      t = r.at;
      f = r.fetch;
    }
    expect(waits).toEqual([10_000, 20_000, 40_000]);
  });

  it('an operator crawl-rate ceiling is the least gap', async () => {
    const table = new HostPolicyTable();
    table.apply('a.test|crawl-rate', { host: 'a.test', field: 'crawl-rate', updated_at: 0, blocked_until: null, reason: 'webmaster', min_delay_ms: 5000 });
    const fs = await withUrls('a.test', 2, POLICY, table);
    const f = (await fs.tick(0)).fetches[0];
    await fs.onStatus(status(f, { finished_at: 100 }), 100);
    expect((await firstRelease(fs, 100, 10_000))!.at).toBe(5100);
  });
});

describe('FrontierState: a lease that sent no request starts no gap', () => {
  const DELAY = 2000;

  it('a robots.txt verdict from the cached answer leaves the host due when the last request allows', async () => {
    const fs = await withUrls('a.test', 4);
    const f1 = (await fs.tick(0)).fetches[0];
    await fs.onStatus(status(f1, { finished_at: 100, crawl_delay_ms: DELAY }), 100);
    const r2 = (await firstRelease(fs, 100, 10_000))!;
    expect(r2.at).toBe(100 + DELAY);
    // A disallowed URL: the fetcher answered from its cached robots.txt and sent nothing.
    await fs.onStatus(status(r2.fetch, { finished_at: 2150, outcome: 'ROBOTS_DISALLOWED', http_status: null, reason: 'rules', crawl_delay_ms: DELAY, contacted: false }), 2150);
    // The next URL goes at once, not a whole Crawl-delay after the verdict (4150: what the crawl saw).
    const r3 = (await firstRelease(fs, 2150, 10_000))!;
    expect(r3.at).toBe(2150);
    // A request again: the gap runs from its end.
    await fs.onStatus(status(r3.fetch, { finished_at: 2200, crawl_delay_ms: DELAY }), 2200);
    expect((await firstRelease(fs, 2200, 10_000))!.at).toBe(2200 + DELAY);
  });

  it("the gap still runs from the last request's end, with the host's gap as it is now", async () => {
    const table = new HostPolicyTable();
    const fs = await withUrls('a.test', 3, POLICY, table);
    const f1 = (await fs.tick(0)).fetches[0];
    await fs.onStatus(status(f1, { finished_at: 100 }), 100);
    const r2 = (await firstRelease(fs, 100, 10_000))!;
    expect(r2.at).toBe(1100);
    // An operator's ceiling of 5 s arrives while the next lease is out; that lease sends nothing.
    table.apply('a.test|crawl-rate', { host: 'a.test', field: 'crawl-rate', updated_at: 0, blocked_until: null, reason: 'operator', min_delay_ms: 5000 });
    await fs.onStatus(status(r2.fetch, { finished_at: 1150, outcome: 'REFUSED', http_status: null, reason: 'backoff', contacted: false }), 1150);
    expect((await firstRelease(fs, 1150, 10_000))!.at).toBe(100 + 5000);
  });

  it('a status from a fetcher before `contacted` existed counts as a request (the old, safe reading)', async () => {
    const fs = await withUrls('a.test', 3);
    const f1 = (await fs.tick(0)).fetches[0];
    await fs.onStatus(status(f1, { finished_at: 100, crawl_delay_ms: DELAY }), 100);
    const r2 = (await firstRelease(fs, 100, 10_000))!;
    await fs.onStatus(status(r2.fetch, { finished_at: 2150, outcome: 'ROBOTS_DISALLOWED', http_status: null, reason: 'rules', crawl_delay_ms: DELAY }), 2150);
    expect((await firstRelease(fs, 2150, 10_000))!.at).toBe(2150 + DELAY);
  });
});

describe('FrontierState: operator blocks', () => {
  const blockRow = (until: number): HostPolicyMsg => ({ host: 'a.test', field: 'block', updated_at: 0, blocked_until: until, reason: 'complaint', min_delay_ms: null });

  it('never releases a blocked host before the block expires', async () => {
    const table = new HostPolicyTable();
    table.apply('a.test|block', blockRow(50_000));
    const fs = await withUrls('a.test', 1, POLICY, table);
    await fs.onCandidate(cand('http://b.test/'), 0);
    expect((await fs.tick(0)).fetches.map((f) => f.host)).toEqual(['b.test']);
    expect((await firstRelease(fs, 0, 60_000, 100))!.at).toBe(50_000);
  });

  it('a lifted block (tombstone) releases the host at once', async () => {
    const table = new HostPolicyTable();
    table.apply('a.test|block', blockRow(1e12));
    const fs = await withUrls('a.test', 1, POLICY, table);
    expect((await fs.tick(10)).fetches).toEqual([]);
    table.apply('a.test|block', null);
    fs.onPolicyChange('a.test', 20);
    expect((await fs.tick(20)).fetches).toHaveLength(1);
  });

  it("a fetcher's REFUSED 'blocked' re-queues the URL (no attempt spent) until the block ends", async () => {
    const table = new HostPolicyTable();
    const fs = await withUrls('a.test', 1, POLICY, table);
    const f = (await fs.tick(0)).fetches[0];
    table.apply('a.test|block', blockRow(90_000));
    const e = await fs.onStatus(status(f, { finished_at: 10, outcome: 'REFUSED', http_status: null, reason: 'blocked' }), 10);
    expect(e.rows[0]).toMatchObject({ state: 'QUEUED', attempts: 0, reason: 'blocked' });
    expect((await firstRelease(fs, 0, 100_000, 100))!.at).toBe(90_000);
  });

  it("a fetcher's REFUSED 'backoff' (a replayed lease inside the host's window) re-queues the URL, no attempt spent", async () => {
    const fs = await withUrls('a.test', 1);
    const f = (await fs.tick(0)).fetches[0];
    const e = await fs.onStatus(status(f, { finished_at: 10, outcome: 'REFUSED', http_status: null, reason: 'backoff' }), 10);
    expect(e.rows[0]).toMatchObject({ state: 'QUEUED', attempts: 0, reason: 'backoff' });
  });

  it("REFUSED 'opted-out' is final", async () => {
    const fs = await withUrls('a.test', 1);
    const f = (await fs.tick(0)).fetches[0];
    expect((await fs.onStatus(status(f, { finished_at: 10, outcome: 'REFUSED', http_status: null, reason: 'opted-out' }), 10)).rows[0].state).toBe('DEAD');
  });
});

describe('FrontierState: durable back-off (crash and restart)', () => {
  it('a restarted frontier restores the Retry-After window and the gap before releasing anything', async () => {
    const fs = await withUrls('a.test', 3);
    const rows = new Map<string, UrlStateMsg>();
    const keep = (e: { rows: UrlStateMsg[] }): void => e.rows.forEach((r) => rows.set(r.url, r));
    const f = (await fs.tick(0)).fetches[0];
    const e = await fs.onStatus(status(f, { finished_at: 1000, outcome: 'FAILED', http_status: 429, retry_after_ms: 120_000 }), 1000);
    keep(e);
    const policy = e.policies![0];

    // kill -9 at t=2000; the new instance replays crawl.urls and crawl.host-policy.
    const again = await restartedFrontier(
      POLICY, ids(), [0, 1, 2].map((i) => rows.get(`http://a.test/${i}`) ?? { ...e.rows[0], url: `http://a.test/${i}`, state: 'QUEUED', attempts: 0, next_due_at: null }), 2000,
    );
    again.restoreBackoff(policy, 2000);
    expect((await firstRelease(again, 2000, 130_000, 50))!.at).toBe(121_000);
  });

  it('a host with a long gap (slow host) waits that gap after a restart, not just the minimum', async () => {
    const fs = await withUrls('a.test', 2);
    const f = (await fs.tick(0)).fetches[0];
    const e = await fs.onStatus(status(f, { finished_at: 3000, response_ms: 2000 }), 3000);
    expect(e.policies).toEqual([expect.objectContaining({ gap_ms: 20_000, failures: 0 })]);
    const again = await testFrontier(POLICY, ids());
    await again.onCandidate(cand('http://a.test/1'), 4000);
    again.restoreBackoff(e.policies![0], 4000);
    // 20 s written, so the gap in force is at most 24 s (it is rewritten once it moves by 20%).
    expect((await firstRelease(again, 4000, 40_000, 100))!.at).toBe(28_000);
  });

  it('after a restart the host waits the gap it may have been given since the row was written', async () => {
    // A slow response wrote 2,520 ms; a slightly slower one then called for 2,530 ms, within 20%
    // of the row, so no row was written. The host is handed over just as that response ends.
    const fs = await withUrls('a.test', 3);
    const f0 = (await fs.tick(0)).fetches[0];
    const written = (await fs.onStatus(status(f0, { finished_at: 1000, response_ms: 252 }), 1000)).policies![0];
    expect(written).toEqual(expect.objectContaining({ gap_ms: 2520 }));
    const f1 = (await firstRelease(fs, 1000, 10_000, 10))!.fetch;
    expect((await fs.onStatus(status(f1, { finished_at: 5000, response_ms: 253 }), 5000)).policies).toBeUndefined();
    const again = await testFrontier(POLICY, ids());
    await again.onCandidate(cand('http://a.test/2'), 5000);
    again.restoreBackoff(written, 5000);
    expect((await firstRelease(again, 5000, 20_000, 1))!.at).toBeGreaterThanOrEqual(5000 + 2530);
  });

  it('a gap is written when it grows past what the last row allows, not when it shrinks', async () => {
    // 10x the response time: 1,300 ms, then 1,000, 1,300, 1,000 (a busy machine's noise), then 2,000.
    const fs = await withUrls('a.test', 6);
    let t = 0;
    const written: Array<number | null> = [];
    for (const ms of [130, 100, 130, 100, 130, 200]) {
      const f = (await firstRelease(fs, t, 10_000))!;
      t = f.at + 5;
      written.push((await fs.onStatus(status(f.fetch, { finished_at: t, response_ms: ms }), t)).policies?.[0]?.gap_ms ?? null);
    }
    // 1,300 > 1.2 x 1,000 (nothing written yet); 2,000 > 1.2 x 1,300. The old rule (a move of
    // more than 20% either way) wrote all six.
    expect(written).toEqual([1300, null, null, null, null, 2000]);
  });

  it('a host whose gap was never written (within 20% of the minimum) still waits it after a hand-over', async () => {
    const fs = await withUrls('a.test', 2);
    const f = (await fs.tick(0)).fetches[0];
    const rows = new Map<string, UrlStateMsg>();
    // A 115 ms response calls for 1,150 ms: within 20% of the 1 s minimum, so no row.
    const e = await fs.onStatus(status(f, { finished_at: 3000, response_ms: 115 }), 3000);
    expect(e.policies).toBeUndefined();
    for (const r of e.rows) rows.set(r.url, r);
    // The host moves to another frontier at once; it has the URL table and no host-policy row.
    const again = await restartedFrontier(POLICY, ids(), [rows.get('http://a.test/0')!, { ...rows.get('http://a.test/0')!, url: 'http://a.test/1', state: 'QUEUED', fetched_at: null }], 3000);
    expect((await firstRelease(again, 3000, 5000))!.at).toBeGreaterThanOrEqual(3000 + 1150);
  });

  it('the stage writes backoff rows to crawl.host-policy and restores them from it', async () => {
    let clock = 0;
    const dir = mkdtempSync(join(tmpdir(), 'frontier-stage-'));
    const ctx = { now: () => clock, log: pino({ level: 'silent' }) };
    const changelog = new MemoryChangelog();
    const journal = (outs: OutRecord[]): void => outs.filter((o) => o.topic === 'urls').forEach((o) => changelog.append(o.key, o.host, o.value as UrlStateMsg | null));
    try {
      const stage = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock });
      expect(stage.restoreFrom).toEqual(['hostPolicy', 'feeds']);
      expect(stage.changelog).toBe('urls');
      expect(stage.globalTables).toEqual(['hostPolicy', 'optout']);
      await stage.restoreChangelog!([0], changelog, ctx);
      journal(await stage.handleBatch!([{ topic: 'frontier', partition: 0, offset: 0, key: 'a.test', value: cand('http://a.test/'), timestamp: 0 }], ctx));
      const out = await stage.tick!(ctx);
      journal(out);
      const f = out.find((o) => o.topic === 'fetch')!.value as FetchRequestMsg;
      clock = 500;
      const res = await stage.handleBatch!(
        [{ topic: 'fetchStatus', partition: 0, offset: 0, key: 'a.test', value: status(f, { finished_at: 500, outcome: 'FAILED', http_status: 503, retry_after_ms: 60_000 }), timestamp: 0 }],
        ctx,
      );
      journal(res);
      const pol = res.find((o) => o.topic === 'hostPolicy')!;
      expect(pol.key).toBe('a.test|backoff');
      await stage.close!();

      clock = 1000;
      const restarted = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock });
      await restarted.restoreChangelog!([0], changelog, ctx);
      restarted.restore!({ partition: 0, key: pol.key, value: pol.value }, 'hostPolicy');
      expect(restarted.state.host('a.test')!.nextAt).toBe(60_500);
      expect((await restarted.state.row('http://a.test/'))).toMatchObject({ state: 'FAILED', attempts: 1 });
      await restarted.close!();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
