/**
 * The webmaster API in the embedded default: an account made with `crawl webmaster add-account
 * --out DIR` before the run, then `crawl run --out DIR --status-port 0` crawling a loopback
 * host while its webmaster, through the run's status server, claims and verifies the host (a
 * real DNS server on a loopback port), sets 0.5 requests/s (held, by the server's request log),
 * opts out of crawling (requests stop), and reads what we fetched. Bad inputs get the same clear
 * errors as on crawl serve; the operator's endpoints are not served here. The changes and their
 * audit rows are in the run's journal afterwards.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournaledTable } from '../../cli/explain-state';
import type { WebmasterAccountMsg, WebmasterAuditMsg, WebmasterSiteMsg } from '../../lib/messages';
import { FixtureWeb, page } from '../fixtures/web';
import { startTestDns, type TestDns } from '../support/dns-server';
import { CLI, sleep } from '../support/cli';
import { callJson, eventually } from '../support/http-json';

const IP = '127.0.10.51';
const PAGES = 150;

describe('the webmaster API on crawl run --status-port (embedded default)', () => {
  let web: FixtureWeb;
  let dns: TestDns;
  let out: string;
  let run: ChildProcess;
  let runLog = '';
  let base = '';
  let token = '';
  let accountId = '';
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, CRAWL_WEBMASTER_DNS_SERVERS: dns.server, CRAWL_MIN_HOST_DELAY_MS: '200', CRAWL_LOG_LEVEL: 'info' });
  const call = (method: string, path: string, body?: unknown, t: string | null = token) => callJson(base, method, path, body, { token: t });
  const pageRequests = (after = 0): number[] => web.requestsTo(web.origin(IP)).filter((e) => e.path.startsWith('/p/') && e.at >= after).map((e) => e.at);

  beforeAll(async () => {
    const pages: Record<string, string> = { '/': page('Home', Array.from({ length: PAGES }, (_, i) => `/p/${i}`)) };
    for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i}`, [], `Words of page number ${i}: ${String(i * 7919).repeat(12)} ${'lorem ipsum '.repeat(i % 9)}`);
    web = await FixtureWeb.start([{ ip: IP, pages }]);
    dns = await startTestDns();
    out = mkdtempSync(join(tmpdir(), 'kcrawl-wm-'));
    const made = spawnSync(process.execPath, [CLI, 'webmaster', 'add-account', 'Laptop site owner', '--out', out], { env: process.env, encoding: 'utf8' });
    if (made.status !== 0) throw new Error(made.stderr);
    token = /token: (\S+)/.exec(made.stdout)![1];
    accountId = /webmaster account (wm_[0-9a-f]+)/.exec(made.stdout)![1];
    run = spawn(process.execPath, [CLI, 'run', '--seed', `${web.origin(IP)}/`, '--out', out, '--status-port', '0', '--allow-private-network', '--max-secs', '120'], {
      env: env(), stdio: ['ignore', 'pipe', 'pipe'],
    });
    run.stdout!.on('data', (d: Buffer) => (runLog += d.toString()));
    run.stderr!.on('data', (d: Buffer) => (runLog += d.toString()));
    base = await eventually('the status server', () => /status page: (http:\/\/127\.0\.0\.1:\d+)\//.exec(runLog)?.[1], 300);
  });

  afterAll(async () => {
    if (run && run.exitCode === null) {
      run.kill('SIGINT');
      await new Promise((r) => run.once('close', r));
    }
    await web?.stop();
    await dns?.close();
  });

  test('bad inputs: clear errors; the operator endpoints are not served here', async () => {
    expect((await call('POST', '/webmaster/v1/sites', { host: IP }, null)).status).toBe(401);
    expect((await call('POST', '/webmaster/v1/sites', { host: IP }, 'kcw_wrong')).json.error).toBe('invalid_token');
    expect((await call('POST', '/webmaster/v1/sites', '{"host":')).json.error).toBe('invalid_json');
    expect((await call('POST', '/webmaster/v1/sites', { host: 'x'.repeat(1_100_000) })).status).toBe(413);
    expect((await call('GET', `/webmaster/v1/sites/${IP}`)).json.error).toBe('unknown_site');
    expect((await call('POST', '/seeds', { urls: [`${web.origin(IP)}/`] })).status).toBe(404);
  });

  test('claim, verify (wrong record first), set 0.5 requests/s: held by the server log', async () => {
    const added = await call('POST', '/webmaster/v1/sites', { host: IP });
    expect(added.status).toBe(201);
    const record = (added.json.verification as { record: string }).record;
    dns.setTxt(IP, ['kcrawl-verify=ffffffffffffffff']);
    const wrong = await call('POST', `/webmaster/v1/sites/${IP}/verify`);
    expect([wrong.status, wrong.json.error]).toEqual([422, 'verification_failed']);
    const early = await call('PUT', `/webmaster/v1/sites/${IP}/crawl-rate`, { max_requests_per_second: 0.5, until: new Date(Date.now() + 60_000).toISOString() });
    expect([early.status, early.json.error]).toEqual([403, 'site_not_verified']);
    dns.setTxt(IP, [record]);
    expect((await call('POST', `/webmaster/v1/sites/${IP}/verify`)).json.status).toBe('VERIFIED');

    await eventually('the crawl to get going', () => (pageRequests().length >= 5 ? true : undefined), 600);
    const put = await call('PUT', `/webmaster/v1/sites/${IP}/crawl-rate`, { max_requests_per_second: 0.5, until: new Date(Date.now() + 60_000).toISOString() });
    expect(put.status).toBe(200);
    const from = Date.now() + 3000;
    await sleep(3000 + 9000);
    const held = pageRequests(from);
    const gaps = held.slice(1).map((t, i) => t - held[i]);
    process.stderr.write(`embedded webmaster rate 0.5/s: ${held.length} requests in 9 s, least gap ${Math.min(...gaps)} ms\n`);
    expect(held.length).toBeGreaterThanOrEqual(3);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(2000);
  }, 60_000);

  test('an opt-out from crawling stops requests; GET shows it and what we fetched', async () => {
    const r = await call('PUT', `/webmaster/v1/sites/${IP}/opt-outs`, { purposes: { crawl: 'deny', ai_training: 'deny' } });
    expect(r.status).toBe(200);
    expect(r.json.registry_version).toBe(1);
    const setAt = Date.now();
    // A lease out when the row arrived may still be answered (its page is at most 2 s away).
    await sleep(8000);
    expect(pageRequests(setAt + 3000)).toEqual([]);
    const g = await call('GET', `/webmaster/v1/sites/${IP}`);
    expect(g.json).toMatchObject({ status: 'VERIFIED', rate: { webmaster: { max_requests_per_second: 0.5 } }, opt_outs: { decisions: { crawl: 'deny', search_index: 'allow', ai_training: 'deny' } } });
    const day = g.json.last_day as { requests: number };
    expect(day.requests).toBeGreaterThanOrEqual(pageRequests().length);
    // The run's status page lists its stages' applied registry version.
    const stats = (await call('GET', '/stats')).json.optout_registry as { version: number; alarm: boolean; processes: Array<{ stage: string; applied_version: number }> };
    expect(stats).toMatchObject({ version: 1, alarm: false });
    expect(stats.processes.map((p) => p.stage).sort()).toEqual(['fetch', 'frontier', 'handoff']);
  }, 30_000);

  test("the changes and who made them are in the run's journal", async () => {
    run.kill('SIGINT');
    await new Promise((r) => (run.exitCode !== null ? r(null) : run.once('close', r)));
    const state = join(out, 'state');
    const sites = [...readJournaledTable<WebmasterSiteMsg>(state, 'webmasterSites').values()];
    expect(sites).toEqual([expect.objectContaining({ host: IP, account: accountId, status: 'VERIFIED' })]);
    const accounts = [...readJournaledTable<WebmasterAccountMsg>(state, 'webmasterAccounts').values()];
    expect(accounts.map((a) => a.id)).toEqual([accountId]);
    // The audit topic keeps every row; the table read gives the latest per key (the host's, the account's).
    const audit = [...readJournaledTable<WebmasterAuditMsg>(state, 'webmasterAudit').values()];
    expect(audit).toEqual(expect.arrayContaining([
      expect.objectContaining({ actor: `account:${accountId}`, action: 'set-opt-out', host: IP }),
      expect.objectContaining({ actor: expect.stringMatching(/^operator:/), action: 'add-account' }),
    ]));
  }, 30_000);
});
