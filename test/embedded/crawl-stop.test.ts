/**
 * `crawl run` stopped by --max-secs while fetches are in flight and the WARC file holding the
 * pages fetched so far is not stored yet (CRAWL_WARC_MAX_AGE_MS far beyond the run). A clean stop
 * stores that file, waits for the fetches in flight, and parses and hands off every stored page
 * exactly once, promptly. It used to store the WARC files before the handlers in flight had
 * added to them: the stop waited 10 s for them in vain, the drain after it its 30 s, and pages
 * in the parse workers at the stop were parsed and handed off twice with the same event_id.
 *
 * Eight sites of pages of about 120 KiB, every one a seed (links are followed only once a page is
 * parsed, which is after the stop here), all fetched and waiting for their WARC file at the stop;
 * then the same with parse on the crawl's own thread (CRAWL_PARSE_THREADS=0), where the stop
 * leaves pages to the drain after it, which must store their text file itself, and with four
 * more sites whose page answers 4 s after it is asked for: in flight when the 3 s stop comes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { distinctWords, FixtureWeb, page, type SiteSpec } from '../fixtures/web';
import { readAllWarcs, readHandoff, runCli, type CliResult } from '../support/cli';

const QUICK = Array.from({ length: 8 }, (_, i) => `127.0.13.${i + 1}`);
const QUICK_PATHS = ['/', '/a', '/b', '/c', '/d'];
const SLOW = Array.from({ length: 4 }, (_, i) => `127.0.13.${i + 11}`);
const SLOW_MS = 4000;
const MAX_SECS = 3;
/** Far above what a stop takes now (about SLOW_MS), far below what it took (over 40 s). */
const STOP_LIMIT_MS = 25_000;

/**
 * A page of about 120 KiB: its text is words no other page has (near-duplicates are not handed
 * off); the bulk is an inline script, as on many real pages, which parse reads through.
 */
function bigPage(title: string, seed: number): string {
  const script = `<script>${Array.from({ length: 2000 }, (_, i) => `var v${i} = "${'x'.repeat(48)}";`).join('\n')}</script>`;
  return page(title, [], distinctWords(seed)).replace('</body>', `${script}</body>`);
}

function sites(withSlow: boolean): SiteSpec[] {
  let n = 0;
  const quick = QUICK.map((ip) => ({ ip, pages: Object.fromEntries(QUICK_PATHS.map((p) => [p, bigPage(`${ip}${p}`, ++n)])) }));
  const slow = SLOW.map((ip): SiteSpec => {
    const html = bigPage(`${ip} slow`, ++n);
    return {
      ip,
      pages: {
        '/slow': (_req, res) => {
          const t = setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(html), SLOW_MS);
          res.on('close', () => clearTimeout(t));
        },
      },
    };
  });
  return withSlow ? [...quick, ...slow] : quick;
}

describe.each([
  ['pages waiting for their WARC file, parsed on a worker thread', false, {}],
  ['pages waiting for their WARC file and others for their response, parsed on the crawl thread', true, { CRAWL_PARSE_THREADS: '0' }],
])('crawl run stopped by --max-secs with %s', (_name, withSlow: boolean, env: Record<string, string>) => {
  let web: FixtureWeb;
  const out = mkdtempSync(join(tmpdir(), 'crawl-stop-'));
  let result: CliResult;
  let elapsedMs = 0;

  beforeAll(async () => {
    web = await FixtureWeb.start(sites(withSlow));
    const started = Date.now();
    result = await runCli(['run', ...pageUrls().flatMap((u) => ['--seed', u]), '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', String(MAX_SECS)], {
      ...env, CRAWL_WARC_MAX_AGE_MS: '600000', CRAWL_MIN_HOST_DELAY_MS: '100', CRAWL_LOG_LEVEL: 'info',
    }).done;
    elapsedMs = Date.now() - started;
  });

  /** Every page is a seed. */
  const pageUrls = (): string[] => [
    ...QUICK.flatMap((ip) => QUICK_PATHS.map((p) => `${web.origin(ip)}${p}`)),
    ...(withSlow ? SLOW.map((ip) => `${web.origin(ip)}/slow`) : []),
  ];
  const storedPages = async (): Promise<string[]> =>
    (await readAllWarcs(join(out, 'warc'))).filter((r) => r.type === 'response' && !r.targetUri!.endsWith('/robots.txt')).map((r) => r.targetUri!);

  afterAll(async () => {
    await web?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  /** Pages the sites were asked for (robots.txt aside). */
  const asked = (): string[] => [...new Set(web.log.filter((e) => e.path !== '/robots.txt').map((e) => `${e.site}${e.path}`))];

  test('stops by --max-secs, with pages asked for (a slow one answers SLOW_MS later, after the stop)', () => {
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^crawl max-secs: /);
    expect(asked().length).toBeGreaterThan(QUICK.length);
    if (withSlow) expect(asked().filter((u) => u.endsWith('/slow')).length).toBeGreaterThan(0);
  });

  test('stores every page it asked for once, those in flight at the stop included', async () => {
    const stored = await storedPages();
    expect(stored.length).toBe(new Set(stored).size);
    expect(stored.sort()).toEqual(asked().sort());
  });

  test('hands off every stored page exactly once, and parses each once', async () => {
    const events = await readHandoff(join(out, 'handoff', 'crawl.handoff.v3.avro'));
    const urls = events.map((e) => e.url);
    expect(urls.length).toBe(new Set(urls).size);
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
    const stored = await storedPages();
    expect(urls.sort()).toEqual(stored.sort());
    const [, storedN, parsedN, handedN] = /(\d+) pages stored, (\d+) parsed .* (\d+) handoff events/.exec(result.stdout) ?? [];
    expect(Number(storedN)).toBe(stored.length);
    expect(Number(parsedN)).toBe(stored.length);
    expect(Number(handedN)).toBe(stored.length);
    expect(result.stdout).not.toContain('left for the next run');
  });

  test('finishes promptly: the stop does not wait out its limits', () => {
    expect(elapsedMs).toBeLessThan(STOP_LIMIT_MS);
  });
});
