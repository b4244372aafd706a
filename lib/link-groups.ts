/**
 * Links and candidates travel in groups: one record per host, holding the URLs that share
 * every other field (`url` plus `more_urls`). A page's 25 links went out as 25 crawl.links
 * records and came back as about as many crawl.frontier records; grouped, they are one
 * record per host the page links to. Per record, Kafka mode pays encoding, a produce, a fetch
 * and a decode in kafkajs, and the broker its share: 70 records per page on the benchmark's
 * web, half of them these two topics.
 *
 * Readers expand a group into single messages first, so a record written before groups
 * existed (no `more_urls`) reads as a group of one.
 */
import type { CandidateMsg, LinkMsg } from './messages';

/** Every field but the URLs must match for two links to share a record. */
function sameLinkFields(a: LinkMsg, b: LinkMsg): boolean {
  return (
    a.source_url === b.source_url && a.depth === b.depth && a.discovered_at === b.discovered_at && a.is_seed === b.is_seed &&
    (a.redirects ?? 0) === (b.redirects ?? 0) && (a.priority ?? null) === (b.priority ?? null) && (a.lastmod ?? null) === (b.lastmod ?? null) &&
    (a.priority_class ?? null) === (b.priority_class ?? null)
  );
}

export function sameCandidateFields(a: CandidateMsg, b: CandidateMsg): boolean {
  return (
    a.host === b.host && a.source_url === b.source_url && a.depth === b.depth && a.discovered_at === b.discovered_at &&
    (a.redirects ?? 0) === (b.redirects ?? 0) && (a.priority ?? null) === (b.priority ?? null) && (a.priority_class ?? null) === (b.priority_class ?? null)
  );
}

/**
 * Group items by key: an item joins the open group of its key when `same` says it may, and
 * opens a new one otherwise. Groups come out in the order their first item came in, and the
 * URLs of a group keep their order.
 */
function group<T extends { url: string; more_urls?: string[] }>(items: readonly T[], keyOf: (t: T) => string | null, same: (a: T, b: T) => boolean): Array<{ key: string; value: T }> {
  const out: Array<{ key: string; value: T }> = [];
  const open = new Map<string, T>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === null) continue;
    const head = open.get(key);
    if (head && same(head, item)) {
      const more = head.more_urls!;
      more.push(item.url);
      if (item.more_urls) for (const u of item.more_urls) more.push(u);
      continue;
    }
    const value = { ...item, more_urls: item.more_urls ? item.more_urls.slice() : [] };
    open.set(key, value);
    out.push({ key, value });
  }
  return out;
}

/** Links grouped by the host `hostOf` gives (links it gives null are left out). */
export function groupLinks(links: readonly LinkMsg[], hostOf: (url: string) => string | null): Array<{ host: string; link: LinkMsg }> {
  return group(links, (l) => hostOf(l.url), sameLinkFields).map(({ key, value }) => ({ host: key, link: value }));
}

/** Candidates grouped by host. */
export function groupCandidates(candidates: readonly CandidateMsg[]): CandidateMsg[] {
  return group(candidates, (c) => c.host, sameCandidateFields).map(({ value }) => value);
}

/** One message per URL of a record, `url` first, every other field as the record's. */
function expand<T extends { url: string; more_urls?: string[] }>(m: T): T[] {
  if (!m.more_urls || m.more_urls.length === 0) return [m];
  const head: T = { ...m, more_urls: [] };
  return [head, ...m.more_urls.map((url) => ({ ...head, url }))];
}

export const expandLink: (link: LinkMsg) => LinkMsg[] = expand;
export const expandCandidate: (c: CandidateMsg) => CandidateMsg[] = expand;

/** Every URL a record names. */
export function urlsOf(m: { url: string; more_urls?: string[] }): string[] {
  return m.more_urls && m.more_urls.length > 0 ? [m.url, ...m.more_urls] : [m.url];
}
