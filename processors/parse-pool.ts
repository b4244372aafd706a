/**
 * parse's per-page analysis on worker threads (piscina): the event loop that fetches, stores
 * and routes every record no longer also runs the HTML tokenizer and SimHash of every page.
 *
 * Pages are analysed in the order they are submitted (piscina's queue is FIFO); with one worker
 * they also finish in that order, so duplicate decisions on the stage's thread see pages in
 * log order as before. With more workers, two copies of a page that are analysed at the same
 * time may be decided in either order: which one is "the duplicate" is then arbitrary.
 *
 * Workers after the first are used only while the event loop has room (SpareWorkers): on real
 * pages parse is the bottleneck and fetch leaves its core partly idle, which a second worker
 * takes up; on light pages the event loop is the bottleneck, and a second worker there only
 * took CPU from it (the 29th edition's two-worker runs).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { ByteBudget } from '../lib/byte-budget';
import { fetchedBytes } from '../lib/fetched-body';
import type { FetchedPageMsg } from '../lib/messages';
import { ANALYZER_CONCURRENCY, analyzePage, type PageAnalysis } from './parse';
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
 * When workers after the first may take pages: while the event loop's utilisation (the share of
 * time it was not waiting for I/O, performance.eventLoopUtilization) over the last sample stays
 * below OPEN_BELOW, until it passes CLOSE_ABOVE; sampled every SAMPLE_MS. The loop that fetches
 * and stores every page is the crawl's other bottleneck: a worker that takes its core's time
 * away would slow fetching as much as it speeds parsing.
 */
export const SPARE_OPEN_BELOW = 0.7;
export const SPARE_CLOSE_ABOVE = 0.85;
const SPARE_SAMPLE_MS = 250;

/**
 * Which worker takes the next page: the first unless the spare ones are open, then whichever
 * has the fewest pages. Pure: the caller feeds it the event loop's utilisation (tests their own).
 */
export class SpareWorkers {
  private open = false;
  /** Pages handed to each worker and not yet back. */
  readonly inFlight: number[];

  constructor(workers: number) {
    this.inFlight = new Array<number>(workers).fill(0);
  }

  /** The event loop's utilisation over the last sample (0-1). */
  observe(utilisation: number): void {
    if (this.open && utilisation > SPARE_CLOSE_ABOVE) this.open = false;
    else if (!this.open && utilisation < SPARE_OPEN_BELOW) this.open = true;
  }

  get spareOpen(): boolean {
    return this.open;
  }

  /** The worker for the next page (counted as taken until done(i)). */
  take(): number {
    let best = 0;
    if (this.open) for (let i = 1; i < this.inFlight.length; i++) if (this.inFlight[i] < this.inFlight[best]) best = i;
    this.inFlight[best]++;
    return best;
  }

  done(worker: number): void {
    this.inFlight[worker]--;
  }
}

/**
 * Old-generation limit of each worker's heap (Worker resourceLimits), MB. Without one, V8 sizes
 * a worker's heap against the process's limit (gigabytes here) and lets it grow before
 * collecting: over the 44 real-page templates, pages handed over one per event-loop turn, a
 * worker's heap peaked at 125-142 MB; with 96 or 128 it peaked at 80 MB at the same CPU a page
 * (6.5-6.8 ms against 6.7-7.0), with 64 the collector ran so often that a page cost 10-13 ms.
 * The largest template (1.6 MB of HTML) needs well under it; a page that does not fit is
 * analysed on the stage's own thread instead (analyzeOnStageThread).
 */
export const WORKER_MAX_OLD_GENERATION_MB = 128;

/**
 * A pool of `threads` workers, or null when threads < 1 or the worker script is not compiled
 * (running from TypeScript sources, as unit tests do): parse then analyses on its own thread.
 * `maxOldGenerationMb`: each worker's old-generation limit (tests make it small).
 */
export function createParseAnalyzer(threads: number, userAgent: string, maxOldGenerationMb = WORKER_MAX_OLD_GENERATION_MB): ParseAnalyzer | null {
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
  // One pool a worker, so this side chooses which worker takes a page (SpareWorkers); each
  // worker claims its own ring of the shared ones.
  const pools = Array.from({ length: threads }, () => new Piscina<ParseTask, WorkerAnalysis>({
    filename, minThreads: 1, maxThreads: 1, idleTimeout: 60_000, atomics: 'disabled', concurrentTasksPerWorker: ANALYZER_CONCURRENCY,
    workerData: { textRings }, resourceLimits: { maxOldGenerationSizeMb: maxOldGenerationMb },
  }));
  const choice = new SpareWorkers(threads);
  let elu = performance.eventLoopUtilization();
  const sampler = threads > 1 ? setInterval(() => {
    const now = performance.eventLoopUtilization();
    choice.observe(performance.eventLoopUtilization(now, elu).utilization);
    elu = now;
  }, SPARE_SAMPLE_MS) : null;
  sampler?.unref();
  // Pages handed to the workers are copies: ANALYZER_CONCURRENCY pages of 50 KiB are 25 MiB,
  // but as many 2 MiB pages would be a GiB. Past this many bytes in the workers, pages wait
  // (in order) on this thread, where they are held anyway.
  const budget = new ByteBudget(ANALYZER_MAX_BYTES);
  /** Analyses of pages that had to wait for room: close() lets them through first. */
  const waiting = new Set<Promise<PageAnalysis>>();
  return {
    threads,
    analyze: (page) => {
      const bytes = fetchedBytes(page);
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
      if (sampler) clearInterval(sampler);
      await Promise.all(pools.map((p) => p.close()));
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
    const worker = choice.take();
    let a: WorkerAnalysis;
    try {
      a = await pools[worker].run({ page: sent, userAgent }, transferList.length ? { transferList } : undefined);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_WORKER_OUT_OF_MEMORY') throw err;
      return analyzeOnStageThread(page, userAgent, err as Error);
    } finally {
      choice.done(worker);
    }
    const span = a.textSpan;
    if (!span) return a;
    return { parsed: a.parsed, linkUrls: a.linkUrls, feedUrls: a.feedUrls, text: texts.view(span), releaseText: () => texts.release(span) };
  }
}

/**
 * A page whose analysis took a worker past its heap limit (the worker is ended; piscina starts
 * another): analysed here, on the stage's thread, whose heap has no such limit, rather than
 * failed (a failed page is retried, and would fail again every time). Its bytes were moved to the
 * worker only when they were a copy, so `page` still holds them.
 */
function analyzeOnStageThread(page: FetchedPageMsg, userAgent: string, err: Error): PageAnalysis {
  process.emitWarning(`parse: ${page.url} took a parse worker past its heap limit (${err.message}); analysed on the stage's thread`);
  return analyzePage(page, { userAgent });
}
