/**
 * The frontier's URL table as it was kept in memory before the table moved to disk
 * (processors/frontier-store.ts): one row per URL, queued rows in typed-array columns. Kept as
 * the reference model of the store's property test (test/unit/frontier-store.test.ts): the
 * same operations must read back the same rows from both.
 */
import type { UrlStateMsg } from '../../lib/messages';

/** Bits of a compact row's `flags`. */
const HAS_PRIORITY = 1;
const PRIORITY_NULL = 2;
const HAS_REDIRECTS = 4;
/** Bits 3-4: the priority class (1-3), 0 when the row has none. */
const CLASS_SHIFT = 3;
const CLASS_MASK = 3 << CLASS_SHIFT;

/** The keys a fresh QUEUED row has besides the optional `redirects` and `priority`. */
const BASE_KEYS = 19;

/** Whether `row` says nothing a compact row cannot: the common, freshly queued row. */
function isPlainQueued(row: UrlStateMsg): boolean {
  if (
    row.state !== 'QUEUED' || row.attempts !== 0 || row.lease_id !== null || row.lease_expires_at !== null || row.next_due_at !== null ||
    row.fetched_at !== null || row.http_status !== null || row.sha256 !== null || row.etag !== null || row.last_modified !== null ||
    row.warc_uri !== null || row.warc_offset !== null || row.warc_length !== null || row.reason !== null ||
    typeof row.discovered_at !== 'number' || typeof row.updated_at !== 'number' || typeof row.depth !== 'number' || typeof row.host !== 'string'
  ) {
    return false;
  }
  // Exactly the known keys: a row carrying anything else is kept whole.
  let keys = 0;
  for (const k in row) if (Object.prototype.hasOwnProperty.call(row, k)) keys++;
  const optional = ('redirects' in row ? 1 : 0) + ('priority' in row ? 1 : 0) + ('priority_class' in row ? 1 : 0);
  if (keys !== BASE_KEYS + optional) return false;
  if ('redirects' in row && (typeof row.redirects !== 'number' || !Number.isInteger(row.redirects))) return false;
  if ('priority_class' in row && row.priority_class !== 1 && row.priority_class !== 2 && row.priority_class !== 3) return false;
  return !('priority' in row) || row.priority === null || typeof row.priority === 'number';
}

const START_ROWS = 1024;

/**
 * Compact rows, column by column in typed arrays indexed by a row id: no object per row for
 * the garbage collector to visit (a full collection marks every live object, and the queued
 * URLs are most of them), and every number stored exactly as a double. Ids of deleted rows are
 * reused.
 */
class CompactRows {
  host = new Int32Array(START_ROWS);
  depth = new Float64Array(START_ROWS);
  discovered = new Float64Array(START_ROWS);
  updated = new Float64Array(START_ROWS);
  priority = new Float64Array(START_ROWS);
  redirects = new Float64Array(START_ROWS);
  flags = new Uint8Array(START_ROWS);
  private used = 0;
  private readonly free: number[] = [];

  alloc(): number {
    const id = this.free.pop();
    if (id !== undefined) return id;
    if (this.used === this.flags.length) this.grow();
    return this.used++;
  }

  release(id: number): void {
    this.free.push(id);
  }

  private grow(): void {
    const n = this.flags.length * 2;
    /** A column twice as long, of the same type, starting with the old one's values. */
    const widen = <T extends Int32Array | Float64Array | Uint8Array>(a: T): T => {
      const b = new (a.constructor as new (length: number) => T)(n);
      b.set(a);
      return b;
    };
    this.host = widen(this.host);
    this.depth = widen(this.depth);
    this.discovered = widen(this.discovered);
    this.updated = widen(this.updated);
    this.priority = widen(this.priority);
    this.redirects = widen(this.redirects);
    this.flags = widen(this.flags);
  }
}

export class UrlTable {
  /** A full row, or the id of a compact one. */
  private readonly rows = new Map<string, UrlStateMsg | number>();
  private readonly compact = new CompactRows();
  /** Host names of compact rows, each stored once. */
  private readonly hostNames: string[] = [];
  private readonly hostIds = new Map<string, number>();

  get size(): number {
    return this.rows.size;
  }

  has(url: string): boolean {
    return this.rows.has(url);
  }

  /** The row, as written (a fresh object for a compact row: change it through set()). */
  get(url: string): UrlStateMsg | undefined {
    const s = this.rows.get(url);
    return typeof s === 'number' ? this.inflate(url, s) : s;
  }

  host(url: string): string | undefined {
    const s = this.rows.get(url);
    return s === undefined ? undefined : this.hostOf(s);
  }

  /**
   * Store `row` under its URL. `sharedHost`, when given, is a string equal to row.host that the
   * caller keeps anyway (the host's own name): compact rows refer to it rather than to a copy.
   */
  set(row: UrlStateMsg, sharedHost?: string): void {
    const old = this.rows.get(row.url);
    if (!isPlainQueued(row)) {
      if (typeof old === 'number') this.compact.release(old);
      this.rows.set(row.url, row);
      return;
    }
    const c = this.compact;
    const id = typeof old === 'number' ? old : c.alloc();
    c.host[id] = this.hostId(sharedHost === row.host ? sharedHost : row.host);
    c.depth[id] = row.depth;
    c.discovered[id] = row.discovered_at;
    c.updated[id] = row.updated_at;
    let flags = 0;
    if ('priority' in row) {
      flags |= HAS_PRIORITY;
      if (row.priority === null) flags |= PRIORITY_NULL;
      else c.priority[id] = row.priority!;
    }
    if ('redirects' in row) {
      flags |= HAS_REDIRECTS;
      c.redirects[id] = row.redirects!;
    }
    if ('priority_class' in row) flags |= row.priority_class! << CLASS_SHIFT;
    c.flags[id] = flags;
    if (old !== id) this.rows.set(row.url, id);
  }

  delete(url: string): void {
    const old = this.rows.get(url);
    if (typeof old === 'number') this.compact.release(old);
    this.rows.delete(url);
  }

  /** Every URL with its host, in insertion order. */
  *hosts(): IterableIterator<[url: string, host: string]> {
    for (const [url, s] of this.rows) yield [url, this.hostOf(s)];
  }

  private hostOf(s: UrlStateMsg | number): string {
    return typeof s === 'number' ? this.hostNames[this.compact.host[s]] : s.host;
  }

  private hostId(host: string): number {
    let id = this.hostIds.get(host);
    if (id === undefined) {
      id = this.hostNames.length;
      this.hostNames.push(host);
      this.hostIds.set(host, id);
    }
    return id;
  }

  private inflate(url: string, id: number): UrlStateMsg {
    const c = this.compact;
    const row: UrlStateMsg = {
      url, host: this.hostNames[c.host[id]], state: 'QUEUED', depth: c.depth[id], discovered_at: c.discovered[id], updated_at: c.updated[id],
      lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
      sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
    };
    const flags = c.flags[id];
    if (flags & HAS_REDIRECTS) row.redirects = c.redirects[id];
    if (flags & HAS_PRIORITY) row.priority = flags & PRIORITY_NULL ? null : c.priority[id];
    if (flags & CLASS_MASK) row.priority_class = (flags & CLASS_MASK) >> CLASS_SHIFT;
    return row;
  }
}
