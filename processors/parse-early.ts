/**
 * Pages analysed before their WARC file is stored (`crawl run`, issue #35).
 *
 * A page reaches crawl.fetched, and so parse, only once the WARC file holding it is stored: the
 * record names the file and offset, and nothing downstream may point at a file that a crash
 * could still lose. Files are stored every 2 s or 500 pages, so parse's workers got the pages a
 * file at a time and then sat idle until the next file (the parse worker's queue was empty in 13
 * of 29 samples of a `crawl run`; docs/performance.md, "43rd edition").
 *
 * Yet the costly part of parse, the per-page analysis (processors/parse.ts analyzePage: charset,
 * the HTML pass, SimHash, language), depends on the page alone, not on where it is stored. So
 * fetch offers each page here as soon as its records are built (its gzip member in memory), the
 * analysis starts on a parse worker at once, and waits here, keyed by the response record's
 * WARC-Record-ID, until the page's crawl.fetched record reaches parse. Everything else stays
 * where it was: the crawl.fetched record, the fetch status that marks the URL fetched, the
 * duplicate decision, crawl.parsed (which names the WARC file) and every offset commit still
 * follow the store. A crash loses only analyses (memory), never a page: the page is fetched again
 * or its record is analysed again when parse reads it.
 *
 * Pure bookkeeping: what starts an analysis and what disposes of one are handed in.
 */

/** What identifies the page an analysis is of: the crawl.fetched record must match it. */
export interface EarlyKey {
  recordId: string;
  url: string;
  sha256: string;
  fetchedAt: number;
}

export interface EarlyOptions<T> {
  /** At most this many analyses kept (started or done, not yet taken); offers beyond are ignored. */
  maxEntries: number;
  /** An analysis not taken this long after its offer is dropped (its page's file was lost, or parse reads elsewhere). */
  maxAgeMs: number;
  now: () => number;
  /** Called on an analysis that was dropped, not taken, once it settles (to give back what it holds). */
  dispose: (value: T) => void;
}

export interface EarlyCounts {
  /** Analyses started early. */
  started: number;
  /** Taken by parse for their page's record. */
  taken: number;
  /** Dropped untaken: too old, their file lost, or cleared at close. */
  dropped: number;
  /** Offers not started: the table full, or the start declined (no room in the workers' queue). */
  skipped: number;
}

interface Entry<T> {
  key: EarlyKey;
  at: number;
  value: Promise<T>;
}

export class EarlyAnalyses<T> {
  private readonly byId = new Map<string, Entry<T>>();
  private closed = false;
  readonly counts: EarlyCounts = { started: 0, taken: 0, dropped: 0, skipped: 0 };

  constructor(private readonly opts: EarlyOptions<T>) {
    if (!(opts.maxEntries > 0) || !(opts.maxAgeMs > 0)) throw new RangeError('EarlyAnalyses: maxEntries and maxAgeMs must be positive');
  }

  /** Analyses kept, not yet taken. */
  get size(): number {
    return this.byId.size;
  }

  /**
   * A page whose records are built: `start` begins its analysis, or returns null to decline
   * (then the page is analysed when parse reads it, as without this table).
   */
  offer(key: EarlyKey, start: () => Promise<T> | null): void {
    if (this.closed) return;
    this.expire();
    if (this.byId.size >= this.opts.maxEntries || this.byId.has(key.recordId)) {
      this.counts.skipped++;
      return;
    }
    let value: Promise<T> | null;
    try {
      value = start();
    } catch {
      value = null;
    }
    if (!value) {
      this.counts.skipped++;
      return;
    }
    // A failure is seen by whoever takes it; untaken, it must not be "unhandled".
    value.catch(() => undefined);
    this.byId.set(key.recordId, { key, at: this.opts.now(), value });
    this.counts.started++;
  }

  /**
   * The analysis offered for this page, if any (removed: taken once). A record id with other
   * fields (another page under the same id) gives null, and that analysis is dropped.
   */
  take(key: EarlyKey): Promise<T> | null {
    const e = this.byId.get(key.recordId);
    if (!e) return null;
    this.byId.delete(key.recordId);
    if (e.key.url !== key.url || e.key.sha256 !== key.sha256 || e.key.fetchedAt !== key.fetchedAt) {
      this.dispose(e);
      return null;
    }
    this.counts.taken++;
    return e.value;
  }

  /** The page will never reach parse (its WARC file was not stored): drop its analysis. */
  drop(recordId: string): void {
    const e = this.byId.get(recordId);
    if (!e) return;
    this.byId.delete(recordId);
    this.dispose(e);
  }

  /** Drop every analysis and take no more offers. */
  close(): void {
    this.closed = true;
    for (const e of this.byId.values()) this.dispose(e);
    this.byId.clear();
  }

  /** Drop analyses older than maxAgeMs (the map is in offer order, so the oldest come first). */
  expire(): void {
    const oldest = this.opts.now() - this.opts.maxAgeMs;
    for (const [id, e] of this.byId) {
      if (e.at > oldest) break;
      this.byId.delete(id);
      this.dispose(e);
    }
  }

  private dispose(e: Entry<T>): void {
    this.counts.dropped++;
    e.value.then(this.opts.dispose, () => undefined);
  }
}
