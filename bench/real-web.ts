/**
 * The benchmark web of real pages (the default of `npm run bench`): every page of every host is
 * one of the corpus templates (bench/corpus.ts), chosen by the page, with
 *   - the template's own links neutralised: each href value (a, area, link, base) starts with
 *     `#` instead of its first character, so it stays the same length and resolves to the page
 *     itself (extract() drops fragment-only hrefs unresolved), and a meta refresh's content
 *     starts with `x`, which no refresh reads; the page size stays the template's. The markup
 *     inside noscript, iframe, noembed, noframes, xmp and plaintext too: kcrawl reads it as text
 *     (parse5 with scripting on), but a parser without that rule (cheerio's htmlparser2, the
 *     peer's) reads its tags, and lemonde-1's `<noscript><a href>` sent the peer to an ad server
 *     outside the benchmark web;
 *   - the benchmark web's 25 links (bench/synthetic-web.ts pageLinks) added right after <body>
 *     (linksAt);
 *   - its text made distinct: about half of its words, chosen per page, go through a per-page
 *     substitution that keeps each word's script and length in bytes: ASCII letters through a
 *     permutation of the alphabet (case kept, accented letters left), digits through one of the
 *     digits, and letters of other scripts (Cyrillic, Greek, Hebrew, Arabic, Thai, kana, Han,
 *     Hangul) to other letters of the same Unicode block through an affine map. So non-Latin
 *     text stays non-Latin, and the corpus README's caution holds: one template served many
 *     times keeps its word statistics, which SimHash rightly calls near-duplicates.
 *
 * Text means the template's text tokens outside script, style and the other raw-text elements,
 * found once per template with parse5's SAX parser (the HTML tokenizer the crawler uses);
 * entity and character references are left alone. Each page is then a copy of its template's
 * bytes with the substitution applied to the chosen words' bytes: no parsing per page
 * (`templateCost` in the server's stats, and the benchmark reports the server's CPU a page).
 */
import { SAXParser } from 'parse5-sax-parser';
import { extract } from '../lib/html/extract';
import type { CorpusPage } from './corpus';
import { hostAddress, hostName, pageLinks } from './synthetic-web';

/** Span kinds: a Latin word (its ASCII letters change), a run of digits, or a run of one script block. */
const LATIN = 0;
const DIGITS = 1;
/** Blocks whose letters map to letters of the same block, each the same UTF-8 length throughout. */
const BLOCKS: ReadonlyArray<{ name: string; from: number; to: number }> = [
  { name: 'Greek', from: 0x03b1, to: 0x03c9 },
  { name: 'Cyrillic', from: 0x0430, to: 0x044f },
  { name: 'Hebrew', from: 0x05d0, to: 0x05ea },
  { name: 'Arabic', from: 0x0621, to: 0x064a },
  { name: 'Thai', from: 0x0e01, to: 0x0e2e },
  { name: 'Hiragana', from: 0x3041, to: 0x3093 },
  { name: 'Katakana', from: 0x30a1, to: 0x30f3 },
  { name: 'Han', from: 0x4e00, to: 0x9fa5 },
  { name: 'Hangul', from: 0xac00, to: 0xd7a3 },
];
/** Raw-text elements: their content is code or not text. */
const RAW = new Set(['script', 'style', 'textarea', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'plaintext', 'template']);

export interface Template {
  name: string;
  /** The template with its links neutralised, as UTF-8. */
  bytes: Buffer;
  /** Where the benchmark's links go (linksAt). */
  insertAt: number;
  /** Spans as [byte offset, byte length, kind] triples (kind: LATIN, DIGITS or 2 + block index). */
  spans: Int32Array;
}

function blockOf(cp: number): number {
  for (let b = 0; b < BLOCKS.length; b++) if (cp >= BLOCKS[b].from && cp <= BLOCKS[b].to) return b;
  return -1;
}

const isAsciiLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** Letters of Latin-1 and Latin Extended-A/B: part of a Latin word, left as they are. */
const isLatinLetter = (c: number): boolean => isAsciiLetter(c) || (c >= 0xc0 && c <= 0x24f && c !== 0xd7 && c !== 0xf7);

/** The words of one text token's source `src` (string offsets from `base`), as [start, end, kind]. */
function wordsOf(src: string, base: number, out: number[]): void {
  let i = 0;
  while (i < src.length) {
    const c = src.charCodeAt(i);
    if (c === 38) {
      // A character reference (&amp; &#8217; &#x2019;): not text to change.
      const m = /^&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);?/.exec(src.slice(i, i + 40));
      i += m ? m[0].length : 1;
      continue;
    }
    let j = i;
    let kind = -1;
    if (isLatinLetter(c)) {
      while (j < src.length && isLatinLetter(src.charCodeAt(j))) j++;
      kind = LATIN;
    } else if (isDigit(c)) {
      while (j < src.length && isDigit(src.charCodeAt(j))) j++;
      kind = DIGITS;
    } else {
      const b = blockOf(c);
      if (b >= 0) {
        while (j < src.length && blockOf(src.charCodeAt(j)) === b) j++;
        kind = 2 + b;
      }
    }
    if (kind < 0) {
      i++;
      continue;
    }
    out.push(base + i, base + j, kind);
    i = j;
  }
}

interface Loc {
  startOffset: number;
  endOffset: number;
}

/** parse5's SAX parser run synchronously over a whole page (as extract() and the parser floor run it). */
class LocatingParser extends SAXParser {
  constructor() {
    super({ sourceCodeLocationInfo: true });
  }
  run(html: string): void {
    this.tokenizer.write(html, true);
  }
}

const PROBE = '<nav><ul><li><a href="/probe">probe</a></li></ul></nav>';

/**
 * Where a template takes the benchmark's links: right after its <body> start tag, where a site's
 * navigation usually is. Checked once per template: extract() must find a link put there and
 * read the rest of the page's text as it did without it. (Until the tokenizer fix of #35 it did
 * not on six templates, whose links went before </body>: extract() lost part of those pages.)
 */
function linksAt(name: string, html: string, bodyAt: number): number {
  if (bodyAt < 0) throw new Error(`${name}: no <body> start tag to put the benchmark's links after`);
  const url = 'http://bench.test/p/0';
  const plain = extract(html, url).text.length;
  const ex = extract(html.slice(0, bodyAt) + PROBE + html.slice(bodyAt), url);
  const found = ex.links.some((l) => l.url === 'http://bench.test/probe');
  if (!found || Math.abs(ex.text.length - plain - 'probe'.length) > 2) {
    throw new Error(`${name}: extract() does not read links put after <body> and the page's text as without them`);
  }
  return bodyAt;
}

/**
 * Raw-text elements whose content other parsers read as markup: parse5 with scripting on (as
 * kcrawl parses) reads noscript as text, HTML reads the others as text, but htmlparser2 (cheerio,
 * the peer's parser) treats only script, style, title and textarea as raw and reads tags here.
 */
const MARKUP_TO_OTHERS = new Set(['noscript', 'iframe', 'noembed', 'noframes', 'xmp', 'plaintext']);

type Edit = { at: number; ch: string };

/**
 * The edits that neutralise the links of html[from, to) (href values start with `#`, a meta
 * refresh's content with `x`), those inside MARKUP_TO_OTHERS elements included (their content
 * parsed again as markup); with `onText`/`onBody`, the text tokens outside raw-text elements and
 * the end of the <body> start tag too.
 */
function neutralise(html: string, from: number, to: number, edits: Edit[], onText?: (start: number, end: number) => void, onBody?: (at: number) => void): void {
  const parser = new LocatingParser();
  let raw: string | null = null;
  let rawFrom = -1;
  const inner: Array<[number, number]> = [];
  /** The first character of an attribute's value within its source (after `name=` and a quote), or -1 when empty. */
  const valueStart = (loc: Loc): number => {
    const src = html.slice(from + loc.startOffset, from + loc.endOffset);
    const m = /^[^=]*=\s*["']?/.exec(src);
    if (!m) return -1;
    const at = from + loc.startOffset + m[0].length;
    return at < from + loc.endOffset && html[at] !== '"' && html[at] !== "'" ? at : -1;
  };
  parser.on('startTag', (t) => {
    const attrs = (t.sourceCodeLocation as unknown as { attrs?: Record<string, Loc> } | undefined)?.attrs ?? {};
    if (attrs.href) {
      const at = valueStart(attrs.href);
      if (at >= 0) edits.push({ at, ch: '#' });
    }
    const equiv = t.attrs.find((a) => a.name === 'http-equiv')?.value.trim().toLowerCase();
    if (t.tagName === 'meta' && equiv === 'refresh' && attrs.content) {
      const at = valueStart(attrs.content);
      if (at >= 0) edits.push({ at, ch: 'x' });
    }
    if (RAW.has(t.tagName) && !t.selfClosing) {
      raw = t.tagName;
      rawFrom = t.sourceCodeLocation ? from + t.sourceCodeLocation.endOffset : -1;
    }
    if (t.tagName === 'body' && t.sourceCodeLocation) onBody?.(from + t.sourceCodeLocation.endOffset);
  });
  parser.on('endTag', (t) => {
    if (t.tagName !== raw) return;
    if (MARKUP_TO_OTHERS.has(raw) && rawFrom >= 0 && t.sourceCodeLocation) inner.push([rawFrom, from + t.sourceCodeLocation.startOffset]);
    raw = null;
  });
  parser.on('text', (t) => {
    const loc = t.sourceCodeLocation;
    if (raw !== null || !loc) return;
    onText?.(from + loc.startOffset, from + loc.endOffset);
  });
  parser.run(html.slice(from, to));
  // An element left open runs to the end (plaintext always does).
  if (raw !== null && MARKUP_TO_OTHERS.has(raw) && rawFrom >= 0) inner.push([rawFrom, to]);
  for (const [a, b] of inner) neutralise(html, a, b, edits);
}

/** A template made ready: links neutralised, text spans found (once, at the server's start). */
export function prepareTemplate(page: CorpusPage): Template {
  const html = page.html;
  const edits: Edit[] = [];
  const words: number[] = [];
  /** The end of the <body> start tag. */
  let bodyAt = -1;
  neutralise(html, 0, html.length, edits, (start, end) => wordsOf(html.slice(start, end), start, words), (at) => {
    if (bodyAt < 0) bodyAt = at;
  });
  let neutral = html;
  if (edits.length) {
    const chars = html.split('');
    for (const e of edits) chars[e.at] = e.ch;
    neutral = chars.join('');
  }
  // String offsets to byte offsets, in one walk (the offsets only grow).
  const spans = new Int32Array(words.length);
  let bytePos = 0;
  let strPos = 0;
  for (let k = 0; k < words.length; k += 3) {
    const start = words[k];
    const end = words[k + 1];
    bytePos += Buffer.byteLength(neutral.slice(strPos, start));
    const len = Buffer.byteLength(neutral.slice(start, end));
    spans[k] = bytePos;
    spans[k + 1] = len;
    spans[k + 2] = words[k + 2];
    bytePos += len;
    strPos = end;
  }
  const bytes = Buffer.from(neutral, 'utf8');
  const insertAt = Buffer.byteLength(neutral.slice(0, linksAt(page.name, neutral, bodyAt)));
  return { name: page.name, bytes, insertAt, spans };
}

/** mulberry32: the per-page choices, from the page's seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Page n of host h: its template's index among `count`, and its seed. */
export function pageTemplate(h: number, n: number, count: number): { index: number; seed: number } {
  const seed = mix(mix(h + 0x9e3779b9) ^ Math.imul(n + 1, 0x85ebca6b));
  return { index: mix(seed ^ 0x27d4eb2f) % count, seed };
}

/** Per-page maps: a permutation of a-z, one of 0-9, and for each block a multiplier coprime to its size and an offset. */
interface PageMaps {
  letters: Uint8Array;
  digits: Uint8Array;
  mul: Int32Array;
  add: Int32Array;
}

function shuffled(n: number, next: () => number): Uint8Array {
  const a = Uint8Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = next() % (i + 1);
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

function pageMaps(seed: number): PageMaps {
  const next = rng(seed);
  const mul = new Int32Array(BLOCKS.length);
  const add = new Int32Array(BLOCKS.length);
  BLOCKS.forEach((b, i) => {
    const size = b.to - b.from + 1;
    let m = 1 + (next() % (size - 1));
    while (gcd(m, size) !== 1) m = (m % (size - 1)) + 1;
    mul[i] = m;
    add[i] = next() % size;
  });
  return { letters: shuffled(26, next), digits: shuffled(10, next), mul, add };
}

/** Rewrites the code points of one block in buf[from, to) through the block's affine map (same UTF-8 length). */
function mapBlock(buf: Buffer, from: number, to: number, block: number, maps: PageMaps): void {
  const { from: base, to: top } = BLOCKS[block];
  const size = top - base + 1;
  const m = maps.mul[block];
  const a = maps.add[block];
  for (let i = from; i < to; ) {
    const b0 = buf[i];
    const three = b0 >= 0xe0;
    const cp = three ? ((b0 & 0x0f) << 12) | ((buf[i + 1] & 0x3f) << 6) | (buf[i + 2] & 0x3f) : ((b0 & 0x1f) << 6) | (buf[i + 1] & 0x3f);
    const out = base + ((((cp - base) * m) % size) + a) % size;
    if (three) {
      buf[i] = 0xe0 | (out >> 12);
      buf[i + 1] = 0x80 | ((out >> 6) & 0x3f);
      buf[i + 2] = 0x80 | (out & 0x3f);
      i += 3;
    } else {
      buf[i] = 0xc0 | (out >> 6);
      buf[i + 1] = 0x80 | (out & 0x3f);
      i += 2;
    }
  }
}

/**
 * Page n of host h: its template with the benchmark's links (to other hosts by address, or by
 * name when the page was asked for by name: the peer) and its own half of the words substituted.
 */
export function realPage(templates: readonly Template[], h: number, n: number, hosts: number, port: number, byName = false): Buffer {
  const { index, seed } = pageTemplate(h, n, templates.length);
  const t = templates[index];
  const links = pageLinks(h, n, hosts)
    .map(([th, tn], i) => `<li><a href="${th === h ? '' : `http://${byName ? hostName(th) : hostAddress(th)}:${port}`}/p/${tn}">link ${i}</a></li>`)
    .join('');
  const nav = Buffer.from(`<nav><ul>${links}</ul></nav>`);
  const page = Buffer.allocUnsafe(t.bytes.length + nav.length);
  t.bytes.copy(page, 0, 0, t.insertAt);
  nav.copy(page, t.insertAt);
  t.bytes.copy(page, t.insertAt + nav.length, t.insertAt);
  const maps = pageMaps(seed);
  const choose = rng(seed ^ 0x5bd1e995);
  const spans = t.spans;
  for (let k = 0; k < spans.length; k += 3) {
    // About half of the words, a different half on every page.
    if ((choose() & 1) === 0) continue;
    const from = spans[k] + (spans[k] >= t.insertAt ? nav.length : 0);
    const to = from + spans[k + 1];
    const kind = spans[k + 2];
    if (kind === LATIN) {
      for (let i = from; i < to; i++) {
        const c = page[i];
        if (c >= 97 && c <= 122) page[i] = 97 + maps.letters[c - 97];
        else if (c >= 65 && c <= 90) page[i] = 65 + maps.letters[c - 65];
      }
    } else if (kind === DIGITS) {
      for (let i = from; i < to; i++) page[i] = 48 + maps.digits[page[i] - 48];
    } else {
      mapBlock(page, from, to, kind - 2, maps);
    }
  }
  return page;
}

/** A page of host h made from template `index` (its first such page number), with that number. */
export function pageOfTemplate(templates: readonly Template[], index: number, h: number, hosts: number, port: number): { n: number; page: Buffer } {
  for (let n = 0; ; n++) if (pageTemplate(h, n, templates.length).index === index) return { n, page: realPage(templates, h, n, hosts, port) };
}
