/**
 * One frontier operation's view of the URL table: the rows it read from the partitions' stores,
 * the changes it staged (rows and their index entries, in one batch per store, written together
 * at its end), the hosts it touched and the emits it is building. A URL changed twice in one
 * operation is staged from its staged row, so the indexes always follow the row as written.
 *
 * Each URL the operation reads or stages is one slot (its row as the operation sees it, and its
 * row key's bytes once made), looked up by URL once: the intake (FrontierState.onCandidates)
 * carries the slots `slots` gives it through its decisions instead of keying Maps by a URL of
 * 60-120 characters at every step, and the row key made for the read is the one written.
 */
import type { KvBatch } from '../connectors/kv-store';
import type { UrlStateMsg } from '../lib/messages';
import type { HostSummary } from './frontier-keys';
import type { HostState } from './frontier-hosts';
import type { FrontierEmits } from './frontier-state';
import type { UrlStore } from './frontier-store';
import { rowKey } from './frontier-keys';

/** One URL of an operation: its row as the operation sees it (read, then as staged; null: none). */
export interface UrlSlot {
  readonly url: string;
  row: UrlStateMsg | null;
  /** rowKey(url), once made (the store read's, then the write's). */
  key: Buffer | undefined;
  /** Whether this operation staged the row (it is in `changed`). */
  staged: boolean;
}

export class FrontierOp {
  readonly out: FrontierEmits = { rows: [], fetches: [] };
  readonly touched = new Set<HostState>();
  /** Earliest retry or recrawl time staged, per store. */
  readonly dueAt = new Map<UrlStore, number>();
  /** Rows as this operation sees them, by URL (a slot each). */
  private readonly cur = new Map<string, UrlSlot>();
  private readonly batches = new Map<UrlStore, KvBatch>();
  /** Slots staged, in the order first staged. */
  private readonly changed: UrlSlot[] = [];

  constructor(
    private readonly storeFor: (host: string) => UrlStore | undefined,
    /** Rows decided by earlier operations that a store read may not see yet (FrontierState.pending). */
    private readonly pending?: ReadonlyMap<string, { row: UrlStateMsg | null }>,
  ) {}

  batch(store: UrlStore): KvBatch {
    let b = this.batches.get(store);
    if (!b) this.batches.set(store, (b = store.newBatch()));
    return b;
  }

  /** The URL's slot, made (no row) when the operation has none. */
  private slot(url: string): UrlSlot {
    let s = this.cur.get(url);
    if (!s) this.cur.set(url, (s = { url, row: null, key: undefined, staged: false }));
    return s;
  }

  /** Read the rows of these URLs (those not read yet) from their hosts' stores. */
  async load(items: ReadonlyArray<{ url: string; host: string }>): Promise<void> {
    await this.slots(items);
  }

  /**
   * load, returning each item's slot (in the items' order; a URL named twice has one slot):
   * its row is `slot.row` from here on, and `setSlot` stages over it with no lookup by URL.
   */
  async slots(items: ReadonlyArray<{ url: string; host: string }>): Promise<UrlSlot[]> {
    const out = new Array<UrlSlot>(items.length);
    const unread = new Map<UrlStore, UrlSlot[]>();
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      let s = this.cur.get(item.url);
      if (!s) {
        this.cur.set(item.url, (s = { url: item.url, row: null, key: undefined, staged: false }));
        const p = this.pending?.get(item.url);
        if (p) s.row = p.row;
        else {
          const store = this.storeFor(item.host);
          if (store) {
            let list = unread.get(store);
            if (!list) unread.set(store, (list = []));
            list.push(s);
          }
        }
      }
      out[i] = s;
    }
    await Promise.all(
      [...unread].map(async ([store, list]) => {
        const keys = list.map((s) => (s.key ??= rowKey(s.url)));
        const rows = await store.rows(list.map((s) => s.url), keys);
        // A slot staged while its read was out keeps what was staged.
        list.forEach((s, i) => {
          if (!s.staged) s.row = rows[i] ?? null;
        });
      }),
    );
    return out;
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
    return this.cur.get(url)?.row ?? undefined;
  }

  /** Whether this operation has read or staged the URL's row. */
  has(url: string): boolean {
    return this.cur.has(url);
  }

  /** Whether the table holds the URL (read or staged by this operation). */
  known(url: string): boolean {
    return !!this.cur.get(url)?.row;
  }

  /** A row read by other means (a sweep) becomes this operation's view of it. */
  seed(row: UrlStateMsg): void {
    if (!this.cur.has(row.url)) this.cur.set(row.url, { url: row.url, row, key: undefined, staged: false });
  }

  /** The slots of rows this operation staged (row null: removed), as they will be once written. */
  staged(): readonly UrlSlot[] {
    return this.changed;
  }

  /** Stage a row (new or changed) with its index entries. */
  set(next: UrlStateMsg): void {
    this.setSlot(this.slot(next.url), next);
  }

  /** set, for a URL whose slot the caller holds (`slots`); next.url is slot.url. */
  setSlot(slot: UrlSlot, next: UrlStateMsg): void {
    const store = this.storeFor(next.host);
    if (!store) throw new Error(`no store holds ${next.host}`);
    store.stage(this.batch(store), slot.row ?? undefined, next, undefined, (slot.key ??= rowKey(slot.url)));
    slot.row = next;
    this.markStaged(slot);
    if ((next.state === 'FAILED' || next.state === 'FETCHED') && next.next_due_at !== null) {
      this.dueAt.set(store, Math.min(this.dueAt.get(store) ?? Infinity, next.next_due_at));
    }
  }

  private markStaged(slot: UrlSlot): void {
    if (slot.staged) return;
    slot.staged = true;
    this.changed.push(slot);
  }

  /** Stage a row's removal with its index entry. */
  remove(row: UrlStateMsg): void {
    const store = this.storeFor(row.host);
    if (!store) return;
    const slot = this.slot(row.url);
    store.stage(this.batch(store), slot.row ?? row, null, undefined, (slot.key ??= rowKey(slot.url)));
    slot.row = null;
    this.markStaged(slot);
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
