/**
 * One frontier operation's view of the URL table: the rows it read from the partitions' stores,
 * the changes it staged (rows and their index entries, in one batch per store, written together
 * at its end), the hosts it touched and the emits it is building. A URL changed twice in one
 * operation is staged from its staged row, so the indexes always follow the row as written.
 */
import type { KvBatch } from '../connectors/kv-store';
import type { UrlStateMsg } from '../lib/messages';
import type { HostSummary } from './frontier-keys';
import type { HostState } from './frontier-hosts';
import type { FrontierEmits } from './frontier-state';
import type { UrlStore } from './frontier-store';

export class FrontierOp {
  readonly out: FrontierEmits = { rows: [], fetches: [] };
  readonly touched = new Set<HostState>();
  /** Earliest retry or recrawl time staged, per store. */
  readonly dueAt = new Map<UrlStore, number>();
  /** Rows as this operation sees them: read, then as staged (null: removed). */
  private readonly cur = new Map<string, UrlStateMsg | null>();
  private readonly batches = new Map<UrlStore, KvBatch>();
  private readonly changed = new Set<string>();

  constructor(
    private readonly storeFor: (host: string) => UrlStore | undefined,
    /**
     * A row decided by earlier operations that a store read may not see yet (FrontierState's
     * pending operations): the row (null: removed), or undefined when none of them staged it.
     */
    private readonly pending?: (url: string) => UrlStateMsg | null | undefined,
  ) {}

  batch(store: UrlStore): KvBatch {
    let b = this.batches.get(store);
    if (!b) this.batches.set(store, (b = store.newBatch()));
    return b;
  }

  /** Read the rows of these URLs (those not read yet) from their hosts' stores. */
  async load(items: ReadonlyArray<{ url: string; host: string }>): Promise<void> {
    const unread: Array<{ url: string; host: string }> = [];
    for (const item of items) {
      if (this.cur.has(item.url)) continue;
      const p = this.pending?.(item.url);
      this.cur.set(item.url, p ?? null);
      if (p === undefined) unread.push(item);
    }
    await Promise.all(
      [...this.byStore(unread, (i) => i.host)].map(async ([store, list]) => {
        const rows = await store.rows(list.map((i) => i.url));
        list.forEach((item, i) => this.cur.set(item.url, rows[i] ?? null));
      }),
    );
  }

  /** Items grouped by the store that holds their host (items of hosts no owned store holds left out). */
  private byStore<T>(items: Iterable<T>, hostOf: (t: T) => string): Map<UrlStore, T[]> {
    const out = new Map<UrlStore, T[]>();
    for (const item of items) {
      const store = this.storeFor(hostOf(item));
      if (!store) continue;
      let list = out.get(store);
      if (!list) out.set(store, (list = []));
      list.push(item);
    }
    return out;
  }

  /** Summaries of hosts not in memory, from their stores. */
  async summaries(hosts: readonly string[]): Promise<Map<string, HostSummary>> {
    const out = new Map<string, HostSummary>();
    await Promise.all(
      [...this.byStore(hosts, (h) => h)].map(async ([store, list]) => {
        const got = await store.hostSummaries(list);
        list.forEach((h, i) => got[i] && out.set(h, got[i]!));
      }),
    );
    return out;
  }

  /** A row as this operation sees it (undefined: not in the table, or not read). */
  current(url: string): UrlStateMsg | undefined {
    return this.cur.get(url) ?? undefined;
  }

  /** Whether this operation has read or staged the URL's row. */
  has(url: string): boolean {
    return this.cur.has(url);
  }

  /** Whether the table holds the URL (read or staged by this operation). */
  known(url: string): boolean {
    return !!this.cur.get(url);
  }

  /** A row read by other means (a sweep) becomes this operation's view of it. */
  seed(row: UrlStateMsg): void {
    if (!this.cur.has(row.url)) this.cur.set(row.url, row);
  }

  /** The URL's row as this operation staged it (null: removed), or undefined when it staged none. */
  stagedRow(url: string): UrlStateMsg | null | undefined {
    return this.changed.has(url) ? (this.cur.get(url) ?? null) : undefined;
  }

  /** Stage a row (new or changed) with its index entries. */
  set(next: UrlStateMsg): void {
    const store = this.storeFor(next.host);
    if (!store) throw new Error(`no store holds ${next.host}`);
    store.stage(this.batch(store), this.current(next.url), next);
    this.cur.set(next.url, next);
    this.changed.add(next.url);
    if ((next.state === 'FAILED' || next.state === 'FETCHED') && next.next_due_at !== null) {
      this.dueAt.set(store, Math.min(this.dueAt.get(store) ?? Infinity, next.next_due_at));
    }
  }

  /** Stage a row's removal with its index entry. */
  remove(row: UrlStateMsg): void {
    const store = this.storeFor(row.host);
    if (!store) return;
    store.stage(this.batch(store), this.current(row.url) ?? row, null);
    this.cur.set(row.url, null);
    this.changed.add(row.url);
  }

  /** An index entry that no longer matches its row (it moved on, or is gone): delete it. */
  dropEntry(store: UrlStore, key: Buffer): void {
    this.batch(store).del(key);
  }

  touch(h: HostState): void {
    this.touched.add(h);
  }

  /**
   * Close every batch staged and not written (the operation failed): each store's database holds
   * an open batch, and its native memory, until the batch is closed.
   */
  async discard(): Promise<void> {
    const batches = [...this.batches.values()];
    this.batches.clear();
    await Promise.all(batches.map((b) => b.discard()));
  }

  /** Write every store's batch staged so far (later reads of the stores see it). */
  async write(): Promise<void> {
    const batches = [...this.batches];
    this.batches.clear();
    await Promise.all(batches.map(([store, b]) => store.write(b)));
  }
}
