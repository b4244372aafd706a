/**
 * An entry's records as a job for the WARC record thread (lib/warc/record-thread.ts) and back:
 * what crosses between the threads, and the records built from it. Pure: the same function
 * (entryRecords) builds the records on either side, so their bytes are the same.
 */
import type { HttpCapture } from '../../connectors/types';
import { conversionRecord, exchangeRecords, metadataRecord, revisitRecord, type RecordContext, type WarcRecord } from './record';
import type { WarcEntry } from './writer';

/** An entry's records; `main` indexes the one a pointer names. */
export interface EntryRecords {
  records: WarcRecord[];
  main: number;
  /** The context they were built in (their WARC-Warcinfo-ID). */
  warcinfoId: string;
}

export function entryRecords(e: WarcEntry, ctx: RecordContext): EntryRecords {
  const at = (records: WarcRecord[], main: number): EntryRecords => ({ records, main, warcinfoId: ctx.warcinfoId });
  switch (e.type) {
    case 'exchange': {
      const [request, response] = exchangeRecords(e.capture, { ...ctx, payloadSha256: e.payloadSha256 });
      return at([request, response], 1);
    }
    case 'revisit':
      return at([revisitRecord(e.capture, { ...e, ...ctx })], 0);
    case 'metadata':
      return at([metadataRecord({ ...e, ...ctx })], 0);
    case 'conversion':
      return at([conversionRecord({ ...e, ...ctx })], 0);
  }
}

/**
 * Where a job's bytes (a capture's body, a conversion's text bytes) are: a span of the shared
 * ring, or a buffer of their own handed over with the message.
 */
export type BytesAt = { ring: number; length: number } | { own: ArrayBuffer };

/** A capture without its body: the fields records read, each clonable. */
export type CaptureFields = Omit<HttpCapture, 'body' | 'bodyParts'>;

export type JobEntry =
  | { type: 'exchange'; capture: CaptureFields; payloadSha256?: string | null }
  | { type: 'revisit'; capture: CaptureFields; profile: Extract<WarcEntry, { type: 'revisit' }>['profile']; refersToTargetUri: string; refersToDate: Date; refersTo?: string }
  | Extract<WarcEntry, { type: 'metadata' }>
  | { type: 'conversion'; targetUri: string; text: string | null; refersTo: string; date?: Date };

export interface Job {
  seq: number;
  entry: JobEntry;
  /** The body (exchange, revisit) or the text's bytes (conversion given bytes); null: none. */
  bytes: BytesAt | null;
  ctx: RecordContext;
}

/** A record as it comes back: its member in a buffer of its own, handed over. */
export interface RecordOut extends Omit<WarcRecord, 'gz'> {
  gz: Uint8Array;
}

export type JobResult = { seq: number; records: RecordOut[]; main: number; warcinfoId: string } | { seq: number; error: string };

/** The capture's fields, taken one by one: HttpCapture's `body` may be a getter that joins the chunks. */
export function captureFields(c: HttpCapture): CaptureFields {
  return {
    url: c.url, ip: c.ip, status: c.status, statusText: c.statusText, headers: c.headers, requestHead: c.requestHead, truncated: c.truncated,
    startedAt: c.startedAt, elapsedMs: c.elapsedMs, responseMs: c.responseMs,
  };
}

/** The entry a job stands for, its bytes at `bytes` (a view, not a copy). */
export function jobEntry(j: JobEntry, bytes: Buffer | null): WarcEntry {
  const body = bytes ?? Buffer.alloc(0);
  switch (j.type) {
    case 'exchange':
    case 'revisit':
      return { ...j, capture: { ...j.capture, body } };
    case 'metadata':
      return j;
    case 'conversion':
      return { ...j, text: j.text ?? body };
  }
}
