/**
 * The URL table on disk (processors/frontier-store.ts) against the in-memory table it replaced
 * (test/support/url-table.ts): random upserts and deletes of rows in every state must read back
 * the same rows, and the indexes must hold exactly the entries the rows call for (host queues
 * in priority-then-age order, due times, leases, state counts), also after the store is closed
 * and reopened, and after it is rebuilt from the changelog alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { UrlStateMsg, UrlStatus } from '../../lib/messages';
import { dueKey, hostQueueRange, indexEntry, prefixRange, queueKey, queuedAtFront, rowAndQueueKeyRoom, rowKey, urlOfQueueKey, writeRowAndQueueKeys } from '../../processors/frontier-keys';
import { KvStore } from '../../connectors/kv-store';
import { checkpointPath, readCheckpoint, restoreStores } from '../../processors/frontier-restore';
import { priorityLevel, queueLayout, queueSlotOf } from '../../processors/frontier-schedule';
import { DEFAULTS } from '../../lib/config';
import { schemaBefore, loadSchema } from '../../lib/avro';
import * as avro from 'avsc';
import { decodeStoredRow, encodeRow, encodeStoredRow, STORE_LAYOUT, storedRow, UrlStore } from '../../processors/frontier-store';
import { MemoryChangelog } from '../support/memory-changelog';
import { rng } from '../support/rng';
import { UrlTable } from '../support/url-table';

const LEVELS = 4;
const levelOf = (r: UrlStateMsg): number => priorityLevel(r.fetched_at === null ? r.priority : undefined, r.depth, LEVELS);
const silent = pino({ level: 'silent' });

function row(url: string, host: string, fields: Partial<UrlStateMsg> = {}): UrlStateMsg {
  return {
    url, host, state: 'QUEUED', depth: 1, discovered_at: 1_700_000_000_000, updated_at: 1_700_000_000_000, lease_id: null, lease_expires_at: null,
    attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null, last_modified: null,
    warc_uri: null, warc_offset: null, warc_length: null, reason: null, ...fields,
  };
}

/** A row as Avro gives it back: optional fields with their defaults. */
function asStored(r: UrlStateMsg): UrlStateMsg {
  return { ...r, redirects: r.redirects ?? 0, priority: r.priority ?? null, priority_class: r.priority_class ?? null };
}

/** A random row of one of `hosts`, in any state, with the fields that state has. */
function randomRow(rnd: () => number, hosts: string[], urls: string[]): UrlStateMsg {
  const host = hosts[Math.floor(rnd() * hosts.length)];
  const pick = urls.filter((u) => u.startsWith(`http://${host}/`));
  const url = pick.length && rnd() < 0.6 ? pick[Math.floor(rnd() * pick.length)] : `http://${host}/p/${Math.floor(rnd() * 1e6).toString(36)}?q=${'x'.repeat(Math.floor(rnd() * 60))}`;
  const states: UrlStatus[] = ['QUEUED', 'QUEUED', 'LEASED', 'FETCHED', 'FAILED', 'DEAD', 'DISALLOWED'];
  const state = states[Math.floor(rnd() * states.length)];
  const t = 1_700_000_000_000 + Math.floor(rnd() * 1e7);
  const fetched = state === 'FETCHED' || rnd() < 0.2;
  return row(url, host, {
    state, depth: Math.floor(rnd() * 6), updated_at: t, discovered_at: t - Math.floor(rnd() * 1e6),
    ...(rnd() < 0.5 ? { priority: Math.round(rnd() * 100) / 100 } : {}),
    ...(rnd() < 0.1 ? { redirects: 1 + Math.floor(rnd() * 4) } : {}),
    ...(rnd() < 0.7 ? { priority_class: 1 + Math.floor(rnd() * 3) } : {}),
    ...(state === 'LEASED' ? { lease_id: `L${Math.floor(rnd() * 1e9)}`, lease_expires_at: t + 60_000 } : {}),
    ...(state === 'FAILED' ? { attempts: 1 + Math.floor(rnd() * 3), next_due_at: t + Math.floor(rnd() * 1e6), reason: 'http-500' } : {}),
    ...(state === 'QUEUED' && rnd() < 0.2 ? { reason: rnd() < 0.5 ? 'lease-expired' : 'blocked', attempts: 1 } : {}),
    ...(fetched ? { fetched_at: t - 5000, http_status: 200, sha256: 'ab'.repeat(32), warc_uri: 'file:///w.warc.gz', warc_offset: 7, warc_length: 99 } : {}),
    ...(state === 'FETCHED' ? { next_due_at: rnd() < 0.8 ? t + 86_400_000 : null } : {}),
  });
}

/** What the indexes must hold for a set of rows. */
function expectedIndexes(rows: Iterable<UrlStateMsg>, hosts: string[], now: number): { queues: Record<string, string[]>; due: string[]; leased: string[]; counts: Record<string, number> } {
  const queued = new Map<string, Array<[Buffer, string]>>();
  const due: Array<[Buffer, string]> = [];
  const leased: string[] = [];
  const counts: Record<string, number> = {};
  for (const r of rows) {
    counts[r.state] = (counts[r.state] ?? 0) + 1;
    if (r.state === 'QUEUED') {
      const list = queued.get(r.host) ?? [];
      list.push([queueKey(r.host, levelOf(r), queuedAtFront(r), r.updated_at, r.url), r.url]);
      queued.set(r.host, list);
    } else if (r.state === 'LEASED') leased.push(r.url);
    else if ((r.state === 'FAILED' || r.state === 'FETCHED') && r.next_due_at !== null && r.next_due_at <= now) due.push([dueKey(r.next_due_at, r.url), r.url]);
  }
  const byKey = (a: [Buffer, string], b: [Buffer, string]): number => Buffer.compare(a[0], b[0]);
  return {
    queues: Object.fromEntries(hosts.map((h) => [h, (queued.get(h) ?? []).sort(byKey).map((e) => e[1])])),
    due: due.sort(byKey).map((e) => e[1]),
    leased: leased.sort(),
    counts,
  };
}

async function storeIndexes(store: UrlStore, hosts: string[], now: number): Promise<ReturnType<typeof expectedIndexes>> {
  const queues: Record<string, string[]> = {};
  for (const h of hosts) queues[h] = (await store.head(h, -1)).map((r) => r.url);
  const counts: Record<string, number> = {};
  for (const [k, v] of Object.entries(store.counts)) if (v) counts[k] = v;
  return { queues, due: (await store.due(now, -1)).map((r) => r.url), leased: (await store.leased()).map((r) => r.url).sort(), counts };
}

describe('UrlStore against the in-memory UrlTable', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'urlstore-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each([1, 7, 42])('seed %i: random upserts and deletes read back alike; indexes follow the rows; reopen and rebuild agree', async (seed) => {
    const rnd = rng(seed);
    // Hosts whose names share prefixes, so one host's queue range must not take in another's.
    const hosts = ['a.test', 'a.test.example', 'b.test', 'www.b.test', 'c.test'];
    const table = new UrlTable();
    const changelog = new MemoryChangelog();
    let store = await UrlStore.open(join(dir, 'live'), levelOf);
    const urls: string[] = [];
    for (let step = 0; step < 1500; step++) {
      const b = store.newBatch();
      // A batch of a few changes, as one frontier operation stages them.
      const n = 1 + Math.floor(rnd() * 6);
      const inBatch = new Map<string, UrlStateMsg | undefined>();
      for (let i = 0; i < n; i++) {
        if (urls.length && rnd() < 0.1) {
          const url = urls[Math.floor(rnd() * urls.length)];
          const prev = inBatch.has(url) ? inBatch.get(url) : table.get(url);
          if (!prev) continue;
          store.stage(b, asStored(prev), null);
          table.delete(url);
          inBatch.set(url, undefined);
          changelog.append(url, prev.host, null);
          continue;
        }
        const next = randomRow(rnd, hosts, urls);
        const prev = inBatch.has(next.url) ? inBatch.get(next.url) : table.get(next.url);
        store.stage(b, prev ? asStored(prev) : undefined, next);
        table.set(next);
        inBatch.set(next.url, next);
        changelog.append(next.url, next.host, next);
        if (!prev) urls.push(next.url);
      }
      await store.write(b);
      if (step % 300 === 299) {
        const sample = urls.filter(() => rnd() < 0.3);
        const got = await store.rows(sample);
        expect(got).toEqual(sample.map((u) => (table.get(u) ? asStored(table.get(u)!) : undefined)));
      }
    }
    const now = 1_700_000_000_000 + 6e6;
    const live = [...table.hosts()].map(([u]) => table.get(u)!);
    const want = expectedIndexes(live, hosts, now);
    expect(await storeIndexes(store, hosts, now)).toEqual(want);
    expect(await store.rows(urls)).toEqual(urls.map((u) => (table.get(u) ? asStored(table.get(u)!) : undefined)));

    // Closed and reopened: the same rows, indexes and counts.
    await store.close();
    store = await UrlStore.open(join(dir, 'live'), levelOf);
    expect(await storeIndexes(store, hosts, now)).toEqual(want);
    await store.close();

    // Rebuilt from the changelog alone (no checkpoint): the same again, with host summaries.
    const [rebuilt] = await restoreStores([0], changelog, { dirOf: () => join(dir, 'rebuilt'), levelOf, levels: LEVELS, log: silent });
    expect(rebuilt.rebuilt).toBe(true);
    expect(await storeIndexes(rebuilt.store, hosts, now)).toEqual(want);
    expect(await rebuilt.store.rows(urls)).toEqual(urls.map((u) => (table.get(u) ? asStored(table.get(u)!) : undefined)));
    const summaries = await rebuilt.store.hostSummaries(hosts);
    expect(summaries.map((s) => s?.queued ?? 0)).toEqual(hosts.map((h) => want.queues[h].length));
    await rebuilt.store.close();
  }, 60_000); // 1,500 batches through LevelDB: 2-3 s here, more on a busy machine

  it('a host queue reads in priority level, then put-back-at-front, then oldest first', async () => {
    const store = await UrlStore.open(join(dir, 's'), levelOf);
    const b = store.newBatch();
    const rows = [
      row('http://h.test/late-deep', 'h.test', { depth: 3, updated_at: 5 }),
      row('http://h.test/old-deep', 'h.test', { depth: 3, updated_at: 1 }),
      row('http://h.test/seed', 'h.test', { depth: 0, updated_at: 9 }),
      row('http://h.test/lost-lease', 'h.test', { depth: 3, updated_at: 10, reason: 'lease-expired', attempts: 1 }),
      row('http://h.test/scored', 'h.test', { depth: 3, updated_at: 8, priority: 0.9 }),
      row('http://h.test.other/x', 'h.test.other', { depth: 0 }),
    ];
    for (const r of rows) store.stage(b, undefined, r);
    await store.write(b);
    // seed (depth 0) and scored (0.9) share level 0, where the older comes first.
    expect(await store.queue('h.test')).toEqual([
      'http://h.test/scored', 'http://h.test/seed', 'http://h.test/lost-lease', 'http://h.test/old-deep', 'http://h.test/late-deep',
    ]);
    expect((await store.head('h.test', 2)).map((r) => r.url)).toEqual(['http://h.test/scored', 'http://h.test/seed']);
    expect(hostQueueRange('h.test').lt.compare(queueKey('h.test.other', 0, false, 0, 'x'))).toBeLessThan(0);
    // Leasing the head moves it out of the queue and into the leases.
    const b2 = store.newBatch();
    const leased = { ...rows[2], state: 'LEASED' as const, lease_id: 'L1', lease_expires_at: 99 };
    store.stage(b2, rows[2], leased);
    await store.write(b2);
    expect((await store.head('h.test', 1))[0].url).toBe('http://h.test/scored');
    expect(await store.leased()).toEqual([expect.objectContaining({ url: 'http://h.test/seed', host: 'h.test' })]);
    expect(store.counts).toEqual({ QUEUED: 5, LEASED: 1 });
    expect(indexEntry(leased, levelOf)![0].equals(prefixRange(Buffer.from('l')).gte)).toBe(false);
    await store.close();
  });
});

describe('index entries', () => {
  it('have a key and a value that are not empty, in every state (KvBatch takes no empty value)', () => {
    const rnd = rng(7);
    const hosts = ['a.test', 'b.test'];
    let seen = 0;
    for (let i = 0; i < 500; i++) {
      const e = indexEntry(randomRow(rnd, hosts, []), levelOf);
      if (!e) continue;
      seen++;
      expect(e[0].length).toBeGreaterThan(0);
      expect(e[1].length).toBeGreaterThan(0);
    }
    expect(seen).toBeGreaterThan(200);
  });
});

describe('UrlStore.rows: many URLs at once', () => {
  it('reads rows of URLs in any order (split into several reads, in key order) and answers in the order asked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'urlstore-rows-'));
    const store = await UrlStore.open(dir, levelOf);
    try {
      const rnd = rng(5);
      const b = store.newBatch();
      const known = new Map<string, UrlStateMsg>();
      for (let i = 0; i < 1500; i++) {
        const host = `h${i % 37}.test`;
        const r = row(`https://${host}/p/${Math.floor(rnd() * 1e9).toString(36)}-${i}`, host, { depth: i % 5 });
        known.set(r.url, r);
        store.stage(b, undefined, r);
      }
      await store.write(b);
      // Known URLs and unknown ones, shuffled, with repeats: more than one read's worth.
      const asked = [...known.keys()].filter(() => rnd() < 0.6);
      for (let i = 0; i < 400; i++) asked.push(`https://h${i % 41}.test/none/${i}`);
      asked.push(asked[3], asked[10]);
      for (let i = asked.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [asked[i], asked[j]] = [asked[j], asked[i]];
      }
      expect(asked.length).toBeGreaterThan(1000);
      const got = await store.rows(asked);
      expect(got).toEqual(asked.map((u) => (known.has(u) ? asStored(known.get(u)!) : undefined)));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('UrlStore: priority classes', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'url-store-class-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const slotOf = (r: UrlStateMsg): number => queueSlotOf(r, DEFAULTS);

  // The cases main's in-memory table had for its class bits, through the store's Avro rows.
  it.each<[string, UrlStateMsg]>([
    ['with a priority class', row('http://a.test/11', 'a.test', { priority: 0.3, priority_class: 2 })],
    ['class 3 with a redirect and no priority', row('http://a.test/12', 'a.test', { redirects: 1, priority_class: 3 })],
    ['class 1 leased', row('http://a.test/13', 'a.test', { state: 'LEASED', lease_id: 'L2', lease_expires_at: 5, priority_class: 1 })],
    ['no class (written before classes)', row('http://a.test/14', 'a.test', { priority: 0.5 })],
  ])('a row %s reads back as written', async (_label, r) => {
    const store = await UrlStore.open(join(dir, 's'), slotOf);
    const b = store.newBatch();
    store.stage(b, undefined, r);
    await store.write(b);
    expect((await store.rows([r.url]))[0]).toEqual(asStored(r));
    await store.close();
  });

  it('a row in the UrlState schema before classes (a changelog of an earlier release) reads with no class', async () => {
    const store = await UrlStore.open(join(dir, 's'), slotOf);
    const { priority_class: _c, ...old } = asStored(row('http://a.test/old', 'a.test', { state: 'FETCHED', fetched_at: 5 }));
    const bytes = avro.Type.forSchema(schemaBefore(loadSchema('crawl.UrlState.v1'), 2) as avro.Schema).toBuffer(old);
    const b = store.newBatch();
    store.stageRaw(b, old.url, bytes);
    await store.write(b);
    expect((await store.rows([old.url]))[0]).toEqual({ ...old, priority_class: null });
    await store.close();
  });

  it('a host queue reads class first, then level; classHead reads one class', async () => {
    const store = await UrlStore.open(join(dir, 's'), slotOf);
    const b = store.newBatch();
    for (const r of [
      row('http://h.test/tail', 'h.test', { depth: 3, priority: 0.95, updated_at: 1 }),
      row('http://h.test/mid', 'h.test', { depth: 1, priority: 0.3, updated_at: 2 }),
      row('http://h.test/item', 'h.test', { depth: 4, priority_class: 1, updated_at: 3 }),
      row('http://h.test/top', 'h.test', { depth: 1, priority: 0.6, priority_class: 2, updated_at: 4 }),
    ]) store.stage(b, undefined, r);
    await store.write(b);
    expect(await store.queue('h.test')).toEqual(['http://h.test/item', 'http://h.test/top', 'http://h.test/mid', 'http://h.test/tail']);
    expect((await store.classHead('h.test', 2, DEFAULTS.priorityLevels, 5)).map((r) => r.url)).toEqual(['http://h.test/top', 'http://h.test/mid']);
    expect((await store.classHead('h.test', 3, DEFAULTS.priorityLevels, 5)).map((r) => r.url)).toEqual(['http://h.test/tail']);
    expect(await store.classHead('h.test.x', 1, DEFAULTS.priorityLevels, 5)).toEqual([]);
    await store.close();
  });

  it('a checkpoint made before classes (levels, not classes x levels) has the store rebuilt', async () => {
    const changelog = new MemoryChangelog(1);
    changelog.append('http://a.test/', 'a.test', row('http://a.test/', 'a.test'));
    const o = { dirOf: () => join(dir, 'urls-0'), levelOf: slotOf, log: silent };
    const [a] = await restoreStores([0], changelog, { ...o, levels: DEFAULTS.priorityLevels });
    await a.store.close();
    const [b] = await restoreStores([0], changelog, { ...o, levels: queueLayout(DEFAULTS.priorityLevels) });
    expect(b.rebuilt).toBe(true);
    expect(await b.store.queue('a.test')).toEqual(['http://a.test/']);
    await b.store.close();
  });
});

describe('restoreStores: checkpoint, tail replay, rebuild', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'restore-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const opts = (): Parameters<typeof restoreStores>[2] => ({ dirOf: (p) => join(dir, `urls-${p}`), levelOf, levels: LEVELS, log: silent });

  it('replays only the tail after a checkpoint, and rebuilds a store whose checkpoint is gone, damaged or names another store', async () => {
    const log = new MemoryChangelog();
    for (let i = 0; i < 50; i++) log.append(`http://a.test/${i}`, 'a.test', row(`http://a.test/${i}`, 'a.test', { updated_at: i }));
    let [r] = await restoreStores([0], log, opts());
    expect(r).toMatchObject({ rebuilt: true, rows: 50, offset: 50 });
    await r.store.close();
    expect(readCheckpoint(join(dir, 'urls-0'))).toMatchObject({ offset: 50, store: r.store.id });

    // The tail: 10 rows leased, 5 new, 2 tombstones.
    for (let i = 0; i < 10; i++) log.append(`http://a.test/${i}`, 'a.test', row(`http://a.test/${i}`, 'a.test', { state: 'LEASED', lease_id: `L${i}`, lease_expires_at: 1 }));
    for (let i = 50; i < 55; i++) log.append(`http://a.test/${i}`, 'a.test', row(`http://a.test/${i}`, 'a.test', { updated_at: i }));
    for (const i of [20, 21]) log.append(`http://a.test/${i}`, 'a.test', null);
    [r] = await restoreStores([0], log, opts());
    expect(r).toMatchObject({ rebuilt: false, rows: 17, offset: 67 });
    expect(r.store.counts).toEqual({ QUEUED: 43, LEASED: 10 });
    expect((await r.store.hostSummaries(['a.test']))[0]?.queued).toBe(43);
    expect((await r.store.queue('a.test')).slice(0, 2)).toEqual(['http://a.test/10', 'http://a.test/11']);
    await r.store.close();

    for (const damage of [(): void => rmSync(checkpointPath(join(dir, 'urls-0'))), (): void => writeFileSync(checkpointPath(join(dir, 'urls-0')), '{"store":'),
      (): void => writeFileSync(checkpointPath(join(dir, 'urls-0')), JSON.stringify({ store: 'other', offset: 67, levels: LEVELS, writtenAt: 0 }))]) {
      damage();
      [r] = await restoreStores([0], log, opts());
      expect(r).toMatchObject({ rebuilt: true, rows: 67 });
      expect(r.store.counts).toEqual({ QUEUED: 43, LEASED: 10 });
      await r.store.close();
    }
  });

  it('a store deleted (folder gone) is rebuilt; a checkpoint past the changelog end (a recreated topic) too', async () => {
    const log = new MemoryChangelog();
    log.append('http://a.test/1', 'a.test', row('http://a.test/1', 'a.test'));
    let [r] = await restoreStores([0], log, opts());
    await r.store.close();
    rmSync(join(dir, 'urls-0'), { recursive: true, force: true });
    [r] = await restoreStores([0], log, opts());
    expect(r).toMatchObject({ rebuilt: true, rows: 1 });
    await r.store.close();
    const fresh = new MemoryChangelog();
    [r] = await restoreStores([0], fresh, opts());
    expect(r).toMatchObject({ rebuilt: true, rows: 0 });
    expect(r.store.size).toBe(0);
    await r.store.close();
  });
});

describe('store layout (STORE_LAYOUT)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'url-store-layout-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each<[string, string, string]>([
    ['https', 'https://a.test/p?q=1', 'a.test'],
    ['http with a port', 'http://a.test:8080/p', 'a.test'],
    ['a longer host name with the host as its start', 'http://a.test.example/x', 'a.test'],
    ['a URL not starting with its host', 'https://b.test/x', 'a.test'],
    ['another scheme', 'ftp://a.test/x', 'a.test'],
    ['non-ASCII path and host', 'https://bücher.test/straße/ü?x=ß', 'bücher.test'],
    ['the host alone', 'https://a.test', 'a.test'],
  ])('a queue key gives back its URL: %s', (_label, url, host) => {
    const key = queueKey(host, 3, true, 1_700_000_000_123, url);
    expect(urlOfQueueKey(key)).toBe(url);
    expect(key.subarray(0, 1 + Buffer.byteLength(host) + 1).equals(Buffer.from(`q${host}\u0000`))).toBe(true);
    // Made from the row key's bytes (a sorted rebuild): the same bytes.
    expect(queueKey(host, 3, true, 1_700_000_000_123, url, rowKey(url)).toString('hex')).toBe(key.toString('hex'));
  });

  it.each<[string, string, string]>([
    ['https', 'https://a.test/p?q=1', 'a.test'],
    ['http with a port', 'http://a.test:8080/p', 'a.test'],
    ['a longer host name with the host as its start', 'http://a.test.example/x', 'a.test'],
    ['a URL not starting with its host', 'https://b.test/x', 'a.test'],
    ['a URL not starting with its host, non-ASCII', 'https://bücher.test/ß', 'bücher.test.other'],
    ['another scheme', 'ftp://a.test/x', 'a.test'],
    ['non-ASCII path and host', 'https://bücher.test/straße/ü?x=ß', 'bücher.test'],
    ['non-ASCII path only', 'http://a.test/straße/😀', 'a.test'],
    ['the host alone', 'https://a.test', 'a.test'],
  ])('the row and queue keys written together are rowKey and queueKey byte for byte: %s', (_label, url, host) => {
    const out = Buffer.alloc(rowAndQueueKeyRoom(url, host));
    for (const [level, front, at] of [[0, false, 0], [3, true, 1_700_000_000_123], [255, false, 2 ** 40 + 7]] as Array<[number, boolean, number]>) {
      const k = writeRowAndQueueKeys(out, host, level, front, at, url)!;
      expect(out.subarray(0, k.rowEnd).toString('hex')).toBe(rowKey(url).toString('hex'));
      expect(out.subarray(k.rowEnd, k.end).toString('hex')).toBe(queueKey(host, level, front, at, url).toString('hex'));
    }
    expect(writeRowAndQueueKeys(Buffer.alloc(rowAndQueueKeyRoom(url, host) - 1), host, 0, false, 0, url)).toBeNull();
  });

  it('a queued row is staged under rowKey and queueKey with encodeStoredRow\'s bytes, whatever its size (the scratch buffer grown or passed by)', async () => {
    const rnd = rng(23);
    const rows: UrlStateMsg[] = [];
    for (let i = 0; i < 300; i++) {
      const r = randomRow(rnd, ['a.test', 'www.b.test', 'bücher.test'], []);
      if (r.state === 'QUEUED') rows.push(asStored(r));
    }
    rows.push(asStored(row('https://a.test/' + 'x'.repeat(30_000), 'a.test'))); // keys past the first scratch buffer
    rows.push(asStored(row('https://a.test/big-reason', 'a.test', { reason: 'r'.repeat(200_000) }))); // a row past what is left of it
    rows.push(asStored(row('https://a.test/' + 'y'.repeat(400_000), 'a.test'))); // past the scratch buffer's limit: allocated
    rows.push(asStored(row('https://c.test/not-its-host', 'a.test')));
    rows.push(asStored(row('https://a.test/after', 'a.test', { updated_at: 5 })));
    const store = await UrlStore.open(join(dir, 's'), levelOf);
    const b = store.newBatch();
    for (const r of rows) store.stage(b, undefined, r);
    // A queued row changed to another queued row: its old queue entry goes, the new one comes.
    const moved = { ...rows[rows.length - 1], updated_at: 6 };
    store.stage(b, rows[rows.length - 1], moved);
    await store.write(b, true);
    await store.close();
    const kv = await KvStore.open(join(dir, 's'));
    const want = new Map<string, string>();
    for (const r of [...rows.slice(0, -1), moved]) {
      want.set(rowKey(r.url).toString('hex'), encodeStoredRow(r).toString('hex'));
      want.set(indexEntry(r, levelOf)![0].toString('hex'), '01');
    }
    const got = new Map<string, string>();
    for (const tag of ['u', 'q']) for (const [k, v] of await kv.entries(prefixRange(Buffer.from(tag)))) got.set(k.toString('hex'), v.toString('hex'));
    expect(got.size).toBe(want.size);
    expect(got).toEqual(want);
    await kv.close();
  }, 30_000);

  it('a queue key holds the URL without its scheme://host', () => {
    const url = 'https://www.example.test/articles/2026/12/06/a-long-path?id=12345';
    const key = queueKey('www.example.test', 0, false, 0, url);
    // tag, host, 00, level, order, time, form, then the path only
    expect(key.length).toBe(1 + 16 + 1 + 2 + 8 + 1 + url.length - 'https://www.example.test'.length);
    // Keys of one host and level still sort by the time queued.
    expect(Buffer.compare(queueKey('h.test', 1, false, 5, 'http://h.test/z'), queueKey('h.test', 1, false, 6, 'https://h.test/a'))).toBeLessThan(0);
  });

  it.each([['ASCII', 60], ['ASCII', 63], ['ASCII', 64], ['ASCII', 120], ['ASCII', 9000], ['non-ASCII', 80]])('a stored row is its changelog bytes without the URL (%s, %i characters) and reads back whole', async (kind, length) => {
    const base = kind === 'ASCII' ? 'https://a.test/' : 'https://bücher.test/straße/';
    const url = base + (kind === 'ASCII' ? 'x' : 'ü').repeat(length - base.length);
    const r = asStored(row(url, kind === 'ASCII' ? 'a.test' : 'bücher.test', { priority: 0.5, priority_class: 2 }));
    const full = encodeRow(r);
    const stored = storedRow(full);
    const urlBytes = Buffer.byteLength(url);
    const varint = 2 * urlBytes < 128 ? 1 : 2 * urlBytes < 16384 ? 2 : 3;
    expect(stored.length).toBe(full.length - varint - urlBytes);
    expect(full.subarray(varint + urlBytes).equals(stored)).toBe(true);
    expect(decodeStoredRow(Buffer.concat([Buffer.from('u'), Buffer.from(url)]), stored)).toEqual(r);
    const store = await UrlStore.open(join(dir, 's'), levelOf);
    const b = store.newBatch();
    store.stage(b, undefined, r);
    await store.write(b);
    expect(await store.rows([url, `${url}-other`])).toEqual([r, undefined]);
    expect(await store.rowsAfter('', 10)).toEqual([r]);
    await store.close();
  });

  it('a row encoded for the store is its changelog bytes without the URL (random rows of every state)', () => {
    const rnd = rng(11);
    const hosts = ['a.test', 'www.b.test', 'bücher.test'];
    for (let i = 0; i < 500; i++) {
      const r = randomRow(rnd, hosts, []);
      expect(encodeStoredRow(r).equals(storedRow(encodeRow(r)))).toBe(true);
    }
  });

  it('bytes that are not a row are refused', () => {
    expect(() => storedRow(Buffer.from([0x81]))).toThrow(/not a UrlState row/);
    expect(() => storedRow(Buffer.from([0x20, 0x61]))).toThrow(/not a UrlState row/);
    expect(() => storedRow(Buffer.from([0x03, 0x61]))).toThrow(/not a UrlState row/);
  });

  it.each([['1 (before layouts were numbered)', null], ['2', '2']])('a store of an older layout, %s, is rebuilt from the changelog', async (_label, layout) => {
    const changelog = new MemoryChangelog();
    for (let i = 0; i < 20; i++) changelog.append(`https://a.test/${i}`, 'a.test', row(`https://a.test/${i}`, 'a.test', { updated_at: i }));
    const o = { dirOf: () => join(dir, 'urls-0'), levelOf, levels: LEVELS, log: silent };
    const [a] = await restoreStores([0], changelog, o);
    expect(a.store.layout).toBe(STORE_LAYOUT);
    await a.store.close();
    // What layout 1 wrote: no layout fact, queue keys ending in the whole URL (rows whole, as layout 2 too).
    const kv = await KvStore.open(join(dir, 'urls-0'));
    const b = kv.batch();
    if (layout === null) b.del(Buffer.from('mlayout'));
    else b.put(Buffer.from('mlayout'), Buffer.from(layout));
    b.put(Buffer.from('uhttps://a.test/1'), encodeRow(row('https://a.test/1', 'a.test', { updated_at: 1 })));
    const r0 = row('https://a.test/0', 'a.test', { updated_at: 0 });
    const v1 = Buffer.concat([Buffer.from('qa.test\u0000'), Buffer.from([levelOf(r0), 1]), Buffer.alloc(8), Buffer.from(r0.url)]);
    b.del(queueKey('a.test', levelOf(r0), false, 0, r0.url));
    b.put(v1, Buffer.from([0])); // layout 1 wrote an empty value; KvBatch takes none (nothing reads it)
    await kv.write(b, true);
    await kv.close();

    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
    const [r] = await restoreStores([0], changelog, { ...o, log });
    expect(r).toMatchObject({ rebuilt: true, rows: 20 });
    expect(r.store.layout).toBe(STORE_LAYOUT);
    expect(lines).toContainEqual(expect.objectContaining({ reason: `store layout ${layout ?? 1}, this release writes ${STORE_LAYOUT}` }));
    expect((await r.store.rows(['https://a.test/1']))[0]).toEqual(asStored(row('https://a.test/1', 'a.test', { updated_at: 1 })));
    expect(await r.store.queue('a.test')).toEqual(Array.from({ length: 20 }, (_, i) => `https://a.test/${i}`));
    await r.store.close();
    // Rebuilt in this layout: the next start replays only the tail.
    const [again] = await restoreStores([0], changelog, o);
    expect(again).toMatchObject({ rebuilt: false, rows: 0 });
    await again.store.close();
  });
});
