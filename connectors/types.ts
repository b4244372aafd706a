/**
 * Narrow interfaces to the outside world. Processors and lib/ code see only these; the
 * implementations in connectors/ are the only files that import kafkajs, ioredis, @aws-sdk,
 * undici or the schema-registry client.
 */

/** Object storage for WARC, CDXJ and WET files: S3-compatible, or a local folder. */
export interface PageStore {
  /** Human-readable location, e.g. `s3://bucket/prefix` or `file:///abs/dir`. */
  readonly location: string;
  /**
   * Store an object durably under `key` (a relative path such as `warc/2026/…warc.gz`).
   * Resolves with the object's URI only once the bytes are durable; an object is never visible
   * under its final key in a partial state.
   */
  put(key: string, body: Buffer, contentType?: string): Promise<string>;
  /**
   * put() of the concatenation of `parts`, where the store can write them as they are (a local
   * file: one writev) without joining them into one buffer first (a WARC file is up to 100 MB).
   */
  putParts?(key: string, parts: readonly Buffer[], contentType?: string): Promise<string>;
  /** Read `length` bytes at `offset` of the object at `uri` (as returned by put). */
  read(uri: string, offset: number, length: number): Promise<Buffer>;
  /** Read a whole object. */
  readAll(uri: string): Promise<Buffer>;
  /** Keys under a prefix, for tests and tools. */
  list(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

/** A refusal or failure of one HTTP exchange. `code` is stable and goes into logs and metrics. */
export class FetchError extends Error {
  constructor(
    readonly code: FetchErrorCode,
    message: string,
    /** True when trying again later could succeed (timeouts, resets, 5xx-free network errors). */
    readonly retriable: boolean,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

export type FetchErrorCode =
  | 'BAD_URL'
  | 'UNSUPPORTED_SCHEME'
  | 'SSRF_BLOCKED'
  | 'DNS_FAILED'
  | 'CONNECT_TIMEOUT'
  | 'CONNECT_FAILED'
  | 'DEADLINE_EXCEEDED'
  | 'HEADERS_TOO_LARGE'
  | 'CONNECTION_RESET'
  | 'PROTOCOL_ERROR';

export interface HttpFetchOptions {
  userAgent: string;
  /** Extra request headers (conditional GET, Accept). */
  headers?: Record<string, string>;
  connectTimeoutMs: number;
  /** Deadline for the whole exchange, headers and body; a slow drip cannot outlive it. */
  overallTimeoutMs: number;
  maxHeaderBytes: number;
  /** Decoded body bytes kept; the rest is dropped and the capture marked truncated. */
  maxBodyBytes: number;
  /** Refuse bodies that decode to more than this many times their encoded size. */
  maxDecompressionRatio: number;
  /** Permit loopback/private targets (tests, intranets). Default false. */
  allowPrivateNetwork: boolean;
  /** Extra CIDR ranges to permit even when allowPrivateNetwork is false. */
  allowCidrs?: string[];
}

/** One HTTP exchange as it happened, with what a WARC request/response record pair needs. */
export interface HttpCapture {
  url: string;
  /** The address actually connected to (after the SSRF check); null if none. */
  ip: string | null;
  status: number;
  statusText: string;
  /** Response header pairs in the order received. */
  headers: Array<[string, string]>;
  /** The request as sent: request line and headers, CRLF-separated, ending with a blank line. */
  requestHead: string;
  /** Body after removing transfer and content encodings, at most maxBodyBytes. */
  body: Buffer;
  /**
   * The same bytes as the chunks they arrived in, when the client kept them (the undici client
   * does; its `body` then joins them on first use). Fetch's page path (the SHA-256, the WARC
   * record's digest and gzip) reads them through lib/net/capture-body.ts and never joins them:
   * a copy of every page in a fresh buffer, half of the event loop's ArrayBuffer allocation a
   * page (docs/performance.md, "Fetch and WARC CPU").
   */
  bodyParts?: readonly Buffer[];
  /**
   * Why the body is incomplete (WARC-Truncated): 'length' body cap, 'time' overall deadline,
   * 'decompression' ratio cap / corrupt or stacked encodings, 'disconnect' the server closed
   * or broke the connection mid-body.
   */
  truncated: false | 'length' | 'time' | 'decompression' | 'disconnect';
  startedAt: number;
  /** Wall time of the whole fetch: resolution, connecting, the exchange, and our own handling of it. */
  elapsedMs: number;
  /**
   * The server's response time as this client saw it: from the request being written on its
   * connection to the last body byte read (or the cut). Politeness scales a host's gap by it
   * (10 x response time), so it leaves out what is ours: resolving the name, waiting for and
   * setting up the connection, and handling the body after its last byte. Counting those made a
   * busy crawler take its own backlog for a slow server (bench/HISTORY.md).
   */
  responseMs: number;
}

export interface HttpClient {
  /** One request, no redirects followed (the caller re-checks each hop). Throws FetchError. */
  fetch(url: string, opts: HttpFetchOptions): Promise<HttpCapture>;
  close(): Promise<void>;
}
