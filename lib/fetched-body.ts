/**
 * The body of a crawl.fetched page. Fetch sends a stored page as its WARC response record's
 * gzip member (`record_gz`, the very bytes of the WARC file at `warc`) with an empty `body`:
 * the page then travels and waits for parse compressed (about 4:1 for a page of varied text,
 * 30:1 for the benchmark's pages), not as a second, uncompressed copy. Parse, on its worker
 * thread, inflates it here. Messages written before `record_gz` existed, and tests, carry `body` itself.
 *
 * gunzip checks the member's CRC-32; the record must be a response whose payload digest is the
 * message's SHA-256, so a member of another page can never pass for this one.
 *
 * In `crawl run` (one process) fetch may instead send the body itself, while few bytes of them are
 * held (rawBodyRoom): the parse worker then skips the inflating (0.18-0.21 ms a real page). Such a
 * body (handOverBody) is moved to the worker, not copied; a message whose body was moved away
 * (and is handled again: a retry, or the page analysed on the stage's thread after all) reads it
 * back from its WARC record, as after a restart (runtime/fetched-disk-form.ts).
 */
import { createHash } from 'node:crypto';
import type { FetchedPageMsg } from './messages';
import { gunzipMember } from './warc/gunzip-member';
import { parseWarcRecord, readLocalRecordSync } from './warc/read';

const EMPTY = Buffer.alloc(0);
export const EMPTY_SHA256 = createHash('sha256').update(EMPTY).digest('hex');

/**
 * Bytes of page bodies that fetch keeps, from the time their record is built until their WARC
 * file is stored (up to warcMaxAgeMs, 2 s in `crawl run`), to hand them to parse as they are.
 * Past it a page goes as its gzipped record (a fifth of the size). The pages then wait for parse
 * in the log, counted at their size by CRAWL_PARSE_BACKLOG_MAX_BYTES (runtime/backlog-holds.ts).
 */
export const RAW_BODY_MAX_BYTES = 64 * 1024 * 1024;

/** Bodies made for the hand-off to parse, owned by nobody else: moved to the parse worker (parse-pool). */
const movable = new WeakSet<ArrayBufferLike>();

/** The body's parts joined into an ArrayBuffer of its own, which parse may move to its worker. */
export function handOverBody(parts: readonly Buffer[]): Buffer {
  let n = 0;
  for (const p of parts) n += p.length;
  const body = Buffer.allocUnsafeSlow(n);
  let at = 0;
  for (const p of parts) at += p.copy(body, at);
  movable.add(body.buffer);
  return body;
}

/** Whether `body` was made by handOverBody and not moved yet; it counts as moved from now on. */
export function takeMovable(body: Uint8Array): boolean {
  return body.byteLength > 0 && movable.delete(body.buffer);
}

/**
 * A body read back from the WARC record the message points to, checked against its SHA-256: after
 * a restart (the log keeps no bodies), or once the body was moved to a parse worker.
 */
export function readBackBody(page: Pick<FetchedPageMsg, 'url' | 'sha256' | 'warc'>): Buffer {
  const where = `${page.warc.uri} at offset ${page.warc.offset}`;
  let body: Buffer;
  try {
    const rec = readLocalRecordSync(page.warc);
    if (rec.warcHeaders.get('warc-type') !== 'response') throw new Error(`a ${rec.warcHeaders.get('warc-type')} record, not a response`);
    body = rec.payload;
  } catch (err) {
    throw new Error(`crawl.fetched: the body of ${page.url} is to be read back from ${where}, which cannot be read (${(err as Error).message}); the crawl state refers to a WARC file that is gone or damaged`);
  }
  if (createHash('sha256').update(body).digest('hex') !== page.sha256) {
    throw new Error(`crawl.fetched: the body of ${page.url} read back from ${where} does not match its SHA-256: the WARC file was changed`);
  }
  return body;
}

/** Whether the message lost its body (moved to a parse worker, or not kept on disk): read it back then. */
export function bodyGone(page: Pick<FetchedPageMsg, 'body' | 'record_gz' | 'sha256'>): boolean {
  return page.body.length === 0 && !page.record_gz && page.sha256 !== EMPTY_SHA256;
}

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
export function fetchedBody(page: Pick<FetchedPageMsg, 'url' | 'body' | 'sha256' | 'record_gz' | 'warc'>, transient = false): Buffer {
  const gz = page.record_gz;
  if (page.body.length > 0) return page.body;
  if (!gz) return bodyGone(page) ? readBackBody(page) : page.body;
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
