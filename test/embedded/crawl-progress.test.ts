/**
 * `crawl run`'s progress lines as a user sees them (the built CLI, stderr piped): one a
 * second, counting responses as they arrive. WARC files are kept open for the whole run here
 * (CRAWL_WARC_MAX_AGE_MS and CRAWL_WARC_MAX_RECORDS far above it), so no page is stored until
 * the crawl stops: a line that counted stored pages would read 0 throughout. Every page is a
 * seed, as links are followed only once a page is stored and parsed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixtureWeb, page } from '../fixtures/web';
import { runCli } from '../support/cli';

const IPS = ['127.0.11.1', '127.0.11.2', '127.0.11.3'];
const PAGES = 30;

describe('crawl run progress', () => {
  let web: FixtureWeb;
  const out = mkdtempSync(join(tmpdir(), 'crawl-progress-'));
  let lines: string[] = [];
  let stdout = '';

  beforeAll(async () => {
    web = await FixtureWeb.start(
      IPS.map((ip) => {
        const pages: Record<string, string> = { '/': page(`Home ${ip}`, Array.from({ length: PAGES }, (_, i) => `/p/${i}`)) };
        for (let i = 0; i < PAGES; i++) pages[`/p/${i}`] = page(`Page ${i} of ${ip}`, []);
        return { ip, robots: 'User-agent: *\nAllow: /\n', pages };
      }),
    );
    const seeds = join(out, 'seeds.txt');
    writeFileSync(seeds, IPS.flatMap((ip) => ['/', ...Array.from({ length: PAGES }, (_, i) => `/p/${i}`)].map((p) => web.origin(ip) + p)).join('\n'));
    const r = await runCli(['run', '--seeds-file', seeds, '--out', join(out, 'crawl'), '--allow-private-network', '--scope', 'any', '--max-secs', '5'], {
      CRAWL_MIN_HOST_DELAY_MS: '100', CRAWL_WARC_MAX_AGE_MS: '600000', CRAWL_WARC_MAX_RECORDS: '100000', CRAWL_LOG_LEVEL: 'warn',
    }).done;
    expect(r.code).toBe(0);
    stdout = r.stdout;
    lines = r.stderr.split('\n').filter((l) => l.includes('pages/s'));
  });

  afterAll(async () => {
    await web?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  test('one line a second while crawling, with every count and an ETA from --max-secs', () => {
    // 5 s of crawling: a line each second (a loaded machine may delay a tick or the stop a little).
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.length).toBeLessThanOrEqual(7);
    for (const l of lines) {
      expect(l).toMatch(/^\d+\.\d pages\/s \(last 10 s\), fetched \d+, stored \d+, parsed \d+, handed off \d+, queued \d+, in flight \d+, hosts \d+, ETA /);
    }
  });

  test('counts pages as their responses arrive, before any WARC file is stored', () => {
    const field = (l: string, name: string): number => Number(new RegExp(`${name} (\\d+)`).exec(l)![1]);
    const last = lines[lines.length - 1];
    expect(field(last, 'stored')).toBe(0);
    expect(field(last, 'fetched')).toBeGreaterThan(5);
    expect(Number(/^(\d+\.\d)/.exec(last)![1])).toBeGreaterThan(0);
    // Stored at the stop, when the open files are closed.
    expect(Number(/(\d+) pages stored/.exec(stdout)![1])).toBeGreaterThan(5);
  });
});
