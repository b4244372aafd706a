/**
 * The operator's controls on a running embedded crawl (`crawl run --out DIR`), as a user runs
 * them: `crawl block HOST --out DIR` and `crawl seed URL --out DIR` from another process (the
 * crawl's inbox), and POST /hosts/{host}/block and POST /seeds on `--status-port` with
 * CRAWL_API_TOKEN set. A blocked host gets no request afterwards (by its server's own request
 * log), seeds added mid-crawl (of hosts outside the first seeds' scope) are fetched, a typo'd
 * host is refused, and after a restart the blocks still hold and a seed queued while no crawl
 * ran is fetched. Loopback sites only.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournaledTable } from '../../cli/explain-state';
import type { HostPolicyMsg } from '../../lib/messages';
import { FixtureWeb, page } from '../fixtures/web';
import { CLI, sleep } from '../support/cli';
import { callJson, eventually } from '../support/http-json';

const A = '127.0.151.1'; // blocked with `crawl block --out`
const B = '127.0.151.2'; // seeded with `crawl seed --out` mid-crawl
const C = '127.0.151.3'; // blocked with POST /hosts/{host}/block
const D = '127.0.151.4'; // seeded with POST /seeds
const E = '127.0.151.5'; // seeded while no crawl runs: the next run takes it up
const PAGES = 200;
const TOKEN = 'operator-test-token-0123456789';

function site(ip: string, pages: number): { ip: string; pages: Record<string, string> } {
  const p: Record<string, string> = { '/': page(`Home ${ip}`, Array.from({ length: pages }, (_, i) => `/p/${i}`)) };
  for (let i = 0; i < pages; i++) p[`/p/${i}`] = page(`Page ${i} of ${ip}`, [], `Words of page ${i} on ${ip}: ${String(i * 7919).repeat(10)} ${'lorem ipsum '.repeat(i % 7)}`);
  return { ip, pages: p };
}

describe('operator controls on a running crawl run (embedded default)', () => {
  let web: FixtureWeb;
  let out: string;
  let run: ChildProcess;
  let runLog = '';
  let base = '';
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, CRAWL_MIN_HOST_DELAY_MS: '200', CRAWL_LOG_LEVEL: 'info', CRAWL_API_TOKEN: TOKEN });
  const requests = (ip: string, after = 0): number[] => web.requestsTo(web.origin(ip)).filter((e) => e.path !== '/robots.txt' && e.at >= after).map((e) => e.at);
  // Not spawnSync: the fixture sites answer from this process, and a blocked event loop makes
  // their responses slow, which stretches every host's gap (10 x the response time).
  const cli = (...args: string[]): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [CLI, ...args], { env: env(), encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }));
    });
  const startRun = (maxSecs: number): void => {
    runLog = '';
    run = spawn(process.execPath, [CLI, 'run', '--seed', `${web.origin(A)}/`, '--seed', `${web.origin(C)}/`, '--out', out, '--status-port', '0', '--allow-private-network', '--max-secs', String(maxSecs)], {
      env: env(), stdio: ['ignore', 'pipe', 'pipe'],
    });
    run.stdout!.on('data', (d: Buffer) => (runLog += d.toString()));
    run.stderr!.on('data', (d: Buffer) => (runLog += d.toString()));
  };
  const stopRun = async (): Promise<void> => {
    if (run.exitCode === null && run.signalCode === null) {
      run.kill('SIGINT');
      await new Promise((r) => run.once('close', r));
    }
  };

  beforeAll(async () => {
    web = await FixtureWeb.start([site(A, PAGES), site(B, 3), site(C, PAGES), site(D, 3), site(E, 3)]);
    out = mkdtempSync(join(tmpdir(), 'kcrawl-operator-'));
    startRun(120);
    base = await eventually('the status server', () => /status page: (http:\/\/127\.0\.0\.1:\d+)\//.exec(runLog)?.[1], 300);
  });

  afterAll(async () => {
    if (run) await stopRun();
    await web?.stop();
  });

  test('crawl block HOST --out DIR: no request reaches the host afterwards', async () => {
    await eventually('the crawl of A to get going', () => (requests(A).length >= 8 ? true : undefined), 600);
    // The host was being fetched at about 5 requests a second just before.
    expect(requests(A, Date.now() - 2000).length).toBeGreaterThanOrEqual(3);
    const r = await cli('block', A, '--out', out, '--reason', 'operator test');
    expect(r.out).toMatch(/applied by the crawl on/);
    expect(r.code).toBe(0);
    const appliedAt = Date.now();
    await sleep(6000);
    // A lease out as the row arrived may still be answered (one, within the host's 200 ms gap).
    expect(requests(A, appliedAt).length).toBeLessThanOrEqual(1);
    expect(requests(A, appliedAt + 1000)).toEqual([]);
    // The crawl goes on elsewhere meanwhile.
    expect(requests(C, appliedAt + 1000).length).toBeGreaterThanOrEqual(5);
  }, 90_000);

  test('crawl block refuses a host the crawl does not know, unless --force', async () => {
    const r = await cli('block', 'typo.example', '--out', out);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/does not know typo\.example; give --force/);
    const forced = await cli('block', 'typo.example', '--out', out, '--force', '--for', '60');
    expect([forced.code, forced.out]).toEqual([0, expect.stringMatching(/applied by the crawl on/)]);
  }, 30_000);

  test('crawl seed URL --out DIR mid-crawl: fetched, though outside the first seeds\' scope', async () => {
    const r = await cli('seed', `${web.origin(B)}/`, '--out', out);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/1 seed URL\(s\): applied by the crawl on/);
    await eventually('B\'s pages', () => (requests(B).filter((t) => t > 0).length >= 4 ? true : undefined), 300);
    expect(web.requestsTo(web.origin(B)).map((e) => e.path)).toEqual(expect.arrayContaining(['/', '/p/0', '/p/1', '/p/2']));
  }, 60_000);

  test('POST /hosts/{host}/block and POST /seeds on --status-port with CRAWL_API_TOKEN', async () => {
    expect((await callJson(base, 'POST', `/hosts/${C}/block`, { duration_s: 3600 }, { token: null })).status).toBe(401);
    const blocked = await callJson(base, 'POST', `/hosts/${C}/block`, { duration_s: 3600, reason: 'api test' }, { token: TOKEN });
    expect(blocked.status).toBe(202);
    const appliedAt = Date.now();
    const seeded = await callJson(base, 'POST', '/seeds', { urls: [`${web.origin(D)}/`] }, { token: TOKEN });
    expect(seeded.status).toBe(202);
    await eventually('D\'s pages', () => (requests(D).length >= 4 ? true : undefined), 300);
    await sleep(Math.max(0, appliedAt + 5000 - Date.now()));
    expect(requests(C, appliedAt).length).toBeLessThanOrEqual(1);
    expect(requests(C, appliedAt + 1000)).toEqual([]);
    expect((await callJson(base, 'GET', `/hosts/${C}`)).json.block).toMatchObject({ reason: 'api test' });
  }, 60_000);

  test('after a restart the blocks hold (journaled) and a seed queued meanwhile is fetched', async () => {
    await stopRun();
    const queued = await cli('seed', `${web.origin(E)}/`, '--out', out);
    expect(queued.code).toBe(0);
    expect(queued.out).toMatch(/queued in .*no crawl runs on/);
    const policy = [...readJournaledTable<HostPolicyMsg>(join(out, 'state'), 'hostPolicy').values()].filter((p) => p.field === 'block');
    expect(policy.map((p) => p.host).sort()).toEqual([A, C, 'typo.example']);
    const restartAt = Date.now();
    startRun(10);
    await eventually('E\'s pages', () => (requests(E).length >= 4 ? true : undefined), 300);
    await new Promise((r) => (run.exitCode !== null ? r(null) : run.once('close', r)));
    expect(requests(A, restartAt)).toEqual([]);
    expect(requests(C, restartAt)).toEqual([]);
  }, 60_000);
});
