/**
 * The store on a worker thread (connectors/kv-worker.ts, CRAWL_STORE_THREAD=worker) against the
 * store on this thread (LevelKvStore): the same writes give the same reads, ranges, scans and
 * frontier rows; a write is acknowledged once written (durable: still there when the database is
 * opened again on this thread); the engine's errors come back as its own. Runs the compiled
 * store thread under dist/ (build first: `npx tsc -p tsconfig.json`).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvStore, LevelKvStore, type KvRange } from '../../connectors/kv-store';
import { WorkerKvStore } from '../../connectors/kv-worker';
import { prefixRange } from '../../processors/frontier-keys';
import { UrlStore } from '../../processors/frontier-store';
import type { UrlStateMsg } from '../../lib/messages';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kv-worker-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A deterministic stream of pseudo-random numbers. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const hex = (list: Array<Buffer | undefined>): Array<string | null> => list.map((b) => (b === undefined ? null : b.toString('hex')));
const pairs = (list: Array<[Buffer | string, Buffer]>): string[] => list.map(([k, v]) => `${Buffer.isBuffer(k) ? k.toString('hex') : k}=${v.toString('hex')}`);

/** Names of this process's threads (Linux). */
const threadNames = (): string[] => readdirSync('/proc/self/task').map((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim());

describe('KvStore on the worker thread', () => {
  it('gives the same reads as the store on this thread after the same batches', async () => {
    const here = await KvStore.open(join(dir, 'here'), { thread: 'main' });
    const there = await KvStore.open(join(dir, 'there'), { thread: 'worker' });
    expect(here).toBeInstanceOf(LevelKvStore);
    expect(there).toBeInstanceOf(WorkerKvStore);
    expect(threadNames()).toContain('kv-store');
    const r = rng(7);
    const keyOf = (i: number): Buffer => Buffer.from(`${'abcd'[i % 4]}/${String(i).padStart(6, '0')}/${'é'.repeat(i % 3)}`);
    const written: Buffer[] = [];
    for (let round = 0; round < 20; round++) {
      const bs = [here.batch(), there.batch()];
      for (let j = 0; j < 300; j++) {
        const i = Math.floor(r() * 5000);
        if (r() < 0.2 && written.length) {
          const k = written[Math.floor(r() * written.length)];
          for (const b of bs) b.del(k);
        } else {
          const v = Buffer.alloc(1 + Math.floor(r() * 400), i & 0xff);
          written.push(keyOf(i));
          for (const b of bs) b.put(keyOf(i), v);
        }
      }
      expect(bs[1].size).toBe(bs[0].size);
      await Promise.all([here.write(bs[0], round % 5 === 0), there.write(bs[1], round % 5 === 0)]);
      expect(bs[1].closed).toBe(true);
    }
    const probe = [...written.slice(0, 500), keyOf(999_999), Buffer.from('zz')];
    expect(hex(await there.getMany(probe))).toEqual(hex(await here.getMany(probe)));
    expect(hex([await there.get(written[3])])).toEqual(hex([await here.get(written[3])]));
    expect(await there.getMany([])).toEqual([]);
    const ranges: KvRange[] = [prefixRange(Buffer.from('a')), { ...prefixRange(Buffer.from('b')), limit: 17 }, { gte: Buffer.from('c/001'), lt: Buffer.from('d/003') }, prefixRange(Buffer.from('q'))];
    for (const range of ranges) {
      expect(pairs(await there.entries(range))).toEqual(pairs(await here.entries(range)));
      expect(hex(await there.keys(range))).toEqual(hex(await here.keys(range)));
      const chunks: number[][] = [[], []];
      const seen: string[][] = [[], []];
      for (const [n, kv] of [here, there].entries()) {
        await kv.scan(range, 64, (es) => {
          chunks[n].push(es.length);
          seen[n].push(...pairs(es));
        });
      }
      expect(seen[1]).toEqual(seen[0]);
      expect(chunks[1]).toEqual(chunks[0]);
      const utf8: string[][] = [[], []];
      for (const [n, kv] of [here, there].entries()) await kv.scanUtf8Keys(range, 100, (es) => void utf8[n].push(...pairs(es)));
      expect(utf8[1]).toEqual(utf8[0]);
      expect(utf8[1].some((e) => e.includes('é')) || range.gte.toString() !== 'a').toBe(true);
    }
    await there.flushMemtable();
    expect(await there.approximateBytes({ gte: Buffer.from([0]), lt: Buffer.from([0xff]) })).toBeGreaterThan(0);
    expect(() => there.getSync(written[0])).toThrow(/worker/);
    await Promise.all([here.close(), there.close()]);
  });

  it('acknowledges a durable write once it is on disk: the database opened again on this thread holds it', async () => {
    const there = await KvStore.open(join(dir, 'db'), { thread: 'worker' });
    const b = there.batch();
    for (let i = 0; i < 1000; i++) b.put(Buffer.from(`k${i}`), Buffer.from(`v${i}`));
    await there.write(b, true);
    const gone = there.batch();
    gone.del(Buffer.from('k5'));
    await there.write(gone);
    expect(await there.get(Buffer.from('k5'))).toBeUndefined();
    expect((await there.get(Buffer.from('k6')))?.toString()).toBe('v6');
    await there.write(there.batch(), true);
    await there.close();
    const here = await KvStore.open(join(dir, 'db'), { thread: 'main' });
    expect((await here.get(Buffer.from('k999')))?.toString()).toBe('v999');
    expect(await here.get(Buffer.from('k5'))).toBeUndefined();
    await here.close();
  });

  it('fails as the engine does: a database already open is refused with its lock error; a scan whose handler fails ends with that error', async () => {
    const a = await KvStore.open(join(dir, 'db'), { thread: 'worker' });
    // frontier-restore.ts tells a held lock (wait, fail) from a damaged store (rebuild) by the message and its cause's.
    const err = (await KvStore.open(join(dir, 'db'), { thread: 'worker', lockWaitMs: 0 }).catch((e: unknown) => e)) as Error & { code?: string };
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('LEVEL_DATABASE_NOT_OPEN');
    expect(String((err.cause as Error | undefined)?.message)).toMatch(/lock/i);
    const b = a.batch();
    for (let i = 0; i < 300; i++) b.put(Buffer.from(`k${String(i).padStart(3, '0')}`), Buffer.from('v'));
    await a.write(b);
    await expect(a.scan(prefixRange(Buffer.from('k')), 50, () => Promise.reject(new Error('handler failed')))).rejects.toThrow('handler failed');
    expect((await a.keys({ ...prefixRange(Buffer.from('k')), limit: 2 })).map(String)).toEqual(['k000', 'k001']);
    expect(() => b.put(Buffer.from('late'), Buffer.from('x'))).toThrow(/not open/);
    await a.close();
  });

  it('keeps the same frontier rows and indexes through UrlStore', async () => {
    const row = (url: string, i: number): UrlStateMsg => ({
      url, host: new URL(url).host, state: i % 3 === 0 ? 'LEASED' : 'QUEUED', depth: i % 4, discovered_at: 1_700_000_000_000 + i, updated_at: 1_700_000_000_000 + i,
      lease_id: i % 3 === 0 ? `l${i}` : null, lease_expires_at: i % 3 === 0 ? 1_700_000_100_000 : null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
      sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
    });
    const stores = [await UrlStore.open(join(dir, 'u-here'), () => 0, { thread: 'main' }), await UrlStore.open(join(dir, 'u-there'), () => 0, { thread: 'worker' })];
    const urls = Array.from({ length: 400 }, (_, i) => `https://h${i % 7}.example/p/${i}?q=${i * 7}`);
    for (const s of stores) {
      const b = s.newBatch();
      urls.forEach((u, i) => s.stage(b, undefined, row(u, i)));
      await s.write(b);
    }
    const [a, b] = await Promise.all(stores.map((s) => s.rows([...urls.slice(0, 50), 'https://nowhere.example/'])));
    expect(b).toEqual(a);
    expect(stores[1].counts).toEqual(stores[0].counts);
    for (const h of ['h0.example', 'h4.example']) expect(await stores[1].head(h, 10)).toEqual(await stores[0].head(h, 10));
    expect((await stores[1].head('h0.example', -1)).length).toBeGreaterThan(10);
    expect(await stores[1].leased()).toEqual(await stores[0].leased());
    const hosts: string[][] = [[], []];
    for (const [n, s] of stores.entries()) await s.eachHost((hs) => void hosts[n].push(...hs.map(([h, sum]) => `${h}:${JSON.stringify(sum)}`)));
    expect(hosts[1]).toEqual(hosts[0]);
    await Promise.all(stores.map((s) => s.close()));
  });
});
