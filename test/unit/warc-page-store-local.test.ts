import { existsSync, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LocalPageStore } from '../../connectors/page-store-local';

let dir: string;
let store: LocalPageStore;

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(tmpdir(), 'page-store-'));
  store = new LocalPageStore(dir);
});

afterEach(async () => {
  jest.restoreAllMocks();
  await fsp.rm(dir, { recursive: true, force: true });
});

describe('LocalPageStore', () => {
  test('puts under nested keys, reads ranges and whole objects, lists keys', async () => {
    const body = Buffer.from('0123456789abcdef');
    const uri = await store.put('warc/2026/a.warc.gz', body);
    await store.put('warc/b.cdxj', Buffer.from('x'));
    await store.put('other/c', Buffer.from('y'));
    expect(uri).toBe(`file://${dir}/warc/2026/a.warc.gz`);
    expect(store.location).toBe(`file://${dir}`);
    expect((await store.read(uri, 10, 4)).toString()).toBe('abcd');
    expect((await store.readAll(uri)).equals(body)).toBe(true);
    expect(await store.list('warc/')).toEqual(['warc/2026/a.warc.gz', 'warc/b.cdxj']);
    await expect(store.read(uri, 14, 4)).rejects.toThrow('short read');
  });

  test('putParts stores the concatenation of its parts, more parts than one writev takes included', async () => {
    const parts = Array.from({ length: 2500 }, (_, i) => Buffer.alloc(i % 7 === 0 ? 0 : 1 + (i % 300), i & 0xff));
    const uri = await store.putParts('warc/parts.warc.gz', parts);
    expect((await store.readAll(uri)).equals(Buffer.concat(parts))).toBe(true);
  });

  test('putParts goes on after a short write, where it stopped', async () => {
    const parts = [Buffer.from('abc'), Buffer.from('defgh'), Buffer.from('ij')];
    const open = fsp.open.bind(fsp);
    jest.spyOn(fsp, 'open').mockImplementation(async (...args: Parameters<typeof fsp.open>) => {
      const fh = await open(...args);
      const writev = fh.writev.bind(fh);
      let calls = 0;
      // The first writev writes 4 bytes only: all of 'abc' and 'd'.
      fh.writev = (async (buffers: NodeJS.ArrayBufferView[]) => (calls++ === 0 ? writev([Buffer.from('abcd')]) : writev(buffers))) as typeof fh.writev;
      return fh;
    });
    const uri = await store.putParts('warc/short.warc.gz', parts);
    jest.restoreAllMocks();
    expect((await store.readAll(uri)).toString()).toBe('abcdefghij');
  });

  test('writes <key>.partial, fsynced, and renames it: the final name never holds a partial file', async () => {
    const body = Buffer.alloc(1 << 20, 7);
    const target = path.join(dir, 'warc/x.warc.gz');
    const realRename = fsp.rename.bind(fsp);
    const rename = jest.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
      // The moment before the rename: everything is in the partial file, nothing under the key.
      expect(from).toBe(target + '.partial');
      expect(to).toBe(target);
      expect(existsSync(target)).toBe(false);
      expect((await fsp.readFile(from)).equals(body)).toBe(true);
      expect(await store.list('warc/')).toEqual([]);
      return realRename(from, to);
    });
    await store.put('warc/x.warc.gz', body);
    expect(rename).toHaveBeenCalledTimes(1);
    expect(existsSync(target + '.partial')).toBe(false);
    expect(await store.list('warc/')).toEqual(['warc/x.warc.gz']);
  });

  test('a full disk fails with a message naming it and the path, and leaves nothing behind', async () => {
    // /dev/full answers every write with ENOSPC; the partial file is made to point at it.
    const partial = path.join(dir, 'warc/full.warc.gz.partial');
    await fsp.mkdir(path.dirname(partial), { recursive: true });
    await fsp.symlink('/dev/full', partial);
    const err = await store.put('warc/full.warc.gz', Buffer.alloc(1024)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(`LocalPageStore: disk is full (ENOSPC) writing ${partial}`);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(existsSync(path.join(dir, 'warc/full.warc.gz'))).toBe(false);
    expect(existsSync(partial)).toBe(false);
  });

  test('keys cannot leave the folder', async () => {
    await expect(store.put('../escape', Buffer.from('x'))).rejects.toThrow('not a relative path inside');
    await expect(store.put('/etc/passwd', Buffer.from('x'))).rejects.toThrow('not a relative path inside');
    await expect(store.readAll('file:///etc/passwd')).rejects.toThrow('is not inside');
  });
});
