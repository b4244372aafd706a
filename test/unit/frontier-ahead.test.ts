/**
 * Fetchers' answers and the tick go ahead of the frontier's queued intake batches
 * (FrontierState.serialAhead): they start at the next boundary between operations instead of
 * behind every candidate batch queued before them, keep their order among themselves, and lose
 * no URL nor lease a host twice.
 */
import type { FrontierPolicy } from '../../processors/frontier-state';
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg, UrlStateMsg } from '../../lib/messages';
import { testFrontier } from '../support/frontier';
import { rng } from '../support/rng';

const POLICY: FrontierPolicy = {
  minHostDelayMs: 1000,
  maxCrawlDelayMs: 10_000,
  responseTimeFactor: 10,
  leaseMs: 600_000,
  retryBackoffMs: [5_000],
  maxAttempts: 4,
};

function leaseIds(): () => string {
  let n = 0;
  return () => `L${++n}`;
}

function cand(url: string): CandidateMsg {
  return { url, host: new URL(url).hostname, depth: 0, discovered_at: 0, source_url: null };
}

function status(f: FetchRequestMsg, stored: boolean, finishedAt: number): FetchStatusMsg {
  return {
    url: f.url, host: f.host, lease_id: f.lease_id, stored, outcome: 'FETCHED', http_status: 200, reason: null,
    started_at: finishedAt, response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, finished_at: finishedAt,
  };
}

/** `n` batches of `size` new URLs each, on hosts of their own (`tag` keeps them apart). */
function batches(tag: string, n: number, size: number): CandidateMsg[][] {
  return Array.from({ length: n }, (_, b) => Array.from({ length: size }, (_, i) => cand(`http://${tag}${b}-${i % 7}.test/p${i}`)));
}

describe('FrontierState: answers and ticks ahead of the intake', () => {
  it('a tick called behind queued candidate batches runs before the batches that have not begun, and releases what was written before it', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidates([cand('http://early.test/1'), cand('http://early.test/2')], 0);
    const order: string[] = [];
    const intake = batches('c', 40, 50).map((b, i) => fs.onCandidates(b, 0).then((e) => (order.push(`c${i}`), e)));
    const tick = fs.tick(0).then((e) => (order.push('tick'), e));
    const [t, ...rest] = await Promise.all([tick, ...intake]);
    // Not behind all 40: it went ahead of the batches queued before it that had not begun.
    expect(order.indexOf('tick')).toBeLessThan(order.length - 5);
    expect(order.filter((o) => o !== 'tick')).toEqual(intake.map((_, i) => `c${i}`)); // the intake keeps its order
    expect(t.fetches.map((f) => f.url)).toContain('http://early.test/1');
    for (const f of t.fetches) expect(await fs.row(f.url)).toMatchObject({ state: 'LEASED', lease_id: f.lease_id });
    // Every URL queued once, none lost.
    const queued = rest.flatMap((e) => e.rows).filter((r) => r.state === 'QUEUED');
    expect(new Set(queued.map((r) => r.url)).size).toBe(40 * 50);
    expect(fs.stats()).toMatchObject({ urls: 40 * 50 + 2, leased: t.fetches.length });
  });

  it('an answer behind queued candidate batches frees its host before those batches are read; a tick after it sees the host free', async () => {
    const fs = await testFrontier(POLICY, leaseIds());
    await fs.onCandidates([cand('http://a.test/1'), cand('http://a.test/2')], 0);
    const [f1] = (await fs.tick(0)).fetches;
    expect(f1.url).toBe('http://a.test/1');
    const order: string[] = [];
    const intake = batches('c', 40, 50).map((b, i) => fs.onCandidates(b, 0).then(() => order.push(`c${i}`)));
    // The early answer (host free, gap 1 s from 0), then a tick at 1,000 queued after it: in this order.
    const answered = fs.onStatuses([status(f1, false, 0)], 10).then(() => order.push('status'));
    const tick = fs.tick(1000).then((e) => (order.push('tick'), e));
    const [t] = await Promise.all([tick, answered, ...intake]);
    expect(order.indexOf('status')).toBeLessThan(order.indexOf('tick'));
    expect(order.indexOf('tick')).toBeLessThan(order.length - 5);
    expect(t.fetches.map((f) => f.url)).toContain('http://a.test/2');
    expect(await fs.row('http://a.test/1')).toMatchObject({ state: 'LEASED', lease_id: f1.lease_id }); // early: still leased
  });

  it.each([1, 7, 42])('seed %i: answers, ticks and intake interleaved unawaited lose no URL and never lease a host twice', async (seed) => {
    const rnd = rng(seed);
    const fs = await testFrontier(POLICY, leaseIds());
    const hosts = Array.from({ length: 30 }, (_, i) => `h${i}.test`);
    const known = new Set<string>();
    /** Per host, the lease out to a fetcher that has had no answer yet (the host is taken). */
    const out = new Map<string, FetchRequestMsg>();
    /** Leases answered early only (still LEASED), to be answered finally later. */
    const early: FetchRequestMsg[] = [];
    const fetched = new Set<string>();
    const leases = new Map<string, number>();
    let now = 0;
    const take = (fetches: FetchRequestMsg[]): void => {
      for (const f of fetches) {
        leases.set(f.url, (leases.get(f.url) ?? 0) + 1);
        expect(out.has(f.host)).toBe(false); // one request in flight a host
        out.set(f.host, f);
      }
    };
    for (let round = 0; round < 40; round++) {
      const ops: Array<Promise<unknown>> = [];
      const n = 2 + Math.floor(rnd() * 6);
      for (let b = 0; b < n; b++) {
        const cs = Array.from({ length: 20 }, () => cand(`http://${hosts[Math.floor(rnd() * hosts.length)]}/p${Math.floor(rnd() * 60)}`));
        for (const c of cs) known.add(c.url);
        ops.push(fs.onCandidates(cs, now));
        // Answers sent in this round are applied before the tick sent after them.
        if (rnd() < 0.5 && out.size > 0) {
          const f = [...out.values()][Math.floor(rnd() * out.size)];
          out.delete(f.host);
          const stored = rnd() < 0.5;
          if (stored) fetched.add(f.url);
          else early.push(f);
          ops.push(fs.onStatuses([status(f, stored, now)], now));
        }
        if (rnd() < 0.3 && early.length > 0) {
          const f = early.splice(Math.floor(rnd() * early.length), 1)[0];
          fetched.add(f.url);
          ops.push(fs.onStatuses([status(f, true, now)], now));
        }
        if (rnd() < 0.4) ops.push(fs.tick(now).then((e) => take(e.fetches)));
      }
      await Promise.all(ops);
      now += 1100;
    }
    // Drain: answer everything, release everything, until the frontier is idle.
    for (let i = 0; i < 500 && !fs.idle(); i++) {
      const answers = [...out.values(), ...early.splice(0)];
      out.clear();
      for (const f of answers) fetched.add(f.url);
      if (answers.length) await fs.onStatuses(answers.map((f) => status(f, true, now)), now);
      now += 1100;
      take((await fs.tick(now)).fetches);
    }
    expect(fs.idle()).toBe(true);
    // Every URL known was fetched exactly once and is FETCHED in the table.
    expect(fetched).toEqual(known);
    expect([...leases.values()].every((n) => n === 1)).toBe(true); // each leased once
    expect(leases.size).toBe(known.size);
    expect(fs.stats()).toMatchObject({ urls: known.size, queued: 0, leased: 0 });
    const rows = await Promise.all([...known].map((u) => fs.row(u)));
    expect(rows.every((r: UrlStateMsg | undefined) => r?.state === 'FETCHED')).toBe(true);
  }, 60_000);
});
