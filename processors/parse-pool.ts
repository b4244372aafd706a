/**
 * parse's per-page analysis on worker threads (piscina): the event loop that fetches, stores
 * and routes every record no longer also runs the HTML tokenizer and SimHash of every page.
 *
 * Pages are analysed in the order they are submitted (piscina's queue is FIFO); with one worker
 * they also finish in that order, so duplicate decisions on the stage's thread see pages in
 * log order as before. With more workers, two copies of a page that are analysed at the same
 * time may be decided in either order: which one is "the duplicate" is then arbitrary.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { ByteBudget } from '../lib/byte-budget';
import type { FetchedPageMsg } from '../lib/messages';
import { ANALYZER_CONCURRENCY, type PageAnalysis } from './parse';
import type { ParseTask, WorkerAnalysis } from './parse-worker';
import { createTextRings, TextRingReader } from './parse-text-ring';

export interface ParseAnalyzer {
  analyze(page: FetchedPageMsg): Promise<PageAnalysis>;
  readonly threads: number;
  /** Bytes of the pages handed to the workers and not yet analysed, and pages waiting to be handed over. */
  backlog(): { bytes: number; waiting: number };
  close(): Promise<void>;
}

/**
 * Bytes as they should travel to a worker. Structured clone copies a view's whole ArrayBuffer,
 * not the view: a page decoded from Kafka is a view into its fetch batch (up to a MiB or more,
 * copied again for every page of the batch), and a small gzip member is a view into Node's
 * 8 KiB buffer pool. Such a view is copied out at its own size; bytes that fill their buffer
 * go as they are.
 */
export function ownBytes(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
}

/** Bytes of pages (body and record) in the workers' queues at once, at most (one page may exceed it alone). */
export const ANALYZER_MAX_BYTES = 64 * 1024 * 1024;

/**
 * A pool of `threads` workers, or null when threads < 1 or the worker script is not compiled
 * (running from TypeScript sources, as unit tests do): parse then analyses on its own thread.
 */
export function createParseAnalyzer(threads: number, userAgent: string): ParseAnalyzer | null {
  const filename = join(__dirname, 'parse-worker.js');
  if (threads < 1 || !existsSync(filename)) return null;
  // atomics 'disabled': with piscina's default, an idle worker blocks in Atomics.wait instead of
  // returning to its event loop, so V8's own tasks on that thread (finishing a major GC among
  // them) never ran: the worker's old space grew by about 125 KB a page parsed (900 MB after
  // 7,000 pages) and was never collected. Through the event loop the heap stays near 10 MB.
  //
  // concurrentTasksPerWorker: pages wait in each worker's own queue (as many as parse keeps in
  // analysis), so a worker starts the next one as soon as it has finished one. With piscina's default of one, every page waited for the
  // crawl's event loop to take the last result and post the next page, and while that loop was
  // busy fetching, the worker sat idle with 1,600 pages to parse.
  // Texts come back through shared memory, a ring per worker (parse-text-ring.ts).
  const textRings = createTextRings(threads);
  const texts = new TextRingReader(textRings);
  const pool = new Piscina<ParseTask, WorkerAnalysis>({
    filename, minThreads: threads, maxThreads: threads, idleTimeout: 60_000, atomics: 'disabled', concurrentTasksPerWorker: ANALYZER_CONCURRENCY,
    workerData: { textRings },
  });
  // Pages handed to the workers are copies: ANALYZER_CONCURRENCY pages of 50 KiB are 25 MiB,
  // but as many 2 MiB pages would be a GiB. Past this many bytes in the workers, pages wait
  // (in order) on this thread, where they are held anyway.
  const budget = new ByteBudget(ANALYZER_MAX_BYTES);
  /** Analyses of pages that had to wait for room: close() lets them through first. */
  const waiting = new Set<Promise<PageAnalysis>>();
  return {
    threads,
    analyze: (page) => {
      const bytes = page.body.length + (page.record_gz?.length ?? 0);
      const run = (): Promise<PageAnalysis> => send(page).finally(() => budget.release(bytes));
      // Handed over in this very call when there is room: a page that waited for a later turn
      // of the event loop would not reach the worker while that loop is busy.
      if (budget.tryAcquire(bytes)) return run();
      const later = budget.acquire(bytes).then(run);
      waiting.add(later);
      void later.finally(() => waiting.delete(later)).catch(() => undefined);
      return later;
    },
    backlog: () => ({ bytes: budget.heldBytes, waiting: budget.queued }),
    // Graceful: pages already submitted are analysed first, those still waiting for room
    // included. destroy() failed them, so a stopping crawl retried them and parsed them twice.
    close: async () => {
      while (waiting.size > 0) await Promise.allSettled([...waiting]);
      await pool.close();
    },
  };

  // Async so that whatever fails here rejects (and releases the page's bytes); its body runs in
  // the call itself, so the page still reaches the pool at once.
  async function send(page: FetchedPageMsg): Promise<PageAnalysis> {
    // Copies made here belong to nobody else: handed over, not cloned a second time.
    const transferList: ArrayBuffer[] = [];
    const own = (b: Buffer): Buffer => {
      const bytes = ownBytes(b);
      if (bytes !== b) transferList.push(bytes.buffer as ArrayBuffer);
      return bytes as Buffer;
    };
    const sent = { ...page, body: own(page.body), record_gz: page.record_gz ? own(page.record_gz) : null };
    const a = await pool.run({ page: sent, userAgent }, transferList.length ? { transferList } : undefined);
    const span = a.textSpan;
    if (!span) return a;
    return { parsed: a.parsed, linkUrls: a.linkUrls, feedUrls: a.feedUrls, text: texts.view(span), releaseText: () => texts.release(span) };
  }
}
