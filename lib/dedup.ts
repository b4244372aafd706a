/**
 * Duplicate detection across URLs, for the hosts of the partitions a parse instance owns.
 * Pure state, no I/O: parse feeds it every page (and, after a restart, every row of the
 * compacted crawl.content table, which is what makes it rebuildable).
 *
 * Only *representatives* are indexed: a page that was not itself a duplicate when it was last
 * parsed. Duplicates are remembered per URL (so a restart knows them) but never become the
 * thing others are compared against; otherwise a representative's own recrawl could be judged
 * a copy of its copies.
 *
 *   exact: the same SHA-256 body as another URL's representative on the same host;
 *   near:  a SimHash within `maxDistance` bits (default 3) of another representative on the
 *          same host, found through four tables keyed by each 16-bit block of the fingerprint
 *          (two fingerprints within 3 bits agree on at least one whole block).
 *
 * Fingerprints are compared only with fingerprints of the same algorithm (simhash_version): the
 * block tables are keyed by version and block, so after an upgrade a page fingerprinted with
 * the new version never meets one of the old (whose bits mean something else); old rows stay
 * representatives for exact duplicates, and for near ones once their page is parsed again.
 */
import type { ContentMsg } from './messages';
import { blocks16, hammingDistance } from './simhash';

/** A row's or page's SimHash version; rows written before versions existed are version 1. */
export const simhashVersionOf = (r: { simhash_version?: number }): number => r.simhash_version ?? 1;

/** The block tables' key: the version above the 16-bit block. */
const blockKey = (version: number, block: number): number => version * 0x10000 + block;

/** One row of crawl.content (key = url): what parse last saw at a URL (duplicate_of null = a representative). */
export type ContentRow = ContentMsg;

export interface DuplicateVerdict {
  kind: 'exact' | 'near';
  of: string;
  distance: number;
}

export const NEAR_DUPLICATE_MAX_BITS = 3;

interface HostIndex {
  rows: Map<string, ContentRow>;
  bySha: Map<string, Set<string>>;
  byBlock: [Map<number, Set<string>>, Map<number, Set<string>>, Map<number, Set<string>>, Map<number, Set<string>>];
}

function addTo<K>(m: Map<K, Set<string>>, k: K, url: string): void {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  s.add(url);
}

function removeFrom<K>(m: Map<K, Set<string>>, k: K, url: string): void {
  const s = m.get(k);
  if (!s) return;
  s.delete(url);
  if (s.size === 0) m.delete(k);
}

export class DedupIndex {
  private readonly hosts = new Map<string, HostIndex>();

  constructor(private readonly maxDistance = NEAR_DUPLICATE_MAX_BITS) {}

  /** URLs remembered (representatives and duplicates), for logs and tests. */
  get size(): number {
    let n = 0;
    for (const h of this.hosts.values()) n += h.rows.size;
    return n;
  }

  /** What was last recorded for a URL. */
  get(url: string, host: string): ContentRow | undefined {
    return this.hosts.get(host)?.rows.get(url);
  }

  /** The duplicate this page would be, if any; the page's own URL never counts. `version`: the SimHash's algorithm. */
  check(url: string, host: string, sha256: string, simhash: string | null, version: number): DuplicateVerdict | null {
    const h = this.hosts.get(host);
    if (!h) return null;
    for (const other of h.bySha.get(sha256) ?? []) if (other !== url) return { kind: 'exact', of: other, distance: 0 };
    if (!simhash) return null;
    let best: DuplicateVerdict | null = null;
    blocks16(simhash).forEach((b, i) => {
      for (const other of h.byBlock[i].get(blockKey(version, b)) ?? []) {
        const o = other === url ? null : h.rows.get(other);
        if (!o?.simhash64) continue;
        const d = hammingDistance(simhash, o.simhash64);
        if (d <= this.maxDistance && (!best || d < best.distance)) best = { kind: 'near', of: other, distance: d };
      }
    });
    return best;
  }

  /** Remember a page as parse saw it (or as restored from crawl.content). */
  record(row: ContentRow): void {
    this.forget(row.url, row.host);
    let h = this.hosts.get(row.host);
    if (!h) this.hosts.set(row.host, (h = { rows: new Map(), bySha: new Map(), byBlock: [new Map(), new Map(), new Map(), new Map()] }));
    h.rows.set(row.url, row);
    if (row.duplicate_of !== null) return;
    addTo(h.bySha, row.sha256, row.url);
    if (row.simhash64) blocks16(row.simhash64).forEach((b, i) => addTo(h!.byBlock[i], blockKey(simhashVersionOf(row), b), row.url));
  }

  /** Drop a URL (a tombstone in crawl.content). */
  forget(url: string, host: string): void {
    const h = this.hosts.get(host);
    const old = h?.rows.get(url);
    if (!h || !old) return;
    h.rows.delete(url);
    removeFrom(h.bySha, old.sha256, url);
    if (old.simhash64) blocks16(old.simhash64).forEach((b, i) => removeFrom(h.byBlock[i], blockKey(simhashVersionOf(old), b), url));
    if (h.rows.size === 0) this.hosts.delete(host);
  }

  /** Forget hosts this instance no longer owns (after a rebalance). */
  retain(owns: (host: string) => boolean): void {
    for (const host of this.hosts.keys()) if (!owns(host)) this.hosts.delete(host);
  }
}
