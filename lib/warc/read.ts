/**
 * Reading one record back by its pointer (uri, offset, length): one gzip member of a WARC file.
 * The example indexer reads pages this way; the embedded log reads a stored page's body back
 * from its local WARC file instead of keeping a second copy on disk (runtime/fetched-disk-form.ts).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { RecordPointer } from '../messages';

/** What one WARC record holds: its WARC headers, and for a response its HTTP status, headers and payload. */
export interface WarcRecordRead {
  warcHeaders: Map<string, string>;
  httpStatus: number | null;
  httpHeaders: Map<string, string>;
  /** The HTTP payload of a response; the whole block otherwise (a conversion record's text). */
  payload: Buffer;
}

function headerBlock(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) m.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return m;
}

/** Parse one gunzipped WARC record. */
export function parseWarcRecord(raw: Buffer): WarcRecordRead {
  const end = raw.indexOf('\r\n\r\n');
  if (!raw.subarray(0, 5).equals(Buffer.from('WARC/')) || end < 0) throw new Error('not a WARC record');
  const warcHeaders = headerBlock(raw.toString('utf8', 0, end));
  const block = raw.subarray(end + 4, end + 4 + Number(warcHeaders.get('content-length') ?? raw.length));
  if (warcHeaders.get('warc-type') !== 'response') return { warcHeaders, httpStatus: null, httpHeaders: new Map(), payload: block };
  const httpEnd = block.indexOf('\r\n\r\n');
  const head = block.toString('latin1', 0, httpEnd);
  return { warcHeaders, httpStatus: Number(head.split(' ')[1]), httpHeaders: headerBlock(head), payload: block.subarray(httpEnd + 4) };
}

/** One record of a local (file://) WARC file, read synchronously. */
export function readLocalRecordSync(ptr: RecordPointer): WarcRecordRead {
  if (!ptr.uri.startsWith('file://')) throw new Error(`not a local WARC file: ${ptr.uri}`);
  const fd = openSync(new URL(ptr.uri), 'r');
  try {
    const member = Buffer.alloc(ptr.length);
    let got = 0;
    while (got < ptr.length) {
      const n = readSync(fd, member, got, ptr.length - got, ptr.offset + got);
      if (n === 0) throw new Error(`${ptr.uri} ends before offset ${ptr.offset} + ${ptr.length}`);
      got += n;
    }
    return parseWarcRecord(gunzipSync(member));
  } finally {
    closeSync(fd);
  }
}
