/**
 * RocksDB as the store's engine, for the store thread's measurement only (docs/frontier-store.md,
 * "A worker thread owning the stores"): CRAWL_STORE_ENGINE=rocksdb with CRAWL_STORE_THREAD=worker,
 * through @nxtedition/rocksdb 12.2.12, which is NOT a dependency of this package (it is loaded
 * from NODE_PATH when present). The options are branch i45store's (1c82b90): universal
 * compaction, uncompressed, three background jobs, memtables of `writeBufferBytes`, index and
 * filter blocks in a cache of `cacheBytes`. A batch's write and a short range's read
 * (`querySync`) run on the calling thread in this binding: here that is the store thread.
 * No engine check on open (a LevelDB store is not refused), no flushMemtable.
 */
import type { KvBatch, KvRange, KvStore, KvStoreOptions } from './kv-store';

interface RocksLevelLike {
  open(options: Record<string, unknown>): Promise<void>;
  getMany(keys: Buffer[]): Promise<Array<Buffer | undefined>>;
  batch(): RocksNativeBatch;
  querySync(options: Record<string, unknown>): { rows: Array<Buffer | undefined>; finished: boolean };
  iterator(options: Record<string, unknown>): { nextv(n: number): Promise<Array<[Buffer, Buffer]>>; close(): Promise<void> };
  getProperty(name: string): string;
  close(): Promise<void>;
}
interface RocksNativeBatch {
  put(key: Buffer, value: Buffer): unknown;
  del(key: Buffer): unknown;
  write(options: { sync: boolean }): Promise<void>;
  close(): Promise<void>;
}

const QUERY_SYNC_MAX = 4096;
const SYNC_KEY = Buffer.from([0]);
const SYNC_VALUE = Buffer.from([0]);

class RocksBatch implements KvBatch {
  private n = 0;
  private done = false;
  constructor(readonly b: RocksNativeBatch) {}
  put(key: Buffer, value: Buffer): void {
    if (key.length === 0 || value.length === 0) throw new Error('KvBatch.put: empty key or value');
    if (this.done) throw new Error('Batch is not open');
    this.b.put(key, value);
    this.n++;
  }
  del(key: Buffer): void {
    if (this.done) throw new Error('Batch is not open');
    this.b.del(key);
    this.n++;
  }
  get size(): number {
    return this.n;
  }
  get closed(): boolean {
    return this.done;
  }
  async discard(): Promise<void> {
    this.done = true;
    await this.b.close();
  }
  commit(sync: boolean): Promise<void> {
    this.done = true;
    return this.b.write({ sync });
  }
}

export class RocksKvStore implements KvStore {
  private constructor(readonly dir: string, private readonly db: RocksLevelLike) {}

  static async open(dir: string, o: KvStoreOptions = {}): Promise<RocksKvStore> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { RocksLevel } = require('@nxtedition/rocksdb') as { RocksLevel: new (dir: string, o: Record<string, unknown>) => RocksLevelLike };
    const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open({
      createIfMissing: true, parallelism: 3, compaction: 'universal', compression: false, memtableMemoryBudget: 4 * (o.writeBufferBytes ?? 16 << 20),
      cacheSize: o.cacheBytes ?? 16 << 20, cacheIndexAndFilterBlocks: true, walCompression: false,
    });
    return new RocksKvStore(dir, db);
  }

  getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    return keys.length ? this.db.getMany(keys as Buffer[]) : Promise.resolve([]);
  }
  async get(key: Buffer): Promise<Buffer | undefined> {
    return (await this.db.getMany([key]))[0];
  }
  getSync(): Buffer | undefined {
    throw new Error('RocksKvStore.getSync: not supported');
  }
  batch(): RocksBatch {
    return new RocksBatch(this.db.batch());
  }
  async write(batch: KvBatch, durable = false): Promise<void> {
    if (!(batch instanceof RocksBatch)) throw new Error('RocksKvStore.write: a batch of another store');
    if (batch.size === 0 && !durable) return batch.discard();
    if (batch.size === 0) batch.put(SYNC_KEY, SYNC_VALUE);
    await batch.commit(durable);
  }
  private short(r: KvRange): boolean {
    return r.limit !== undefined && r.limit >= 0 && r.limit <= QUERY_SYNC_MAX;
  }
  private async all(r: KvRange): Promise<Array<[Buffer, Buffer]>> {
    const it = this.iterator(r);
    const out: Array<[Buffer, Buffer]> = [];
    try {
      for (;;) {
        const c = await it.nextv(1024);
        if (c.length === 0) return out;
        for (const e of c) out.push(e);
      }
    } finally {
      await it.close();
    }
  }
  async entries(r: KvRange): Promise<Array<[Buffer, Buffer]>> {
    if (!this.short(r)) return this.all(r);
    const rows = this.db.querySync({ gte: r.gte, lt: r.lt, limit: r.limit ?? -1, keyEncoding: 'buffer', valueEncoding: 'buffer' }).rows;
    const out: Array<[Buffer, Buffer]> = [];
    for (let i = 0; i < rows.length; i += 2) out.push([rows[i]!, rows[i + 1]!]);
    return out;
  }
  async keys(r: KvRange): Promise<Buffer[]> {
    if (!this.short(r)) return (await this.all(r)).map((e) => e[0]);
    const rows = this.db.querySync({ gte: r.gte, lt: r.lt, limit: r.limit ?? -1, values: false, keyEncoding: 'buffer' }).rows;
    const out: Buffer[] = [];
    for (let i = 0; i < rows.length; i += 2) out.push(rows[i]!);
    return out;
  }
  iterator(r: KvRange): { nextv(n: number): Promise<Array<[Buffer, Buffer]>>; close(): Promise<void> } {
    return this.db.iterator({ gte: r.gte, lt: r.lt, limit: r.limit ?? -1, keyEncoding: 'buffer', valueEncoding: 'buffer' });
  }
  async scan(range: KvRange, chunk: number, onChunk: (entries: Array<[Buffer, Buffer]>) => Promise<void> | void): Promise<number> {
    const { readAhead } = await import('./kv-read-ahead');
    return readAhead(this.iterator(range), chunk, onChunk);
  }
  async scanUtf8Keys(range: KvRange, chunk: number, onChunk: (entries: Array<[string, Buffer]>) => Promise<void> | void): Promise<number> {
    return this.scan(range, chunk, (es) => onChunk(es.map(([k, v]) => [k.toString('utf8'), v])));
  }
  async flushMemtable(): Promise<void> {}
  async approximateBytes(): Promise<number> {
    return Number(this.db.getProperty('rocksdb.total-sst-files-size'));
  }
  close(): Promise<void> {
    return this.db.close();
  }
}
