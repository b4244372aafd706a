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

let worker: Worker | null = null;
let nextId = 0;
let heapBytes = 0;

/** The sort thread's V8 heap (total) after its last run, for progress logs (0 before the first). */
export function sortThreadHeapBytes(): number {
  return heapBytes;
}
const waiting = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();

function theWorker(): Worker {
  if (worker) return worker;
  const w = new Worker(WORKER_FILE);
  w.on('message', (a: Answer) => {
    const cb = waiting.get(a.id);
    waiting.delete(a.id);
    if (waiting.size === 0) w.unref();
    if (!cb) return;
    if ('error' in a) cb.reject(new Error(`sort thread: ${a.error}`));
    else {
      heapBytes = a.heapBytes;
      cb.resolve(a.bytes);
    }
  });
  const fail = (err: Error): void => {
    if (worker !== w) return; // stopped by stopSortThread: it had nothing to do
    worker = null;
    for (const cb of waiting.values()) cb.reject(err);
    waiting.clear();
  };
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`sort thread exited (${code})`)));
  w.unref();
  worker = w;
  return w;
}

/**
 * End the sort thread if it has nothing to do (a rebuild done: its heap, tens of MiB, is not
 * kept for the rest of the process's life). A later sort starts another.
 */
export async function stopSortThread(): Promise<void> {
  const w = worker;
  if (w === null || waiting.size > 0) return;
  worker = null;
  await w.terminate();
}

/**
 * Sort the serialised records of `bufs` (each a view from the start of an ArrayBuffer of its
 * own, transferred) and write them to `path`. Resolves with the bytes written.
 */
export function sortRunOffThread(bufs: Buffer[], path: string, encoding: BufferEncoding, formats: number[], prefix: number | null, workerFile = WORKER_FILE): Promise<number> {
  if (workerFile !== WORKER_FILE || !existsSync(WORKER_FILE)) {
    try {
      return Promise.resolve(sortRunBuffer(bufs, path, encoding, formats, prefix));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
  const w = theWorker();
  const id = nextId++;
  return new Promise<number>((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ task: TASK, id, bufs, path, encoding, formats, prefix } satisfies Task, bufs.map((b) => b.buffer as ArrayBuffer));
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
