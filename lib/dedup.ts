/**
 * Duplicate detection across URLs, for the hosts of the partitions a parse instance owns.
 * The decisions are pure; the state they read lives in one key-value table per owned
 * partition (DedupTable: parse's store on disk, processors/dedup-store.ts, a copy of the
 * compacted crawl.content table, which is what makes it rebuildable; or MemoryDedupTable for
 * tests and one-off tools). Nothing per URL stays in the heap.
 *
 * Only *representatives* are indexed: a page that was not itself a duplicate when it was last
 * parsed. Duplicates are remembered per URL (so a restart knows them) but never become the
 * thing others are compared against; otherwise a representative's own recrawl could be judged
 * a copy of its copies.
 *
 *   exact: the same SHA-256 body as another URL's representative on the same host;
 *   near:  a SimHash within `maxDistance` bits (default 3) of another representative on the
 *          same host, found through four tables keyed by each 16-bit block of the fingerprint
 *          (two fingerprints within 3 bits agree on at least one whole block).
 *
 * Fingerprints are compared only with fingerprints of the same algorithm (simhash_version): the
 * block tables are keyed by version and block, so after an upgrade a page fingerprinted with
 * the new version never meets one of the old (whose bits mean something else); old rows stay
 * representatives for exact duplicates, and for near ones once their page is parsed again.
 *
 * Keys of a table (one partition; docs/dedup-store.md):
 *   `u <url>`                                  the row: crawl.Content.v1 Avro bytes after the URL
 *   `s <host> 00 <sha256>`                     representatives with that body, in the order recorded
 *   `b <host> 00 <version u32> <i u8> <block u16>`  representatives whose block i is `block`, each
 *                                              with its fingerprint (a check reads no rows)
 * A check is six point reads (the URL's row, the SHA-256 list, four block lists); nearly all
 * lists hold one URL or none. Lists keep insertion order, as the Sets they replace did, so the
 * representative a page is judged a copy of is the one it always was.
 */
import * as avro from 'avsc';
import { avroTailType } from './avro';
import type { ContentMsg } from './messages';
import { partitionForHost } from './partitioner';
import { blocks16, hammingDistance } from './simhash';

/** A row's or page's SimHash version; rows written before versions existed are version 1. */
export const simhashVersionOf = (r: { simhash_version?: number }): number => r.simhash_version ?? 1;

/** One row of crawl.content (key = url): what parse last saw at a URL (duplicate_of null = a representative). */
export type ContentRow = ContentMsg;

export interface DuplicateVerdict {
  kind: 'exact' | 'near';
  of: string;
  distance: number;
}

export const NEAR_DUPLICATE_MAX_BITS = 3;

/**
 * One partition's table, read synchronously (a decision is made in one go, as before, so two
 * pages decided at once never miss each other). Writes may reach the disk later but must be
 * visible to get() at once.
 */
export interface DedupTable {
  get(key: Buffer): Buffer | undefined;
  put(key: Buffer, value: Buffer): void;
  del(key: Buffer): void;
  /** Rows held (kept by the table from addRows, for logs and tests). */
  readonly rows: number;
  addRows(delta: number): void;
}

/** A table in the heap: tests and one-off tools (parse without a state folder). */
export class MemoryDedupTable implements DedupTable {
  private readonly m = new Map<string, Buffer>();
  rows = 0;
  get(key: Buffer): Buffer | undefined {
    return this.m.get(key.toString('latin1'));
  }
  put(key: Buffer, value: Buffer): void {
    this.m.set(key.toString('latin1'), value);
  }
  del(key: Buffer): void {
    this.m.delete(key.toString('latin1'));
  }
  addRows(delta: number): void {
    this.rows += delta;
  }
}

// ---- keys and values ------------------------------------------------------------------------

export const KEY_ROW = 0x75; // 'u'
export const KEY_SHA = 0x73; // 's'
export const KEY_BLOCK = 0x62; // 'b'
export const KEY_META = 0x6d; // 'm'

export const rowKey = (url: string): Buffer => {
  const b = Buffer.allocUnsafe(1 + Buffer.byteLength(url));
  b[0] = KEY_ROW;
  b.write(url, 1, 'utf8');
  return b;
};

export function shaKey(host: string, sha256: string): Buffer {
  const h = Buffer.byteLength(host);
  const b = Buffer.allocUnsafe(2 + h + Buffer.byteLength(sha256));
  b[0] = KEY_SHA;
  b.write(host, 1, 'utf8');
  b[1 + h] = 0;
  b.write(sha256, 2 + h, 'utf8');
  return b;
}

export function blockKey(host: string, version: number, i: number, block: number): Buffer {
  const h = Buffer.byteLength(host);
  const b = Buffer.allocUnsafe(2 + h + 7);
  b[0] = KEY_BLOCK;
  b.write(host, 1, 'utf8');
  b[1 + h] = 0;
  b.writeUInt32BE(version >>> 0, 2 + h);
  b[6 + h] = i;
  b.writeUInt16BE(block, 7 + h);
  return b;
}

export const metaKey = (name: string): Buffer => Buffer.from(`m${name}`, 'latin1');

/** A list's value: an Avro array of strings (store layout 2; layout 1 used hand-written LEB128 lengths). */
const stringListType = avro.Type.forSchema({ type: 'array', items: 'string' });

export function encodeStrings(xs: readonly string[]): Buffer {
  return stringListType.toBuffer(xs);
}

export function decodeStrings(b: Buffer | undefined): string[] {
  return b ? (stringListType.fromBuffer(b) as string[]) : [];
}

const ROW_SCHEMA = 'crawl.Content.v1';
/** A row's fields after the URL (the row key holds it). */
const storedRowType = avroTailType(ROW_SCHEMA, 1);

export function encodeStoredRow(row: ContentRow): Buffer {
  return storedRowType.toBuffer({ ...row, simhash_version: simhashVersionOf(row) });
}

export function decodeStoredRow(url: string, b: Buffer): ContentRow {
  const r = storedRowType.fromBuffer(b) as Omit<ContentRow, 'url'>;
  return { url, host: r.host, sha256: r.sha256, simhash64: r.simhash64, fetched_at: r.fetched_at, duplicate_of: r.duplicate_of, simhash_version: r.simhash_version };
}

// ---- the index --------------------------------------------------------------------------------

export interface DedupIndexOptions {
  /** Partition count: a host's table is its partition's. */
  partitions?: number;
  maxDistance?: number;
  /** A table for a partition none is attached for (absent: such a host is an error). */
  tableFor?: (partition: number) => DedupTable;
}

/** The list without `url`'s entry: entries of `step` strings, the URL first in each. */
function without(list: readonly string[], url: string, step: 1 | 2): string[] {
  const out: string[] = [];
  for (let i = 0; i < list.length; i += step) {
    if (list[i] === url) continue;
    for (let j = 0; j < step; j++) out.push(list[i + j]);
  }
  return out;
}

/** A list's value, `url` (and `extra` after it) added at its end (taken out first if there). */
function withUrl(list: string[], url: string, extra?: string): Buffer {
  const out = without(list, url, extra === undefined ? 1 : 2);
  out.push(url);
  if (extra !== undefined) out.push(extra);
  return encodeStrings(out);
}

/** Take `url` out of the list under `key` (the key goes when the list is empty). */
function removeFrom(t: DedupTable, key: Buffer, url: string, step: 1 | 2): void {
  const list = decodeStrings(t.get(key));
  const out = without(list, url, step);
  if (out.length === list.length) return;
  if (out.length === 0) t.del(key);
  else t.put(key, encodeStrings(out));
}

export class DedupIndex {
  private readonly tables = new Map<number, DedupTable>();
  readonly partitions: number;
  private readonly maxDistance: number;

  constructor(private readonly opts: DedupIndexOptions = {}) {
    this.partitions = Math.max(1, opts.partitions ?? 1);
    this.maxDistance = opts.maxDistance ?? NEAR_DUPLICATE_MAX_BITS;
  }

  attach(partition: number, table: DedupTable): void {
    this.tables.set(partition, table);
  }

  /** The tables attached, by partition. */
  owned(): ReadonlyMap<number, DedupTable> {
    return this.tables;
  }

  private table(host: string): DedupTable {
    const p = this.partitions === 1 ? 0 : partitionForHost(host, this.partitions);
    let t = this.tables.get(p);
    if (!t) {
      if (!this.opts.tableFor) throw new Error(`parse's duplicate table of partition ${p} (host ${host}) is not open`);
      this.tables.set(p, (t = this.opts.tableFor(p)));
    }
    return t;
  }

  /** URLs remembered (representatives and duplicates), for logs and tests. */
  get size(): number {
    let n = 0;
    for (const t of this.tables.values()) n += t.rows;
    return n;
  }

  /** What was last recorded for a URL. */
  get(url: string, host: string): ContentRow | undefined {
    const b = this.table(host).get(rowKey(url));
    return b === undefined ? undefined : decodeStoredRow(url, b);
  }

  /** The duplicate this page would be, if any; the page's own URL never counts. `version`: the SimHash's algorithm. */
  check(url: string, host: string, sha256: string, simhash: string | null, version: number): DuplicateVerdict | null {
    const t = this.table(host);
    for (const other of decodeStrings(t.get(shaKey(host, sha256)))) if (other !== url) return { kind: 'exact', of: other, distance: 0 };
    if (!simhash) return null;
    let best: DuplicateVerdict | null = null;
    blocks16(simhash).forEach((b, i) => {
      const list = decodeStrings(t.get(blockKey(host, version, i, b)));
      for (let k = 0; k < list.length; k += 2) {
        const other = list[k];
        if (other === url) continue;
        const d = hammingDistance(simhash, list[k + 1]);
        if (d <= this.maxDistance && (!best || d < best.distance)) best = { kind: 'near', of: other, distance: d };
      }
    });
    return best;
  }

  /** Remember a page as parse saw it (or as restored from crawl.content). */
  record(row: ContentRow): void {
    const t = this.table(row.host);
    const key = rowKey(row.url);
    const had = this.unindex(t, key, row.url, row.host);
    t.put(key, encodeStoredRow(row));
    if (!had) t.addRows(1);
    if (row.duplicate_of !== null) return;
    const sk = shaKey(row.host, row.sha256);
    t.put(sk, withUrl(decodeStrings(t.get(sk)), row.url));
    if (row.simhash64) {
      const v = simhashVersionOf(row);
      blocks16(row.simhash64).forEach((b, i) => {
        const bk = blockKey(row.host, v, i, b);
        t.put(bk, withUrl(decodeStrings(t.get(bk)), row.url, row.simhash64!));
      });
    }
  }

  /** Apply one crawl.content record (a restore): its row recorded, or for a tombstone its URL forgotten. */
  apply(key: string, value: ContentRow | null): void {
    if (value) return this.record(value);
    let host: string;
    try {
      host = new URL(key).hostname.toLowerCase();
    } catch {
      return; // a key that is no URL was never recorded
    }
    this.forget(key, host);
  }

  /** Drop a URL (a tombstone in crawl.content). */
  forget(url: string, host: string): void {
    const t = this.table(host);
    const key = rowKey(url);
    if (!this.unindex(t, key, url, host)) return;
    t.del(key);
    t.addRows(-1);
  }

  /** Take a URL's row (if any) out of its representatives' lists; whether it had one. */
  private unindex(t: DedupTable, key: Buffer, url: string, host: string): boolean {
    const b = t.get(key);
    if (b === undefined) return false;
    const old = decodeStoredRow(url, b);
    if (old.duplicate_of === null) {
      removeFrom(t, shaKey(host, old.sha256), url, 1);
      if (old.simhash64) {
        const v = simhashVersionOf(old);
        blocks16(old.simhash64).forEach((blk, i) => removeFrom(t, blockKey(host, v, i, blk), url, 2));
      }
    }
    return true;
  }

  /** Let go of the tables of partitions this instance no longer owns (after a rebalance); returns them (to close). */
  retain(owns: (partition: number) => boolean): Map<number, DedupTable> {
    const gone = new Map<number, DedupTable>();
    for (const [p, t] of this.tables) {
      if (owns(p)) continue;
      this.tables.delete(p);
      gone.set(p, t);
    }
    return gone;
  }
}
