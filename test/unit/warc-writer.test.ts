import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { WARCParser } from 'warcio';
import { LocalPageStore } from '../../connectors/page-store-local';
import type { PageStore } from '../../connectors/types';
import { WarcWriter, type WarcWriterOptions } from '../../lib/warc/writer';
import { capture } from './warc-fixtures';
import { TimeSlice } from '../../runtime/time-slice';
import { until } from '../support/until';

let dir: string;
let store: LocalPageStore;
const writers: WarcWriter[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'warc-writer-'));
  store = new LocalPageStore(dir);
});

afterEach(async () => {
  await Promise.allSettled(writers.splice(0).map((w) => w.close()));
  await rm(dir, { recursive: true, force: true });
});

function writer(opts: Partial<WarcWriterOptions> = {}): WarcWriter {
  const w = new WarcWriter({ store, prefix: 'test', ...opts });
  writers.push(w);
  return w;
}

const page = (n: number) => ({ type: 'exchange' as const, capture: capture(`http://example.com/p${n}`) });

/** A store whose puts fail while `failing` is set. */
class FlakyStore implements PageStore {
  failing = true;
  readonly location = 'flaky://';
  constructor(private readonly inner: PageStore) {}
  put(key: string, body: Buffer): Promise<string> {
    return this.failing ? Promise.reject(new Error(`put ${key}: connection reset`)) : this.inner.put(key, body);
  }
  read(uri: string, offset: number, length: number) { return this.inner.read(uri, offset, length); }
  readAll(uri: string) { return this.inner.readAll(uri); }
  list(prefix: string) { return this.inner.list(prefix); }
  async close() {}
}

/** V8's collector, for the test that a page is let go (node's --expose-gc, set from inside). */
function collectGarbage(): () => void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('node:v8').setFlagsFromString('--expose-gc');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('node:vm').runInNewContext('gc') as () => void;
}

describe('WarcWriter', () => {
  test('an appended page is let go once its records are built, not kept until its file is stored', async () => {
    const gc = collectGarbage();
    const w = writer({ maxAgeMs: 60_000 });
    let entry: ReturnType<typeof page> | null = page(1);
    const body = new WeakRef(entry.capture.body);
    const pointer = w.append(entry);
    entry = null;
    // The records are built in a later turn (appends are serialised); then the file stays open.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    expect(body.deref()).toBeUndefined();
    await w.flush();
    expect((await pointer).uri).toMatch(/^file:/);
    // Two full collections of the test process's heap: with --runInBand, after a hundred suites,
    // on a loaded machine, they took longer than jest's default 5 s once.
  }, 30_000);

  test('rotates by record count; pointers resolve once the file is on disk', async () => {
    const w = writer({ maxRecords: 4, maxAgeMs: 60_000 });
    const pending = [1, 2, 3, 4, 5].map((n) => w.append(page(n)));
    // Two exchanges (4 records) fill a file; the fifth page waits in an open file until flushed.
    const firstFour = await Promise.all(pending.slice(0, 4));
    expect(firstFour).toHaveLength(4);
    await w.flush();
    const pointers = await Promise.all(pending);
    const keys = await store.list('warc/');
    expect(pointers.slice(0, 4).map((p) => p.uri)).toEqual([pointers[0]!.uri, pointers[0]!.uri, pointers[2]!.uri, pointers[2]!.uri]);
    expect(new Set(pointers.map((p) => p.uri)).size).toBe(3);
    expect(keys.filter((k) => k.endsWith('.warc.gz'))).toHaveLength(3);
    expect(keys.filter((k) => k.endsWith('.cdxj'))).toHaveLength(3);
    for (const key of keys) expect(key).toMatch(/^warc\/test-\d{14}-\d{5}-[0-9a-f]{8}\.(warc\.gz|cdxj)$/);
    for (const p of pointers) expect(existsSync(fileURLToPath(p.uri))).toBe(true);
    expect(w.stats).toMatchObject({ files: 3, records: 3 + 10, failedFiles: 0 });
  });

  test('an append does not resolve before its file is stored', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const gated: PageStore = Object.assign(Object.create(store) as PageStore, {
      put: async (key: string, body: Buffer) => {
        await gate;
        return store.put(key, body);
      },
      putParts: async (key: string, parts: readonly Buffer[]) => {
        await gate;
        return store.putParts(key, parts);
      },
    });
    const w = writer({ store: gated });
    let resolved = false;
    const pending = w.append(page(1)).then((p) => ((resolved = true), p));
    const flushed = w.flush();
    await new Promise((r) => setTimeout(r, 20));
    expect(resolved).toBe(false);
    expect(await store.list('warc/')).toEqual([]);
    release();
    await flushed;
    expect(existsSync(fileURLToPath((await pending).uri))).toBe(true);
  });

  test('pages are compressed while the previous file is still being stored; backlogBytes counts what waits outside the open file', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stored: string[] = [];
    const gated: PageStore = Object.assign(Object.create(store) as PageStore, {
      putParts: async (key: string, parts: readonly Buffer[]) => {
        if (key.endsWith('.warc.gz')) await gate;
        stored.push(key);
        return store.putParts(key, parts);
      },
    });
    const w = writer({ store: gated, maxRecords: 2, maxAgeMs: 60_000 });
    expect(w.backlogBytes).toBe(0);
    const built: number[] = [];
    // Each exchange (2 records) fills a file: the first file's store hangs at the gate.
    const pending = [1, 2, 3].map((n) => w.append(page(n), () => built.push(n)));
    // Appended, not built yet: their bodies count.
    expect(w.backlogBytes).toBe(3 * page(1).capture.body.length);
    await until(() => built.length === 3);
    // Built while the first file waits for its store: the two sealed files wait, compressed.
    expect(built).toEqual([1, 2, 3]);
    expect(w.backlogBytes).toBeGreaterThan(0);
    expect(stored).toEqual([]);
    release();
    const [a, b, c] = await Promise.all(pending);
    // Stored one at a time, in the order sealed.
    expect(stored.filter((k) => k.endsWith('.warc.gz'))).toEqual([a, b, c].map((p) => `warc/${path.basename(fileURLToPath(p.uri))}`));
    await w.flush();
    expect(w.backlogBytes).toBe(0);
  });

  test('a pointer reads back the response record it names', async () => {
    const w = writer();
    const [pointer] = await Promise.all([w.append(page(7)), w.flush()]);
    const record = await WARCParser.parse([gunzipSync(await store.read(pointer.uri, pointer.offset, pointer.length))]);
    expect(record?.warcType).toBe('response');
    expect(record?.warcTargetURI).toBe('http://example.com/p7');
    expect(record?.warcHeaders.headers.get('WARC-Record-ID')).toBe(pointer.recordId);
  });

  test('rotates by age, from a timer', async () => {
    const w = writer({ maxAgeMs: 50 });
    const started = Date.now();
    const pointer = await w.append(page(1));
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(await store.list('warc/')).toContain(pointer.uri.slice(pointer.uri.indexOf('warc/')));
  });

  test('rotates by size', async () => {
    const w = writer({ maxBytes: 1 });
    const [a, b] = await Promise.all([w.append(page(1)), w.append(page(2))]);
    expect(a.uri).not.toBe(b.uri);
  });

  test('a failed store rejects every append in the file; the next file is fresh', async () => {
    const flaky = new FlakyStore(store);
    const w = writer({ store: flaky });
    const pending = [w.append(page(1)), w.append(page(2))];
    await expect(w.flush()).rejects.toThrow('connection reset');
    for (const p of pending) await expect(p).rejects.toThrow('connection reset');
    flaky.failing = false;
    const next = w.append(page(3));
    await w.flush();
    const pointer = await next;
    expect(pointer.offset).toBeGreaterThan(0);
    const file = await store.readAll(pointer.uri);
    const types = [];
    for await (const r of new WARCParser([file])) types.push(r.warcType);
    expect(types).toEqual(['warcinfo', 'request', 'response']);
    expect(w.stats).toMatchObject({ files: 1, failedFiles: 1 });
  });

  test('writes revisit, metadata and conversion entries', async () => {
    const w = writer();
    const first = w.append(page(1));
    await w.flush();
    const response = await first;
    const entries = [
      w.append({
        type: 'revisit',
        capture: capture('http://example.com/p1'),
        profile: 'server-not-modified',
        refersToTargetUri: 'http://example.com/p1',
        refersToDate: new Date(0),
      }),
      w.append({ type: 'metadata', targetUri: 'http://example.com/x.pdf', fields: [['outcome', 'NOT_HTML']] }),
      w.append({ type: 'conversion', targetUri: 'http://example.com/p1', text: 'hello', refersTo: response.recordId }),
    ];
    await w.close();
    const types = [];
    for (const p of await Promise.all(entries)) {
      types.push((await WARCParser.parse([gunzipSync(await store.read(p.uri, p.offset, p.length))]))?.warcType);
    }
    expect(types).toEqual(['revisit', 'metadata', 'conversion']);
  });

  test('a conversion entry given UTF-8 bytes stores the same block as one given the text', async () => {
    const text = 'Grüße aus Köln — 東京の天気 😀\n'.repeat(40);
    const w = writer({ prefix: 'text-bytes' });
    // As bytes may arrive: a view at an offset into a larger buffer (here Node's shared pool).
    const joined = Buffer.concat([Buffer.from('xx'), Buffer.from(text, 'utf8'), Buffer.from('yy')]);
    const [asString, asBytes] = [
      w.append({ type: 'conversion', targetUri: 'http://example.com/t', text, refersTo: '<urn:uuid:r>' }),
      w.append({ type: 'conversion', targetUri: 'http://example.com/t', text: new Uint8Array(joined.buffer, joined.byteOffset + 2, joined.length - 4), refersTo: '<urn:uuid:r>' }),
    ];
    await w.close();
    const blocks: string[] = [];
    for (const p of await Promise.all([asString, asBytes])) {
      const raw = gunzipSync(await store.read(p.uri, p.offset, p.length)).toString('utf8');
      const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
      blocks.push(`${/Content-Length: (\d+)/.exec(head)?.[1]} ${/WARC-Block-Digest: (\S+)/.exec(head)?.[1]} ${raw.slice(head.length + 4, -4)}`);
    }
    expect(blocks[1]).toBe(blocks[0]);
    expect(blocks[0]).toBe(`${Buffer.byteLength(text)} sha256:${createHash('sha256').update(text, 'utf8').digest('hex')} ${text}`);
  });

  test('refuses appends after close, and bad settings at construction', async () => {
    const w = writer();
    await w.close();
    await expect(w.append(page(1))).rejects.toThrow('closed');
    expect(() => writer({ maxRecords: 0 })).toThrow('maxRecords must be a positive integer');
    expect(() => writer({ prefix: '../x' })).toThrow('prefix');
    expect(() => writer({ gzipLevel: 0 })).toThrow('gzipLevel');
    expect(() => writer({ gzipLevel: 10 })).toThrow('gzipLevel');
  });

  test('compresses at the configured gzip level; the payload digest is the hash fetch hands over', async () => {
    const body = Buffer.from(Array.from({ length: 2000 }, (_, i) => `<p>paragraph ${i % 37} of some page text ${i % 11}</p>`).join('\n'));
    const sha256 = createHash('sha256').update(body).digest('hex');
    const sizes: number[] = [];
    for (const gzipLevel of [1, 9]) {
      const w = writer({ gzipLevel, prefix: `level${gzipLevel}` });
      const ptr = w.append({ type: 'exchange', capture: capture('http://example.com/big', { body }), payloadSha256: sha256 });
      await w.flush();
      const p = await ptr;
      const raw = gunzipSync(await store.read(p.uri, p.offset, p.length));
      expect(raw.toString('latin1')).toContain(`WARC-Payload-Digest: sha256:${sha256}`);
      sizes.push(p.length);
    }
    expect(sizes[1]!).toBeLessThan(sizes[0]!);
  });

  test('with a time slice, entries queued together are built over several turns of the event loop, in order', async () => {
    const events: string[] = [];
    const appendThree = (w: WarcWriter): Promise<Array<{ offset: number }>> => {
      const ptrs = [0, 1, 2].map((n) => w.append(page(n), () => events.push(`built p${n}`)));
      setImmediate(() => events.push('next turn'));
      return Promise.all(ptrs);
    };
    // Without a slice all three are built in the turn they were queued in.
    const plain = writer({ maxRecords: 100 });
    const plainPtrs = appendThree(plain);
    await plain.flush();
    await plainPtrs;
    expect(events).toEqual(['built p0', 'built p1', 'built p2', 'next turn']);
    // A slice spent after its first call in a turn (TimeSlice of 0 ms): one entry a turn.
    events.length = 0;
    const sliced = writer({ maxRecords: 100, slice: new TimeSlice(0) });
    const ptrs = appendThree(sliced);
    await sliced.flush();
    const at = await ptrs;
    expect(events.indexOf('next turn')).toBeGreaterThan(events.indexOf('built p0'));
    expect(events.indexOf('next turn')).toBeLessThan(events.indexOf('built p2'));
    expect(events.filter((e) => e.startsWith('built'))).toEqual(['built p0', 'built p1', 'built p2']);
    // Still written in append order, one file.
    expect(at[0].offset).toBeLessThan(at[1].offset);
    expect(at[1].offset).toBeLessThan(at[2].offset);
    expect(sliced.stats).toMatchObject({ files: 1, records: 1 + 6 });
  });
});
