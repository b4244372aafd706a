/**
 * CRAWL_PARSE_THREADS: the parse worker's heap must not grow with the pages it parses. With
 * piscina's default an idle worker waited in Atomics.wait instead of its event loop, so V8's
 * tasks on that thread (the end of a major GC among them) never ran and the worker kept about
 * 125 KB of every page it parsed: 900 MB after 7,000 pages (processors/parse-pool.ts).
 *
 * Checked in a plain node process over the built pool (its worker script is compiled
 * JavaScript): 4,000 synthetic 50 KiB pages through one worker, the process's resident memory
 * measured after a warm-up and at the end.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

const script = `
const { createHash } = require('node:crypto');
const { createParseAnalyzer } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse-pool.js'))});
const { fillerHtml, pageHtml } = require(${JSON.stringify(join(ROOT, 'dist', 'bench', 'synthetic-web.js'))});
const filler = fillerHtml(60000);
const pool = createParseAnalyzer(1, 'KCrawl/1.0 (+https://example.org/bot)');
if (!pool) throw new Error('no parse pool: is dist built?');
function page(n) {
  const body = Buffer.from(pageHtml(n % 50, n, 50, 8080, filler));
  const url = 'http://127.0.0.1:8080/p/' + n;
  return {
    url, final_url: url, host: '127.0.0.1', depth: 1, fetched_at: Date.now(), http_status: 200,
    content_type: 'text/html; charset=utf-8', body, truncated: false,
    sha256: createHash('sha256').update(body).digest('hex'), prev_sha256: null,
    warc: { uri: 'file:///x.warc.gz', offset: 0, length: 1 }, x_robots_tag: null,
  };
}
async function parse(from, to) {
  // 32 at a time, as parse keeps its worker busy.
  for (let n = from; n < to; n += 32) {
    const batch = [];
    for (let k = n; k < Math.min(to, n + 32); k++) batch.push(pool.analyze(page(k)));
    for (const a of await Promise.all(batch)) if (a.links.length !== 25) throw new Error('expected 25 links, got ' + a.links.length);
  }
}
(async () => {
  await parse(0, 500);
  global.gc();
  const before = process.memoryUsage().rss;
  await parse(500, 4500);
  global.gc();
  const after = process.memoryUsage().rss;
  await pool.close();
  process.stdout.write(JSON.stringify({ growthMiB: (after - before) / 2 ** 20 }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

describe('parse on a worker thread', () => {
  test('keeps its memory flat over 4,000 pages', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    const { growthMiB } = JSON.parse(r.stdout) as { growthMiB: number };
    // Kept pages would be about 125 KB each: 490 MiB for these 4,000.
    expect(growthMiB).toBeLessThan(150);
  }, 150_000);
});
