/**
 * `crawl run`'s progress lines as a user sees them (the built CLI, stderr piped): one a
 * second, counting responses as they arrive. The first WARC file is kept open for 4 s here
 * (CRAWL_WARC_MAX_AGE_MS, and CRAWL_WARC_MAX_RECORDS far above what is fetched), so no page is
 * stored before then: a line that counted stored pages would read 0 while pages come in. Every
 * page is a seed, as links are followed only once a page is stored and parsed.
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
    const r = await runCli(['run', '--seeds-file', seeds, '--out', join(out, 'crawl'), '--allow-private-network', '--scope', 'any', '--max-secs', '6'], {
      CRAWL_MIN_HOST_DELAY_MS: '100', CRAWL_WARC_MAX_AGE_MS: '4000', CRAWL_WARC_MAX_RECORDS: '100000', CRAWL_LOG_LEVEL: 'warn',
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
    // 6 s of crawling: a line each second (a loaded machine may delay a tick or the stop a little).
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(lines.length).toBeLessThanOrEqual(8);
    for (const l of lines) {
      expect(l).toMatch(/^\d+\.\d pages\/s \(last 10 s\), fetched \d+, stored \d+, parsed \d+, handed off \d+, queued \d+, in flight \d+, hosts \d+, ETA /);
    }
  });

  test('counts pages as their responses arrive, before any WARC file is stored', () => {
    const field = (l: string, name: string): number => Number(new RegExp(`${name} (\\d+)`).exec(l)![1]);
    // Before the first file is stored: pages fetched and a rate, none stored yet.
    const before = lines.filter((l) => field(l, 'stored') === 0 && field(l, 'fetched') > 5);
    expect(before.length).toBeGreaterThan(0);
    for (const l of before) expect(Number(/^(\d+\.\d)/.exec(l)![1])).toBeGreaterThan(0);
    // The count never goes down, and stored pages catch up once files are stored.
    const fetched = lines.map((l) => field(l, 'fetched'));
    for (let i = 1; i < fetched.length; i++) expect(fetched[i]).toBeGreaterThanOrEqual(fetched[i - 1]);
    expect(Number(/(\d+) pages stored/.exec(stdout)![1])).toBeGreaterThan(5);
  });
});
