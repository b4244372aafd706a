/**
 * A partition's store made current before its hosts are leased (docs/frontier-store.md), the
 * Kafka Streams way: the store is a materialised copy of the changelog (crawl.urls, or the
 * embedded journal), and a checkpoint beside it names the changelog offset the store holds.
 *
 * - Store and checkpoint agree: replay only the changelog's tail, from the checkpoint.
 * - Store missing, damaged, replaced, made with other priority levels or in another layout
 *   (frontier-store.ts STORE_LAYOUT); checkpoint missing
 *   or past the changelog's end (a recreated topic): the store is deleted and rebuilt from the
 *   whole changelog by an external merge sort (processors/sorted-runs.ts: runs sorted by URL on
 *   a worker thread, spilled beside the store, merged with each URL's last record winning), rows
 *   then index entries written in key order, so LevelDB barely compacts. The older two passes
 *   (rows copied in changelog order, then indexed from the store) remain as `rebuild:
 *   'two-pass'`, the unit tests' reference. Progress is logged.
 *
 * A checkpoint is written only after the store is durable (`sync`), and claims the end offset
 * read *before* the sync: the frontier writes its store before the runtime appends the same rows
 * to the changelog, so every row below that offset is in the store.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { KvStore, type KvBatch, type KvStoreOptions } from '../connectors/kv-store';
import { avroFieldsReader } from '../lib/avro';
import type { ChangelogRecord, ChangelogSource } from '../runtime/changelog';
import type { UrlStateMsg, UrlStatus } from '../lib/messages';
import { hashKey, indexEntry, KEY_ROW, rowKey, urlOfRowKey } from './frontier-keys';
import { decodeRow, decodeStoredRow, STORE_LAYOUT, UrlStore, type StateCounts } from './frontier-store';
import { SortedRuns } from './sorted-runs';
import { sortThreadHeapBytes, stopSortThread } from './sorted-runs-worker';

/** Memory of the process for progress logs (MiB): RSS, this thread's V8 heap, Buffers, the sort thread's heap. */
function memory(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (n: number): number => Math.round(n / 1048576);
  return { rssMiB: mib(m.rss), heapMiB: mib(m.heapTotal), externalMiB: mib(m.external), arrayBuffersMiB: mib(m.arrayBuffers), sortThreadHeapMiB: mib(sortThreadHeapBytes()) };
}

/** Changelog records a rebuild holds in memory (all partitions together) before it sorts and spills some. */
export const REBUILD_RUN_BYTES = 32 * 1024 * 1024;
/** Index entries a partition's rebuild holds in memory before it sorts and spills them. */
const INDEX_RUN_BYTES = 16 * 1024 * 1024;

/**
 * The row fields a `sort` rebuild reads: indexEntry's (state, host, url, updated_at, reason,
 * next_due_at), levelOf's (queueSlotOf: fetched_at, priority, depth, priority_class). Decoding
 * only these skips the others' strings and the whole row's object (docs/frontier-store.md).
 */
export const INDEX_FIELDS = ['url', 'host', 'state', 'depth', 'updated_at', 'next_due_at', 'fetched_at', 'reason', 'priority', 'priority_class'] as const;
const readIndexFields = avroFieldsReader('crawl.UrlState.v1', INDEX_FIELDS) as (b: Buffer) => UrlStateMsg;

/** Where a partition's rebuild spills its sorted runs: beside the store, removed when done. */
export function rebuildTempDir(dir: string): string {
  return `${dir}.rebuild`;
}

export interface Checkpoint {
  /** The store this describes (UrlStore.id). */
  store: string;
  /** Every changelog record below this offset is in the store. */
  offset: number;
  /** The queue layout the store's keys were derived with (classes x levels: frontier-schedule queueLayout). */
  levels: number;
  writtenAt: number;
}

export function checkpointPath(dir: string): string {
  return `${dir}.checkpoint.json`;
}

export function readCheckpoint(dir: string): Checkpoint | null {
  const path = checkpointPath(dir);
  if (!existsSync(path)) return null;
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as Checkpoint;
    return typeof c.store === 'string' && Number.isInteger(c.offset) && c.offset >= 0 ? c : null;
  } catch {
    return null; // torn or damaged: as if missing
  }
}

/** Replace the checkpoint atomically (write, fsync, rename). */
export function writeCheckpoint(dir: string, c: Checkpoint): void {
  const path = checkpointPath(dir);
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, JSON.stringify(c));
  const fd = openSync(tmp, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** Make the store durable and record that it holds the changelog up to `offset`. */
export async function checkpoint(dir: string, store: UrlStore, offset: number, levels: number, now = Date.now()): Promise<void> {
  await store.sync();
  writeCheckpoint(dir, { store: store.id, offset, levels, writtenAt: now });
}

export interface RestoreOptions {
  /** Store folder per partition. */
  dirOf: (partition: number) => string;
  /**
   * A row's priority level. The `sort` rebuild gives it only INDEX_FIELDS of the row (what
   * queueSlotOf reads); the others are undefined.
   */
  levelOf: (row: UrlStateMsg) => number;
  levels: number;
  log: Logger;
  /** How long to wait for another process (the partition's previous owner) to close the store. */
  lockWaitMs?: number;
  /** Progress lines at most this often. */
  progressMs?: number;
  /** Keep the SHA-256 index (`crawl serve`'s copy). */
  hashIndex?: boolean;
  /** Key-value store tuning (per partition). */
  kv?: KvStoreOptions;
  /**
   * How a deleted store is rebuilt: `sort` (default) sorts the changelog by URL (an external merge
   * sort, runs spilled beside the store) and writes rows, then index entries, in key order;
   * `two-pass` copies rows in changelog order, then indexes them (the reference).
   */
  rebuild?: 'sort' | 'two-pass';
  /** `sort`: changelog bytes held in memory before runs are spilled (REBUILD_RUN_BYTES). */
  runBytes?: number;
  /** `sort`: index entries' bytes a partition holds before spilling (INDEX_RUN_BYTES). */
  indexRunBytes?: number;
  /** `sort`: runs sorted and written on a worker thread (default) or on the calling one. */
  sortThread?: boolean;
}

export interface Restored {
  partition: number;
  store: UrlStore;
  /** The changelog offset the store now holds (its end when restored). */
  offset: number;
  rebuilt: boolean;
  rows: number;
}

interface Plan {
  partition: number;
  /** A rebuild's copy pass: the last batch's write, still running while the next batch is read. */
  writing: Promise<void>;
  dir: string;
  store: UrlStore;
  from: number;
  rebuild: boolean;
  rows: number;
  /** A `sort` rebuild's changelog records, sorted by URL. */
  sorter: SortedRuns | null;
  /** A `sort` rebuild's merge and writes, once its changelog is read. */
  merged: Promise<void> | null;
}

async function openOrReset(dir: string, o: RestoreOptions): Promise<{ store: UrlStore; fresh: boolean }> {
  try {
    return { store: await UrlStore.open(dir, o.levelOf, { ...o.kv, lockWaitMs: o.lockWaitMs }), fresh: false };
  } catch (err) {
    if (/lock/i.test(String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? ''))) throw err;
    o.log.warn({ err, dir }, 'frontier store unreadable: rebuilding it from the changelog');
    KvStore.destroy(dir);
    return { store: await UrlStore.open(dir, o.levelOf, o.kv), fresh: true };
  }
}

/**
 * Bring the stores of `partitions` up to the changelog's end: tail replay where the checkpoint
 * holds, a rebuild elsewhere. All partitions are read in one pass over the changelog.
 */
export async function restoreStores(partitions: readonly number[], source: ChangelogSource, o: RestoreOptions): Promise<Restored[]> {
  const started = Date.now();
  const ends = await source.ends(partitions);
  const plans = new Map<number, Plan>();
  for (const p of partitions) {
    const dir = o.dirOf(p);
    let { store } = await openOrReset(dir, o);
    const cp = readCheckpoint(dir);
    const end = ends.get(p) ?? 0;
    const why =
      cp === null ? 'no checkpoint' : cp.store !== store.id ? 'the checkpoint names another store' : cp.offset > end ? 'the checkpoint is past the changelog end' :
      cp.levels !== o.levels || store.levels !== o.levels ? 'priority levels changed' :
      store.layout !== STORE_LAYOUT ? `store layout ${store.layout}, this release writes ${STORE_LAYOUT}` : null;
    if (why !== null && (store.size > 0 || cp !== null)) {
      o.log.info({ partition: p, reason: why }, 'frontier store out of date: rebuilding it from the changelog');
      await store.close();
      KvStore.destroy(dir);
      store = await UrlStore.open(dir, o.levelOf, o.kv);
    }
    const rebuild = why !== null;
    const sorting = rebuild && (o.rebuild ?? 'sort') === 'sort';
    // Runs a crashed rebuild left are of no use: it starts again (no checkpoint was written).
    rmSync(rebuildTempDir(dir), { recursive: true, force: true });
    // Runs keyed by each URL's row key (KEY_ROW and its UTF-8 bytes): merged in the store's own
    // byte order, and written to the store as the runs hold them.
    const sorter = sorting ? new SortedRuns(join(rebuildTempDir(dir), 'rows'), 'utf8', o.sortThread === false ? 'inline' : 'thread', KEY_ROW) : null;
    plans.set(p, { partition: p, writing: Promise.resolve(), dir, store, from: rebuild ? 0 : cp!.offset, rebuild, rows: 0, sorter, merged: null });
  }
  const sorters = [...plans.values()].flatMap((pl) => (pl.sorter ? [pl.sorter] : []));
  const runBytes = o.runBytes ?? REBUILD_RUN_BYTES;
  let spilled = 0;
  // A partition read to its end is merged and written while the others are read (one merge at a
  // time): its merge keeps this thread busy while the sort thread sorts the next partition's runs.
  let merging: Promise<void> = Promise.resolve();
  const merge = (pl: Plan): void => {
    const sorter = pl.sorter!;
    sorters.splice(sorters.indexOf(sorter), 1);
    pl.merged = merging = merging.then(async () => {
      try {
        spilled += await writeSorted(pl.store, sorter, rebuildTempDir(pl.dir), o, pl.partition);
      } finally {
        sorter.destroy();
        rmSync(rebuildTempDir(pl.dir), { recursive: true, force: true });
      }
    });
    pl.merged.catch(() => undefined); // awaited below
  };
  const from = new Map([...plans.values()].map((pl) => [pl.partition, pl.from]));
  let copied = 0;
  let lastLog = Date.now();
  const total = [...plans.values()].reduce((n, pl) => n + (ends.get(pl.partition) ?? 0) - pl.from, 0);
  /** Memory bounded for all partitions together: the largest buffer is sorted and spilled. */
  const bound = async (): Promise<void> => {
    let held = 0;
    for (const s of sorters) held += s.bufferedBytes;
    while (held > runBytes) {
      const largest = sorters.reduce((a, b) => (b.bufferedBytes > a.bufferedBytes ? b : a));
      held -= largest.bufferedBytes;
      await largest.spill();
    }
  };
  const progress = (n: number): void => {
    copied += n;
    if (Date.now() - lastLog >= (o.progressMs ?? 2000)) {
      lastLog = Date.now();
      const secs = (lastLog - started) / 1000;
      o.log.info({ rows: copied, of: total, rowsPerSec: Math.round(copied / Math.max(secs, 0.001)), ...memory() }, 'frontier store: reading the changelog');
    }
  };
  /** A partition read to its end: its last records spilled now, not when its merge starts (partitions read while earlier ones are merged would otherwise each hold up to a run's bytes until then). */
  const readToEnd = async (pl: Plan): Promise<void> => {
    await pl.sorter!.spill();
    merge(pl);
  };
  const onBatch = async (partition: number, recs: ChangelogRecord[]): Promise<void> => {
    const pl = plans.get(partition);
    if (!pl) return;
    if (pl.sorter) {
      if (pl.merged) throw new Error(`changelog partition ${partition}: records after its end`);
      for (const r of recs) pl.sorter.add(r);
      if (recs.length && recs[recs.length - 1].offset >= (ends.get(partition) ?? 0) - 1) await readToEnd(pl);
      await bound();
    } else if (pl.rebuild) {
      // Staged while the previous batch is written; written once that is done (one write in flight).
      const b = copyRows(pl.store, recs, o.hashIndex);
      await pl.writing;
      pl.writing = pl.store.write(b);
      pl.writing.catch(() => undefined); // awaited with the next batch or before indexing
    } else {
      await applyChangelog(pl.store, recs, { hashIndex: o.hashIndex });
    }
    pl.rows += recs.length;
    progress(recs.length);
  };
  // The embedded journal's frames go to the sort thread as read (no record decoded here) when
  // every partition is rebuilt by sorting.
  const allSorted = [...plans.values()].every((pl) => pl.sorter !== null);
  if (source.readFrames && allSorted) {
    await source.readFrames(from, ends, async (partition, f) => {
      const pl = plans.get(partition);
      if (!pl) return;
      if (pl.merged) throw new Error(`changelog partition ${partition}: records after its end`);
      pl.sorter!.addFrames(f.buf, f.explicit, f.count);
      if (f.last) await readToEnd(pl);
      await bound();
      pl.rows += f.count;
      progress(f.count);
    }, onBatch);
  } else {
    await source.read(from, ends, onBatch);
  }
  const out: Restored[] = [];
  for (const pl of plans.values()) {
    await pl.writing;
    if (pl.sorter) {
      if (!pl.merged) merge(pl);
      await pl.merged;
    } else if (pl.rebuild) await buildIndexes(pl.store, o);
    const end = ends.get(pl.partition) ?? 0;
    await checkpoint(pl.dir, pl.store, end, o.levels);
    out.push({ partition: pl.partition, store: pl.store, offset: end, rebuilt: pl.rebuild, rows: pl.rows });
  }
  if ([...plans.values()].some((pl) => pl.sorter)) await stopSortThread();
  const secs = (Date.now() - started) / 1000;
  o.log.info(
    { partitions: out.map((r) => ({ partition: r.partition, rows: r.rows, rebuilt: r.rebuilt, urls: r.store.size })), seconds: secs, rowsPerSec: Math.round(copied / Math.max(secs, 0.001)), ...(plans.size && [...plans.values()].some((pl) => pl.sorter) ? { spilledBytes: spilled } : {}) },
    'frontier store restored',
  );
  return out;
}

/** A rebuild's first pass: the latest row of every URL, copied as it is in the changelog (a batch to write). */
function copyRows(store: UrlStore, recs: readonly ChangelogRecord[], hashIndex = false): KvBatch {
  const b = store.newBatch();
  for (const r of recs) {
    if (r.value === null) b.del(rowKey(r.key));
    else store.stageRaw(b, r.key, r.value);
    // A URL's hash does not change with its row: an entry for a URL deleted later is checked against the rows when read.
    if (hashIndex && r.value !== null) b.put(hashKey(r.key), Buffer.from(r.key));
  }
  return b;
}

/**
 * Changelog records applied to a store in order (the tail after a checkpoint, or `crawl serve`'s
 * copy following the topic): each replaces its row, with its index entry and its host's queued
 * count kept right. `hashIndex` also keeps the SHA-256 index `crawl serve` answers by. Returns
 * how many hosts gained or lost all their queued URLs (net).
 */
export async function applyChangelog(store: UrlStore, recs: readonly ChangelogRecord[], o: { hashIndex?: boolean } = {}): Promise<number> {
  const cur = new Map<string, UrlStateMsg | undefined>();
  const unread = [...new Set(recs.map((r) => r.key))];
  const rows = await store.rows(unread);
  unread.forEach((u, i) => cur.set(u, rows[i]));
  const queuedDelta = new Map<string, number>();
  const b = store.newBatch();
  for (const r of recs) {
    const prev = cur.get(r.key);
    const next = r.value === null ? null : decodeRow(r.value);
    store.stage(b, prev, next, r.value ?? undefined);
    if (o.hashIndex) {
      if (next && !prev) b.put(hashKey(r.key), Buffer.from(r.key));
      else if (!next && prev) b.del(hashKey(r.key));
    }
    cur.set(r.key, next ?? undefined);
    const host = next?.host ?? prev?.host;
    const d = (next?.state === 'QUEUED' ? 1 : 0) - (prev?.state === 'QUEUED' ? 1 : 0);
    if (host !== undefined && d !== 0) queuedDelta.set(host, (queuedDelta.get(host) ?? 0) + d);
  }
  const hosts = [...queuedDelta.keys()];
  const summaries = await store.hostSummaries(hosts);
  let withWork = 0;
  hosts.forEach((h, i) => {
    const s = summaries[i] ?? { queued: 0, fetches: 0, cycle: 0 };
    const queued = Math.max(0, s.queued + queuedDelta.get(h)!);
    withWork += (queued > 0 ? 1 : 0) - (s.queued > 0 ? 1 : 0);
    store.stageHost(b, h, { ...s, queued });
  });
  await store.write(b);
  return withWork;
}

/**
 * A `sort` rebuild's write: the changelog's records merged by URL (the last of each wins, a
 * tombstone leaves the URL out), their rows written in key order, their index entries sorted
 * the same way (spilled under `tmp`) and written after them, then host summaries and counts.
 * Every write goes to LevelDB in key order, so its files do not overlap and it barely compacts.
 * Returns the bytes spilled (both sorts).
 */
async function writeSorted(store: UrlStore, rows: SortedRuns, tmp: string, o: RestoreOptions, partition: number): Promise<number> {
  const started = Date.now();
  let lastLog = started;
  const index = new SortedRuns(join(tmp, 'index'), 'latin1', o.sortThread === false ? 'inline' : 'thread');
  const indexRunBytes = o.indexRunBytes ?? INDEX_RUN_BYTES;
  const queued = new Map<string, number>();
  const counts: StateCounts = {};
  let n = 0;
  let writing: Promise<void> = Promise.resolve();
  try {
    await rows.merge(async (c) => {
      const b = store.newBatch();
      for (let i = 0; i < c.length; i++) {
        const v = c.values[i];
        if (v === null) continue; // a tombstone: the store started empty
        const key = c.keyBytes[i];
        store.stageRawKeyed(b, key, v);
        const row = readIndexFields(v);
        counts[row.state as UrlStatus] = (counts[row.state as UrlStatus] ?? 0) + 1;
        const e = indexEntry(row, o.levelOf, key);
        if (e) index.addBytes(e[0], e[1]);
        if (o.hashIndex) {
          const url = urlOfRowKey(key);
          index.addBytes(hashKey(url), Buffer.from(url));
        }
        if (row.state === 'QUEUED') queued.set(row.host, (queued.get(row.host) ?? 0) + 1);
      }
      n += c.length;
      if (index.bufferedBytes >= indexRunBytes) await index.spill();
      await writing;
      writing = store.write(b);
      writing.catch(() => undefined); // awaited with the next chunk or after the last
      if (Date.now() - lastLog >= (o.progressMs ?? 2000)) {
        lastLog = Date.now();
        o.log.info({ partition, rows: n, rowsPerSec: Math.round(n / ((lastLog - started) / 1000)), ...memory() }, 'frontier store: writing rows in key order');
      }
    });
    await writing;
    // The last rows out of the memtable before the index entries (keys below every row's) come:
    // a table holding both would span the whole index's key range, and every index table
    // flushed after it would be compacted with it again and again.
    await store.flushMemtable();
    let entries = 0;
    await index.merge(async (c) => {
      const b = store.newBatch();
      for (let i = 0; i < c.length; i++) b.put(c.keyBytes[i], c.values[i]!);
      entries += c.length;
      await writing;
      writing = store.write(b);
      writing.catch(() => undefined);
      if (Date.now() - lastLog >= (o.progressMs ?? 2000)) {
        lastLog = Date.now();
        o.log.info({ partition, rows: entries, ...memory() }, 'frontier store: writing index entries in key order');
      }
    });
    await writing;
    await writeSummaries(store, queued, counts, o.levels);
    return rows.spilledBytes + index.spilledBytes;
  } finally {
    index.destroy();
  }
}

/** A rebuild's second pass: index entries, host summaries and state counts from the rows. */
async function buildIndexes(store: UrlStore, o: RestoreOptions): Promise<void> {
  const started = Date.now();
  let lastLog = started;
  const queued = new Map<string, number>();
  const counts: StateCounts = {};
  let n = 0;
  // One chunk's entries are written while the next chunk is read and indexed.
  let writing: Promise<void> = Promise.resolve();
  await store.eachRawRow(async (entries) => {
    const b = store.newBatch();
    for (const [k, v] of entries) {
      const row = decodeStoredRow(k, v);
      counts[row.state as UrlStatus] = (counts[row.state as UrlStatus] ?? 0) + 1;
      const e = indexEntry(row, o.levelOf);
      if (e) b.put(e[0], e[1]);
      if (row.state === 'QUEUED') queued.set(row.host, (queued.get(row.host) ?? 0) + 1);
    }
    await writing;
    writing = store.write(b);
    writing.catch(() => undefined); // awaited with the next chunk or after the last
    n += entries.length;
    if (Date.now() - lastLog >= (o.progressMs ?? 2000)) {
      lastLog = Date.now();
      o.log.info({ rows: n, rowsPerSec: Math.round(n / ((lastLog - started) / 1000)) }, 'frontier store: indexing rows');
    }
  });
  await writing;
  await writeSummaries(store, queued, counts, o.levels);
}

/** A rebuild's last step: each host's summary (its queued rows, in host order) and the state counts. */
async function writeSummaries(store: UrlStore, queued: ReadonlyMap<string, number>, counts: StateCounts, levels: number): Promise<void> {
  let b = store.newBatch();
  for (const host of [...queued.keys()].sort()) {
    store.stageHost(b, host, { queued: queued.get(host)!, fetches: 0, cycle: 0 });
    if (b.size >= 4096) {
      await store.write(b);
      b = store.newBatch();
    }
  }
  await store.write(b);
  await store.setFacts(counts, levels);
}
