/**
 * processors/sorted-runs.ts's runs sorted and written on a thread of their own: a rebuild's main
 * thread reads the changelog and writes the store, and sorting (about 2 µs a record in
 * JavaScript) was the largest part of what the external sort added to it. A run comes here as
 * records serialised in the order added (the run file's own format, unsorted) in a transferred
 * buffer; the worker parses, sorts (last of each key wins) and writes it.
 *
 * Run as a worker this file answers tasks; where no compiled worker file exists (the tests run
 * the TypeScript sources) a run is sorted and written on the calling thread.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { sortRunBuffer } from './sorted-runs';

const WORKER_FILE = join(__dirname, 'sorted-runs-worker.js');
const TASK = 'kcrawl-sort-run';

interface Task {
  task: typeof TASK;
  id: number;
  /** Chunks of serialised records: each whole in its own ArrayBuffer (transferred). */
  bufs: Buffer[];
  path: string;
  encoding: BufferEncoding;
  /** How each chunk holds its records (sorted-runs.ts CHUNK_RUN, ...). */
  formats: number[];
  prefix: number | null;
}
type Answer = { id: number; bytes: number; heapBytes: number } | { id: number; error: string };

/**
 * Sort threads by lane: a rebuild's changelog runs go to lane 0, its index entries' runs to lane
 * 1, so a merge waiting for its index runs does not wait behind the row runs of partitions read
 * ahead (docs/frontier-store.md, "The rebuild's waits").
 */
interface Lane {
  worker: Worker;
  waiting: Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>;
  heapBytes: number;
}
const lanes = new Map<number, Lane>();
let nextId = 0;

/** The sort threads' V8 heaps (total) after their last runs, for progress logs (0 before the first). */
export function sortThreadHeapBytes(): number {
  let n = 0;
  for (const l of lanes.values()) n += l.heapBytes;
  return n;
}

function theWorker(lane: number): Lane {
  const have = lanes.get(lane);
  if (have) return have;
  const w = new Worker(WORKER_FILE);
  const l: Lane = { worker: w, waiting: new Map(), heapBytes: 0 };
  w.on('message', (a: Answer) => {
    const cb = l.waiting.get(a.id);
    l.waiting.delete(a.id);
    if (l.waiting.size === 0) w.unref();
    if (!cb) return;
    if ('error' in a) cb.reject(new Error(`sort thread: ${a.error}`));
    else {
      l.heapBytes = a.heapBytes;
      cb.resolve(a.bytes);
    }
  });
  const fail = (err: Error): void => {
    if (lanes.get(lane) !== l) return; // stopped by stopSortThread: it had nothing to do
    lanes.delete(lane);
    for (const cb of l.waiting.values()) cb.reject(err);
    l.waiting.clear();
  };
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`sort thread exited (${code})`)));
  w.unref();
  lanes.set(lane, l);
  return l;
}

/**
 * End the sort threads that have nothing to do (a rebuild done: a thread's heap, tens of MiB, is
 * not kept for the rest of the process's life). A later sort starts another.
 */
export async function stopSortThread(): Promise<void> {
  for (const [lane, l] of [...lanes]) {
    if (l.waiting.size > 0) continue;
    lanes.delete(lane);
    await l.worker.terminate();
  }
}

/**
 * Sort the serialised records of `bufs` (each a view from the start of an ArrayBuffer of its
 * own, transferred) and write them to `path`, on the sort thread of `lane` (runs of one lane
 * are sorted one after another). Resolves with the bytes written.
 */
export function sortRunOffThread(bufs: Buffer[], path: string, encoding: BufferEncoding, formats: number[], prefix: number | null, workerFile = WORKER_FILE, lane = 0): Promise<number> {
  if (workerFile !== WORKER_FILE || !existsSync(WORKER_FILE)) {
    try {
      return Promise.resolve(sortRunBuffer(bufs, path, encoding, formats, prefix));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
  const l = theWorker(lane);
  const id = nextId++;
  return new Promise<number>((resolve, reject) => {
    l.waiting.set(id, { resolve, reject });
    l.worker.ref();
    l.worker.postMessage({ task: TASK, id, bufs, path, encoding, formats, prefix } satisfies Task, bufs.map((b) => b.buffer as ArrayBuffer));
  });
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  port.on('message', (t: Task) => {
    if (t?.task !== TASK) return;
    try {
      const bytes = sortRunBuffer(t.bufs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)), t.path, t.encoding, t.formats, t.prefix);
      port.postMessage({ id: t.id, bytes, heapBytes: getHeapStatistics().total_heap_size } satisfies Answer);
    } catch (err) {
      port.postMessage({ id: t.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Answer);
    }
  });
}
