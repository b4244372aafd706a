/**
 * #37 acceptance, Kafka mode: one crawl through every fault an operator meets, judged only from
 * the web servers' request log and crawl.handoff.v3 read back with kafkajs and the registry
 * client (test/support/kafka-stack.ts), as an indexer would. Processes: `seen-test parse
 * handoff` (core), `frontier`, `fetch`. In order, each after the crawl has made progress:
 *   a second fetch process joining (a rebalance from one to two) and leaving on SIGTERM;
 *   kill -9 of fetch, of frontier, of core, each restarted at once;
 *   a Redis FLUSHALL (seen-test's Bloom generations);
 *   a broker restart (stopped, down a few seconds, started on its data).
 * Then: no page lost, 0 politeness breaches, no URL with two NEW events of different ids, every
 * SIGTERM answered within 15 s, fetching (or handing off, for core) back within 10 s of a killed
 * process's restart; the figures are printed (docs/faults.md has a run's).
 *
 * Then SIGTERM with the broker down, hung (SIGSTOP) and restarting, each on a crawl under way,
 * and to a process started while the broker was down.
 *
 * The broker and Redis are the test's own (test/support/private-stack.ts) on free ports: the
 * stack the run was given, which other test files use, is never stopped or flushed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pagesServed, PolitenessWeb, type PoliteHostSpec } from '../fixtures/politeness-web';
import { parseJsonLines, sleep } from '../support/cli';
import { cliSync, CrawlProcess, HandoffReader, stackEnv, uniquePrefix } from '../support/kafka-stack';
import { PrivateStack } from '../support/private-stack';

/** Killed processes must be fetching (or handing off) again within this of their restart. */
const RESUME_MS = 10_000;
const STOP_MS = 15_000;
const CORE = ['seen-test', 'parse', 'handoff'];

/**
 * Hosts of `pages` pages with Crawl-delay 2 (so the crawl lasts a few seconds a page whatever
 * the machine's load: the faults must all happen mid-crawl; 4 s a page as measured, see
 * docs/faults.md), and one of each other kind.
 */
function faultWeb(base: number, hosts: number, pages: number): PoliteHostSpec[] {
  const ip = (n: number): string => `127.0.37.${base + n}`;
  return [
    ...Array.from({ length: hosts }, (_v, i): PoliteHostSpec => ({ ip: ip(i), kind: 'crawl-delay', crawlDelayS: 2, pages })),
    { ip: ip(hosts), kind: 'retry-after', retryAfterS: 3, throttleRequests: [3], pages: 6 },
    { ip: ip(hosts + 1), kind: 'robots-503', pages: 4 },
    { ip: ip(hosts + 2), kind: 'robots-404', pages: 6 },
    { ip: ip(hosts + 3), kind: 'slow', responseMs: 150, pages: 8 },
  ];
}

/** Where every process's log goes, for a look after a failure (test-artifacts/ is not committed). */
function artifacts(): string {
  const dir = join(__dirname, '..', '..', 'test-artifacts', 'kafka-faults');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Waits for `cond` (polled every 100 ms) at most `ms`; throws `what` and `detail()` otherwise. */
async function within(ms: number, what: string, cond: () => boolean, detail: () => string = () => ''): Promise<number> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms\n${detail()}`);
    await sleep(100);
  }
  return Date.now() - t0;
}

interface Stopped {
  name: string;
  ms: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

async function sigterm(name: string, p: CrawlProcess): Promise<Stopped> {
  const t0 = Date.now();
  await p.stop(STOP_MS + 15_000);
  const { code, signal } = await p.exited;
  return { name, ms: Date.now() - t0, code, signal };
}

class Crawl {
  readonly procs = new Map<string, CrawlProcess>();
  /** Every process that ran, for the log checks. */
  readonly all: CrawlProcess[] = [];
  handoff!: HandoffReader;

  constructor(readonly web: PolitenessWeb, readonly env: NodeJS.ProcessEnv, readonly prefix: string, brokers: string) {
    this.handoff = new HandoffReader(prefix, brokers);
  }

  start(name: string, names: string[]): CrawlProcess {
    const p = new CrawlProcess(names, this.env, name);
    this.procs.set(name, p);
    this.all.push(p);
    return p;
  }

  pageRequestsSince(t: number): number {
    return this.web.log.filter((e) => e.start >= t && e.path !== '/robots.txt').length;
  }

  lastPageRequest(): number {
    let last = 0;
    for (const e of this.web.log) if (e.path !== '/robots.txt' && e.start > last) last = e.start;
    return last;
  }

  lastEvent(): number {
    return this.handoff.readAt.length ? this.handoff.readAt[this.handoff.readAt.length - 1]! : 0;
  }

  /** The longest stretch without a page request in [from, to] (what an operator sees as "fetching stopped"). */
  longestPause(from: number, to: number): number {
    const times = [from, ...this.web.log.filter((e) => e.path !== '/robots.txt' && e.start >= from && e.start <= to).map((e) => e.start).sort((a, b) => a - b), to];
    let gap = 0;
    for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
    return gap;
  }

  tails(): string {
    return [...this.procs.entries()].map(([n, p]) => `--- ${n}:\n${p.stderr.slice(-1500)}`).join('\n');
  }

  async progress(pages: number, what: string): Promise<void> {
    const target = pagesServed(this.web.log).length + pages;
    await within(120_000, `${pages} more pages ${what}`, () => pagesServed(this.web.log).length >= target, () => this.tails());
  }
}

let stack: PrivateStack;

beforeAll(async () => {
  stack = await PrivateStack.start();
}, 300_000);

afterAll(async () => {
  await stack?.down();
}, 120_000);

describe('faults without side effects (#37)', () => {
  let c: Crawl;
  let expected: string[] = [];
  const kills: Array<{ name: string; quietMs: number; resumeMs: number }> = [];
  const stops: Stopped[] = [];
  let broker = { stoppedAt: 0, healthyAt: 0, pauseMs: 0, firstEventMs: 0, lines: new Map<string, number>() };
  let redisMs = 0;
  let timeline = { crawlMs: 0, afterLastFaultMs: 0 };
  let rebalance = { joinedMs: 0, pauseMs: 0, pagesWithTwo: 0, stop: null as Stopped | null, backMs: 0, pauseBackMs: 0 };

  beforeAll(async () => {
    const prefix = uniquePrefix('faults');
    const env = stackEnv(prefix, {
      ...stack.env(), CRAWL_WARC_MAX_AGE_MS: '2000', CRAWL_RETRY_BACKOFF_MS: '2000,4000', CRAWL_LEASE_MS: '60000',
    });
    const web = await PolitenessWeb.start(faultWeb(10, 16, 30));
    c = new Crawl(web, env, prefix, stack.env().CRAWL_KAFKA_BROKERS);
    expected = web.specs().filter((s) => s.kind !== 'robots-503').flatMap((s) => ['/', ...Array.from({ length: s.pages }, (_v, i) => `/p/${i}`)].map((p) => `${web.origin(s.ip)}${p}`)).sort();
    cliSync(['init'], env);
    c.start('core', CORE);
    c.start('frontier', ['frontier']);
    c.start('fetch', ['fetch']);
    await within(120_000, 'processes started', () => [...c.procs.values()].every((p) => p.logged('processors running')), () => c.tails());
    await c.handoff.start();
    const seededAt = Date.now();
    cliSync(['seed', ...web.seeds()], env);
    await c.progress(30, 'before the first fault');

    // A second fetcher joins (one to two), fetches, and leaves on SIGTERM (two to one).
    const joinAt = Date.now();
    const second = c.start('fetch-2', ['fetch']);
    const assigned = (p: CrawlProcess, after: number): boolean =>
      p.log().some((l) => l.msg === 'partitions assigned' && Number(l.time) >= after && (l.partitions as number[]).length > 0);
    await within(60_000, 'the second fetcher assigned partitions', () => assigned(second, joinAt), () => c.tails());
    const joinedMs = second.log().find((l) => l.msg === 'partitions assigned' && (l.partitions as number[]).length > 0)!.time as number - joinAt;
    await c.progress(30, 'with two fetchers');
    const leaveAt = Date.now();
    const stop = await sigterm('fetch-2', second);
    c.procs.delete('fetch-2');
    const first = c.procs.get('fetch')!;
    await within(60_000, 'the first fetcher owning every partition again', () =>
      first.log().some((l) => l.msg === 'partitions assigned' && Number(l.time) >= leaveAt && (l.partitions as number[]).length === 8), () => c.tails());
    const backMs = (first.log().filter((l) => l.msg === 'partitions assigned' && Number(l.time) >= leaveAt).pop()!.time as number) - leaveAt;
    await c.progress(20, 'after the second fetcher left');
    rebalance = { joinedMs, pauseMs: c.longestPause(joinAt, leaveAt), pagesWithTwo: c.pageRequestsSince(joinAt) - c.pageRequestsSince(leaveAt), stop, backMs, pauseBackMs: c.longestPause(leaveAt, Date.now()) };

    // kill -9, then restarted at once. Fetching (handing off, for core) stops first: the pause
    // before the restart shows the kill took effect, and the resume is measured from a standstill.
    // A standstill is longer than a host's gap (Crawl-delay 2 hosts are asked every 4 s).
    const killAndRestart = async (name: string, names: string[], last: () => number, quietMs: number): Promise<void> => {
      await c.procs.get(name)!.kill9();
      const killedAt = Date.now();
      await within(30_000, `standstill after kill -9 of ${name}`, () => Date.now() - Math.max(last(), killedAt) >= quietMs, () => c.tails());
      const restartedAt = Date.now();
      c.start(name, names);
      await within(60_000, `${name} working again after its restart`, () => last() >= restartedAt, () => c.tails());
      kills.push({ name, quietMs: restartedAt - killedAt, resumeMs: last() - restartedAt });
    };
    await killAndRestart('fetch', ['fetch'], () => c.lastPageRequest(), 5000);
    await c.progress(20, 'after the fetch restart');
    await killAndRestart('frontier', ['frontier'], () => c.lastPageRequest(), 5000);
    await c.progress(20, 'after the frontier restart');
    await killAndRestart('core', CORE, () => c.lastEvent(), 2000);
    await c.progress(20, 'after the core restart');

    // Redis: seen-test's Bloom generations gone; links go on to the frontier's exact check.
    const flushedAt = Date.now();
    await stack.flushRedis();
    await c.progress(20, 'after the Redis flush');
    redisMs = Date.now() - flushedAt;

    // The broker: stopped (its data kept), down 3 s, started again.
    const stoppedAt = Date.now();
    await stack.stopKafka();
    await sleep(3000);
    await stack.startKafka();
    const healthyAt = Date.now();
    await within(60_000, 'handoff after the broker restart', () => c.lastEvent() > healthyAt, () => c.tails());
    const firstEventMs = c.lastEvent() - healthyAt;
    await c.progress(20, 'after the broker restart');
    const lines = new Map<string, number>();
    for (const [n, p] of c.procs) {
      const during = p.log().filter((l) => typeof l.time === 'number' && l.time >= stoppedAt && l.time <= healthyAt + 15_000);
      lines.set(n, during.filter((l) => /kafka/i.test(String(l.msg))).length);
    }
    broker = { stoppedAt, healthyAt, pauseMs: c.longestPause(stoppedAt, Date.now()), firstEventMs, lines };

    const lastFaultAt = Date.now();
    // One set a look (this process serves the web: a slow look is a slow answer, and the
    // crawler's 10x rule turns slow answers into long gaps).
    const missing = (): string[] => {
      const urls = c.handoff.urls();
      return expected.filter((u) => !urls.has(u));
    };
    await within(240_000, 'every allowed page handed off', () => missing().length === 0, () => `missing: ${missing().slice(0, 20).join(' ')}\n${c.tails()}`);
    timeline = { crawlMs: Date.now() - seededAt, afterLastFaultMs: Date.now() - lastFaultAt };
    // A little longer: a late breach (a retry, a lease re-issued) counts too.
    await sleep(3000);
    for (const [n, p] of [...c.procs]) stops.push(await sigterm(n, p));
  }, 900_000);

  afterAll(async () => {
    // The reader retries without end: left connected, it outlives the private broker and
    // keeps jest (--runInBand) from exiting.
    await c?.handoff.stop().catch(() => undefined);
    for (const p of c?.all ?? []) await p.stop(5000);
    for (const p of c?.all ?? []) writeFileSync(join(artifacts(), `${p.label}-${p.pid}.log`), p.stderr);
    await c?.web.stop();
  }, 120_000);

  test('report', () => {
    const served = pagesServed(c.web.log);
    const twice = new Map<string, number>();
    for (const e of c.web.log.filter((x) => x.path !== '/robots.txt')) twice.set(`${e.ip}${e.path}`, (twice.get(`${e.ip}${e.path}`) ?? 0) + 1);
    const robots = c.web.log.filter((e) => e.path === '/robots.txt').length;
    const gaps = c.web.specs().filter((h) => h.kind === 'crawl-delay').flatMap((h) => {
      const reqs = c.web.requestsTo(h.ip);
      return reqs.slice(1).map((r, i) => r.start - reqs[i]!.end);
    }).sort((a, b) => a - b);
    process.stdout.write(
      `faults: ${served.length} pages served (${c.web.log.length} requests, ${robots} robots.txt), ${c.handoff.events.length} events read for ${c.handoff.urls().size} URLs; ` +
        `crawl ${timeline.crawlMs} ms from the seed, ${timeline.afterLastFaultMs} ms after the last fault; median gap between a Crawl-delay 2 host's requests ${gaps[gaps.length >> 1]} ms\n` +
        kills.map((k) => `  kill -9 ${k.name}: standstill ${k.quietMs} ms after the kill; ${k.name === 'core' ? 'handing off' : 'fetching'} again ${k.resumeMs} ms after the restart\n`).join('') +
        `  broker restart: down ${broker.healthyAt - broker.stoppedAt} ms (stop + 3 s + start); first event ${broker.firstEventMs} ms after healthy; longest pause in page requests ${broker.pauseMs} ms; Kafka log lines per process ${JSON.stringify(Object.fromEntries(broker.lines))}\n` +
        `  Redis flush: 20 more pages served ${redisMs} ms after it\n` +
        `  rebalance: second fetcher assigned ${rebalance.joinedMs} ms after start, ${rebalance.pagesWithTwo} pages with two, longest pause ${rebalance.pauseMs} ms; ` +
        `its SIGTERM ${rebalance.stop?.ms} ms; first fetcher owning all again ${rebalance.backMs} ms after, longest pause ${rebalance.pauseBackMs} ms\n` +
        `  URLs requested more than once: ${[...twice.values()].filter((n) => n > 1).length}\n` +
        `  stops: ${stops.map((s) => `${s.name} ${s.ms} ms (exit ${s.code ?? s.signal})`).join(', ')}\n`,
    );
    expect(kills.map((k) => k.name)).toEqual(['fetch', 'frontier', 'core']);
  });

  test('no page lost: every allowed page, and every page a server answered 200, is handed off', () => {
    const urls = c.handoff.urls();
    expect(expected.filter((u) => !urls.has(u))).toEqual([]);
    const served = [...new Set(pagesServed(c.web.log).map((e) => `${c.web.origin(e.ip)}${e.path}`))];
    expect(served.filter((u) => !urls.has(u))).toEqual([]);
  });

  test('0 politeness breaches by the servers\' own logs, across every fault', () => {
    expect(c.web.violations()).toEqual([]);
  });

  test('no URL has two NEW events with different ids (copies an indexer can drop are allowed)', () => {
    const newIds = new Map<string, Set<string>>();
    for (const e of c.handoff.events.filter((x) => x.change === 'NEW')) {
      let s = newIds.get(e.url);
      if (!s) newIds.set(e.url, (s = new Set()));
      s.add(e.event_id);
    }
    expect([...newIds].filter(([, ids]) => ids.size > 1).map(([u, ids]) => `${u}: ${[...ids].join(' ')}`)).toEqual([]);
  });

  test('killed processes are back within 10 s of their restart', () => {
    for (const k of kills) expect({ name: k.name, fast: k.resumeMs <= RESUME_MS }).toEqual({ name: k.name, fast: true });
  });

  test('every process stops within 15 s of SIGTERM, on its own', () => {
    const all = [...stops, rebalance.stop!];
    expect(all).toHaveLength(4);
    for (const s of all) expect({ name: s.name, code: s.code, inTime: s.ms <= STOP_MS }).toEqual({ name: s.name, code: 0, inTime: true });
  });

  test('logs: every line JSON; a broker restart is a few lines per process, not one per failed request', () => {
    for (const p of c.all) {
      const lines = p.stderr.split('\n').filter((l) => l.trim() !== '');
      // A kill -9 may cut a process's last line.
      const cut = p.child.signalCode === 'SIGKILL' ? 1 : 0;
      expect({ label: p.label, nonJson: lines.length - parseJsonLines(p.stderr).length <= cut }).toEqual({ label: p.label, nonJson: true });
    }
    for (const [n, count] of broker.lines) expect({ n, few: count <= 6 }).toEqual({ n, few: true });
    expect([...broker.lines.values()].some((n) => n > 0)).toBe(true);
  });
});

describe('SIGTERM whatever the broker does (#37)', () => {
  let web: PolitenessWeb;
  const results: Array<{ fault: string; ms: number; code: number | null; signal: NodeJS.Signals | null }> = [];

  beforeAll(async () => {
    web = await PolitenessWeb.start(faultWeb(60, 6, 20));
  });

  afterAll(async () => {
    await web?.stop();
  });

  /** One process running every stage on a crawl under way, the fault applied, then SIGTERM. */
  async function stopUnder(fault: string, apply: (p: CrawlProcess) => Promise<void>, undo: () => Promise<void>): Promise<void> {
    const prefix = uniquePrefix(`stop-${fault.split(' ')[1]}`);
    const env = stackEnv(prefix, { ...stack.env(), CRAWL_WARC_MAX_AGE_MS: '2000', CRAWL_LEASE_MS: '60000' });
    cliSync(['init'], env);
    const p = new CrawlProcess(['all'], env, fault);
    try {
      await within(120_000, `${fault}: process started`, () => p.logged('processors running'), () => p.stderr.slice(-2000));
      const seededAt = Date.now();
      cliSync(['seed', ...web.seeds()], env);
      await within(60_000, `${fault}: crawl under way`, () => web.log.filter((e) => e.start >= seededAt && e.path !== '/robots.txt').length >= 5, () => p.stderr.slice(-2000));
      await apply(p);
      if (p.child.exitCode !== null) throw new Error(`${fault}: the process ended before SIGTERM (exit ${p.child.exitCode}):\n${p.stderr.slice(-3000)}`);
      const s = await sigterm(fault, p);
      results.push({ fault, ms: s.ms, code: s.code, signal: s.signal });
    } finally {
      await p.stop(1000);
      writeFileSync(join(artifacts(), `${fault.replace(/ /g, '-')}-${p.pid}.log`), p.stderr);
      await undo();
    }
  }

  test('with the broker down, hung (SIGSTOP), restarting, or down since the process started, a process stops within 15 s', async () => {
    const unreachable = (p: CrawlProcess): Promise<number> =>
      within(60_000, `${p.label}: the process saw the outage`, () => p.logged('Kafka unreachable: retrying until a broker answers (one line then, none per failed request)'), () => p.stderr.slice(-2000));
    await stopUnder('broker down', async (p) => {
      await stack.stopKafka();
      await unreachable(p);
    }, () => stack.startKafka());
    // Requests sent to a hung broker wait for kafkajs's 30 s request timeout; a second of them is enough.
    await stopUnder('broker hung', async () => {
      stack.pauseKafka();
      await sleep(1000);
    }, async () => stack.resumeKafka());
    let restarting: Promise<void> = Promise.resolve();
    await stopUnder('broker restarting', async (p) => {
      await stack.stopKafka();
      await unreachable(p);
      restarting = stack.startKafka();
    }, () => restarting);
    // Started while the broker is down: it waits for the broker, and a SIGTERM still ends it.
    await stack.stopKafka();
    const waiting = new CrawlProcess(['fetch'], stackEnv(uniquePrefix('stop-start'), stack.env()), 'broker down at start');
    try {
      await unreachable(waiting);
      const s = await sigterm('broker down at start', waiting);
      results.push({ fault: s.name, ms: s.ms, code: s.code, signal: s.signal });
    } finally {
      await waiting.stop(1000);
      await stack.startKafka();
    }
    process.stdout.write(`SIGTERM under broker faults: ${results.map((r) => `${r.fault} ${r.ms} ms (exit ${r.code ?? r.signal})`).join(', ')}\n`);
    expect(results.map((r) => r.fault)).toEqual(['broker down', 'broker hung', 'broker restarting', 'broker down at start']);
    for (const r of results) expect({ fault: r.fault, killed: r.signal, inTime: r.ms <= STOP_MS }).toEqual({ fault: r.fault, killed: null, inTime: true });
  }, 600_000);
});
