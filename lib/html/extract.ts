/**
 * One pass over a page's HTML, without building a tree: title, visible text, outgoing links,
 * canonical, <base>, robots directives, meta refresh, meta charset and <html lang>.
 *
 * Tokens come from tag-scanner.ts (htmlparser2's tokenizer, read the way parse5's SAX parser and
 * its parser-feedback simulator read a page): tags as written, no tree, raw text where the HTML
 * tree builder would switch the tokenizer, so `<script>"</div><a href=x>"</script>` is script
 * text and never a link. The pass is synchronous: extract() stays a plain function.
 *
 * <base href> applies to the whole document even when it comes after links, so hrefs are kept raw
 * while scanning and resolved once at the end against the first <base href> (itself resolved
 * against the page URL). That is still one pass over the input.
 */
import { TextEncoder } from 'node:util';
import { charsetParam } from './charset';
import { scanTags, type StartTag, type TagSink } from './tag-scanner';

export interface ExtractedLink {
  /** Absolute, resolved against <base href> or the page URL; not normalised further. */
  url: string;
  nofollow: boolean;
  rel: string | null;
  source: 'a' | 'area' | 'link' | 'meta-refresh';
}

export interface Extracted {
  title: string | null;
  /** Visible text: no script/style/noscript/template/head content; whitespace collapsed; blocks on their own lines. */
  text: string;
  /** Deduplicated by url, document order, http(s) only. */
  links: ExtractedLink[];
  canonical: string | null;
  baseHref: string | null;
  metaRobots: { noindex: boolean; nofollow: boolean };
  /** The resolved target URL of <meta http-equiv=refresh> (the delay is not kept), or null. */
  metaRefresh: string | null;
  /** Feeds the page names (<link rel=alternate type=application/rss+xml|atom+xml>), resolved, at most MAX_FEEDS; also in links. */
  feeds: string[];
  /** The label as written in <meta charset> / http-equiv Content-Type, lower-cased; not validated. */
  metaCharset: string | null;
  lang: string | null;
}

export interface ExtractOptions {
  xRobotsTag?: string | null;
  /** Our robots user-agent token, for <meta name=TOKEN> and `TOKEN: noindex` in X-Robots-Tag. */
  productToken?: string;
  maxLinks?: number;
  maxTextBytes?: number;
}

// Elements whose content is not page text: code, fallbacks, templates, form-field values. `title`
// is captured separately; `head` is handled with a flag because </head> is usually implied.
const SKIP = new Set(['script', 'style', 'noscript', 'template', 'title', 'iframe', 'noembed', 'noframes', 'textarea']);
// Start tags that may appear in <head>; any other start tag means the body has begun.
const HEAD_OK = new Set(['html', 'head', 'meta', 'link', 'title', 'script', 'style', 'noscript', 'template', 'base']);
const BLOCK = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'br', 'caption', 'dd', 'details', 'div', 'dl', 'dt',
  'fieldset', 'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr',
  'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table', 'tr', 'ul',
]);
const CELL = new Set(['td', 'th']);
const HTML_WS = /[\t\n\f\r \0]+/g;
// Same collapse, but leaves lone spaces alone, so typical prose is returned as is, without a copy.
const HTML_WS_RUN = /[\t\n\f\r\0][\t\n\f\r \0]*| [\t\n\f\r \0]+/g;
/** The same, unanchored and without /g: does a text need collapsing at all? (Most do not.) */
const HAS_WS_RUN = /[\t\n\f\r\0]| [\t\n\f\r \0]/;
const WS_ONLY = /^[\t\n\f\r \0]+$/;
const SKIP_SCHEME = /^[\s\0-\x1f]*(?:javascript|mailto|tel|data):/i;
const encoder = new TextEncoder();

interface RawLink { href: string; nofollow: boolean; rel: string | null; source: ExtractedLink['source'] }

/** Feeds kept from one page: a site's feed and its comments feed come first; a post's own comments feed rarely matters. */
export const MAX_FEEDS = 4;
const FEED_TYPES = new Set(['application/rss+xml', 'application/atom+xml']);

/** The elements whose attributes Collector reads; the scanner builds no attributes for others. */
const ATTR_TAGS: ReadonlySet<string> = new Set(['html', 'base', 'a', 'area', 'link', 'meta']);
/** The attributes of those it reads (attr() calls below); the scanner drops the others (class, style, data-*, ...). */
const ATTR_NAMES: ReadonlySet<string> = new Set(['lang', 'href', 'rel', 'type', 'name', 'content', 'charset', 'http-equiv']);

function attr(t: StartTag, name: string): string | null {
  for (const a of t.attrs) if (a.name === name) return a.value;
  return null;
}

function relTokens(rel: string | null): string[] {
  return rel === null ? [] : rel.toLowerCase().split(/[\t\n\f\r ]+/).filter(Boolean);
}

/** Applies a robots directive list ("noindex, nofollow", "none") to `into`. */
function applyDirectives(list: string, into: { noindex: boolean; nofollow: boolean }): void {
  for (const d of list.toLowerCase().split(/[\s,]+/)) {
    if (d === 'noindex' || d === 'none') into.noindex = true;
    if (d === 'nofollow' || d === 'none') into.nofollow = true;
  }
}

// Directives whose own syntax is `name: value`, so their colon does not name a user agent.
const VALUED = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/**
 * X-Robots-Tag: `noindex, nofollow` applies to everyone; `kcrawl: noindex` only to that agent.
 * Following Google's reading, directives after `agent:` belong to that agent until the next one.
 * Several header lines joined with ", " are therefore ambiguous; we accept that.
 */
export function parseXRobotsTag(value: string, token: string, into: { noindex: boolean; nofollow: boolean }): void {
  let agent: string | null = null;
  for (const raw of value.split(',')) {
    let part = raw.trim();
    const m = /^([A-Za-z0-9_.-]+)\s*:\s*(.*)$/.exec(part);
    if (m && !VALUED.has(m[1].toLowerCase())) { agent = m[1].toLowerCase(); part = m[2]; }
    if (agent === null || agent === token) applyDirectives(part, into);
  }
}

/** The URL part of a refresh content value ("0; url=/next"), per HTML's shared declarative refresh steps. */
function refreshUrl(content: string): string | null {
  const m = /^[\t\n\f\r ]*[\d.]+[\t\n\f\r ;,]+(?:url[\t\n\f\r ]*=[\t\n\f\r ]*)?([\s\S]*)$/i.exec(content);
  if (!m) return null;
  let url = m[1];
  const q = url[0];
  if (q === '"' || q === "'") { const end = url.indexOf(q, 1); url = url.slice(1, end < 0 ? undefined : end); }
  url = url.trim();
  return url === '' ? null : url;
}

function tryUrl(href: string, base?: string | URL): URL | null {
  try { return new URL(href, base); } catch { return null; }
}

/** Token sink: all document state lives here. */
class Collector implements TagSink {
  title: string | null = null; lang: string | null = null; baseRaw: string | null = null;
  canonicalRaw: string | null = null; refreshRaw: string | null = null; metaCharset: string | null = null;
  readonly feedsRaw: string[] = [];
  robots = { noindex: false, nofollow: false };
  raw = new Map<string, RawLink>();
  parts: string[] = [];
  private titleBuf: string | null = null; private inTitle = false; private sawHtml = false;
  private inHead = false; private headDone = false; private svgDepth = 0; private skipDepth = 0; private skipOpen = new Map<string, number>();
  private space = false; private newline = false;
  /**
   * UTF-8 bytes of the text so far, against maxText: an upper bound (3 bytes per UTF-16 unit)
   * while that bound stays under the cap, so no text run is measured on a page far from it (one
   * Buffer.byteLength per run was 1.9% of the parse worker's busy time); exact from the first
   * run that could reach the cap on.
   */
  private textBytes = 0; private textBytesExact = false;
  linksFull = false; textFull = false;

  constructor(private readonly token: string, private readonly maxLinks: number, private readonly maxText: number) {}

  start(t: StartTag): void {
    const name = t.tagName;
    if (this.inHead && !HEAD_OK.has(name)) this.leaveHead();
    switch (name) {
      case 'html': if (!this.sawHtml) { this.sawHtml = true; this.lang = attr(t, 'lang')?.trim() || null; } break;
      case 'head': if (!this.headDone) this.inHead = true; break; // a stray <head> in the body is ignored
      case 'body': this.leaveHead(); break;
      case 'base': if (this.baseRaw === null) this.baseRaw = attr(t, 'href'); break;
      case 'a': case 'area': {
        const href = attr(t, 'href');
        const rel = attr(t, 'rel');
        if (href !== null) this.addLink(href, relTokens(rel).includes('nofollow'), rel, name);
        break;
      }
      case 'link': this.link(t); break;
      case 'meta': this.meta(t); break;
      case 'title': if (this.titleBuf === null && this.svgDepth === 0) { this.inTitle = true; this.titleBuf = ''; } break;
      case 'svg': if (!t.selfClosing) this.svgDepth++; break;
    }
    if (SKIP.has(name) && !(t.selfClosing && name === 'template')) {
      this.skipOpen.set(name, (this.skipOpen.get(name) ?? 0) + 1);
      this.skipDepth++;
    }
    if (this.skipDepth > 0) return; // blocks inside <template> etc. must not break the visible text
    if (BLOCK.has(name)) this.newline = true; else if (CELL.has(name)) this.space = true;
  }

  /** text() keeps nothing now (see its first lines): the scanner need not build the text. */
  get wantsText(): boolean {
    return this.inTitle || !(this.skipDepth > 0 || this.inHead || this.textFull);
  }

  /** Nothing later in the page can change links or text once both caps are hit; stop paying for it. */
  get done(): boolean {
    // (A <link>/<meta> after that point, invalid outside <head> anyway, is then missed.)
    return this.linksFull && this.textFull;
  }

  end(name: string): void {
    if (name === 'head') this.leaveHead();
    else if (name === 'svg' && this.svgDepth > 0) this.svgDepth--;
    else if (name === 'title' && this.inTitle) {
      this.inTitle = false;
      this.title = this.titleBuf!.replace(HTML_WS, ' ').trim() || null;
    }
    const open = this.skipOpen.get(name);
    if (open) { this.skipOpen.set(name, open - 1); this.skipDepth--; }
    if (this.skipDepth > 0) return;
    if (BLOCK.has(name)) this.newline = true; else if (CELL.has(name)) this.space = true;
  }

  text(s: string): void {
    if (this.inTitle) { this.titleBuf += s; return; }
    if (this.skipDepth > 0 || this.inHead || this.textFull) return;
    // Most texts of a page are only whitespace (the indentation between tags): one space.
    if (WS_ONLY.test(s)) { this.space = true; return; }
    // Testing first spares a copy of every text that has only single spaces.
    let t = HAS_WS_RUN.test(s) ? s.replace(HTML_WS_RUN, ' ') : s;
    if (t.charCodeAt(0) === 32) { this.space = true; t = t.slice(1); }
    if (t === '') return;
    const trailing = t.charCodeAt(t.length - 1) === 32;
    if (trailing) t = t.slice(0, -1);
    const sep = this.parts.length === 0 ? '' : this.newline ? '\n' : this.space ? ' ' : '';
    // The separator (ASCII) and the text are kept as two parts: `sep + t` would be one more
    // string to build and measure for every text of the page.
    let bytes = 3 * (sep.length + t.length);
    if (this.textBytesExact || this.textBytes + bytes > this.maxText) {
      if (!this.textBytesExact) {
        let exact = 0;
        for (const p of this.parts) exact += Buffer.byteLength(p, 'utf8');
        this.textBytes = exact;
        this.textBytesExact = true;
      }
      bytes = sep.length + Buffer.byteLength(t, 'utf8');
    }
    if (this.textBytes + bytes > this.maxText) {
      const chunk = sep + t;
      // encodeInto only writes whole characters, so `read` is a safe cut point in UTF-16 units.
      const cut = chunk.slice(0, encoder.encodeInto(chunk, new Uint8Array(this.maxText - this.textBytes)).read);
      if (cut !== '') this.parts.push(cut);
      this.textFull = true;
    } else {
      if (sep !== '') this.parts.push(sep);
      this.parts.push(t);
    }
    this.textBytes += bytes;
    this.space = trailing; this.newline = false;
  }

  private leaveHead(): void { this.inHead = false; this.headDone = true; }

  private link(t: StartTag): void {
    const href = attr(t, 'href');
    if (href === null) return;
    const rel = attr(t, 'rel');
    const tokens = relTokens(rel);
    if (tokens.includes('canonical') && this.canonicalRaw === null) this.canonicalRaw = href;
    // Pagination and alternates (translations, feeds) are pages worth crawling; an
    // "alternate stylesheet" or icon is not.
    const wanted = tokens.some((r) => r === 'next' || r === 'prev' || r === 'previous' || r === 'alternate');
    if (wanted && !tokens.some((r) => r === 'stylesheet' || r === 'icon')) {
      this.addLink(href, tokens.includes('nofollow'), rel, 'link');
      const type = attr(t, 'type');
      const feed = type !== null && tokens.includes('alternate') && FEED_TYPES.has(type.trim().toLowerCase());
      if (feed && this.feedsRaw.length < MAX_FEEDS && !this.feedsRaw.includes(href.trim())) this.feedsRaw.push(href.trim());
    }
  }

  private meta(t: StartTag): void {
    const name = attr(t, 'name')?.trim().toLowerCase();
    const content = attr(t, 'content');
    if (content !== null && (name === 'robots' || name === this.token)) applyDirectives(content, this.robots);
    const charset = attr(t, 'charset');
    const equiv = attr(t, 'http-equiv')?.trim().toLowerCase();
    if (this.metaCharset === null) {
      const label = charset ?? (equiv === 'content-type' && content !== null ? charsetParam(content) : null);
      if (label !== null && label.trim() !== '') this.metaCharset = label.trim().toLowerCase();
    }
    if (equiv === 'refresh' && content !== null && this.refreshRaw === null) {
      this.refreshRaw = refreshUrl(content);
      if (this.refreshRaw !== null) this.addLink(this.refreshRaw, false, null, 'meta-refresh');
    }
  }

  private addLink(href: string, nofollow: boolean, rel: string | null, source: ExtractedLink['source']): void {
    const h = href.trim();
    if (h === '' || h[0] === '#' || SKIP_SCHEME.test(h)) return;
    const seen = this.raw.get(h);
    // The same target linked both ways stays followable: one followed link is enough to reach it.
    if (seen) { seen.nofollow &&= nofollow; return; }
    if (this.linksFull) return;
    this.raw.set(h, { href: h, nofollow, rel, source });
    if (this.raw.size >= this.maxLinks) this.linksFull = true;
  }
}

/** A tokenizer pass that reports `html`'s tags and text to `sink` (tag-scanner.ts's is the crawler's). */
export type TagScan = (html: string | Buffer, sink: TagSink, wantAttrs: ReadonlySet<string>, attrNames?: ReadonlySet<string>) => void;

/**
 * What a page says: `html` decoded, or a UTF-8 page's bytes (charset.ts `scanForm`, BOM
 * dropped), which the scan reads without decoding them whole (tag-scanner.ts scanTags).
 */
export function extract(html: string | Buffer, pageUrl: string, opts: ExtractOptions = {}): Extracted {
  return extractWith(scanTags, html, pageUrl, opts);
}

/** extract() over another tokenizer pass: for the parity check against parse5 (bench/parse5-scan.ts). */
export function extractWith(scan: TagScan, html: string | Buffer, pageUrl: string, opts: ExtractOptions = {}): Extracted {
  const token = (opts.productToken ?? 'kcrawl').toLowerCase();
  const c = new Collector(token, opts.maxLinks ?? 5000, opts.maxTextBytes ?? 1024 * 1024);
  scan(html, c, ATTR_TAGS, ATTR_NAMES);

  const robots = { ...c.robots };
  if (opts.xRobotsTag) parseXRobotsTag(opts.xRobotsTag, token, robots);

  const page = tryUrl(pageUrl);
  let base: URL | null = page;
  let baseHref: string | null = null;
  if (c.baseRaw !== null && c.baseRaw.trim() !== '') {
    const b = tryUrl(c.baseRaw.trim(), page ?? undefined);
    // A base with a non-http(s) scheme could only make every link unusable; ignore it.
    if (b && (b.protocol === 'http:' || b.protocol === 'https:')) { base = b; baseHref = b.href; }
  }
  const resolve = (href: string): string | null => {
    const u = tryUrl(href, base ?? undefined);
    return u && (u.protocol === 'http:' || u.protocol === 'https:') ? u.href : null;
  };

  const byUrl = new Map<string, ExtractedLink>();
  for (const r of c.raw.values()) {
    const url = resolve(r.href);
    if (url === null) continue;
    const seen = byUrl.get(url);
    if (seen) { seen.nofollow &&= r.nofollow; continue; }
    byUrl.set(url, { url, nofollow: r.nofollow, rel: r.rel, source: r.source });
  }
  const links = [...byUrl.values()];
  if (robots.nofollow) for (const l of links) l.nofollow = true;

  return {
    title: c.title,
    text: c.parts.join(''),
    links,
    canonical: c.canonicalRaw === null ? null : resolve(c.canonicalRaw.trim()),
    baseHref,
    metaRobots: robots,
    metaRefresh: c.refreshRaw === null ? null : resolve(c.refreshRaw),
    feeds: [...new Set(c.feedsRaw.map(resolve).filter((u): u is string => u !== null))],
    metaCharset: c.metaCharset,
    lang: c.lang,
  };
}

export { decodeBody, scanForm, sniffCharset, wholeText } from './charset';
