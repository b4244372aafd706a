/**
 * The sorting rebuild (processors/sorted-runs.ts, frontier-restore.ts `rebuild: 'sort'`) against
 * the two-pass one from the same changelog: every key and value of the store identical.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { UrlStateMsg, UrlStatus } from '../../lib/messages';
import { partitionForHost } from '../../lib/partitioner';
import { KvStore } from '../../connectors/kv-store';
import { rebuildTempDir, restoreStores, type RestoreOptions } from '../../processors/frontier-restore';
import { priorityLevel } from '../../processors/frontier-schedule';
import { KEY_ROW } from '../../processors/frontier-keys';
import { SortedRuns, sortLastWins } from '../../processors/sorted-runs';
import { FileLog } from '../../runtime/file-log';
import type { ChangelogSource } from '../../runtime/changelog';
import { MemoryChangelog } from '../support/memory-changelog';
import { rng } from '../support/rng';

const LEVELS = 4;
const levelOf = (r: UrlStateMsg): number => priorityLevel(r.fetched_at === null ? r.priority : undefined, r.depth, LEVELS);
const silent = pino({ level: 'silent' });
const STATES: UrlStatus[] = ['QUEUED', 'LEASED', 'FETCHED', 'FAILED', 'DEAD', 'DISALLOWED'];

function row(url: string, host: string, state: UrlStatus, rnd: () => number): UrlStateMsg {
  const t = 1_700_000_000_000 + Math.floor(rnd() * 1e7);
  const fetched = state === 'FETCHED' || rnd() < 0.2;
  return {
    url, host, state, depth: Math.floor(rnd() * 6), discovered_at: t - Math.floor(rnd() * 1e6), updated_at: t,
    lease_id: state === 'LEASED' ? `L${Math.floor(rnd() * 1e9)}` : null, lease_expires_at: state === 'LEASED' ? t + 60_000 : null,
    attempts: state === 'FAILED' ? 1 + Math.floor(rnd() * 3) : state === 'QUEUED' && rnd() < 0.2 ? 1 : 0,
    next_due_at: state === 'FAILED' ? t + Math.floor(rnd() * 1e6) : state === 'FETCHED' && rnd() < 0.8 ? t + 86_400_000 : null,
    fetched_at: fetched ? t - 5000 : null, http_status: fetched ? 200 : null, sha256: fetched ? 'ab'.repeat(32) : null, etag: null, last_modified: null,
    warc_uri: fetched ? 'file:///w.warc.gz' : null, warc_offset: fetched ? 7 : null, warc_length: fetched ? 99 : null,
    reason: state === 'FAILED' ? 'http-500' : state === 'QUEUED' && rnd() < 0.2 ? (rnd() < 0.5 ? 'lease-expired' : 'blocked') : null,
    ...(rnd() < 0.5 ? { priority: Math.round(rnd() * 100) / 100 } : {}),
    ...(rnd() < 0.7 ? { priority_class: 1 + Math.floor(rnd() * 3) } : {}),
    ...(rnd() < 0.1 ? { redirects: 1 + Math.floor(rnd() * 4) } : {}),
  };
}

/**
 * A changelog of `records` records over 3 partitions: several records a URL (any state, every
 * status), tombstones (expiry) and URLs found again after one, hosts on both schemes, and URLs
 * with characters beyond ASCII and beyond U+FFFF.
 */
function changelog(seed: number, records: number, also?: (url: string, host: string, row: UrlStateMsg | null, i: number) => void): MemoryChangelog {
  const rnd = rng(seed);
  const log = new MemoryChangelog(3);
  // 20 hosts in each partition
  const hosts: string[] = [];
  const per = [0, 0, 0];
  for (let i = 0; hosts.length < 60; i++) {
    const h = `h${i}.example${i % 23}.org`;
    if (per[partitionForHost(h, 3)]++ < 20) hosts.push(h);
  }
  const urls: Array<[string, string]> = [];
  for (let i = 0; i < records; i++) {
    if (urls.length < 50 || rnd() < 0.3) {
      const host = hosts[Math.floor(rnd() * hosts.length)];
      const scheme = rnd() < 0.5 ? 'https' : 'http';
      const odd = rnd() < 0.05 ? (rnd() < 0.5 ? 'é/ü' : '\u{1F600}x\uFFFD') : '';
      urls.push([`${scheme}://${host}/p/${Math.floor(rnd() * 1e6).toString(36)}${odd}?q=${'x'.repeat(Math.floor(rnd() * 60))}`, host]);
    }
    const [url, host] = urls[Math.floor(rnd() * urls.length)];
    const r = rnd() < 0.12 ? null : row(url, host, STATES[Math.floor(rnd() * STATES.length)], rnd);
    log.append(url, host, r);
    also?.(url, host, r, i);
  }
  return log;
}

/** The changelog's batches of all partitions interleaved (as crawl.urls is read from Kafka). */
function interleaved(src: MemoryChangelog, batch = 97): ChangelogSource {
  return {
    ends: (ps) => src.ends(ps),
    read: async (from, to, onBatch) => {
      const at = new Map(from);
      for (let more = true; more; ) {
        more = false;
        for (const [p, start] of at) {
          const end = to.get(p) ?? start;
          if (start >= end) continue;
          const recs = (src.parts.get(p) ?? []).slice(start, Math.min(end, start + batch));
          at.set(p, start + recs.length);
          await onBatch(p, recs);
          more = true;
        }
      }
    },
  };
}

/** Every entry of a store as hex pairs, but its random id. */
async function dump(dir: string): Promise<Map<string, string>> {
  const kv = await KvStore.open(dir);
  const out = new Map<string, string>();
  await kv.scan({ gte: Buffer.from([0]), lt: Buffer.from([0xff]) }, 1000, (entries) => {
    for (const [k, v] of entries) if (k.toString('latin1') !== 'mid') out.set(k.toString('hex'), v.toString('hex'));
  });
  await kv.close();
  return out;
}

describe('sortLastWins and SortedRuns', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kcrawl-runs-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the last record of each key, in key order', () => {
    const recs = [
      { key: 'b', value: Buffer.from('1') },
      { key: 'a', value: Buffer.from('2') },
      { key: 'b', value: null },
      { key: 'a', value: Buffer.from('3') },
      { key: 'c', value: Buffer.from('4') },
    ];
    expect(sortLastWins(recs).map((r) => [r.key, r.value?.toString() ?? null])).toEqual([['a', '3'], ['b', null], ['c', '4']]);
  });

  it.each(['inline', 'thread'] as const)('merges spilled runs and the buffered one: each key once, the last added, in key order (%s)', async (mode) => {
    const rnd = rng(7);
    const runs = new SortedRuns(join(dir, 'r'), 'utf8', mode);
    const want = new Map<string, string | null>();
    for (let i = 0; i < 20_000; i++) {
      const key = `k${Math.floor(rnd() * 3000)}${rnd() < 0.1 ? '\u{1F600}' : ''}`;
      const value = rnd() < 0.1 ? null : Buffer.from(`v${i}`.repeat(1 + Math.floor(rnd() * 3)));
      runs.add({ key, value });
      want.set(key, value === null ? null : value.toString());
      if (rnd() < 0.001) await runs.spill();
    }
    expect(runs.runs).toBeGreaterThan(5);
    expect(await merged(runs, 333)).toEqual(inKeyOrder(want));
    runs.destroy();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('SortedRuns merge over any number of runs', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kcrawl-runs-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // The merge's tree of losers: every run count (powers of two and not), runs of one record,
  // runs ending early, the same key in many runs (the last added wins).
  it.each([1, 2, 3, 4, 5, 7, 8, 9, 13, 30])('%i runs: each key once, the last added, in key order', async (k) => {
    const rnd = rng(100 + k);
    const runs = new SortedRuns(join(dir, `r${k}`), 'latin1', 'inline');
    const want = new Map<string, string | null>();
    for (let r = 0; r < k; r++) {
      const size = r % 4 === 1 ? 1 : 1 + Math.floor(rnd() * 400);
      for (let i = 0; i < size; i++) {
        const key = `k${Math.floor(rnd() * (r % 3 === 0 ? 50 : 2000))}`;
        const value = rnd() < 0.1 ? null : Buffer.from(`v${r}.${i}`);
        runs.add({ key, value });
        want.set(key, value === null ? null : value.toString());
      }
      if (r < k - 1 || k % 2 === 0) await runs.spill(); // an odd count's last run stays in memory
    }
    expect(await merged(runs, 97)).toEqual(inKeyOrder(want));
    runs.destroy();
  });
});

/** Every record `runs` merges (in chunks of `chunk` records), as [key, value as text or null]. */
async function merged(runs: SortedRuns, chunk: number): Promise<Array<[string, string | null]>> {
  const got: Array<[string, string | null]> = [];
  await runs.merge((c) => {
    for (let i = 0; i < c.length; i++) got.push([c.keys[i], c.values[i] === null ? null : c.values[i]!.toString()]);
  }, chunk);
  return got;
}

/** `want`'s entries sorted by key. */
function inKeyOrder(want: Map<string, string | null>): Array<[string, string | null]> {
  return [...want.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** A journal frame as runtime/log-segments.ts writes it (plain, or with its offset: explicit); a null value is a tombstone. */
function frame(key: string, value: Buffer | null, offset?: number): Buffer {
  const k = Buffer.from(key);
  const v = value ?? Buffer.alloc(0);
  const head = offset === undefined ? 4 : 12;
  const b = Buffer.alloc(head + 4 + k.length + 8 + v.length);
  b.writeUInt32LE(b.length - 4, 0);
  if (offset !== undefined) b.writeDoubleLE(offset, 4);
  b.writeUInt32LE(k.length, head);
  k.copy(b, head + 4);
  b.writeDoubleLE(1_700_000_000_000, head + 4 + k.length);
  v.copy(b, head + 4 + k.length + 8);
  return b;
}

describe('SortedRuns with a key prefix, and journal frames', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kcrawl-runs-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['inline', 'thread'] as const)('records and frames added in turn: the last of each key wins, keys as the prefix and their UTF-8 bytes, in byte order (%s)', async (mode) => {
    const rnd = rng(13);
    const runs = new SortedRuns(join(dir, 'r'), 'utf8', mode, KEY_ROW);
    const want = new Map<string, string | null>();
    let offset = 0;
    for (let round = 0; round < 60; round++) {
      const asFrames = round % 3;
      const batch: Buffer[] = [];
      for (let i = 0; i < 200; i++) {
        // Characters beyond U+FFFF sort after U+FFFD in UTF-8 byte order, before it in UTF-16 code units.
        const key = `k${Math.floor(rnd() * 900)}${rnd() < 0.2 ? (rnd() < 0.5 ? '\u{1F600}' : '\uFFFD') : ''}`;
        const value = rnd() < 0.1 ? null : Buffer.from(`v${round}.${i}`);
        want.set(key, value === null ? null : value.toString());
        if (asFrames === 0) runs.add({ key, value });
        else batch.push(frame(key, value, asFrames === 2 ? offset : undefined));
        offset++;
      }
      if (batch.length) runs.addFrames(Buffer.concat(batch), asFrames === 2, batch.length);
      if (round % 7 === 6) await runs.spill();
    }
    expect(runs.added).toBe(60 * 200);
    const got: Array<[string, string | null]> = [];
    await runs.merge((c) => {
      for (let i = 0; i < c.length; i++) {
        expect(c.keyBytes[i][0]).toBe(KEY_ROW);
        expect(c.keyBytes[i].toString('latin1')).toBe(c.keys[i]);
        got.push([c.keyBytes[i].toString('utf8', 1), c.values[i] === null ? null : c.values[i]!.toString()]);
      }
    }, 101);
    const bytes = (k: string): Buffer => Buffer.from(k);
    expect(got).toEqual([...want.entries()].sort((a, b) => Buffer.compare(bytes(a[0]), bytes(b[0]))));
    runs.destroy();
  });
});

describe('KvStore.flushMemtable', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kcrawl-flush-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the memtable out as a table, every entry still read back', async () => {
    const kv = await KvStore.open(dir, { writeBufferBytes: 64 << 20 });
    const b = kv.batch();
    for (let i = 0; i < 1000; i++) b.put(Buffer.from(`u${String(i).padStart(4, '0')}`), Buffer.from(`v${i}`));
    await kv.write(b);
    const tables = (): string[] => readdirSync(dir).filter((f) => f.endsWith('.ldb'));
    expect(tables()).toEqual([]); // 1,000 small entries stay in a 64 MiB memtable
    await kv.flushMemtable();
    expect(tables().length).toBeGreaterThan(0);
    expect((await kv.get(Buffer.from('u0999')))?.toString()).toBe('v999');
    expect((await kv.entries({ gte: Buffer.from('u'), lt: Buffer.from('v') })).length).toBe(1000);
    await kv.close();
  });
});

describe('rebuild by sorting = the two-pass rebuild', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kcrawl-rebuild-sort-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const opts = (name: string, o: Partial<RestoreOptions>): RestoreOptions => ({ dirOf: (p) => join(dir, name, `urls-${p}`), levelOf, levels: LEVELS, log: silent, ...o });

  async function compare(source: (log: MemoryChangelog) => ChangelogSource, hashIndex: boolean, sortThread = true): Promise<void> {
    const log = changelog(hashIndex ? 11 : 5, 12_000);
    const parts = [0, 1, 2];
    const a = await restoreStores(parts, log, opts('two-pass', { rebuild: 'two-pass', hashIndex }));
    // Runs of about 60 KiB: each partition's records spilled in many runs, its index entries in several.
    const b = await restoreStores(parts, source(log), opts('sort', { rebuild: 'sort', hashIndex, runBytes: 60_000, indexRunBytes: 20_000, sortThread }));
    let statuses = new Set<string>();
    for (const p of parts) {
      const [ra, rb] = [a[p], b[p]];
      expect(rb.rebuilt).toBe(true);
      expect(rb.rows).toBe(ra.rows);
      expect(rb.store.counts).toEqual(ra.store.counts);
      expect(rb.store.size).toBe(ra.store.size);
      statuses = new Set([...statuses, ...Object.keys(ra.store.counts)]);
      await ra.store.close();
      await rb.store.close();
      const [da, db] = [await dump(join(dir, 'two-pass', `urls-${p}`)), await dump(join(dir, 'sort', `urls-${p}`))];
      expect(da.size).toBeGreaterThan(1000);
      if (!hashIndex) {
        expect([...db.entries()]).toEqual([...da.entries()]);
      } else {
        // The two-pass copy keeps the hash entry of a URL tombstoned later; the sort writes live URLs' only.
        const extra = [...da.keys()].filter((k) => !db.has(k));
        expect(extra.length).toBeGreaterThan(0);
        expect(extra.every((k) => k.startsWith('73'))).toBe(true);
        expect([...db.entries()]).toEqual([...da.entries()].filter(([k]) => db.has(k)));
      }
    }
    expect([...statuses].sort()).toEqual([...STATES].sort());
    expect(readdirSync(join(dir, 'sort')).some((f) => f.endsWith('.rebuild'))).toBe(false);
  }

  it('same store from the embedded journal order (one partition after another)', () => compare((log) => log, false));
  it('same store from batches of all partitions interleaved (Kafka)', () => compare((log) => interleaved(log), false));
  it('same store with runs kept as objects and sorted inline', () => compare((log) => interleaved(log), false, false));
  it('with the hash index: the same entries less the hashes of URLs deleted', () => compare((log) => interleaved(log), true));

  it.each([true, false])('from the embedded journal (segments, a cleaned one, frames read whole): the same store as the two-pass rebuild (sort thread %s)', async (sortThread) => {
    const journal = new FileLog({ dir: join(dir, 'journal'), partitions: 3, segmentBytes: 64 * 1024 });
    const t0 = Date.now();
    const log = changelog(9, 12_000, (url, host, r) => journal.append([{ topic: 'urls', key: url, host, value: r }], t0));
    journal.flush();
    expect(await journal.compact(t0)).toBeGreaterThan(0);
    // More records after the cleaning: the active segment and closed ones past the cleaned file.
    const more = changelog(10, 3000, (url, host, r) => journal.append([{ topic: 'urls', key: url, host, value: r }], t0));
    for (const [p, recs] of more.parts) for (const r of recs) log.parts.get(p)!.push({ ...r, offset: log.parts.get(p)!.length });
    journal.flush();
    const src = journal.changelog('urls');
    const framed: number[] = [];
    const source: ChangelogSource = { ...src, readFrames: (from, to, onFrames, onBatch) => src.readFrames!(from, to, (p, f) => (framed.push(f.count), onFrames(p, f)), onBatch) };
    const parts = [0, 1, 2];
    const a = await restoreStores(parts, log, opts('two-pass', { rebuild: 'two-pass' }));
    const b = await restoreStores(parts, source, opts('sort', { rebuild: 'sort', runBytes: 60_000, indexRunBytes: 20_000, sortThread }));
    journal.close(); // its segments' descriptors, left open, outlived the folder (26 in the jest process)
    expect(framed.length).toBeGreaterThan(10);
    for (const p of parts) {
      expect(b[p].rebuilt).toBe(true);
      expect(b[p].store.counts).toEqual(a[p].store.counts);
      expect(b[p].store.size).toBe(a[p].store.size);
      await a[p].store.close();
      await b[p].store.close();
      const [da, db] = [await dump(join(dir, 'two-pass', `urls-${p}`)), await dump(join(dir, 'sort', `urls-${p}`))];
      expect(da.size).toBeGreaterThan(1000);
      expect([...db.entries()]).toEqual([...da.entries()]);
    }
    // Records the cleaner removed were never read: fewer than were written.
    expect(b.reduce((n, r) => n + r.rows, 0)).toBeLessThan(15_000);
    expect(b.reduce((n, r) => n + r.rows, 0)).toBe(framed.reduce((n, c) => n + c, 0));
  });

  it('a crashed rebuild\'s runs are removed and the rebuild starts again', async () => {
    const log = changelog(3, 3000);
    const o = opts('crash', { rebuild: 'sort', runBytes: 50_000 });
    const stale = rebuildTempDir(o.dirOf(0));
    const runs = new SortedRuns(join(stale, 'rows'));
    runs.add({ key: 'https://h0.example0.org/stale', value: Buffer.from('not a row') });
    await runs.spill();
    const [r] = await restoreStores([0], log, o);
    expect(r.rebuilt).toBe(true);
    const got = await r.store.rows(['https://h0.example0.org/stale']);
    expect(got[0]).toBeUndefined();
    await r.store.close();
    expect(readdirSync(join(dir, 'crash')).some((f) => f.endsWith('.rebuild'))).toBe(false);
  });
});
