/**
 * The benchmark's real-page web (bench/real-web.ts) over the corpus templates: each page keeps
 * its template's size, links only to the benchmark web, is the same bytes every time it is
 * asked for, keeps non-Latin text non-Latin, and no two distinct pages of a sample are
 * near-duplicates to the crawler's SimHash (bench/web-check.ts).
 *
 * Over the five trimmed corpus pages vendored in test/fixtures/realpages (always: a fresh
 * clone has no shared corpus), and over the whole corpus (bench/corpus.ts) where it is found.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Parser } from 'htmlparser2';
import { NEAR_DUPLICATE_MAX_BITS } from '../../lib/dedup';
import { extract } from '../../lib/html/extract';
import { corpusDir, templatePages } from '../../bench/corpus';
import { pageOfTemplate, pageTemplate, prepareTemplate, realPage, type Template } from '../../bench/real-web';
import { hostAddress, pageLinks } from '../../bench/synthetic-web';
import { servedDistances } from '../../bench/web-check';

const HOSTS = 2000;
const PORT = 8080;
const FIXTURES = join(__dirname, '..', 'fixtures', 'realpages');
/** The whole corpus, if this machine has it (CRAWL_CORPUS_DIR, or shared/ above the checkout). */
const corpus = ((): string | null => {
  try {
    const dir = corpusDir();
    return existsSync(dir) ? dir : null;
  } catch {
    return null;
  }
})();

/**
 * Every href (of any tag) and meta refresh content htmlparser2 reads in `html`: a parser that,
 * unlike kcrawl's (parse5, scripting on), reads the markup inside noscript, iframe, noembed,
 * noframes and xmp, as cheerio does for the peer.
 */
function hrefsAsMarkup(html: string): string[] {
  const found: string[] = [];
  const p = new Parser({
    onopentag(name, attrs) {
      if (attrs.href !== undefined) found.push(attrs.href);
      if (name === 'meta' && attrs['http-equiv']?.trim().toLowerCase() === 'refresh' && attrs.content !== undefined) found.push(`refresh ${attrs.content}`);
    },
  }, { decodeEntities: true });
  p.end(html);
  return found;
}

/** An href a crawler resolves to a URL outside the page itself and the benchmark web's links. */
const outside = (href: string, benchHrefs: ReadonlySet<string>): boolean => {
  const v = href.trim();
  return v !== '' && !v.startsWith('#') && !benchHrefs.has(v) && !/^refresh x/.test(v);
};

const url = (h: number, n: number): string => `http://${hostAddress(h)}:${PORT}/p/${n}`;
const CJK = /[\u3041-\u30ff\u4e00-\u9fa5]/g;

const sources: Array<[label: string, dir: string, count: number]> = [['the vendored corpus excerpts', FIXTURES, 5]];
if (corpus !== null) sources.push(['the whole corpus', corpus, 44]);

describe.each(sources)('the real-page web over %s', (_label, dir, count) => {
  let templates: Template[];

  beforeAll(() => {
    templates = templatePages(dir).map(prepareTemplate);
  });

  /** Page n of host 5 whose template is `index` (the first such n). */
  function pageOf(index: number): { n: number; html: string; bytes: Buffer } {
    const { n, page } = pageOfTemplate(templates, index, 5, HOSTS, PORT);
    return { n, html: page.toString('utf8'), bytes: page };
  }

  it(`uses its ${count} real pages, none of the corpus's test fixtures`, () => {
    expect(templates).toHaveLength(count);
    expect(templates.map((t) => t.name)).not.toContain('data-url-image.html');
    expect(Math.min(...templates.map((t) => t.bytes.length))).toBeGreaterThanOrEqual(8 * 1024);
  });

  it('every template: its size, and exactly the benchmark web\'s 25 links (its own are neutralised)', () => {
    templates.forEach((t, index) => {
      const { n, html, bytes } = pageOf(index);
      const nav = bytes.length - t.bytes.length;
      expect(nav).toBeGreaterThan(0);
      expect(nav).toBeLessThan(2000);
      const ex = extract(html, url(5, n));
      const expected = pageLinks(5, n, HOSTS).map(([th, tn]) => url(th, tn));
      expect({ name: t.name, links: ex.links.map((l) => l.url).sort() }).toEqual({ name: t.name, links: [...new Set(expected)].sort() });
      expect(ex.metaRefresh).toBeNull();
    });
  });

  it('every template: no link outside the benchmark web, inside noscript and the other raw-text elements too', () => {
    templates.forEach((t, index) => {
      const { n, html } = pageOf(index);
      const bench = new Set(pageLinks(5, n, HOSTS).map(([th, tn]) => (th === 5 ? `/p/${tn}` : url(th, tn))));
      expect({ name: t.name, outside: hrefsAsMarkup(html).filter((h) => outside(h, bench)) }).toEqual({ name: t.name, outside: [] });
    });
  });

  it('is the same bytes every time; another page of the same template is other text of the same length', () => {
    const a = realPage(templates, 7, 3, HOSTS, PORT);
    expect(realPage(templates, 7, 3, HOSTS, PORT).equals(a)).toBe(true);
    const index = pageTemplate(7, 3, templates.length).index;
    let m = 4;
    while (pageTemplate(7, m, templates.length).index !== index) m++;
    const b = realPage(templates, 7, m, HOSTS, PORT);
    expect(b.equals(a)).toBe(false);
    // Links differ in their digits only; the text's length in bytes is the template's either way.
    expect(Math.abs(b.length - a.length)).toBeLessThan(60);
  });

  it('keeps Chinese and Japanese text Chinese and Japanese, changed', () => {
    for (const name of ['qq.html', 'yahoo-4.html']) {
      const index = templates.findIndex((t) => t.name === name);
      const original = extract(templates[index].bytes.toString('utf8'), url(5, 0)).text;
      const served = extract(pageOf(index).html, url(5, 0)).text;
      expect(served.match(CJK)?.length).toBe(original.match(CJK)?.length);
      expect(served.match(CJK)!.length).toBeGreaterThan(700);
      expect(served).not.toBe(original);
    }
  });

  it('serves no two pages within the near-duplicate threshold (a sample of 300 pages)', () => {
    const s = servedDistances(templates, HOSTS, 30, 10);
    expect(s.pairs).toBeGreaterThan(40_000);
    expect(s.sameTemplatePairs).toBeGreaterThan(500);
    expect(s.withinThreshold).toBe(0);
    expect(s.minSameTemplate).toBeGreaterThan(NEAR_DUPLICATE_MAX_BITS);
  });
});

describe('the real-page web\'s link neutralising', () => {
  it('reaches links in markup that only other parsers read: noscript, iframe, noembed, noframes, xmp, plaintext', () => {
    const html = [
      '<html><head><noscript><link rel="stylesheet" href="https://cdn.example/x.css"></noscript></head><body>',
      '<p>Some words of text here.</p><a href="https://example.com/a">a</a>',
      '<noscript><a href="http://ads.example/click" target="_blank"><img src="http://ads.example/i.gif"></a>',
      '<meta http-equiv="refresh" content="0; url=http://ads.example/r"></noscript>',
      '<iframe><a href=http://frame.example/>f</a></iframe><noembed><area href=\'/rel\'></noembed>',
      '<noframes><a href="//proto.example/">p</a></noframes><xmp><a href="x.html">x</a></xmp>',
      '<noscript><iframe><a href="http://nested.example/">n</a></iframe></noscript>',
      '<plaintext><a href="http://plain.example/">p</a>',
    ].join('');
    const t = prepareTemplate({ name: 'raw-text.html', html });
    const served = t.bytes.toString('utf8');
    expect(served.length).toBe(html.length);
    expect(hrefsAsMarkup(served).filter((h) => outside(h, new Set()))).toEqual([]);
    // What was there is still there, one character changed per link.
    expect(hrefsAsMarkup(html).filter((h) => outside(h, new Set()))).toHaveLength(10);
    expect(served).toContain('<a href="#ttp://ads.example/click"');
    expect(served).toContain('<img src="http://ads.example/i.gif">');
  });
});
