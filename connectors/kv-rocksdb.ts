/**
 * RocksDB as the store's engine (KvStore.open with `engine: 'rocksdb'` or
 * CRAWL_STORE_ENGINE=rocksdb), through @nxtedition/rocksdb (a maintained N-API binding of
 * RocksDB 9.7 with prebuilt binaries in its npm package; docs/frontier-store.md, "Choosing the
 * store" and the RocksDB section of Figures).
 *
 * Why it was tried: LevelDB 1.20 runs one background thread for all the databases of a process,
 * and its compaction CPU a URL capped the frontier's intake; RocksDB's compactions run on a pool
 * shared by every database, and its levels are sized from the last one down (dynamic level
 * bytes), so it rewrites fewer bytes a byte flushed.
 *
 * What this binding does differently from classic-level, and what is done about it:
 *  - A batch's write runs on the calling thread (RocksDB's memtable insert and log append, and
 *    the fsync of a durable write), not on libuv's pool.
 *  - Iterators are created (and seeked) on the calling thread; a bounded range read (heads, due
 *    entries) is one synchronous `querySync` call, which cost a quarter of an iterator's CPU
 *    on this workload; long ranges (scans) go through an iterator read a chunk at a time on the pool.
 *  - No flush or compactRange: flushMemtable is a no-op (RocksDB does not need the rebuild's
 *    rows and index entries in tables apart). approximateBytes is the whole store's table
 *    files (`rocksdb.total-sst-files-size`): every caller asks for the whole store.
 *  - Memory: its own default memtable budget is 256 MiB a database and table index and filter
 *    blocks live outside the block cache (they grow with the table); here each memtable is
 *    `writeBufferBytes` (up to six while flushes run: the binding's `level` preset, which also
 *    leaves levels 0-1 uncompressed and zstd-compresses the rest), and index and filter blocks go
 *    in the block cache of `cacheBytes`. `openTables`, `fileBytes` and `compression` are
 *    LevelDB's and not used here (RocksDB reads table files with pread, not mmap).
 */
import type { KvDb, KvRange, KvStoreOptions, NativeBatch, NativeIterator } from './kv-store';

/** The part of @nxtedition/rocksdb's RocksLevel (abstract-level 1) this file uses; the package has no type declarations. */
interface RocksLevelLike {
  open(options: Record<string, unknown>): Promise<void>;
  getMany(keys: Buffer[]): Promise<Array<Buffer | undefined>>;
  _getManySync(keys: Buffer[], options: Record<string, unknown>): Array<Buffer | undefined>;
  batch(): {
    put(key: Buffer, value: Buffer): unknown;
    del(key: Buffer): unknown;
    write(options: { sync: boolean }): Promise<void>;
    close(): Promise<void>;
  };
  querySync(options: Record<string, unknown>): { rows: Array<Buffer | undefined>; finished: boolean };
  iterator(options: Record<string, unknown>): { nextv(n: number): Promise<Array<[unknown, Buffer]>>; close(): Promise<void> };
  getProperty(name: string): string;
  close(): Promise<void>;
}

/** Background jobs a database may run at once (RocksDB's IncreaseParallelism: its flush and compaction pool is shared by every database of the process). */
export const ROCKSDB_BACKGROUND_JOBS = 3;

/**
 * RocksDB's compaction style (the binding's presets): `level` (levels 0-1 uncompressed, zstd
 * below) or `universal` (sorted runs merged by size, fewer bytes rewritten, up to twice the
 * space; uncompressed here). CRAWL_ROCKSDB_COMPACTION, default `level`.
 */
export function rocksCompaction(): 'level' | 'universal' {
  const c = process.env.CRAWL_ROCKSDB_COMPACTION ?? 'level';
  if (c !== 'level' && c !== 'universal') throw new Error(`CRAWL_ROCKSDB_COMPACTION: ${JSON.stringify(c)} is not level or universal`);
  return c;
}

/** Range reads with at most this many entries are one synchronous call; longer ones go through an iterator on the pool. */
const QUERY_SYNC_MAX = 4096;

export async function openRocksDb(dir: string, o: KvStoreOptions): Promise<KvDb> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { RocksLevel } = require('@nxtedition/rocksdb') as { RocksLevel: new (dir: string, o: Record<string, unknown>) => RocksLevelLike };
  const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open({
    createIfMissing: true,
    parallelism: ROCKSDB_BACKGROUND_JOBS,
    compaction: rocksCompaction(),
    compression: rocksCompaction() === 'level',
    memtableMemoryBudget: 4 * (o.writeBufferBytes ?? 16 << 20),
    cacheSize: o.cacheBytes ?? 16 << 20,
    cacheIndexAndFilterBlocks: true,
    walCompression: false,
  });
  const bounds = (r: KvRange): Record<string, unknown> => ({ gte: r.gte, lt: r.lt, limit: r.limit ?? -1 });
  const short = (r: KvRange): boolean => r.limit !== undefined && r.limit >= 0 && r.limit <= QUERY_SYNC_MAX;
  const iterator = <K>(r: KvRange, keyEncoding: string): NativeIterator<K> => {
    const it = db.iterator({ ...bounds(r), keyEncoding, valueEncoding: 'buffer' });
    return { nextv: (n) => it.nextv(n) as Promise<Array<[K, Buffer]>>, close: () => it.close() };
  };
  const all = async <T>(it: NativeIterator<Buffer>, pick: (e: [Buffer, Buffer]) => T): Promise<T[]> => {
    const out: T[] = [];
    try {
      for (;;) {
        const c = await it.nextv(1024);
        if (c.length === 0) return out;
        for (const e of c) out.push(pick(e));
      }
    } finally {
      await it.close();
    }
  };
  return {
    getMany: (keys) => db.getMany(keys),
    get: async (key) => (await db.getMany([key]))[0],
    getSync: (key) => db._getManySync([key], {})[0],
    batch: (): NativeBatch => {
      const b = db.batch();
      return { put: (k, v) => void b.put(k, v), del: (k) => void b.del(k), write: (sync) => b.write({ sync }), close: () => b.close() };
    },
    entries: async (r) => {
      if (!short(r)) return all(iterator<Buffer>(r, 'buffer'), (e) => e);
      const rows = db.querySync({ ...bounds(r), keyEncoding: 'buffer', valueEncoding: 'buffer' }).rows;
      const out: Array<[Buffer, Buffer]> = [];
      for (let i = 0; i < rows.length; i += 2) out.push([rows[i]!, rows[i + 1]!]);
      return out;
    },
    keys: async (r) => {
      if (!short(r)) return all(iterator<Buffer>(r, 'buffer'), (e) => e[0]);
      const rows = db.querySync({ ...bounds(r), values: false, keyEncoding: 'buffer' }).rows;
      const out: Buffer[] = [];
      for (let i = 0; i < rows.length; i += 2) out.push(rows[i]!);
      return out;
    },
    iterator: (r) => iterator<Buffer>(r, 'buffer'),
    utf8Iterator: (r) => iterator<string>(r, 'utf8'),
    flushMemtable: async () => undefined,
    approximateBytes: async () => Number(db.getProperty('rocksdb.total-sst-files-size')),
    close: () => db.close(),
  };
}
