/**
 * The body of a crawl.fetched page. Fetch sends a stored page as its WARC response record's
 * gzip member (`record_gz`, the very bytes of the WARC file at `warc`) with an empty `body`:
 * the page then travels and waits for parse compressed (about 4:1 for a page of varied text,
 * 30:1 for the benchmark's pages), not as a second, uncompressed copy. Parse, on its worker
 * thread, inflates it here. Messages written before `record_gz` existed, and tests, carry `body` itself.
 *
 * gunzip checks the member's CRC-32; the record must be a response whose payload digest is the
 * message's SHA-256, so a member of another page can never pass for this one.
 */
import { gunzipSync } from 'node:zlib';
import type { FetchedPageMsg } from './messages';
import { parseWarcRecord } from './warc/read';

/** Far above any record fetch makes (the body cap is a few MiB): a damaged member cannot balloon. */
const MAX_RECORD_BYTES = 256 * 1024 * 1024;

/**
 * The record's whole size, from the member's trailer (ISIZE, the size mod 2^32), as zlib's
 * output chunk: one chunk, no joining. With zlib's default 16 KiB chunks, inflating a 50 KiB
 * page's record took 45-57 µs; in one chunk, 26 µs.
 */
function outputChunk(gz: Buffer): number {
  const isize = gz.length >= 4 ? gz.readUInt32LE(gz.length - 4) : 0;
  return Math.min(Math.max(isize + 64, 1024), 16 * 1024 * 1024);
}

export function fetchedBody(page: Pick<FetchedPageMsg, 'url' | 'body' | 'sha256' | 'record_gz'>): Buffer {
  const gz = page.record_gz;
  if (!gz || page.body.length > 0) return page.body;
  const fail = (why: string): Error => new Error(`crawl.fetched: the WARC record sent with ${page.url} ${why}`);
  let rec: ReturnType<typeof parseWarcRecord>;
  try {
    rec = parseWarcRecord(gunzipSync(gz, { chunkSize: outputChunk(gz), maxOutputLength: MAX_RECORD_BYTES }));
  } catch (err) {
    throw fail(`cannot be read (${(err as Error).message})`);
  }
  const type = rec.warcHeaders.get('warc-type');
  if (type !== 'response') throw fail(`is a ${type ?? 'untyped'} record, not a response`);
  const digest = rec.warcHeaders.get('warc-payload-digest');
  if (digest !== `sha256:${page.sha256}`) throw fail(`has payload digest ${digest ?? 'none'}, not sha256:${page.sha256}`);
  return rec.payload;
}
