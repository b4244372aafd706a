/**
 * Feeds (RSS 2.0, RSS 1.0/RDF, Atom), pure: recognise a feed response and read its items'
 * links, within bounds. The fetch stage calls feedOf on every 2xx response that is neither an
 * HTML page nor a sitemap, as it calls sitemapOf (processors/sitemaps.ts); the frontier polls
 * feeds (processors/frontier-feeds.ts).
 *
 * How feeds are fetched (the politeness choice): never out of band. A feed URL is a URL of the
 * frontier like any other, found on a page (`<link rel="alternate" type="application/rss+xml">`,
 * lib/html/extract.ts), in robots.txt's Sitemap lines (the sitemap protocol accepts feeds), or
 * given by an operator (`crawl seed --feed`); each poll is a lease, inside the host's gaps and
 * robots.txt, sent as a conditional GET (the URL-table row's ETag and Last-Modified).
 *
 * Parsed with sax (isaacs/sax-js) in its loose mode: real feeds carry HTML entities and stray
 * ampersands, and sax reads past them. sax never expands entities declared in a DOCTYPE (an
 * "&lol9;" stays as written), so a billion-laughs document costs its own size; the body is cut at
 * MAX_FEED_BYTES and reading stops at `maxItems` items or MAX_PARSE_ERRORS errors.
 */
import { createHash } from 'node:crypto';
import { TextDecoder } from 'node:util';
import sax from 'sax';
import { charsetParam } from '../lib/html/charset';
import type { LinkMsg } from '../lib/messages';
import { routingKey } from '../lib/partitioner';

export type FeedKind = 'rss' | 'atom' | 'rdf';

export interface FeedItem {
  /** The item's link, absolute http(s), or null when it has none we can use. */
  url: string | null;
  /** 16 hex digits of SHA-256 of its guid/id, else of its link: what tells a new item from a known one. */
  key: string;
}

export interface Feed {
  kind: FeedKind;
  items: FeedItem[];
}

/** Bytes of a feed read at most (the fetch stage's body cap applies first). */
export const MAX_FEED_BYTES = 4 * 1024 * 1024;
/** Characters kept of one item's link or id. */
const MAX_FIELD_CHARS = 4096;
/** A document this broken is not read further. */
const MAX_PARSE_ERRORS = 1000;
const CHUNK_CHARS = 64 * 1024;

/** The root element after the prolog: comments, processing instructions, a DOCTYPE with or without an internal subset. */
const ROOT = /^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*|<!DOCTYPE[^[>]*(?:\[[\s\S]*?\])?\s*>\s*|<\?[^>]*\?>\s*)*<(?:[\w.-]+:)?(rss|feed|RDF)\b/;

/** The feed kind of a document by its root element, or null when it is not a feed. */
export function feedKind(head: string): FeedKind | null {
  const m = ROOT.exec(head.charCodeAt(0) === 0xfeff ? head.slice(1) : head);
  if (!m) return null;
  return m[1] === 'rss' ? 'rss' : m[1] === 'feed' ? 'atom' : 'rdf';
}

/** An item's key: what tells it from the others across polls. */
export function itemKey(idOrUrl: string): string {
  return createHash('sha256').update(idOrUrl).digest('hex').slice(0, 16);
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

function httpUrl(raw: string, base: string): string | null {
  try {
    const u = new URL(raw.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

interface OpenItem {
  depth: number;
  link: string | null;
  id: string | null;
  /** RSS <guid isPermaLink="false">: an id, not a link. */
  guidIsLink: boolean;
  guid: string | null;
  base: string;
}

/**
 * Read a feed's items, at most `maxItems`, in document order. Returns null when the text is not
 * a feed (its root is not rss, feed or RDF).
 */
export function parseFeed(xml: string, feedUrl: string, maxItems: number): Feed | null {
  const kind = feedKind(xml.slice(0, 4096));
  if (!kind) return null;
  const items: FeedItem[] = [];
  const itemName = kind === 'atom' ? 'entry' : 'item';
  const parser = sax.parser(false, { lowercase: true });
  // xml:base of each open element (Atom resolves relative links against it).
  const bases: string[] = [feedUrl];
  let depth = 0;
  let item: OpenItem | null = null;
  /** The item field whose text is being read, if any. */
  let field: 'link' | 'id' | 'guid' | null = null;
  let text = '';
  let errors = 0;
  let done = false;

  const finish = (it: OpenItem): void => {
    if (items.length >= maxItems) return;
    const link = it.link !== null ? httpUrl(it.link, it.base) : it.guidIsLink && it.guid ? httpUrl(it.guid, it.base) : null;
    const id = it.id ?? it.guid ?? link;
    if (id === null || id === '') return;
    items.push({ url: link, key: itemKey(id) });
    if (items.length >= maxItems) done = true;
  };

  parser.onopentag = (tag) => {
    depth++;
    const attrs = tag.attributes as Record<string, string>;
    const base = attrs['xml:base'] ? httpUrl(attrs['xml:base'], bases[bases.length - 1]) ?? bases[bases.length - 1] : bases[bases.length - 1];
    bases.push(base);
    const name = localName(tag.name);
    if (item === null) {
      if (name === itemName) {
        item = { depth, link: null, id: null, guidIsLink: true, guid: null, base };
        // RSS 1.0 names the item's resource in rdf:about.
        if (kind === 'rdf' && attrs['rdf:about']) item.id = attrs['rdf:about'].slice(0, MAX_FIELD_CHARS);
      }
      return;
    }
    if (depth !== item.depth + 1) return; // only the item's own children
    if (kind === 'atom') {
      if (name === 'link' && item.link === null && attrs.href && (attrs.rel === undefined || attrs.rel === 'alternate')) item.link = attrs.href.slice(0, MAX_FIELD_CHARS);
      else if (name === 'id') field = 'id';
    } else if (tag.name === 'link') field = 'link'; // not <atom:link>, which an RSS item may also carry
    else if (tag.name === 'guid') {
      field = 'guid';
      item.guidIsLink = attrs.ispermalink?.toLowerCase() !== 'false';
    }
    text = '';
  };
  parser.ontext = parser.oncdata = (t) => {
    if (field !== null && text.length < MAX_FIELD_CHARS) text += t.slice(0, MAX_FIELD_CHARS - text.length);
  };
  parser.onclosetag = () => {
    if (item !== null) {
      if (field !== null && depth === item.depth + 1) {
        const v = text.trim();
        if (v !== '') {
          if (field === 'link' && item.link === null) item.link = v;
          else if (field === 'id' && item.id === null) item.id = v;
          else if (field === 'guid' && item.guid === null) item.guid = v;
        }
        field = null;
      } else if (depth === item.depth) {
        finish(item);
        item = null;
      }
    }
    bases.pop();
    depth--;
  };
  parser.onerror = () => {
    // Loose mode reports what it reads past; carry on, within a bound.
    if (++errors >= MAX_PARSE_ERRORS) done = true;
    parser.resume();
  };
  for (let i = 0; i < xml.length && !done; i += CHUNK_CHARS) parser.write(xml.slice(i, i + CHUNK_CHARS));
  if (!done) parser.close();
  return { kind, items };
}

const XML_DECL_ENCODING = /^<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']/;

/** The body as text: by its BOM, the Content-Type charset, the XML declaration, else UTF-8. */
export function xmlText(body: Buffer, contentType: string | null): string {
  const b = body.subarray(0, MAX_FEED_BYTES);
  let label = 'utf-8';
  if (b[0] === 0xff && b[1] === 0xfe) label = 'utf-16le';
  else if (b[0] === 0xfe && b[1] === 0xff) label = 'utf-16be';
  else if (!(b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf)) {
    label = (contentType ? charsetParam(contentType) : null) ?? XML_DECL_ENCODING.exec(b.subarray(0, 256).toString('latin1'))?.[1] ?? 'utf-8';
  }
  try {
    return new TextDecoder(label).decode(b);
  } catch {
    return new TextDecoder('utf-8').decode(b); // an unknown label
  }
}

/** A 2xx response that is a feed, read; null for anything else. */
export function feedOf(status: number, contentType: string | null, url: string, body: Buffer, maxItems: number): Feed | null {
  if (status < 200 || status >= 300 || body.length === 0) return null;
  // The root must show in the first bytes; only then is the whole body decoded.
  if (!feedKind(xmlText(body.subarray(0, 4096), contentType))) return null;
  return parseFeed(xmlText(body, contentType), url, maxItems);
}

/**
 * What a feed sends to crawl.links: its items' links one hop deeper than the feed, class 1 when
 * on the feed's own registered domain (a feed vouches for its own site's articles; an
 * aggregator's links to other sites get the class the frontier derives for them).
 */
export function feedLinks(feed: Feed, feedUrl: string, depth: number, now: number): LinkMsg[] {
  const domain = routingKey(new URL(feedUrl).hostname);
  const out: LinkMsg[] = [];
  const seen = new Set<string>();
  for (const it of feed.items) {
    if (it.url === null || seen.has(it.url)) continue;
    seen.add(it.url);
    const own = routingKey(new URL(it.url).hostname) === domain;
    out.push({ url: it.url, source_url: feedUrl, depth: depth + 1, discovered_at: now, is_seed: false, ...(own ? { priority_class: 1 } : {}) });
  }
  return out;
}

/**
 * The FetchStatus fields that tell the frontier a response was a feed: its kind and its items'
 * keys. A news sitemap's news entries are its items, keyed by their URL.
 */
export function feedStatusFields(feed: Feed | null, newsUrls: readonly string[], maxItems: number): { feed_kind?: string; feed_items?: string[] } {
  if (feed) return { feed_kind: feed.kind, feed_items: feed.items.map((i) => i.key) };
  if (newsUrls.length > 0) return { feed_kind: 'news-sitemap', feed_items: newsUrls.slice(0, maxItems).map(itemKey) };
  return {}; // not a feed: the fields' defaults (null, [])
}
