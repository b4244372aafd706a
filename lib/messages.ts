/**
 * The messages that flow between processors. Each has an Avro schema in schemas/ with the same
 * field names (snake_case, as on the wire); times are epoch milliseconds (Avro long).
 *
 *   crawl.links --seen-test--> crawl.frontier --frontier--> crawl.fetch --fetch--> crawl.fetched --parse--> crawl.parsed --handoff--> crawl.handoff.v3
 *                                     ^                                  \--> crawl.fetch-status --> frontier
 *                                     '------------------ parse emits new links to crawl.links
 */

/** crawl.links: a URL somebody found (a seed, or a link on a page). Not yet normalised. */
export interface LinkMsg {
  url: string;
  source_url: string | null;
  depth: number;
  discovered_at: number;
  /** Seeds bypass the "seen" filter so an operator can always re-inject a URL. */
  is_seed: boolean;
  /** Redirect hops that led to this URL (absent or 0 unless it is a redirect target; lib/redirect-hops). */
  redirects?: number;
  /** Importance cash from the linking page (OPIC-style share; lower for near-duplicates); absent/null = unscored. */
  priority?: number | null;
  /** Sitemap <lastmod> (epoch ms) for links read from a sitemap; absent/null otherwise. */
  lastmod?: number | null;
  /** Further URLs of the same host with every other field as url's (lib/link-groups); absent/[] = none. */
  more_urls?: string[];
  /** Priority class the discoverer gives (1 for feeds and their items); absent/null: the frontier derives it. */
  priority_class?: number | null;
}

/** crawl.frontier: a normalised URL that seen-test had not seen; the frontier's exact check decides. */
export interface CandidateMsg {
  url: string;
  host: string;
  depth: number;
  discovered_at: number;
  source_url: string | null;
  /** Redirect hops that led to this URL (absent or 0 unless it is a redirect target; lib/redirect-hops). */
  redirects?: number;
  /** Importance in [0, 1] (1 = most important) from any scorer; absent/null: the frontier uses depth. */
  priority?: number | null;
  /** Further normalised URLs of the same host with every other field as url's (lib/link-groups); absent/[] = none. */
  more_urls?: string[];
  /** The Link's priority_class; absent/null: the frontier derives it (processors/priority-class.ts). */
  priority_class?: number | null;
}

/** crawl.fetch: one leased fetch. The frontier releases at most one per host at a time. */
export interface FetchRequestMsg {
  url: string;
  host: string;
  depth: number;
  lease_id: string;
  lease_expires_at: number;
  attempt: number;
  /** Content hash of the last stored copy, so parse can tell NEW from CHANGED from unchanged. */
  prev_sha256: string | null;
  etag: string | null;
  last_modified: string | null;
  /** Redirect hops that led to this URL (absent or 0 unless it is a redirect target; lib/redirect-hops). */
  redirects?: number;
  /** The URL's importance in [0, 1] at lease time (Candidate.priority; 1 for a seed); absent/null = unscored. */
  priority?: number | null;
  /** The URL's priority class at lease time (1 high, 2, 3 low); absent/null from older frontiers. */
  priority_class?: number | null;
}

export type FetchOutcome =
  | 'FETCHED' // a response was stored (any HTTP status)
  | 'ROBOTS_DISALLOWED'
  | 'ROBOTS_UNAVAILABLE' // robots.txt 5xx / unreachable: disallow all, retry later
  | 'NOT_HTML' // stored as metadata only
  | 'FAILED' // network error, timeout, refused target; retried with back-off
  | 'REFUSED'; // never retried (SSRF guard, bad URL)

/** crawl.fetch-status: what happened to a leased fetch; the frontier releases the host on it. */
export interface FetchStatusMsg {
  url: string;
  host: string;
  lease_id: string;
  /**
   * false: sent as soon as the response is in, so the host's politeness clock starts now and
   * the host is free again; the URL stays leased. true: final, sent after the WARC file holding
   * the page is stored (or at once when nothing is stored).
   */
  stored: boolean;
  outcome: FetchOutcome;
  http_status: number | null;
  reason: string | null;
  started_at: number;
  finished_at: number;
  response_ms: number;
  /** max(Crawl-delay from robots.txt, 0) in ms; the frontier turns it into the host's delay. */
  crawl_delay_ms: number;
  retry_after_ms: number | null;
  sha256: string | null;
  etag: string | null;
  last_modified: string | null;
  warc_uri: string | null;
  warc_offset: number | null;
  warc_length: number | null;
  /** The address the page request connected to (per-IP politeness); absent/null if none. */
  ip?: string | null;
  /** rss | atom | rdf | news-sitemap when the response was a feed; absent/null otherwise (a 304 too). */
  feed_kind?: string | null;
  /** For a feed: its items' keys in feed order (processors/feeds.ts itemKey), bounded; absent/[] otherwise. */
  feed_items?: string[];
  /**
   * Whether the lease sent any request to the host (robots.txt or the page); absent = true.
   * false (a robots.txt verdict from the cached answer, a refusal before any request): no gap
   * starts, the host's next-allowed time stays what the last request's end gave it.
   */
  contacted?: boolean;
}

/** A pointer to one record in a stored file: read `length` bytes at `offset` of `uri`. */
export interface RecordPointer {
  uri: string;
  offset: number;
  length: number;
}

/** crawl.fetched: a stored page (its WARC file is already durable), with the body for parse. */
export interface FetchedPageMsg {
  url: string;
  final_url: string;
  host: string;
  depth: number;
  fetched_at: number;
  http_status: number;
  content_type: string | null;
  /** Body after content decoding, at most the body cap; empty when record_gz carries it (read it with lib/fetched-body). */
  body: Buffer;
  truncated: boolean;
  sha256: string;
  prev_sha256: string | null;
  warc: RecordPointer;
  x_robots_tag: string | null;
  /** WARC-Record-ID of the response record (parse's conversion record refers to it). */
  record_id?: string | null;
  /** The page's importance in [0, 1], copied from the FetchRequest; absent/null = unscored. */
  priority?: number | null;
  /** The response record's gzip member as stored at `warc`; when set, `body` is empty (lib/fetched-body). */
  record_gz?: Buffer | null;
}

export type ChangeKind = 'NEW' | 'CHANGED' | 'UNCHANGED';

/** crawl.parsed: what parse learned of a page; handoff turns NEW/CHANGED ones into events. */
export interface ParsedPageMsg {
  url: string;
  canonical_url: string | null;
  host: string;
  fetched_at: number;
  change: ChangeKind;
  sha256: string;
  simhash64: string | null;
  language: string | null;
  title: string | null;
  text_length: number;
  outlinks: number;
  noindex: boolean;
  warc: RecordPointer;
  text: RecordPointer | null;
  /** Another URL of the host whose content this duplicates (exact or within 3 SimHash bits); never handed off. */
  near_duplicate_of?: string | null;
  /** The page's importance in [0, 1], copied from the FetchedPage; handoff's `importance`. Absent/null = unscored. */
  priority?: number | null;
  /** The SimHash algorithm of simhash64 (lib/simhash.ts SIMHASH_VERSION); absent: 1 (written before versions). */
  simhash_version?: number;
}

/** crawl.content (compacted, key = url): what parse last saw at a URL; rebuilds its duplicate tables. */
export interface ContentMsg {
  url: string;
  host: string;
  sha256: string;
  simhash64: string | null;
  fetched_at: number;
  duplicate_of: string | null;
  /** The SimHash algorithm of simhash64; absent: 1 (a row written before versions). */
  simhash_version?: number;
}

export type UrlStatus = 'QUEUED' | 'LEASED' | 'FETCHED' | 'FAILED' | 'DEAD' | 'DISALLOWED';

/** crawl.urls (compacted, key = url): the frontier's URL table row. */
export interface UrlStateMsg {
  url: string;
  host: string;
  state: UrlStatus;
  depth: number;
  discovered_at: number;
  updated_at: number;
  lease_id: string | null;
  lease_expires_at: number | null;
  attempts: number;
  next_due_at: number | null;
  fetched_at: number | null;
  http_status: number | null;
  sha256: string | null;
  etag: string | null;
  last_modified: string | null;
  warc_uri: string | null;
  warc_offset: number | null;
  warc_length: number | null;
  reason: string | null;
  /** Redirect hops that led to this URL (absent or 0 unless it is a redirect target; lib/redirect-hops). */
  redirects?: number;
  /** Importance in [0, 1] from the Candidate (1 for a seed), kept so a restart keeps it; absent/null = unscored. */
  priority?: number | null;
  /** Priority class 1 (high), 2, 3 (low), set when first queued; absent/null in older rows (derived). */
  priority_class?: number | null;
}

/** crawl.feeds (compacted, key = url): a feed the frontier polls at its own interval. */
export interface FeedStateMsg {
  url: string;
  host: string;
  kind: string;
  interval_ms: number;
  added_at: number;
  last_polled_at: number;
  last_ok_at: number;
  last_status: number | null;
  etag: string | null;
  last_modified: string | null;
  items_seen: string[];
  new_items: number;
  polls: number;
  items_total: number;
  failures: number;
  updated_at: number;
}

/** crawl.handoff.v3: the indexer's event. */
export interface HandoffEvent {
  event_id: string;
  url: string;
  canonical_url: string | null;
  fetched_at: number;
  change: 'NEW' | 'CHANGED';
  simhash64: string | null;
  /** The SimHash algorithm of simhash64 (1 or 2); values of different versions do not compare. */
  simhash_version: number;
  language: string | null;
  importance: number | null;
  usage: { search_index: boolean; ai_training: boolean };
  usage_registry_version: number;
  warc: RecordPointer;
  text: RecordPointer | null;
}

/** crawl.host-policy (compacted, key = `${host}|${field}`): one field group of a host's policy. */
export interface HostPolicyMsg {
  host: string;
  /** block | crawl-rate | webmaster-rate | robots | backoff | trap:<path-prefix> … (one writer per field group). */
  field: string;
  updated_at: number;
  blocked_until: number | null;
  reason: string | null;
  min_delay_ms: number | null;
  /** field=backoff: consecutive 429/503 answers (absent = 0). */
  failures?: number;
  /** field=backoff: consecutive timeouts (absent = 0). */
  timeouts?: number;
  /** field=backoff: the host's whole current gap, waited by a restarted frontier before its first request. */
  gap_ms?: number | null;
  /** field=webmaster-rate: the row no longer applies from this time (absent/null = never expires). */
  expires_at?: number | null;
  /** field=webmaster-rate: the rate the webmaster set (min_delay_ms = ceil(1000 / it)). */
  max_requests_per_second?: number | null;
  /** field=robots: the origin whose robots.txt this is, its final HTTP status and body (reused while fresh after a restart). */
  robots_origin?: string | null;
  robots_status?: number | null;
  robots_body?: Buffer | null;
}

export type OptOutPurpose = 'crawl' | 'search_index' | 'ai_training';
export type OptOutDecision = 'allow' | 'deny';
export type OptOutScope = 'host' | 'registered_domain';
export type OptOutPurposes = Record<OptOutPurpose, OptOutDecision>;

/**
 * crawl.optout (compacted): the opt-out registry (schemas/crawl.OptOut.v2.avsc). A version 2
 * record (key = subject) holds scope, purposes, source, verified and effective_at; a row written
 * under version 1 (key = `${subject}|${purpose}`) holds purpose and allowed instead. Readers go
 * through lib/optout-registry.ts, which reads both.
 */
export interface OptOutMsg {
  subject: string;
  /** Version 1 rows only. */
  purpose?: OptOutPurpose | null;
  /** Version 1 rows only: false = opted out of `purpose`. */
  allowed?: boolean | null;
  registry_version: number;
  updated_at: number;
  scope?: OptOutScope | null;
  purposes?: OptOutPurposes | null;
  source?: string | null;
  verified?: boolean;
  effective_at?: number | null;
}

/** crawl.optout-applied (compacted, key = reporter): the registry version one processor instance has applied. */
export interface OptOutAppliedMsg {
  reporter: string;
  stage: string;
  machine: string;
  pid: number;
  applied_version: number;
  started_at: number;
  reported_at: number;
}

/** crawl.webmaster-accounts (compacted, key = id): a webmaster account; only its token's hash is kept. */
export interface WebmasterAccountMsg {
  id: string;
  name: string;
  token_sha256: string;
  created_at: number;
  created_by: string;
  disabled_at: number | null;
}

export type WebmasterSiteStatus = 'PENDING' | 'VERIFIED';

/** crawl.webmaster-sites (compacted, key = `${host}|${account}`): a host an account claimed. */
export interface WebmasterSiteMsg {
  host: string;
  account: string;
  token: string;
  record: string;
  status: WebmasterSiteStatus;
  created_at: number;
  verified_at: number | null;
}

/** crawl.webmaster-audit (append-only): one change, who made it and when. */
export interface WebmasterAuditMsg {
  at: number;
  actor: string;
  action: string;
  host: string | null;
  /** JSON of what was set (never a token). */
  detail: string;
}
