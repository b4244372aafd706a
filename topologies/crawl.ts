/**
 * Every topic, declared once, as data. Stages (processors/) name their inputs and outputs by
 * these entries; `crawl init` creates or updates the topics from here; the embedded runtime
 * builds its in-process log from here too.
 *
 * Partitioning: every record is routed by the *host* of its URL, whatever its key: Kafka's
 * murmur2 partitioner applied to the host's registered domain (lib/partitioner.ts). One host
 * (indeed one whole domain) therefore lives in one partition of every crawl topic, and
 * co-partitioned topics (same partition count) put a host's links, candidates, fetches,
 * statuses and URL-table rows in the same partition number, so the frontier that owns
 * partition p owns all of those hosts' politeness and state.
 */

export type CleanupPolicy = 'delete' | 'compact';

export interface TopicSpec {
  /** Kafka topic name. */
  readonly name: string;
  /** What the record key holds. The partition is always chosen from the host. */
  readonly key: 'host' | 'url' | 'host-field' | 'subject' | 'reporter' | 'account' | 'host-account';
  /** Avro schema file in schemas/ (without .avsc); its name is also the registry subject's record name. */
  readonly valueSchema: string;
  readonly cleanupPolicy: CleanupPolicy;
  /** -1 for unlimited (compacted tables). */
  readonly retentionMs: number;
  readonly maxMessageBytes: number;
  /** Value encoding on Kafka: Confluent wire format through the registry. */
  readonly encoding: 'avro-registry';
  /**
   * How producers compress this topic's record batches (connectors/kafka-lz4.ts). LZ4 on the
   * crawl's own topics; none on the handoff topic, so any client reads it without a codec.
   */
  readonly compression: Compression;
  /**
   * The embedded journal's segment size for this topic (runtime/file-log.ts; 64 MiB when
   * absent). A compacted topic is cleaned only once its segment is closed, and every start
   * reads its rows back: a small table rewritten often (crawl.host-policy: a `backoff` row at
   * every failure) closes segments small.
   */
  readonly journalSegmentBytes?: number;
}

export type Compression = 'lz4' | 'none';

const DAY_MS = 24 * 3600 * 1000;
const MIB = 1024 * 1024;

/** Partition count shared by all crawl topics (co-partitioning needs one number). */
export const DEFAULT_PARTITIONS = 8;

export const topics = {
  links: {
    name: 'crawl.links', key: 'host', valueSchema: 'crawl.Link.v1',
    cleanupPolicy: 'delete', retentionMs: 7 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  frontier: {
    name: 'crawl.frontier', key: 'host', valueSchema: 'crawl.Candidate.v1',
    cleanupPolicy: 'delete', retentionMs: 7 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  fetch: {
    name: 'crawl.fetch', key: 'host', valueSchema: 'crawl.FetchRequest.v1',
    cleanupPolicy: 'delete', retentionMs: 1 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  fetchStatus: {
    name: 'crawl.fetch-status', key: 'host', valueSchema: 'crawl.FetchStatus.v1',
    cleanupPolicy: 'delete', retentionMs: 7 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  fetched: {
    // Carries the page as its stored WARC response record (a gzip member; lib/fetched-body), so
    // parse needs no store read and the bytes travel compressed.
    name: 'crawl.fetched', key: 'host', valueSchema: 'crawl.FetchedPage.v1',
    cleanupPolicy: 'delete', retentionMs: 1 * DAY_MS, maxMessageBytes: 4 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  parsed: {
    name: 'crawl.parsed', key: 'host', valueSchema: 'crawl.ParsedPage.v1',
    cleanupPolicy: 'delete', retentionMs: 7 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  handoff: {
    name: 'crawl.handoff.v3', key: 'host', valueSchema: 'crawl.handoff.v3',
    cleanupPolicy: 'delete', retentionMs: 30 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'none',
  },
  urls: {
    // The URL table: one row per URL (key = normalised URL), owned by the frontier's partitions.
    name: 'crawl.urls', key: 'url', valueSchema: 'crawl.UrlState.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  hostPolicy: {
    // Key `host|field-group` so different writers never overwrite each other's fields.
    name: 'crawl.host-policy', key: 'host-field', valueSchema: 'crawl.HostPolicy.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
    // A few rows a host, rewritten at each failure: 16 MB in 2 minutes of `crawl run` with 2M
    // seeds over 100,000 hosts, all of it read back at a restart before the first request.
    journalSegmentBytes: 1 * MIB,
  },
  content: {
    // Parse's duplicate tables (SHA-256 and SimHash per URL), key = url; replayed on restart.
    name: 'crawl.content', key: 'url', valueSchema: 'crawl.Content.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  feeds: {
    // The feeds the frontier polls (processors/frontier-feeds.ts), key = the feed's URL; owned,
    // like crawl.urls, by the frontier partition of the feed's host, and replayed on restart.
    name: 'crawl.feeds', key: 'url', valueSchema: 'crawl.FeedState.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  optout: {
    // Key `subject`: one record per host or registered domain (rows of the first version, keyed
    // `subject|purpose`, are still read: lib/optout-registry.ts).
    name: 'crawl.optout', key: 'subject', valueSchema: 'crawl.OptOut.v2',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  optoutApplied: {
    // The registry version each processor instance has applied (runtime/registry-report.ts);
    // crawl serve raises the lag alarm from it.
    name: 'crawl.optout-applied', key: 'reporter', valueSchema: 'crawl.OptOutApplied.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  webmasterAccounts: {
    // Webmaster accounts (only their tokens' SHA-256): `crawl webmaster add-account`.
    name: 'crawl.webmaster-accounts', key: 'account', valueSchema: 'crawl.WebmasterAccount.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  webmasterSites: {
    // Key `host|account`: a host an account claimed, and whether its DNS TXT record verified it.
    name: 'crawl.webmaster-sites', key: 'host-account', valueSchema: 'crawl.WebmasterSite.v1',
    cleanupPolicy: 'compact', retentionMs: -1, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
  webmasterAudit: {
    // Every webmaster change with who made it and when; kept for 400 days.
    name: 'crawl.webmaster-audit', key: 'host', valueSchema: 'crawl.WebmasterAudit.v1',
    cleanupPolicy: 'delete', retentionMs: 400 * DAY_MS, maxMessageBytes: 1 * MIB, encoding: 'avro-registry', compression: 'lz4',
  },
} as const satisfies Record<string, TopicSpec>;

export type TopicId = keyof typeof topics;
export const allTopics: readonly TopicSpec[] = Object.values(topics);

/** Prefix topic names (tests use a unique prefix per run so they never share state). */
export function topicName(spec: TopicSpec, prefix = ''): string {
  return prefix + spec.name;
}
