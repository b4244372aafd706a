/**
 * `crawl optout set <host> crawl deny` stops the crawl of that host within 60 s, judged from
 * the fixture server's own request log, while another host keeps being crawled. Kafka mode on
 * the real local stack: `crawl process all` as a child process; the frontier follows crawl.optout
 * as a global table and leases nothing more for an opted-out host (processors/frontier-holds.ts),
 * and the fetch stage refuses a lease already out before any request to it
 * (processors/fetch-gate.ts `gate`, robots.txt included). The handoff half of the same
 * acceptance line (flags and registry version on new events) is
 * test/e2e/kafka-handoff-optout.test.ts.
 *
 * Both sites are flat and large (the home page links PAGES pages, all at depth 1) so the
 * opted-out host is still mid-crawl when the opt-out lands: its silence afterwards is the
 * opt-out's doing, not the end of its pages (checked: it never served all of them).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { distinctWords, FixtureWeb, page } from '../fixtures/web';
import { cliAsync } from '../support/kafka-stack';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const prefix = `e2e-optout-deny-${randomBytes(4).toString('hex')}.`;
const env = {
  ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_LOG_LEVEL: 'info',
  CRAWL_ALLOW_PRIVATE_NETWORK: 'true', CRAWL_MIN_HOST_DELAY_MS: '200',
};
const OPTED = '127.0.10.21';
const OTHER = '127.0.10.22';
/** The acceptance bound: an opt-out from crawling must stop requests within this. */
const STOP_WITHIN_MS = 60_000;
/** How long the opted-out host must stay silent while the other host is still crawled. */
const QUIET_MS = 10_000;
const PAGES = 400;

function site(ip: string, n: number): Record<string, string> {
  const pages: Record<string, string> = { '/': page(`Home of ${ip}`, Array.from({ length: PAGES }, (_, i) => `/p/${i}`)) };
  for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i} of ${ip}`, [], distinctWords(n * 100_000 + i));
  return pages;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const cli = (args: string[]): Promise<string> => cliAsync(args, env);

describe('opt-out from crawling, Kafka mode', () => {
  let web: FixtureWeb;
  let proc: ChildProcess;
  let procLog = '';

  beforeAll(async () => {
    web = await FixtureWeb.start([{ ip: OPTED, pages: site(OPTED, 1) }, { ip: OTHER, pages: site(OTHER, 2) }]);
    const init = spawnSync(process.execPath, [CLI, 'init'], { env, encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`crawl init failed: ${init.stderr}`);
    proc = spawn(process.execPath, [CLI, 'process', 'all'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d: Buffer) => (procLog += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
  });

  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('close', r));
    }
    await web?.stop();
  });

  test('crawl=deny stops requests to the host within 60 s while the other host is still crawled', async () => {
    await cli(['seed', `${web.origin(OPTED)}/`, `${web.origin(OTHER)}/`]);

    // Both hosts are being crawled (pages, not only robots.txt) before the opt-out.
    const requests = (ip: string, after = 0): number => web.requestsTo(web.origin(ip)).filter((e) => e.at > after).length;
    const pageRequests = (ip: string): number => web.requestsTo(web.origin(ip)).filter((e) => e.path.startsWith('/p/')).length;
    for (let i = 0; i < 900 && !(pageRequests(OPTED) >= 3 && pageRequests(OTHER) >= 3); i++) await sleep(100);
    if (pageRequests(OPTED) < 3 || pageRequests(OTHER) < 3) {
      throw new Error(`crawl did not get going: ${pageRequests(OPTED)}/${pageRequests(OTHER)} pages\n${procLog.slice(-4000)}`);
    }

    const setAt = Date.now();
    expect(await cli(['optout', 'set', OPTED, 'crawl', 'deny'])).toMatch(/crawl deny: registry version 1/);
    const commandMs = Date.now() - setAt;

    // Wait until the opted-out host has been silent for QUIET_MS (bounded by the 60 s limit).
    const lastOptedRequest = (): number => Math.max(0, ...web.requestsTo(web.origin(OPTED)).map((e) => e.at));
    while (Date.now() - setAt < STOP_WITHIN_MS + QUIET_MS && Date.now() - Math.max(lastOptedRequest(), setAt) < QUIET_MS) await sleep(200);

    const stoppedAfterMs = Math.max(0, lastOptedRequest() - setAt);
    const quietFrom = Date.now() - QUIET_MS;
    const servedOpted = pageRequests(OPTED);
    const otherAfter = requests(OTHER, lastOptedRequest());
    process.stderr.write(
      `optout crawl deny: command took ${commandMs} ms; last request to the opted-out host ${stoppedAfterMs} ms after the command started ` +
      `(limit ${STOP_WITHIN_MS} ms); it served ${servedOpted}/${PAGES} pages; the other host got ${otherAfter} requests after that, ` +
      `${requests(OTHER, quietFrom)} in the last ${QUIET_MS} ms\n`,
    );
    expect(stoppedAfterMs).toBeLessThanOrEqual(STOP_WITHIN_MS);
    expect(requests(OPTED, quietFrom)).toBe(0);
    // Silent because of the opt-out, not because its pages ran out.
    expect(servedOpted).toBeLessThan(PAGES);
    // The crawl itself carried on: the other host was fetched during the quiet window.
    expect(requests(OTHER, quietFrom)).toBeGreaterThanOrEqual(2);
    // The frontier holds the host (no lease): fetch refuses at most the one lease that was out
    // when the row arrived. Without the hold every lease meets fetch's refusal (dozens here).
    const refusals = procLog.split('\n').filter((l) => l.includes(`"${web.origin(OPTED)}/p/`) && l.includes('"reason":"opted-out"'));
    expect(refusals.length).toBeLessThanOrEqual(1);
  }, 240_000);
});
