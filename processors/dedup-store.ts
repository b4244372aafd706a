/**
 * parse's duplicate table on disk (docs/dedup-store.md): one LevelDB database per owned
 * partition (connectors/kv-store.ts, as the frontier's URL table), a materialised copy of
 * crawl.content (the journal's in `crawl run`), checkpointed and restored the frontier's way
 * (processors/frontier-restore.ts: its checkpoint file, written after a synchronous write):
 *
 * - store and checkpoint agree: only the changelog's tail after the checkpoint is replayed;
 * - store missing or unreadable, checkpoint missing, damaged, naming another store or past the
 *   changelog's end, or another layout: the store is deleted and rebuilt from the whole
 *   changelog, each record applied in offset order as a live decision records it, so every list
 *   holds its URLs in the order the live parse wrote them.
 *
 * Reads are synchronous (KvStore.getSync): a decision reads its few keys and writes in one go on
 * the stage's thread, as it did in the heap, so decisions made at once never miss each other.
 * Writes go to LevelDB in batches after the turn that made them (one batch in flight) and are
 * read from `pending` until written.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { KvStore, MIN_OPEN_TABLES, type KvStoreOptions } from '../connectors/kv-store';
import { avroReader } from '../lib/avro';
import { metaKey, type DedupIndex, type DedupTable } from '../lib/dedup';
import type { ContentMsg } from '../lib/messages';
import type { ChangelogSource } from '../runtime/changelog';
import { readCheckpoint, writeCheckpoint } from './frontier-restore';

/**
 * The layout of keys and values this release writes (lib/dedup.ts); a store in another is rebuilt.
 * 1: lists as LEB128 lengths and UTF-8 bytes (hand-written); 2: lists as Avro arrays of strings.
 */
export const DEDUP_LAYOUT = 2;

const ID_KEY = metaKey('id');
const LAYOUT_KEY = metaKey('layout');
const ROWS_KEY = metaKey('rows');

/**
 * LevelDB's memory for parse's stores, split over the partitions: 16 MiB of block cache and of
 * memtables in all (the frontier's stores get 48 MiB of each), and 64 open tables a store of
 * files small enough that the table files LevelDB maps (and whose pages it reads stay resident,
 * connectors/kv-store.ts) come to 64 MiB in all at most.
 */
export function dedupStoreBudget(partitions: number): KvStoreOptions {
  const p = Math.max(1, partitions);
  const each = Math.max(2 << 20, Math.floor((16 << 20) / p));
  return { cacheBytes: each, writeBufferBytes: each, openTables: MIN_OPEN_TABLES, fileBytes: Math.max(128 << 10, Math.floor((64 << 20) / MIN_OPEN_TABLES / p)) };
}

/**
 * Values kept from reads (DedupStore.recent): about 1 MiB at 200-byte keys and values.
 * CRAWL_DEDUP_RECENT_READS changes it (0: none), for the benchmark.
 */
export const RECENT_READS = Number(process.env.CRAWL_DEDUP_RECENT_READS ?? 4096);

interface Pending {
  key: Buffer;
  value: Buffer | null;
}

export class DedupStore implements DedupTable {
  /** Writes not yet acknowledged by LevelDB, by key (latin1): what get() answers first. */
  private readonly pending = new Map<string, Pending>();
  /**
   * Values read lately (undefined: absent), at most RECENT_READS: a decision reads each of its
   * keys twice (to check, then to record), and a restore's records read their neighbours'.
   */
  private readonly recent = new Map<string, Buffer | undefined>();
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private rowsDirty = false;
  /** The last background write's failure, thrown by the next sync (a checkpoint then fails). */
  private failed: unknown = null;

  private constructor(
    private readonly kv: KvStore,
    /** A random id written when the store was created: a checkpoint names the store it describes. */
    readonly id: string,
    readonly layout: number,
    public rows: number,
  ) {}

  static async open(dir: string, o: KvStoreOptions = {}): Promise<DedupStore> {
    const kv = await KvStore.open(dir, o);
    const [id, layout, rows] = await kv.getMany([ID_KEY, LAYOUT_KEY, ROWS_KEY]);
    if (id) return new DedupStore(kv, id.toString('utf8'), Number(layout?.toString('utf8') ?? 0), Number(rows?.toString('utf8') ?? 0));
    const storeId = randomUUID();
    const b = kv.batch();
    b.put(ID_KEY, Buffer.from(storeId));
    b.put(LAYOUT_KEY, Buffer.from(String(DEDUP_LAYOUT)));
    await kv.write(b, true);
    return new DedupStore(kv, storeId, DEDUP_LAYOUT, 0);
  }

  get dir(): string {
    return this.kv.dir;
  }

  get(key: Buffer): Buffer | undefined {
    const k = key.toString('latin1');
    const p = this.pending.get(k);
    if (p) return p.value ?? undefined;
    if (this.recent.has(k)) return this.recent.get(k);
    const v = this.kv.getSync(key);
    if (RECENT_READS > 0) {
      if (this.recent.size >= RECENT_READS) this.recent.delete(this.recent.keys().next().value!);
      this.recent.set(k, v);
    }
    return v;
  }

  put(key: Buffer, value: Buffer): void {
    const k = key.toString('latin1');
    this.pending.set(k, { key, value });
    this.recent.delete(k);
    this.schedule();
  }

  del(key: Buffer): void {
    const k = key.toString('latin1');
    this.pending.set(k, { key, value: null });
    this.recent.delete(k);
    this.schedule();
  }

  addRows(delta: number): void {
    this.rows += delta;
    this.rowsDirty = true;
  }

  /** Writes waiting for LevelDB (a bound check for tests and the bench). */
  get unwritten(): number {
    return this.pending.size;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush().catch((err: unknown) => (this.failed = err));
    });
  }

  /** Write what is pending (after any write in flight); resolves once LevelDB has it. */
  flush(): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.pending.size === 0 && !this.rowsDirty) return;
      const b = this.kv.batch();
      const taken = [...this.pending.entries()];
      for (const [, e] of taken) {
        if (e.value) b.put(e.key, e.value);
        else b.del(e.key);
      }
      if (this.rowsDirty) {
        b.put(ROWS_KEY, Buffer.from(String(this.rows)));
        this.rowsDirty = false;
      }
      try {
        await this.kv.write(b);
      } catch (err) {
        this.rowsDirty = true;
        throw err;
      }
      // A key written again meanwhile keeps its newer value for the next batch.
      for (const [k, e] of taken) if (this.pending.get(k) === e) this.pending.delete(k);
    };
    this.chain = this.chain.catch(() => undefined).then(run);
    return this.chain;
  }

  /** Make every write so far durable. */
  async sync(): Promise<void> {
    if (this.failed) {
      const err = this.failed;
      this.failed = null;
      await this.flush().catch(() => undefined);
      throw err;
    }
    await this.flush();
    await this.kv.write(this.kv.batch(), true);
  }

  async diskBytes(): Promise<number> {
    return this.kv.approximateBytes({ gte: Buffer.from([0]), lt: Buffer.from([0xff]) });
  }

  async close(): Promise<void> {
    await this.flush();
    await this.kv.close();
  }
}

/** Make a store durable and record that it holds the changelog up to `offset` (the frontier's checkpoint file). */
export async function checkpointDedup(dir: string, store: DedupStore, offset: number, now = Date.now()): Promise<void> {
  await store.sync();
  // `levels` is the frontier's queue layout; parse's store has none.
  writeCheckpoint(dir, { store: store.id, offset, levels: 0, writtenAt: now });
}

export const dedupStoreDir = (stateDir: string, partition: number): string => join(stateDir, `content-${partition}`);

export interface DedupRestoreOptions {
  stateDir: string;
  log: Logger;
  /** How long to wait for another process (the partition's previous owner) to close the store. */
  lockWaitMs?: number;
  progressMs?: number;
  kv?: KvStoreOptions;
}

export interface DedupRestored {
  partition: number;
  store: DedupStore;
  offset: number;
  rebuilt: boolean;
  /** Changelog records applied. */
  records: number;
}

async function openOrReset(dir: string, o: DedupRestoreOptions): Promise<DedupStore> {
  try {
    return await DedupStore.open(dir, { ...o.kv, lockWaitMs: o.lockWaitMs });
  } catch (err) {
    if (/lock/i.test(String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? ''))) throw err;
    o.log.warn({ err, dir }, 'duplicate store unreadable: rebuilding it from the changelog');
    KvStore.destroy(dir);
    return DedupStore.open(dir, o.kv);
  }
}

const readContent = avroReader('crawl.Content.v1');

/**
 * Bring the stores of `partitions` up to crawl.content's end and attach them to `index`: tail
 * replay where the checkpoint holds, a rebuild elsewhere. One pass over the changelog.
 */
export async function restoreDedupStores(partitions: readonly number[], source: ChangelogSource, index: DedupIndex, o: DedupRestoreOptions): Promise<DedupRestored[]> {
  const started = Date.now();
  const ends = await source.ends(partitions);
  const plans = new Map<number, { store: DedupStore; dir: string; from: number; rebuilt: boolean; records: number; writing: Promise<void> }>();
  for (const p of partitions) {
    const dir = dedupStoreDir(o.stateDir, p);
    let store = await openOrReset(dir, o);
    const cp = readCheckpoint(dir);
    const end = ends.get(p) ?? 0;
    const why =
      cp === null ? 'no checkpoint' : cp.store !== store.id ? 'the checkpoint names another store' : cp.offset > end ? 'the checkpoint is past the changelog end' :
      store.layout !== DEDUP_LAYOUT ? `store layout ${store.layout}, this release writes ${DEDUP_LAYOUT}` : null;
    if (why !== null && (store.rows > 0 || cp !== null)) {
      o.log.info({ partition: p, reason: why }, 'duplicate store out of date: rebuilding it from the changelog');
      await store.close();
      KvStore.destroy(dir);
      store = await DedupStore.open(dir, o.kv);
    }
    index.attach(p, store);
    plans.set(p, { store, dir, from: why === null ? cp!.offset : 0, rebuilt: why !== null, records: 0, writing: Promise.resolve() });
  }
  let applied = 0;
  let lastLog = Date.now();
  await source.read(new Map([...plans].map(([p, pl]) => [p, pl.from])), ends, async (partition, recs) => {
    const pl = plans.get(partition);
    if (!pl) return;
    for (const r of recs) index.apply(r.key, r.value === null ? null : (readContent(r.value) as ContentMsg));
    // This batch's writes go while the next batch is applied; pending stays two batches at most.
    await pl.writing;
    pl.writing = pl.store.flush();
    pl.writing.catch(() => undefined); // awaited with the next batch or at the end
    pl.records += recs.length;
    applied += recs.length;
    if (Date.now() - lastLog >= (o.progressMs ?? 2000)) {
      lastLog = Date.now();
      o.log.info({ records: applied, recordsPerSec: Math.round(applied / Math.max((lastLog - started) / 1000, 0.001)) }, 'duplicate store: reading the changelog');
    }
  });
  const out: DedupRestored[] = [];
  for (const [p, pl] of plans) {
    await pl.writing;
    const end = ends.get(p) ?? 0;
    await checkpointDedup(pl.dir, pl.store, end);
    out.push({ partition: p, store: pl.store, offset: end, rebuilt: pl.rebuilt, records: pl.records });
  }
  const secs = (Date.now() - started) / 1000;
  o.log.info(
    { partitions: out.map((r) => ({ partition: r.partition, records: r.records, rebuilt: r.rebuilt, urls: r.store.rows })), seconds: secs, recordsPerSec: Math.round(applied / Math.max(secs, 0.001)) },
    'duplicate store restored',
  );
  return out;
}
