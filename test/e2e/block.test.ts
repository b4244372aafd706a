/**
 * A block set through the API (or with `crawl block`) stops requests to that host on every fetch process within 60 s,
 * judged from the fixture servers' own request log. Kafka mode on the local stack: `crawl
 * serve`, one process for seen-test/frontier/parse/handoff and two `crawl process fetch`
 * processes, each with its own Prometheus listener. The two blocked hosts are chosen so their
 * partitions have different parity, which the co-partition assignor gives to different fetch
 * processes; a third host is never blocked and shows the crawl carried on.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { partitionForHost } from '../../lib/partitioner';
import { FixtureWeb, page } from '../fixtures/web';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const prefix = `block-${randomBytes(4).toString('hex')}.`;
const token = randomBytes(24).toString('hex');
const env = {
  ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_LOG_LEVEL: 'info',
  CRAWL_API_TOKEN: token, CRAWL_ALLOW_PRIVATE_NETWORK: 'true', CRAWL_MIN_HOST_DELAY_MS: '200',
};
/** The acceptance bound: a block must stop requests within this. */
const BLOCK_WITHIN_MS = 60_000;
/** How long the blocked hosts must stay silent while the control host is still crawled. */
const QUIET_MS = 10_000;
const PAGES = 400;

/** Two hosts with partitions of different parity (so on different fetch processes) and a control host. */
function pickHosts(): { blocked: [string, string]; control: string } {
  const candidates = Array.from({ length: 30 }, (_, i) => `127.0.8.${30 + i}`);
  const even = candidates.find((ip) => partitionForHost(ip, 8) % 2 === 0)!;
  const odd = candidates.find((ip) => partitionForHost(ip, 8) % 2 === 1)!;
  const control = candidates.find((ip) => ip !== even && ip !== odd)!;
  return { blocked: [even, odd], control };
}

/** A flat site: the home page links to PAGES pages (all at depth 1, so the depth limit never ends the crawl early). */
function site(ip: string): Record<string, string> {
  const pages: Record<string, string> = { '/': page(`Home of ${ip}`, Array.from({ length: PAGES }, (_, i) => `/p/${i}`)) };
  for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i} of ${ip}`, []);
  return pages;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a block set through the API', () => {
  const hosts = pickHosts();
  let web: FixtureWeb;
  const procs: ChildProcess[] = [];
  const logs: string[] = [];
  const metricsPorts: number[] = [];
  let base = '';

  const start = (args: string[], extra: Record<string, string> = {}): ChildProcess => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    const i = logs.push('') - 1;
    p.stdout!.on('data', (d: Buffer) => (logs[i] += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (logs[i] += d.toString()));
    procs.push(p);
    return p;
  };
  const pagesFetched = async (port: number): Promise<number> => {
    // The listener starts once the process has joined its group; until then it counts as nothing fetched.
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
    return Number(/^crawl_pages_fetched_total (\d+)/m.exec(text)?.[1] ?? 0);
  };

  beforeAll(async () => {
    web = await FixtureWeb.start([...hosts.blocked, hosts.control].map((ip) => ({ ip, pages: site(ip) })));
    const init = spawnSync(process.execPath, [CLI, 'init'], { env, encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`crawl init failed: ${init.stderr}`);
    start(['serve', '--port', '0', '--host', '127.0.0.1']);
    start(['process', 'seen-test', 'frontier', 'parse', 'handoff']);
    for (let i = 0; i < 2; i++) {
      metricsPorts.push(await freePort());
      start(['process', 'fetch'], { CRAWL_METRICS_PORT: String(metricsPorts[i]), CRAWL_METRICS_HOST: '127.0.0.1' });
    }
    for (let i = 0; i < 300 && !base; i++) {
      base = /http:\/\/127\.0\.0\.1:\d+/.exec(logs[0])?.[0] ?? '';
      if (!base) await sleep(100);
    }
    if (!base) throw new Error(`crawl serve did not start:\n${logs[0]}`);
  });

  afterAll(async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exitCode !== null ? null : new Promise((r) => p.once('close', r)))));
    await web?.stop();
  });

  test('stops requests to the host on every fetch process within 60 s, while other hosts are still crawled', async () => {
    const api = (method: string, path: string, body?: unknown): Promise<Response> =>
      fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const seeded = await api('POST', '/seeds', { urls: [...hosts.blocked, hosts.control].map((ip) => `${web.origin(ip)}/`) });
    expect(seeded.status).toBe(202);

    // Both fetch processes are crawling and every host is being fetched.
    const count = (ip: string, after = 0): number => web.requestsTo(web.origin(ip)).filter((e) => e.path !== '/robots.txt' && e.at > after).length;
    for (let i = 0; i < 600; i++) {
      const perProcess = await Promise.all(metricsPorts.map(pagesFetched));
      if (perProcess.every((n) => n >= 2) && [...hosts.blocked, hosts.control].every((ip) => count(ip) >= 3)) break;
      await sleep(100);
    }
    const perProcess = await Promise.all(metricsPorts.map(pagesFetched));
    if (!perProcess.every((n) => n >= 2)) throw new Error(`not every fetch process fetched: ${perProcess}\n${logs.slice(2).join('\n').slice(-3000)}`);
    for (const ip of [...hosts.blocked, hosts.control]) expect(count(ip)).toBeGreaterThanOrEqual(3);

    const blockedAt = Date.now();
    // One through the API, the other with `crawl block` (the same crawl.host-policy row). Not
    // spawnSync: the fixture sites answer from this process's event loop.
    const r = await api('POST', `/hosts/${hosts.blocked[0]}/block`, { duration_s: 3600, reason: 'webmaster complaint (test)' });
    expect(r.status).toBe(202);
    const cli = await new Promise<{ err: Error | null; out: string }>((resolve) =>
      execFile(process.execPath, [CLI, 'block', hosts.blocked[1], '--for', '3600', '--reason', 'webmaster complaint (cli)'], { env, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => resolve({ err, out: stdout + stderr })));
    expect([cli.err, cli.out]).toEqual([null, expect.stringMatching(/^crawl block 127\.0\.8\.\d+ until .*: sent to crawl\.host-policy\n/)]);

    // Wait until the blocked hosts have been silent for QUIET_MS (bounded by the 60 s limit).
    const lastBlockedRequest = (): number => Math.max(0, ...hosts.blocked.flatMap((ip) => web.requestsTo(web.origin(ip)).map((e) => e.at)));
    while (Date.now() - blockedAt < BLOCK_WITHIN_MS + QUIET_MS && Date.now() - Math.max(lastBlockedRequest(), blockedAt) < QUIET_MS) await sleep(200);

    const stoppedAfterMs = Math.max(0, lastBlockedRequest() - blockedAt);
    process.stderr.write(`block test: last request to a blocked host ${stoppedAfterMs} ms after the API call (limit ${BLOCK_WITHIN_MS} ms)\n`);
    expect(stoppedAfterMs).toBeLessThanOrEqual(BLOCK_WITHIN_MS);
    const quietFrom = Date.now() - QUIET_MS;
    for (const ip of hosts.blocked) expect(count(ip, quietFrom)).toBe(0);
    // The crawl itself carried on: the control host was fetched during the quiet window.
    expect(count(hosts.control, quietFrom)).toBeGreaterThanOrEqual(2);

    const stats = (await (await fetch(`${base}/stats`)).json()) as { blocks: Array<{ host: string }> };
    expect(stats.blocks.map((b) => b.host).sort()).toEqual([...hosts.blocked].sort());
  });
});
