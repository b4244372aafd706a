/**
 * The store thread of connectors/kv-worker.ts: opens the stores it is asked to (LevelKvStore,
 * LevelDB through classic-level on this thread and libuv's pool) and answers requests in the
 * order they come, each issued to the engine as it arrives. Batches and key lists come as one
 * transferred buffer (kv-worker.ts Packer); values go back the same way.
 */
import { writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { LevelKvStore, type KvRange, type KvStore, type KvStoreOptions } from './kv-store';
import { RocksKvStore } from './kv-rocksdb';
import { OP_DEL, OP_PUT, Packer, packedSize, unpackList, type Reply, type Request } from './kv-worker';

const port = parentPort!;

/**
 * The thread's name in /proc (top -H, the benchmark's CPU by thread), given once the first store is
 * open: threads inherit their creator's name, and libuv's pool and LevelDB's own thread are started
 * by that open, so they keep Node's. Linux only; harmless elsewhere.
 */
let named = false;
function nameThread(): void {
  if (named) return;
  named = true;
  try {
    writeFileSync('/proc/thread-self/comm', 'kv-store');
  } catch {
    // no /proc
  }
}
type ThreadStore = KvStore & { iterator(range: KvRange): { nextv(n: number): Promise<Array<[Buffer, Buffer]>>; close(): Promise<void> } };
const stores = new Map<number, ThreadStore>();

/** The engine: LevelDB, or RocksDB for a measurement (CRAWL_STORE_ENGINE=rocksdb; kv-rocksdb.ts). */
function openStore(dir: string, o: KvStoreOptions): Promise<ThreadStore> {
  return process.env.CRAWL_STORE_ENGINE === 'rocksdb' ? RocksKvStore.open(dir, o) : LevelKvStore.open(dir, o);
}
const iters = new Map<number, { nextv(n: number): Promise<Array<[Buffer, Buffer]>>; close(): Promise<void> }>();

const buf = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.length);

function storeOf(s: number): ThreadStore {
  const st = stores.get(s);
  if (!st) throw new Error(`store thread: no store ${s} open`);
  return st;
}

function reply(id: number, a: Reply): void {
  port.postMessage({ id, ...a }, 'ab' in a && a.ab ? [a.ab] : undefined);
}

function packed(list: ReadonlyArray<Buffer | undefined>): { ab: ArrayBuffer; len: number } {
  const p = new Packer(packedSize(list));
  for (const b of list) if (b === undefined) p.absent();
  else p.bytes(b);
  return p.take();
}

function packedPairs(pairs: ReadonlyArray<[Buffer, Buffer]>): { ab: ArrayBuffer; len: number } {
  let n = 0;
  for (const [k, v] of pairs) n += 8 + k.length + v.length;
  const p = new Packer(n);
  for (const [k, v] of pairs) {
    p.bytes(k);
    p.bytes(v);
  }
  return p.take();
}

/** A batch's puts and deletes from its packed bytes, into the store's own batch (classic-level copies each key and value). */
function write(st: ThreadStore, ab: ArrayBuffer, len: number, durable: boolean): Promise<void> {
  const b = st.batch();
  const bytes = Buffer.from(ab, 0, len);
  for (let at = 0; at < len; ) {
    const op = bytes[at++];
    const kn = bytes.readUInt32LE(at);
    const key = bytes.subarray(at + 4, at + 4 + kn);
    at += 4 + kn;
    if (op === OP_PUT) {
      const vn = bytes.readUInt32LE(at);
      b.put(key, bytes.subarray(at + 4, at + 4 + vn));
      at += 4 + vn;
    } else if (op === OP_DEL) b.del(key);
    else throw new Error(`store thread: bad batch op ${op}`);
  }
  return st.write(b, durable);
}

async function handle(m: Request): Promise<Reply> {
  switch (m.op) {
    case 'open':
      stores.set(m.s, await openStore(m.dir, m.o));
      nameThread();
      return {};
    case 'write':
      await write(storeOf(m.s), m.ab, m.len, m.durable);
      return {};
    case 'getMany':
      return packed(await storeOf(m.s).getMany(unpackList(m.ab, m.len) as Buffer[]));
    case 'entries':
      return packedPairs(await storeOf(m.s).entries({ gte: buf(m.gte), lt: buf(m.lt), limit: m.limit }));
    case 'keys':
      return packed(await storeOf(m.s).keys({ gte: buf(m.gte), lt: buf(m.lt), limit: m.limit }));
    case 'iter':
      iters.set(m.it, storeOf(m.s).iterator({ gte: buf(m.gte), lt: buf(m.lt), limit: m.limit }));
      return {};
    case 'next': {
      const it = iters.get(m.it);
      if (!it) throw new Error(`store thread: no iterator ${m.it}`);
      return packedPairs(await it.nextv(m.n));
    }
    case 'itClose': {
      const it = iters.get(m.it);
      iters.delete(m.it);
      await it?.close();
      return {};
    }
    case 'flush':
      await storeOf(m.s).flushMemtable();
      return {};
    case 'size':
      return { r: await storeOf(m.s).approximateBytes({ gte: buf(m.gte), lt: buf(m.lt) }) };
    case 'close': {
      const st = storeOf(m.s);
      stores.delete(m.s);
      await st.close();
      return {};
    }
  }
}

port.on('message', (m: Request) => {
  // handle() runs synchronously up to its first await: the engine is asked in arrival order.
  handle(m).then(
    (a) => reply(m.id, a),
    (err: Error & { code?: string; cause?: { message?: string } }) =>
      reply(m.id, { error: { message: String(err?.message ?? err), code: err?.code, cause: err?.cause?.message } }),
  );
});
