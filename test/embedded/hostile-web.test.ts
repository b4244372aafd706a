/**
 * #5 acceptance, embedded default: `crawl run` (the built CLI, a child process) against the
 * hostile web of test/fixtures/hostile-web.ts, with default limits (30 s deadline, 2 MiB body
 * cap, 64 KiB header cap, ratio 100) and `--allow-cidr 127.0.5.0/24` only, so the redirect to
 * 127.0.6.1 meets the SSRF guard. Judged from the outside: exit code, the servers' request logs,
 * the crawl log, the WARC files read by warcio, the URL table journaled under --out/state, and
 * the crawl process's peak resident memory (VmHWM).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { avroReader } from '../../lib/avro';
import type { FetchStatusMsg, UrlStateMsg } from '../../lib/messages';
import { FileLog } from '../../runtime/file-log';
import { HAZARDS, HOSTILE_RANGE, startHostileWeb, type HazardName, type HostileWeb } from '../fixtures/hostile-web';
import { readAllWarcs, readJsonLog, runCli, type CliResult, type LogLine } from '../support/cli';
import type { ReadRecord } from '../support/warc-read';
import { topics } from '../../topologies/crawl';

const readStatus = avroReader(topics.fetchStatus.valueSchema);

/** Generous on purpose: the point is "bounded", not a tuning target (measured peak is printed). */
const RSS_BOUND_BYTES = 400 * 1024 * 1024;
const MIB = 1024 * 1024;

describe('crawl run against a hostile web (#5)', () => {
  let hw: HostileWeb;
  let out: string;
  let result: CliResult;
  let log: LogLine[];
  let records: Array<ReadRecord & { file: string }>;
  const rows = new Map<string, UrlStateMsg>();
  const statuses: FetchStatusMsg[] = [];

  beforeAll(async () => {
    hw = await startHostileWeb();
    out = mkdtempSync(join(tmpdir(), 'crawl-hostile-'));
    const seeds = HAZARDS.flatMap((h) => ['--seed', hw.url(h.name)]);
    const run = runCli(['run', ...seeds, '--out', out, '--allow-cidr', HOSTILE_RANGE, '--scope', 'any', '--max-secs', '150'], { CRAWL_LOG_LEVEL: 'info' });
    result = await run.done;
    log = readJsonLog(join(out, 'crawl.log'));
    records = await readAllWarcs(join(out, 'warc'));
    const fl = new FileLog({ dir: join(out, 'state'), partitions: 8 });
    for (let p = 0; p < 8; p++) {
      for (const r of fl.table('urls', p)) if (r.value) rows.set(r.key, r.value as UrlStateMsg);
      // Read from the segment files: a reopened journal keeps in memory only what some group has
      // not consumed (the frontier consumed every status), and this run's statuses fit one segment.
      await fl.readRaw('fetchStatus', p, 0, fl.endOffset('fetchStatus', p), 1000, async (recs) => {
        for (const r of recs) if (r.value) statuses.push(readStatus(r.value) as FetchStatusMsg);
      });
    }
    fl.close();
    process.stdout.write(`hostile web: crawl peak RSS (VmHWM) ${(result.peakRssBytes / MIB).toFixed(1)} MiB; bound asserted ${RSS_BOUND_BYTES / MIB} MiB\n`);
  }, 200_000);

  afterAll(async () => {
    await hw?.web.stop();
  });

  const url = (n: HazardName): string => hw.url(n);
  const requests = (n: HazardName): number => hw.web.log.filter((e) => `${e.site}${e.path}` === url(n)).length;
  const rowOf = (u: string): UrlStateMsg | undefined => rows.get(u);
  const response = (u: string): (ReadRecord & { file: string }) | undefined => records.find((r) => r.type === 'response' && r.targetUri === u);
  const logged = (msg: string, u: string): LogLine[] => log.filter((l) => l.msg === msg && l.url === u);

  test('the crawler stays alive, ends on its own, and its memory stays bounded', () => {
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/crawl done: \d+ pages stored/);
    expect(result.peakRssBytes).toBeGreaterThan(0); // the sampler did read /proc
    expect(result.peakRssBytes).toBeLessThan(RSS_BOUND_BYTES);
    // The control page, on a host of its own, was crawled normally alongside the hazards.
    expect(response(url('control'))?.payload.toString()).toContain('control page');
    expect(rowOf(url('control'))?.state).toBe('FETCHED');
  });

  test('every WARC file passes warcio (block and payload digests verified), starting with warcinfo', () => {
    expect(records.length).toBeGreaterThan(0);
    for (const file of new Set(records.map((r) => r.file))) expect(records.find((r) => r.file === file)!.type).toBe('warcinfo');
  });

  test('gzip and brotli bombs are cut by the decompression guard and stored as truncated', () => {
    for (const n of ['gzip-bomb', 'br-bomb'] as const) {
      const rec = response(url(n));
      expect(rec).toBeDefined();
      expect(rec!.payload.length).toBeLessThanOrEqual(2 * MIB);
      expect(['unspecified', 'length']).toContain(rec!.headers.get('warc-truncated'));
      expect(logged('body truncated', url(n)).length).toBe(1);
      expect(requests(n)).toBe(1);
    }
  });

  test('an endless slow drip is cut by the overall deadline (WARC-Truncated: time)', () => {
    const rec = response(url('slow-drip'));
    expect(rec?.headers.get('warc-truncated')).toBe('time');
    expect(logged('body truncated', url('slow-drip'))[0]?.truncated).toBe('time');
    expect(requests('slow-drip')).toBe(1);
  });

  test('an endless chunked body and a 6 MiB page are stored up to the 2 MiB cap (WARC-Truncated: length)', () => {
    for (const n of ['endless-chunked', 'big-page'] as const) {
      const rec = response(url(n));
      expect(rec?.headers.get('warc-truncated')).toBe('length');
      expect(rec!.payload.length).toBe(2 * MIB);
      expect(logged('body truncated', url(n))[0]?.truncated).toBe('length');
    }
    // What was stored is exactly the start of what the server sent.
    expect(response(url('big-page'))!.payload.equals(hw.bigPageBody.subarray(0, 2 * MIB))).toBe(true);
  });

  test('huge headers are refused with a reason, not retried', () => {
    const row = rowOf(url('huge-headers'));
    expect(row?.reason).toBe('HEADERS_TOO_LARGE');
    expect(row?.state).toBe('DEAD');
    expect(logged('fetch failed', url('huge-headers'))[0]?.code).toBe('HEADERS_TOO_LARGE');
    expect(requests('huge-headers')).toBe(1);
  });

  test('a chain of ever-new redirects stops after 5 hops: at most 6 requests, reason too-many-redirects', () => {
    const chain = hw.web.log.filter((e) => e.path.startsWith('/r/'));
    expect(chain.map((e) => e.path)).toEqual(['/r/0', '/r/1', '/r/2', '/r/3', '/r/4', '/r/5']);
    const origin = hw.web.origin('127.0.5.6');
    expect(rowOf(`${origin}/r/5`)?.reason).toBe('too-many-redirects');
    expect(rowOf(`${origin}/r/6`)).toBeUndefined();
    expect(log.filter((l) => l.msg === 'redirect not followed: too many redirects').map((l) => l.url)).toEqual([`${origin}/r/5`]);
    // Each hop is stored as its own 3xx response.
    expect(records.filter((r) => r.type === 'response' && r.targetUri?.startsWith(`${origin}/r/`)).map((r) => r.httpStatus)).toEqual([302, 302, 302, 302, 302, 302]);
  });

  test('a redirect loop ends at the seen test: each URL requested once', () => {
    const loop = hw.web.log.filter((e) => e.path.startsWith('/loop-'));
    expect(loop.map((e) => e.path).sort()).toEqual(['/loop-a', '/loop-b']);
  });

  test('a redirect to a private address is refused by the SSRF guard: the private server sees no request', () => {
    expect(hw.web.requestsTo(hw.privateOrigin)).toEqual([]);
    expect(response(url('redirect-private'))?.httpStatus).toBe(302);
    const target = `${hw.privateOrigin}/secret`;
    expect(rowOf(target)?.state).toBe('DEAD');
    expect(rowOf(target)?.reason).toBe('SSRF_BLOCKED');
    expect(logged('refused target', target).length).toBe(1);
  });

  test('a wrong content-type is recorded as metadata only; binary served as HTML and an invalid charset do not hurt the crawl', () => {
    const meta = records.find((r) => r.type === 'metadata' && r.targetUri === url('wrong-type'));
    expect(meta?.payload.toString()).toContain('content-type: image/png');
    expect(rowOf(url('wrong-type'))?.reason).toBe('not-html');
    expect(logged('not HTML: metadata only', url('wrong-type')).length).toBe(1);
    expect(rowOf(url('binary-as-html'))?.state).toBe('FETCHED');
    expect(response(url('binary-as-html'))?.payload.length).toBe(64 * 1024);
    // An unknown charset label (header and meta) falls back to UTF-8: stored byte-exact, parsed.
    expect(rowOf(url('bad-charset'))?.state).toBe('FETCHED');
    expect(response(url('bad-charset'))?.payload.toString()).toContain('caf\u00e9');
  });

  test('every hazard has a final status with its outcome, and none is still leased', () => {
    for (const h of HAZARDS) {
      const row = rowOf(url(h.name));
      expect([h.name, row?.state]).toEqual([h.name, expect.stringMatching(/^(FETCHED|DEAD)$/)]);
      expect(statuses.some((s) => s.url === url(h.name) && s.stored)).toBe(true);
    }
    expect([...rows.values()].filter((r) => r.state === 'LEASED' || r.state === 'QUEUED')).toEqual([]);
  });
});
