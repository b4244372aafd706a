/**
 * The local key-value store (connectors/kv-store.ts) with its engine on a worker thread: one
 * worker_threads Worker opens and drives every such store of the process (LevelKvStore there),
 * and this thread talks to it through KvStore's interface. A batch is packed here into one buffer
 * (its keys and values as bytes) and transferred, not copied; the worker puts them into
 * LevelDB's batch and answers once the write is done (durable: on disk), so a batch is
 * acknowledged only after it is written. Reads come back the same way, keys and values as views
 * of one transferred buffer. The worker takes requests in the order they are sent and issues
 * each to the engine as it arrives, so the engine sees them in the order this thread made them,
 * as with a store on this thread: a read sent after a write's acknowledgement sees it.
 *
 * Why: the frontier's main thread was the intake's cap (docs/frontier-store.md, "A worker
 * thread owning the stores"): classic-level's batch puts, gets and their result Buffers are JS
 * and native work on the calling thread; here they run on the worker's.
 *
 * The worker runs the compiled kv-worker-thread.js beside this file; where there is none (the
 * tests run the TypeScript sources) the built one under dist/ (`npx tsc -p tsconfig.json` first).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { readAhead } from './kv-read-ahead';
import type { KvBatch, KvRange, KvStore, KvStoreOptions } from './kv-store';

/** A value's length in a packed list when the key had none. */
const ABSENT = 0xffffffff;
export const OP_PUT = 1;
export const OP_DEL = 2;

/** Bytes packed into one growing buffer of its own (transferable), each as its length (u32 LE) and the bytes. */
export class Packer {
  buf: Buffer;
  at = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafeSlow(Math.max(64, bytes));
  }

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.at + n) cap *= 2;
    const next = Buffer.allocUnsafeSlow(cap);
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }

  bytes(b: Uint8Array): void {
    this.room(4 + b.length);
    this.buf.writeUInt32LE(b.length, this.at);
    this.buf.set(b, this.at + 4);
    this.at += 4 + b.length;
  }

  absent(): void {
    this.room(4);
    this.buf.writeUInt32LE(ABSENT, this.at);
    this.at += 4;
  }

  /** The packed bytes' ArrayBuffer (to transfer) and length. */
  take(): { ab: ArrayBuffer; len: number } {
    return { ab: this.buf.buffer as ArrayBuffer, len: this.at };
  }
}

/** The bytes a list packs into. */
export function packedSize(list: ReadonlyArray<Uint8Array | undefined>): number {
  let n = 0;
  for (const b of list) n += 4 + (b === undefined ? 0 : b.length);
  return n;
}

/** A packed list read back: views of `ab` (undefined where packed absent). */
export function unpackList(ab: ArrayBuffer, len: number): Array<Buffer | undefined> {
  const buf = Buffer.from(ab, 0, len);
  const out: Array<Buffer | undefined> = [];
  for (let at = 0; at < len; ) {
    const n = buf.readUInt32LE(at);
    at += 4;
    if (n === ABSENT) out.push(undefined);
    else {
      out.push(buf.subarray(at, at + n));
      at += n;
    }
  }
  return out;
}

/** A packed list of keys and values, alternating, read back as pairs. */
function unpackPairs(ab: ArrayBuffer, len: number): Array<[Buffer, Buffer]> {
  const list = unpackList(ab, len);
  const out = new Array<[Buffer, Buffer]>(list.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = [list[2 * i]!, list[2 * i + 1]!];
  return out;
}

/** A range bound as a copy of its own: a Buffer's whole ArrayBuffer (8 KiB of Node's pool, often) would be cloned with it. */
const own = (b: Buffer): Uint8Array => new Uint8Array(b);

/** What the worker is asked (the store by number; ranges as bytes). */
export type Request =
  | { op: 'open'; id: number; s: number; dir: string; o: KvStoreOptions }
  | { op: 'write'; id: number; s: number; ab: ArrayBuffer; len: number; durable: boolean }
  | { op: 'getMany'; id: number; s: number; ab: ArrayBuffer; len: number }
  | { op: 'entries' | 'keys'; id: number; s: number; gte: Uint8Array; lt: Uint8Array; limit: number }
  | { op: 'iter'; id: number; s: number; it: number; gte: Uint8Array; lt: Uint8Array; limit: number }
  | { op: 'next'; id: number; it: number; n: number }
  | { op: 'itClose'; id: number; it: number }
  | { op: 'flush' | 'close'; id: number; s: number }
  | { op: 'size'; id: number; s: number; gte: Uint8Array; lt: Uint8Array };
/** The store thread's answer to a request, less its id. */
export type Reply = { ab?: ArrayBuffer; len?: number; r?: number } | { error: { message: string; code?: string; cause?: string } };
export type Answer = Reply & { id: number };
/** A request before its id is given (Link.ask). */
type Unsent = Request extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

function workerFile(): string {
  for (const f of [join(__dirname, 'kv-worker-thread.js'), join(__dirname, '..', 'dist', 'connectors', 'kv-worker-thread.js')]) if (existsSync(f)) return f;
  throw new Error('kv-worker: no compiled kv-worker-thread.js (build with `npx tsc -p tsconfig.json`)');
}

interface Waiter {
  resolve: (a: Answer) => void;
  reject: (e: Error) => void;
}

/** The one worker of the process and the requests waiting on it. */
class Link {
  private readonly w: Worker;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiter>();
  private dead: Error | null = null;
  /** Stores open (or opening) on it. */
  stores = 0;

  constructor() {
    // Its young generation small: what it allocates (a view a value, the binding's Buffers) dies
    // at once, and the process's --max-semi-space-size (32 MB from the launcher) would otherwise
    // give this thread as large a one as the main thread's.
    const w = (this.w = new Worker(workerFile(), { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } }));
    w.on('message', (a: Answer) => {
      const cb = this.waiting.get(a.id);
      if (!cb) return;
      this.waiting.delete(a.id);
      if (this.waiting.size === 0) w.unref();
      if ('error' in a) {
        const err = new Error(a.error.message, a.error.cause ? { cause: new Error(a.error.cause) } : undefined) as Error & { code?: string };
        if (a.error.code) err.code = a.error.code;
        cb.reject(err);
      } else cb.resolve(a);
    });
    const fail = (err: Error): void => {
      this.dead ??= err;
      if (link === this) link = null;
      for (const cb of this.waiting.values()) cb.reject(err);
      this.waiting.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`store thread exited (${code})`)));
    w.unref();
  }

  /** Send a request (its buffers in `transfer` moved, not copied) and wait for its answer. */
  ask(unsent: Unsent, transfer?: ArrayBuffer[]): Promise<Answer> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    const req = unsent as Request;
    req.id = id;
    return new Promise<Answer>((resolve, reject) => {
      if (this.waiting.size === 0) this.w.ref();
      this.waiting.set(id, { resolve, reject });
      this.w.postMessage(req, transfer);
    });
  }

  /** End the worker (no store open on it any more). */
  stop(): Promise<number> {
    if (link === this) link = null;
    this.dead ??= new Error('store thread stopped');
    return this.w.terminate();
  }
}

/** The store thread's young generation (MB). */
const YOUNG_MB = 16;

let link: Link | null = null;
let nextStore = 0;
let nextIter = 0;

/** A batch packed for the worker: its puts and deletes in one buffer. */
export class WorkerBatch implements KvBatch {
  private n = 0;
  private done = false;
  /** @internal */
  readonly pack = new Packer(16 << 10);

  put(key: Buffer, value: Buffer): void {
    if (key.length === 0 || value.length === 0) throw new Error(`KvBatch.put: empty ${key.length === 0 ? 'key' : 'value'} (classic-level leaks its copy of one)`);
    if (this.done) throw new Error('Batch is not open: cannot call put() after write() or close()');
    this.pack.u8(OP_PUT);
    this.pack.bytes(key);
    this.pack.bytes(value);
    this.n++;
  }

  del(key: Buffer): void {
    if (key.length === 0) throw new Error('KvBatch.del: empty key (classic-level leaks its copy of one)');
    if (this.done) throw new Error('Batch is not open: cannot call del() after write() or close()');
    this.pack.u8(OP_DEL);
    this.pack.bytes(key);
    this.n++;
  }

  get size(): number {
    return this.n;
  }

  get closed(): boolean {
    return this.done;
  }

  /** @internal WorkerKvStore.write */
  close(): void {
    this.done = true;
  }

  /** Close without writing: nothing was sent, so nothing to tell the store thread. */
  async discard(): Promise<void> {
    this.done = true;
  }
}

/** A written batch that had nothing to write but must be durable (kv-store.ts's SYNC_KEY). */
const SYNC_KEY = Buffer.from([0]);
const SYNC_VALUE = Buffer.from([0]);

export class WorkerKvStore implements KvStore {
  private constructor(readonly dir: string, private readonly link: Link, private readonly s: number) {}

  /** KvStore.open with the engine on the store thread (started by the first store opened). */
  static async open(dir: string, o: KvStoreOptions = {}): Promise<WorkerKvStore> {
    const l = (link ??= new Link());
    const s = nextStore++;
    l.stores++;
    try {
      await l.ask({ op: 'open', s, dir, o: { ...o, thread: 'main' } });
    } catch (err) {
      if (--l.stores === 0) await l.stop();
      throw err;
    }
    return new WorkerKvStore(dir, l, s);
  }

  async getMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>> {
    if (keys.length === 0) return [];
    const p = new Packer(packedSize(keys));
    for (const k of keys) p.bytes(k);
    const { ab, len } = p.take();
    const a = (await this.link.ask({ op: 'getMany', s: this.s, ab, len }, [ab])) as { ab: ArrayBuffer; len: number };
    return unpackList(a.ab, a.len);
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    return (await this.getMany([key]))[0];
  }

  getSync(): Buffer | undefined {
    throw new Error('KvStore.getSync: not on a store of the worker thread (open it with thread: main)');
  }

  batch(): WorkerBatch {
    return new WorkerBatch();
  }

  async write(batch: KvBatch, durable = false): Promise<void> {
    if (!(batch instanceof WorkerBatch)) throw new Error('WorkerKvStore.write: a batch of another store');
    if (batch.size === 0 && !durable) return batch.close();
    if (batch.size === 0) batch.put(SYNC_KEY, SYNC_VALUE);
    batch.close();
    const { ab, len } = batch.pack.take();
    await this.link.ask({ op: 'write', s: this.s, ab, len, durable }, [ab]);
  }

  async entries(range: KvRange): Promise<Array<[Buffer, Buffer]>> {
    const a = (await this.link.ask({ op: 'entries', s: this.s, gte: own(range.gte), lt: own(range.lt), limit: range.limit ?? -1 })) as { ab: ArrayBuffer; len: number };
    return unpackPairs(a.ab, a.len);
  }

  async keys(range: KvRange): Promise<Buffer[]> {
    const a = (await this.link.ask({ op: 'keys', s: this.s, gte: own(range.gte), lt: own(range.lt), limit: range.limit ?? -1 })) as { ab: ArrayBuffer; len: number };
    return unpackList(a.ab, a.len) as Buffer[];
  }

  /** An iterator on the store thread, read a chunk a request (its snapshot taken when it is made). */
  private iterator(range: KvRange): { nextv(n: number): Promise<Array<[Buffer, Buffer]>>; close(): Promise<void> } {
    const it = nextIter++;
    const opened = this.link.ask({ op: 'iter', s: this.s, it, gte: own(range.gte), lt: own(range.lt), limit: range.limit ?? -1 });
    return {
      nextv: async (n) => {
        await opened;
        const a = (await this.link.ask({ op: 'next', it, n })) as { ab: ArrayBuffer; len: number };
        return unpackPairs(a.ab, a.len);
      },
      close: async () => {
        await opened.catch(() => undefined);
        await this.link.ask({ op: 'itClose', it });
      },
    };
  }

  async scan(range: KvRange, chunk: number, onChunk: (entries: Array<[Buffer, Buffer]>) => Promise<void> | void): Promise<number> {
    return readAhead(this.iterator(range), chunk, onChunk);
  }

  /** scan, each key decoded here as UTF-8 into a string of its own (the range's bounds ASCII, as LevelKvStore's). */
  async scanUtf8Keys(range: KvRange, chunk: number, onChunk: (entries: Array<[string, Buffer]>) => Promise<void> | void): Promise<number> {
    for (const b of [range.gte, range.lt]) if (b.some((x) => x > 0x7f)) throw new Error('scanUtf8Keys: a range bound is not ASCII');
    return readAhead(this.iterator(range), chunk, (entries) => onChunk(entries.map(([k, v]) => [k.toString('utf8'), v])));
  }

  async flushMemtable(): Promise<void> {
    await this.link.ask({ op: 'flush', s: this.s });
  }

  async approximateBytes(range: KvRange): Promise<number> {
    return ((await this.link.ask({ op: 'size', s: this.s, gte: own(range.gte), lt: own(range.lt) })) as { r: number }).r;
  }

  async close(): Promise<void> {
    try {
      await this.link.ask({ op: 'close', s: this.s });
    } finally {
      if (--this.link.stores === 0) await this.link.stop();
    }
  }
}
