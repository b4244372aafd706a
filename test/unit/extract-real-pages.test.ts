/**
 * extract() on real pages (trimmed corpus pages vendored in test/fixtures/realpages, see its
 * README): what a reader sees on cnet.html's article, and the rest of a page read the same
 * whatever comes before it. Both failed while FastTokenizer lost its place past parse5's
 * 64 KiB input waterline (#35): cnet.html gave 463 characters of text and no link of its body,
 * and a <nav> put after <body> changed what was read of keep-images, msn, nytimes-3, qq and
 * webmd-2 further down.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { extract } from '../../lib/html/extract';

const DIR = join(__dirname, '..', 'fixtures', 'realpages');
const page = (name: string): string => readFileSync(join(DIR, name), 'utf8');
const CNET = 'https://www.cnet.com/news/zuckerberg-offers-peek-at-facebooks-acquisition-strategies/';

describe('extract on real pages', () => {
  it("reads cnet.html's article, which follows 78 KiB of head and scripts: its text and its links", () => {
    const ex = extract(page('cnet-excerpt.html'), CNET);
    expect(ex.title).toBe("Zuckerberg offers peek at Facebook's acquisition strategies - CNET");
    expect(ex.text).toContain("Anyone who has ever been involved in closing a billion-dollar acquisition deal will tell you that you don't go in without a clear, well thought out plan.");
    expect(ex.text).toContain('It also pays to be weary of competing suitors for your startup');
    expect(ex.text.length).toBeGreaterThan(4000);
    const links = ex.links.map((l) => l.url);
    expect(links).toEqual(expect.arrayContaining([
      'https://www.cnet.com/news/facebook-closes-19-billion-deal-for-whatsapp/',
      'https://www.cnet.com/news/facebook-to-buy-oculus-for-2-billion/',
      'https://www.cnet.com/news/snapchat-said-to-rebuff-3-billion-offer-from-facebook/',
    ]));
    expect(ex.links.filter((l) => l.source === 'a').length).toBeGreaterThan(15);
  });

  it('reads the rest of every page the same with a <nav> of links put after <body>', () => {
    const names = readdirSync(DIR).filter((f) => f.endsWith('.html'));
    expect(names.length).toBeGreaterThanOrEqual(5);
    for (const name of names) {
      const html = page(name);
      const body = /<body[^>]*>/i.exec(html)!;
      const at = body.index + body[0].length;
      const nav = '<nav><ul><li><a href="/nav-probe">Navigation probe</a></li></ul></nav>';
      const plain = extract(html, CNET);
      const withNav = extract(html.slice(0, at) + nav + html.slice(at), CNET);
      expect({ name, found: withNav.links.some((l) => l.url === 'https://www.cnet.com/nav-probe') }).toEqual({ name, found: true });
      expect({ name, text: withNav.text.replace(/Navigation probe\n?/, '') }).toEqual({ name, text: plain.text });
      expect({ name, links: withNav.links.length }).toEqual({ name, links: plain.links.length + 1 });
    }
  });
});
