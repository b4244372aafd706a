/**
 * #3 acceptance, Kafka mode on the local stack: the politeness web of
 * test/fixtures/politeness-web.ts crawled by 2 frontier processes, 2 fetch processes and one
 * `seen-test parse handoff` process, judged only from the servers' own request logs: 0 gaps
 * below each host's policy, 0 requests inside a Retry-After window, 0 requests other than
 * robots.txt to 503-robots hosts, 0 disallowed paths, at most 1 request at a time per host.
 * Run twice on separate webs and topic prefixes: undisturbed, and with a frontier and then a
 * fetcher killed with kill -9 and restarted mid-crawl (their partitions move twice: to the
 * survivor when the dead member's session ends, and back when the restarted one joins).
 */
import { acceptanceHosts, pagesServed, PolitenessWeb } from '../fixtures/politeness-web';
import { waitFor, sleep } from '../support/cli';
import { cliSync, CrawlProcess, HandoffReader, stackEnv, uniquePrefix } from '../support/kafka-stack';

interface Crawl {
  web: PolitenessWeb;
  handoff: HandoffReader;
  procs: Map<string, CrawlProcess>;
  env: NodeJS.ProcessEnv;
  /** When each kill -9 happened (for the report). */
  kills: Array<[string, number]>;
  /** Home and pages of every host whose robots.txt allows them. */
  expected(): string[];
}

async function startCrawl(tag: string, ipBase: number): Promise<Crawl> {
  const prefix = uniquePrefix(tag);
  // Short retry back-off so 429'd and robots-503 URLs come back within the run.
  const env = stackEnv(prefix, { CRAWL_WARC_MAX_AGE_MS: '2000', CRAWL_RETRY_BACKOFF_MS: '2000,4000', CRAWL_LEASE_MS: '60000' });
  const web = await PolitenessWeb.start(acceptanceHosts(ipBase, 4));
  cliSync(['init'], env);
  const procs = new Map<string, CrawlProcess>([
    ['core', new CrawlProcess(['seen-test', 'parse', 'handoff'], env)],
    ['frontier-1', new CrawlProcess(['frontier'], env)],
    ['frontier-2', new CrawlProcess(['frontier'], env)],
    ['fetch-1', new CrawlProcess(['fetch'], env)],
    ['fetch-2', new CrawlProcess(['fetch'], env)],
  ]);
  const up = await waitFor(() => [...procs.values()].every((p) => p.logged('processors running')), 900);
  if (!up) throw new Error(`processes did not start:\n${[...procs.values()].map((p) => p.stderr.slice(-1500)).join('\n')}`);
  const handoff = new HandoffReader(prefix);
  await handoff.start();
  cliSync(['seed', ...web.seeds()], env);
  const expected = (): string[] =>
    web.specs().filter((s) => s.kind !== 'robots-503').flatMap((s) => ['/', ...Array.from({ length: s.pages }, (_v, i) => `/p/${i}`)].map((p) => `${web.origin(s.ip)}${p}`)).sort();
  return { web, handoff, procs, env, expected, kills: [] };
}

async function awaitDone(c: Crawl): Promise<void> {
  const done = await waitFor(() => c.expected().every((u) => c.handoff.urls().has(u)), 2400);
  if (!done) {
    const missing = c.expected().filter((u) => !c.handoff.urls().has(u));
    throw new Error(`crawl did not finish; missing ${missing.join(' ')}\n${[...c.procs.entries()].map(([n, p]) => `${n}: ${p.stderr.slice(-1200)}`).join('\n')}`);
  }
  // Keep everything running a little longer: a late breach (a retry, a re-issued lease) counts too.
  await sleep(5000);
}

async function stopCrawl(c: Crawl | undefined): Promise<void> {
  if (!c) return;
  for (const p of c.procs.values()) await p.stop();
  await c.handoff.stop();
  await c.web.stop();
}

function report(name: string, c: Crawl): string[] {
  const v = c.web.violations();
  process.stdout.write(`${name}: ${pagesServed(c.web.log).length} pages served, ${c.web.log.length} requests, ${v.length} politeness breaches\n${v.join('\n')}\n`);
  // For a breach, the host's whole request log relative to the kills says which recovery path caused it.
  const t0 = c.web.log[0]?.start ?? 0;
  for (const ip of new Set(v.map((x) => x.split(' ')[0]))) {
    const lines = c.web.requestsTo(ip).map((e) => `  +${e.start - t0}..+${e.end - t0} ms ${e.path} ${e.status}`);
    process.stdout.write(`${ip} requests (kills at ${c.kills.map(([n, t]) => `${n} +${t - t0} ms`).join(', ')}):\n${lines.join('\n')}\n`);
  }
  return v;
}

describe('politeness on Kafka: 2 frontiers, 2 fetchers (#3)', () => {
  let c: Crawl;

  beforeAll(async () => {
    c = await startCrawl('polite', 30);
    await awaitDone(c);
  }, 300_000);

  afterAll(() => stopCrawl(c));

  test('0 breaches by the servers\' own logs', () => {
    expect(report('kafka politeness', c)).toEqual([]);
  });

  test('every allowed page was crawled and handed off; the 503-robots hosts saw only robots.txt', () => {
    expect([...c.handoff.urls()].sort()).toEqual(c.expected());
    for (const s of c.web.specs().filter((x) => x.kind === 'robots-503')) {
      expect(c.web.requestsTo(s.ip).map((e) => e.path).every((p) => p === '/robots.txt')).toBe(true);
      expect(c.web.requestsTo(s.ip).length).toBeGreaterThan(0);
    }
    expect(c.web.log.some((e) => e.status === 429)).toBe(true);
  });
});

describe('politeness on Kafka with kill -9 and restart of a frontier and of a fetcher (#3)', () => {
  let c: Crawl;

  beforeAll(async () => {
    c = await startCrawl('polite-kill', 50);
    const restart = async (name: string, names: string[]): Promise<void> => {
      c.kills.push([name, Date.now()]);
      await c.procs.get(name)!.kill9();
      c.procs.set(name, new CrawlProcess(names, c.env, name));
    };
    if (!(await waitFor(() => pagesServed(c.web.log).length >= 6, 900))) throw new Error('no progress before the first kill');
    await restart('frontier-1', ['frontier']);
    const served = pagesServed(c.web.log).length;
    if (!(await waitFor(() => pagesServed(c.web.log).length >= served + 6, 1500))) throw new Error('no progress after the frontier restart');
    await restart('fetch-1', ['fetch']);
    await awaitDone(c);
  }, 300_000);

  afterAll(() => stopCrawl(c));

  test('0 breaches by the servers\' own logs, across both kills and restarts', () => {
    expect(report('kafka politeness with kill -9', c)).toEqual([]);
  });

  test('every allowed page was still crawled and handed off', () => {
    expect([...c.handoff.urls()].sort()).toEqual(c.expected());
  });
});
