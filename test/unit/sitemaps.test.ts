/** Sitemaps (sitemaps.org 0.9): recognising, un-gzipping, parsing, and the fetch stage's use of them. */
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import type { HttpCapture, HttpClient } from '../../connectors/types';
import { DEFAULTS } from '../../lib/config';
import { avroType } from '../../lib/avro';
import type { FetchRequestMsg, FetchStatusMsg, LinkMsg } from '../../lib/messages';
import { fetchStage } from '../../processors/fetch';
import { itemKey } from '../../processors/feeds';
import { maybeSitemap, parseSitemap, sitemapLinks, sitemapOf, sitemapSeeds, sitemapText } from '../../processors/sitemaps';
import type { InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { topics } from '../../topologies/crawl';

/** Every record is valid for its topic's Avro schema. */
function expectAllValid(outs: readonly OutRecord[]): void {
  for (const o of outs) expect([o.topic, avroType(topics[o.topic].valueSchema).isValid(o.value)]).toEqual([o.topic, true]);
}

const URLSET = `<?xml version="1.0" encoding="UTF-8"?>
<!-- generated -->
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one</loc><lastmod>2026-11-01</lastmod><changefreq>daily</changefreq></url>
  <url>
    <loc> http://a.test/two?x=1&amp;y=2 </loc>
    <lastmod>2026-11-02T10:00:00+00:00</lastmod>
  </url>
  <url><loc><![CDATA[http://www.a.test/three]]></loc></url>
  <url><loc>http://elsewhere.test/spam</loc></url>
  <url><loc>ftp://a.test/file</loc></url>
  <url><loc>not a url</loc></url>
  <url><lastmod>2026-01-01</lastmod></url>
</urlset>`;

const INDEX = `<?xml version="1.0"?><sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
<sm:sitemap><sm:loc>http://a.test/s1.xml.gz</sm:loc><sm:lastmod>2026-10-01</sm:lastmod></sm:sitemap>
<sm:sitemap><sm:loc>http://a.test/s2.xml</sm:loc></sm:sitemap></sm:sitemapindex>`;

describe('parseSitemap', () => {
  it('reads <loc> and <lastmod> of a urlset; drops other domains, other schemes and bad URLs', () => {
    expect(parseSitemap(URLSET, 'http://a.test/sitemap.xml')).toEqual({
      kind: 'urlset',
      entries: [
        { loc: 'http://a.test/one', lastmod: Date.parse('2026-11-01') },
        { loc: 'http://a.test/two?x=1&y=2', lastmod: Date.parse('2026-11-02T10:00:00Z') },
        { loc: 'http://www.a.test/three', lastmod: null },
      ],
    });
  });

  it('reads a sitemap index with a namespace prefix', () => {
    expect(parseSitemap(INDEX, 'http://a.test/sitemap.xml')).toEqual({
      kind: 'sitemapindex',
      entries: [{ loc: 'http://a.test/s1.xml.gz', lastmod: Date.parse('2026-10-01') }, { loc: 'http://a.test/s2.xml', lastmod: null }],
    });
  });

  it.each([
    ['an RSS feed', '<?xml version="1.0"?><rss><channel><item><link>http://a.test/x</link></item></channel></rss>'],
    ['HTML', '<!doctype html><html><body><urlset></urlset></body></html>'],
    ['empty', ''],
  ])('%s is not a sitemap', (_n, text) => {
    expect(parseSitemap(text, 'http://a.test/sitemap.xml')).toBeNull();
  });

  it('stops at maxUrls entries', () => {
    const many = `<urlset>${Array.from({ length: 20 }, (_v, i) => `<url><loc>http://a.test/${i}</loc></url>`).join('')}</urlset>`;
    expect(parseSitemap(many, 'http://a.test/s.xml', 5)!.entries).toHaveLength(5);
  });
});

describe('sitemapText and sitemapOf', () => {
  it('un-gzips a .xml.gz body (by its magic bytes, not its name)', () => {
    expect(sitemapText(gzipSync(Buffer.from(URLSET)))).toBe(URLSET);
    expect(sitemapOf(200, 'application/octet-stream', 'http://a.test/s', gzipSync(Buffer.from(URLSET)))!.entries).toHaveLength(3);
  });

  it('refuses a gzip bomb past the size limit, and a corrupt gzip', () => {
    const bomb = gzipSync(Buffer.alloc(2_000_000, 0x20));
    expect(sitemapText(bomb, 1_000_000)).toBeNull();
    expect(sitemapText(Buffer.from([0x1f, 0x8b, 1, 2, 3]))).toBeNull();
  });

  it.each<[string, string | null, string, boolean]>([
    ['application/xml', 'application/xml', 'http://a.test/x', true],
    ['text/xml; charset=utf-8', 'text/xml; charset=utf-8', 'http://a.test/x', true],
    ['application/gzip', 'application/gzip', 'http://a.test/x', true],
    ['untyped .xml', null, 'http://a.test/sitemap.xml', true],
    ['text/plain page', 'text/plain', 'http://a.test/page', false],
  ])('maybeSitemap: %s', (_n, ct, url, expected) => {
    expect(maybeSitemap(ct, url, Buffer.from('x'))).toBe(expected);
  });

  it('only 2xx answers count', () => {
    expect(sitemapOf(404, 'application/xml', 'http://a.test/sitemap.xml', Buffer.from(URLSET))).toBeNull();
  });
});

describe('sitemapSeeds and sitemapLinks', () => {
  it.each<[string, string[], boolean, string[]]>([
    ['robots lines on the same domain', ['http://a.test/s.xml', 'https://www.a.test/s2.xml'], false, ['http://a.test/s.xml', 'https://www.a.test/s2.xml']],
    ['robots lines elsewhere are ignored', ['http://cdn.other.test/s.xml'], false, []],
    ['no lines, probing on', [], true, ['http://a.test/sitemap.xml']],
    ['no lines, probing off', [], false, []],
    ['lines win over probing', ['http://a.test/s.xml'], true, ['http://a.test/s.xml']],
  ])('%s', (_n, lines, probe, expected) => {
    expect(sitemapSeeds('http://a.test', lines, probe)).toEqual(expected);
  });

  it('page URLs go one hop deeper with their lastmod; child sitemaps stay at the index depth', () => {
    const urls = sitemapLinks(parseSitemap(URLSET, 'http://a.test/s.xml')!, 'http://a.test/s.xml', 0, 7);
    expect(urls[0]).toEqual({ url: 'http://a.test/one', source_url: 'http://a.test/s.xml', depth: 1, discovered_at: 7, is_seed: false, lastmod: Date.parse('2026-11-01') });
    const kids = sitemapLinks(parseSitemap(INDEX, 'http://a.test/s.xml')!, 'http://a.test/s.xml', 0, 7);
    expect(kids.map((k) => k.depth)).toEqual([0, 0]);
  });
});

describe('fetch stage and sitemaps', () => {
  const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };
  const cap = (url: string, status: number, ct: string | null, body: string | Buffer): HttpCapture => ({
    url, ip: '127.0.3.20', status, statusText: '', headers: ct ? [['Content-Type', ct]] : [], requestHead: `GET ${url} HTTP/1.1\r\n\r\n`,
    body: Buffer.isBuffer(body) ? body : Buffer.from(body), truncated: false, startedAt: 0, elapsedMs: 5, responseMs: 5,
  });
  function stageWith(routes: Record<string, HttpCapture>, probe = false) {
    const calls: string[] = [];
    const http: HttpClient = { fetch: async (url) => (calls.push(url), routes[url] ?? cap(url, 404, null, '')), close: async () => {} };
    let clock = 0;
    const stage = fetchStage({
      http, config: { ...DEFAULTS, sitemapProbe: probe }, now: () => clock++, sleep: async (ms) => void (clock += ms),
      archive: async () => ({ uri: 'file:///w', offset: 0, length: 1, recordId: '<urn:uuid:1>' }),
    });
    const run = async (url: string): Promise<OutRecord[]> => {
      const req: FetchRequestMsg = { url, host: new URL(url).hostname, depth: 2, lease_id: 'L', lease_expires_at: 1e12, attempt: 1, prev_sha256: null, etag: null, last_modified: null };
      const r = await stage.handle({ topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 } as InRecord, ctx);
      return Array.isArray(r) ? r : [...(r.early ?? []), ...(await r.pending)];
    };
    return { run, calls };
  }
  const links = (outs: OutRecord[]): LinkMsg[] => outs.filter((o) => o.topic === 'links').map((o) => o.value as LinkMsg);

  it("robots.txt's Sitemap lines go to crawl.links (once, when robots.txt is read), not fetched inline", async () => {
    const { run, calls } = stageWith({
      'http://a.test/robots.txt': cap('http://a.test/robots.txt', 200, 'text/plain', 'User-agent: *\nDisallow: /no\nSitemap: http://a.test/sm.xml\n'),
      'http://a.test/p': cap('http://a.test/p', 200, 'text/html', '<html></html>'),
    });
    expect(links(await run('http://a.test/p'))).toEqual([expect.objectContaining({ url: 'http://a.test/sm.xml', depth: 0, source_url: 'http://a.test/robots.txt' })]);
    expect(calls).toEqual(['http://a.test/robots.txt', 'http://a.test/p']);
    expect(links(await run('http://a.test/no'))).toEqual([]); // robots.txt cached: not announced again
  });

  it('/sitemap.xml is announced only when probing is on and robots.txt names none', async () => {
    const routes = { 'http://a.test/robots.txt': cap('http://a.test/robots.txt', 404, null, '') };
    expect(links(await stageWith(routes, true).run('http://a.test/p')).map((l) => l.url)).toEqual(['http://a.test/sitemap.xml']);
    expect(links(await stageWith(routes, false).run('http://a.test/p'))).toEqual([]);
  });

  it('a feed response (RSS, any type) is stored, marked in its status with its items\' keys, and its items go to crawl.links in class 1', async () => {
    const rss = '<?xml version="1.0"?><rss><channel><item><link>http://a.test/n1</link><guid>g1</guid></item>' +
      '<item><link>http://other.test/x</link></item></channel></rss>';
    const { run } = stageWith({
      'http://a.test/robots.txt': cap('http://a.test/robots.txt', 404, null, ''),
      'http://a.test/feed': cap('http://a.test/feed', 200, 'text/xml', rss),
    });
    const outs = await run('http://a.test/feed');
    const final = outs.filter((o) => o.topic === 'fetchStatus').map((o) => o.value as FetchStatusMsg).find((s) => s.stored)!;
    expect(final).toMatchObject({ outcome: 'FETCHED', feed_kind: 'rss', feed_items: [itemKey('g1'), itemKey('http://other.test/x')] });
    expect(links(outs)).toEqual([
      { url: 'http://a.test/n1', source_url: 'http://a.test/feed', depth: 3, discovered_at: expect.any(Number), is_seed: false, priority_class: 1 },
      { url: 'http://other.test/x', source_url: 'http://a.test/feed', depth: 3, discovered_at: expect.any(Number), is_seed: false },
    ]);
    expectAllValid(outs);
  });

  it('a news sitemap: its news entries go in class 1 and its status names it a feed; a plain sitemap is no feed', async () => {
    const news = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">' +
      '<url><loc>http://a.test/story</loc><news:news><news:publication_date>2026-09-27</news:publication_date></news:news></url>' +
      '<url><loc>http://a.test/about</loc></url></urlset>';
    const { run } = stageWith({
      'http://a.test/robots.txt': cap('http://a.test/robots.txt', 404, null, ''),
      'http://a.test/news.xml': cap('http://a.test/news.xml', 200, 'application/xml', news),
      'http://a.test/sm.xml': cap('http://a.test/sm.xml', 200, 'application/xml', URLSET),
    });
    const outs = await run('http://a.test/news.xml');
    const final = outs.filter((o) => o.topic === 'fetchStatus').map((o) => o.value as FetchStatusMsg).find((s) => s.stored)!;
    expect(final).toMatchObject({ feed_kind: 'news-sitemap', feed_items: [itemKey('http://a.test/story')] });
    expect(links(outs).map((l) => [l.url, l.priority_class ?? null])).toEqual([['http://a.test/story', 1], ['http://a.test/about', null]]);
    const plain = (await run('http://a.test/sm.xml')).filter((o) => o.topic === 'fetchStatus').map((o) => o.value as FetchStatusMsg);
    expect(plain.every((s) => s.feed_kind === undefined && s.feed_items === undefined)).toBe(true);
  });

  it('a sitemap response (gzipped, any type) is stored and its URLs go to crawl.links with lastmod', async () => {
    const { run } = stageWith({
      'http://a.test/robots.txt': cap('http://a.test/robots.txt', 404, null, ''),
      'http://a.test/sm.xml.gz': cap('http://a.test/sm.xml.gz', 200, 'application/x-gzip', gzipSync(Buffer.from(URLSET))),
    });
    const outs = await run('http://a.test/sm.xml.gz');
    const final = outs.filter((o) => o.topic === 'fetchStatus').map((o) => o.value as { outcome: string; stored: boolean }).find((s) => s.stored);
    expect(final).toMatchObject({ outcome: 'FETCHED' });
    expect(links(outs).map((l) => [l.url, l.depth, l.lastmod])).toEqual([
      ['http://a.test/one', 3, Date.parse('2026-11-01')],
      ['http://a.test/two?x=1&y=2', 3, Date.parse('2026-11-02T10:00:00Z')],
      ['http://www.a.test/three', 3, null],
    ]);
  });
});
