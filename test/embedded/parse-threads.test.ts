/**
 * `crawl run` with parsing on a worker thread (CRAWL_PARSE_THREADS=1): the same pages handed
 * off as parsing on the event loop, links followed, duplicates still caught (their decision
 * stays on the stage's thread), and nothing failing on the way. The built CLI against two hosts
 * on 127.0.0.25-26.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixtureWeb, page } from '../fixtures/web';
import { readHandoff, readJsonLog, runCli } from '../support/cli';
import { readOneRecord } from '../support/warc-read';
import type { FetchedPageMsg } from '../../lib/messages';
import type { ParseAnalyzer } from '../../processors/parse-pool';

describe('crawl run with CRAWL_PARSE_THREADS=1', () => {
  let web: FixtureWeb;

  beforeAll(async () => {
    const body = 'A paragraph long enough to give this page a fingerprint of its own words. '.repeat(20);
    web = await FixtureWeb.start([
      {
        ip: '127.0.0.25',
        pages: {
          '/': page('Delta home', ['/d1', '/d2', '/copy', '{origin:127.0.0.26}/']),
          '/d1': page('Delta one', ['/d2']),
          '/d2': page('Delta two', []),
          // The same bytes as /d2: an exact duplicate, never handed off.
          '/copy': page('Delta two', []),
        },
      },
      { ip: '127.0.0.26', pages: { '/': page('Epsilon home', ['/e1']), '/e1': (_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body><p>${body}</p></body></html>`) } },
    ]);
  });

  afterAll(async () => {
    await web?.stop();
  });

  test('hands off every new page, follows links and drops the duplicate, as on the event loop', async () => {
    const runs: Record<string, string[]> = {};
    for (const threads of ['1', '0']) {
      const out = mkdtempSync(join(tmpdir(), `parse-threads-${threads}-`));
      const r = await runCli(['run', '--seed', `${web.origin('127.0.0.25')}/`, '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '60'], { CRAWL_PARSE_THREADS: threads }).done;
      expect(r.code).toBe(0);
      const log = readJsonLog(join(out, 'crawl.log'));
      expect(log.filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
      const events = await readHandoff(join(out, 'handoff', 'crawl.handoff.v3.avro'));
      for (const e of events) {
        const rec = await readOneRecord(readFileSync(new URL(e.warc.uri)), e.warc.offset, e.warc.length);
        expect(rec.targetUri).toBe(e.url);
      }
      runs[threads] = events.map((e) => e.url).sort();
    }
    const o25 = web.origin('127.0.0.25');
    const o26 = web.origin('127.0.0.26');
    const d2OrCopy = runs['1']!.filter((u) => u === `${o25}/d2` || u === `${o25}/copy`);
    expect(d2OrCopy).toHaveLength(1);
    expect(runs['1']!.filter((u) => !d2OrCopy.includes(u))).toEqual([`${o25}/`, `${o25}/d1`, `${o26}/`, `${o26}/e1`].sort());
    expect(runs['1']).toHaveLength(runs['0']!.length);
  }, 180_000);

  test('reports the workers\' queue as metrics: bytes handed over and pages waiting', async () => {
    // The compiled modules throughout: one metrics registry, the one the pool reports to.
    const { buildStages } = require('../../dist/runtime/build-stages') as typeof import('../../runtime/build-stages');
    const { registry } = require('../../dist/lib/metrics') as typeof import('../../lib/metrics');
    const { loadConfig } = require('../../dist/lib/config') as typeof import('../../lib/config');
    const [parse] = buildStages(['parse'], { config: loadConfig({}, { parseThreads: 1 }), http: null as never, warc: null as never });
    const pages: FetchedPageMsg[] = Array.from({ length: 3 }, (_, i) => ({
      url: `http://a.test/${i}`, final_url: `http://a.test/${i}`, host: 'a.test', depth: 1, fetched_at: 1, http_status: 200,
      content_type: 'text/html', body: Buffer.from(`<html><body><p>page ${i} ${'words '.repeat(2000)}</p></body></html>`),
      truncated: false, sha256: `s${i}`, prev_sha256: null, warc: { uri: 'file:///w.warc.gz', offset: 0, length: 1 }, x_robots_tag: null,
    }));
    const ctx = { now: Date.now, log: require('pino')({ level: 'silent' }) };
    const handled = pages.map((value, offset) => parse!.handle!({ topic: 'fetched', partition: 0, offset, key: 'a.test', value, timestamp: 1 }, ctx));
    // Read before any worker reply can arrive (replies are events; this is the same turn).
    const during = await registry.metrics();
    await Promise.all(handled);
    const after = await registry.metrics();
    await parse!.close?.();
    const bytes = pages.reduce((n, p) => n + p.body.length, 0);
    expect(during).toMatch(new RegExp(`^crawl_parse_worker_queue_bytes ${bytes}$`, 'm'));
    expect(during).toMatch(/^crawl_parse_worker_waiting_pages 0$/m);
    expect(after).toMatch(/^crawl_parse_worker_queue_bytes 0$/m);
  }, 60_000);

  test('closing the pool finishes the pages already submitted instead of failing them', async () => {
    // The compiled pool (the worker script exists only in dist/), as `crawl run` uses it.
    const { createParseAnalyzer } = require('../../dist/processors/parse-pool') as { createParseAnalyzer: (n: number, ua: string) => ParseAnalyzer | null };
    const analyzer = createParseAnalyzer(1, 'kcrawl-test')!;
    expect(analyzer).not.toBeNull();
    const pages: FetchedPageMsg[] = Array.from({ length: 40 }, (_, i) => ({
      url: `http://a.test/${i}`, final_url: `http://a.test/${i}`, host: 'a.test', depth: 1, fetched_at: 1, http_status: 200,
      content_type: 'text/html', body: Buffer.from(`<html><body><p>page ${i} ${'words '.repeat(2000)}</p><a href="/n${i}">n</a></body></html>`),
      truncated: false, sha256: `s${i}`, prev_sha256: null, warc: { uri: 'file:///w.warc.gz', offset: 0, length: 1 }, x_robots_tag: null,
    }));
    const analyses = pages.map((p) => analyzer.analyze(p));
    await analyzer.close();
    const settled = await Promise.allSettled(analyses);
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.linkUrls : null))).toEqual(pages.map((_, i) => [`http://a.test/n${i}`]));
  }, 60_000);
});
