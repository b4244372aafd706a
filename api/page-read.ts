/**
 * Reads one stored page back: the bytes at a WARC pointer are one gzip member holding one
 * record. The response record's block is the HTTP head as stored plus the decoded body
 * (lib/warc/record.ts), so the payload is everything after the head's blank line.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

const gunzipAsync = promisify(gunzip);

export interface StoredPage {
  warcType: string | null;
  httpStatus: number | null;
  contentType: string | null;
  payload: Buffer;
}

export async function extractPayload(member: Buffer): Promise<StoredPage> {
  const record = await gunzipAsync(member);
  const headEnd = record.indexOf('\r\n\r\n');
  if (headEnd < 0) throw new Error('not a WARC record: no end of headers');
  const warcHead = parseHeaders(record.toString('latin1', 0, headEnd));
  const length = Number(warcHead.get('content-length') ?? NaN);
  const block = record.subarray(headEnd + 4, Number.isFinite(length) ? headEnd + 4 + length : undefined);
  const warcType = warcHead.get('warc-type') ?? null;
  if (!/^application\/http/i.test(warcHead.get('content-type') ?? '')) return { warcType, httpStatus: null, contentType: warcHead.get('content-type') ?? null, payload: block };
  const httpEnd = block.indexOf('\r\n\r\n');
  const httpHead = block.toString('latin1', 0, httpEnd < 0 ? block.length : httpEnd);
  const statusLine = httpHead.split('\r\n')[0] ?? '';
  const status = Number(statusLine.split(' ')[1]);
  return {
    warcType,
    httpStatus: Number.isInteger(status) ? status : null,
    contentType: parseHeaders(httpHead.slice(statusLine.length)).get('content-type') ?? null,
    payload: httpEnd < 0 ? Buffer.alloc(0) : block.subarray(httpEnd + 4),
  };
}

function parseHeaders(text: string): Map<string, string> {
  const h = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) h.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return h;
}
