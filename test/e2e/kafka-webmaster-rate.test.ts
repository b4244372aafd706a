/**
 * A webmaster's controls on a live crawl, Kafka mode on the real local stack, judged from the
 * fixture server's own request log: `crawl process all` crawls a loopback host at our default
 * pace (CRAWL_MIN_HOST_DELAY_MS 200); its webmaster (an account from `crawl webmaster
 * add-account`, the host verified through a real DNS server on a loopback port) sets
 * 0.5 requests/s until a time a few seconds ahead through `crawl serve`. From 3 s after the PUT
 * (the acceptance allows 60 s) no two requests are closer than 2 s; after `until` the default
 * pace is back. GET /webmaster/v1/sites/{host} then counts the same requests the server logged.
 * Last, an opt-out from crawling through the same API stops requests within 60 s, the frontier
 * holding the host (at most the one lease already out meets fetch's refusal).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { distinctWords, FixtureWeb, page } from '../fixtures/web';
import { startTestDns, type TestDns } from '../support/dns-server';
import { callJson, eventually } from '../support/http-json';

import { CLI, sleep } from '../support/cli';
import { cliSync } from '../support/kafka-stack';
const prefix = `e2e-wm-${randomBytes(4).toString('hex')}.`;
const IP = '127.0.10.41';
const PAGES = 200;
/** How long the 0.5/s rate is set for. */
const RATE_MS = 24_000;
/** The frontier may hold one lease timed by the old pace when the row arrives. */
const GRACE_MS = 3000;
const STOP_WITHIN_MS = 60_000;
const QUIET_MS = 8000;


describe('webmaster crawl rate and opt-out on a live crawl (Kafka mode)', () => {
  let web: FixtureWeb;
  let dns: TestDns;
  let env: NodeJS.ProcessEnv;
  let serve: ChildProcess;
  let procs: ChildProcess;
  let procLog = '';
  let base = '';
  let token = '';

  const cli = (args: string[]): string => cliSync(args, env);
  const call = (method: string, path: string, body?: unknown) => callJson(base, method, path, body, { token });
  const pageRequests = (after = 0): number[] => web.requestsTo(web.origin(IP)).filter((e) => e.path.startsWith('/p/') && e.at >= after).map((e) => e.at);
  const gaps = (ts: number[]): number[] => ts.slice(1).map((t, i) => t - ts[i]);

  beforeAll(async () => {
    const pages: Record<string, string> = { '/': page(`Home of ${IP}`, Array.from({ length: PAGES }, (_, i) => `/p/${i}`)) };
    for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i}`, [], distinctWords(7_000 + i));
    web = await FixtureWeb.start([{ ip: IP, pages }]);
    dns = await startTestDns();
    env = {
      ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_API_TOKEN: randomBytes(24).toString('hex'), CRAWL_LOG_LEVEL: 'info',
      CRAWL_ALLOW_PRIVATE_NETWORK: 'true', CRAWL_MIN_HOST_DELAY_MS: '200', CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_WEBMASTER_DNS_SERVERS: dns.server,
    };
    cli(['init']);
    token = /token: (\S+)/.exec(cli(['webmaster', 'add-account', 'Fixture site owner']))![1];
    serve = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    serve.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    base = await eventually('crawl serve to listen', () => /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[0].replace(/\/$/, ''), 600);
    procs = spawn(process.execPath, [CLI, 'process', 'all'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    procs.stdout!.on('data', (d: Buffer) => (procLog += d.toString()));
    procs.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
  });

  afterAll(async () => {
    for (const p of [serve, procs]) p?.kill('SIGTERM');
    await Promise.all([serve, procs].map((p) => p && new Promise((r) => (p.exitCode !== null ? r(null) : p.once('close', r)))));
    await web?.stop();
    await dns?.close();
  });

  test('0.5 requests/s holds (no two requests closer than 2 s) until `until`, then our default pace is back; GET counts what the server saw', async () => {
    // The webmaster claims and verifies the host.
    const added = await eventually('the account in crawl serve', async () => {
      const r = await call('POST', '/webmaster/v1/sites', { host: IP });
      return r.status === 201 ? r : undefined;
    });
    dns.setTxt(IP, [(added.json.verification as { record: string }).record]);
    expect((await call('POST', `/webmaster/v1/sites/${IP}/verify`)).json.status).toBe('VERIFIED');

    // The crawl goes at our default pace first.
    cli(['seed', `${web.origin(IP)}/`]);
    await eventually('the crawl to get going', () => (pageRequests().length >= 8 ? true : undefined), 900).catch((e: Error) => {
      throw new Error(`${e.message}\n${procLog.slice(-3000)}`);
    });
    expect(Math.min(...gaps(pageRequests()))).toBeLessThan(1000);

    const until = Date.now() + RATE_MS;
    const put = await call('PUT', `/webmaster/v1/sites/${IP}/crawl-rate`, { max_requests_per_second: 0.5, until: new Date(until).toISOString() });
    expect(put.status).toBe(200);
    const setAt = Date.now();
    while (Date.now() < until + 12_000) await sleep(200);

    const during = pageRequests(setAt + GRACE_MS).filter((t) => t <= until);
    const after = pageRequests(until + GRACE_MS);
    const minDuring = Math.min(...gaps(during));
    process.stderr.write(
      `webmaster rate 0.5/s: ${during.length} page requests from ${GRACE_MS} ms after the PUT to until, least gap ${minDuring} ms; ` +
      `${after.length} in the ${12_000 - GRACE_MS} ms after, least gap ${Math.min(...gaps(after))} ms\n`,
    );
    expect(during.length).toBeGreaterThanOrEqual(6);
    expect(minDuring).toBeGreaterThanOrEqual(2000);
    // Gone after until: back to about the default pace (200 ms plus 10x response time).
    expect(after.length).toBeGreaterThanOrEqual(10);
    expect(Math.min(...gaps(after))).toBeLessThan(1000);

    // What we fetched from the host in the last day, as the webmaster sees it, is what the server logged.
    const served = web.requestsTo(web.origin(IP)).filter((e) => e.path !== '/robots.txt').length;
    const view = await eventually('GET to count every request', async () => {
      const g = await call('GET', `/webmaster/v1/sites/${IP}`);
      const day = g.json.last_day as { requests: number };
      return day.requests >= web.requestsTo(web.origin(IP)).filter((e) => e.path !== '/robots.txt').length ? g : undefined;
    });
    const day = view.json.last_day as { requests: number; errors: number; min_gap_ms: number; mean_gap_ms: number };
    expect(day.requests).toBeGreaterThanOrEqual(served);
    expect(day.errors).toBe(0);
    expect(day.min_gap_ms).toBeGreaterThan(0);
    expect(view.json.rate).toMatchObject({ webmaster: null, max_requests_per_second: 5 });
  }, 180_000);

  test('an opt-out from crawling set through the webmaster API stops requests within 60 s; the frontier holds the host', async () => {
    expect(pageRequests(Date.now() - 3000).length).toBeGreaterThan(0); // still being crawled
    const r = await call('PUT', `/webmaster/v1/sites/${IP}/opt-outs`, { purposes: { crawl: 'deny' } });
    expect(r.status).toBe(200);
    const setAt = Date.now();
    const last = (): number => Math.max(setAt, ...pageRequests());
    while (Date.now() - setAt < STOP_WITHIN_MS + QUIET_MS && Date.now() - last() < QUIET_MS) await sleep(200);
    const stoppedAfter = Math.max(0, Math.max(0, ...pageRequests()) - setAt);
    const refusals = procLog.split('\n').filter((l) => l.includes(web.origin(IP)) && l.includes('"reason":"opted-out"'));
    process.stderr.write(`webmaster opt-out crawl=deny: last request ${stoppedAfter} ms after the PUT; fetch refused ${refusals.length} lease(s)\n`);
    expect(stoppedAfter).toBeLessThanOrEqual(STOP_WITHIN_MS);
    expect(pageRequests(Date.now() - QUIET_MS)).toEqual([]);
    expect(pageRequests().length).toBeLessThan(PAGES);
    // Held in the frontier: no new lease, so fetch refuses at most the one out when the row came.
    expect(refusals.length).toBeLessThanOrEqual(1);
  }, 120_000);
});
