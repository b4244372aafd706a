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
import type { FetchedPageMsg } from './messages';
import { gunzipMember } from './warc/gunzip-member';
import { parseWarcRecord } from './warc/read';

/** Bytes a crawl.fetched page holds in memory: its body, or its gzipped record. */
export function fetchedBytes(page: Pick<FetchedPageMsg, 'body' | 'record_gz'>): number {
  return page.body.length + (page.record_gz?.length ?? 0);
}

/** Far above any record fetch makes (the body cap is a few MiB): a damaged member cannot balloon. */
const MAX_RECORD_BYTES = 256 * 1024 * 1024;

/**
 * `transient`: the caller is done with the bytes before it calls again (parse decodes them to a
 * string at once), so a body from `record_gz` may be inflated into a reused buffer
 * (lib/warc/gunzip-member.ts) rather than one of its own.
 */
export function fetchedBody(page: Pick<FetchedPageMsg, 'url' | 'body' | 'sha256' | 'record_gz'>, transient = false): Buffer {
  const gz = page.record_gz;
  if (!gz || page.body.length > 0) return page.body;
  const fail = (why: string): Error => new Error(`crawl.fetched: the WARC record sent with ${page.url} ${why}`);
  let rec: ReturnType<typeof parseWarcRecord>;
  try {
    // One output buffer of the size the member's trailer states (a 50 KiB page inflated in
    // 45-57 µs in zlib's default 16 KiB chunks, 26 µs in one), from one reused inflate stream.
    rec = parseWarcRecord(gunzipMember(gz, MAX_RECORD_BYTES, transient));
  } catch (err) {
    throw fail(`cannot be read (${(err as Error).message})`);
  }
  const type = rec.warcHeaders.get('warc-type');
  if (type !== 'response') throw fail(`is a ${type ?? 'untyped'} record, not a response`);
  const digest = rec.warcHeaders.get('warc-payload-digest');
  if (digest !== `sha256:${page.sha256}`) throw fail(`has payload digest ${digest ?? 'none'}, not sha256:${page.sha256}`);
  return rec.payload;
}
