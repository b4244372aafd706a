/**
 * Sitemaps (sitemaps.org protocol 0.9), pure: recognise a sitemap response, un-gzip it within
 * bounds, and read its <loc>/<lastmod> entries.
 *
 * How sitemaps are fetched (the politeness choice): never out of band. A sitemap URL (from a
 * robots.txt Sitemap line, or /sitemap.xml when sitemapProbe is on) is sent to crawl.links like
 * any link, so it is seen-tested, scheduled by the frontier inside the host's gaps, leased and
 * robots-checked like a page. When the fetch stage gets a response that *is* a sitemap (its
 * root element is <urlset> or <sitemapindex>, whatever its URL), it stores it and sends its
 * entries to crawl.links: page URLs with their lastmod, child sitemaps of an index likewise.
 * A news sitemap's entries (<news:news>) go in priority class 1, and the frontier polls the
 * sitemap itself like a feed (processors/feeds.ts).
 */
import { gunzipSync } from 'node:zlib';
import type { LinkMsg } from '../lib/messages';
import { routingKey } from '../lib/partitioner';

export interface SitemapEntry {
  loc: string;
  /** <lastmod> as epoch ms, or null when absent or unreadable. */
  lastmod: number | null;
  /** A news-sitemap entry (it holds a <news:news> block): a recent article, fetched in priority class 1. */
  news?: true;
}

export interface Sitemap {
  kind: 'urlset' | 'sitemapindex';
  entries: SitemapEntry[];
}

/** The protocol's limits: 50,000 URLs and 50 MiB uncompressed per sitemap. */
export const MAX_SITEMAP_URLS = 50_000;
export const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;

const GZIP_MAGIC = [0x1f, 0x8b];

/** The body as XML text: gunzipped when it is a gzip file (sitemap.xml.gz), bounded; null if it cannot be. */
export function sitemapText(body: Buffer, maxBytes = MAX_SITEMAP_BYTES): string | null {
  let b = body;
  if (b.length >= 2 && b[0] === GZIP_MAGIC[0] && b[1] === GZIP_MAGIC[1]) {
    try {
      b = gunzipSync(b, { maxOutputLength: maxBytes });
    } catch {
      return null; // corrupt, truncated, or a bomb past the limit
    }
  }
  return b.subarray(0, maxBytes).toString('utf8');
}

const ROOT = /^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<(?:[\w.-]+:)?(urlset|sitemapindex)\b/i;

function unescapeXml(s: string): string {
  const cdata = /^<!\[CDATA\[([\s\S]*)\]\]>$/.exec(s.trim());
  if (cdata) return cdata[1].trim();
  return s
    .trim()
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_m, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, h: string) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&amp;/g, '&');
}

/** A Google News sitemap block inside an entry: `<news:news>` (any prefix). */
const NEWS = /<(?:[\w.-]+:)?news[\s>]/i;

function tag(block: string, name: string): string | null {
  const m = new RegExp(`<(?:[\\w.-]+:)?${name}\\b[^>]*>([\\s\\S]*?)</(?:[\\w.-]+:)?${name}>`, 'i').exec(block);
  return m ? unescapeXml(m[1]) : null;
}

/**
 * Parse sitemap XML. Entries whose <loc> is not an absolute http(s) URL within the sitemap's
 * registered domain are dropped: the protocol allows only the sitemap's own host, save
 * cross-submission through robots.txt; we accept the domain's other hosts (www and bare,
 * http and https) and nothing beyond. Returns null when the text is not a sitemap.
 */
export function parseSitemap(xml: string, sitemapUrl: string, maxUrls = MAX_SITEMAP_URLS): Sitemap | null {
  const root = ROOT.exec(xml);
  if (!root) return null;
  const kind = root[1].toLowerCase() === 'urlset' ? 'urlset' : 'sitemapindex';
  const item = kind === 'urlset' ? 'url' : 'sitemap';
  const domain = routingKey(new URL(sitemapUrl).hostname);
  const entries: SitemapEntry[] = [];
  const blocks = new RegExp(`<(?:[\\w.-]+:)?${item}\\b[^>]*>([\\s\\S]*?)</(?:[\\w.-]+:)?${item}>`, 'gi');
  for (let m = blocks.exec(xml); m && entries.length < maxUrls; m = blocks.exec(xml)) {
    const loc = tag(m[1], 'loc');
    if (!loc) continue;
    let u: URL;
    try {
      u = new URL(loc);
    } catch {
      continue;
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || routingKey(u.hostname) !== domain) continue;
    const lm = tag(m[1], 'lastmod');
    const t = lm ? Date.parse(lm) : NaN;
    entries.push({ loc: u.href, lastmod: Number.isNaN(t) ? null : t, ...(NEWS.test(m[1]) ? { news: true as const } : {}) });
  }
  return { kind, entries };
}

/** Whether a 2xx response may be a sitemap worth parsing (XML, gzip, or plain text typed XML). */
export function maybeSitemap(contentType: string | null, url: string, body: Buffer): boolean {
  if (contentType && /(xml|gzip|x-gzip)/i.test(contentType)) return true;
  if (/\.xml(\.gz)?$/i.test(new URL(url).pathname)) return true;
  return body.length >= 2 && body[0] === GZIP_MAGIC[0] && body[1] === GZIP_MAGIC[1];
}

/**
 * Sitemap URLs to announce once robots.txt of an origin is read: its Sitemap lines within the
 * origin's registered domain, else /sitemap.xml when probing is on.
 */
export function sitemapSeeds(origin: string, robotsSitemaps: readonly string[], probe: boolean): string[] {
  const domain = routingKey(new URL(origin).hostname);
  const own = robotsSitemaps.filter((s) => {
    try {
      return routingKey(new URL(s).hostname) === domain;
    } catch {
      return false;
    }
  });
  if (own.length > 0) return own;
  return probe ? [`${origin}/sitemap.xml`] : [];
}

/**
 * What a sitemap response sends to crawl.links: its page URLs one hop deeper than the sitemap,
 * with their lastmod; an index's child sitemaps at the index's own depth.
 */
export function sitemapLinks(sm: Sitemap, sitemapUrl: string, depth: number, now: number): LinkMsg[] {
  const d = sm.kind === 'urlset' ? depth + 1 : depth;
  return sm.entries.map((e) => ({
    url: e.loc, source_url: sitemapUrl, depth: d, discovered_at: now, is_seed: false, lastmod: e.lastmod, ...(e.news ? { priority_class: 1 } : {}),
  }));
}

/** A news sitemap is polled like a feed (processors/frontier-feeds.ts): its news entries are its items. */
export function newsEntries(sm: Sitemap): SitemapEntry[] {
  return sm.kind === 'urlset' ? sm.entries.filter((e) => e.news) : [];
}

/** A 2xx response that is a sitemap, parsed; null for anything else. */
export function sitemapOf(status: number, contentType: string | null, url: string, body: Buffer): Sitemap | null {
  if (status < 200 || status >= 300 || !maybeSitemap(contentType, url, body)) return null;
  const text = sitemapText(body);
  return text === null ? null : parseSitemap(text, url);
}
