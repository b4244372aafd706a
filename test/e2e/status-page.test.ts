/**
 * The live status page in a real browser: `crawl run --status-port 0` crawls a loopback
 * fixture web of three hosts (127.0.8.20-22, each a bounded set of pages), and headless
 * Chromium (Debian's, driven by playwright-core) loads the page, waits for it to render live
 * numbers from GET /stats, watches them change, and saves a screenshot to
 * test-artifacts/status-page.png.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { FixtureWeb, page } from '../fixtures/web';
import { CHROMIUM } from '../setup/global-setup';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');
const IPS = ['127.0.8.20', '127.0.8.21', '127.0.8.22'];
/** Pages per host, all linked from the home page, so every host stays busy for a while (bounded by --max-secs). */
const PAGES = 150;

function site(ip: string): Record<string, string> {
  const links = [...Array.from({ length: PAGES }, (_, i) => `/p/${i}`), ...IPS.filter((o) => o !== ip).map((o) => `{origin:${o}}/`)];
  const pages: Record<string, string> = { '/': page(`Home ${ip}`, links) };
  for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i} of ${ip}`, []);
  return pages;
}

describe('the live status page in headless Chromium', () => {
  let web: FixtureWeb;
  let run: ChildProcess;
  let runErr = '';
  let context: BrowserContext | undefined;
  const out = mkdtempSync(join(tmpdir(), 'status-page-'));
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing and jest's global setup could not install it: run \`bash stack/stack.sh browser\` (apt-get install chromium) and see why`);
    web = await FixtureWeb.start(IPS.map((ip) => ({ ip, robots: 'User-agent: *\nAllow: /\n', pages: site(ip) })));
    run = spawn(
      process.execPath,
      [CLI, 'run', '--seed', `${web.origin(IPS[0])}/`, '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '90', '--status-port', '0'],
      { env: { ...process.env, CRAWL_MIN_HOST_DELAY_MS: '200' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    run.stderr!.on('data', (d: Buffer) => (runErr += d.toString()));
  });

  afterAll(async () => {
    await context?.close();
    run?.kill('SIGINT');
    if (run && run.exitCode === null) await new Promise((r) => run.once('close', r));
    await web?.stop();
    rmSync(out, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  });

  test('renders live numbers from the crawl and saves a screenshot', async () => {
    let url: string | undefined;
    for (let i = 0; i < 200 && !url; i++) {
      url = /status page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(runErr)?.[1];
      if (!url) await new Promise((r) => setTimeout(r, 100));
    }
    if (!url) throw new Error(`crawl run never announced its status page:\n${runErr}`);

    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 1100 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const tab = context.pages()[0] ?? (await context.newPage());
    await tab.goto(url);
    await tab.waitForSelector('body[data-live="1"]', { timeout: 30_000 });

    const total = async (): Promise<number> => Number(await tab.textContent('#pages-total'));
    // Live: the count grows while the page is open (the page polls; nothing reloads it).
    for (let i = 0; i < 300 && (await total()) < 5; i++) await tab.waitForTimeout(100);
    const first = await total();
    expect(first).toBeGreaterThanOrEqual(5);
    for (let i = 0; i < 300 && (await total()) <= first; i++) await tab.waitForTimeout(100);
    expect(await total()).toBeGreaterThan(first);
    for (let i = 0; i < 100 && Number(await tab.textContent('#pages-rate')) <= 0; i++) await tab.waitForTimeout(100);
    expect(Number(await tab.textContent('#pages-rate'))).toBeGreaterThan(0);

    expect(Number(await tab.textContent('#urls-total'))).toBeGreaterThan(0);
    const topHosts = await tab.textContent('#top-hosts');
    expect(IPS.some((ip) => topHosts?.includes(ip))).toBe(true);
    expect(await tab.textContent('#statuses')).toContain('HTTP 200');
    const points = (await tab.getAttribute('#rate-line', 'points')) ?? '';
    expect(points.split(' ').length).toBeGreaterThan(100);
    expect(await tab.textContent('#state')).toMatch(/^updated /);
    // Each stage that follows the opt-out registry shows the version it applied; no alarm.
    const registry = (await tab.textContent('#registry')) ?? '';
    for (const stage of ['frontier', 'fetch', 'handoff']) expect(registry).toContain(stage);
    expect(await tab.getAttribute('body', 'data-registry-alarm')).toBe('0');
    expect(await tab.textContent('#registry-version')).toBe('v0');

    // The same server answers Prometheus: pages, latency histogram, status codes, robots outcomes, politeness delays.
    const metrics = await (await fetch(new URL('/metrics', url))).text();
    expect(Number(/^crawl_pages_fetched_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(Number(/^crawl_fetch_duration_seconds_count (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(metrics).toMatch(/^crawl_http_responses_total\{code="200"\} [1-9]/m);
    expect(metrics).toMatch(/^crawl_robots_outcomes_total\{outcome="allowed"\} [1-9]/m);
    expect(metrics).toMatch(/^crawl_politeness_delay_seconds_count [1-9]/m);
    expect(metrics).toMatch(/^crawl_hosts_in_rotation \d+/m);
    expect(metrics).toMatch(/^crawl_frontier_urls\{state="FETCHED"\} [1-9]/m);
    // Consumer lag of each stage's group, from the embedded log (set every second).
    expect(metrics).toMatch(/^crawl_consumer_lag_messages\{group="crawl.frontier",topic="crawl.frontier"\} \d+/m);
    expect(metrics).toMatch(/^crawl_consumer_lag_messages\{group="crawl.handoff",topic="crawl.parsed"\} \d+/m);
    const stats = (await (await fetch(new URL('/stats', url))).json()) as { queues: { lag: Record<string, number> } };
    expect(typeof stats.queues.lag['crawl.fetched']).toBe('number');

    mkdirSync(ARTIFACTS, { recursive: true });
    const file = join(ARTIFACTS, 'status-page.png');
    rmSync(file, { force: true });
    await tab.screenshot({ path: file, fullPage: true });
    const png = readFileSync(file);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(10_000);
  });
});
