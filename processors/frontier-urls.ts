/**
 * The frontier's URL table: one row per URL it knows, the exact "seen" truth. Most rows of a
 * growing crawl are URLs discovered and not yet fetched (25 links a page, one fetch), and such a
 * row says little beyond its URL: QUEUED, never tried, every fetch field null. Those rows are
 * kept as a small object that shares the host's name and holds times relative to a base, and
 * become a full UrlStateMsg again when read; every other row is kept as it is.
 *
 * `node --expose-gc dist/bench/frontier-memory.js` measured 270 heap bytes per queued URL, its
 * URL string and map entry included, against 459 for a whole row plus the importance Map the
 * frontier kept before (the same priority, now read from the row).
 */
import type { UrlStateMsg } from '../lib/messages';

/**
 * Times are stored as `t - TIME_BASE`: within about 24 days of the base the difference is a
 * small integer, which V8 keeps in the object itself instead of in a separate heap number.
 * Outside that range the value is still exact (integers), only stored less compactly.
 */
const TIME_BASE = Date.now();

/** A row as onCandidate writes it: QUEUED, attempts 0, no lease, never fetched, no reason. */
class QueuedRow {
  constructor(
    readonly host: string,
    readonly depth: number,
    readonly discovered: number,
    readonly updated: number,
    /** undefined: the row has no `priority` key; otherwise that key's value. */
    readonly priority: number | null | undefined,
    /** undefined: the row has no `redirects` key. */
    readonly redirects: number | undefined,
  ) {}
}

type Stored = UrlStateMsg | QueuedRow;

/** The keys a fresh QUEUED row has besides the optional `redirects` and `priority`. */
const BASE_KEYS = 19;

/** Whether `row` says nothing a QueuedRow cannot: the common, freshly queued row. */
function isPlainQueued(row: UrlStateMsg): boolean {
  if (
    row.state !== 'QUEUED' || row.attempts !== 0 || row.lease_id !== null || row.lease_expires_at !== null || row.next_due_at !== null ||
    row.fetched_at !== null || row.http_status !== null || row.sha256 !== null || row.etag !== null || row.last_modified !== null ||
    row.warc_uri !== null || row.warc_offset !== null || row.warc_length !== null || row.reason !== null ||
    !Number.isSafeInteger(row.discovered_at) || !Number.isSafeInteger(row.updated_at)
  ) {
    return false;
  }
  // Exactly the known keys: a row carrying anything else is kept whole.
  let keys = 0;
  for (const k in row) if (Object.prototype.hasOwnProperty.call(row, k)) keys++;
  const optional = ('redirects' in row ? 1 : 0) + ('priority' in row ? 1 : 0);
  return keys === BASE_KEYS + optional && (row.redirects === undefined || Number.isInteger(row.redirects));
}

function inflate(url: string, q: QueuedRow): UrlStateMsg {
  const row: UrlStateMsg = {
    url, host: q.host, state: 'QUEUED', depth: q.depth, discovered_at: q.discovered + TIME_BASE, updated_at: q.updated + TIME_BASE,
    lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
    sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
  };
  if (q.redirects !== undefined) row.redirects = q.redirects;
  if (q.priority !== undefined) row.priority = q.priority;
  return row;
}

export class UrlTable {
  private readonly rows = new Map<string, Stored>();

  get size(): number {
    return this.rows.size;
  }

  has(url: string): boolean {
    return this.rows.has(url);
  }

  /** The row, as written (a fresh object for a compact row: change it through set()). */
  get(url: string): UrlStateMsg | undefined {
    const s = this.rows.get(url);
    return s instanceof QueuedRow ? inflate(url, s) : s;
  }

  host(url: string): string | undefined {
    return this.rows.get(url)?.host;
  }

  /**
   * Store `row` under its URL. `sharedHost`, when given, is a string equal to row.host that the
   * caller keeps anyway (the host's own name): compact rows point at it rather than at a copy.
   */
  set(row: UrlStateMsg, sharedHost?: string): void {
    if (!isPlainQueued(row)) {
      this.rows.set(row.url, row);
      return;
    }
    const host = sharedHost === row.host ? sharedHost : row.host;
    const priority = 'priority' in row ? row.priority : undefined;
    const redirects = 'redirects' in row ? row.redirects : undefined;
    this.rows.set(row.url, new QueuedRow(host, row.depth, row.discovered_at - TIME_BASE, row.updated_at - TIME_BASE, priority, redirects));
  }

  delete(url: string): void {
    this.rows.delete(url);
  }

  /** Every URL with its host, in insertion order. */
  *hosts(): IterableIterator<[url: string, host: string]> {
    for (const [url, s] of this.rows) yield [url, s.host];
  }
}
