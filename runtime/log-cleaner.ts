/**
 * The embedded journal's cleaner (runtime/log-segments.ts cleanSegments) on a thread of its own.
 * A pass reads every closed segment of a compacted topic-partition twice, hashes every key twice
 * and fsyncs the file it writes; on the event loop it took the frontier's intake from about
 * 20,000 to 5,000 URLs/s for the seconds it ran (bench/frontier-scale.ts, 5M URLs: every dip
 * was a cleaning pass), and its fsync of a file of hundreds of MiB blocked the loop outright.
 * A worker thread runs each pass; the loop only waits for its answer.
 *
 * Run as a worker (its workerData the pass's arguments), this file answers with the result. Where
 * no compiled worker file exists (the tests run the TypeScript sources), the pass runs in
 * the calling thread as before.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { cleanSegments, type CleanResult, type SegmentFile } from './log-segments';

type CleanOptions = Parameters<typeof cleanSegments>[2];

interface Task {
  /** Marks this worker's data (other workers of the process load other files). */
  task: typeof TASK;
  dir: string;
  closed: SegmentFile[];
  o: CleanOptions;
}

type Answer = { result: CleanResult | null } | { error: string };

const WORKER_FILE = join(__dirname, 'log-cleaner.js');
const TASK = 'kcrawl-journal-clean';

/** Plain segment descriptions (a worker gets a copy; file descriptors and the like stay here). */
const plain = (s: SegmentFile): SegmentFile => ({ baseOffset: s.baseOffset, endOffset: s.endOffset, path: s.path, explicit: s.explicit, bytes: s.bytes });

/**
 * cleanSegments on a worker thread running `workerFile` (this file compiled); `replaced` in the
 * result are the caller's own objects of `closed`. With no such file it runs on the calling thread.
 */
export async function cleanSegmentsOffThread<S extends SegmentFile>(
  dir: string, closed: readonly S[], o: CleanOptions, workerFile = WORKER_FILE,
): Promise<(Omit<CleanResult, 'replaced'> & { replaced: S[] }) | null> {
  const r = existsSync(workerFile) ? await runWorker(workerFile, { task: TASK, dir, closed: closed.map(plain), o }) : await cleanSegments(dir, closed, o);
  if (!r) return null;
  const paths = new Set(r.replaced.map((s) => s.path));
  return { ...r, replaced: closed.filter((s) => paths.has(s.path)) };
}

function runWorker(file: string, task: Task): Promise<CleanResult | null> {
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { workerData: task });
    let answered = false;
    w.once('message', (a: Answer) => {
      answered = true;
      if ('error' in a) reject(new Error(`journal cleaner: ${a.error}`));
      else resolve(a.result);
    });
    w.once('error', reject);
    w.once('exit', (code) => {
      if (!answered) reject(new Error(`journal cleaner thread exited (${code}) without an answer`));
    });
  });
}

if (!isMainThread && parentPort && (workerData as Partial<Task> | undefined)?.task === TASK) {
  const t = workerData as Task;
  const port = parentPort;
  cleanSegments(t.dir, t.closed, t.o).then(
    (result) => port.postMessage({ result } satisfies Answer),
    (err: unknown) => port.postMessage({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Answer),
  );
}
