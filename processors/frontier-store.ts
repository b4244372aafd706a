/**
 * One partition's URL table on disk (docs/frontier-store.md): the rows (one per URL, the exact
 * truth) and the indexes the scheduler reads, in a local key-value store (connectors/kv-store).
 * Keys are laid out in processors/frontier-keys.ts; every index entry follows from its row, so
 * `stage(batch, prev, next)` keeps them right from the old and new row alone. The store also
 * keeps how many rows it holds in each state (for /stats and progress lines), updated with
 * every batch.
 *
 * Rows are stored as the changelog's own value bytes (crawl.UrlState.v1 in Avro) less the URL,
 * their first field, which the row's key already holds (store layout 3): a rebuild still copies a
 * changelog record into the store without decoding it (it skips one length-prefixed string), and
 * a read puts the URL back in front before decoding, so every schema version reads as before.
 */
import { randomUUID } from 'node:crypto';
import { KvStore, type KvBatch, type KvStoreOptions } from '../connectors/kv-store';
import { avroPrimitive, avroReader, avroTailType, avroType } from '../lib/avro';
import type { UrlStateMsg, UrlStatus } from '../lib/messages';
import { ownString } from '../lib/own-string';
import {
  decodeHostSummary, dueOfKey, hashKeyOfHex, dueRange, encodeHostSummary, hostKey, hostOfHostKey, hostQueueRange, hostSlotRange, indexEntry, KEY_DUE, KEY_HOST, KEY_LEASE,
  KEY_QUEUE, KEY_ROW, metaKey, prefixRange, QUEUED_VALUE, queuedAtFront, queueKey, rowAndQueueKeyRoom, rowKey, urlOfQueueKey, urlOfRowKey, writeRowAndQueueKeys,
  type HostSummary, type IndexRef,
} from './frontier-keys';

/**
 * The layout of keys and rows this release writes. A store written with another (or, before
 * layouts were numbered, none: layout 1) is rebuilt from the changelog (frontier-restore.ts).
 *   1  rows as changelog bytes; queue keys end in the whole URL
 *   2  queue keys hold the URL without the `scheme://host` their host part gives (frontier-keys.ts)
 *   3  rows without their URL (storedRow): the changelog's bytes after the first field
 */
export const STORE_LAYOUT = 3;

const ROW_SCHEMA = 'crawl.UrlState.v1';
const rowType = avroType(ROW_SCHEMA);
/** A row's fields after the URL: encodes storedRow(encodeRow(row)) without writing the URL. */
const storedRowType = avroTailType(ROW_SCHEMA, 1);
const readRow = avroReader(ROW_SCHEMA);

export function encodeRow(row: UrlStateMsg): Buffer {
  return rowType.toBuffer(row);
}

/** A row from its changelog bytes (any schema version of crawl.UrlState.v1). */
export function decodeRow(b: Buffer): UrlStateMsg {
  return readRow(b) as UrlStateMsg;
}

/** An Avro string's length prefix (a long: zigzag varint), the first bytes of a row's encoding. */
const lengthType = avroPrimitive('long');

/**
 * A row's changelog bytes as the store keeps them: without the URL, the record's first field (an
 * Avro string: its length, then its UTF-8 bytes). A view, not a copy.
 */
export function storedRow(bytes: Buffer): Buffer {
  const { value: n, offset } = lengthType.decode(bytes, 0) as { value: number; offset: number };
  if (offset < 0 || n < 0 || offset + n > bytes.length) throw new Error('not a UrlState row: bad URL length');
  return bytes.subarray(offset + n);
}

/** A row as the store keeps it: storedRow(encodeRow(row)), encoded without the URL. */
export function encodeStoredRow(row: UrlStateMsg): Buffer {
  return storedRowType.toBuffer(row);
}

/** A row as the store keeps it (storedRow), read back with the URL its row key holds. */
export function decodeStoredRow(key: Buffer, value: Buffer): UrlStateMsg {
  const n = key.length - 1;
  const b = Buffer.allocUnsafe(10 + n + value.length);
  let at = lengthType.encode(n, b, 0);
  at += key.copy(b, at, 1);
  at += value.copy(b, at);
  return decodeRow(b.subarray(0, at));
}

/**
 * The scratch buffer stageQueued writes into (one for the process: staging is synchronous, and
 * a batch copies each key and value at its put: connectors/kv-store.ts KvBatch). Grown for a
 * longer URL or row up to SCRATCH_MAX; a larger row takes the allocating path.
 */
let scratch = Buffer.allocUnsafeSlow(64 << 10);
const SCRATCH_MAX = 1 << 20;

/**
 * A QUEUED row's row key, queue key and stored bytes, as views of the scratch buffer, valid until
 * the next call: rowKey(url), indexEntry's queue key and storedRow(encodeRow(row)) (or of
 * `bytes`, the row's changelog bytes, when given), byte for byte, encoded without a Buffer each
 * (frontier-keys.ts writeRowAndQueueKeys; the row by avsc's encode into the same buffer).
 */
function stageQueued(row: UrlStateMsg, level: number, bytes?: Buffer): { rowKey: Buffer; queueKey: Buffer; value: Buffer } {
  const room = rowAndQueueKeyRoom(row.url, row.host);
  if (room > scratch.length && room <= SCRATCH_MAX) scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(room, 2 * scratch.length)));
  const keys = writeRowAndQueueKeys(scratch, row.host, level, queuedAtFront(row), row.updated_at, row.url);
  if (!keys) {
    const rk = rowKey(row.url);
    return { rowKey: rk, queueKey: queueKey(row.host, level, queuedAtFront(row), row.updated_at, row.url, rk), value: bytes ? storedRow(bytes) : encodeStoredRow(row) };
  }
  const rk = scratch.subarray(0, keys.rowEnd);
  const qk = scratch.subarray(keys.rowEnd, keys.end);
  if (bytes) return { rowKey: rk, queueKey: qk, value: storedRow(bytes) };
  const end = storedRowType.encode(row, scratch, keys.end);
  if (end >= 0) return { rowKey: rk, queueKey: qk, value: scratch.subarray(keys.end, end) };
  // Too long for what is left: the row encoded on its own (and the scratch grown for the next).
  const value = encodeStoredRow(row);
  if (keys.end + value.length <= SCRATCH_MAX) {
    const rkCopy = Buffer.from(rk);
    const qkCopy = Buffer.from(qk);
    scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(keys.end + value.length, 2 * scratch.length)));
    return { rowKey: rkCopy, queueKey: qkCopy, value };
  }
  return { rowKey: rk, queueKey: qk, value };
}

/** A queued URL as its host's queue holds it. */
export interface QueuedRef {
  url: string;
  key: Buffer;
}

export type StateCounts = Partial<Record<UrlStatus, number>>;

const ID_KEY = metaKey('id');
const COUNTS_KEY = metaKey('counts');
const LEVELS_KEY = metaKey('levels');
const LAYOUT_KEY = metaKey('layout');

/** The change each batch makes to the state counts. */
const deltas = new WeakMap<KvBatch, StateCounts>();
const deltaOf = (b: KvBatch): StateCounts => {
  let d = deltas.get(b);
  if (!d) deltas.set(b, (d = {}));
  return d;
};

/**
 * Indexes of `urls` in the order their row keys sort (near enough: UTF-16 order, which is UTF-8
 * byte order outside surrogate pairs; the order only helps the store's reads, never decides).
 */
function inKeyOrder(urls: readonly string[]): number[] {
  const order = Array.from(urls, (_, i) => i);
  if (urls.length > 1) order.sort((a, b) => (urls[a] < urls[b] ? -1 : urls[a] > urls[b] ? 1 : 0));
  return order;
}

export class UrlStore {
  /** Rows by state, as written. */
  readonly counts: StateCounts;

  private constructor(
    private readonly kv: KvStore,
    /** A random id written when the store was created: a checkpoint names the store it describes. */
    readonly id: string,
    private readonly levelOf: (row: UrlStateMsg) => number,
    counts: StateCounts,
    /** The priority levels its queue keys were derived with (null: a new store). */
    readonly levels: number | null,
    /** The layout its keys and rows were written in (STORE_LAYOUT; 1: a store from before layouts were numbered). */
    readonly layout: number,
  ) {
    this.counts = counts;
  }

  static async open(dir: string, levelOf: (row: UrlStateMsg) => number, o: KvStoreOptions = {}): Promise<UrlStore> {
    const kv = await KvStore.open(dir, o);
    const [id, counts, levels, layout] = await kv.getMany([ID_KEY, COUNTS_KEY, LEVELS_KEY, LAYOUT_KEY]);
    let storeId = id?.toString('utf8');
    let storeLayout = layout ? Number(layout.toString('utf8')) : 1;
    if (!storeId) {
      storeId = randomUUID();
      storeLayout = STORE_LAYOUT;
      const b = kv.batch();
      b.put(ID_KEY, Buffer.from(storeId));
      b.put(LAYOUT_KEY, Buffer.from(String(STORE_LAYOUT)));
      await kv.write(b, true);
    }
    const c = counts ? (JSON.parse(counts.toString('utf8')) as StateCounts) : {};
    return new UrlStore(kv, storeId, levelOf, c, levels ? Number(levels.toString('utf8')) : null, storeLayout);
  }

  get dir(): string {
    return this.kv.dir;
  }

  /** Rows in the table. */
  get size(): number {
    let n = 0;
    for (const v of Object.values(this.counts)) n += v ?? 0;
    return n;
  }

  newBatch(): KvBatch {
    return this.kv.batch();
  }

  /** Rows of these URLs (undefined where the table has none), read in key order (KvStore.getMany). */
  async rows(urls: readonly string[]): Promise<Array<UrlStateMsg | undefined>> {
    const order = inKeyOrder(urls);
    const keys = order.map((i) => rowKey(urls[i]));
    const got = await this.kv.getMany(keys);
    const out = new Array<UrlStateMsg | undefined>(urls.length);
    order.forEach((i, k) => (out[i] = got[k] === undefined ? undefined : decodeStoredRow(keys[k], got[k]!)));
    return out;
  }

  async hostSummaries(hosts: readonly string[]): Promise<Array<HostSummary | undefined>> {
    const got = await this.kv.getMany(hosts.map(hostKey));
    return got.map((b) => (b === undefined ? undefined : decodeHostSummary(b)));
  }

  /** The first `limit` URLs of a host's queue, most important first (-1: all). */
  async head(host: string, limit: number): Promise<QueuedRef[]> {
    const keys = await this.kv.keys({ ...hostQueueRange(host), limit });
    return keys.map((key) => ({ url: urlOfQueueKey(key), key }));
  }

  /** The first `limit` URLs of a host's queue in priority class `cls` (its slots: processors/priority-class.ts queueSlot). */
  async classHead(host: string, cls: number, levels: number, limit: number): Promise<QueuedRef[]> {
    const n = Math.max(1, Math.floor(levels));
    const keys = await this.kv.keys({ ...hostSlotRange(host, (cls - 1) * n, cls * n), limit });
    return keys.map((key) => ({ url: urlOfQueueKey(key), key }));
  }

  /** Whether the table holds any row of a host (its URLs sort together under each scheme and port). */
  async hasHost(host: string): Promise<boolean> {
    for (const start of [`http://${host}/`, `http://${host}:`, `https://${host}/`, `https://${host}:`]) {
      if ((await this.kv.keys({ ...prefixRange(rowKey(start)), limit: 1 })).length) return true;
    }
    return false;
  }

  /** The URL whose SHA-256 (hex) this is, from the hash index (`crawl serve`'s copy only). */
  async urlOfHash(hex: string): Promise<string | undefined> {
    return (await this.kv.get(hashKeyOfHex(hex)))?.toString('utf8');
  }

  /** A host's whole queue, in order (`crawl explain`, tests). */
  async queue(host: string): Promise<string[]> {
    return (await this.head(host, -1)).map((r) => r.url);
  }

  /** Rows whose retry or recrawl time is at or before `now`, earliest first. */
  async due(now: number, limit: number): Promise<IndexRef[]> {
    const entries = await this.kv.entries({ ...dueRange(now), limit });
    return entries.map(([key, host]) => ({ url: dueOfKey(key).url, host: host.toString('utf8'), key }));
  }

  /** The earliest retry or recrawl time, or null when none is waiting. */
  async nextDue(): Promise<number | null> {
    const keys = await this.kv.keys({ ...prefixRange(Buffer.from([KEY_DUE])), limit: 1 });
    return keys.length ? dueOfKey(keys[0]).due : null;
  }

  /** Every LEASED row's URL and host. */
  async leased(): Promise<IndexRef[]> {
    const refs: IndexRef[] = [];
    await this.kv.scan(prefixRange(Buffer.from([KEY_LEASE])), 1024, (entries) => {
      for (const [key, host] of entries) refs.push({ url: urlOfRowKey(key), host: host.toString('utf8'), key });
    });
    return refs;
  }

  /** Every host summary, chunk by chunk; each host's name is a string of its own (lib/own-string.ts). */
  async eachHost(onChunk: (hosts: Array<[host: string, summary: HostSummary]>) => void | Promise<void>): Promise<number> {
    // Keys as strings from the binding (no Buffer per key), each host's name a copy of its own
    // (a slice past the tag would keep the whole key string).
    return this.kv.scanUtf8Keys(prefixRange(Buffer.from([KEY_HOST])), 4096, (entries) => onChunk(entries.map(([k, v]) => [ownString(k.slice(1)), decodeHostSummary(v)])));
  }

  /** Rows in URL order after `after` (exclusive; '' = from the first), at most `limit`: a sweep's next step. */
  async rowsAfter(after: string, limit: number): Promise<UrlStateMsg[]> {
    const all = prefixRange(Buffer.from([KEY_ROW]));
    const gte = after ? Buffer.concat([rowKey(after), Buffer.from([0])]) : all.gte;
    const entries = await this.kv.entries({ gte, lt: all.lt, limit });
    return entries.map(([k, v]) => decodeStoredRow(k, v));
  }

  /** Every row as stored (its key and value: decodeStoredRow), chunk by chunk (a rebuild's index pass). */
  async eachRawRow(onChunk: (entries: Array<[key: Buffer, value: Buffer]>) => void | Promise<void>): Promise<number> {
    return this.kv.scan(prefixRange(Buffer.from([KEY_ROW])), 2048, onChunk);
  }

  /**
   * Stage a row change in `batch`: the new row (or its removal, `next` null) and its index
   * entry, given the row as the store holds it now (`prev`, undefined when absent).
   */
  stage(batch: KvBatch, prev: UrlStateMsg | undefined, next: UrlStateMsg | null, nextBytes?: Buffer): void {
    const url = next?.url ?? prev?.url;
    if (url === undefined) return;
    const before = prev ? indexEntry(prev, this.levelOf) : null;
    // A queued row (every new URL of the intake) has its two keys and its bytes written into one
    // scratch buffer (stageQueued); the batch copies each at its put.
    const staged = next?.state === 'QUEUED' ? stageQueued(next, this.levelOf(next), nextBytes) : null;
    const after = staged ? null : next ? indexEntry(next, this.levelOf) : null;
    const afterKey = staged ? staged.queueKey : after?.[0];
    if (before && !(afterKey && afterKey.equals(before[0]))) batch.del(before[0]);
    if (staged) batch.put(staged.queueKey, QUEUED_VALUE);
    else if (after) batch.put(after[0], after[1]);
    if (staged) batch.put(staged.rowKey, staged.value);
    else if (next) batch.put(rowKey(url), nextBytes ? storedRow(nextBytes) : encodeStoredRow(next));
    else batch.del(rowKey(url));
    const delta = deltaOf(batch);
    if (prev) delta[prev.state] = (delta[prev.state] ?? 0) - 1;
    if (next) delta[next.state] = (delta[next.state] ?? 0) + 1;
  }

  stageHost(batch: KvBatch, host: string, s: HostSummary): void {
    if (s.queued === 0 && s.fetches === 0) batch.del(hostKey(host));
    else batch.put(hostKey(host), encodeHostSummary(s));
  }

  /** Stage a row from its changelog bytes with no index entry (a rebuild's copy pass). */
  stageRaw(batch: KvBatch, url: string, value: Buffer): void {
    batch.put(rowKey(url), storedRow(value));
  }

  /** stageRaw with the row's key given as its bytes (rowKey(url): a sorted rebuild's runs hold it). */
  stageRawKeyed(batch: KvBatch, key: Buffer, value: Buffer): void {
    batch.put(key, storedRow(value));
  }

  /**
   * Write a batch (atomically, with the state counts it changes). `durable`: also wait until it
   * and every write before it are on disk.
   */
  async write(batch: KvBatch, durable = false): Promise<void> {
    const delta = deltas.get(batch) ?? {};
    const keys = Object.keys(delta) as UrlStatus[];
    const next: StateCounts = { ...this.counts };
    for (const k of keys) next[k] = (next[k] ?? 0) + delta[k]!;
    if (keys.length) batch.put(COUNTS_KEY, Buffer.from(JSON.stringify(next)));
    await this.kv.write(batch, durable);
    for (const k of keys) this.counts[k] = next[k];
  }

  /** Set the state counts and the levels the queue keys were derived with (after a rebuild, which writes this release's layout). */
  async setFacts(counts: StateCounts, levels: number): Promise<void> {
    const b = this.kv.batch();
    b.put(COUNTS_KEY, Buffer.from(JSON.stringify(counts)));
    b.put(LEVELS_KEY, Buffer.from(String(levels)));
    b.put(LAYOUT_KEY, Buffer.from(String(STORE_LAYOUT)));
    await this.kv.write(b, true);
    for (const k of Object.keys(this.counts) as UrlStatus[]) delete this.counts[k];
    Object.assign(this.counts, counts);
    (this as { levels: number | null }).levels = levels;
    (this as { layout: number }).layout = STORE_LAYOUT;
  }

  /** Remove every index entry and host summary (before rebuilding them from the rows). */
  async clearIndexes(): Promise<void> {
    for (const tag of [KEY_QUEUE, KEY_DUE, KEY_LEASE, KEY_HOST]) {
      await this.kv.scan(prefixRange(Buffer.from([tag])), 4096, async (entries) => {
        const b = this.kv.batch();
        for (const [k] of entries) b.del(k);
        await this.kv.write(b);
      });
    }
  }

  /** Make every write so far durable. */
  async sync(): Promise<void> {
    await this.kv.write(this.kv.batch(), true);
  }

  /** The writes so far out of LevelDB's memtable into a table of their own (a sorted rebuild, between its rows and its index entries). */
  async flushMemtable(): Promise<void> {
    await this.kv.flushMemtable();
  }

  /** Bytes on disk (LevelDB's estimate), for the benchmark's bytes per URL. */
  async diskBytes(): Promise<number> {
    return this.kv.approximateBytes({ gte: Buffer.from([0]), lt: Buffer.from([0xff]) });
  }

  async close(): Promise<void> {
    await this.kv.close();
  }
}
