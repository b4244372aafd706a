/**
 * The duplicate index as it was before it moved to disk (main's lib/dedup.ts at 8d355fa, with
 * apply() added as ParseDedup.restore did it): the reference the store's decisions are compared
 * with (test/unit/dedup-store.test.ts, bench/dedup-memory.ts).
 *
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
import { NEAR_DUPLICATE_MAX_BITS, simhashVersionOf, type ContentRow, type DuplicateVerdict } from '../../lib/dedup';
import { blocks16, hammingDistance } from '../../lib/simhash';

/** The block tables' key: the version above the 16-bit block. */
const blockKey = (version: number, block: number): number => version * 0x10000 + block;

/**
 * The URLs under one key of a host's index: one URL as itself (nearly every key holds one), more
 * in a Set (insertion order kept either way).
 */
type Urls = string | Set<string>;

/**
 * One host's rows and its representatives' keys. Both tables of representatives share one Map:
 * SHA-256 keys are strings, SimHash block keys numbers (blockSlot), so they cannot collide.
 * With a Map and a Set per table and key (six Maps and at least five Sets a host) parse held
 * about 2.2 KB a host: 36 MiB at 120 s of `crawl run` with 2 million seeds over 100,000 hosts
 * (docs/frontier-store.md, "The peak of crawl run, again").
 */
interface HostIndex {
  rows: Map<string, ContentRow>;
  reps: Map<string | number, Urls>;
}

/** The key of block `i` (0-3) of a fingerprint of `version` in HostIndex.reps. */
const blockSlot = (version: number, block: number, i: number): number => blockKey(version, block) * 4 + i;

function addTo(m: Map<string | number, Urls>, k: string | number, url: string): void {
  const had = m.get(k);
  if (had === undefined) m.set(k, url);
  else if (typeof had !== 'string') had.add(url);
  else if (had !== url) m.set(k, new Set([had, url]));
}

function removeFrom(m: Map<string | number, Urls>, k: string | number, url: string): void {
  const had = m.get(k);
  if (had === undefined) return;
  if (typeof had === 'string') {
    if (had === url) m.delete(k);
    return;
  }
  had.delete(url);
  if (had.size === 1) m.set(k, had.values().next().value!);
}

const NONE: readonly string[] = [];
const urlsOf = (u: Urls | undefined): Iterable<string> => (u === undefined ? NONE : typeof u === 'string' ? [u] : u);

export class HeapDedupIndex {
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
    for (const other of urlsOf(h.reps.get(sha256))) if (other !== url) return { kind: 'exact', of: other, distance: 0 };
    if (!simhash) return null;
    let best: DuplicateVerdict | null = null;
    blocks16(simhash).forEach((b, i) => {
      for (const other of urlsOf(h.reps.get(blockSlot(version, b, i)))) {
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
    if (!h) this.hosts.set(row.host, (h = { rows: new Map(), reps: new Map() }));
    h.rows.set(row.url, row);
    if (row.duplicate_of !== null) return;
    addTo(h.reps, row.sha256, row.url);
    if (row.simhash64) blocks16(row.simhash64).forEach((b, i) => addTo(h!.reps, blockSlot(simhashVersionOf(row), b, i), row.url));
  }

  apply(key: string, value: ContentRow | null): void {
    if (value) this.record(value);
    else {
      try {
        this.forget(key, new URL(key).hostname.toLowerCase());
      } catch {
        // a key that is no URL was never recorded
      }
    }
  }

  /** Drop a URL (a tombstone in crawl.content). */
  forget(url: string, host: string): void {
    const h = this.hosts.get(host);
    const old = h?.rows.get(url);
    if (!h || !old) return;
    h.rows.delete(url);
    if (old.duplicate_of === null) {
      removeFrom(h.reps, old.sha256, url);
      if (old.simhash64) blocks16(old.simhash64).forEach((b, i) => removeFrom(h.reps, blockSlot(simhashVersionOf(old), b, i), url));
    }
    if (h.rows.size === 0) this.hosts.delete(host);
  }

  /** Forget hosts this instance no longer owns (after a rebalance). */
  retain(owns: (host: string) => boolean): void {
    for (const host of this.hosts.keys()) if (!owns(host)) this.hosts.delete(host);
  }
}
