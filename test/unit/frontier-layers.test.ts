/**
 * Layered politeness (registered domain, IP), priority levels, the per-host budget and
 * recrawl scheduling in the frontier. An injected clock; real stores in a temporary folder.
 */
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg } from '../../lib/messages';
import { LayerGroups } from '../../processors/frontier-layers';
import { priorityLevel, recrawlIntervalMs } from '../../processors/frontier-schedule';
import type { FrontierState, FrontierPolicy, FrontierTuning } from '../../processors/frontier-state';
import { testFrontier } from '../support/frontier';

const BASE: FrontierPolicy = { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 600_000, retryBackoffMs: [5_000], maxAttempts: 5 };
const HOUR = 3600_000;
const DAY = 24 * HOUR;

function make(tuning: Partial<FrontierPolicy & FrontierTuning> = {}): Promise<FrontierState> {
  let n = 0;
  return testFrontier({ ...BASE, ...tuning }, () => `L${++n}`);
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

describe('LayerGroups', () => {
  it('caps requests in flight and spaces their starts; release wakes parked hosts', async () => {
    const g = new LayerGroups({ maxInflight: 2, minGapMs: 100 });
    expect(g.readyAt('d', 'x.d')).toBe(0);
    g.acquire('d', 0, 'x.d');
    expect(g.readyAt('d', 'y.d')).toBe(100);
    g.acquire('d', 100, 'y.d');
    expect(g.readyAt('d', 'z.d')).toBe(Infinity);
    g.park('d', 'x.d');
    g.park('d', 'y.d');
    expect(g.release('d').sort()).toEqual(['x.d', 'y.d']);
    expect(g.readyAt('d', 'x.d')).toBe(200);
    expect(g.readyAt('d', 'y.d')).toBe(0); // the last host again: its own gap governs
    expect(g.release('d')).toEqual([]);
    expect(g.inflight('d')).toBe(0);
  });

  it('forgets a group only when nothing is in flight, no host is parked and its gap is over', () => {
    const g = new LayerGroups({ maxInflight: 1, minGapMs: 100 });
    g.acquire('busy', 0, 'a.busy');
    g.acquire('parked', 0, 'a.parked');
    g.park('parked', 'b.parked');
    g.acquire('gap', 0, 'a.gap');
    g.release('gap');
    g.acquire('done', 0, 'a.done');
    g.release('done');
    g.forgetIdle(50, 100);
    expect(g.size).toBe(4); // 'gap' and 'done' still inside their gap
    expect(g.readyAt('gap', 'b.gap')).toBe(100);
    g.forgetIdle(100, 100);
    expect(g.size).toBe(2); // 'busy' has a request in flight, 'parked' a host waiting
    expect([g.readyAt('gap', 'b.gap'), g.readyAt('done', 'b.done'), g.readyAt('busy', 'b.busy')]).toEqual([0, 0, Infinity]);
    expect(g.release('parked')).toEqual(['b.parked']);
    // The walk looks at `max` groups a call and goes on where it stopped.
    g.release('busy');
    g.forgetIdle(200, 1);
    expect(g.size).toBe(1);
    g.forgetIdle(200, 1);
    expect(g.size).toBe(0);
  });
});

describe('FrontierState: per registered domain cap', () => {
  const hosts = ['a', 'b', 'c', 'd', 'e', 'f'].map((s) => `${s}.example.com`);

  it('a farm of subdomains gets at most domainMaxInflight requests at once, domainMinGapMs apart', async () => {
    const fs = await make({ domainMaxInflight: 2, domainMinGapMs: 300 });
    for (const h of hosts) await fs.onCandidate(cand(`http://${h}/`), 0);
    await fs.onCandidate(cand('http://other.org/'), 0);
    const starts: Array<[number, string]> = [];
    const out: FetchRequestMsg[] = [];
    for (let t = 0; t <= 5000; t += 10) {
      for (const f of (await fs.tick(t)).fetches) {
        starts.push([t, f.host]);
        out.push(f);
      }
      // Answer each request 500 ms after it started.
      for (const f of [...out]) {
        const at = starts.find(([, h]) => h === f.host)![0];
        if (t >= at + 500) {
          await fs.onStatus(status(f, { finished_at: t }), t);
          out.splice(out.indexOf(f), 1);
        }
      }
      const inflight = out.filter((f) => f.host.endsWith('example.com')).length;
      expect(inflight).toBeLessThanOrEqual(2);
    }
    const farm = starts.filter(([, h]) => h.endsWith('example.com')).map(([t]) => t);
    expect(farm).toHaveLength(6);
    for (let i = 1; i < farm.length; i++) expect(farm[i] - farm[i - 1]).toBeGreaterThanOrEqual(300);
    expect(starts.find(([, h]) => h === 'other.org')![0]).toBe(0); // another domain is not held up
  });
});

describe('FrontierState: layers across a rebalance', () => {
  it('a host parked on its full domain is released after a rebalance rebuilds the groups', async () => {
    const fs = await make({ domainMaxInflight: 1, domainMinGapMs: 0 });
    await fs.onCandidate(cand('http://a.example.com/'), 0);
    await fs.onCandidate(cand('http://b.example.com/'), 0);
    const [first] = (await fs.tick(0)).fetches;
    expect((await fs.tick(10)).fetches).toEqual([]); // the other host is parked on example.com
    await fs.detach(() => true); // a rebalance that kept everything
    await fs.onStatus(status(first, { finished_at: 20 }), 20);
    expect((await fs.tick(20)).fetches.map((f) => f.host)).toEqual([first.host === 'a.example.com' ? 'b.example.com' : 'a.example.com']);
  });
});

describe('FrontierState: a one-host domain is paced by the host alone', () => {
  it('a domain gap longer than the host gap does not slow a single host', async () => {
    const fs = await make({ minHostDelayMs: 200, domainMinGapMs: 5000 });
    for (let i = 0; i < 3; i++) await fs.onCandidate(cand(`http://solo.test/${i}`), 0);
    const f1 = (await fs.tick(0)).fetches[0];
    await fs.onStatus(status(f1, { finished_at: 10 }), 10);
    expect((await fs.tick(210)).fetches).toHaveLength(1);
  });
});

describe('FrontierState: per IP cap (learned from fetch statuses)', () => {
  it('hosts behind one address share ipMaxInflight once the address is known', async () => {
    const fs = await make({ ipMaxInflight: 1, ipMinGapMs: 0 });
    await fs.onCandidate(cand('http://one.test/1'), 0);
    await fs.onCandidate(cand('http://one.test/2'), 0);
    await fs.onCandidate(cand('http://two.test/1'), 0);
    await fs.onCandidate(cand('http://two.test/2'), 0);
    const first = (await fs.tick(0)).fetches; // addresses unknown yet: one each
    expect(first).toHaveLength(2);
    for (const f of first) await fs.onStatus(status(f, { finished_at: 0, ip: '127.0.3.9' }), 0);
    const second = (await fs.tick(1000)).fetches;
    expect(second).toHaveLength(1); // both on 127.0.3.9: one at a time
    await fs.onStatus(status(second[0], { finished_at: 1100, ip: '127.0.3.9' }), 1100);
    expect((await fs.tick(1100)).fetches.map((f) => f.host)).toEqual([second[0].host === 'one.test' ? 'two.test' : 'one.test']);
  });
});

describe('priority levels (front queues)', () => {
  it.each<[number | null, number, number, number]>([
    [null, 0, 4, 0],
    [null, 2, 4, 2],
    [null, 9, 4, 3],
    [1, 9, 4, 0],
    [0.8, 0, 4, 0],
    [0.5, 0, 4, 2],
    [0, 0, 4, 3],
    [7, 5, 4, 0], // out of range: clamped
    [-1, 0, 4, 3],
    [null, 3, 1, 0],
  ])('priority %p depth %i with %i levels -> level %i', async (p, depth, levels, expected) => {
    expect(priorityLevel(p, depth, levels)).toBe(expected);
  });

  /** The paths of a host's URLs in the order the frontier releases them, one a second. */
  async function releaseOrder(fs: FrontierState, n: number): Promise<string[]> {
    const order: string[] = [];
    for (let t = 0, i = 0; i < n; i++, t += 1000) {
      const f = (await fs.tick(t)).fetches[0];
      order.push(new URL(f.url).pathname);
      await fs.onStatus(status(f, { finished_at: t }), t);
    }
    return order;
  }

  it("a host's most important URL goes first, FIFO within a level", async () => {
    const fs = await make({ domainMinGapMs: 0 });
    await fs.onCandidate(cand('http://a.test/deep', { depth: 2 }), 0);
    await fs.onCandidate(cand('http://a.test/mid1', { depth: 1 }), 0);
    await fs.onCandidate(cand('http://a.test/mid2', { depth: 1 }), 0);
    await fs.onCandidate(cand('http://a.test/scored', { depth: 2, priority: 0.95 }), 0);
    expect(await releaseOrder(fs, 4)).toEqual(['/scored', '/mid1', '/mid2', '/deep']);
  });

  it('priority classes come before levels: a feed item first, the tail (depth 3) after the head however scored', async () => {
    const fs = await make({ domainMinGapMs: 0 });
    await fs.onCandidate(cand('http://a.test/tail', { depth: 3, priority: 0.95 }), 0);
    await fs.onCandidate(cand('http://a.test/mid', { depth: 1, priority: 0.3 }), 0);
    await fs.onCandidate(cand('http://a.test/item', { depth: 4, priority_class: 1 }), 0);
    await fs.onCandidate(cand('http://a.test/dup-link', { depth: 1, priority: 0.03 }), 0);
    expect(await releaseOrder(fs, 4)).toEqual(['/item', '/mid', '/tail', '/dup-link']);
    const rows = await Promise.all(['item', 'mid', 'tail', 'dup-link'].map((p) => fs.row(`http://a.test/${p}`)));
    expect(rows.map((r) => r!.priority_class)).toEqual([1, 2, 3, 3]);
  });
});

describe('per-host budget per cycle', () => {
  it('stops a host at hostBudgetPerCycle fetches; the rest does not keep the crawl busy', async () => {
    const fs = await make({ hostBudgetPerCycle: 2 });
    for (let i = 0; i < 5; i++) await fs.onCandidate(cand(`http://a.test/${i}`), 0);
    await fs.onCandidate(cand('http://b.test/'), 0);
    let released = 0;
    for (let t = 0; t < 20_000; t += 500) {
      for (const f of (await fs.tick(t)).fetches) {
        if (f.host === 'a.test') released++;
        await fs.onStatus(status(f, { finished_at: t }), t);
      }
    }
    expect(released).toBe(2);
    expect(fs.stats().queued).toBe(0);
    expect(fs.idle()).toBe(true);
    expect(fs.host('a.test')).toMatchObject({ queued: 3, fetchesThisCycle: 2 });
  });
});

describe('recrawl', () => {
  const P = { recrawlInitialMs: DAY, recrawlMinMs: HOUR, recrawlMaxMs: 60 * DAY };
  it.each<[string, { fetched_at: number | null; next_due_at: number | null; sha256: string | null }, string | null, number]>([
    ['first fetch', { fetched_at: null, next_due_at: null, sha256: null }, 'x', DAY],
    ['changed: halved', { fetched_at: 0, next_due_at: 4 * DAY, sha256: 'a' }, 'b', 2 * DAY],
    ['unchanged: doubled', { fetched_at: 0, next_due_at: 4 * DAY, sha256: 'a' }, 'a', 8 * DAY],
    ['304 keeps the hash: doubled', { fetched_at: 0, next_due_at: DAY, sha256: 'a' }, 'a', 2 * DAY],
    ['floor 1 h', { fetched_at: 0, next_due_at: HOUR, sha256: 'a' }, 'b', HOUR],
    ['ceiling 60 d', { fetched_at: 0, next_due_at: 40 * DAY, sha256: 'a' }, 'a', 60 * DAY],
  ])('%s', async (_n, prev, sha, expected) => {
    expect(recrawlIntervalMs(prev, sha, P)).toBe(expected);
  });

  it('a fetched URL is due again after its interval, with conditional-GET fields, and a change halves the next interval', async () => {
    const fs = await make({ recrawlInitialMs: 4 * HOUR, recrawlMinMs: HOUR, recrawlMaxMs: DAY });
    await fs.onCandidate(cand('http://a.test/'), 0);
    const f1 = (await fs.tick(0)).fetches[0];
    const e1 = await fs.onStatus(status(f1, { finished_at: 100, sha256: 'v1', etag: '"e1"' }), 100);
    expect(e1.rows[0]).toMatchObject({ state: 'FETCHED', next_due_at: 100 + 4 * HOUR });
    expect(fs.stats().recrawls).toBe(1);
    expect(fs.idle()).toBe(true);
    expect((await fs.tick(100 + 4 * HOUR - 1)).fetches).toEqual([]);
    const t2 = 100 + 4 * HOUR;
    const tick = await fs.tick(t2);
    expect(tick.fetches[0]).toMatchObject({ url: 'http://a.test/', prev_sha256: 'v1', etag: '"e1"' });
    const e2 = await fs.onStatus(status(tick.fetches[0], { finished_at: t2, sha256: 'v2' }), t2);
    expect(e2.rows[0]).toMatchObject({ state: 'FETCHED', sha256: 'v2', next_due_at: t2 + 2 * HOUR });
  });
});
