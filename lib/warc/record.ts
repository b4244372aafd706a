/**
 * WARC/1.1 records (ISO 28500:2017), each serialised as its own gzip member so that any record
 * can be read alone from its offset and compressed length.
 *
 * Digests are `sha256:` + lowercase hex over the exact bytes stored: the same algorithm as the
 * `sha256` fields of our messages, so a page's payload digest is `sha256:<FetchedPageMsg.sha256>`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { HttpCapture } from '../../connectors/types';
import { bodyLength, bodyParts, bodySha256 } from '../net/capture-body';
import { gzipMember } from './gzip-member';

export type WarcRecordType = 'warcinfo' | 'request' | 'response' | 'revisit' | 'metadata' | 'conversion';
export type WarcTruncated = 'length' | 'time' | 'disconnect' | 'unspecified';

export const REVISIT_PROFILES = {
  'identical-payload-digest': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
  'server-not-modified': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
} as const;
export type RevisitProfile = keyof typeof REVISIT_PROFILES;

/** What a CDXJ line needs to know of a record. */
export interface WarcIndexInfo {
  mime: string;
  status: number;
  /** Payload digest without its `sha256:` prefix, as pywb and warcio write it; null if none. */
  digest: string | null;
}

export interface WarcRecord {
  id: string;
  type: WarcRecordType;
  date: Date;
  targetUri: string | null;
  /** The whole record as one gzip member. */
  gz: Buffer;
  /** Set for the records a replay index lists (response, revisit); null otherwise. */
  index: WarcIndexInfo | null;
}

/** Fields every record of a file shares. */
export interface RecordContext {
  warcinfoId: string;
  date?: Date;
  /** zlib level of the record's gzip member (1-9); DEFAULT_GZIP_LEVEL if unset. */
  gzipLevel?: number;
}

/**
 * 3, not zlib's default 6. Every page is compressed on the crawler's own CPU: on 50 KiB of
 * HTML, level 3 costs about 60% of level 6's time for about 7% more bytes stored
 * (`CRAWL_WARC_GZIP_LEVEL` chooses; bench/HISTORY.md).
 */
export const DEFAULT_GZIP_LEVEL = 3;

const CRLF = '\r\n';
/** The two CRLFs that end every record. */
const RECORD_END = Buffer.from(CRLF + CRLF);

function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

export function warcDigest(data: Buffer): string {
  return 'sha256:' + createHash('sha256').update(data).digest('hex');
}

/** HttpCapture's truncation reasons in WARC-Truncated terms. */
function truncatedFromCapture(t: HttpCapture['truncated']): WarcTruncated | null {
  if (t === false) return null;
  // A body cut off by the decompression-ratio guard fits none of the specific WARC reasons.
  return t === 'decompression' ? 'unspecified' : t;
}

/** Header values must stay on one line, whatever a server or caller put in them. */
function oneLine(value: string): string {
  return value.replace(/[\r\n]+/g, ' ');
}

interface RecordSpec {
  type: WarcRecordType;
  id?: string;
  date: Date;
  targetUri?: string | null;
  /** Type-specific fields; null values are left out. */
  fields: Array<[string, string | null | undefined]>;
  contentType: string;
  /** The record block, or its consecutive parts (the response's HTTP head and body: no copy joins them first). */
  block: Buffer | readonly Buffer[];
  payloadDigest?: string | null;
  index?: WarcIndexInfo;
  gzipLevel?: number;
}

function buildRecord(spec: RecordSpec): WarcRecord {
  const id = spec.id ?? newRecordId();
  const parts = Buffer.isBuffer(spec.block) ? [spec.block] : spec.block;
  let blockLength = 0;
  const blockHash = createHash('sha256');
  for (const part of parts) {
    blockHash.update(part);
    blockLength += part.length;
  }
  const fields: Array<[string, string | null | undefined]> = [
    ['WARC-Type', spec.type],
    ['WARC-Record-ID', id],
    ['WARC-Date', spec.date.toISOString()],
    ['WARC-Target-URI', spec.targetUri],
    ...spec.fields,
    ['WARC-Block-Digest', 'sha256:' + blockHash.digest('hex')],
    ['WARC-Payload-Digest', spec.payloadDigest],
    ['Content-Type', spec.contentType],
    ['Content-Length', String(blockLength)],
  ];
  let head = 'WARC/1.1' + CRLF;
  for (const [name, value] of fields) {
    if (value !== null && value !== undefined) head += `${name}: ${oneLine(value)}${CRLF}`;
  }
  return {
    id,
    type: spec.type,
    date: spec.date,
    targetUri: spec.targetUri ?? null,
    // Head, block and end go to zlib as they are, without first being joined into one buffer.
    gz: gzipMember([Buffer.from(head + CRLF, 'utf8'), ...parts, RECORD_END], spec.gzipLevel ?? DEFAULT_GZIP_LEVEL),
    index: spec.index ?? null,
  };
}

function stripAlgo(digest: string | null): string | null {
  return digest && digest.slice(digest.indexOf(':') + 1);
}

/** `key: value` lines, the body format of warcinfo and metadata records. */
function warcFields(pairs: Array<[string, string]>): Buffer {
  return Buffer.from(pairs.map(([k, v]) => `${oneLine(k)}: ${oneLine(v)}${CRLF}`).join(''), 'utf8');
}

export interface WarcinfoOptions {
  filename: string;
  software: string;
  hostname: string;
  operator?: string;
  isPartOf?: string;
  description?: string;
  date?: Date;
}

export function warcinfoRecord(o: WarcinfoOptions): WarcRecord {
  const pairs: Array<[string, string]> = [
    ['software', o.software],
    ['format', 'WARC File Format 1.1'],
    ['conformsTo', 'http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
    ['hostname', o.hostname],
  ];
  if (o.operator) pairs.push(['operator', o.operator]);
  if (o.isPartOf) pairs.push(['isPartOf', o.isPartOf]);
  if (o.description) pairs.push(['description', o.description]);
  return buildRecord({
    type: 'warcinfo',
    date: o.date ?? new Date(),
    fields: [['WARC-Filename', o.filename]],
    contentType: 'application/warc-fields',
    block: warcFields(pairs),
  });
}

/** Header strings from the HTTP client are byte strings (one char per byte), hence latin1. */
function latin1(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/**
 * The response head as stored. HttpCapture.body has already had its transfer and content
 * encodings removed, so the original headers would lie about the bytes that follow: a reader
 * would try to de-chunk or gunzip them again, and the payload digest must be over the body as
 * stored. So the encodings move to X-Crawler-* headers (kept for the record) and Content-Length
 * is set to the stored body's length.
 */
function httpResponseHead(c: HttpCapture): Buffer {
  const lines = [`HTTP/1.1 ${c.status} ${c.statusText || STATUS_CODES[c.status] || ''}`.trimEnd()];
  const storedLength = `Content-Length: ${bodyLength(c)}`;
  for (const [name, value] of c.headers) {
    const lower = name.toLowerCase();
    if (lower === 'transfer-encoding') lines.push(`X-Crawler-Transfer-Encoding: ${oneLine(value)}`);
    else if (lower === 'content-encoding') lines.push(`X-Crawler-Content-Encoding: ${oneLine(value)}`);
    else if (lower !== 'content-length') lines.push(`${oneLine(name)}: ${oneLine(value)}`);
  }
  lines.push(storedLength);
  return latin1(lines.join(CRLF) + CRLF + CRLF);
}

function responseMime(c: HttpCapture): string {
  const ct = c.headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1];
  return ct?.split(';', 1)[0]?.trim().toLowerCase() || 'unk';
}

export interface ExchangeOptions extends RecordContext {
  /**
   * Hex SHA-256 of c.body when the caller already has it (fetch computes it for its messages):
   * the payload digest is the same hash, so the body is not hashed twice.
   */
  payloadSha256?: string | null;
}

/** The request and response records of one exchange, each naming the other as concurrent. */
export function exchangeRecords(c: HttpCapture, o: ExchangeOptions): [WarcRecord, WarcRecord] {
  const requestId = newRecordId();
  const responseId = newRecordId();
  const date = o.date ?? new Date(c.startedAt);
  const requestBlock = latin1(c.requestHead);
  const headEnd = requestBlock.indexOf('\r\n\r\n');
  const request = buildRecord({
    type: 'request',
    gzipLevel: o.gzipLevel,
    id: requestId,
    date,
    targetUri: c.url,
    fields: [['WARC-IP-Address', c.ip], ['WARC-Concurrent-To', responseId], ['WARC-Warcinfo-ID', o.warcinfoId]],
    contentType: 'application/http;msgtype=request',
    block: requestBlock,
    payloadDigest: warcDigest(headEnd < 0 ? Buffer.alloc(0) : requestBlock.subarray(headEnd + 4)),
  });
  const payloadDigest = `sha256:${o.payloadSha256 || bodySha256(c)}`;
  const response = buildRecord({
    type: 'response',
    gzipLevel: o.gzipLevel,
    id: responseId,
    date,
    targetUri: c.url,
    fields: [
      ['WARC-IP-Address', c.ip],
      ['WARC-Concurrent-To', requestId],
      ['WARC-Truncated', truncatedFromCapture(c.truncated)],
      ['WARC-Warcinfo-ID', o.warcinfoId],
    ],
    contentType: 'application/http;msgtype=response',
    block: [httpResponseHead(c), ...bodyParts(c)],
    payloadDigest,
    index: { mime: responseMime(c), status: c.status, digest: stripAlgo(payloadDigest) },
  });
  return [request, response];
}

export interface RevisitOptions extends RecordContext {
  profile: RevisitProfile;
  refersToTargetUri: string;
  refersToDate: Date;
  /** WARC-Record-ID of the earlier response, when known. */
  refersTo?: string;
}

/**
 * A revisit stores only the new response's head. Under identical-payload-digest the payload
 * digest is computed from the new body, which by definition equals the earlier one's; a 304
 * (server-not-modified) has no payload to compare, so it gets none.
 */
export function revisitRecord(c: HttpCapture, o: RevisitOptions): WarcRecord {
  const payloadDigest = o.profile === 'identical-payload-digest' ? `sha256:${bodySha256(c)}` : null;
  return buildRecord({
    type: 'revisit',
    gzipLevel: o.gzipLevel,
    date: o.date ?? new Date(c.startedAt),
    targetUri: c.url,
    fields: [
      ['WARC-IP-Address', c.ip],
      ['WARC-Profile', REVISIT_PROFILES[o.profile]],
      ['WARC-Refers-To', o.refersTo],
      ['WARC-Refers-To-Target-URI', o.refersToTargetUri],
      ['WARC-Refers-To-Date', o.refersToDate.toISOString()],
      ['WARC-Warcinfo-ID', o.warcinfoId],
    ],
    contentType: 'application/http;msgtype=response',
    block: httpResponseHead(c),
    payloadDigest,
    index: { mime: 'warc/revisit', status: c.status, digest: stripAlgo(payloadDigest) },
  });
}

export interface MetadataOptions extends RecordContext {
  targetUri: string;
  fields: Array<[string, string]>;
  /** The record this one describes (e.g. a response), when there is one. */
  concurrentTo?: string;
}

/** What we know of a page we did not store: non-HTML, or refused. */
export function metadataRecord(o: MetadataOptions): WarcRecord {
  return buildRecord({
    type: 'metadata',
    gzipLevel: o.gzipLevel,
    date: o.date ?? new Date(),
    targetUri: o.targetUri,
    fields: [['WARC-Concurrent-To', o.concurrentTo], ['WARC-Warcinfo-ID', o.warcinfoId]],
    contentType: 'application/warc-fields',
    block: warcFields(o.fields),
  });
}

export interface ConversionOptions extends RecordContext {
  targetUri: string;
  /** The text, or its UTF-8 bytes as they are to be stored. */
  text: string | Uint8Array;
  /** WARC-Record-ID of the response the text was extracted from. */
  refersTo: string;
}

/** Extracted text (WET-style). Not indexed: replay must not serve it in place of the page. */
export function conversionRecord(o: ConversionOptions): WarcRecord {
  return buildRecord({
    type: 'conversion',
    gzipLevel: o.gzipLevel,
    date: o.date ?? new Date(),
    targetUri: o.targetUri,
    fields: [['WARC-Refers-To', o.refersTo], ['WARC-Warcinfo-ID', o.warcinfoId]],
    contentType: 'text/plain',
    block: typeof o.text === 'string' ? Buffer.from(o.text, 'utf8') : Buffer.from(o.text.buffer, o.text.byteOffset, o.text.byteLength),
  });
}
