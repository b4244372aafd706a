/**
 * CRAWL_PARSE_THREADS (processors/parse-pool.ts), checked in a plain node process over the built
 * pool (its worker script is compiled JavaScript), with synthetic 50 KiB pages:
 *
 * - The worker's heap does not grow with the pages it parses. With piscina's default an idle
 *   worker waited in Atomics.wait instead of its event loop, so V8's tasks on that thread (the
 *   end of a major GC among them) never ran and the worker kept about 125 KB of every page it
 *   parsed: 900 MB after 7,000 pages. 4,000 pages through one worker, the process's resident
 *   memory measured after a warm-up and at the end.
 * - The worker keeps parsing while the crawl's event loop is busy. With one page handed over at
 *   a time, each next page waited for that loop to take the last result: in `crawl run` the
 *   worker sat idle with 1,600 pages to parse while the loop was busy fetching.
 * - Big pages do not pile up in the worker: its queue holds ANALYZER_MAX_BYTES of pages at most
 *   (each page there is a copy), the rest wait their turn, in order, and all are analysed, also
 *   when the pool is closed while they wait.
 * - The text comes back as its UTF-8 bytes (the text record's block), not as a string on the
 *   crawl's event-loop heap.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

const prelude = `
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
`;

const memoryScript = `${prelude}
async function parse(from, to) {
  // 32 at a time, as parse keeps its worker busy.
  for (let n = from; n < to; n += 32) {
    const batch = [];
    for (let k = n; k < Math.min(to, n + 32); k++) batch.push(pool.analyze(page(k)));
    for (const a of await Promise.all(batch)) if (a.linkUrls.length !== 25) throw new Error('expected 25 links, got ' + a.linkUrls.length);
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

const busyLoopScript = `${prelude}
(async () => {
  const pages = Array.from({ length: 64 }, (_, n) => page(n));
  await Promise.all(pages.slice(0, 8).map((p) => pool.analyze(p))); // worker started and warm
  let done = 0;
  const all = pages.map((p) => pool.analyze(p).then(() => done++));
  // The event loop is busy for 1.5 s: far longer than one worker needs for 64 pages.
  const until = Date.now() + 1500;
  while (Date.now() < until);
  await new Promise((r) => setTimeout(r, 20));
  const doneSoonAfter = done;
  await Promise.all(all);
  await pool.close();
  process.stdout.write(JSON.stringify({ doneSoonAfter, total: done }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

const bigPagesScript = `${prelude}
const { ANALYZER_MAX_BYTES } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse-pool.js'))});
(async () => {
  // 2 MiB pages (the largest body fetch keeps): 36 of them are 72 MiB.
  const big = (n) => { const p = page(n); p.body = Buffer.concat([p.body, Buffer.alloc(2 * 1024 * 1024 - p.body.length, 0x20)]); return p; };
  const order = [];
  const all = Array.from({ length: 36 }, (_, n) => pool.analyze(big(n)).then((a) => order.push(n) && a));
  const backlog = pool.backlog();
  // Closing at once: the pages still waiting for room are analysed too, none fails.
  await pool.close();
  const results = await Promise.all(all);
  const after = pool.backlog();
  process.stdout.write(JSON.stringify({
    max: ANALYZER_MAX_BYTES, bytes: backlog.bytes, waiting: backlog.waiting, after,
    links: results.every((a) => a.linkUrls.length === 25), inOrder: order.every((n, i) => n === i),
  }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

const viewsScript = `${prelude}
const { gzipSync } = require('node:zlib');
const { exchangeRecords } = require(${JSON.stringify(join(ROOT, 'dist', 'lib', 'warc', 'record.js'))});
(async () => {
  // As Kafka decodes them: every page's bytes a view into one large fetch batch.
  const batch = Buffer.alloc(8 * 1024 * 1024);
  let at = 0;
  const inBatch = (b) => { b.copy(batch, at); const v = batch.subarray(at, at + b.length); at += b.length; return v; };
  const plain = page(1);
  const viaBody = { ...plain, body: inBatch(plain.body) };
  const c = { url: plain.url, ip: '127.0.0.1', status: 200, statusText: 'OK', headers: [['Content-Type', 'text/html']], requestHead: 'GET / HTTP/1.1\\r\\n\\r\\n', body: plain.body, truncated: false, startedAt: 0, elapsedMs: 1, responseMs: 1 };
  const gz = exchangeRecords(c, { warcinfoId: '<urn:uuid:i>', payloadSha256: plain.sha256 })[1].gz;
  const viaRecord = { ...plain, body: Buffer.alloc(0), record_gz: inBatch(gz) };
  const [a, b, d] = await Promise.all([pool.analyze(plain), pool.analyze(viaBody), pool.analyze(viaRecord)]);
  await pool.close();
  process.stdout.write(JSON.stringify({
    same: JSON.stringify(a) === JSON.stringify(b) && JSON.stringify(a) === JSON.stringify(d), links: a.linkUrls.length,
    // The caller's bytes stay whole (a retry parses them again): nothing of theirs was handed over.
    intact: viaBody.body.equals(plain.body) && viaRecord.record_gz.equals(gz) && batch.buffer.byteLength === 8 * 1024 * 1024 && plain.body.length > 0,
  }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

const textScript = `${prelude}
const { analyzePage } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse.js'))});
(async () => {
  const plain = page(2);
  const body = Buffer.from(plain.body.toString('utf8').replace('<body>', '<body><p>Grüße aus Köln — 東京の天気</p>'));
  const p = { ...plain, body };
  const here = analyzePage(p, { userAgent: 'KCrawl/1.0 (+https://example.org/bot)' });
  const a = await pool.analyze(p);
  await pool.close();
  process.stdout.write(JSON.stringify({
    bytes: a.text instanceof Uint8Array, shared: a.text.buffer instanceof SharedArrayBuffer, released: typeof a.releaseText === 'function',
    same: Buffer.from(a.text.buffer, a.text.byteOffset, a.text.byteLength).toString('utf8') === here.text, hasText: here.text.includes('東京の天気'),
    rest: JSON.stringify({ ...a, text: null }) === JSON.stringify({ ...here, text: null }),
  }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

const ringScript = `${prelude}
const { analyzePage } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse.js'))});
const UA = 'KCrawl/1.0 (+https://example.org/bot)';
async function run(from, count, release) {
  const out = { shared: 0, own: 0, bad: 0, bytes: 0 };
  for (let n = from; n < from + count; n += 32) {
    const batch = [];
    for (let k = n; k < Math.min(from + count, n + 32); k++) batch.push(pool.analyze(page(k)).then((a) => ({ a, k })));
    // Checked while the whole batch is held, as parse holds pages until it has decided them.
    for (const { a, k } of await Promise.all(batch)) {
      const want = Buffer.from(analyzePage(page(k), { userAgent: UA }).text, 'utf8');
      if (!Buffer.from(a.text.buffer, a.text.byteOffset, a.text.byteLength).equals(want)) out.bad++;
      if (a.text.buffer instanceof SharedArrayBuffer) out.shared++;
      else out.own++;
      out.bytes += a.text.byteLength;
      if (release && a.releaseText) a.releaseText();
    }
  }
  return out;
}
(async () => {
  const released = await run(0, 1500, true);
  const kept = await run(1500, 1000, false);
  await pool.close();
  process.stdout.write(JSON.stringify({ released, kept }));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

const heapLimitScript = `
const { createHash } = require('node:crypto');
const { createParseAnalyzer, WORKER_MAX_OLD_GENERATION_MB } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse-pool.js'))});
const { analyzePage } = require(${JSON.stringify(join(ROOT, 'dist', 'processors', 'parse.js'))});
const UA = 'KCrawl/1.0 (+https://example.org/bot)';
const page = (n, html) => {
  const body = Buffer.from(html);
  const url = 'http://127.0.0.1:8080/h/' + n;
  return { url, final_url: url, host: '127.0.0.1', depth: 1, fetched_at: 1, http_status: 200, content_type: 'text/html; charset=utf-8', body, truncated: false,
    sha256: createHash('sha256').update(body).digest('hex'), prev_sha256: null, warc: { uri: 'file:///x.warc.gz', offset: 0, length: 1 }, x_robots_tag: null };
};
const bigPage = (paragraphs) => page(1, '<html><head><title>big page</title></head><body>' + Array.from({ length: paragraphs }, (_, i) => '<p class="c' + i + '">word' + i + ' w' + (i % 97) + '</p>').join('') + '</body></html>');
// Under the tight limit, about 22 MB of markup: its decoded string alone is more than the worker's
// 16 MB old generation, so the worker always runs out (6 MB sometimes fitted, and the test flaked).
// Under the default limit, 6 MB (three times the largest body fetch keeps) fits.
const bigFor = { 16: bigPage(420000), [WORKER_MAX_OLD_GENERATION_MB]: bigPage(120000) };
const small = page(2, '<html><head><title>small page</title></head><body><p>' + 'a few words of text '.repeat(40) + '</p></body></html>');
const warnings = [];
process.on('warning', (w) => warnings.push(w.message));
(async () => {
  const out = { limit: WORKER_MAX_OLD_GENERATION_MB };
  for (const mb of [16, WORKER_MAX_OLD_GENERATION_MB]) {
    const pool = createParseAnalyzer(1, UA, mb);
    const big = bigFor[mb];
    const a = await pool.analyze(big);
    const b = await pool.analyze(small);
    const text = (x) => typeof x.text === 'string' ? x.text : Buffer.from(x.text.buffer, x.text.byteOffset, x.text.byteLength).toString('utf8');
    out[mb === 16 ? 'tight' : 'default'] = {
      same: JSON.stringify({ ...a, text: null, releaseText: null }) === JSON.stringify({ ...analyzePage(big, { userAgent: UA }), text: null, releaseText: null }) && text(a) === analyzePage(big, { userAgent: UA }).text,
      nextOnWorker: typeof b.text !== 'string' && b.parsed.title === 'small page',
      warnings: warnings.splice(0).filter((m) => m.includes('past its heap limit')).length,
    };
    a.releaseText?.();
    b.releaseText?.();
    await pool.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

describe('parse on a worker thread', () => {
  test('parses pages whose bytes are views into a larger buffer, and leaves the caller\'s bytes whole', () => {
    const r = spawnSync(process.execPath, ['-e', viewsScript], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ same: true, links: 25, intact: true });
  }, 90_000);

  test('returns the text as its UTF-8 bytes in the worker\'s shared ring, the rest as parsed on this thread', () => {
    const r = spawnSync(process.execPath, ['-e', textScript], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ bytes: true, shared: true, released: true, same: true, hasText: true, rest: true });
  }, 90_000);

  test('texts through the ring stay each page\'s own as the ring is written over; unreleased, they come in buffers of their own', () => {
    const r = spawnSync(process.execPath, ['-e', ringScript], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as Record<string, { shared: number; own: number; bad: number; bytes: number }>;
    // Released as decided: 1,500 pages, about 66 MB of text, go round the 32 MiB ring twice.
    expect(out.released).toMatchObject({ shared: 1500, own: 0, bad: 0 });
    expect(out.released.bytes).toBeGreaterThan(2 * 32 * 1024 * 1024);
    // Never released: the ring fills, and later texts travel in their own buffers, intact.
    expect(out.kept.bad).toBe(0);
    expect(out.kept.shared).toBeGreaterThan(0);
    expect(out.kept.own).toBeGreaterThan(0);
    expect(out.kept.shared + out.kept.own).toBe(1000);
  }, 150_000);

  test('a page that takes a worker past its heap limit is analysed on the stage\'s thread, the same; the next goes to a new worker', () => {
    const r = spawnSync(process.execPath, ['-e', heapLimitScript], { encoding: 'utf8', timeout: 120_000 });
    expect(JSON.parse(r.stdout)).toEqual({
      limit: 128,
      tight: { same: true, nextOnWorker: true, warnings: 1 },
      // Within the default limit: on the worker, no warning.
      default: { same: true, nextOnWorker: true, warnings: 0 },
    });
  }, 150_000);

  test('keeps parsing while the event loop is busy', () => {
    const r = spawnSync(process.execPath, ['-e', busyLoopScript], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    const { doneSoonAfter, total } = JSON.parse(r.stdout) as { doneSoonAfter: number; total: number };
    expect(total).toBe(64);
    // All parsed during the busy spell: their results only wait to be read. One page at a time,
    // 20 ms would have given a few (nearly 2 ms a page on the worker, one per hand-over).
    expect(doneSoonAfter).toBeGreaterThanOrEqual(60);
  }, 90_000);

  test('holds at most ANALYZER_MAX_BYTES of pages in the worker; the rest wait in order', () => {
    const r = spawnSync(process.execPath, ['-e', bigPagesScript], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { max: number; bytes: number; waiting: number; after: { bytes: number; waiting: number }; links: boolean; inOrder: boolean };
    const perPage = 2 * 1024 * 1024;
    // As many 2 MiB pages as fit in the budget went to the worker at once; the others waited.
    expect(out.bytes).toBe(Math.floor(out.max / perPage) * perPage);
    expect(out.waiting).toBe(36 - Math.floor(out.max / perPage));
    expect(out.after).toEqual({ bytes: 0, waiting: 0 });
    expect(out).toMatchObject({ links: true, inOrder: true });
  }, 150_000);

  test('keeps its memory flat over 4,000 pages', () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '-e', memoryScript], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    const { growthMiB } = JSON.parse(r.stdout) as { growthMiB: number };
    // Kept pages would be about 125 KB each: 490 MiB for these 4,000.
    expect(growthMiB).toBeLessThan(150);
  }, 150_000);
});
