/**
 * The local key-value store behind the frontier's URL table (docs/frontier-store.md): one
 * LevelDB database per owned partition, through classic-level (the Level project's binding;
 * prebuilt binaries ship inside its npm package). Keys and values are bytes; everything the
 * frontier knows about keys and rows lives in processors/frontier-store.ts, so this file is the
 * only one that names the library.
 *
 * Writes are asynchronous (LevelDB's log goes to the OS, not to the disk); `write(batch, true)`
 * is a synchronous write that makes every earlier write durable too, which is what a checkpoint
 * needs before it claims the store holds a changelog offset.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { ClassicLevel } from 'classic-level';

export interface KvRange {
  /** Inclusive lower bound. */
  gte: Buffer;
  /** Exclusive upper bound. */
  lt: Buffer;
  limit?: number;
}

/**
 * Puts and deletes applied together (atomically) by KvStore.write. Each goes to the native
 * batch as it is added: LevelDB's array form of batch() cost 13-16 µs an operation here in
 * abstract-level's checks and copies, the chained form 3-5 µs (2,000 puts of 80-byte keys).
 *
 * Keys and values must not be empty: classic-level 3.0.0 copies each key and value into a
 * `new char[size]` and frees the copy only when it is not empty (binding.cc `ToSlice` /
 * `DisposeSliceBuffer`), so every empty one leaks its allocation (8 bytes with jemalloc: 8.0
 * bytes a put measured), for good. A put or delete of one throws instead.
 */
export class KvBatch {
  private n = 0;

  constructor(private readonly batch: ReturnType<ClassicLevel<Buffer, Buffer>['batch']>) {}

  put(key: Buffer, value: Buffer): void {
    if (key.length === 0 || value.length === 0) throw new Error(`KvBatch.put: empty ${key.length === 0 ? 'key' : 'value'} (classic-level leaks its copy of one)`);
    this.batch.put(key, value);
    this.n++;
  }

  del(key: Buffer): void {
    if (key.length === 0) throw new Error('KvBatch.del: empty key (classic-level leaks its copy of one)');
    this.batch.del(key);
    this.n++;
  }

  private done = false;

  get size(): number {
    return this.n;
  }

  /** Whether the batch was written or discarded (closed either way: no longer held by its database). */
  get closed(): boolean {
    return this.done;
  }

  /** @internal KvStore.write */
  commit(sync: boolean): Promise<void> {
    this.done = true;
    return this.batch.write({ sync });
  }

  /** @internal KvStore.write: a batch with nothing to write, closed (detached from its database, which holds every open batch). */
  discard(): Promise<void> {
    this.done = true;
    return this.batch.close();
  }
}

export interface KvStoreOptions {
  /** LevelDB block cache (bytes). */
  cacheBytes?: number;
  /** LevelDB memtable (bytes); two may exist at once while one is written out. */
  writeBufferBytes?: number;
  /**
   * Table files kept open (LevelDB's table cache; at least 64). On 64-bit Linux LevelDB maps
   * each open table file into memory for reads (up to 1,000 per process), and every page it
   * reads stays in the process's resident set until the file is closed: open tables times
   * `fileBytes` bounds that part of RSS. Default 990 (LevelDB's own).
   */
  openTables?: number;
  /** Bytes of a table file LevelDB writes before starting the next (default 32 MiB). */
  fileBytes?: number;
  /**
   * Snappy-compress table blocks (LevelDB's default, true). A compressed block read from a
   * mapped table file is decompressed into a malloc'd copy that goes to the block cache (or is
   * pinned by the iterator reading it); an uncompressed one is read in place from the mapping,
   * with no copy (the file's pages are the only memory it takes).
   */
  compression?: boolean;
  /** How long to keep retrying while another process still holds the database's lock. */
  lockWaitMs?: number;
}

/** Files LevelDB keeps open besides its table cache (its log, manifest, ...): maxOpenFiles less these is the table cache. */
const LEVELDB_OTHER_FILES = 10;
/** The smallest table cache LevelDB allows (it raises a smaller maxOpenFiles to 74). */
export const MIN_OPEN_TABLES = 64;

/** Whether an open failed because another process (or handle) holds the database's LOCK. */
function isLockError(err: unknown): boolean {
  const e = err as { code?: string; cause?: { message?: string }; message?: string };
  const text = `${e.message ?? ''} ${e.cause?.message ?? ''}`;
  return /lock/i.test(text) && (e.code === 'LEVEL_DATABASE_NOT_OPEN' || /LOCK|lock hold|Resource temporarily unavailable/.test(text));
}

/**
 * A getMany of more keys is split into this many jobs at most (libuv's pool has 4 threads unless
 * UV_THREADPOOL_SIZE says otherwise), of at least GET_SPLIT_MIN keys each.
 */
const GET_SPLIT = Math.max(1, Math.min(8, Number(process.env.UV_THREADPOOL_SIZE) || 4));
const GET_SPLIT_MIN = 128;

/** A key written by a synchronous write that has nothing else to write (it sorts before every frontier key), and its value. */
const SYNC_KEY = Buffer.from([0]);
const SYNC_VALUE = Buffer.from([0]);

export class KvStore {
  private constructor(readonly dir: string, private readonly db: ClassicLevel<Buffer, Buffer>) {}

  /**
   * Open (creating) the database in `dir`. A database another process still has open (a
   * partition being handed over) is retried until `lockWaitMs`; a damaged one fails with the
   * library's error (the caller rebuilds it from the changelog).
   */
  static async open(dir: string, o: KvStoreOptions = {}): Promise<KvStore> {
    mkdirSync(dir, { recursive: true });
    const deadline = Date.now() + (o.lockWaitMs ?? 0);
    for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      try {
        await db.open({
          createIfMissing: true, cacheSize: o.cacheBytes ?? 16 << 20, writeBufferSize: o.writeBufferBytes ?? 16 << 20,
          maxOpenFiles: o.openTables === undefined ? 1000 : o.openTables + LEVELDB_OTHER_FILES, maxFileSize: o.fileBytes ?? 32 << 20,
          compression: o.compression ?? true,
        });
        return new KvStore(dir, db);
      } catch (err) {
        if (!isLockError(err) || Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  /** Remove a database's files (it must be closed). */
  static destroy(dir: string): void {
    rmSync(dir, { recursive: true, force: true });
  }

  /**
   * Values of `keys` (undefined where absent). A long list is read as up to GET_SPLIT parts at
   * once: one getMany is one job on one of libuv's pool threads, and LevelDB's gets of a
   * single job run one after another, so 2,000 misses in one job took 4x the time of four
   * jobs of 500 while the store was being written (docs/frontier-store.md, Figures). Keys
   * given in key order read faster still (neighbouring keys share index and data blocks).
   */
  async getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    if (keys.length === 0) return [];
    if (keys.length < 2 * GET_SPLIT_MIN) return this.db.getMany(keys as Buffer[]);
    const parts = Math.min(GET_SPLIT, Math.floor(keys.length / GET_SPLIT_MIN));
    const size = Math.ceil(keys.length / parts);
    const got = await Promise.all(Array.from({ length: parts }, (_, i) => this.db.getMany(keys.slice(i * size, (i + 1) * size) as Buffer[])));
    return got.length === 1 ? got[0] : got.flat();
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    return this.db.get(key);
  }

  /**
   * A value read on this thread, blocking it (abstract-level's getSync). Its one caller is parse's
   * duplicate table (processors/dedup-store.ts DedupStore.get, behind lib/dedup.ts's synchronous
   * DedupTable): every page's decision and a restore's replay, not start-up only. A decision reads
   * its keys and writes in one turn, so decisions made back to back never miss each other
   * (docs/dedup-store.md); removing it means an asynchronous DedupTable with decisions serialised.
   * Elsewhere use `get`.
   */
  getSync(key: Buffer): Buffer | undefined {
    return this.db.getSync(key);
  }

  /** A new, empty batch. */
  batch(): KvBatch {
    return new KvBatch(this.db.batch());
  }

  /**
   * Apply a batch atomically; `durable` also waits until it (and all before it) is on disk. The
   * batch is closed either way (an empty one too: the database keeps every open batch).
   */
  async write(batch: KvBatch, durable = false): Promise<void> {
    if (batch.size === 0 && !durable) return batch.discard();
    if (batch.size === 0) batch.put(SYNC_KEY, SYNC_VALUE);
    await batch.commit(durable);
  }

  /** Entries of a range, in key order, at most `limit` (a bounded read: heads, due entries). */
  async entries(range: KvRange): Promise<Array<[Buffer, Buffer]>> {
    return this.db.iterator({ gte: range.gte, lt: range.lt, limit: range.limit ?? -1 }).all();
  }

  async keys(range: KvRange): Promise<Buffer[]> {
    return this.db.keys({ gte: range.gte, lt: range.lt, limit: range.limit ?? -1 }).all();
  }

  /**
   * Every entry of a range in chunks of up to `chunk`, handed to `onChunk` one chunk at a time
   * (rebuilds and sweeps over millions of rows: never more than two chunks in memory). The next
   * chunk is read (on libuv's pool) while `onChunk` works on the last; the iterator reads a
   * snapshot taken when the scan starts, so writes `onChunk` makes are not seen.
   */
  async scan(range: KvRange, chunk: number, onChunk: (entries: Array<[Buffer, Buffer]>) => Promise<void> | void): Promise<number> {
    return readAhead(this.db.iterator({ gte: range.gte, lt: range.lt, limit: range.limit ?? -1 }), chunk, onChunk);
  }

  /**
   * scan, the keys decoded as UTF-8 by the binding: no Buffer (an ArrayBuffer of its own each)
   * per key. A restart reads every host key of its stores (a million at the 50M benchmark's
   * scale); for keys that are text past a tag byte. The range's bounds go through the same
   * encoding (decoded to a string and encoded back), so they must be ASCII.
   */
  async scanUtf8Keys(range: KvRange, chunk: number, onChunk: (entries: Array<[string, Buffer]>) => Promise<void> | void): Promise<number> {
    for (const b of [range.gte, range.lt]) if (b.some((x) => x > 0x7f)) throw new Error('scanUtf8Keys: a range bound is not ASCII');
    const it = this.db.iterator<string, Buffer>({ gte: range.gte as unknown as string, lt: range.lt as unknown as string, limit: range.limit ?? -1, keyEncoding: 'utf8' });
    return readAhead(it, chunk, onChunk);
  }

  /**
   * Write the memtable out as a table now: LevelDB's compactRange always flushes the memtable
   * first, and the range given, [0x00, 0x01), holds SYNC_KEY at most (the frontier's and parse's
   * stores start every key of theirs with a letter), so the compaction after it rewrites one key
   * at most.
   */
  async flushMemtable(): Promise<void> {
    await this.db.compactRange(Buffer.from([0]), Buffer.from([1]));
  }

  /** Bytes on disk LevelDB reports for a key range. */
  async approximateBytes(range: KvRange): Promise<number> {
    return this.db.approximateSize(range.gte, range.lt);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/** An iterator read to its end `chunk` items at a time, the next chunk read while `onChunk` works on the last. */
async function readAhead<T>(it: { nextv(n: number): Promise<T[]>; close(): Promise<void> }, chunk: number, onChunk: (items: T[]) => Promise<void> | void): Promise<number> {
  let n = 0;
  let next: Promise<T[]> | null = it.nextv(chunk);
  try {
    for (;;) {
      const items = await next;
      next = null;
      if (items.length === 0) break;
      n += items.length;
      next = it.nextv(chunk);
      await onChunk(items);
    }
  } finally {
    // A read still in flight (onChunk failed) settles before the iterator closes.
    await next?.catch(() => undefined);
    await it.close();
  }
  return n;
}
