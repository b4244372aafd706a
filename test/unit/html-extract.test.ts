import { decodeBody, extract, sniffCharset, type Extracted } from '../../lib/html/extract';
import { rng } from '../support/rng';

const PAGE = 'https://example.com/dir/page.html';
const urls = (r: Extracted) => r.links.map((l) => l.url);
const doc = (head: string, body: string) => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;

describe('extract: links', () => {
  const cases: Array<[string, string, string[]]> = [
    ['relative and absolute', doc('', '<a href="a.html">1</a><a href="/b">2</a><a href="https://other.org/c?q=1">3</a><a href="//cdn.example.net/x">4</a>'),
      ['https://example.com/dir/a.html', 'https://example.com/b', 'https://other.org/c?q=1', 'https://cdn.example.net/x']],
    ['relative <base href>', doc('<base href="/root/">', '<a href="x">x</a>'), ['https://example.com/root/x']],
    ['<base> after links applies to the whole document', '<a href="x">x</a><base href="https://base.example/sub/"><a href="y">y</a>',
      ['https://base.example/sub/x', 'https://base.example/sub/y']],
    ['only the first <base> counts', doc('<base href="/one/"><base href="/two/">', '<a href="x">x</a>'), ['https://example.com/one/x']],
    ['area and link rel next/prev/alternate', doc('<link rel="next" href="p2"><link rel="prev" href="p0"><link rel="alternate" hreflang="de" href="/de/">',
      '<map><area href="/area" shape="rect"></map>'),
      ['https://example.com/dir/p2', 'https://example.com/dir/p0', 'https://example.com/de/', 'https://example.com/area']],
    ['stylesheet, icon and alternate stylesheet ignored', doc('<link rel="stylesheet" href="s.css"><link rel="icon" href="f.ico"><link rel="alternate stylesheet" href="alt.css">', ''), []],
    ['javascript:, mailto:, tel:, data: skipped', doc('', '<a href="javascript:void(0)">j</a><a href="JavaScript:x">J</a><a href="java\tscript:x">t</a><a href="mailto:a@b.c">m</a><a href="tel:+1">t</a><a href="data:text/html,x">d</a><a href="ftp://x/">f</a>'), []],
    ['empty and fragment-only skipped, fragments kept otherwise', doc('', '<a href="">e</a><a href="  ">s</a><a href="#top">f</a><a>none</a><a href="/p#s">p</a>'), ['https://example.com/p#s']],
    ['deduplicated by url, document order', doc('', '<a href="/b">1</a><a href="/a">2</a><a href="https://example.com/b">3</a><a href="/a">4</a>'),
      ['https://example.com/b', 'https://example.com/a']],
    ['entities in href decoded', doc('', '<a href="/s?a=1&amp;b=2">x</a>'), ['https://example.com/s?a=1&b=2']],
    ['<script> text is not markup', doc('<script>var s = "</div><a href=x>";</script>', '<script>document.write("<a href=\'/y\'>")</script><style>a[href="/z"]{}</style><a href="/real">r</a>'),
      ['https://example.com/real']],
    ['unquoted attributes and unclosed tags', '<html><body><div><p>one<a href=/u1 class=x>u1<p>two<a href=rel2>u2<li><a href=/u3>', ['https://example.com/u1', 'https://example.com/dir/rel2', 'https://example.com/u3']],
  ];
  test.each(cases)('%s', (_name, html, expected) => {
    expect(urls(extract(html, PAGE))).toEqual(expected);
  });

  test('source and rel are reported per link', () => {
    const r = extract(doc('<link rel="next" href="/n">', '<a href="/a" rel="nofollow noopener">a</a><area href="/ar"><a href="/b">b</a>'), PAGE);
    expect(r.links).toEqual([
      { url: 'https://example.com/n', nofollow: false, rel: 'next', source: 'link' },
      { url: 'https://example.com/a', nofollow: true, rel: 'nofollow noopener', source: 'a' },
      { url: 'https://example.com/ar', nofollow: false, rel: null, source: 'area' },
      { url: 'https://example.com/b', nofollow: false, rel: null, source: 'a' },
    ]);
  });

  test('feeds: link rel=alternate of an RSS or Atom type, resolved, each once, at most MAX_FEEDS; also links', () => {
    const head = '<link rel="alternate" type="application/rss+xml" href="/rss"><link rel="Alternate" type=" Application/Atom+XML " href="atom.xml">' +
      '<link rel="alternate" type="application/rss+xml" href="/rss"><link rel="alternate" type="text/html" href="/m">' +
      '<link rel="feed" type="application/rss+xml" href="/not-alternate">' +
      ['/c1', '/c2', '/c3', '/c4'].map((h) => `<link rel="alternate" type="application/rss+xml" href="${h}">`).join('');
    const r = extract(doc(head, ''), PAGE);
    expect(r.feeds).toEqual(['https://example.com/rss', 'https://example.com/dir/atom.xml', 'https://example.com/c1', 'https://example.com/c2']);
    expect(urls(r)).toContain('https://example.com/rss');
    expect(extract(doc('', '<a href="/rss.xml">rss</a>'), PAGE).feeds).toEqual([]);
  });

  test('a url linked both with and without nofollow stays followable', () => {
    const r = extract(doc('', '<a href="/a" rel="nofollow">1</a><a href="/a">2</a>'), PAGE);
    expect(r.links).toEqual([{ url: 'https://example.com/a', nofollow: false, rel: 'nofollow', source: 'a' }]);
  });

  test('baseHref is reported resolved; a javascript: base is ignored', () => {
    expect(extract(doc('<base href="../up/">', ''), PAGE).baseHref).toBe('https://example.com/up/');
    const r = extract(doc('<base href="javascript:alert(1)">', '<a href="x">x</a>'), PAGE);
    expect(r.baseHref).toBeNull();
    expect(urls(r)).toEqual(['https://example.com/dir/x']);
  });

  test('maxLinks bounds the list', () => {
    const body = Array.from({ length: 50 }, (_, i) => `<a href="/l${i}">${i}</a>`).join('');
    const r = extract(doc('', body), PAGE, { maxLinks: 10 });
    expect(r.links).toHaveLength(10);
    expect(r.links[9].url).toBe('https://example.com/l9');
  });
});

describe('extract: robots', () => {
  const body = '<a href="/a">a</a><a href="/b" rel="nofollow">b</a>';
  const cases: Array<[string, string, string | null, { noindex: boolean; nofollow: boolean }]> = [
    ['nothing', '', null, { noindex: false, nofollow: false }],
    ['meta robots noindex,nofollow', '<meta name="robots" content="noindex, nofollow">', null, { noindex: true, nofollow: true }],
    ['meta robots none', '<meta name="ROBOTS" content="NONE">', null, { noindex: true, nofollow: true }],
    ['meta for our product token', '<meta name="kcrawl" content="noindex">', null, { noindex: true, nofollow: false }],
    ['meta for another agent ignored', '<meta name="googlebot" content="noindex, nofollow">', null, { noindex: false, nofollow: false }],
    ['X-Robots-Tag for all', '', 'noindex, nofollow', { noindex: true, nofollow: true }],
    ['X-Robots-Tag for us', '', 'kcrawl: noindex', { noindex: true, nofollow: false }],
    ['X-Robots-Tag for another agent', '', 'googlebot: noindex, nofollow', { noindex: false, nofollow: false }],
    ['X-Robots-Tag mixed agents', '', 'googlebot: noindex, kcrawl: nofollow', { noindex: false, nofollow: true }],
    ['X-Robots-Tag valued directive is not an agent', '', 'unavailable_after: 2020-01-01, noindex', { noindex: true, nofollow: false }],
    ['meta and header combine', '<meta name="robots" content="nofollow">', 'noindex', { noindex: true, nofollow: true }],
  ];
  test.each(cases)('%s', (_name, head, header, expected) => {
    const r = extract(doc(head, body), PAGE, { xRobotsTag: header });
    expect(r.metaRobots).toEqual(expected);
    expect(r.links.map((l) => l.nofollow)).toEqual(expected.nofollow ? [true, true] : [false, true]);
  });

  test('productToken is configurable', () => {
    expect(extract(doc('<meta name="mybot" content="noindex">', ''), PAGE, { productToken: 'MyBot' }).metaRobots.noindex).toBe(true);
    expect(extract('', PAGE, { productToken: 'mybot', xRobotsTag: 'MyBot: noindex' }).metaRobots.noindex).toBe(true);
  });
});

describe('extract: metadata', () => {
  test('canonical, refresh, charset, lang', () => {
    const r = extract('<html lang="de-AT"><head><meta charset="ISO-8859-1"><link rel="canonical" href="/canon?x=1">' +
      '<meta http-equiv="refresh" content="0; url=/next"></head><body>x</body></html>', PAGE);
    expect(r.canonical).toBe('https://example.com/canon?x=1');
    expect(r.metaRefresh).toBe('https://example.com/next');
    expect(r.links).toEqual([{ url: 'https://example.com/next', nofollow: false, rel: null, source: 'meta-refresh' }]);
    expect(r.metaCharset).toBe('iso-8859-1');
    expect(r.lang).toBe('de-AT');
  });

  test.each([
    ['0; url=/next', 'https://example.com/next'],
    ['5;URL=\'/quoted\'', 'https://example.com/quoted'],
    ['3, https://other.org/x', 'https://other.org/x'],
    ['0', null],
    ['url=/no-delay', null],
  ])('meta refresh %p', (content, expected) => {
    expect(extract(doc(`<meta http-equiv="Refresh" content="${content}">`, ''), PAGE).metaRefresh).toBe(expected);
  });

  test('http-equiv content-type gives metaCharset; missing things are null', () => {
    expect(extract(doc('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', ''), PAGE).metaCharset).toBe('shift_jis');
    const r = extract('<p>hi', PAGE);
    expect([r.title, r.canonical, r.baseHref, r.metaRefresh, r.metaCharset, r.lang]).toEqual([null, null, null, null, null, null]);
  });

  test('title: entities decoded, whitespace collapsed, first wins, svg title ignored', () => {
    expect(extract(doc('<title>\n  Tom &amp; Jerry &mdash; &quot;Cats&quot; &lt;3 </title><title>second</title>', ''), PAGE).title)
      .toBe('Tom & Jerry \u2014 "Cats" <3');
    expect(extract('<body><svg><title>icon</title></svg><title>Real</title>', PAGE).title).toBe('Real');
    expect(extract(doc('<title>  </title>', ''), PAGE).title).toBeNull();
  });
});

describe('extract: text', () => {
  test.each([
    ['script/style/noscript/template/head excluded', doc('<title>T</title><style>p{}</style><script>var a=1</script>',
      'A<script>alert("x")</script>B<style>.x{}</style><noscript>enable js</noscript><template><p>tpl</p></template>C'), 'ABC'],
    ['whitespace collapsed', doc('', '  Hello,\n\t  <b>big</b>\n   world  '), 'Hello, big world'],
    ['blocks on separate lines', doc('', '<h1>Title</h1><p>One <i>two</i></p><div>Three<br>Four</div><ul><li>a</li><li>b</li></ul>'),
      'Title\nOne two\nThree\nFour\na\nb'],
    ['table cells spaced, rows on lines', doc('', '<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>'), 'a b\nc d'],
    ['entities decoded', doc('', '<p>caf&eacute; &amp; cr&#232;me&nbsp;br&ucirc;l&eacute;e</p>'), 'café & crème\u00a0brûlée'],
    ['malformed html', '<div><p>open <b>bold <i>both</p> after <span class=a b=c>attrs</div', 'open bold both\nafter attrs'],
    ['a stray <head> in the body hides nothing', '<body><p>a</p><head><p>b</p>', 'a\nb'],
    ['textarea and iframe fallback are not page text', doc('', 'x<textarea>typed</textarea><iframe src=/f>fallback</iframe>y'), 'xy'],
    ['head text without </head>', '<html><head><title>x</title><meta charset=utf-8><p>body text', 'body text'],
  ])('%s', (_name, html, expected) => {
    expect(extract(html, PAGE).text).toBe(expected);
  });

  test('maxTextBytes keeps the longest whole-character prefix of the text, whatever the cap', () => {
    // ASCII, two- and three-byte characters in runs of their own, so the cap falls everywhere:
    // before and after the collector starts counting bytes exactly (it counts 3 a character
    // until that bound could reach the cap).
    const runs = ['plain ascii words here', 'é'.repeat(7), '€uro €€ signs', 'ascii again and more of it', 'ñandú ü', 'end'];
    const page = doc('', runs.map((r) => `<p>${r}</p>`).join(''));
    const full = extract(page, PAGE).text;
    const total = Buffer.byteLength(full);
    expect(full.split('\n')).toEqual(runs);
    for (let cap = 1; cap <= total + 2; cap++) {
      const text = extract(page, PAGE, { maxTextBytes: cap }).text;
      let prefix = '';
      for (const ch of full) {
        if (Buffer.byteLength(prefix + ch) > cap) break;
        prefix += ch;
      }
      expect([cap, text]).toEqual([cap, prefix]);
    }
  });

  test('the text is the same however the tokenizer splits it (a tokenizer may cut text tokens where parse5 would not)', () => {
    // Empty comments cut a text into more tokens without changing what the page says; pieces of
    // every kind of whitespace, entities, NULs and wide characters, between block, cell, inline
    // and skipped elements, cut anywhere but inside an entity or a surrogate pair.
    const pieces = ['plain words', ' lead', 'trail ', '  two  spaces  ', '\ttab\t', 'line\nfeed', 'cr\r\nlf', '\f', ' ', '\n', 'x\0y', '&amp;', ' &lt; ', 'caf\u00e9', '\u4e2d\u6587', '\ud83d\ude00 emoji', '&nbsp;nb'];
    const tags = ['<p>', '</p>', '<div>', '</div>', '<b>', '</b>', '<td>', '</td>', '<br>', '<span class="s">', '</span>', '<script>x  y</script>', '<!-- c -->'];
    /** `piece` with an empty comment at `i` (0 to its length). */
    const cut = (piece: string, i: number): string => {
      if (piece.includes('&')) return piece;
      // Not between the halves of a surrogate pair.
      if (i > 0 && i < piece.length && /[\ud800-\udbff]/.test(piece[i - 1])) return piece;
      return piece.slice(0, i) + '<!---->' + piece.slice(i);
    };
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const whole: string[] = [];
      const split: string[] = [];
      const items = 4 + Math.floor(r() * 12);
      for (let n = 0; n < items; n++) {
        if (r() < 0.6) {
          const piece = pieces[Math.floor(r() * pieces.length)];
          whole.push(piece);
          split.push(cut(piece, Math.floor(r() * (piece.length + 1))));
        } else {
          const tag = tags[Math.floor(r() * tags.length)];
          whole.push(tag);
          split.push(tag);
        }
      }
      const a = doc('', whole.join(''));
      const b = doc('', split.join(''));
      expect([seed, extract(b, PAGE).text]).toEqual([seed, extract(a, PAGE).text]);
      const cap = 1 + Math.floor(r() * 40);
      expect([seed, cap, extract(b, PAGE, { maxTextBytes: cap }).text]).toEqual([seed, cap, extract(a, PAGE, { maxTextBytes: cap }).text]);
    }
  });

  test('maxTextBytes bounds the text without splitting a character', () => {
    const r = extract(doc('', '<p>' + 'é'.repeat(100) + '</p><p>more</p>'), PAGE, { maxTextBytes: 11 });
    expect(r.text).toBe('é'.repeat(5));
    expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(11);
  });
});

describe('extract: a 50 KiB page', () => {
  test('25 links and all the text', () => {
    const para = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore. ';
    let body = '';
    for (let i = 0; body.length < 50 * 1024; i++) {
      body += `<div class="c${i}"><p>${para.repeat(4)}</p>` + (i < 25 ? `<a href="/article/${i}">link ${i}</a>` : '') + '</div>\n';
    }
    const html = doc('<title>Big</title><script>' + 'var x = "<a href=/fake>";'.repeat(20) + '</script>', body);
    expect(html.length).toBeGreaterThanOrEqual(50 * 1024);
    const r = extract(html, PAGE);
    expect(r.links).toHaveLength(25);
    expect(r.links[24].url).toBe('https://example.com/article/24');
    expect(r.text.split('\n').filter((l) => l.startsWith('link ')).length).toBe(25);
    expect(r.text).not.toContain('fake');
  });
});

describe('charset sniffing', () => {
  const ascii = (s: string) => Buffer.from(s, 'latin1');
  test.each<[string, Buffer, string | null, string]>([
    ['BOM utf-8 beats header', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), ascii('<p>x')]), 'text/html; charset=iso-8859-1', 'utf-8'],
    ['BOM utf-16le', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<p>x', 'utf16le')]), null, 'utf-16le'],
    ['BOM utf-16be', Buffer.from([0xfe, 0xff, 0, 0x3c]), null, 'utf-16be'],
    ['header charset', ascii('<meta charset="shift_jis">'), 'text/html; charset="ISO-8859-2"', 'iso-8859-2'],
    ['header latin1 means windows-1252', ascii(''), 'text/html;charset=latin1', 'windows-1252'],
    ['header iso-8859-1 means windows-1252', ascii(''), 'text/html; charset=ISO-8859-1', 'windows-1252'],
    ['invalid header label falls through to meta', ascii('<meta charset=koi8-r>'), 'text/html; charset=bogus', 'koi8-r'],
    ['meta charset', ascii('<!doctype html><html><head><meta charset="Shift_JIS">'), 'text/html', 'shift_jis'],
    ['meta http-equiv', ascii('<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'), null, 'windows-1251'],
    ['meta in a comment ignored', ascii('<!-- <meta charset="koi8-r"> --><p>'), null, 'utf-8'],
    ['meta utf-16 means utf-8', ascii('<meta charset="utf-16">'), null, 'utf-8'],
    ['meta after 1024 bytes ignored', ascii(' '.repeat(1100) + '<meta charset="koi8-r">'), null, 'utf-8'],
    ['invalid label', ascii('<meta charset="no-such-charset">'), null, 'utf-8'],
    ['nothing', ascii('<p>plain'), null, 'utf-8'],
  ])('%s', (_name, body, header, expected) => {
    expect(sniffCharset(body, header)).toBe(expected);
  });

  test('decodeBody decodes and strips the BOM', () => {
    expect(decodeBody(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo', 'utf16le')]), null)).toEqual({ text: 'héllo', charset: 'utf-16le' });
    expect(decodeBody(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x80]), 'text/html; charset=iso-8859-1')).toEqual({ text: 'café€', charset: 'windows-1252' });
    expect(decodeBody(Buffer.from('<meta charset=utf-8>ünï', 'utf8'), null).text).toBe('<meta charset=utf-8>ünï');
  });
});
