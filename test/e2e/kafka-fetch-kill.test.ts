/**
 * #5 acceptance, Kafka mode on the local stack: two `crawl process fetch` processes and one
 * `crawl process seen-test frontier parse handoff`; one fetcher is killed with kill -9 while it
 * holds pages in a WARC file it has not stored. Afterwards every page the servers served is in
 * a WARC file stored in S3 (stored by the dead fetcher before it died, or fetched again by the
 * survivor): losses 0, duplicates counted and printed. Every WARC file in S3 passes warcio with
 * verified digests (so the dead process left no partial file that looks complete), and every
 * page read back alone through its CDXJ line (Range GET of offset+length) equals what the
 * server sent.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { distinctText } from '../fixtures/politeness-web';
import { FixtureWeb, page, type SiteSpec } from '../fixtures/web';
import { waitFor } from '../support/cli';
import { readOneRecord, readWarc } from '../support/warc-read';
import { cliSync, CrawlProcess, HandoffReader, parseCdxj, s3Client, s3GetKey, s3List, stackEnv, uniquePrefix } from '../support/kafka-stack';

const HOSTS = Array.from({ length: 8 }, (_v, i) => `127.0.5.${100 + i}`);
const PAGES_PER_HOST = 8;
const prefix = uniquePrefix('fetchkill');
const env = stackEnv(prefix, {
  CRAWL_WARC_MAX_AGE_MS: '2000',
  // Longer than the group session timeout (30 s): the survivor takes the dead fetcher's
  // partitions and replays its uncommitted leases before they expire.
  CRAWL_LEASE_MS: '60000',
});

describe('kill -9 of a fetch process during a Kafka crawl (#5)', () => {
  let web: FixtureWeb;
  let s3: S3Client;
  const handoff = new HandoffReader(prefix);
  let core: CrawlProcess;
  let victim: CrawlProcess;
  let survivor: CrawlProcess;
  const bodies = new Map<string, string>();
  let expected: string[];
  let warcKeys: string[] = [];

  beforeAll(async () => {
    const specs: SiteSpec[] = HOSTS.map((ip) => {
      // Distinct words per page: parse never hands off near-duplicates of a host's other pages.
      const pages: Record<string, string> = { '/': page(`home ${ip}`, Array.from({ length: PAGES_PER_HOST }, (_v, i) => `/p${i}`), distinctText()) };
      for (let i = 0; i < PAGES_PER_HOST; i++) pages[`/p${i}`] = page(`page ${i} of ${ip}`, ['/'], distinctText());
      return { ip, pages };
    });
    web = await FixtureWeb.start(specs);
    for (const [i, spec] of specs.entries()) {
      for (const [path, html] of Object.entries(spec.pages)) bodies.set(`${web.sites[i].origin}${path}`, web.expand(html as string, web.sites[i]));
    }
    expected = [...bodies.keys()].sort();
    s3 = s3Client();
    expect(cliSync(['init'], env)).toMatch(/topics created: \d+/);
    core = new CrawlProcess(['seen-test', 'frontier', 'parse', 'handoff'], env);
    victim = new CrawlProcess(['fetch'], env, 'fetch-1');
    survivor = new CrawlProcess(['fetch'], env, 'fetch-2');
    const up = await waitFor(() => [core, victim, survivor].every((p) => p.logged('processors running')), 600);
    if (!up) throw new Error(`processes did not start:\n${core.stderr.slice(-2000)}\n${victim.stderr.slice(-2000)}`);
    await handoff.start();
    cliSync(['seed', ...HOSTS.map((ip) => `${web.origin(ip)}/`)], env);

    // Kill the victim once it has stored a WARC file (so it was working) and is still mid-crawl.
    const victimStored = async (): Promise<boolean> => (await s3List(s3, prefix)).some((k) => k.includes(`-${victim.pid}-`) && k.endsWith('.warc.gz'));
    const busy = await waitFor(async () => web.log.length >= 30 && (await victimStored()), 600);
    if (!busy) throw new Error(`the victim fetcher never stored a file:\n${victim.stderr.slice(-3000)}`);
    const killedAt = Date.now();
    await victim.kill9();

    const all = await waitFor(() => expected.every((u) => handoff.urls().has(u)), 1500);
    if (!all) {
      const missing = expected.filter((u) => !handoff.urls().has(u));
      const about = (p: CrawlProcess): string => p.log().filter((l) => missing.some((u) => JSON.stringify(l).includes(u))).map((l) => JSON.stringify(l)).join('\n');
      const served = web.log.filter((e) => missing.includes(`${e.site}${e.path}`)).map((e) => `${e.at - killedAt} ms after the kill: ${e.site}${e.path}`);
      throw new Error(`crawl did not finish; missing ${missing.join(' ')}\nserved: ${served.join('; ')}\nvictim:\n${about(victim)}\nsurvivor:\n${about(survivor)}\ncore:\n${about(core)}\n${core.stderr.slice(-2000)}`);
    }
    // Graceful stops store the open files (robots.txt records, the last pages).
    await survivor.stop();
    await core.stop();
    warcKeys = (await s3List(s3, prefix)).filter((k) => k.endsWith('.warc.gz'));
  }, 300_000);

  afterAll(async () => {
    for (const p of [core, victim, survivor]) await p?.stop();
    await handoff.stop();
    s3?.destroy();
    await web?.stop();
  });

  test('every WARC file in S3 passes warcio with verified digests', async () => {
    expect(warcKeys.length).toBeGreaterThan(1);
    for (const key of warcKeys) {
      const recs = await readWarc(await s3GetKey(s3, key));
      expect([key, recs[0]?.type]).toEqual([key, 'warcinfo']);
    }
  });

  test('losses 0: every page a server served is in a stored WARC file; duplicates counted', async () => {
    const stored = new Map<string, number>();
    for (const key of warcKeys) {
      for (const r of await readWarc(await s3GetKey(s3, key))) {
        if (r.type === 'response' && r.targetUri) stored.set(r.targetUri, (stored.get(r.targetUri) ?? 0) + 1);
      }
    }
    const served = web.log.filter((e) => e.path !== '/robots.txt').map((e) => `${e.site}${e.path}`);
    const lost = [...new Set(served)].filter((u) => !stored.has(u));
    const duplicateRequests = served.length - new Set(served).size;
    const duplicateRecords = [...stored.values()].reduce((a, n) => a + n - 1, 0);
    process.stdout.write(
      `fetch kill -9: ${served.length} page requests served for ${new Set(served).size} URLs; duplicate requests ${duplicateRequests}, ` +
        `duplicate stored responses ${duplicateRecords}, lost ${lost.length}; WARC files ${warcKeys.length} ` +
        `(victim ${warcKeys.filter((k) => k.includes(`-${victim.pid}-`)).length})\n`,
    );
    expect(lost).toEqual([]);
    // Besides the pages, robots.txt answers are archived too (policy evidence), so compare pages only.
    expect([...stored.keys()].filter((u) => bodies.has(u)).sort()).toEqual(expected);
  });

  test('every page reached crawl.handoff.v3 exactly as an indexer reads it', () => {
    expect([...handoff.urls()].sort()).toEqual(expected);
  });

  test('each page read alone through its CDXJ line (S3 Range GET) equals what the server sent', async () => {
    const checked = new Set<string>();
    for (const key of warcKeys) {
      const cdxKey = key.replace(/\.warc\.gz$/, '.cdxj');
      const entries = parseCdxj((await s3GetKey(s3, cdxKey)).toString('utf8'));
      for (const e of entries.filter((x) => x.status === '200' && bodies.has(x.url))) {
        expect(key.endsWith(e.filename)).toBe(true);
        const rec = await readOneRecord(await s3GetKey(s3, key, [e.offset, e.length]), 0, e.length);
        expect(rec.type).toBe('response');
        expect(rec.targetUri).toBe(e.url);
        expect(rec.payload.toString('utf8')).toBe(bodies.get(e.url));
        checked.add(e.url);
      }
    }
    expect([...checked].sort()).toEqual(expected);
  });
});
