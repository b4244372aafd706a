/**
 * #36 acceptance, Kafka mode on the local stack: partitions of the frontier move between two
 * frontier processes mid-crawl, each with its own state folder (as on two machines), so the
 * one taking a partition rebuilds its store from crawl.urls before leasing any of its hosts.
 * frontier-A crawls alone; frontier-B joins (some partitions move A -> B); then A stops (the
 * rest move to B). Judged by what the servers saw and by the URL table:
 * - no URL lost: every page of every host is crawled and handed off;
 * - no host fetched by both: every host's leases in crawl.urls (a lease id names its frontier)
 *   come from A and then from B, never back, and the servers' logs show at most one request at
 *   a time per host with every gap respected (the politeness judge).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectKafka, readTable } from '../../connectors/kafka';
import { AvroRegistry } from '../../connectors/registry';
import type { UrlStateMsg } from '../../lib/messages';
import { acceptanceHosts, pagesServed, PolitenessWeb } from '../fixtures/politeness-web';
import { sleep, waitFor } from '../support/cli';
import { cliSync, CrawlProcess, HandoffReader, stackEnv, uniquePrefix } from '../support/kafka-stack';

/** Every crawl.urls record (all versions), decoded. */
async function urlRecords(prefix: string): Promise<UrlStateMsg[]> {
  const kafka = connectKafka({ brokers: process.env.CRAWL_KAFKA_BROKERS!.split(',') });
  const registry = new AvroRegistry(process.env.CRAWL_REGISTRY_URL!);
  const recs = await readTable(kafka, `${prefix}crawl.urls`, Array.from({ length: 8 }, (_, p) => p));
  const rows: UrlStateMsg[] = [];
  for (const r of recs) if (r.value) rows.push((await registry.decode(r.value)) as UrlStateMsg);
  return rows;
}

describe('a frontier partition moves between two frontier processes mid-crawl (#36)', () => {
  const prefix = uniquePrefix('pmove');
  const dirs = [mkdtempSync(join(tmpdir(), 'pmove-a-')), mkdtempSync(join(tmpdir(), 'pmove-b-'))];
  // Short retry back-off so 429'd and robots-503 URLs come back within the run.
  const env = stackEnv(prefix, { CRAWL_WARC_MAX_AGE_MS: '2000', CRAWL_RETRY_BACKOFF_MS: '2000,4000', CRAWL_LEASE_MS: '60000' });
  let web: PolitenessWeb;
  const handoff = new HandoffReader(prefix);
  const procs = new Map<string, CrawlProcess>();
  const events: Array<[string, number]> = [];
  let expected: string[] = [];

  beforeAll(async () => {
    web = await PolitenessWeb.start(acceptanceHosts(70, 6));
    cliSync(['init'], env);
    procs.set('core', new CrawlProcess(['seen-test', 'parse', 'handoff', 'fetch'], env));
    procs.set('frontier-A', new CrawlProcess(['frontier'], { ...env, CRAWL_STATE_DIR: dirs[0] }, 'frontier-A'));
    if (!(await waitFor(() => [...procs.values()].every((p) => p.logged('processors running')), 900))) {
      throw new Error(`processes did not start:\n${[...procs.values()].map((p) => p.stderr.slice(-1500)).join('\n')}`);
    }
    await handoff.start();
    cliSync(['seed', ...web.seeds()], env);
    expected = web.specs().filter((s) => s.kind !== 'robots-503').flatMap((s) => ['/', ...Array.from({ length: s.pages }, (_v, i) => `/p/${i}`)].map((p) => `${web.origin(s.ip)}${p}`)).sort();
    if (!(await waitFor(() => pagesServed(web.log).length >= 8, 900))) throw new Error('no progress before frontier-B joined');
    events.push(['frontier-B joins', Date.now()]);
    procs.set('frontier-B', new CrawlProcess(['frontier'], { ...env, CRAWL_STATE_DIR: dirs[1] }, 'frontier-B'));
    if (!(await waitFor(() => procs.get('frontier-B')!.log().some((l) => l.msg === 'frontier store restored'), 1200))) throw new Error('frontier-B took no partition');
    const served = pagesServed(web.log).length;
    if (!(await waitFor(() => pagesServed(web.log).length >= served + 8, 1500))) throw new Error('no progress after frontier-B joined');
    events.push(['frontier-A stops', Date.now()]);
    await procs.get('frontier-A')!.stop();
    if (!(await waitFor(() => expected.every((u) => handoff.urls().has(u)), 2400))) {
      const missing = expected.filter((u) => !handoff.urls().has(u));
      throw new Error(`crawl did not finish; missing ${missing.join(' ')}\n${[...procs.entries()].map(([n, p]) => `${n}: ${p.stderr.slice(-1500)}`).join('\n')}`);
    }
    await sleep(5000); // a late breach (a retry, a re-issued lease) counts too
  }, 300_000);

  afterAll(async () => {
    for (const p of procs.values()) await p.stop();
    await handoff.stop();
    await web?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('partitions moved A -> B while crawling, and B rebuilt their stores from crawl.urls before leasing', () => {
    const b = procs.get('frontier-B')!.log();
    const restored = b.filter((l) => l.msg === 'frontier store restored');
    expect(restored.length).toBeGreaterThanOrEqual(2); // when it joined, and when A left
    const partitions = restored.flatMap((l) => (l.partitions as Array<{ partition: number; rebuilt: boolean; rows: number }>));
    expect(partitions.some((p) => p.rebuilt && p.rows > 0)).toBe(true);
    expect(procs.get('frontier-A')!.log().some((l) => l.msg === 'partitions assigned' && (l.partitions as number[]).length < 8)).toBe(true);
  });

  test('no URL lost: every allowed page was crawled and handed off', () => {
    expect([...handoff.urls()].sort()).toEqual(expected);
  });

  test('no host fetched by both: leases of a host come from A, then from B, never back; the servers saw no politeness breach', async () => {
    const a = `${procs.get('frontier-A')!.pid}`;
    const b = `${procs.get('frontier-B')!.pid}`;
    const leases = (await urlRecords(prefix)).filter((r) => r.state === 'LEASED').sort((x, y) => x.updated_at - y.updated_at);
    const byHost = new Map<string, string[]>();
    for (const r of leases) {
      const who = r.lease_id!.split('/')[0].split(':').pop()!;
      expect([a, b]).toContain(who);
      byHost.set(r.host, [...(byHost.get(r.host) ?? []), who === a ? 'A' : 'B']);
    }
    const sequences = [...byHost.values()].map((s) => s.join(''));
    for (const s of sequences) expect(s).toMatch(/^A*B*$/);
    expect(sequences.some((s) => /A+B+/.test(s))).toBe(true); // some host did move mid-crawl
    const v = web.violations();
    process.stdout.write(`partition move: ${pagesServed(web.log).length} pages served, ${web.log.length} requests, ${v.length} politeness breaches; ` +
      `${events.map(([e, t]) => `${e} at +${t - (web.log[0]?.start ?? t)} ms`).join(', ')}\n${v.join('\n')}\n`);
    expect(v).toEqual([]);
  }, 120_000);
});
