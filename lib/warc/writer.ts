/**
 * Appends records to rotating WARC files on a PageStore. A page is announced downstream only
 * once its WARC file is stored, so `append` resolves with the record's pointer only after the
 * file holding it has been put; if that put fails, every append in the file rejects and the
 * caller lets its lease expire so the URL is fetched again.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { HttpCapture, PageStore } from '../../connectors/types';
import type { RecordPointer } from '../messages';
import { bodyLength } from '../net/capture-body';
import { WarcFileBuilder, type RecordSpan } from './file-builder';
import {
  conversionRecord,
  exchangeRecords,
  metadataRecord,
  revisitRecord,
  type RecordContext,
  type RevisitProfile,
  type WarcRecord,
} from './record';

export type WarcEntry =
  /** A fetched page: request and response records; the response is the main record. */
  | { type: 'exchange'; capture: HttpCapture; /** Hex SHA-256 of capture.body, if known (see exchangeRecords). */ payloadSha256?: string | null }
  | {
      type: 'revisit';
      capture: HttpCapture;
      profile: RevisitProfile;
      refersToTargetUri: string;
      refersToDate: Date;
      refersTo?: string;
    }
  /** A page not stored (non-HTML, refused): what we know of it as `key: value` fields. */
  | { type: 'metadata'; targetUri: string; fields: Array<[string, string]>; concurrentTo?: string; date?: Date }
  /** Extracted text (a string, or its UTF-8 bytes) of a stored response, whose WARC-Record-ID is `refersTo`. */
  | { type: 'conversion'; targetUri: string; text: string | Uint8Array; refersTo: string; date?: Date };

/** A RecordPointer to the entry's main record, plus that record's WARC-Record-ID. */
export interface WarcPointer extends RecordPointer {
  recordId: string;
  /** The main record's gzip member: the bytes stored at `offset` (fetch sends a page's as `record_gz`). */
  recordGz?: Buffer;
}

export interface WarcWriterOptions {
  store: PageStore;
  /** File names are `<prefix>-<yyyymmddhhmmss>-<serial>-<random>.warc.gz`; e.g. the worker id. */
  prefix: string;
  /** Rotate once a file holds this many records (warcinfo not counted). An entry is never split. */
  maxRecords?: number;
  /** Rotate once a file's compressed size reaches this; a file exceeds it by one entry at most. */
  maxBytes?: number;
  /** Store a file at the latest this long after its first record, so pages are not held back. */
  maxAgeMs?: number;
  /** zlib level of each record's gzip member, 1-9 (record.ts DEFAULT_GZIP_LEVEL if unset). */
  gzipLevel?: number;
  software?: string;
  operator?: string;
  isPartOf?: string;
  /** Told of failures that reject no append (a CDXJ index not stored). */
  onError?: (err: unknown, key: string) => void;
}

export interface WarcWriterStats {
  files: number;
  bytes: number;
  records: number;
  failedFiles: number;
  failedIndexes: number;
}

interface OpenFile {
  key: string;
  builder: WarcFileBuilder;
  timer: NodeJS.Timeout;
  stored: { promise: Promise<string>; resolve(uri: string): void; reject(err: unknown): void };
}

const DEFAULTS = { maxRecords: 2000, maxBytes: 100 * 1024 * 1024, maxAgeMs: 30_000 };

/** An entry's records added to the open file: where its main record is, once the file is stored. */
interface Added {
  stored: Promise<string>;
  span: RecordSpan;
  recordId: string;
  gz: Buffer;
}

async function pointerOnceStored(a: Added): Promise<WarcPointer> {
  return { uri: await a.stored, ...a.span, recordId: a.recordId, recordGz: a.gz };
}

export class WarcWriter {
  private readonly limits: typeof DEFAULTS;
  private current: OpenFile | null = null;
  /**
   * The stores of sealed files, one after another in the order sealed; never rejects (failures
   * go to that file's appends). Appends do not wait for it: see seal().
   */
  private inFlight: Promise<void> = Promise.resolve();
  /** Bytes of sealed files not yet stored (their records, compressed). */
  private sealedBytes = 0;
  /** Bytes of entries appended whose records are not built yet (their bodies, uncompressed). */
  private queuedBytes = 0;
  /** Serialises appends, rotations and close, which all touch `current`. */
  private queue: Promise<unknown> = Promise.resolve();
  private serial = 0;
  private closed = false;
  private readonly counters: WarcWriterStats = { files: 0, bytes: 0, records: 0, failedFiles: 0, failedIndexes: 0 };

  constructor(private readonly opts: WarcWriterOptions) {
    this.limits = { ...DEFAULTS };
    for (const name of ['maxRecords', 'maxBytes', 'maxAgeMs'] as const) {
      const value = opts[name];
      if (value === undefined) continue;
      if (!Number.isInteger(value) || value <= 0) {
        throw new Error(`WarcWriter: ${name} must be a positive integer, got ${value}`);
      }
      this.limits[name] = value;
    }
    if (opts.gzipLevel !== undefined && !(Number.isInteger(opts.gzipLevel) && opts.gzipLevel >= 1 && opts.gzipLevel <= 9)) {
      throw new Error(`WarcWriter: gzipLevel must be a whole number from 1 to 9, got ${opts.gzipLevel}`);
    }
    if (!/^[A-Za-z0-9._-]+$/.test(opts.prefix)) {
      throw new Error(`WarcWriter: prefix must be letters, digits, '.', '_' or '-', got "${opts.prefix}"`);
    }
  }

  get stats(): WarcWriterStats {
    return { ...this.counters };
  }

  /**
   * Bytes waiting on this writer outside the open file: bodies of entries appended whose records
   * are not built yet, and sealed files not yet stored. The open file is bounded by maxRecords
   * and maxBytes; these grow only when appends outrun the building or the store, which is when
   * the caller should stop fetching (`crawl run` holds fetch on it: runtime/backlog-holds.ts).
   */
  get backlogBytes(): number {
    return this.queuedBytes + this.sealedBytes;
  }

  /**
   * Add an entry's records to the open file; resolves with the main record's pointer once that
   * file is stored. `onBuilt` is called as soon as the records are built and added (before the
   * file is stored): the caller may drop the entry's bytes then.
   */
  append(entry: WarcEntry, onBuilt?: () => void): Promise<WarcPointer> {
    // No closure made here outlives the record's building: one that did (waiting for the file
    // to be stored, up to maxAgeMs) would share this call's scope, and with it `entry`, keeping
    // every page body of the open file alive until it is stored.
    const bytes = entryBytes(entry);
    this.queuedBytes += bytes;
    return this.exclusive(() => {
      this.queuedBytes -= bytes;
      return this.add(entry, onBuilt);
    }).then(pointerOnceStored);
  }

  private async add(entry: WarcEntry, onBuilt?: () => void): Promise<Added> {
    if (this.closed) throw new Error('WarcWriter is closed');
    const file = this.current ?? (this.current = this.openFile());
    const { records, main } = entryRecords(entry, { warcinfoId: file.builder.warcinfoId, gzipLevel: this.opts.gzipLevel });
    let span: RecordSpan = { offset: 0, length: 0 };
    for (const record of records) {
      const s = file.builder.add(record);
      if (record === main) span = s;
    }
    onBuilt?.();
    const { recordCount, byteLength } = file.builder;
    if (recordCount - 1 >= this.limits.maxRecords || byteLength >= this.limits.maxBytes) await this.seal();
    return { stored: file.stored.promise, span, recordId: main.id, gz: main.gz };
  }

  /** Store the current file now. Rejects if storing it fails. */
  async flush(): Promise<void> {
    const sealed = await this.exclusive(async () => {
      const file = this.current;
      await this.seal();
      return file;
    });
    await this.inFlight;
    if (sealed) await sealed.stored.promise;
  }

  /** Flush and refuse further appends. The store stays open: it belongs to the caller. */
  async close(): Promise<void> {
    await this.exclusive(async () => {
      this.closed = true;
    });
    await this.flush();
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private openFile(): OpenFile {
    const now = new Date();
    this.serial += 1;
    const stamp = now.toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const serial = String(this.serial).padStart(5, '0');
    const filename = `${this.opts.prefix}-${stamp}-${serial}-${randomBytes(4).toString('hex')}.warc.gz`;
    const builder = new WarcFileBuilder(filename, {
      software: this.opts.software ?? 'kcrawl',
      hostname: hostname(),
      operator: this.opts.operator,
      isPartOf: this.opts.isPartOf,
      date: now,
    });
    let resolve!: (uri: string) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<string>((res, rej) => ((resolve = res), (reject = rej)));
    // Appends attach their handlers asynchronously; this keeps an early failure from being "unhandled".
    promise.catch(() => undefined);
    const file: OpenFile = {
      key: `warc/${filename}`,
      builder,
      stored: { promise, resolve, reject },
      timer: setTimeout(() => {
        void this.exclusive(async () => {
          if (this.current === file) await this.seal();
        });
      }, this.limits.maxAgeMs),
    };
    // A pending rotation must not keep the process alive; close() flushes what is left.
    file.timer.unref();
    return file;
  }

  /**
   * Hand the current file to the store; later appends go to a fresh file at once. Stores run one
   * at a time, in order. Appends used to wait here for the previous file's store, and while a
   * store was slow (fsync on a busy disk: 5 s and more for one file in `crawl run` on the
   * real-page web) every page fetched meanwhile waited whole, uncompressed, for its records:
   * 1,691 bodies, 439 MB, against about 55 KB a page once compressed. Now they are compressed as
   * they come, and the caller bounds what waits (backlogBytes).
   */
  private async seal(): Promise<void> {
    const file = this.current;
    if (!file) return;
    this.current = null;
    clearTimeout(file.timer);
    const bytes = file.builder.byteLength;
    this.sealedBytes += bytes;
    this.inFlight = this.inFlight.then(() => this.store(file)).finally(() => void (this.sealedBytes -= bytes));
  }

  private async store(file: OpenFile): Promise<void> {
    // A store that writes parts as they are gets the records themselves: no copy of the file.
    const { store } = this.opts;
    try {
      const uri = store.putParts
        ? await store.putParts(file.key, file.builder.parts(), 'application/warc')
        : await store.put(file.key, file.builder.toBuffer(), 'application/warc');
      this.counters.files += 1;
      this.counters.bytes += file.builder.byteLength;
      this.counters.records += file.builder.recordCount;
      file.stored.resolve(uri);
    } catch (err) {
      this.counters.failedFiles += 1;
      file.stored.reject(err);
      return;
    }
    // The index comes after the WARC it points into, and can be rebuilt from it if lost.
    const cdxjKey = file.key.replace(/\.warc\.gz$/, '.cdxj');
    try {
      await this.opts.store.put(cdxjKey, Buffer.from(file.builder.cdxj(), 'utf8'), 'application/cdxj');
    } catch (err) {
      this.counters.failedIndexes += 1;
      this.opts.onError?.(err, cdxjKey);
    }
  }
}

/** What an entry holds until its records are built: its body or text. */
function entryBytes(e: WarcEntry): number {
  switch (e.type) {
    case 'exchange':
    case 'revisit':
      return bodyLength(e.capture);
    case 'conversion':
      return typeof e.text === 'string' ? e.text.length : e.text.byteLength;
    default:
      return 0;
  }
}

function entryRecords(e: WarcEntry, ctx: RecordContext): { records: WarcRecord[]; main: WarcRecord } {
  switch (e.type) {
    case 'exchange': {
      const [request, response] = exchangeRecords(e.capture, { ...ctx, payloadSha256: e.payloadSha256 });
      return { records: [request, response], main: response };
    }
    case 'revisit': {
      const main = revisitRecord(e.capture, { ...e, ...ctx });
      return { records: [main], main };
    }
    case 'metadata': {
      const main = metadataRecord({ ...e, ...ctx });
      return { records: [main], main };
    }
    case 'conversion': {
      const main = conversionRecord({ ...e, ...ctx });
      return { records: [main], main };
    }
  }
}
