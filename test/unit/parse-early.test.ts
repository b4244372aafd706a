/**
 * Parse's analysis started before the page's WARC file is stored (processors/parse-early.ts):
 * the table of early analyses, fetch offering a page once its records are built (and saying
 * when its file was lost), and parse taking the analysis for the page's crawl.fetched record.
 * Real WARC writer on a local folder; no network.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LocalPageStore } from '../../connectors/page-store-local';
import type { HttpCapture, HttpClient, PageStore } from '../../connectors/types';
import { DEFAULTS, type CrawlConfig } from '../../lib/config';
import type { FetchRequestMsg, FetchedPageMsg, ParsedPageMsg } from '../../lib/messages';
import { WarcWriter } from '../../lib/warc/writer';
import { fetchStage, NOT_STORED_YET, type EarlyPages } from '../../processors/fetch';
import { analyzePage, parseStage, type PageAnalysis } from '../../processors/parse';
import { EarlyAnalyses, type EarlyKey } from '../../processors/parse-early';
import type { ParseAnalyzer } from '../../processors/parse-pool';
import type { HandleResult, InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { capture } from './warc-fixtures';

const key = (id: string, over: Partial<EarlyKey> = {}): EarlyKey => ({ recordId: id, url: `http://a.test/${id}`, sha256: 's', fetchedAt: 1, ...over });

describe('EarlyAnalyses', () => {
  function table(over: { maxEntries?: number; maxAgeMs?: number } = {}) {
    let clock = 0;
    const disposed: string[] = [];
    const t = new EarlyAnalyses<string>({ maxEntries: over.maxEntries ?? 3, maxAgeMs: over.maxAgeMs ?? 1000, now: () => clock, dispose: (v) => void disposed.push(v) });
    return { t, disposed, tick: (ms: number) => void (clock += ms) };
  }
  const settle = () => new Promise((r) => setImmediate(r));

  test('an analysis offered is taken once, for the same page only', async () => {
    const { t } = table();
    t.offer(key('a'), () => Promise.resolve('A'));
    expect(t.size).toBe(1);
    await expect(t.take(key('a'))).resolves.toBe('A');
    expect(t.take(key('a'))).toBeNull();
    expect(t.take(key('never'))).toBeNull();
    expect(t.counts).toMatchObject({ started: 1, taken: 1, dropped: 0, skipped: 0 });
  });

  test('a record id with another URL, body or fetch time is not that analysis: dropped, not used', async () => {
    const { t, disposed } = table();
    for (const [id, other] of [['u', { url: 'http://a.test/else' }], ['s', { sha256: 'other' }], ['f', { fetchedAt: 2 }]] as const) {
      t.offer(key(id), () => Promise.resolve(id));
      expect(t.take(key(id, other))).toBeNull();
    }
    await settle();
    expect(disposed).toEqual(['u', 's', 'f']);
    expect(t.size).toBe(0);
  });

  test('bounded: offers past maxEntries, or that the start declines, start nothing', () => {
    const { t } = table({ maxEntries: 2 });
    let starts = 0;
    const start = () => (starts++, Promise.resolve('x'));
    t.offer(key('a'), start);
    t.offer(key('b'), start);
    t.offer(key('c'), start);
    t.offer(key('d'), () => null);
    t.offer(key('a'), start); // already there
    expect(starts).toBe(2);
    expect(t.size).toBe(2);
    expect(t.counts).toMatchObject({ started: 2, skipped: 3 });
    // A start that throws is only a declined head start.
    const { t: t2 } = table();
    t2.offer(key('e'), () => { throw new Error('pool closed'); });
    expect(t2.size).toBe(0);
    expect(t2.counts.skipped).toBe(1);
  });

  test('a lost page\'s analysis is dropped and given back once it settles', async () => {
    const { t, disposed } = table();
    let finish!: (v: string) => void;
    t.offer(key('a'), () => new Promise((r) => (finish = r)));
    t.drop('a');
    t.drop('a');
    expect(t.size).toBe(0);
    expect(disposed).toEqual([]);
    finish('A');
    await settle();
    expect(disposed).toEqual(['A']);
    expect(t.take(key('a'))).toBeNull();
  });

  test('analyses older than maxAgeMs are dropped at the next offer, oldest first; close drops all and takes no more', async () => {
    const { t, disposed, tick } = table({ maxAgeMs: 100, maxEntries: 10 });
    t.offer(key('a'), () => Promise.resolve('A'));
    tick(60);
    t.offer(key('b'), () => Promise.resolve('B'));
    tick(50); // a is 110 ms old, b 50
    t.offer(key('c'), () => Promise.resolve('C'));
    await settle();
    expect(disposed).toEqual(['A']);
    expect(t.take(key('a'))).toBeNull();
    t.close();
    await settle();
    expect(disposed.sort()).toEqual(['A', 'B', 'C']);
    t.offer(key('d'), () => Promise.resolve('D'));
    expect(t.size).toBe(0);
  });

  test('a failed analysis is not an unhandled rejection; whoever takes it sees the failure', async () => {
    const { t } = table();
    t.offer(key('a'), () => Promise.reject(new Error('worker died')));
    t.offer(key('b'), () => Promise.reject(new Error('worker died')));
    t.drop('b');
    await settle();
    await expect(t.take(key('a'))).rejects.toThrow('worker died');
  });
});

describe('fetch offers a page once its records are built; parse takes its analysis', () => {
  const CFG: CrawlConfig = { ...DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000 };
  const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };
  const HTML = '<html lang="en"><head><title>Early</title></head><body><p>Rivers, bridges and the towns along them.</p><a href="/next">next</a></body></html>';
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'parse-early-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const http: HttpClient = {
    async fetch(url: string): Promise<HttpCapture> {
      if (url.endsWith('/robots.txt')) return capture(url, { headers: [['Content-Type', 'text/plain']], body: Buffer.from('User-agent: *\nAllow: /\n') });
      return capture(url, { headers: [['Content-Type', 'text/html; charset=utf-8']], body: Buffer.from(HTML) });
    },
    async close() {},
  };
  const req: FetchRequestMsg = {
    url: 'http://a.test/page', host: 'a.test', depth: 1, lease_id: 'lease-1', lease_expires_at: 2_000_000, attempt: 1, prev_sha256: null, etag: null,
    last_modified: null, redirects: 0, priority: null,
  };
  const rec = (value: unknown, topic: InRecord['topic'] = 'fetch'): InRecord => ({ topic, partition: 0, offset: 0, key: 'a.test', value, timestamp: 0 });

  /** A store whose puts wait until let go, so the test sees what happens before the file is stored. */
  function heldStore(inner: PageStore): { store: PageStore; release(ok: boolean): void } {
    let go!: (ok: boolean) => void;
    const gate = new Promise<boolean>((r) => (go = r));
    const store: PageStore = {
      ...inner,
      put: async (k, b, t) => {
        if (!(await gate)) throw new Error('disk full');
        return inner.put(k, b, t);
      },
      putParts: undefined,
    };
    return { store, release: (ok) => go(ok) };
  }

  async function fetchWithEarly(ok: boolean) {
    const held = heldStore(new LocalPageStore(dir));
    const warc = new WarcWriter({ store: held.store, prefix: 'test', maxRecords: 100 });
    const built: FetchedPageMsg[] = [];
    const lost: string[] = [];
    const early: EarlyPages = { built: (p) => void built.push(p), lost: (id) => void lost.push(id) };
    let clock = 1_000_000;
    const stage = fetchStage({ http, archive: (e, onBuilt) => warc.append(e, onBuilt), config: CFG, now: () => clock++, sleep: async (ms) => void (clock += ms), early });
    const r: HandleResult = await stage.handle(rec(req), ctx);
    const pending = (r as { pending: Promise<OutRecord[]> }).pending;
    // Built, not stored: the page is offered already, with no WARC pointer yet.
    await new Promise((r) => setImmediate(r));
    expect(built).toHaveLength(1);
    expect(built[0]!.warc).toEqual(NOT_STORED_YET);
    const flushed = warc.flush().catch(() => undefined);
    held.release(ok);
    const outs = await pending;
    await flushed;
    return { built, lost, outs };
  }

  test('the page offered is the crawl.fetched record, but for its WARC pointer', async () => {
    const { built, lost, outs } = await fetchWithEarly(true);
    const fetched = outs.filter((o) => o.topic === 'fetched').map((o) => o.value as FetchedPageMsg);
    expect(fetched).toHaveLength(1);
    expect(fetched[0]!.warc.uri).toMatch(/^file:/);
    expect({ ...built[0], warc: fetched[0]!.warc }).toEqual(fetched[0]);
    expect(lost).toEqual([]);
    // Analysed early or from the record, the page says the same.
    expect(analyzePage(built[0]!, { userAgent: CFG.userAgent }).parsed).toEqual({ ...analyzePage(fetched[0]!, { userAgent: CFG.userAgent }).parsed, warc: NOT_STORED_YET });
  });

  test('a page whose file is not stored is said lost, and goes nowhere', async () => {
    const { built, lost, outs } = await fetchWithEarly(false);
    expect(lost).toEqual([built[0]!.record_id]);
    expect(outs.filter((o) => o.topic === 'fetched')).toEqual([]);
    expect(outs.map((o) => (o.value as { reason?: string }).reason)).toContain('store-failed');
  });

  test('parse uses the early analysis, with the record\'s own WARC pointer; a failed one is analysed again', async () => {
    const { built, outs } = await fetchWithEarly(true);
    const fetched = outs.find((o) => o.topic === 'fetched')!.value as FetchedPageMsg;
    let analysed = 0;
    const analyzer: ParseAnalyzer = {
      threads: 1,
      analyze: async (p) => (analysed++, analyzePage(p, { userAgent: CFG.userAgent })),
      backlog: () => ({ bytes: 0, waiting: 0 }),
      close: async () => undefined,
    };
    const early = new EarlyAnalyses<PageAnalysis>({ maxEntries: 10, maxAgeMs: 60_000, now: Date.now, dispose: () => undefined });
    const k = (p: FetchedPageMsg): EarlyKey => ({ recordId: p.record_id!, url: p.url, sha256: p.sha256, fetchedAt: p.fetched_at });
    let earlyRuns = 0;
    early.offer(k(built[0]!), () => (earlyRuns++, Promise.resolve(analyzePage(built[0]!, { userAgent: CFG.userAgent }))));
    const stage = parseStage({ userAgent: CFG.userAgent, analyzer, early });
    const parsedOf = (o: OutRecord[]) => o.find((x) => x.topic === 'parsed')!.value as ParsedPageMsg;
    const first = (await stage.handle(rec(fetched, 'fetched'), ctx)) as OutRecord[];
    expect(earlyRuns).toBe(1);
    expect(analysed).toBe(0);
    expect(parsedOf(first).warc).toEqual(fetched.warc);
    expect(parsedOf(first).title).toBe('Early');
    expect(first.filter((o) => o.topic === 'links')).toHaveLength(1);
    // Taken once: the same record again (a replay) is analysed the usual way.
    const again = parseStage({ userAgent: CFG.userAgent, analyzer, early });
    await again.handle(rec(fetched, 'fetched'), ctx);
    expect(analysed).toBe(1);
    // An early analysis that failed: the page is analysed from its record instead.
    early.offer(k(built[0]!), () => Promise.reject(new Error('worker died')));
    const third = (await parseStage({ userAgent: CFG.userAgent, analyzer, early }).handle(rec(fetched, 'fetched'), ctx)) as OutRecord[];
    expect(analysed).toBe(2);
    expect(parsedOf(third).warc).toEqual(fetched.warc);
  });
});
