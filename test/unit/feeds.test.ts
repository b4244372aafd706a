import { feedKind, feedLinks, feedOf, itemKey, parseFeed, xmlText, MAX_FEED_BYTES } from '../../processors/feeds';

const RSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel>
  <title>News &amp; more</title><link>https://news.example.org/</link>
  <atom:link href="https://news.example.org/feed.xml" rel="self" type="application/rss+xml"/>
  <item>
    <title>Storm update&nbsp;&mdash; live</title>
    <atom:link href="https://elsewhere.example.com/not-the-link"/>
    <link>https://news.example.org/world/2026/09/27/storm-update?a=1&amp;b=2</link>
    <guid isPermaLink="false">tag:news.example.org,2026:storm-1</guid>
    <content:encoded><![CDATA[<p>Body with <a href="https://news.example.org/inner">a link</a></p>]]></content:encoded>
  </item>
  <item><guid>https://news.example.org/only-guid</guid><title>Guid is the link</title></item>
  <item><link><![CDATA[ /relative/article ]]></link></item>
  <item><title>No link, no guid: skipped</title></item>
  <item><link>javascript:alert(1)</link><guid isPermaLink="false">id-js</guid></item>
</channel></rss>`;

const ATOM = `<?xml version="1.0" encoding="utf-8"?>
<!-- a comment first -->
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://blog.example.net/posts/">
  <title>Blog</title><id>urn:uuid:feed</id>
  <link rel="self" href="https://blog.example.net/atom.xml"/>
  <entry>
    <id>urn:uuid:1</id>
    <link rel="edit" href="https://blog.example.net/edit/1"/>
    <link rel="alternate" type="text/html" href="first-post"/>
  </entry>
  <entry xml:base="https://cdn.example.net/mirror/">
    <id>urn:uuid:2</id><link href="second"/>
  </entry>
  <entry><id>urn:uuid:3</id></entry>
</feed>`;

const RDF = `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
  <channel rdf:about="https://old.example.org/"><title>Old</title></channel>
  <item rdf:about="https://old.example.org/a"><title>A</title><link>https://old.example.org/a</link></item>
</rdf:RDF>`;

describe('feedKind', () => {
  test.each<[string, string, string | null]>([
    ['RSS 2.0', RSS, 'rss'],
    ['Atom after a comment', ATOM, 'atom'],
    ['RSS 1.0', RDF, 'rdf'],
    ['with a BOM and a DOCTYPE', '\ufeff<?xml version="1.0"?><!DOCTYPE rss><rss version="0.91">', 'rss'],
    ['a sitemap', '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">', null],
    ['HTML', '<!doctype html><html><head><title>rss</title>', null],
    ['JSON', '{"rss": 1}', null],
  ])('%s', (_name, doc, kind) => {
    expect(feedKind(doc)).toBe(kind);
  });
});

describe('parseFeed', () => {
  it('RSS 2.0: item links (not atom:link), guids as links when permalinks, relative links, entities; items with nothing usable skipped', () => {
    const f = parseFeed(RSS, 'https://news.example.org/feed.xml', 100)!;
    expect(f.kind).toBe('rss');
    expect(f.items).toEqual([
      { url: 'https://news.example.org/world/2026/09/27/storm-update?a=1&b=2', key: itemKey('tag:news.example.org,2026:storm-1') },
      { url: 'https://news.example.org/only-guid', key: itemKey('https://news.example.org/only-guid') },
      { url: 'https://news.example.org/relative/article', key: itemKey('https://news.example.org/relative/article') },
      { url: null, key: itemKey('id-js') },
    ]);
  });

  it('Atom: the alternate link (or one without rel), resolved against xml:base; an entry without a link keeps its id', () => {
    const f = parseFeed(ATOM, 'https://blog.example.net/atom.xml', 100)!;
    expect(f.kind).toBe('atom');
    expect(f.items).toEqual([
      { url: 'https://blog.example.net/posts/first-post', key: itemKey('urn:uuid:1') },
      { url: 'https://cdn.example.net/mirror/second', key: itemKey('urn:uuid:2') },
      { url: null, key: itemKey('urn:uuid:3') },
    ]);
  });

  it('RSS 1.0: items keyed by rdf:about', () => {
    expect(parseFeed(RDF, 'https://old.example.org/index.rdf', 100)!.items).toEqual([{ url: 'https://old.example.org/a', key: itemKey('https://old.example.org/a') }]);
  });

  it('reads at most maxItems items', () => {
    const items = Array.from({ length: 500 }, (_, i) => `<item><link>https://a.test/${i}</link></item>`).join('');
    const f = parseFeed(`<rss><channel>${items}</channel></rss>`, 'https://a.test/feed', 20)!;
    expect(f.items).toHaveLength(20);
    expect(f.items[19].url).toBe('https://a.test/19');
  });

  it('keeps what it read before the document breaks off or goes wrong', () => {
    const f = parseFeed('<rss><channel><item><link>https://a.test/1</link></item><item><link>https://a.test/2</li', 'https://a.test/f', 10)!;
    expect(f.items.map((i) => i.url)).toEqual(['https://a.test/1']);
    const g = parseFeed('<rss><channel><item><link>https://a.test/1 & 2 < 3</link></item><item><link>https://a.test/ok</link></item></channel></rss>', 'https://a.test/f', 10)!;
    expect(g.items.map((i) => i.url)).toEqual(['https://a.test/1%20&%202%20%3C%203', 'https://a.test/ok']);
  });

  it('a billion-laughs document is read as written: no entity is expanded', () => {
    const levels = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('');
    const bomb = `<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY lol0 "lol">${levels}]><rss><channel><item><link>https://a.test/&lol9;</link><guid isPermaLink="false">&lol9;</guid></item></channel></rss>`;
    const f = parseFeed(bomb, 'https://a.test/feed', 10)!;
    expect(f.items).toHaveLength(1);
    expect(f.items[0].url!.length).toBeLessThan(100);
    expect(f.items[0].key).toBe(itemKey('&lol9;'));
  });

  it('an item field longer than 4,096 characters is cut; a huge feed is read only up to maxItems', () => {
    const long = `https://a.test/${'x'.repeat(100_000)}`;
    const f = parseFeed(`<rss><channel><item><link>${long}</link></item></channel></rss>`, 'https://a.test/f', 10)!;
    expect(f.items[0].url!.length).toBeLessThanOrEqual(4096);
    const huge = `<rss><channel>${'<item><link>https://a.test/x</link><description>' + 'y'.repeat(1000) + '</description></item>'.repeat(1)}`.repeat(1) +
      Array.from({ length: 3000 }, (_, i) => `<item><link>https://a.test/${i}</link><description>${'z'.repeat(1000)}</description></item>`).join('') + '</channel></rss>';
    expect(parseFeed(huge, 'https://a.test/f', 200)!.items).toHaveLength(200);
  });
});

describe('feedOf and xmlText', () => {
  it('reads 2xx feeds only, whatever their content type', () => {
    expect(feedOf(200, 'application/rss+xml', 'https://news.example.org/feed.xml', Buffer.from(RSS), 100)!.items).toHaveLength(4);
    expect(feedOf(200, 'text/plain', 'https://blog.example.net/atom.xml', Buffer.from(ATOM), 100)!.kind).toBe('atom');
    expect(feedOf(404, 'application/rss+xml', 'https://a.test/feed', Buffer.from(RSS), 100)).toBeNull();
    expect(feedOf(200, 'application/xml', 'https://a.test/sitemap.xml', Buffer.from('<urlset><url><loc>https://a.test/</loc></url></urlset>'), 100)).toBeNull();
    expect(feedOf(200, null, 'https://a.test/feed', Buffer.alloc(0), 100)).toBeNull();
  });

  it('decodes by BOM, Content-Type charset, then the XML declaration, and is cut at MAX_FEED_BYTES', () => {
    const latin1 = Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><item><link>https://a.test/caf\xe9</link></item></channel></rss>', 'latin1');
    expect(feedOf(200, 'text/xml', 'https://a.test/f', latin1, 10)!.items[0].url).toBe('https://a.test/caf%C3%A9');
    expect(xmlText(Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?>\xe9', 'latin1'), 'text/xml; charset=utf-8')).toContain('\ufffd');
    expect(xmlText(Buffer.from('<?xml version="1.0" encoding="no-such-thing"?>ok'), null)).toContain('ok');
    expect(xmlText(Buffer.alloc(MAX_FEED_BYTES + 10, 0x61), null).length).toBe(MAX_FEED_BYTES);
  });
});

describe('feedLinks', () => {
  it('items one hop deeper, class 1 on the feed\'s own registered domain only, each URL once', () => {
    const feed = { kind: 'rss' as const, items: [
      { url: 'https://www.example.org/a', key: '1' }, { url: 'https://news.example.org/b', key: '2' },
      { url: 'https://other.test/c', key: '3' }, { url: 'https://www.example.org/a', key: '4' }, { url: null, key: '5' },
    ] };
    expect(feedLinks(feed, 'https://news.example.org/feed', 2, 7)).toEqual([
      { url: 'https://www.example.org/a', source_url: 'https://news.example.org/feed', depth: 3, discovered_at: 7, is_seed: false, priority_class: 1 },
      { url: 'https://news.example.org/b', source_url: 'https://news.example.org/feed', depth: 3, discovered_at: 7, is_seed: false, priority_class: 1 },
      { url: 'https://other.test/c', source_url: 'https://news.example.org/feed', depth: 3, discovered_at: 7, is_seed: false },
    ]);
  });
});
