/**
 * A PageStore in a local folder, for development and single-machine crawls. Objects are written
 * to `<key>.partial`, fsynced and renamed, so a file under its final name is always complete.
 */
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { PageStore } from './types';

const PARTIAL = '.partial';
/** Buffers a writev takes at once (IOV_MAX is 1,024 on Linux). */
const WRITEV_MAX = 1024;

/** Every byte of `parts`, in order, through writev; a short write goes on where it stopped. */
async function writeAll(fh: fsp.FileHandle, parts: readonly Buffer[]): Promise<void> {
  let i = 0; // the first part not written whole
  let done = 0; // bytes of parts[i] written
  while (i < parts.length) {
    const batch = parts.slice(i, i + WRITEV_MAX);
    if (done > 0) batch[0] = batch[0].subarray(done);
    let { bytesWritten } = await fh.writev(batch);
    for (const b of batch) {
      if (bytesWritten < b.length) {
        done += bytesWritten;
        break;
      }
      bytesWritten -= b.length;
      i++;
      done = 0;
    }
  }
}

export class LocalPageStore implements PageStore {
  readonly location: string;
  private readonly root: string;

  constructor(dir: string) {
    this.root = path.resolve(dir);
    this.location = pathToFileURL(this.root).href;
  }

  put(key: string, body: Buffer): Promise<string> {
    return this.putParts(key, [body]);
  }

  async putParts(key: string, parts: readonly Buffer[]): Promise<string> {
    const target = this.pathOf(key);
    const partial = target + PARTIAL;
    try {
      await fsp.mkdir(path.dirname(target), { recursive: true });
      const fh = await fsp.open(partial, 'w');
      try {
        await writeAll(fh, parts);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(partial, target);
      await syncDir(path.dirname(target));
    } catch (err) {
      await fsp.rm(partial, { force: true }).catch(() => undefined);
      throw describe(err, partial);
    }
    return pathToFileURL(target).href;
  }

  async read(uri: string, offset: number, length: number): Promise<Buffer> {
    const file = this.pathOfUri(uri);
    const fh = await fsp.open(file, 'r');
    try {
      const buf = Buffer.alloc(length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      if (got < length) {
        throw new Error(`short read of ${file}: wanted ${length} bytes at ${offset}, the file ends after ${got}`);
      }
      return buf;
    } finally {
      await fh.close();
    }
  }

  async readAll(uri: string): Promise<Buffer> {
    return fsp.readFile(this.pathOfUri(uri));
  }

  async list(prefix: string): Promise<string[]> {
    let entries: string[];
    try {
      entries = await fsp.readdir(this.root, { recursive: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const keys: string[] = [];
    for (const entry of entries) {
      const key = entry.split(path.sep).join('/');
      if (key.endsWith(PARTIAL) || !key.startsWith(prefix)) continue;
      if ((await fsp.stat(path.join(this.root, entry))).isFile()) keys.push(key);
    }
    return keys.sort();
  }

  async close(): Promise<void> {}

  /** Keys are relative paths that must stay inside the store's folder. */
  private pathOf(key: string): string {
    const target = path.resolve(this.root, key);
    if (path.isAbsolute(key) || !target.startsWith(this.root + path.sep)) {
      throw new Error(`LocalPageStore: key "${key}" is not a relative path inside ${this.root}`);
    }
    return target;
  }

  private pathOfUri(uri: string): string {
    const file = fileURLToPath(uri);
    if (!file.startsWith(this.root + path.sep)) {
      throw new Error(`LocalPageStore: ${uri} is not inside ${this.location}`);
    }
    return file;
  }
}

/** Make the rename itself durable: it lives in the directory's entries. */
async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function describe(err: unknown, file: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    const what = code === 'ENOSPC' ? 'disk is full' : 'disk quota is exceeded';
    return Object.assign(new Error(`LocalPageStore: ${what} (${code}) writing ${file}`, { cause: err }), { code });
  }
  return err;
}
