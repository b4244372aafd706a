/**
 * How the frontier's URL table and its indexes are laid out as keys of one partition's store
 * (pure; docs/frontier-store.md). Every index entry is derived from a row alone, so a store
 * rebuilt from the changelog (crawl.urls, or the embedded journal) has exactly the index
 * entries the live frontier wrote:
 *
 *   u <url>                                          the row (crawl.UrlState.v1 Avro bytes less the URL: frontier-store.ts storedRow)
 *   q <host> 00 <level u8> <order u8> <time u64> <form u8> <rest>   a QUEUED row in its host's queue
 *   t <due u64> <url>                  -> host       a FAILED or FETCHED row waiting for next_due_at
 *   l <url>                            -> host       a LEASED row (leases are few: one per host at most)
 *   h <host>                                         the host's summary (queued count, fetches this cycle)
 *   s <sha256(url), 32 bytes>          -> url        only in `crawl serve`'s copy: GET /urls/{sha256}
 *   m <name>                                         the store's own facts (its id)
 *
 * A host's queue reads in key order: priority level first (0 most important), then URLs put
 * back at the front of their level (a lost lease, an operator block), then the rest by the time
 * they were queued, oldest first. A queue key holds its URL without the `scheme://host` its
 * host part already gives (store layout 2; processors/frontier-store.ts STORE_LAYOUT): `form` 1
 * is `https://<host>` + rest, 2 is `http://<host>` + rest, 0 is the whole URL as rest (a URL
 * that does not start with its host's name, should one occur).
 */
import { createHash } from 'node:crypto';
import type { UrlStateMsg } from '../lib/messages';

export const KEY_ROW = 0x75; // u
export const KEY_QUEUE = 0x71; // q
export const KEY_DUE = 0x74; // t
export const KEY_LEASE = 0x6c; // l
export const KEY_HOST = 0x68; // h
export const KEY_META = 0x6d; // m
export const KEY_HASH = 0x73; // s

/** [gte, lt) of every key starting with `prefix`. */
export function prefixRange(prefix: Buffer): { gte: Buffer; lt: Buffer } {
  const lt = Buffer.from(prefix);
  let i = lt.length - 1;
  while (i >= 0 && lt[i] === 0xff) i--;
  if (i < 0) throw new Error('prefix of 0xff bytes only');
  lt[i]++;
  return { gte: prefix, lt: lt.subarray(0, i + 1) };
}

function tagged(tag: number, text: string): Buffer {
  const n = Buffer.byteLength(text, 'utf8');
  const b = Buffer.allocUnsafe(1 + n);
  b[0] = tag;
  b.write(text, 1, 'utf8');
  return b;
}

/** A time (ms since the epoch, >= 0) as 8 big-endian bytes, so keys sort by time. */
function writeTime(b: Buffer, at: number, ms: number): void {
  // Two 32-bit halves rather than a BigInt (a rebuild writes one per queued URL); exact below 2^53.
  const t = Math.max(0, Math.floor(ms));
  b.writeUInt32BE(Math.floor(t / 0x100000000), at);
  b.writeUInt32BE(t % 0x100000000, at + 4);
}

export const rowKey = (url: string): Buffer => tagged(KEY_ROW, url);
export const leaseKey = (url: string): Buffer => tagged(KEY_LEASE, url);
export const hostKey = (host: string): Buffer => tagged(KEY_HOST, host);
export const metaKey = (name: string): Buffer => tagged(KEY_META, name);

export const urlOfRowKey = (key: Buffer): string => key.toString('utf8', 1);

/** The hash index's key of a URL (its SHA-256, as GET /urls/{sha256} names it). */
export function hashKey(url: string): Buffer {
  return Buffer.concat([Buffer.from([KEY_HASH]), createHash('sha256').update(url).digest()]);
}

export function hashKeyOfHex(hex: string): Buffer {
  return Buffer.concat([Buffer.from([KEY_HASH]), Buffer.from(hex, 'hex')]);
}
export const urlOfLeaseKey = urlOfRowKey;
export const hostOfHostKey = urlOfRowKey;

/** Every queue key of a host: [gte, lt). */
export function hostQueueRange(host: string): { gte: Buffer; lt: Buffer } {
  const b = tagged(KEY_QUEUE, `${host}\u0000`);
  return prefixRange(b);
}

/** A host's queue keys from slot `from` (inclusive) to slot `to` (exclusive): [gte, lt). */
export function hostSlotRange(host: string, from: number, to: number): { gte: Buffer; lt: Buffer } {
  const at = (slot: number): Buffer => Buffer.concat([tagged(KEY_QUEUE, `${host}\u0000`), Buffer.from([Math.max(0, Math.min(255, slot))])]);
  return { gte: at(from), lt: to > 255 ? hostQueueRange(host).lt : at(to) };
}

/** The reason a feed's row is queued with when its poll is due (frontier-state.ts requeueDue). */
export const FEED_DUE = 'feed-due';

/** Front-of-level entries (a lost lease, an operator block, a due feed poll) sort before the rest of their level. */
export function queuedAtFront(row: UrlStateMsg): boolean {
  return row.reason === 'lease-expired' || row.reason === 'blocked' || row.reason === FEED_DUE;
}

/** How a queue key holds its URL: `QUEUE_URL_PREFIX[form]` + `<host>` + rest, or (form 0) rest alone. */
const QUEUE_URL_WHOLE = 0;
const QUEUE_URL_PREFIX = ['', 'https://', 'http://'];

/** The form a queue key holds `url` in: the index of its prefix when the host follows it, else QUEUE_URL_WHOLE. */
function queueUrlForm(url: string, host: string): number {
  for (let f = 1; f < QUEUE_URL_PREFIX.length; f++) {
    const p = QUEUE_URL_PREFIX[f];
    if (url.startsWith(p) && url.startsWith(host, p.length)) return f;
  }
  return QUEUE_URL_WHOLE;
}

/**
 * `rowKeyBytes`, when given, must be rowKey(url): the key's host and rest are then copied from
 * its bytes instead of encoded again (a sorted rebuild has every row's key as bytes).
 */
export function queueKey(host: string, level: number, front: boolean, queuedAt: number, url: string, rowKeyBytes?: Buffer): Buffer {
  const form = queueUrlForm(url, host);
  if (rowKeyBytes !== undefined && form !== QUEUE_URL_WHOLE) {
    // rowKey(url) = KEY_ROW, the prefix, the host's bytes, the rest's bytes.
    const hs = 1 + QUEUE_URL_PREFIX[form].length;
    const he = hs + Buffer.byteLength(host, 'utf8');
    const h = he - hs;
    const b = Buffer.allocUnsafe(1 + h + 12 + rowKeyBytes.length - he);
    b[0] = KEY_QUEUE;
    rowKeyBytes.copy(b, 1, hs, he);
    rowKeyBytes.copy(b, writeQueueFields(b, 1 + h, level, front, queuedAt, form), he);
    return b;
  }
  const rest = form === QUEUE_URL_WHOLE ? url : url.slice(QUEUE_URL_PREFIX[form].length + host.length);
  const h = Buffer.byteLength(host, 'utf8');
  const u = Buffer.byteLength(rest, 'utf8');
  const b = Buffer.allocUnsafe(1 + h + 1 + 2 + 8 + 1 + u);
  b[0] = KEY_QUEUE;
  b.write(host, 1, 'utf8');
  b.write(rest, writeQueueFields(b, 1 + h, level, front, queuedAt, form), 'utf8');
  return b;
}

/**
 * rowKey(url) and queueKey(host, level, front, queuedAt, url) written one after the other into
 * `out` from index 0, the URL encoded once: the queue key's host and rest are copied from the
 * row key's bytes within `out` (copyWithin: no Buffer made, no second UTF-8 pass). The row key is
 * `out[0, rowEnd)` and the queue key `out[rowEnd, end)`; returns both ends, or null when `out`
 * is shorter than rowAndQueueKeyRoom(url, host) (nothing is then written).
 * The frontier stages a queued row with these keys (frontier-store.ts UrlStore.stage), byte for
 * byte those of rowKey and queueKey (test/unit/frontier-keys.test.ts).
 */
export function writeRowAndQueueKeys(out: Buffer, host: string, level: number, front: boolean, queuedAt: number, url: string): { rowEnd: number; end: number } | null {
  if (out.length < rowAndQueueKeyRoom(url, host)) return null;
  out[0] = KEY_ROW;
  const rowEnd = 1 + out.write(url, 1, 'utf8');
  const form = queueUrlForm(url, host);
  let at = rowEnd;
  out[at++] = KEY_QUEUE;
  if (form === QUEUE_URL_WHOLE) {
    at += out.write(host, at, 'utf8');
    at = writeQueueFields(out, at, level, front, queuedAt, form);
    out.copyWithin(at, 1, rowEnd);
    return { rowEnd, end: at + rowEnd - 1 };
  }
  // The row key: KEY_ROW, the prefix (ASCII), the host's bytes, the rest's bytes. An all-ASCII URL
  // (a normalised one: WHATWG serialisation percent-encodes the rest, hosts are punycode) has one byte a character.
  const hs = 1 + QUEUE_URL_PREFIX[form].length;
  const he = hs + (rowEnd - 1 === url.length ? host.length : Buffer.byteLength(host, 'utf8'));
  out.copyWithin(at, hs, he);
  at = writeQueueFields(out, at + he - hs, level, front, queuedAt, form);
  out.copyWithin(at, he, rowEnd);
  return { rowEnd, end: at + rowEnd - he };
}

/** Bytes writeRowAndQueueKeys may need: UTF-8 takes at most 3 bytes a UTF-16 unit. */
export function rowAndQueueKeyRoom(url: string, host: string): number {
  return 2 + 6 * url.length + 3 * host.length + 12;
}

/** A queue key's fields after its host, written at `at`: a 0 byte, the level, front (0) or back (1), the time queued, the URL's form. Returns where the URL's rest goes. */
function writeQueueFields(b: Buffer, at: number, level: number, front: boolean, queuedAt: number, form: number): number {
  b[at++] = 0;
  b[at++] = Math.max(0, Math.min(255, level));
  b[at++] = front ? 0 : 1;
  writeTime(b, at, queuedAt);
  b[at + 8] = form;
  return at + 9;
}

/** A URL with its host, and the index key it was found under. */
export interface IndexRef {
  url: string;
  host: string;
  key: Buffer;
}

/** The URL a queue key holds (queueKey's `url`). */
export function urlOfQueueKey(key: Buffer): string {
  const zero = key.indexOf(0, 1);
  const at = zero + 1 + 2 + 8;
  const form = key[at];
  const rest = key.toString('utf8', at + 1);
  if (form === QUEUE_URL_WHOLE) return rest;
  const prefix = QUEUE_URL_PREFIX[form];
  if (prefix === undefined) throw new Error(`queue key with an unknown URL form ${form}`);
  return prefix + key.toString('utf8', 1, zero) + rest;
}

export function dueKey(due: number, url: string): Buffer {
  const u = Buffer.byteLength(url, 'utf8');
  const b = Buffer.allocUnsafe(1 + 8 + u);
  b[0] = KEY_DUE;
  writeTime(b, 1, due);
  b.write(url, 9, 'utf8');
  return b;
}

export function dueOfKey(key: Buffer): { due: number; url: string } {
  return { due: Number(key.readBigUInt64BE(1)), url: key.toString('utf8', 9) };
}

/** Due keys up to and including `now`. */
export function dueRange(now: number): { gte: Buffer; lt: Buffer } {
  const lt = Buffer.alloc(9);
  lt[0] = KEY_DUE;
  writeTime(lt, 1, now + 1);
  return { gte: Buffer.from([KEY_DUE]), lt };
}

/** The index entry a row has (besides itself), derived from the row alone; null when none. `rowKeyBytes`: rowKey(row.url), when at hand (queueKey). */
export function indexEntry(row: UrlStateMsg, levelOf: (row: UrlStateMsg) => number, rowKeyBytes?: Buffer): [key: Buffer, value: Buffer] | null {
  switch (row.state) {
    case 'QUEUED':
      return [queueKey(row.host, levelOf(row), queuedAtFront(row), row.updated_at, row.url, rowKeyBytes), QUEUED_VALUE];
    case 'LEASED':
      return [leaseKey(row.url), Buffer.from(row.host)];
    case 'FAILED':
    case 'FETCHED':
      return row.next_due_at === null ? null : [dueKey(row.next_due_at, row.url), Buffer.from(row.host)];
    default:
      return null;
  }
}

/**
 * A queue entry's value: nothing is read from it (the key says it all), but it must not be empty:
 * classic-level leaks its copy of an empty value (connectors/kv-store.ts KvBatch), 8 bytes a
 * queued URL. Stores written before hold empty ones, read the same.
 */
export const QUEUED_VALUE = Buffer.from([1]);

/** A host's summary: URLs queued, and fetches released in the cycle `cycle` (a frontier process's start). */
export interface HostSummary {
  queued: number;
  fetches: number;
  cycle: number;
}

export function encodeHostSummary(s: HostSummary): Buffer {
  const b = Buffer.allocUnsafe(16);
  b.writeUInt32BE(Math.max(0, s.queued), 0);
  b.writeUInt32BE(Math.max(0, s.fetches), 4);
  b.writeDoubleBE(s.cycle, 8);
  return b;
}

export function decodeHostSummary(b: Buffer): HostSummary {
  return { queued: b.readUInt32BE(0), fetches: b.readUInt32BE(4), cycle: b.readDoubleBE(8) };
}
