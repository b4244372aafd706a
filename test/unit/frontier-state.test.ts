import type { FrontierState, FrontierPolicy } from '../../processors/frontier-state';
import { restartedFrontier, testFrontier } from '../support/frontier';
import { partitionForHost } from '../../lib/partitioner';
import type { CandidateMsg, FetchOutcome, FetchRequestMsg, FetchStatusMsg, UrlStateMsg } from '../../lib/messages';
import { rng } from '../support/rng';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { frontierStage } from '../../processors/frontier';
import type { InRecord, OutRecord } from '../../runtime/stage';
import { MemoryChangelog } from '../support/memory-changelog';

const POLICY: FrontierPolicy = {
  minHostDelayMs: 1000,
  maxCrawlDelayMs: 10_000,
  responseTimeFactor: 10,
  leaseMs: 60_000,
  retryBackoffMs: [5_000, 10_000, 20_000],
  maxAttempts: 4,
};

function leaseIds(): () => string {
  let n = 0;
  return () => `L${++n}`;
}

function cand(url: string, host = new URL(url).hostname, depth = 0): CandidateMsg {
  return { url, host, depth, discovered_at: 0, source_url: null };
}

function statusFor(
  f: FetchRequestMsg,
  fields: Partial<FetchStatusMsg> & { finished_at: number },
): FetchStatusMsg {
  return {
    url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null,
    started_at: fields.finished_at, response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, ...fields,
  };
}

function row(url: string, fields: Partial<UrlStateMsg>): UrlStateMsg {
  return {
    url, host: new URL(url).hostname, state: 'QUEUED', depth: 0, discovered_at: 0, updated_at: 0, lease_id: null,
    lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null, ...fields,
  };
}

/** The earliest time >= from (stepping by 1 ms, bounded) at which tick releases a fetch. */
async function firstReleaseAt(fs: FrontierState, from: number, limit: number): Promise<{ at: number; fetch: FetchRequestMsg } | null> {
  for (let t = from; t <= from + limit; t++) {
    const e = await fs.tick(t);
    if (e.fetches.length > 0) return { at: t, fetch: e.fetches[0] };
  }
  return null;
}

describe('FrontierState: release and politeness', () => {
  it('queues candidates and releases at most one URL per host per tick', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    const e1 = await fs.onCandidate(cand('http://a.test/1'), 0);
    expect(e1.rows).toHaveLength(1);
    expect(e1.rows[0]).toMatchObject({ state: 'QUEUED', url: 'http://a.test/1', host: 'a.test', attempts: 0 });
    await fs.onCandidate(cand('http://a.test/2'), 0);
    await fs.onCandidate(cand('http://b.test/1'), 0);
    await fs.onCandidate(cand('http://c.test/1'), 0);
    expect(fs.stats()).toMatchObject({ urls: 4, queued: 4, leased: 0, hosts: 3 });

    const t = await fs.tick(0);
    expect(t.fetches.map((f) => f.host).sort()).toEqual(['a.test', 'b.test', 'c.test']);
    expect(t.fetches.find((f) => f.host === 'a.test')!.url).toBe('http://a.test/1'); // FIFO per host
    expect(t.rows.every((r) => r.state === 'LEASED')).toBe(true);
    expect(t.fetches[0]).toMatchObject({ attempt: 1, lease_expires_at: POLICY.leaseMs });
    expect(fs.stats()).toMatchObject({ queued: 1, leased: 3 });
    // a.test has one in flight: nothing else for it, however late.
    expect((await fs.tick(1_000_000)).fetches).toEqual([]);
  });

  it('maxFetches caps a tick', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    for (const h of ['a', 'b', 'c', 'd']) await fs.onCandidate(cand(`http://${h}.test/`), 0);
    expect((await fs.tick(0, 2)).fetches).toHaveLength(2);
    expect((await fs.tick(0, 10)).fetches).toHaveLength(2);
  });

  it('drops duplicate candidates by the URL table', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    expect(await fs.onCandidate(cand('http://a.test/1'), 5)).toEqual({ rows: [], fetches: [] });
    expect(fs.stats()).toMatchObject({ urls: 1, queued: 1 });
  });

  // gap = max(minHostDelayMs, min(crawlDelay, maxCrawlDelayMs), factor * response_ms, retry_after)
  it.each<[string, Partial<FetchStatusMsg>, number]>([
    ['min host delay', {}, 1000],
    ['crawl delay', { crawl_delay_ms: 3000 }, 3000],
    ['crawl delay capped', { crawl_delay_ms: 999_999 }, 10_000],
    ['response time x factor', { response_ms: 250 }, 2500],
    ['retry-after', { retry_after_ms: 7000, outcome: 'FAILED', http_status: 503 }, 7000],
    ['largest wins', { crawl_delay_ms: 2000, response_ms: 400, retry_after_ms: 3000 }, 4000],
  ])('next URL of a host waits finish + %s', async (_name, fields, gap) => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.onCandidate(cand('http://a.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const finish = 500;
    await fs.onStatus(statusFor(f, { ...fields, finished_at: finish, stored: false }), 600);
    const next = await firstReleaseAt(fs, 600, 20_000);
    expect(next).not.toBeNull();
    expect(next!.at).toBe(finish + gap);
    expect(next!.fetch.url).toBe('http://a.test/2');
  });

  it('a status received after finish + delay releases at receipt time, not before', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.onCandidate(cand('http://a.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    await fs.onStatus(statusFor(f, { finished_at: 100, stored: false }), 5000);
    expect((await fs.tick(5000)).fetches.map((x) => x.url)).toEqual(['http://a.test/2']);
  });

  it('early status frees the host but keeps the URL leased; the final one settles it', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.onCandidate(cand('http://a.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const early = await fs.onStatus(statusFor(f, { finished_at: 10, stored: false, sha256: 'h1' }), 10);
    expect(early.rows).toEqual([]);
    expect(fs.stats().leased).toBe(1);
    expect((await fs.row(f.url))!.state).toBe('LEASED');
    expect(fs.idle()).toBe(false);
    const [f2] = (await fs.tick(1010)).fetches;
    expect(f2.url).toBe('http://a.test/2');
    expect(fs.stats().leased).toBe(2);

    const fin = await fs.onStatus(
      statusFor(f, { finished_at: 10, stored: true, sha256: 'h1', etag: '"e"', warc_uri: 'file:///w.warc.gz', warc_offset: 42, warc_length: 99 }),
      2000,
    );
    expect(fin.rows).toHaveLength(1);
    expect(fin.rows[0]).toMatchObject({
      state: 'FETCHED', fetched_at: 10, sha256: 'h1', etag: '"e"', warc_uri: 'file:///w.warc.gz', warc_offset: 42, warc_length: 99,
      lease_id: null, lease_expires_at: null, attempts: 0, http_status: 200,
    });
    expect(fs.stats().leased).toBe(1);
    // The final status does not touch the host's politeness again (f2 is in flight).
    expect((await fs.tick(1_000_000)).fetches).toEqual([]);
  });

  it('a lease keeps its LEASED row: its final status settles the row without reading it back, as a restored lease (no kept row) is settled', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://k.test/1'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const leased = (await fs.row(f.url))!;
    expect(leased.state).toBe('LEASED');
    const store = fs.store(0)!;
    const reads = jest.spyOn(store, 'rows');
    const done = statusFor(f, { finished_at: 10, sha256: 'h1' });
    const fin = await fs.onStatus(done, 20);
    expect(reads).not.toHaveBeenCalled();
    reads.mockRestore();
    expect(fs.stats().leased).toBe(0);
    // The same answer to the same lease after a restart (the lease restored from its row, nothing kept) reads the row.
    const again = await restartedFrontier(POLICY, leaseIds(), [leased], 0);
    const reads2 = jest.spyOn(again.store(0)!, 'rows');
    const fin2 = await again.onStatus(done, 20);
    expect(reads2).toHaveBeenCalled();
    expect(fin2.rows).toEqual(fin.rows);
    expect(fin.rows[0]).toMatchObject({ state: 'FETCHED', sha256: 'h1', lease_id: null, fetched_at: 10 });
    expect(await fs.row(f.url)).toEqual(fin.rows[0]);
  });

  it('stale and duplicate statuses are ignored', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.onCandidate(cand('http://a.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    // Wrong lease id: neither frees the host nor settles.
    expect(await fs.onStatus(statusFor({ ...f, lease_id: 'bogus' }, { finished_at: 1 }), 1)).toEqual({ rows: [], fetches: [] });
    expect((await fs.tick(50_000)).fetches).toEqual([]); // before the lease (60 s) expires
    expect((await fs.row(f.url))!.state).toBe('LEASED');
    // Unknown URL.
    expect(await fs.onStatus(statusFor({ ...f, url: 'http://a.test/nope' }, { finished_at: 1 }), 1)).toEqual({ rows: [], fetches: [] });
    // The real one settles; a duplicate of it changes nothing.
    expect((await fs.onStatus(statusFor(f, { finished_at: 50_000 }), 50_000)).rows).toHaveLength(1);
    const [f2] = (await fs.tick(51_000)).fetches;
    expect(f2.url).toBe('http://a.test/2');
    expect(await fs.onStatus(statusFor(f, { finished_at: 50_000, outcome: 'FAILED' }), 51_500)).toEqual({ rows: [], fetches: [] });
    expect((await fs.row(f.url))!.state).toBe('FETCHED');
    // A duplicate early status of the old lease must not free the host while f2 is in flight.
    await fs.onCandidate(cand('http://a.test/3'), 51_500);
    await fs.onStatus(statusFor(f, { finished_at: 50_000, stored: false }), 51_600);
    expect((await fs.tick(100_000)).fetches).toEqual([]); // f2's lease runs until 111 000
  });

  it.each<[FetchOutcome, Partial<UrlStateMsg>]>([
    ['ROBOTS_DISALLOWED', { state: 'DISALLOWED' }],
    ['REFUSED', { state: 'DEAD' }],
    ['NOT_HTML', { state: 'FETCHED' }],
  ])('final %s settles the row', async (outcome, expected) => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const e = await fs.onStatus(statusFor(f, { finished_at: 5, outcome, reason: 'why' }), 5);
    expect(e.rows[0]).toMatchObject({ ...expected, reason: 'why', lease_id: null });
    expect(fs.idle()).toBe(true);
    expect((await fs.tick(10_000_000)).fetches).toEqual([]);
  });

  it('FAILED backs off 1st/2nd/3rd and is DEAD after maxAttempts', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    let now = 0;
    const seenAttempts: number[] = [];
    for (let i = 0; i < POLICY.maxAttempts; i++) {
      const rel = await firstReleaseAt(fs, now, 100_000);
      expect(rel).not.toBeNull();
      now = rel!.at;
      seenAttempts.push(rel!.fetch.attempt);
      const e = await fs.onStatus(statusFor(rel!.fetch, { finished_at: now, outcome: 'FAILED', http_status: 500, reason: 'http-500' }), now);
      const r = e.rows[0];
      expect(r.attempts).toBe(i + 1);
      if (i + 1 < POLICY.maxAttempts) {
        expect(r.state).toBe('FAILED');
        expect(r.next_due_at).toBe(now + POLICY.retryBackoffMs[Math.min(i, POLICY.retryBackoffMs.length - 1)]);
        expect(fs.stats().retrying).toBe(1);
        // Not re-queued before its due time.
        expect((await fs.tick(r.next_due_at! - 1)).fetches).toEqual([]);
        expect((await fs.row(r.url))!.state).toBe('FAILED');
      } else {
        expect(r.state).toBe('DEAD');
        expect(r.next_due_at).toBeNull();
      }
    }
    expect(seenAttempts).toEqual([1, 2, 3, 4]);
    expect((await fs.tick(now + 10_000_000)).fetches).toEqual([]);
    expect(fs.idle()).toBe(true);
  });

  it('retry_after longer than the back-off sets next_due_at', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const e = await fs.onStatus(statusFor(f, { finished_at: 0, outcome: 'FAILED', retry_after_ms: 60_000 }), 0);
    expect(e.rows[0].next_due_at).toBe(60_000);
    const rel = await firstReleaseAt(fs, 59_990, 100);
    expect(rel!.at).toBe(60_000);
  });

  it('ROBOTS_UNAVAILABLE is retried like a failure', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    const [f] = (await fs.tick(0)).fetches;
    const e = await fs.onStatus(statusFor(f, { finished_at: 0, outcome: 'ROBOTS_UNAVAILABLE', http_status: null }), 0);
    expect(e.rows[0]).toMatchObject({ state: 'FAILED', attempts: 1, next_due_at: 5000 });
  });

  it('an expired lease re-queues the URL at the front and the host waits a full delay', async () => {
    const fs = await testFrontier({ ...POLICY, leaseMs: 1000 }, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.onCandidate(cand('http://a.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    expect((await fs.tick(999)).fetches).toEqual([]);
    const exp = await fs.tick(1000);
    expect(exp.fetches).toEqual([]); // host waits minHostDelayMs from expiry
    expect(exp.rows).toEqual([expect.objectContaining({ url: f.url, state: 'QUEUED', attempts: 1, reason: 'lease-expired', lease_id: null })]);
    const rel = await firstReleaseAt(fs, 1001, 5000);
    expect(rel!.at).toBe(2000);
    expect(rel!.fetch.url).toBe('http://a.test/1');
    expect(rel!.fetch.attempt).toBe(2);
    expect(rel!.fetch.lease_id).not.toBe(f.lease_id);
    // The old lease's late answer is stale.
    expect(await fs.onStatus(statusFor(f, { finished_at: 2001 }), 2001)).toEqual({ rows: [], fetches: [] });
  });

  it('a lease expiring after maxAttempts makes the URL DEAD', async () => {
    const fs = await testFrontier({ ...POLICY, leaseMs: 10, maxAttempts: 1 }, leaseIds());
    await fs.onCandidate(cand('http://a.test/1'), 0);
    await fs.tick(0);
    const e = await fs.tick(10);
    expect(e.rows[0]).toMatchObject({ state: 'DEAD', attempts: 1 });
    expect(fs.idle()).toBe(true);
  });
});

describe('FrontierState: restore and retain', () => {
  it('restores rows; hosts wait the longest gap they can have had without a host-policy row; LEASED blocks the host until its status', async () => {
    const now = 10_000;
    const fs = await restartedFrontier(POLICY, leaseIds(), [
      row('http://q.test/1', { state: 'QUEUED' }),
      row('http://l.test/1', { state: 'LEASED', lease_id: 'old', lease_expires_at: now + 50_000 }),
      row('http://l.test/2', { state: 'QUEUED' }),
      row('http://f.test/1', { state: 'FETCHED', sha256: 'abc' }),
      row('http://r.test/1', { state: 'FAILED', attempts: 1, next_due_at: now + 3000 }),
    ], now);
    expect(fs.stats()).toMatchObject({ urls: 5, queued: 2, leased: 1, retrying: 1 });

    // A gap up to 20% above minHostDelayMs (1 s) is never written to crawl.host-policy.
    expect((await fs.tick(now + 1199)).fetches).toEqual([]);
    expect((await fs.tick(now + 1200)).fetches.map((f) => f.url)).toEqual(['http://q.test/1']);
    // FETCHED is known: a candidate for it is dropped.
    expect((await fs.onCandidate(cand('http://f.test/1'), now + 1200)).rows).toEqual([]);
    // FAILED comes back at next_due_at.
    expect((await fs.tick(now + 2999)).fetches).toEqual([]);
    const r = await fs.tick(now + 3000);
    expect(r.fetches.map((f) => f.url)).toEqual(['http://r.test/1']);
    expect(r.fetches[0].attempt).toBe(2);
    // l.test blocked by the restored live lease...
    expect((await fs.tick(now + 40_000)).fetches).toEqual([]);
    // ...until its status arrives.
    const leased: FetchRequestMsg = {
      url: 'http://l.test/1', host: 'l.test', depth: 0, lease_id: 'old', lease_expires_at: now + 50_000, attempt: 1,
      prev_sha256: null, etag: null, last_modified: null,
    };
    await fs.onStatus(statusFor(leased, { finished_at: now + 40_000, stored: false }), now + 40_000);
    expect((await fs.tick(now + 40_999)).fetches).toEqual([]);
    expect((await fs.tick(now + 41_000)).fetches.map((f) => f.url)).toEqual(['http://l.test/2']);
  });

  it('restore order does not matter: a QUEUED row before the LEASED one of its host still waits for the lease', async () => {
    const fs = await restartedFrontier(POLICY, leaseIds(), [
      row('http://l.test/2', { state: 'QUEUED' }),
      row('http://l.test/1', { state: 'LEASED', lease_id: 'old', lease_expires_at: 30_000 }),
    ], 0);
    for (const t of [1000, 10_000, 29_999]) expect((await fs.tick(t)).fetches).toEqual([]);
    expect((await fs.tick(30_000)).fetches).toEqual([]); // expiry: the host waits a full delay
    expect(await firstReleaseAt(fs, 30_001, 5000)).toEqual({ at: 31_000, fetch: expect.objectContaining({ url: 'http://l.test/1' }) });
  });

  it('a restored lease that expires frees the host and re-queues its URL first', async () => {
    const fs = await restartedFrontier(POLICY, leaseIds(), [
      row('http://l.test/1', { state: 'LEASED', lease_id: 'old', lease_expires_at: 5000 }),
      row('http://l.test/2', { state: 'QUEUED' }),
    ], 0);
    expect((await fs.tick(4999)).fetches).toEqual([]);
    const e = await fs.tick(5000);
    expect(e.rows.map((r) => [r.url, r.state])).toEqual([['http://l.test/1', 'QUEUED']]);
    const rel = await firstReleaseAt(fs, 5001, 5000);
    expect(rel).toEqual({ at: 6000, fetch: expect.objectContaining({ url: 'http://l.test/1', attempt: 2 }) });
  });

  it('detach() drops the partitions no longer owned and never releases their URLs afterwards', async () => {
    const P = 8;
    const fs = await testFrontier(POLICY, leaseIds(), { partitions: P });
    const keep = partitionForHost('keep.test', P);
    const [drop, gone] = ['drop.test', 'gone.test', 'other.test', 'more.test', 'else.test'].filter((h) => partitionForHost(h, P) !== keep);
    await fs.onCandidate(cand('http://keep.test/1'), 0);
    await fs.onCandidate(cand(`http://${drop}/1`), 0);
    await fs.onCandidate(cand(`http://${drop}/2`), 0);
    await fs.onCandidate(cand(`http://${gone}/1`), 0);
    const [goneFetch] = (await fs.tick(0, 10)).fetches.filter((f) => f.host === gone);
    await fs.tick(0, 10);
    for (const s of (await fs.detach((p) => p === keep)).values()) await s.close();
    expect(fs.owned()).toEqual([keep]);
    expect(fs.stats()).toMatchObject({ urls: 1, hosts: 1, leased: 1 });
    // Nothing for the dropped hosts: not on expiry, not after any amount of time.
    for (const t of [1000, 60_000, 120_000, 10_000_000]) {
      const e = await fs.tick(t);
      expect(e.fetches.filter((f) => f.host !== 'keep.test')).toEqual([]);
      expect(e.rows.filter((r) => r.host !== 'keep.test')).toEqual([]);
    }
    expect(await fs.onStatus(statusFor(goneFetch, { finished_at: 5 }), 5)).toEqual({ rows: [], fetches: [] });
    expect(await fs.onCandidate(cand(`http://${drop}/3`), 5)).toEqual({ rows: [], fetches: [] });
  });

  it('idle() is true only with nothing queued or leased (a parked retry does not count)', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    expect(fs.idle()).toBe(true);
    await fs.onCandidate(cand('http://a.test/1'), 0);
    expect(fs.idle()).toBe(false);
    const [f] = (await fs.tick(0)).fetches;
    expect(fs.idle()).toBe(false);
    await fs.onStatus(statusFor(f, { finished_at: 0, stored: false, outcome: 'FAILED' }), 0);
    expect(fs.idle()).toBe(false); // still leased until the final status
    await fs.onStatus(statusFor(f, { finished_at: 0, outcome: 'FAILED' }), 0);
    expect(fs.stats().retrying).toBe(1);
    expect(fs.idle()).toBe(true); // parked until 5000
    const due = await fs.tick(5000);
    expect(due.rows.map((r) => r.state)).toEqual(['QUEUED', 'LEASED']);
    expect(fs.idle()).toBe(false);
    await fs.onStatus(statusFor(due.fetches[0], { finished_at: 5000 }), 5000);
    expect(fs.idle()).toBe(true);
  });
});

describe('FrontierState: randomized politeness property', () => {
  it.each([1, 2, 3, 42, 1234])('seed %i: never two outstanding requests to a host, gaps respected', async (seed) => {
    const rnd = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const policy: FrontierPolicy = { ...POLICY, leaseMs: 20_000, maxAttempts: 3, retryBackoffMs: [2000, 4000] };
    const fs = await testFrontier(policy, leaseIds());
    const hosts = Array.from({ length: 20 }, (_, i) => `h${i}.test`);
    // Per host: the lease currently holding the host (until its first status or expiry), and
    // the earliest time the next fetch may go out.
    const holder = new Map<string, { lease: string; expiresAt: number }>();
    const earliest = new Map<string, number>();
    /** Outstanding leases (URL still leased), with whether the early status was sent. */
    const open = new Map<string, { f: FetchRequestMsg; early: boolean; issuedAt: number }>();
    let now = 0;
    let released = 0;

    const check = (fetches: FetchRequestMsg[]): void => {
      for (const f of fetches) {
        const h = holder.get(f.host);
        if (h) {
          // Only allowed once the holder's lease has expired (then a full delay applies).
          expect(now).toBeGreaterThanOrEqual(h.expiresAt + policy.minHostDelayMs);
        }
        expect(now).toBeGreaterThanOrEqual(earliest.get(f.host) ?? 0);
        holder.set(f.host, { lease: f.lease_id, expiresAt: f.lease_expires_at });
        open.set(f.lease_id, { f, early: false, issuedAt: now });
        released++;
      }
    };

    for (let step = 0; step < 3000; step++) {
      const r = rnd();
      if (r < 0.25) {
        const h = pick(hosts);
        await fs.onCandidate(cand(`http://${h}/p${Math.floor(rnd() * 40)}`, h), now);
      } else if (r < 0.6 && open.size > 0) {
        const leases = [...open.values()];
        const o = pick(leases);
        const outcome = pick<FetchOutcome>(['FETCHED', 'FETCHED', 'FAILED', 'NOT_HTML', 'ROBOTS_DISALLOWED', 'REFUSED']);
        const stored = o.early ? true : rnd() < 0.5;
        const responseMs = Math.floor(rnd() * 300);
        const crawlDelay = rnd() < 0.2 ? Math.floor(rnd() * 20_000) : 0;
        const retryAfter = outcome === 'FAILED' && rnd() < 0.3 ? Math.floor(rnd() * 5000) : null;
        const finished = Math.max(o.issuedAt, now - Math.floor(rnd() * 200));
        const s = statusFor(o.f, {
          finished_at: finished, stored, outcome, response_ms: responseMs, crawl_delay_ms: crawlDelay, retry_after_ms: retryAfter,
        });
        const h = holder.get(o.f.host);
        const live = ((await fs.row(o.f.url))?.lease_id ?? null) === o.f.lease_id;
        await fs.onStatus(s, now);
        if (live && h?.lease === o.f.lease_id && !o.early) {
          holder.delete(o.f.host);
          const gap = Math.max(policy.minHostDelayMs, Math.min(crawlDelay, policy.maxCrawlDelayMs), policy.responseTimeFactor * responseMs, retryAfter ?? 0);
          earliest.set(o.f.host, Math.max(earliest.get(o.f.host) ?? 0, finished + gap));
        }
        if (stored || !live) open.delete(o.f.lease_id);
        else o.early = true;
      } else {
        now += Math.floor(rnd() * 1500);
        // Expired holders: the host may go again a full delay after expiry.
        for (const [host, h] of holder) {
          if (h.expiresAt <= now && (open.get(h.lease)?.early ?? true) === false) {
            earliest.set(host, Math.max(earliest.get(host) ?? 0, h.expiresAt + policy.minHostDelayMs));
          }
        }
        for (const [id, o] of open) if (o.f.lease_expires_at <= now) open.delete(id);
        for (const [host, h] of holder) if (h.expiresAt <= now) holder.delete(host);
        const e = await fs.tick(now);
        check(e.fetches);
        // Every emitted fetch row is LEASED with the same lease id.
        for (const f of e.fetches) expect(await fs.row(f.url)).toMatchObject({ state: 'LEASED', lease_id: f.lease_id });
      }
    }
    expect(released).toBeGreaterThan(50); // the run exercised the scheduler
    const s = fs.stats();
    expect(s.queued).toBeGreaterThanOrEqual(0);
    expect(s.leased).toBeLessThanOrEqual(s.urls);
  }, 60_000); // 3,000 steps, each through the store: 2-5 s on a busy 2-core machine

  it('idle(now) parks URLs behind a host that may not be contacted for over a minute (a long Retry-After)', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidate(cand('http://slow.test/1'), 0);
    await fs.onCandidate(cand('http://slow.test/2'), 0);
    const [f] = (await fs.tick(0)).fetches;
    await fs.onStatus(statusFor(f, { finished_at: 10, stored: false, outcome: 'FAILED', http_status: 429, retry_after_ms: 120_000 }), 10);
    await fs.onStatus(statusFor(f, { finished_at: 10, outcome: 'FAILED', http_status: 429, retry_after_ms: 120_000 }), 10);
    expect(fs.idle()).toBe(false); // without a clock every queued URL is work
    expect(fs.idle(20)).toBe(true); // the host's next request is 2 minutes away
    expect(fs.parked(20)).toBe(1);
    expect(fs.idle(70_000)).toBe(false); // within a minute of its time it is work again
    await fs.onCandidate(cand('http://other.test/1'), 20);
    expect(fs.idle(20)).toBe(false); // another host is due now
  });
});

describe('FrontierState: unfetched URLs expire', () => {
  it('drops a URL never fetched urlTtlMs after its discovery, as a tombstone; fetched and leased ones stay', async () => {
    const DAY = 86_400_000;
    const fs = await testFrontier({ ...POLICY, urlTtlMs: 6 * DAY, leaseMs: 10 * DAY }, leaseIds());
    const at = (url: string, t: number): CandidateMsg => ({ ...cand(url), discovered_at: t });
    await fs.onCandidate(at('http://a.test/1-fetched', 0), 0);
    await fs.onCandidate(at('http://a.test/2-dead', 0), 1);
    await fs.onCandidate(at('http://b.test/leased', 0), 0);
    await fs.onCandidate(at('http://c.test/young', 5 * DAY), 5 * DAY);
    const first = (await fs.tick(0)).fetches;
    const a1 = first.find((f) => f.host === 'a.test')!;
    expect(a1.url).toBe('http://a.test/1-fetched');
    await fs.onStatus(statusFor(a1, { finished_at: 10 }), 10);
    const a2 = (await fs.tick(2000)).fetches;
    expect(a2.map((f) => f.url)).toEqual(['http://a.test/2-dead']);
    await fs.onStatus(statusFor(a2[0], { finished_at: 2000, outcome: 'REFUSED', reason: 'bad' }), 2000);
    // Day 6 and a sweep step later: the DEAD, never fetched URL goes; the fetched one, the one out
    // to a fetcher and the one found a day ago stay.
    const e = await fs.tick(6 * DAY + 5000);
    expect(e.expired).toEqual([{ url: 'http://a.test/2-dead', host: 'a.test' }]);
    expect(await fs.row('http://a.test/2-dead')).toBeUndefined();
    expect((await fs.row('http://a.test/1-fetched'))?.fetched_at).toBe(10); // due for its recrawl, leased again
    expect((await fs.row('http://b.test/leased'))?.state).toBe('LEASED');
    expect((await fs.row('http://c.test/young'))?.state).toBe('LEASED'); // leased at day 5 (its host was free)
    // A candidate for the expired URL is new again.
    expect((await fs.onCandidate(at('http://a.test/2-dead', 6 * DAY), 6 * DAY + 6000)).rows).toHaveLength(1);
    expect(fs.stats().byState).toEqual({ FETCHED: 0, LEASED: 3, QUEUED: 1, DEAD: 0 });
  });

  it('a queued URL past its time leaves its host\'s queue too', async () => {
    const DAY = 86_400_000;
    const fs = await testFrontier({ ...POLICY, urlTtlMs: DAY, leaseMs: 10 * DAY }, leaseIds());
    for (let i = 0; i < 3; i++) await fs.onCandidate({ ...cand(`http://q.test/${i}`), discovered_at: 0 }, 0);
    await fs.tick(0); // /0 leased
    expect(fs.stats().queued).toBe(2);
    const e = await fs.tick(DAY + 2000);
    expect(e.expired?.map((x) => x.url).sort()).toEqual(['http://q.test/1', 'http://q.test/2']);
    expect(fs.stats()).toMatchObject({ queued: 0, leased: 1 });
    expect((await fs.tick(DAY + 10_000)).fetches).toEqual([]);
  });
});

describe('FrontierState: pipelined intake', () => {
  it('batches decided while earlier ones are still being written queue every URL exactly once', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    const rnd = rng(9);
    const urls = Array.from({ length: 400 }, (_, i) => `http://h${i % 23}.test/p${i}`);
    // 60 batches in flight at once, each of 40 URLs drawn with repeats from the same 400, with ticks between.
    const pending: Array<Promise<{ rows: UrlStateMsg[] }>> = [];
    for (let b = 0; b < 60; b++) {
      pending.push(fs.onCandidates(Array.from({ length: 40 }, () => cand(urls[Math.floor(rnd() * urls.length)])), b));
      if (b % 7 === 0) pending.push(fs.tick(b));
    }
    const rows = (await Promise.all(pending)).flatMap((e) => e.rows).filter((r) => r.state === 'QUEUED');
    const firsts = new Set(rows.map((r) => r.url));
    expect(rows).toHaveLength(firsts.size); // no URL queued twice
    const stats = fs.stats();
    expect(stats.urls).toBe(firsts.size);
    expect(stats.queued + stats.leased).toBe(firsts.size);
    for (const u of firsts) expect(await fs.row(u)).toBeDefined();
  });
});

describe('FrontierState: rows the store has and the changelog may not', () => {
  it('a batch\'s new rows stay unwritten until that batch is produced, however often they are looked up, and move with a batch that emits them again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'unjournaled-'));
    const ctx = { now: () => 600_000, log: pino({ level: 'silent' }) };
    const stage = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => 600_000 });
    await stage.restoreChangelog!([0], new MemoryChangelog(), ctx);
    const candRec = (url: string): InRecord => ({ topic: 'frontier', partition: 0, offset: 0, key: 'a.test', value: cand(url), timestamp: 0 });
    const urlRows = (outs: OutRecord[]): string[] => outs.filter((o) => o.topic === 'urls').map((o) => o.key);
    const batch = async (...urls: string[]): Promise<OutRecord[]> => stage.handleBatch!(urls.map(candRec), ctx);
    try {
      // Two batches emitted; only the second is written to the log.
      expect(urlRows(await batch('http://a.test/1', 'http://a.test/2'))).toEqual(['http://a.test/1', 'http://a.test/2']);
      await stage.produced!(await batch('http://a.test/3'));
      // /3 is journaled: a plain duplicate, looked up (and not found) in the first batch's rows, over and over.
      for (let i = 0; i < 12; i++) expect(urlRows(await batch('http://a.test/3'))).toEqual([]);
      // The first batch's rows were never written: emitted again, now by the batch that found them.
      const again = await batch('http://a.test/1');
      expect(urlRows(again)).toEqual(['http://a.test/1']);
      expect(urlRows(await batch('http://a.test/2', 'http://a.test/3'))).toEqual(['http://a.test/2']);
      // The batch that emitted /1 again is written: /1 is done, /2 (its batch not written) is not.
      await stage.produced!(again);
      expect(urlRows(await batch('http://a.test/1', 'http://a.test/2'))).toEqual(['http://a.test/2']);
      // A tick's records, produced, change nothing.
      await stage.produced!(await stage.tick!(ctx));
      expect(urlRows(await batch('http://a.test/2'))).toEqual(['http://a.test/2']);
    } finally {
      await stage.close!();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a candidate found again writes the row again when it was queued just before a restore, or is still unwritten by the runtime', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reassert-'));
    const ctx = { now: () => clock, log: pino({ level: 'silent' }) };
    let clock = 600_000;
    const changelog = new MemoryChangelog();
    const stage = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock });
    await stage.restoreChangelog!([0], changelog, ctx);
    const candRec = (url: string): InRecord => ({ topic: 'frontier', partition: 0, offset: 0, key: 'a.test', value: cand(url), timestamp: 0 });
    const urlRows = (outs: OutRecord[]): string[] => outs.filter((o) => o.topic === 'urls').map((o) => o.key);
    // Emitted, and the runtime failed to write it (no produced()): found again, written again.
    const first = await stage.handleBatch!([candRec('http://a.test/1')], ctx);
    expect(urlRows(first)).toEqual(['http://a.test/1']);
    expect(urlRows(await stage.handleBatch!([candRec('http://a.test/1')], ctx))).toEqual(['http://a.test/1']);
    // Once written, a candidate for it is a plain duplicate.
    await stage.produced!(await stage.handleBatch!([candRec('http://a.test/1')], ctx));
    expect(urlRows(await stage.handleBatch!([candRec('http://a.test/1')], ctx))).toEqual([]);
    // The process dies with /2 in its store only (the changelog never got it); /old was queued long before.
    await stage.handleBatch!([candRec('http://a.test/2')], ctx);
    await stage.close!();
    changelog.append('http://a.test/old', 'a.test', { ...(first[0].value as UrlStateMsg), url: 'http://a.test/old', updated_at: 0 });
    clock += 60_000;
    const again = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock });
    await again.restoreChangelog!([0], changelog, ctx);
    // Redelivered after the restart: /2 (queued a minute before the restore) is written again; /old is not.
    expect(urlRows(await again.handleBatch!([candRec('http://a.test/2'), candRec('http://a.test/old')], ctx))).toEqual(['http://a.test/2']);
    await again.close!();
    rmSync(dir, { recursive: true, force: true });
  });
});
