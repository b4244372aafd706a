/**
 * extract() over a UTF-8 page's bytes (lib/html/charset.ts scanForm, tag-scanner.ts reading them
 * in Latin-1 pieces) gives what it gives over the page decoded whole (decodeBody): the same
 * title, text, links, language hints and robots directives, on real pages, on hand-made edge
 * cases (non-ASCII names, values, raw text, CDATA, a BOM, invalid and cut UTF-8 next to markup)
 * and on random bodies mixing HTML's syntax with UTF-8 and damaged bytes, in pieces of any size
 * (a token, a UTF-8 sequence or a raw text's end tag cut between two pieces).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BYTES_SCAN_MAX } from '../../lib/html/charset';
import { decodeBody, extract, extractWith, scanForm, type Extracted } from '../../lib/html/extract';
import { scanTags } from '../../lib/html/tag-scanner';

const URL0 = 'http://127.0.0.1:8080/p/1';
const whole = (body: Buffer, ct: string | null = null): unknown => extract(decodeBody(body, ct).text, URL0, { productToken: 'kcrawl' });
/** extract() as parse runs it: a UTF-8 page's bytes read in pieces of `chunk` bytes (tag-scanner.ts SCAN_CHUNK unless given). */
const image = (body: Buffer, ct: string | null = null, chunk?: number): Extracted => {
  const f = scanForm(body, ct);
  return chunk === undefined ? extract(f.html, URL0, { productToken: 'kcrawl' }) : extractWith((h, s, w, a) => scanTags(h, s, w, a, chunk), f.html, URL0, { productToken: 'kcrawl' });
};

describe('extract over the bytes of a UTF-8 page', () => {
  it('is used for UTF-8 pages only; other charsets are decoded whole', () => {
    const body = Buffer.from('<p>caf\u00e9 \u2019</p>');
    expect(scanForm(body, 'text/html; charset=utf-8').html).toBe(body);
    const latin = scanForm(Buffer.from('<p>caf\xe9</p>', 'latin1'), 'text/html; charset=iso-8859-1');
    expect(latin.html).toBe('<p>caf\u00e9</p>');
    // A page past BYTES_SCAN_MAX is decoded whole, on the heap, where a parse worker's heap limit counts it.
    const big = scanForm(Buffer.from('<p>\u00e9' + 'x'.repeat(BYTES_SCAN_MAX) + '</p>'), null);
    expect(typeof big.html === 'string' && big.html.startsWith('<p>\u00e9x')).toBe(true);
    expect(Buffer.isBuffer(scanForm(Buffer.alloc(BYTES_SCAN_MAX, 0x61), null).html)).toBe(true);
    const bom = scanForm(Buffer.from('\ufeff<p>x</p>'), null);
    expect(bom.html).toEqual(Buffer.from('<p>x</p>'));
  });

  it('decodes a page it does not scan as UTF-8 bytes as the charset it found, as decodeBody does', () => {
    const cases: [Buffer, string | null, string][] = [
      // Declared by <meta> only: the C1 range is windows-1252's (the euro sign, curly quotes).
      [Buffer.concat([Buffer.from('<meta charset="latin1"><p>'), Buffer.from([0x80, 0x93, 0xe9, 0x94]), Buffer.from('</p>')]), null, 'windows-1252'],
      // By the header, over a <meta> that says otherwise.
      [Buffer.concat([Buffer.from('<meta charset="utf-8"><p>'), Buffer.from([0x82, 0xa0, 0x93, 0xfa]), Buffer.from('</p>')]), 'text/html; charset=Shift_JIS', 'shift_jis'],
      // By a BOM, over the header.
      [Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<p>\u00e9\u4e2d</p>', 'utf16le')]), 'text/html; charset=iso-8859-2', 'utf-16le'],
      // UTF-8 past BYTES_SCAN_MAX, with a <meta> past the prescan's 1024 bytes that must not count.
      [Buffer.from('<p>\u2019' + 'x'.repeat(BYTES_SCAN_MAX) + '<meta charset=latin1></p>'), null, 'utf-8'],
    ];
    for (const [body, ct, charset] of cases) {
      const f = scanForm(body, ct);
      expect(f.charset).toBe(charset);
      expect(typeof f.html).toBe('string');
      expect({ charset, html: f.html }).toEqual({ charset, html: decodeBody(body, ct).text });
    }
    expect(scanForm(cases[0][0], null).html).toBe('<meta charset="latin1"><p>\u20ac\u201c\u00e9\u201d</p>');
    expect(scanForm(cases[1][0], cases[1][1]).html).toBe('<meta charset="utf-8"><p>\u3042\u65e5</p>');
  });

  it('reads the vendored real pages as decoding them whole does', () => {
    const dir = join(__dirname, '..', 'fixtures', 'realpages');
    const names = readdirSync(dir).filter((f) => f.endsWith('.html'));
    expect(names.length).toBeGreaterThanOrEqual(5);
    for (const name of names) {
      const body = readFileSync(join(dir, name));
      const ex = whole(body);
      expect({ name, ex: image(body) }).toEqual({ name, ex });
      for (const chunk of [1, 7, 1000]) expect({ name, chunk, ex: image(body, null, chunk) }).toEqual({ name, chunk, ex });
    }
  });

  it('decodes names, values, text, raw text and CDATA as the whole page would be', () => {
    const cases = [
      '<html lang="d\u00e9"><head><title>T\u00eftre \u2014 \u{1F600}</title><meta name="description" content="\u00e9t\u00e9"></head><body><p>Caf\u00e9 &amp; cr\u00e8me &eacute; \u2019</p></body></html>',
      '<p data-\u00e9="1" title=\u00e9t\u00e9>x</p><a href="/\u00e9t\u00e9?q=\u4e2d\u6587">\u4e2d\u6587\u94fe\u63a5</a><a href=/caf\u00e9>u</a>',
      '<\u00e9l\u00e9ment>text in an unknown \u00e9l\u00e9ment</\u00e9l\u00e9ment><p>after</p>',
      '<textarea>\n\u00e9crit</textarea><pre>\r\n\u00e9 pre</pre><title>\u00e9</title><xmp>\u00e9 <b>x</b></xmp>',
      '<svg><title>\u00e9</title><![CDATA[\u00e9 cdata \u2019]]><text>\u00e9\0\0x</text></svg><math><mi>\u00e9</mi></math><p>\u00e9</p>',
      '<script>var s = "\u00e9</scr" + "ipt>";</script><p>\u00e9 after script</p><style>p{content:"\u00e9"}</style>',
      '<!-- \u00e9 --><p>\u00e9</p><!\u00e9><?\u00e9?><p>\u00e9</p></ \u00e9><p>x</p>',
      '<p>\u00e9\u00e9\u00e9', // ends in text
      '<a href="\u00e9', // ends in a value
      '<plaintext>\u00e9 <p> \u2019',
    ];
    for (const html of cases) {
      const ex = whole(Buffer.from(html));
      for (const chunk of [undefined, 1, 2, 3, 5, 8]) expect({ html, chunk, ex: image(Buffer.from(html), null, chunk) }).toEqual({ html, chunk, ex });
    }
  });

  it('gives U+FFFD for invalid and cut UTF-8 where decoding the whole page does', () => {
    const pieces = [Buffer.from('<p>'), Buffer.from([0xc3]), Buffer.from('</p><p>'), Buffer.from([0xe2, 0x82]), Buffer.from('<b>'),
      Buffer.from([0xa9, 0xff, 0xed, 0xa0, 0x80]), Buffer.from('</b><a href="'), Buffer.from([0xf0, 0x9f]), Buffer.from('">x</a><p>'), Buffer.from([0xc0, 0xaf, 0xe0, 0x80])];
    const body = Buffer.concat(pieces);
    for (const chunk of [undefined, 1, 2, 3, 4]) expect(image(body, null, chunk)).toEqual(whole(body));
  });

  it('agrees with decoding whole on random bodies of markup, UTF-8 and damaged bytes', () => {
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const atoms = ['<p>', '</p>', '<a href="', '">', "<a href='", "'>", '<a href=', ' ', '>', '<', '</', '&amp;', '&eacute;', '&#x2019;', '&', '<script>', '</script>',
      '<style>', '</style>', '<title>', '</title>', '<svg>', '</svg>', '<![CDATA[', ']]>', '<!--', '-->', '<pre>', '\n', '\r\n', '\0', '=', '"', "'", '/', '<br/>',
      '<meta name=kcrawl content=noindex>', '<base href="/b/">', '<textarea>', '</textarea>', 'text', '<html lang=\u00e9>',
      '<!-->', '<!-- <script>', '</script >', '</SCRIPT/', '</ >', '</>', '</  ', '--!>', '<!>', '<?x>', '</3', '<noscript>', '</noscript>', '<xmp>', '</xmp>'];
    const utf8 = ['\u00e9', '\u2019', '\u4e2d', '\u{1F600}', '\u00a0', '\u212a'].map((s) => Buffer.from(s));
    const damaged = [[0xc3], [0xe2, 0x82], [0xff], [0x80], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98], [0xc0, 0xaf]].map((b) => Buffer.from(b));
    for (let i = 0; i < 3000; i++) {
      const parts: Buffer[] = [];
      const n = 1 + rnd(40);
      for (let k = 0; k < n; k++) {
        const r = rnd(10);
        parts.push(r < 6 ? Buffer.from(atoms[rnd(atoms.length)]) : r < 9 ? utf8[rnd(utf8.length)] : damaged[rnd(damaged.length)]);
      }
      const body = Buffer.concat(parts);
      if (body[0] === 0xef) continue;
      const ex = whole(body);
      expect({ i, ex: image(body) }).toEqual({ i, ex });
      const chunk = 1 + rnd(12);
      expect({ i, chunk, ex: image(body, null, chunk) }).toEqual({ i, chunk, ex });
    }
  });
});
