/**
 * A page's tags and text in document order, from htmlparser2's tokenizer (fb55's, the one under
 * cheerio), read the way parse5's SAX parser reads them: the narrow module behind which extract()
 * gets its tokens.
 *
 * Why this tokenizer: over the 66 pages of the real-page corpus a bare htmlparser2 pass cost
 * 1.6-2.1 ms a page, a bare parse5 SAX pass 6.9-7.8 ms and extract() on parse5 (with a tokenizer
 * subclass that patched parse5 internals) 4.7-5.0 ms (#35; bench/parser-floor.ts keeps measuring
 * both floors). We use its Tokenizer, not its Parser: the Parser closes elements it thinks are
 * implied and drops stray end tags, where parse5's tokenizer (and so extract() until now) reports
 * tags as written. Tokens carry offsets into the page; a tag's name and the attributes of the few
 * elements extract() reads are the only strings made for it.
 *
 * Where the two tokenizers differ, this module makes htmlparser2's agree with parse5's SAX
 * parser (its parser-feedback simulator included), so text, links and therefore SimHash values
 * are those of the parse5 path (test/unit/extract-parse5-parity.test.ts, bench/extract-parity.ts):
 * - tag and attribute names are ASCII-lowercased; a repeated attribute keeps its first value;
 * - attribute values: CR LF and lone CR become LF, NUL becomes U+FFFD; `xlink:href` in SVG or
 *   MathML is `href` (parse5 adjusts foreign attributes);
 * - raw text (outside SVG and MathML) ends where the HTML tokenizer ends it: script with its
 *   escaped and double-escaped states (`<!-- <script></script> -->` inside a script does not
 *   end it; htmlparser2 stops at the first `</script`), style, xmp, iframe, noembed, noframes
 *   and noscript at their end tag, plaintext at the end of the page; title and textarea written
 *   self-closing (`<title/>`, whose `/` HTML ignores) at their end tag. This module finds that
 *   end itself (regular expressions, native code) and starts a fresh htmlparser2 tokenizer on
 *   the rest of the page there, so htmlparser2 never reads raw text as markup, and a page's
 *   scripts are skipped at the speed of a string search rather than character by character;
 * - an end tag's name stops at `/` (`</br/>` is `br`);
 * - NUL in raw text, in title/textarea and in SVG or MathML text becomes U+FFFD;
 * - CDATA sections are text inside SVG or MathML and a comment elsewhere.
 * The differences kept, on input no real page of the corpus has, are listed in docs/performance.md
 * ("HTML tokenizer") with a test each.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import { EXITS_FOREIGN, NS_ATTR_TAGS, Ns, RAWTEXT, RCDATA, SPECIAL, decodeAttribute, decodeRcdata, integrationPoint, rawTextEnd, scriptEnd, type PageChars } from './html-rules';

import type { Attr } from './html-rules';

export type { Attr };
export interface StartTag { tagName: string; attrs: Attr[]; selfClosing: boolean }

/** What a scan reports to; `done` is read after every event and ends the scan once true. */
export interface TagSink {
  start(tag: StartTag): void;
  end(tagName: string): void;
  /** The text between two tags (comments dropped), entities decoded, in one call. */
  text(text: string): void;
  readonly done: boolean;
  /**
   * False while a text would be dropped (extract(): inside script, style, <head>, ...): the
   * scanner then does not build it (no slice, no reference decoding, no NUL scan of a script).
   * Read between tags only, so it may change only in start() and end(). Absent: always true.
   */
  readonly wantsText?: boolean;
}

const NO_ATTRS: Attr[] = [];
/** A byte of UTF-8 past ASCII, as a character of a page's bytes read as Latin-1 (Utf8Page). */
const NON_ASCII = /[\u0080-\u00ff]/;
const HAS_UPPER_OR_NON_ASCII = /[A-Z\u0080-\uffff]/;
const ASCII_UPPER = /[A-Z]+/g;

/** ASCII lowercase, as HTML lowercases names (toLowerCase alone would make the Kelvin sign a `k`). */
function asciiLower(s: string): string {
  if (!HAS_UPPER_OR_NON_ASCII.test(s)) return s;
  return s.replace(ASCII_UPPER, (m) => m.toLowerCase());
}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;
const fffd = (s: string): string => (s.includes('\0') ? s.replace(/\0/g, '\uFFFD') : s);

function attrValue(s: string): string {
  if (s.includes('\r')) s = s.replace(/\r\n?/g, '\n');
  return fffd(s);
}

/**
 * Bytes of a UTF-8 page the tokenizer is given at a time, as Latin-1 strings (one character a
 * byte). V8 puts a string past 128 KiB in its large-object space, mapped fresh for each one and
 * unmapped when it dies (about 65 page faults a 288 KiB page); pieces stay in the young
 * generation, whose memory is reused, and a small one is read by the tokenizer while it is still
 * in the processor's cache. scanForm and extract() over 768 pages of the benchmark's web (288 KiB
 * on average), one thread, CPU a page: the page as one Latin-1 string 2.06-2.31 ms, in pieces of
 * 4 KiB 1.74-1.77, 8 KiB 1.78, 16 KiB 1.78-1.84, 64 KiB 2.03, 128 KiB 2.41 (docs/performance.md,
 * "The page as its bytes").
 */
export const SCAN_CHUNK = 8 * 1024;

/** The page as the scanner reads it (PageChars, by index), what it keeps of it, and the pieces its tokenizers read. */
interface Page extends PageChars {
  /** The characters [from, to) as text: decoded, for a page scanned as its UTF-8 bytes. */
  str(from: number, to: number): string;
  /** The index of ASCII `needle` in [from, to), or -1. */
  indexIn(needle: string, from: number, to: number): number;
  /** Gives `t` the page from `from` to its end, in pieces, until `paused()`. */
  feed(t: Tokenizer, from: number, paused: () => boolean): void;
}

/** A page decoded to a string: read whole. */
class StringPage implements Page {
  constructor(private readonly s: string) {}
  get length(): number { return this.s.length; }
  code(i: number): number { return this.s.charCodeAt(i); }
  indexOf(needle: string, from: number): number { return this.s.indexOf(needle, from); }
  indexIn(needle: string, from: number, to: number): number {
    const i = this.s.slice(from, to).indexOf(needle);
    return i < 0 ? -1 : from + i;
  }
  str(from: number, to: number): string { return this.s.slice(from, to); }
  feed(t: Tokenizer, from: number): void { t.write(from === 0 ? this.s : this.s.slice(from)); }
}

/**
 * A UTF-8 page as its bytes: the tokenizers read it in Latin-1 pieces of `chunk` bytes, one
 * character a byte. HTML's syntax is all ASCII and no byte of a UTF-8 sequence is ASCII, so the
 * tokens fall where they fall in the decoded page, and every slice the scanner keeps begins and
 * ends next to an ASCII character or at an end of the page: the slices decoded one by one are
 * what decoding the whole page would have given for them, U+FFFD for invalid bytes included.
 */
class Utf8Page implements Page {
  /** The piece the tokenizer is reading, from byte `curAt`: slices and searches within it stay in JavaScript. */
  private cur = '';
  private curAt = 0;

  constructor(private readonly b: Buffer, private readonly chunk: number) {}
  get length(): number { return this.b.length; }
  code(i: number): number { return this.b[i]; }

  indexOf(needle: string, from: number): number {
    const at = this.curAt;
    const end = at + this.cur.length;
    if (from >= at && from < end) {
      const i = this.cur.indexOf(needle, from - at);
      if (i >= 0) return at + i;
      from = Math.max(from, end - needle.length + 1); // one that the piece's end cuts
    }
    return from >= this.b.length ? -1 : this.b.indexOf(needle, from, 'latin1');
  }

  indexIn(needle: string, from: number, to: number): number {
    const i = this.b.subarray(from, to).indexOf(needle, 0, 'latin1');
    return i < 0 ? -1 : from + i;
  }

  /** The bytes [from, to) as Latin-1 (a slice of the piece when it holds them), decoded as UTF-8 where any is past ASCII. */
  str(from: number, to: number): string {
    const at = this.curAt;
    const s = from >= at && to <= at + this.cur.length ? this.cur.slice(from - at, to - at) : this.b.toString('latin1', from, to);
    return NON_ASCII.test(s) ? this.b.toString('utf8', from, to) : s;
  }

  feed(t: Tokenizer, from: number, paused: () => boolean): void {
    const b = this.b;
    for (let at = from; at < b.length && !paused(); at += this.chunk) {
      this.curAt = at;
      this.cur = b.toString('latin1', at, Math.min(at + this.chunk, b.length));
      t.write(this.cur);
    }
  }
}

class Scanner implements TokenizerCallbacks {
  private tokenizer!: Tokenizer;
  /** Where in the page the current tokenizer started: its offsets are relative to it. */
  private base = 0;
  /** Where the next tokenizer starts (after raw text this module skipped), or -1. */
  private restartAt = -1;
  private stopped = false;
  // Text since the last tag: `pending` plus the slice [runStart, runEnd) not yet copied out.
  private pending = '';
  private runStart = -1;
  private runEnd = -1;
  /**
   * After <pre>, <listing> or <textarea>: the first line feed of the next text is dropped if
   * that text starts with whitespace. Like parse5's simulator, tags in between do not matter and
   * leading whitespace other than a line feed leaves the drop pending.
   */
  private skipNewline = false;
  /** The text being reported is raw text (RAWTEXT, RCDATA, script data): its NULs are U+FFFD. */
  private inRaw = false;
  /** The namespace stack of parse5's feedback simulator (innermost last). */
  private readonly ns: Ns[] = [Ns.Html];
  /** In SVG or MathML content (not an HTML integration point in it). */
  private foreign = false;
  // The start tag being read.
  private tagName = '';
  private attrs: Attr[] | null = null;
  private attrName = '';
  private attrVal = '';
  // The value's characters [valStart, valEnd) not yet in attrVal: a tokenizer given the page in
  // pieces reports a value cut by a piece's end in two parts, which are decoded together.
  private valStart = 0;
  private valEnd = -1;
  /** The attribute being read is left out (not in attrNames). */
  private attrSkipped = false;

  private readonly paused = (): boolean => this.stopped || this.restartAt >= 0;

  constructor(
    private readonly html: Page,
    private readonly sink: TagSink,
    private readonly wantAttrs: ReadonlySet<string>,
    private readonly attrNames: ReadonlySet<string> | null,
  ) {}

  /** The page's characters [from, to), as text. */
  private str(from: number, to: number): string {
    return this.html.str(from, to);
  }

  /** Will the sink keep a text reported now? Without a pending first-line-feed drop, which a text must see. */
  private textDropped(): boolean {
    return this.sink.wantsText === false && !this.skipNewline;
  }

  run(): void {
    let from = 0;
    for (;;) {
      this.base = from;
      this.restartAt = -1;
      // Character references are decoded here, not by the tokenizer: without them to look for it
      // skips text and attribute values to their end with a string search instead of reading
      // each character through its state machine (a bare pass over the corpus pages 1.0 -> 0.58 ms).
      // Only text and values holding `&` are decoded, by the same tokenizer's decoder (html-rules.ts).
      this.tokenizer = new Tokenizer({ decodeEntities: false }, this);
      this.html.feed(this.tokenizer, from, this.paused);
      this.tokenizer.end(); // does nothing once paused
      if (this.stopped || this.restartAt < 0) return;
      this.take(); // its offsets are the old tokenizer's
      from = this.restartAt;
    }
  }

  private stop(): void {
    this.stopped = true;
    this.tokenizer.pause();
  }

  private check(): void {
    if (this.sink.done && !this.stopped) this.stop();
  }

  private take(): void {
    if (this.runStart < 0) return;
    // One run of text as written (no tag, comment or CDATA in it): its references decoded as the
    // tokenizer decodes text (decodeRcdata's mode is the text's: legacy references decoded).
    this.pending += decodeRcdata(this.str(this.base + this.runStart, this.base + this.runEnd));
    this.runStart = this.runEnd = -1;
  }

  private flushText(): void {
    if (this.textDropped()) {
      this.pending = '';
      this.runStart = this.runEnd = -1;
      return;
    }
    this.take();
    if (this.pending === '') return;
    if (this.skipNewline) {
      this.dropFirstNewline();
      if (this.pending === '') return;
    }
    // parse5 makes each NUL of raw text U+FFFD, and each run of NULs of SVG/MathML text one U+FFFD.
    const text = this.inRaw ? fffd(this.pending) : this.foreign && this.pending.includes('\0') ? this.pending.replace(/\0+/g, '\uFFFD') : this.pending;
    this.pending = '';
    this.sink.text(text);
    this.check();
  }

  private dropFirstNewline(): void {
    const t = this.pending;
    let ws = 0;
    while (ws < t.length && isSpace(t.charCodeAt(ws))) ws++;
    const c = t.charCodeAt(0);
    if (c === 0x0a || c === 0x0d) {
      const drop = c === 0x0d && t.charCodeAt(1) === 0x0a ? 2 : 1; // CR LF and CR are one LF to parse5
      this.pending = t.slice(drop);
      this.skipNewline = false;
    } else if (ws < t.length) this.skipNewline = false;
  }

  ontext(start: number, end: number): void {
    if (start < 0) return; // htmlparser2's trailing data after an end tag cut by the end of the page
    const at = this.base + start;
    // A declaration, processing instruction or `</3` cut by the end of the page: htmlparser2 gives
    // its content as text, HTML a bogus comment.
    let b = at - 1;
    let before = this.html.code(b);
    if (isSpace(before)) { // `</  3`: htmlparser2 skips the spaces first
      while (isSpace(before)) before = this.html.code(--b);
      if (before !== 0x2f) before = 0;
    }
    if ((before === 0x21 || before === 0x3f || before === 0x2f) && this.html.code(b - 1) === 0x3c) {
      this.flushText();
      if (before === 0x21) this.declarationEnd(at);
      return;
    }
    // htmlparser2 gives `</>` and `</ >` as text; HTML drops them (a missing end tag name; a bogus comment).
    if (this.html.code(at) === 0x3c && this.html.code(at + 1) === 0x2f) {
      const past = this.emptyEndTag(at + 2);
      if (past >= 0) {
        this.take();
        start = past - this.base;
        if (start >= end) return;
      }
    }
    if (this.runEnd === start) { this.runEnd = end; return; }
    this.take();
    this.runStart = start; this.runEnd = end;
  }

  /** After `</` at `at`: where `[\t\n\f\r ]*>`, or whitespace to the end of the page, ends, or -1. */
  private emptyEndTag(at: number): number {
    let i = at;
    while (isSpace(this.html.code(i))) i++;
    if (this.html.code(i) === 0x3e) return i + 1;
    return i > at && i === this.html.length ? i : -1;
  }

  // Called only by a tokenizer that decodes references itself (this one does not: take(), onattribend()).
  ontextentity(cp: number): void {
    this.take();
    this.pending += String.fromCodePoint(cp);
  }

  onopentagname(start: number, end: number): void {
    this.flushText();
    this.tagName = asciiLower(this.str(this.base + start, this.base + end));
    this.attrs = this.wantAttrs.has(this.tagName) || (this.foreign && NS_ATTR_TAGS.has(this.tagName)) ? [] : null;
  }

  onattribname(start: number, end: number): void {
    if (this.attrs === null) return;
    this.attrName = asciiLower(this.str(this.base + start, this.base + end));
    this.attrVal = '';
    this.valEnd = -1;
    // Foreign elements keep every attribute: their namespace rules read some (xlink:href, font color).
    this.attrSkipped = this.attrNames !== null && !this.foreign && !this.attrNames.has(this.attrName);
  }

  onattribdata(start: number, end: number): void {
    if (this.attrs === null || this.attrSkipped) return;
    if (this.valEnd === this.base + start) { this.valEnd = this.base + end; return; }
    this.takeValue();
    this.valStart = this.base + start;
    this.valEnd = this.base + end;
  }

  private takeValue(): void {
    if (this.valEnd < 0) return;
    this.attrVal += this.str(this.valStart, this.valEnd);
    this.valEnd = -1;
  }

  // Called only by a tokenizer that decodes references itself (this one does not: onattribend()).
  onattribentity(cp: number): void {
    if (this.attrs === null || this.attrSkipped) return;
    this.takeValue();
    this.attrVal += String.fromCodePoint(cp);
  }

  onattribend(): void {
    const attrs = this.attrs;
    if (attrs === null || this.attrSkipped) return;
    this.takeValue();
    const name = this.attrName;
    for (const a of attrs) if (a.name === name) return;
    attrs.push({ name, value: attrValue(decodeAttribute(this.attrVal)) });
  }

  onopentagend(end: number): void { this.openTag(false, end); }

  onselfclosingtag(end: number): void { this.openTag(true, end); }

  private openTag(selfClosing: boolean, end: number): void {
    if (this.stopped) return;
    const name = this.tagName;
    const attrs = this.attrs ?? NO_ATTRS;
    this.attrs = null;
    const ns = this.ns;
    if (name === 'svg') ns.push(Ns.Svg); else if (name === 'math') ns.push(Ns.MathMl);
    const top = ns[ns.length - 1];
    if (top !== Ns.Html) {
      // Foreign content: no raw text switching; an HTML element ends it, an integration point holds HTML.
      if (EXITS_FOREIGN.has(name) || (name === 'font' && attrs.some((a) => a.name === 'color' || a.name === 'face' || a.name === 'size'))) ns.pop();
      else {
        for (const a of attrs) if (a.name === 'xlink:href') a.name = 'href'; // parse5 drops the xlink: prefix
        if (!selfClosing && integrationPoint(name, top, attrs)) ns.push(Ns.Html);
      }
      this.foreign = ns[ns.length - 1] !== Ns.Html;
      this.sink.start({ tagName: name, attrs, selfClosing });
      if (this.sink.done) this.stop();
      // Markup here: a fresh tokenizer reads on, which htmlparser2 would have read as raw text.
      else if (SPECIAL.has(name) && !selfClosing) this.readOnFrom(this.base + end + 1);
      return;
    }
    this.sink.start({ tagName: name, attrs, selfClosing });
    if (this.sink.done) { this.stop(); return; }
    if (name === 'pre' || name === 'listing' || name === 'textarea') this.skipNewline = true;
    const from = this.base + end + 1;
    let rawEnd = -1;
    if (name === 'script') rawEnd = scriptEnd(this.html, from);
    else if (RAWTEXT.has(name) || RCDATA.has(name)) rawEnd = rawTextEnd(this.html, from, name);
    else if (name === 'plaintext') rawEnd = this.html.length;
    if (rawEnd < 0) return;
    // Raw text: report it (unless the sink drops it: a script's or style's), and read on from its end tag with a fresh tokenizer.
    if (rawEnd > from && !this.textDropped()) {
      this.inRaw = true;
      const raw = this.str(from, rawEnd);
      this.pending = RCDATA.has(name) ? decodeRcdata(raw) : raw;
      this.flushText();
      this.inRaw = false;
    }
    if (!this.stopped) this.readOnFrom(rawEnd);
  }

  /** Ends this tokenizer's pass; run() starts a fresh one at `at` (unless that is the end of the page). */
  private readOnFrom(at: number): void {
    // Always forward of this tokenizer's start, so a page is read in a bounded number of passes.
    if (at <= this.base) throw new Error(`tag-scanner: no progress at ${at}`);
    if (at < this.html.length) this.restartAt = at;
    this.tokenizer.pause();
  }

  onclosetag(start: number, end: number): void {
    if (this.stopped) return;
    this.flushText();
    if (this.stopped) return;
    // `</ a>`: htmlparser2 skips the space, HTML reads a bogus comment.
    if (this.html.code(this.base + start - 1) !== 0x2f) return;
    // An end tag the end of the page cuts (`</title `) is no tag to HTML.
    if (this.html.code(this.base + end) !== 0x3e && this.html.indexOf('>', this.base + end) < 0) return;
    let name = asciiLower(this.str(this.base + start, this.base + end));
    const slash = name.indexOf('/');
    if (slash >= 0) name = name.slice(0, slash);
    const ns = this.ns;
    const top = ns[ns.length - 1];
    if (top === Ns.Html) {
      // Outside SVG and MathML there is no parent namespace: `ns[-1]` would be a slow property lookup on every end tag.
      if (ns.length > 1 && integrationPoint(name, ns[ns.length - 2], NO_ATTRS)) ns.pop();
    } else if ((name === 'svg' && top === Ns.Svg) || (name === 'math' && top === Ns.MathMl)) ns.pop();
    this.foreign = ns[ns.length - 1] !== Ns.Html;
    this.sink.end(name);
    this.check();
  }

  oncdata(start: number, end: number, offset: number): void {
    if (this.foreign) {
      this.take();
      this.pending += this.str(this.base + start, this.base + end - offset);
      return;
    }
    // In HTML `<![CDATA[` opens a bogus comment, which the first `>` ends.
    this.flushText();
    this.skipNewline = false;
    const gt = this.html.indexIn('>', this.base + start, this.base + end);
    if (gt >= 0) this.readOnFrom(gt + 1);
  }

  oncomment(start: number, end: number, offset: number): void {
    this.flushText();
    this.skipNewline = false;
    // `--!>` ends a comment too (htmlparser2 reads on to the next `-->`).
    const close = this.html.indexIn('--!>', this.base + start, this.base + end - offset);
    if (close >= 0) this.readOnFrom(close + 4);
  }

  ondeclaration(start: number): void {
    this.flushText();
    this.declarationEnd(this.base + start);
  }

  /** `<!>` and `<!->` are bogus comments ended by that `>`; htmlparser2 reads on to the next `>`. */
  private declarationEnd(at: number): void {
    this.skipNewline = false;
    const c = this.html.code(at);
    if (c === 0x3e) this.readOnFrom(at + 1);
    else if (c === 0x2d && this.html.code(at + 1) === 0x3e) this.readOnFrom(at + 2);
  }

  onprocessinginstruction(): void {
    this.flushText();
    this.skipNewline = false;
  }

  onend(): void {
    this.flushText();
  }
}

/**
 * Reports `html`'s tags and text to `sink` in one synchronous pass. Start tags named in
 * `wantAttrs` carry their attributes (only those named in `attrNames`, when given, on HTML
 * elements; SVG and MathML elements keep all); every other start tag an empty list.
 *
 * `html` is the page as a string, or as its UTF-8 bytes (charset.ts `scanForm`, BOM dropped),
 * read in Latin-1 pieces of `chunk` bytes and decoded only where the sink is given something
 * (names, values, text): HTML's syntax is all ASCII, so the tokens fall where they fall in the
 * decoded page (docs/performance.md, "The page as its bytes"). `chunk` is SCAN_CHUNK but in tests.
 */
export function scanTags(html: string | Buffer, sink: TagSink, wantAttrs: ReadonlySet<string>, attrNames?: ReadonlySet<string>, chunk = SCAN_CHUNK): void {
  const page = typeof html === 'string' ? new StringPage(html) : new Utf8Page(html, chunk);
  new Scanner(page, sink, wantAttrs, attrNames ?? null).run();
}
