/**
 * parse: a stored HTML page -> its links (back to crawl.links) and what the indexer needs
 * (crawl.parsed). Pure apart from the clock: charset, one SAX pass, SHA-256 comparison with the
 * last stored copy (NEW / CHANGED / UNCHANGED), language.
 * In: crawl.fetched. Out: crawl.links, crawl.parsed.
 */
import { decodeBody, extract } from '../lib/html/extract';
import { detectLanguage } from '../lib/html/language';
import type { ChangeKind, FetchedPageMsg, LinkMsg, ParsedPageMsg } from '../lib/messages';
import { productToken } from '../lib/robots';
import { normalizeUrl } from '../lib/url-normalize';
import type { OutRecord, Stage } from '../runtime/stage';
import { hostKey } from './fetch';

export interface ParseOptions {
  userAgent: string;
}

export function changeOf(page: Pick<FetchedPageMsg, 'sha256' | 'prev_sha256'>): ChangeKind {
  if (!page.prev_sha256) return 'NEW';
  return page.prev_sha256 === page.sha256 ? 'UNCHANGED' : 'CHANGED';
}

export function parsePage(page: FetchedPageMsg, opts: ParseOptions): OutRecord[] {
  const { text: html } = decodeBody(page.body, page.content_type);
  const ex = extract(html, page.final_url, { xRobotsTag: page.x_robots_tag, productToken: productToken(opts.userAgent) });
  const out: OutRecord[] = [];
  // Links of an unchanged page were already followed when it was new.
  const change = changeOf(page);
  if (change !== 'UNCHANGED' && !ex.metaRobots.nofollow) {
    const targets = ex.links.filter((l) => !l.nofollow).map((l) => l.url);
    if (ex.metaRefresh) targets.push(ex.metaRefresh);
    for (const url of targets) {
      const link: LinkMsg = { url, source_url: page.url, depth: page.depth + 1, discovered_at: page.fetched_at, is_seed: false };
      const host = hostKey(url);
      if (host) out.push({ topic: 'links', key: host, host, value: link });
    }
  }
  const canonical = ex.canonical ? normalizeUrl(ex.canonical) : null;
  const parsed: ParsedPageMsg = {
    url: page.url,
    canonical_url: canonical?.ok ? canonical.url : null,
    host: page.host,
    fetched_at: page.fetched_at,
    change,
    sha256: page.sha256,
    simhash64: null,
    language: detectLanguage(ex.text, ex.lang),
    title: ex.title,
    text_length: ex.text.length,
    outlinks: ex.links.length,
    noindex: ex.metaRobots.noindex,
    warc: page.warc,
    text: null,
  };
  out.push({ topic: 'parsed', key: page.host, host: page.host, value: parsed });
  return out;
}

export function parseStage(opts: ParseOptions): Stage {
  return {
    id: 'parse',
    inputs: ['fetched'],
    outputs: ['links', 'parsed'],
    handle: (rec) => parsePage(rec.value as FetchedPageMsg, opts),
  };
}
