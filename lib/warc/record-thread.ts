/**
 * A page's WARC records built on a thread of their own: the SHA-256 block digests and the gzip
 * members (libdeflate), about 1.7 ms a page of the real-page web, which on the event loop of
 * `crawl run` made it the crawl's bottleneck (docs/performance.md, "The page's WARC records on a
 * thread of their own"). A worker_threads Worker with its own message queue: not libuv's pool,
 * which koffi's async calls held from LevelDB and the file system (branch i41pages).
 *
 * The event loop copies a body into a ring of shared memory (one memcpy; no new ArrayBuffer on
 * its heap, whose young ArrayBuffers force scavenges) and posts the job; the thread builds the
 * records with the same code (record-job.ts entryRecords) and sends the members back in buffers
 * of their own, handed over. Jobs are done and answered in the order posted, so the ring's spans
 * are given back in order. A body that finds no room in the ring goes in a copy of its own.
 *
 * CRAWL_WARC_RECORD_THREAD=0 keeps the records on the calling thread (recordThreadFromEnv).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { bodyLength, bodyParts } from '../net/capture-body';
import { ByteRing } from './byte-ring';
import type { RecordContext } from './record';
import { captureFields, type BytesAt, type EntryRecords, type Job, type JobEntry, type JobResult } from './record-job';
import type { WarcEntry } from './writer';

/** What the WARC writer asks of it (lib/warc/writer.ts). */
export interface RecordBuilder {
  /** The entry's records, built in `ctx`; rejects if the thread failed (the caller builds them itself then). */
  build(entry: WarcEntry, ctx: RecordContext): Promise<EntryRecords>;
  close(): Promise<void>;
}

/** Bytes of the shared ring: about 60 pages of the benchmark's web (274 KiB each) waiting at once. */
export const RECORD_RING_BYTES = 16 * 1024 * 1024;

interface Pending {
  resolve(r: EntryRecords): void;
  reject(err: Error): void;
  inRing: boolean;
}

export class RecordThread implements RecordBuilder {
  private readonly worker: Worker;
  private readonly shared: SharedArrayBuffer;
  private readonly view: Buffer;
  private readonly ring: ByteRing;
  private readonly pending = new Map<number, Pending>();
  /** Jobs not yet posted: waiting for room in the ring, in order. */
  private readonly queued: Array<{ entry: WarcEntry; ctx: RecordContext; resolve(r: EntryRecords): void; reject(err: Error): void }> = [];
  private seq = 0;
  private failed: Error | null = null;
  private refd = false;

  constructor(filename: string, ringBytes = RECORD_RING_BYTES) {
    this.shared = new SharedArrayBuffer(ringBytes);
    this.view = Buffer.from(this.shared);
    this.ring = new ByteRing(ringBytes);
    // A small heap: the thread keeps nothing between jobs. Left alone, it would take the young
    // generation of `crawl run`'s flags (--max-semi-space-size=32) for itself too.
    this.worker = new Worker(filename, { workerData: { ring: this.shared }, resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64 } });
    this.worker.on('message', (r: JobResult) => this.done(r));
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`WARC record thread exited (code ${code})`)));
    // After the listeners: adding a 'message' listener refs the thread again.
    this.worker.unref();
  }

  /** Jobs not yet answered, posted or waiting for room. */
  get inFlight(): number {
    return this.pending.size + this.queued.length;
  }

  build(entry: WarcEntry, ctx: RecordContext): Promise<EntryRecords> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<EntryRecords>((resolve, reject) => {
      this.queued.push({ entry, ctx, resolve, reject });
      if (!this.refd) {
        // Work in flight keeps the process alive until it is answered; an idle thread does not.
        this.worker.ref();
        this.refd = true;
      }
      this.post();
    });
  }

  /**
   * Posts the queued jobs, in order, while their bytes find room in the ring. One that does not
   * waits (and those after it) until the thread gives spans back: its entry is held by its
   * writer anyway, where a copy of its own would be a second copy of the page for as long as
   * the thread is behind. Only a body larger than the whole ring travels in a copy of its own.
   */
  private post(): void {
    while (this.queued.length > 0) {
      const q = this.queued[0];
      const seq = this.seq + 1;
      const made = this.job(seq, q.entry, q.ctx);
      if (!made) return;
      this.queued.shift();
      this.seq = seq;
      this.pending.set(seq, { resolve: q.resolve, reject: q.reject, inRing: made.inRing });
      this.worker.postMessage(made.job, made.transfer);
    }
  }

  async close(): Promise<void> {
    this.fail(new Error('WARC record thread closed'));
    await this.worker.terminate();
  }

  /** The job to post, or null when its bytes must wait for room in the ring. */
  private job(seq: number, entry: WarcEntry, ctx: RecordContext): { job: Job; transfer: ArrayBuffer[]; inRing: boolean } | null {
    let parts: readonly Uint8Array[] = [];
    let je: JobEntry;
    switch (entry.type) {
      case 'exchange':
      case 'revisit': {
        parts = bodyParts(entry.capture);
        je = { ...entry, capture: captureFields(entry.capture) };
        break;
      }
      case 'metadata':
        je = entry;
        break;
      case 'conversion':
        if (typeof entry.text === 'string') je = { ...entry, text: entry.text };
        else {
          parts = [entry.text];
          je = { ...entry, text: null };
        }
        break;
    }
    if (entry.type === 'exchange' || entry.type === 'revisit' || (entry.type === 'conversion' && typeof entry.text !== 'string')) {
      const length = entry.type === 'conversion' ? parts[0].byteLength : bodyLength(entry.capture);
      const span = this.ring.take(length);
      if (!span && length <= this.ring.capacity) return null;
      let bytes: BytesAt;
      const transfer: ArrayBuffer[] = [];
      let target: Uint8Array;
      if (span) {
        target = this.view.subarray(span.offset, span.offset + length);
        bytes = { ring: span.offset, length };
      } else {
        const own = new ArrayBuffer(length);
        target = new Uint8Array(own);
        bytes = { own };
        transfer.push(own);
      }
      let at = 0;
      for (const p of parts) {
        target.set(p, at);
        at += p.byteLength;
      }
      return { job: { seq, entry: je, bytes, ctx }, transfer, inRing: span !== null };
    }
    return { job: { seq, entry: je, bytes: null, ctx }, transfer: [], inRing: false };
  }

  private done(r: JobResult): void {
    const p = this.pending.get(r.seq);
    if (!p) return;
    this.pending.delete(r.seq);
    if (p.inRing) {
      this.ring.release();
      this.post();
    }
    this.idle();
    if ('error' in r) {
      p.reject(new Error(`WARC record thread: ${r.error}`));
      return;
    }
    const records = r.records.map((rec) => ({ ...rec, gz: Buffer.from(rec.gz.buffer, rec.gz.byteOffset, rec.gz.byteLength) }));
    p.resolve({ records, main: r.main, warcinfoId: r.warcinfoId });
  }

  private idle(): void {
    if (this.pending.size === 0 && this.queued.length === 0 && this.refd) {
      this.worker.unref();
      this.refd = false;
    }
  }

  private fail(err: Error): void {
    if (!this.failed) this.failed = err;
    const all = [...this.pending.values(), ...this.queued.splice(0)];
    this.pending.clear();
    this.idle();
    for (const p of all) p.reject(this.failed);
  }
}

/** The compiled thread script, or null when running from TypeScript sources (unit tests). */
export function recordWorkerFile(): string | null {
  const filename = join(__dirname, 'record-worker.js');
  return existsSync(filename) ? filename : null;
}

let shared: RecordThread | null | undefined;

/**
 * The process's one record thread, made on first use; null (records built on the calling thread)
 * when CRAWL_WARC_RECORD_THREAD=0 or the thread script is not compiled.
 */
export function recordThreadFromEnv(env: NodeJS.ProcessEnv = process.env): RecordBuilder | null {
  if (env.CRAWL_WARC_RECORD_THREAD === '0') return null;
  if (shared === undefined) {
    const file = recordWorkerFile();
    shared = file ? new RecordThread(file) : null;
  }
  return shared;
}
