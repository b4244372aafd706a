import { Tokenizer } from 'htmlparser2';
import { decodeAttribute, decodeRcdata } from '../../lib/html/html-rules';
import { extract } from '../../lib/html/extract';

type Callbacks = ConstructorParameters<typeof Tokenizer>[1];
const noop = (): void => undefined;
/** Every callback a no-op but those given. */
const callbacks = (some: Partial<Callbacks>): Callbacks => ({
  ontext: noop, ontextentity: noop, onattribdata: noop, onattribentity: noop, onattribend: noop, onattribname: noop, oncdata: noop,
  onclosetag: noop, oncomment: noop, ondeclaration: noop, onend: noop, onopentagend: noop, onopentagname: noop,
  onprocessinginstruction: noop, onselfclosingtag: noop, ...some,
});

/** What htmlparser2's tokenizer, decoding references itself, makes of one attribute value written with `quote`. */
function tokenizerAttribute(raw: string, quote: '"' | "'" | ''): string {
  let out = '';
  const src = `<a v=${quote}${raw}${quote}>`;
  const t = new Tokenizer({ decodeEntities: true }, callbacks({
    onattribdata: (a, b) => { out += src.slice(a, b); },
    onattribentity: (cp) => { out += String.fromCodePoint(cp); },
  }));
  t.write(src);
  t.end();
  return out;
}

/** The same for text between tags. */
function tokenizerText(raw: string): string {
  let out = '';
  const src = `<p>${raw}</p>`;
  const t = new Tokenizer({ decodeEntities: true }, callbacks({
    ontext: (a, b) => { out += src.slice(a, b); },
    ontextentity: (cp) => { out += String.fromCodePoint(cp); },
  }));
  t.write(src);
  t.end();
  return out;
}

const VALUES = [
  'a&amp;b', '?x=1&amp;y=2', '?x=1&y=2', '&amp', '&amp=', '&ampx', '&amp;x', '&notin;', '&notit;', '&not', '&noti', '&#34;', '&#x22;', '&#0;',
  '&#x80;', '&#128;', '&#xD800;', '&#1114112;', '&#', '&#x', '&#x;', '&;', '&', '&&amp;&', '&copy2', '&copy ', '&lt;&gt;', '&LT', '&AMP;',
  '&Aacute', '&aacute;é', 'x&#10;y', '&#13;', 'a"&amp"b', "&amp'", '&amp"&lt', '&quot;"&quot', '&#x1F600;', '&zwj;&nbsp;',
];

describe('character references decoded outside the tokenizer', () => {
  it.each(VALUES)('attribute value %j: as the decoding tokenizer reads it, in every quoting it can be written in', (raw) => {
    if (!raw.includes('"')) expect(decodeAttribute(raw)).toBe(tokenizerAttribute(raw, '"'));
    if (!raw.includes("'")) expect(decodeAttribute(raw)).toBe(tokenizerAttribute(raw, "'"));
  });

  it.each(VALUES.filter((v) => !v.includes('<')))('text %j: as the decoding tokenizer reads it', (raw) => {
    expect(decodeRcdata(raw)).toBe(tokenizerText(raw));
  });

  it('one decode leaves nothing behind for the next (each decoder reuses its tokenizer): every value read after every other gives what it gives alone', () => {
    const textValues = VALUES.filter((v) => !v.includes('<'));
    for (const before of VALUES) {
      for (const raw of VALUES) {
        decodeAttribute(before);
        expect([before, decodeAttribute(raw)]).toEqual([before, tokenizerAttribute(raw, raw.includes('"') ? "'" : '"')]);
      }
    }
    for (const before of textValues) {
      for (const raw of textValues) {
        decodeRcdata(before);
        expect([before, decodeRcdata(raw)]).toEqual([before, tokenizerText(raw)]);
      }
    }
  });

  it('attribute mode keeps `&amp=` and `&ampx` as written, text mode decodes them', () => {
    expect(decodeAttribute('&amp=1&ampx&amp;')).toBe('&amp=1&ampx&');
    expect(decodeRcdata('&amp=1&ampx&amp;')).toBe('&=1&x&');
  });

  it('extract() decodes references in text, titles and link targets, and not in CDATA of SVG', () => {
    const ex = extract(
      '<title>A &amp; B</title><p>caf&eacute; &lt;b&gt; &copy2024</p><a href="/q?a=1&amp;b=2&copy=3">x</a>' +
        '<svg><![CDATA[&amp; raw]]></svg>',
      'https://example.com/',
    );
    expect(ex.title).toBe('A & B');
    expect(ex.text).toContain('café <b> ©2024');
    expect(ex.text).toContain('&amp; raw');
    expect(ex.links.map((l) => l.url)).toEqual(['https://example.com/q?a=1&b=2&copy=3']);
  });
});
