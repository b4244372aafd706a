/**
 * The frontier stage's cap on leases in flight (FrontierStageOptions.maxLeases,
 * CRAWL_FRONTIER_MAX_LEASES): a tick releases no more than the room left under the cap, an
 * answer taken in (or a lease expiring) makes room again, and politeness is unchanged (one
 * lease per host whatever the room).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg } from '../../lib/messages';
import { frontierStage } from '../../processors/frontier';
import type { FrontierPolicy } from '../../processors/frontier-state';
import type { InRecord, OutRecord } from '../../runtime/stage';
import { testFrontier } from '../support/frontier';
import { MemoryChangelog } from '../support/memory-changelog';

const POLICY: FrontierPolicy = { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 60_000, retryBackoffMs: [5_000], maxAttempts: 4 };

const candRec = (url: string): InRecord => {
  const value: CandidateMsg = { url, host: new URL(url).hostname, depth: 0, discovered_at: 0, source_url: null };
  return { topic: 'frontier', partition: 0, offset: 0, key: value.host, value, timestamp: 0 };
};

function statusRec(f: FetchRequestMsg, at: number): InRecord {
  const value: FetchStatusMsg = {
    url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: at, finished_at: at, response_ms: 10,
    crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null,
  };
  return { topic: 'fetchStatus', partition: 0, offset: 0, key: f.host, value, timestamp: at };
}

const fetches = (outs: OutRecord[]): FetchRequestMsg[] => outs.filter((o) => o.topic === 'fetch').map((o) => o.value as FetchRequestMsg);

describe('frontier stage: leases in flight at most maxLeases', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'lease-cap-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function stageWith(maxLeases: number | undefined, clock: { t: number }) {
    const ctx = { now: () => clock.t, log: pino({ level: 'silent' }) };
    const stage = frontierStage(POLICY, { partitions: 1, stateDir: dir, now: () => clock.t, maxLeases });
    await stage.restoreChangelog!([0], new MemoryChangelog(), ctx);
    // Six hosts with two URLs each, all due at once.
    const urls = ['a', 'b', 'c', 'd', 'e', 'f'].flatMap((h) => [`http://${h}.test/1`, `http://${h}.test/2`]);
    await stage.handleBatch!(urls.map(candRec), ctx);
    return { stage, ctx };
  }

  it('releases up to the room left, and again as answers come in', async () => {
    const clock = { t: 0 };
    const { stage, ctx } = await stageWith(4, clock);
    const first = fetches(await stage.tick!(ctx));
    expect(first).toHaveLength(4);
    expect(new Set(first.map((f) => f.host)).size).toBe(4);
    clock.t = 10_000;
    expect(fetches(await stage.tick!(ctx))).toEqual([]);
    expect(stage.state.leasesInFlight()).toBe(4);
    // Two answers: room for two more, the hosts not yet asked first in line or not, one each.
    await stage.handleBatch!([statusRec(first[0], clock.t), statusRec(first[1], clock.t)], ctx);
    expect(stage.state.leasesInFlight()).toBe(2);
    const second = fetches(await stage.tick!(ctx));
    expect(second).toHaveLength(2);
    expect(stage.state.leasesInFlight()).toBe(4);
    await stage.close!();
  });

  it('an expired lease makes room too', async () => {
    const clock = { t: 0 };
    const { stage, ctx } = await stageWith(3, clock);
    const first = fetches(await stage.tick!(ctx));
    expect(first).toHaveLength(3);
    clock.t = POLICY.leaseMs + 1;
    // The tick that finds them expired had no room when it began; the next one has.
    const after = [...fetches(await stage.tick!(ctx)), ...fetches(await stage.tick!(ctx))];
    expect(after).toHaveLength(3);
    // The hosts not asked yet: the three whose lease expired wait a full delay first.
    const waiting = new Set(first.map((f) => f.host));
    expect(after.filter((f) => waiting.has(f.host))).toEqual([]);
    expect(stage.state.leasesInFlight()).toBeLessThanOrEqual(3);
    await stage.close!();
  });

  it('without a cap every due host gets its lease at once (one per host)', async () => {
    const clock = { t: 0 };
    const { stage, ctx } = await stageWith(undefined, clock);
    const all = fetches(await stage.tick!(ctx));
    expect(all.map((f) => f.host).sort()).toEqual(['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test']);
    await stage.close!();
  });
});

describe('FrontierState: the lease-expiry heap', () => {
  it('drops answered leases once they outnumber those in flight; a lease still out expires on time', async () => {
    let n = 0;
    const fs = await testFrontier(POLICY, () => `L${++n}`);
    const hosts = 6000;
    const cands: CandidateMsg[] = [];
    for (let i = 0; i < hosts; i++) cands.push({ url: `http://h${i}.test/1`, host: `h${i}.test`, depth: 0, discovered_at: 0, source_url: null });
    await fs.onCandidates(cands, 0);
    const out: FetchRequestMsg[] = [];
    for (let t = 0; out.length < hosts; t += 100) out.push(...(await fs.tick(t)).fetches);
    expect(out).toHaveLength(hosts);
    // Every lease but the last answered: the heap kept at most twice those in flight and the slack.
    const last = out.pop()!;
    await fs.onStatuses(out.map((f) => statusRec(f, 1000).value as FetchStatusMsg), 1000);
    expect(fs.leasesInFlight()).toBe(1);
    // A later lease rebuilds the heap from the one in flight.
    await fs.onCandidates([{ url: 'http://h0.test/2', host: 'h0.test', depth: 0, discovered_at: 0, source_url: null }], 2000);
    const again = (await fs.tick(5000)).fetches;
    expect(again.map((f) => f.url)).toEqual(['http://h0.test/2']);
    expect(fs.leaseEntries).toBeLessThanOrEqual(2 * fs.leasesInFlight() + 4096);
    expect(fs.leaseEntries).toBeLessThan(hosts);
    // The lease never answered expires at its time (leaseMs after its tick), not before.
    expect((await fs.tick(last.lease_expires_at - 1)).rows.filter((r) => r.reason === 'lease-expired')).toEqual([]);
    const expired = (await fs.tick(last.lease_expires_at)).rows.filter((r) => r.reason === 'lease-expired');
    expect(expired).toEqual([expect.objectContaining({ url: last.url, state: 'QUEUED', attempts: 1 })]);
  });
});
