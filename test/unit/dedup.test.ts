/**
 * Duplicate detection: the block-table index, trap runs, parse's decisions and the parse
 * stage's duplicate, priority, trap and WET-text behaviour (pure, no services).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import * as avro from 'avsc';
import { avroReader, avroType, loadSchema, schemaBefore } from '../../lib/avro';
import { DedupIndex, type ContentRow } from '../../lib/dedup';
import { partitionForHost } from '../../lib/partitioner';
import { DedupStore } from '../../processors/dedup-store';
import type { ChangelogSource } from '../../runtime/changelog';
import { expandLink } from '../../lib/link-groups';
import { trapRulePrefix, underPrefix } from '../../lib/traps';
import { pathPrefix, TrapDetector } from '../../lib/dedup-trap';
import type { ContentMsg, FetchedPageMsg, HostPolicyMsg, LinkMsg, ParsedPageMsg } from '../../lib/messages';
import { SIMHASH_VERSION as V, simhash64 } from '../../lib/simhash';
import type { WarcEntry, WarcPointer } from '../../lib/warc/writer';
import { DUPLICATE_LINK_FACTOR, linkShare, MIN_LINK_PRIORITY, ParseDedup } from '../../processors/parse-dedup';
import { eventId } from '../../processors/handoff';
import { analyzePage, handedOff, parseStage, textSimhash } from '../../processors/parse';
import type { ParseAnalyzer } from '../../processors/parse-pool';
import type { InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { topics } from '../../topologies/crawl';

const ctx: StageContext = { now: () => 1000, log: pino({ level: 'silent' }) };

// Every index and stage here keeps its duplicate tables on disk (processors/dedup-store.ts), in a
// folder of its own, closed and removed after each test.
const dirs: string[] = [];
const closers: Array<() => Promise<unknown>> = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'kcrawl-dedup-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An index over a new store per partition. */
async function diskIndex(partitions = 1): Promise<DedupIndex> {
  const ix = new DedupIndex({ partitions });
  for (let p = 0; p < partitions; p++) {
    const store = await DedupStore.open(join(tempDir(), `content-${p}`));
    closers.push(() => store.close());
    ix.attach(p, store);
  }
  return ix;
}

/** crawl.content records as a changelog of one partition (offsets in order). */
function changelogOf(rows: ReadonlyArray<{ key: string; value: unknown }>): ChangelogSource {
  const type = avroType(topics.content.valueSchema);
  const recs = rows.map((r, offset) => ({ offset, key: r.key, value: r.value === null ? null : type.toBuffer(r.value) }));
  return {
    ends: async (ps) => new Map(ps.map((p) => [p, p === 0 ? recs.length : 0])),
    read: async (from, to, onBatch) => {
      const a = from.get(0) ?? 0;
      const b = to.get(0) ?? 0;
      if (b > a) await onBatch(0, recs.slice(a, b));
    },
  };
}

/** A parse stage with its stores in a new folder, restored from `changelog` (default: empty). */
async function diskStage(opts: Omit<Parameters<typeof parseStage>[0], 'userAgent'> = {}, changelog = changelogOf([])): Promise<ReturnType<typeof parseStage>> {
  const stage = parseStage({ userAgent: 'kcrawl', stateDir: tempDir(), ...opts });
  await stage.restoreChangelog!([0], changelog, ctx);
  closers.push(() => stage.close!());
  return stage;
}

/** Flip the lowest `n` bits of a fingerprint. */
function flip(h: string, n: number): string {
  const lo = parseInt(h.slice(8), 16) ^ ((2 ** n - 1) >>> 0);
  return h.slice(0, 8) + (lo >>> 0).toString(16).padStart(8, '0');
}

const row = (url: string, sha: string, sh: string | null, duplicate_of: string | null = null): ContentRow => ({
  url, host: new URL(url).hostname, sha256: sha, simhash64: sh, fetched_at: 1, duplicate_of, simhash_version: V,
});

describe('DedupIndex', () => {
  const H = simhash64('the quick brown fox jumps over the lazy dog '.repeat(20));

  it('finds an exact copy under another URL of the host, never the URL itself', async () => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/1', 's1', H));
    expect(ix.check('http://a.test/1', 'a.test', 's1', H, V)).toBeNull();
    expect(ix.check('http://a.test/2', 'a.test', 's1', H, V)).toEqual({ kind: 'exact', of: 'http://a.test/1', distance: 0 });
    expect(ix.check('http://b.test/2', 'b.test', 's1', H, V)).toBeNull(); // per host
  });

  it.each([0, 1, 2, 3])('a fingerprint %i bits away is near', async (bits) => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/1', 's1', H));
    const v = ix.check('http://a.test/2', 'a.test', 's2', flip(H, bits), V);
    expect(v).toEqual({ kind: 'near', of: 'http://a.test/1', distance: bits });
  });

  it('4 bits away is not near, even when three blocks agree', async () => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/1', 's1', H));
    expect(ix.check('http://a.test/2', 'a.test', 's2', flip(H, 4), V)).toBeNull();
  });

  it('bits spread over all four blocks within 3 still match through the untouched block', async () => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/1', 's1', '0000000000000000'));
    expect(ix.check('http://a.test/2', 'a.test', 's2', '8000800080000000', V)?.distance).toBe(3);
    expect(ix.check('http://a.test/2', 'a.test', 's2', '8000800080008000', V)).toBeNull(); // 4 blocks touched, 4 bits
  });

  it('duplicates are remembered but never compared against', async () => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/2', 's1', H, 'http://a.test/1'));
    expect(ix.get('http://a.test/2', 'a.test')?.duplicate_of).toBe('http://a.test/1');
    expect(ix.check('http://a.test/3', 'a.test', 's1', H, V)).toBeNull();
  });

  it('re-recording a URL replaces its old entries; forget removes it', async () => {
    const ix = await diskIndex();
    ix.record(row('http://a.test/1', 's1', H));
    ix.record(row('http://a.test/1', 's9', '0000000000000000'));
    expect(ix.check('http://a.test/2', 'a.test', 's1', H, V)).toBeNull();
    ix.forget('http://a.test/1', 'a.test');
    expect(ix.size).toBe(0);
    expect(ix.check('http://a.test/2', 'a.test', 's9', '0000000000000000', V)).toBeNull();
  });

  it('compares fingerprints of the same SimHash version only; exact copies match across versions', async () => {
    const ix = await diskIndex();
    const old = { ...row('http://a.test/1', 's1', H), simhash_version: undefined };
    ix.record(old);
    // The same 64 bits under version 1 (a row from before versions) are not this page's neighbour.
    expect(ix.check('http://a.test/2', 'a.test', 's2', H, V)).toBeNull();
    expect(ix.check('http://a.test/2', 'a.test', 's2', flip(H, 1), 1)).toEqual({ kind: 'near', of: 'http://a.test/1', distance: 1 });
    expect(ix.check('http://a.test/2', 'a.test', 's1', H, V)).toEqual({ kind: 'exact', of: 'http://a.test/1', distance: 0 });
    // Re-recorded under the new version, it is found by the new version only, and forgetting it leaves nothing behind.
    ix.record(row('http://a.test/1', 's1', H));
    expect(ix.check('http://a.test/2', 'a.test', 's2', H, 1)).toBeNull();
    expect(ix.check('http://a.test/2', 'a.test', 's2', H, V)?.kind).toBe('near');
    ix.forget('http://a.test/1', 'a.test');
    expect(ix.check('http://a.test/2', 'a.test', 's2', H, V)).toBeNull();
  });

  it('several representatives under one key: the first recorded is found, then the next once it is forgotten', async () => {
    const ix = await diskIndex();
    for (const n of [1, 2, 3]) ix.record(row(`http://a.test/${n}`, 's1', H));
    expect(ix.check('http://a.test/9', 'a.test', 's1', H, V)).toEqual({ kind: 'exact', of: 'http://a.test/1', distance: 0 });
    expect(ix.check('http://a.test/9', 'a.test', 's2', flip(H, 2), V)).toEqual({ kind: 'near', of: 'http://a.test/1', distance: 2 });
    ix.forget('http://a.test/1', 'a.test');
    expect(ix.check('http://a.test/9', 'a.test', 's1', H, V)?.of).toBe('http://a.test/2');
    ix.forget('http://a.test/2', 'a.test');
    // One left under each key: never its own duplicate, still found by others.
    expect(ix.check('http://a.test/3', 'a.test', 's1', H, V)).toBeNull();
    expect(ix.check('http://a.test/9', 'a.test', 's2', flip(H, 1), V)?.of).toBe('http://a.test/3');
    ix.record(row('http://a.test/3', 's1', H, 'http://a.test/0'));
    expect(ix.check('http://a.test/9', 'a.test', 's1', H, V)).toBeNull();
    expect(ix.check('http://a.test/9', 'a.test', 's2', flip(H, 1), V)).toBeNull();
  });

  it('retain drops hosts no longer owned (their partitions\' tables)', async () => {
    const ix = await diskIndex(4);
    const b = partitionForHost('b.test', 4);
    expect(partitionForHost('a.test', 4)).not.toBe(b); // the check can fail
    ix.record(row('http://a.test/1', 's1', H));
    ix.record(row('http://b.test/1', 's2', H));
    const gone = ix.retain((p) => p === b);
    expect(ix.size).toBe(1);
    expect(gone.size).toBe(3);
    expect(() => ix.get('http://a.test/1', 'a.test')).toThrow(/not open/);
    expect(ix.get('http://b.test/1', 'b.test')?.sha256).toBe('s2');
  });
});

describe('simhash_version in the schemas', () => {
  it.each(['crawl.Content.v1', 'crawl.ParsedPage.v1', 'crawl.handoff.v3'])('%s: records written before it read as version 1; current ones as written', (name) => {
    const before = avro.Type.forSchema(schemaBefore(loadSchema(name), 2) as avro.Schema);
    const old = before.random() as unknown as Record<string, unknown>;
    expect('simhash_version' in old).toBe(false);
    const read = avroReader(name);
    expect(read(before.toBuffer(old))).toEqual({ ...old, simhash_version: 1 });
    const current = { ...old, simhash_version: V };
    expect(read(avroType(name).toBuffer(current))).toEqual(current);
  });
});

describe('TrapDetector', () => {
  it.each([
    ['http://a.test/cal/2026/11/30', '/cal/2026/11/'],
    ['http://a.test/cal?d=1', '/cal'],
    ['http://a.test/', '/'],
    ['http://a.test/x/', '/x/'],
  ])('pathPrefix(%s) = %s', (url, prefix) => expect(pathPrefix(url)).toBe(prefix));

  it('reports a prefix once on the 5th duplicate in a row; a distinct page resets the run', () => {
    const t = new TrapDetector();
    const seen: Array<string | null> = [];
    for (let i = 0; i < 4; i++) seen.push(t.observe('a.test', `http://a.test/t/${i}`, true));
    seen.push(t.observe('a.test', 'http://a.test/t/ok', false));
    for (let i = 0; i < 5; i++) seen.push(t.observe('a.test', `http://a.test/t/${i + 10}`, true));
    seen.push(t.observe('a.test', 'http://a.test/t/99', true));
    expect(seen).toEqual([null, null, null, null, null, null, null, null, null, '/t/', null]);
  });

  it('counts per host and prefix', () => {
    const t = new TrapDetector(2);
    expect(t.observe('a.test', 'http://a.test/x/1', true)).toBeNull();
    expect(t.observe('b.test', 'http://b.test/x/1', true)).toBeNull();
    expect(t.observe('a.test', 'http://a.test/y/1', true)).toBeNull();
    expect(t.observe('a.test', 'http://a.test/x/2', true)).toBe('/x/');
  });
});

// ---------------------------------------------------------------------------------------------
const LONG = (topic: string, footer = ''): string =>
  `<html lang="en"><head><title>${topic}</title></head><body><p>${Array.from({ length: 60 }, (_, i) => `${topic} sentence ${i} with plenty of words to read`).join('. ')}</p>` +
  `<a href="/next">next</a><a href="/other">other</a><footer>${footer}</footer></body></html>`;

let seq = 0;
function page(url: string, html: string, fields: Partial<FetchedPageMsg> = {}): FetchedPageMsg {
  seq++;
  return {
    url, final_url: url, host: new URL(url).hostname, depth: 1, fetched_at: 1000 + seq, http_status: 200,
    content_type: 'text/html; charset=utf-8', body: Buffer.from(html), truncated: false, sha256: `sha-of-${html.length}-${html.slice(-40)}`,
    prev_sha256: null, warc: { uri: 'file:///w.warc.gz', offset: seq, length: 10 }, x_robots_tag: null,
    record_id: `<urn:uuid:00000000-0000-4000-8000-${String(seq).padStart(12, '0')}>`, ...fields,
  };
}
const rec = (p: FetchedPageMsg): InRecord => ({ topic: 'fetched', partition: 0, offset: 0, key: p.host, value: p, timestamp: 0 });

async function run(stage: ReturnType<typeof parseStage>, p: FetchedPageMsg): Promise<OutRecord[]> {
  const r = await stage.handle(rec(p), ctx);
  if (Array.isArray(r)) return r;
  return [...(r.early ?? []), ...(await r.pending)];
}
const parsedOf = (outs: OutRecord[]): ParsedPageMsg => outs.find((o) => o.topic === 'parsed')!.value as ParsedPageMsg;
const linksOf = (outs: OutRecord[]): LinkMsg[] => outs.filter((o) => o.topic === 'links').flatMap((o) => expandLink(o.value as LinkMsg));

describe('parse stage: duplicates', () => {
  it('an exact copy under another URL is recorded with near_duplicate_of and not handed off; its links are deprioritised', async () => {
    const stage = await diskStage();
    const a = await run(stage, page('http://a.test/a', LONG('gardening')));
    const b = await run(stage, page('http://a.test/b', LONG('gardening')));
    expect(parsedOf(a).near_duplicate_of).toBeNull();
    expect(handedOff(parsedOf(a))).toBe(true);
    expect(parsedOf(b).near_duplicate_of).toBe('http://a.test/a');
    expect(handedOff(parsedOf(b))).toBe(false);
    const pa = linksOf(a).map((l) => l.priority!);
    const pb = linksOf(b).map((l) => l.priority!);
    expect(pa).toEqual([linkShare(2), linkShare(2)]);
    expect(pb).toEqual([linkShare(2) * DUPLICATE_LINK_FACTOR, linkShare(2) * DUPLICATE_LINK_FACTOR]);
    expect(linkShare(2)).toBeCloseTo(Math.SQRT1_2);
    // On the frontier's scale (front queues by importance) a copy's links rank below any normal link.
    expect(Math.max(...pb)).toBeLessThan(linkShare(10_000));
    for (const o of [...a, ...b]) expect(avroType(topics[o.topic].valueSchema).isValid(o.value)).toBe(true);
  });

  it('a near copy (another footer) is a duplicate; a different page is not', async () => {
    const stage = await diskStage();
    await run(stage, page('http://a.test/n/1', LONG('sailing', 'visited 2026-11-30 10:00')));
    const near = parsedOf(await run(stage, page('http://a.test/n/2', LONG('sailing', 'visited 2026-12-01 11:31'))));
    const other = parsedOf(await run(stage, page('http://a.test/n/3', LONG('astronomy'))));
    expect(near.near_duplicate_of).toBe('http://a.test/n/1');
    expect(other.near_duplicate_of).toBeNull();
  });

  it('a CHANGED page that only changed its footer is not handed off; a real change is', async () => {
    const stage = await diskStage();
    const first = page('http://a.test/c', LONG('cooking', 'v1'));
    await run(stage, first);
    const footer = parsedOf(await run(stage, page('http://a.test/c', LONG('cooking', 'v2'), { prev_sha256: first.sha256 })));
    expect(footer).toMatchObject({ change: 'CHANGED', near_duplicate_of: 'http://a.test/c' });
    const real = parsedOf(await run(stage, page('http://a.test/c', LONG('knitting'), { prev_sha256: 'whatever' })));
    expect(real).toMatchObject({ change: 'CHANGED', near_duplicate_of: null });
  });

  it('five duplicates in a row under one prefix emit one trap:<prefix> host-policy row', async () => {
    const stage = await diskStage();
    await run(stage, page('http://a.test/cal/0', LONG('calendar', 'day 0')));
    const traps: HostPolicyMsg[] = [];
    const keys: string[] = [];
    for (let d = 1; d <= 6; d++) {
      for (const o of await run(stage, page(`http://a.test/cal/${d}`, LONG('calendar', `day ${d}`)))) {
        if (o.topic === 'hostPolicy') {
          traps.push(o.value as HostPolicyMsg);
          keys.push(o.key);
        }
      }
    }
    expect(keys).toEqual(['a.test|trap:/cal/']);
    expect(traps[0]).toMatchObject({ host: 'a.test', field: 'trap:/cal/', blocked_until: null, min_delay_ms: null });
    expect(avroType(topics.hostPolicy.valueSchema).isValid(traps[0])).toBe(true);
    // seen-test's reading of the row (lib/traps.ts) covers the next calendar page, not the site.
    const prefix = trapRulePrefix(traps[0].field)!;
    expect(underPrefix('/cal/99', prefix)).toBe(true);
    expect(underPrefix('/about', prefix)).toBe(false);
  });

  it('state is rebuilt from its crawl.content rows: a restarted stage still knows the copies', async () => {
    const first = await diskStage();
    const outs = await run(first, page('http://a.test/r/1', LONG('restart')));
    const rows = outs.filter((o) => o.topic === 'content');
    expect(rows).toHaveLength(1);
    expect(rows[0].key).toBe('http://a.test/r/1');
    expect(avroType(topics.content.valueSchema).isValid(rows[0].value)).toBe(true);

    // A new store, rebuilt from crawl.content.
    const restarted = await diskStage({}, changelogOf(rows));
    expect(parsedOf(await run(restarted, page('http://a.test/r/2', LONG('restart')))).near_duplicate_of).toBe('http://a.test/r/1');

    // A tombstone forgets it.
    const forgot = await diskStage({}, changelogOf([...rows, { key: 'http://a.test/r/1', value: null }]));
    expect(parsedOf(await run(forgot, page('http://a.test/r/2', LONG('restart')))).near_duplicate_of).toBeNull();
  });

  it('an unchanged page writes no content row and stays as it was', async () => {
    const d = new ParseDedup(await diskIndex());
    const base: ParsedPageMsg = {
      url: 'http://a.test/u', canonical_url: null, host: 'a.test', fetched_at: 1, change: 'NEW', sha256: 's', simhash64: simhash64('x '.repeat(100)),
      language: null, title: null, text_length: 1, outlinks: 0, noindex: false, warc: { uri: 'u', offset: 0, length: 1 }, text: null, near_duplicate_of: null,
    };
    expect(d.decide(base, 0, 1).content).not.toBeNull();
    expect(d.decide({ ...base, change: 'UNCHANGED' }, 0, 2)).toMatchObject({ content: null, nearDuplicateOf: null, kind: null });
  });

  it('a second fetch of a URL that found the bytes parse last recorded keeps the first fetch time, so its event gets the same id', async () => {
    const stage = await diskStage();
    const first = page('http://a.test/d', LONG('duplicates'));
    const again = { ...first, fetched_at: first.fetched_at + 5000, warc: { ...first.warc, offset: 99 } };
    const a = parsedOf(await run(stage, first));
    const b = parsedOf(await run(stage, again));
    expect(b).toMatchObject({ change: 'NEW', fetched_at: first.fetched_at, near_duplicate_of: null, warc: again.warc });
    expect(handedOff(b)).toBe(true);
    expect(eventId(b.url, b.fetched_at)).toBe(eventId(a.url, a.fetched_at));
    // It holds after a restart, from crawl.content: the copy writes no row of its own.
    const rows = (await run(await diskStage(), first)).filter((o) => o.topic === 'content');
    const restarted = await diskStage({}, changelogOf(rows));
    const c = await run(restarted, { ...first, fetched_at: first.fetched_at + 9000 });
    expect(parsedOf(c).fetched_at).toBe(first.fetched_at);
    expect(c.filter((o) => o.topic === 'content')).toEqual([]);
  });

  // (page() fakes a SHA-256 from the HTML's length and tail: topics of different lengths differ.)
  it('a copy of a CHANGED page goes again with the same id (it is the handed-off content, not a near-copy of it)', async () => {
    const stage = await diskStage();
    const v1 = page('http://a.test/e', LONG('weather'));
    await run(stage, v1);
    const v2 = page('http://a.test/e', LONG('volcanic geology'), { prev_sha256: v1.sha256 });
    const a = parsedOf(await run(stage, v2));
    const b = parsedOf(await run(stage, { ...v2, fetched_at: v2.fetched_at + 1000 }));
    expect(a).toMatchObject({ change: 'CHANGED', near_duplicate_of: null });
    expect(b).toMatchObject({ change: 'CHANGED', near_duplicate_of: null, fetched_at: a.fetched_at });
  });

  it('a page its lease calls NEW is CHANGED when parse recorded other bytes for the URL; a URL recorded only as a copy of another stays NEW', async () => {
    const stage = await diskStage();
    const first = page('http://a.test/f', LONG('pottery'));
    await run(stage, first);
    const second = parsedOf(await run(stage, page('http://a.test/f', LONG('archery practice'))));
    expect(second).toMatchObject({ change: 'CHANGED', near_duplicate_of: null });
    expect(second.fetched_at).not.toBe(first.fetched_at);
    // /g was a copy of /f: never handed off, so its next different bytes are still NEW to the indexer.
    expect(parsedOf(await run(stage, page('http://a.test/g', LONG('archery practice'))))).toMatchObject({ near_duplicate_of: 'http://a.test/f' });
    expect(parsedOf(await run(stage, page('http://a.test/g', LONG('competitive fencing'))))).toMatchObject({ change: 'NEW', near_duplicate_of: null });
  });

  it.each([[0, 1], [1, 1], [4, 0.5], [100, MIN_LINK_PRIORITY]])('linkShare(%i links) = %f', (n, share) => {
    expect(linkShare(n)).toBeCloseTo(share);
  });

  it('short texts get no fingerprint (too few shingles to mean anything)', () => {
    expect(textSimhash('Not found')).toBeNull();
    expect(textSimhash('A page with a few words, fifteen of them, which is one fewer than needed.')).toBeNull();
    expect(textSimhash('A page with a reasonable amount of words in it, enough to say what the page is about.')).toMatch(/^[0-9a-f]{16}$/);
  });

  it('the fingerprint is the same whether the text is fingerprinted as a string or from the UTF-8 bytes it is encoded into', () => {
    // The parse worker fingerprints the text record's bytes (its ring or a buffer of their own);
    // the stage's own thread the string. Curly quotes, CJK and an astral character included.
    const html = `<html><body><p>${Array.from({ length: 40 }, (_, i) => `“Quoted” words ${i}, 日本語の文章 ${i} and 𠮷野家 ${i}`).join(' ')}</p></body></html>`;
    const p = page('http://a.test/utf8', html);
    const asString = analyzePage(p, { userAgent: 'kcrawl' });
    const ring = new Uint8Array(1 << 16);
    let encoded = 0;
    const intoRing = (s: string): Uint8Array => {
      encoded++;
      return ring.subarray(0, new TextEncoder().encodeInto(s, ring).written);
    };
    const fromRing = analyzePage(p, { userAgent: 'kcrawl', textAsUtf8: intoRing });
    const ownBuffer = analyzePage(p, { userAgent: 'kcrawl', textAsUtf8: true });
    expect(asString.parsed.simhash64).toMatch(/^[0-9a-f]{16}$/);
    expect(asString.parsed.simhash64).toBe(textSimhash(asString.text));
    expect(fromRing.parsed.simhash64).toBe(asString.parsed.simhash64);
    expect(ownBuffer.parsed.simhash64).toBe(asString.parsed.simhash64);
    expect(encoded).toBe(1);
    expect(Buffer.from(fromRing.text).toString('utf8')).toBe(asString.text);
  });

  it('a CHANGED page whose last copy has another SimHash version is handed off, and its row takes this version', async () => {
    const url = 'http://a.test/v';
    const fp = simhash64('the same words as before on this page '.repeat(20));
    const changed: ParsedPageMsg = {
      url, canonical_url: null, host: 'a.test', fetched_at: 2, change: 'CHANGED', sha256: 's1', simhash64: fp, simhash_version: V,
      language: null, title: null, text_length: 1, outlinks: 0, noindex: false, warc: { uri: 'u', offset: 0, length: 1 }, text: null, near_duplicate_of: null,
    };
    const lastCopy: ContentMsg = { url, host: 'a.test', sha256: 's0', simhash64: fp, fetched_at: 1, duplicate_of: null };
    const upgraded = new ParseDedup(await diskIndex());
    upgraded.restore(url, lastCopy); // a row from before versions: version 1
    expect(upgraded.decide(changed, 0, 3)).toMatchObject({ kind: null, nearDuplicateOf: null, content: { sha256: 's1', simhash64: fp, simhash_version: V } });
    // The same bits under the same version: a near-copy of itself, not handed off.
    const same = new ParseDedup(await diskIndex());
    same.restore(url, { ...lastCopy, simhash_version: V });
    expect(same.decide(changed, 0, 3)).toMatchObject({ kind: 'self', nearDuplicateOf: url });
  });
});

describe('parse stage: WET-style text', () => {
  it('writes a conversion record referring to the response, and announces the page only once it is stored', async () => {
    const entries: WarcEntry[] = [];
    let store!: (p: WarcPointer) => void;
    const stage = await diskStage({
      archiveText: (e) => {
        entries.push(e);
        return new Promise<WarcPointer>((r) => (store = r));
      },
    });
    const p = page('http://a.test/w', LONG('weaving'));
    const result = stage.handle(rec(p), ctx);
    expect(Array.isArray(result)).toBe(false);
    const { early, pending } = result as { early: OutRecord[]; pending: Promise<OutRecord[]> };
    // The page's two links are of one host: one crawl.links record.
    expect(early.map((o) => o.topic)).toEqual(['links', 'content']);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ type: 'conversion', targetUri: 'http://a.test/w', refersTo: p.record_id });
    expect((entries[0] as { text: string }).text).toContain('weaving sentence 0');
    let announced = false;
    void pending.then(() => (announced = true));
    await new Promise((r) => setImmediate(r));
    expect(announced).toBe(false);
    store({ uri: 'file:///t.warc.gz', offset: 7, length: 8, recordId: '<urn:uuid:x>' });
    const outs = await pending;
    expect(parsedOf(outs).text).toEqual({ uri: 'file:///t.warc.gz', offset: 7, length: 8 });
  });

  it('a text in a worker\'s ring is stored from the ring and given back once its record is built, or once its store fails', async () => {
    // A stand-in for the parse worker (processors/parse-pool.ts): the page analysed here, its text
    // in a shared buffer standing for the ring, each release counted.
    let released = 0;
    const ring = new Uint8Array(new SharedArrayBuffer(1 << 16));
    const analyzer: ParseAnalyzer = {
      threads: 1,
      analyze: async (p) => {
        const a = analyzePage(p, { userAgent: 'kcrawl', textAsUtf8: true });
        ring.set(a.text);
        return { ...a, text: ring.subarray(0, a.text.length), releaseText: () => void released++ };
      },
      backlog: () => ({ bytes: 0, waiting: 0 }),
      close: async () => undefined,
    };
    let built: (() => void) | undefined;
    let store!: (ptr: WarcPointer) => void;
    let fail!: (err: Error) => void;
    const texts: string[] = [];
    const stage = await diskStage({
      analyzer,
      archiveText: (e, onBuilt) => {
        texts.push(Buffer.from((e as { text: Uint8Array }).text).toString('utf8'));
        built = onBuilt;
        return new Promise<WarcPointer>((resolve, reject) => ((store = resolve), (fail = reject)));
      },
    });
    const first = (await stage.handle(rec(page('http://a.test/r/1', LONG('rowing'))), ctx)) as { pending: Promise<OutRecord[]> };
    expect(texts[0]).toContain('rowing sentence 0');
    expect(released).toBe(0); // the record is not built yet: the ring still holds the text
    built!();
    expect(released).toBe(1);
    store({ uri: 'file:///t.warc.gz', offset: 1, length: 2, recordId: '<urn:uuid:y>' });
    await first.pending;
    expect(released).toBe(1); // given back once only
    // A store that fails before the record is built still gives the text back.
    const second = (await stage.handle(rec(page('http://a.test/r/2', LONG('fencing'))), ctx)) as { pending: Promise<OutRecord[]> };
    expect(released).toBe(1);
    fail(new Error('disk full'));
    await expect(second.pending).rejects.toThrow('disk full');
    expect(released).toBe(2);
    // A page whose text is not stored (a duplicate) gives it back at once.
    await run(stage, page('http://a.test/r/3', LONG('fencing')));
    expect(released).toBe(3);
  });

  it('duplicates, unchanged and noindex pages get no text record', async () => {
    const entries: WarcEntry[] = [];
    const stage = await diskStage({ archiveText: async (e) => (entries.push(e), { uri: 'u', offset: 0, length: 1, recordId: 'r' }) });
    await run(stage, page('http://a.test/x/1', LONG('pottery')));
    await run(stage, page('http://a.test/x/2', LONG('pottery')));
    const p = page('http://a.test/x/3', LONG('glass'));
    await run(stage, { ...p, prev_sha256: p.sha256 });
    await run(stage, page('http://a.test/x/4', LONG('metal').replace('<head>', '<head><meta name="robots" content="noindex">')));
    expect(entries.map((e) => (e as { targetUri: string }).targetUri)).toEqual(['http://a.test/x/1']);
  });
});

it('crawl.content rows match their schema (the check can fail)', () => {
  const v: ContentMsg = { url: 'http://a.test/', host: 'a.test', sha256: 's', simhash64: null, fetched_at: 1, duplicate_of: 'http://a.test/x', simhash_version: V };
  const type = avroType(topics.content.valueSchema);
  expect(type.isValid(v)).toBe(true);
  expect(type.isValid({ ...v, sha256: null })).toBe(false);
  const fields = (type as unknown as { fields: Array<{ name: string }> }).fields.map((f) => f.name).sort();
  expect(fields).toEqual(Object.keys(v).sort());
});
