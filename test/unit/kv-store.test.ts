/**
 * KvStore's range reads in chunks (connectors/kv-store.ts): `scan` hands over
 * every entry of the range once, in key order, while the next chunk is already being read; the
 * writes a chunk's handler makes are not seen by the scan; a handler that fails ends the scan
 * with its error and leaves the store usable.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvStore } from '../../connectors/kv-store';
import { prefixRange } from '../../processors/frontier-keys';

const key = (tag: string, i: number): Buffer => Buffer.from(`${tag}${String(i).padStart(5, '0')}`);

interface Temp {
  dir: string;
  kv: KvStore;
}

/**
 * A fresh temporary folder for each test of the calling describe block, removed after it; with
 * `open`, a store opened in it (`kv`, at `dir`/db) and closed first.
 */
function tempStore(prefix: string, open = true): Temp {
  const t = {} as Temp;
  beforeEach(async () => {
    t.dir = mkdtempSync(join(tmpdir(), prefix));
    if (open) t.kv = await KvStore.open(join(t.dir, 'db'));
  });
  afterEach(async () => {
    if (open) await t.kv.close();
    rmSync(t.dir, { recursive: true, force: true });
  });
  return t;
}

describe('KvStore.scan', () => {
  const t = tempStore('kv-scan-');
  beforeEach(async () => {
    const b = t.kv.batch();
    for (let i = 0; i < 1000; i++) b.put(key('a', i), Buffer.from(`v${i}`));
    b.put(key('b', 0), Buffer.from('outside'));
    await t.kv.write(b);
  });

  it('hands over every entry of the range once, in key order, in chunks of at most the size asked', async () => {
    const seen: string[] = [];
    const sizes: number[] = [];
    const n = await t.kv.scan(prefixRange(Buffer.from('a')), 64, (entries) => {
      sizes.push(entries.length);
      for (const [k, v] of entries) seen.push(`${k.toString()}=${v.toString()}`);
    });
    expect(n).toBe(1000);
    expect(seen).toEqual(Array.from({ length: 1000 }, (_, i) => `${key('a', i).toString()}=v${i}`));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64);
  });

  it('does not see what its handler writes (the next chunk is read ahead, from the scan\'s snapshot)', async () => {
    let n = 0;
    await t.kv.scan(prefixRange(Buffer.from('a')), 100, async (entries) => {
      const b = t.kv.batch();
      for (const [k] of entries) {
        b.del(k);
        b.put(Buffer.concat([k, Buffer.from('x')]), Buffer.from('new'));
      }
      await t.kv.write(b);
      n += entries.length;
    });
    expect(n).toBe(1000);
    const after = await t.kv.entries(prefixRange(Buffer.from('a')));
    expect(after).toHaveLength(1000);
    expect(after.every(([k, v]) => k.toString().endsWith('x') && v.toString() === 'new')).toBe(true);
  });

  it('scanUtf8Keys hands over the same entries with the keys as strings, and refuses a range that is not ASCII', async () => {
    const seen: string[] = [];
    const n = await t.kv.scanUtf8Keys(prefixRange(Buffer.from('a')), 64, (entries) => {
      for (const [k, v] of entries) seen.push(`${typeof k}:${k}=${v.toString()}`);
    });
    expect(n).toBe(1000);
    expect(seen).toEqual(Array.from({ length: 1000 }, (_, i) => `string:${key('a', i).toString()}=v${i}`));
    await expect(t.kv.scanUtf8Keys({ gte: Buffer.from([0x61]), lt: Buffer.from([0xff]) }, 64, () => undefined)).rejects.toThrow(/not ASCII/);
  });

  it('a handler that fails ends the scan with its error, and the store stays usable', async () => {
    let calls = 0;
    await expect(
      t.kv.scan(prefixRange(Buffer.from('a')), 10, async () => {
        if (++calls === 3) throw new Error('handler failed');
      }),
    ).rejects.toThrow('handler failed');
    expect(calls).toBe(3);
    expect((await t.kv.get(key('a', 999)))?.toString()).toBe('v999');
  });
});

describe('KvStore compression', () => {
  const t = tempStore('kv-comp-', false);

  const row = (i: number): Buffer => Buffer.from(`https://host${i % 50}.example/some/long/path/${i}?q=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`);
  /** Write `n` rows (enough to fill several 64 KiB memtables, so table files are written), then close. */
  async function fill(path: string, compression: boolean, from: number, n: number): Promise<void> {
    const kv = await KvStore.open(path, { compression, writeBufferBytes: 64 << 10 });
    for (let i = from; i < from + n; i += 500) {
      const b = kv.batch();
      for (let j = i; j < i + 500; j++) b.put(key('r', j), row(j));
      await kv.write(b);
    }
    await kv.close();
  }
  const tableBytes = (path: string): number => readdirSync(path).filter((f) => f.endsWith('.ldb')).reduce((s, f) => s + statSync(join(path, f)).size, 0);

  it('reaches LevelDB: the same rows take more table bytes uncompressed', async () => {
    await fill(join(t.dir, 'snappy'), true, 0, 20_000);
    await fill(join(t.dir, 'plain'), false, 0, 20_000);
    expect(tableBytes(join(t.dir, 'plain'))).toBeGreaterThan(1.5 * tableBytes(join(t.dir, 'snappy')));
  });

  it('a store written compressed reads back opened uncompressed, and the other way round', async () => {
    const path = join(t.dir, 'db');
    await fill(path, true, 0, 10_000);
    await fill(path, false, 10_000, 10_000);
    for (const compression of [false, true]) {
      const kv = await KvStore.open(path, { compression });
      const got = await kv.entries({ gte: key('r', 0), lt: key('s', 0) });
      expect(got).toHaveLength(20_000);
      expect(got.every(([, v], i) => v.equals(row(i)))).toBe(true);
      await kv.close();
    }
  });
});

describe('KvBatch: nothing the native binding would leak', () => {
  const t = tempStore('kv-batch-');

  it('refuses an empty key or value (classic-level frees its copy of neither), and the batch stays usable', async () => {
    const b = t.kv.batch();
    b.put(key('a', 1), Buffer.from('one'));
    expect(() => b.put(key('a', 2), Buffer.alloc(0))).toThrow(/empty value/);
    expect(() => b.put(Buffer.alloc(0), Buffer.from('x'))).toThrow(/empty key/);
    expect(() => b.del(Buffer.alloc(0))).toThrow(/empty key/);
    expect(b.size).toBe(1);
    b.put(key('a', 3), Buffer.from('three'));
    await t.kv.write(b);
    expect((await t.kv.entries(prefixRange(Buffer.from('a')))).map(([k, v]) => `${k.toString()}=${v.toString()}`)).toEqual(['a00001=one', 'a00003=three']);
  });

  it('closes every batch it is given, an empty one too (the database holds each open batch until then)', async () => {
    const written = t.kv.batch();
    written.put(key('a', 1), Buffer.from('one'));
    await t.kv.write(written);
    const empty = t.kv.batch();
    await t.kv.write(empty);
    const synced = t.kv.batch();
    await t.kv.write(synced, true);
    for (const b of [written, empty, synced]) expect(() => b.put(key('a', 2), Buffer.from('late'))).toThrow(/not open/);
    expect(await t.kv.get(key('a', 2))).toBeUndefined();
  });
});
