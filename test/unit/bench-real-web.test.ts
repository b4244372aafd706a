/**
 * The benchmark's real-page web (bench/real-web.ts) over the corpus templates: each page keeps
 * its template's size, links only to the benchmark web, is the same bytes every time it is
 * asked for, keeps non-Latin text non-Latin, and no two distinct pages of a sample are
 * near-duplicates to the crawler's SimHash (bench/web-check.ts).
 */
import { NEAR_DUPLICATE_MAX_BITS } from '../../lib/dedup';
import { extract } from '../../lib/html/extract';
import { templatePages } from '../../bench/corpus';
import { pageOfTemplate, pageTemplate, prepareTemplate, realPage, type Template } from '../../bench/real-web';
import { hostAddress, pageLinks } from '../../bench/synthetic-web';
import { servedDistances } from '../../bench/web-check';

const HOSTS = 2000;
const PORT = 8080;
let templates: Template[];

beforeAll(() => {
  templates = templatePages().map(prepareTemplate);
});

/** Page n of host 5 whose template is `index` (the first such n). */
function pageOf(index: number): { n: number; html: string; bytes: Buffer } {
  const { n, page } = pageOfTemplate(templates, index, 5, HOSTS, PORT);
  return { n, html: page.toString('utf8'), bytes: page };
}

const url = (h: number, n: number): string => `http://${hostAddress(h)}:${PORT}/p/${n}`;
const CJK = /[\u3041-\u30ff\u4e00-\u9fa5]/g;

describe('the real-page web', () => {
  it('uses the 44 real pages of the corpus, none of its test fixtures', () => {
    expect(templates).toHaveLength(44);
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
