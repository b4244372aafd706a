/**
 * Every setting, with its default and unit, in one table. Read once at start-up: from the
 * environment (Kafka mode, `CRAWL_*`) and then from CLI flags, which win. A bad value fails at
 * start-up with a message naming the variable and what it accepts.
 */

import { availableParallelism } from 'node:os';

export interface CrawlConfig {
  /** Product token and contact URL in the User-Agent: `KCrawl/0.1 (+CONTACT_URL)`. */
  userAgent: string;
  /** Partitions of every crawl topic (embedded log and `crawl init`). */
  partitions: number;
  /** Least gap between two requests to one host, before Crawl-delay and 10x response time. */
  minHostDelayMs: number;
  /** Cap on a robots.txt Crawl-delay we honour (a hostile value must not stall a host forever). */
  maxCrawlDelayMs: number;
  /** How many times a host's last response time the next request waits (politeness formula). */
  responseTimeFactor: number;
  /** A fetch not answered within this is re-issued by the frontier. */
  leaseMs: number;
  /** Retry back-off after the 1st, 2nd, 3rd… failure; after maxAttempts the URL is dead this cycle. */
  retryBackoffMs: number[];
  maxAttempts: number;
  /** robots.txt is re-fetched after this (RFC 9309: at most 24 h). */
  robotsCacheMs: number;
  /** An unreachable robots.txt (5xx, network) keeps a cached good copy in force up to this age (RFC 9309 §2.3.1.4). */
  robotsStaleMaxMs: number;
  /** Adaptive politeness (processors/frontier-aimd.ts): multiplier on a host's gap per 429/503 (2 = half the rate). */
  aimdBackoffFactor: number;
  /** The adapted gap never grows beyond this. */
  aimdMaxDelayMs: number;
  /** Requests/s given back per good answer while a host is slowed (additive increase). */
  aimdRecoveryRatePerSec: number;
  /** Consecutive 503s (or robots.txt 5xx) that pause a host, and for how long. */
  pauseAfter503: number;
  hostPauseMs: number;
  /** Wait after the first timeout; doubled per consecutive timeout, capped by aimdMaxDelayMs. */
  timeoutBackoffMs: number;
  /** Layered politeness: requests in flight and least gap across all hosts of one registered domain, and of one IP address. */
  domainMaxInflight: number;
  domainMinGapMs: number;
  ipMaxInflight: number;
  ipMinGapMs: number;
  /** Front queues: priority levels (0 = most important; from Candidate.priority, else depth). */
  priorityLevels: number;
  /** Fetches per host per cycle (a frontier process's lifetime); the rest wait for the next cycle. */
  hostBudgetPerCycle: number;
  /**
   * An unfetched URL leaves the URL table this long after it was discovered (a tombstone in
   * crawl.urls; seed 000: 6 days), so the table does not keep dead links for ever; 0 = never.
   */
  urlTtlMs: number;
  /**
   * Where a frontier keeps its partitions' URL tables on local disk (Kafka mode; `crawl run`
   * uses <out>/state/frontier). Processes on one machine may share it: a partition's store is
   * locked by the process that owns it.
   */
  stateDir: string;
  /** Recrawl interval: first one after a fetch, halved on change and doubled otherwise, within [min, max]. */
  recrawlInitialMs: number;
  recrawlMinMs: number;
  recrawlMaxMs: number;
  /** Also try /sitemap.xml on hosts whose robots.txt names no sitemap (one more polite request per host). */
  sitemapProbe: boolean;
  /**
   * Priority classes (processors/priority-class.ts; docs/feeds-and-budget.md): 1 high, 2, 3 low.
   * A URL without a class from its discoverer (feeds and news sitemaps give 1) gets 3 at this
   * depth or deeper, else 1 from this importance up, 3 below priorityClassLowBelow, 2 between.
   */
  priorityClassTailDepth: number;
  priorityClassHighMin: number;
  priorityClassLowBelow: number;
  /**
   * The fetch budget (processors/frontier-budget.ts): pages a day the frontier may lease, over the
   * whole crawl (each frontier process spends its partitions' share); 0 = no budget.
   */
  budgetPagesPerDay: number;
  /** Shares of the budget of classes 1, 2 and 3 (any scale: 60,30,10 is 60%, 30%, 10%). */
  budgetClassShares: number[];
  /** Whether a class's unused share goes to the other classes (the highest first) or is left unspent. */
  budgetLendUnused: boolean;
  /** How much of its share a class may save up while it has nothing to fetch, in seconds of its rate. */
  budgetBurstSecs: number;
  /**
   * Feeds (RSS 2.0, Atom, news sitemaps; processors/feeds.ts, frontier-feeds.ts): first poll
   * interval, then shorter when polls find new items and longer when they find none, within
   * [feedMinPollMs, feedMaxPollMs]. Below 60 s only with allowPrivateNetwork (test webs).
   */
  feedPollMs: number;
  feedMinPollMs: number;
  feedMaxPollMs: number;
  /** Items read from one poll of a feed (the rest of a longer feed is ignored). */
  feedMaxItems: number;
  /** Feeds polled per host; further feeds of the host are recrawled like pages. */
  feedMaxPerHost: number;
  maxDepth: number;
  /** URL-seen Bloom filter: designed URLs per generation (n) and false-positive rate at n (p). */
  bloomExpectedUrls: number;
  bloomFalsePositiveRate: number;
  /** Largest Bloom shard (Valkey caps one object at 128 MB); more shards past it. */
  bloomMaxShardBytes: number;
  /** How often seen-test re-reads the Redis generation pointer, and how long a rebuild waits for all of them to notice a change. */
  bloomRefreshMs: number;
  bloomSwitchWaitMs: number;
  /** Trap defences: a path segment repeated this many times; a query growing by this many chars this many times in a row. */
  trapMaxSegmentRepeats: number;
  trapQueryGrowthMarginChars: number;
  trapQueryGrowthRuns: number;
  connectTimeoutMs: number;
  fetchTimeoutMs: number;
  maxHeaderBytes: number;
  maxBodyBytes: number;
  maxDecompressionRatio: number;
  /**
   * Fetches in flight per fetch process at start (different hosts; one per host is the
   * frontier's rule). The limit then follows Little's law (lib/concurrency.ts): observed fetch
   * rate x mean fetch time, within [fetchConcurrencyMin, fetchConcurrencyMax].
   */
  fetchConcurrency: number;
  fetchConcurrencyMin: number;
  /** Worker threads that analyse pages for parse (HTML pass, SimHash, language); 0 = parse's own thread; the second and later only while the event loop has room. Default: 2 with two cores or more. */
  parseThreads: number;
  /** Fetch waits while parse has more stored pages than this still to parse; 0 = never waits. */
  parseBacklogMax: number;
  /**
   * `crawl run` only: fetch also waits while the stored pages parse has still to parse hold more
   * than this many bytes in memory (their gzipped WARC records); 0 = never waits on bytes.
   */
  parseBacklogMaxBytes: number;
  /**
   * `crawl run` only: seen-test waits while the frontier has more crawl.frontier records than
   * this still to take, and parse while seen-test has more crawl.links records; 0 = never waits.
   * The embedded log holds unconsumed records in memory, so this bounds it (Kafka keeps them on disk).
   */
  stageBacklogMax: number;
  /** Cap on fetches in flight (sockets and buffered bodies); 0 = a fixed limit of fetchConcurrency. */
  fetchConcurrencyMax: number;
  /**
   * Leases a frontier process keeps in flight at most: issued and not yet answered by a
   * crawl.fetch-status record it has taken in (or expired); 0 = no limit (each host still has at
   * most one). `crawl run` sets 8,192 (cli/embedded.ts): its log holds every lease and every
   * answer not yet taken in memory.
   */
  frontierMaxLeases: number;
  /**
   * Keep-alive connection pools (origin x address) a fetch process keeps; the least recently
   * used beyond this is closed. Size it to the hosts in rotation: fewer, and hosts evict each
   * other's pools so nearly every request opens a new connection.
   */
  httpMaxPools: number;
  allowPrivateNetwork: boolean;
  allowCidrs: string[];
  /** WARC rotation. */
  warcMaxRecords: number;
  warcMaxBytes: number;
  warcMaxAgeMs: number;
  warcPrefix: string;
  /** zlib level of each WARC record's gzip member, 1 (fastest) to 9 (smallest). */
  warcGzipLevel: number;
  /** Port of a process's Prometheus listener (GET /metrics); 0 = off. */
  metricsPort: number;
  /** How often a process reports the opt-out registry version it has applied (also on every change). */
  optoutReportMs: number;
  /** crawl serve raises the opt-out lag alarm when a process is behind the registry by more than this. */
  optoutLagAlarmMs: number;
  /** Webmaster API: DNS servers for TXT verification (`host` or `host:port`, comma-separated); empty = the system's resolvers. */
  webmasterDnsServers: string[];
  /** Webmaster API: how long one TXT lookup may take before the verification answers that DNS did not respond. */
  webmasterDnsTimeoutMs: number;
  /** Webmaster API: the name in the TXT record a webmaster publishes, `<name>-verify=<token>`. */
  webmasterTxtName: string;
  /** Webmaster API: requests per minute one account may make (a token bucket of this size, refilled over a minute). */
  webmasterRequestsPerMinute: number;
  /** Webmaster API: the fastest rate a verified webmaster may set, in requests per second. */
  webmasterMaxRequestsPerSecond: number;
  /**
   * Kafka mode, group membership: a member not heard from for this long (killed) loses its
   * partitions to the others or to its restarted self; at least the brokers' least,
   * group.min.session.timeout.ms (6 s by default). Heartbeats go every kafkaHeartbeatMs.
   */
  kafkaSessionTimeoutMs: number;
  kafkaHeartbeatMs: number;
  /** Kafka mode: SIGTERM stops a process within this, whatever the brokers do (a second SIGTERM at once). */
  stopTimeoutMs: number;
  /** Unit prices for the cost-per-million-pages estimate: one crawler process for an hour, and one GB of WARC stored for a month (USD). */
  costProcessHourUsd: number;
  costStoredGbMonthUsd: number;
}

export const DEFAULTS: CrawlConfig = {
  userAgent: 'KCrawl/0.1 (+https://github.com/kcrawl/kcrawl#for-webmasters)',
  partitions: 8,
  minHostDelayMs: 1000,
  maxCrawlDelayMs: 60_000,
  responseTimeFactor: 10,
  leaseMs: 5 * 60_000,
  retryBackoffMs: [60_000, 120_000, 240_000, 480_000],
  maxAttempts: 5,
  robotsCacheMs: 24 * 3600_000,
  robotsStaleMaxMs: 30 * 24 * 3600_000,
  aimdBackoffFactor: 2,
  aimdMaxDelayMs: 10 * 60_000,
  aimdRecoveryRatePerSec: 0.02,
  pauseAfter503: 3,
  hostPauseMs: 30 * 60_000,
  timeoutBackoffMs: 10_000,
  domainMaxInflight: 4,
  domainMinGapMs: 250,
  ipMaxInflight: 4,
  ipMinGapMs: 250,
  priorityLevels: 4,
  hostBudgetPerCycle: 100_000,
  urlTtlMs: 6 * 24 * 3600_000,
  stateDir: './kcrawl-state',
  recrawlInitialMs: 24 * 3600_000,
  recrawlMinMs: 3600_000,
  recrawlMaxMs: 60 * 24 * 3600_000,
  sitemapProbe: false,
  // Seeds score 1 and a page's links at least 0.3 (processors/parse-dedup.ts linkShare); links of
  // duplicate pages score a tenth of that. Depth is the tail's mark: every page counts as 1 there.
  priorityClassTailDepth: 3,
  priorityClassHighMin: 0.75,
  priorityClassLowBelow: 0.3,
  budgetPagesPerDay: 0,
  budgetClassShares: [60, 30, 10],
  budgetLendUnused: true,
  budgetBurstSecs: 60,
  feedPollMs: 10 * 60_000,
  feedMinPollMs: 60_000,
  feedMaxPollMs: 6 * 3600_000,
  feedMaxItems: 200,
  feedMaxPerHost: 16,
  maxDepth: 16,
  // 10 M URLs at 1%: 95.9 Mbit (12 MB), k = 7; Kafka mode sizes it for the crawl (m grows linearly with n).
  bloomExpectedUrls: 10_000_000,
  bloomFalsePositiveRate: 0.01,
  bloomMaxShardBytes: 128 * 1000 * 1000,
  bloomRefreshMs: 1000,
  bloomSwitchWaitMs: 5000,
  trapMaxSegmentRepeats: 3,
  trapQueryGrowthMarginChars: 4,
  trapQueryGrowthRuns: 3,
  connectTimeoutMs: 5_000,
  fetchTimeoutMs: 30_000,
  maxHeaderBytes: 64 * 1024,
  maxBodyBytes: 2 * 1024 * 1024,
  maxDecompressionRatio: 100,
  fetchConcurrency: 256,
  fetchConcurrencyMin: 16,
  // Two workers wherever there is a second core, the second taking pages only while the event
  // loop has room (processors/parse-pool.ts SpareWorkers): on real pages parse is the bottleneck
  // and the fetching loop leaves its core partly idle (docs/performance.md, #35). One worker
  // gave 476 and 499 pages/s against 295 and 320 on the event loop alone on the lorem-ipsum web
  // (bench/HISTORY.md).
  // A single-core machine parses on the event loop, where a worker could only take turns with it.
  parseThreads: availableParallelism() >= 2 ? 2 : 0,
  parseBacklogMax: 4096,
  // On the real-page web a page waits for parse as a gzipped record of about 55 KB: 4,096 of them
  // were about 225 MB of crawl run's peak at 0 ms (docs/performance.md, "The parse backlog in
  // bytes"); 64 MiB is about 1,200 such pages, some 8 s of parsing, while a page reaches parse
  // about 2 s after it is fetched (crawl run's WARC files are stored every 2 s).
  parseBacklogMaxBytes: 64 * 1024 * 1024,
  // Records are groups of a page's links to one host (lib/link-groups): about 12 a page here,
  // a few hundred bytes to a few KiB each. The frontier's lag peaked at 5,130 in a 50 s crawl of
  // the benchmark's web at 1,000 pages/s, so this only acts when a stage cannot keep up.
  stageBacklogMax: 20_000,
  fetchConcurrencyMax: 4096,
  frontierMaxLeases: 0,
  // An idle pool is a few KiB; 8192 covers the benchmark's 5,000 hosts in rotation.
  httpMaxPools: 8192,
  allowPrivateNetwork: false,
  allowCidrs: [],
  // WARC records, not pages: a page is a request and a response record, so about 2,000 pages.
  warcMaxRecords: 4000,
  warcMaxBytes: 100 * 1024 * 1024,
  warcMaxAgeMs: 30_000,
  warcPrefix: 'kcrawl',
  warcGzipLevel: 3,
  metricsPort: 0,
  // The design's refresh is 60 s and its alarm 5 minutes; a report on every change comes on top.
  optoutReportMs: 30_000,
  optoutLagAlarmMs: 5 * 60_000,
  webmasterDnsServers: [],
  webmasterDnsTimeoutMs: 5000,
  webmasterTxtName: 'kcrawl',
  webmasterRequestsPerMinute: 60,
  webmasterMaxRequestsPerSecond: 10,
  kafkaSessionTimeoutMs: 6000,
  kafkaHeartbeatMs: 1000,
  stopTimeoutMs: 10_000,
  // About a 2-vCPU cloud instance per process, and standard object storage.
  costProcessHourUsd: 0.08,
  costStoredGbMonthUsd: 0.023,
};

/** Environment variable for each setting: CRAWL_ + upper snake case (minHostDelayMs -> CRAWL_MIN_HOST_DELAY_MS). */
export function envName(key: keyof CrawlConfig): string {
  return 'CRAWL_' + key.replace(/([A-Z])/g, '_$1').toUpperCase();
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function parseValue(key: keyof CrawlConfig, raw: string): CrawlConfig[keyof CrawlConfig] {
  const def = DEFAULTS[key];
  if (typeof def === 'number') {
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${envName(key)}=${raw}: expected a non-negative number`);
    return n;
  }
  if (typeof def === 'boolean') {
    if (!['true', 'false', '1', '0'].includes(raw)) throw new ConfigError(`${envName(key)}=${raw}: expected true or false`);
    return raw === 'true' || raw === '1';
  }
  if (Array.isArray(def)) {
    const parts = raw.split(',').map((s) => s.trim()).filter(Boolean);
    if (typeof def[0] === 'number') {
      const nums = parts.map(Number);
      if (nums.length === 0 || nums.some((n) => !Number.isFinite(n) || n < 0)) throw new ConfigError(`${envName(key)}=${raw}: expected comma-separated numbers`);
      return nums as never;
    }
    return parts as never;
  }
  return raw;
}

/**
 * Defaults (`DEFAULTS`, then the caller's own `defaults` over them), overridden by CRAWL_*
 * variables, overridden by `overrides`.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<CrawlConfig> = {},
  defaults: Partial<CrawlConfig> = {},
): CrawlConfig {
  // Every array default copied (whatever its name), so no caller can change DEFAULTS through its config.
  const copies = Object.fromEntries(Object.entries(DEFAULTS).filter(([, v]) => Array.isArray(v)).map(([k, v]) => [k, [...(v as unknown[])]]));
  const cfg: CrawlConfig = { ...DEFAULTS, ...copies, ...defaults };
  for (const key of Object.keys(DEFAULTS) as Array<keyof CrawlConfig>) {
    const raw = env[envName(key)];
    if (raw !== undefined && raw !== '') (cfg as unknown as Record<string, unknown>)[key] = parseValue(key, raw);
  }
  Object.assign(cfg, Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)));
  if (cfg.partitions < 1 || !Number.isInteger(cfg.partitions)) throw new ConfigError(`${envName('partitions')}: expected a whole number >= 1`);
  if (cfg.minHostDelayMs < 1000 && !cfg.allowPrivateNetwork) {
    // Below 1 s per host is not polite on the open web; allowed only for private test webs.
    throw new ConfigError(`${envName('minHostDelayMs')}=${cfg.minHostDelayMs}: at least 1000 on the public web`);
  }
  if (cfg.feedMinPollMs < 60_000 && !cfg.allowPrivateNetwork) {
    // A feed polled more often than once a minute is a load no webmaster asked for.
    throw new ConfigError(`${envName('feedMinPollMs')}=${cfg.feedMinPollMs}: at least 60000 on the public web`);
  }
  if (cfg.feedMinPollMs > cfg.feedMaxPollMs) throw new ConfigError(`${envName('feedMinPollMs')} is above ${envName('feedMaxPollMs')}`);
  const shares = cfg.budgetClassShares;
  if (shares.length !== 3 || shares.reduce((a, b) => a + b, 0) <= 0) {
    throw new ConfigError(`${envName('budgetClassShares')}=${shares.join(',')}: expected three shares (classes 1, 2, 3), not all 0`);
  }
  if (!/^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$/.test(cfg.webmasterTxtName)) {
    throw new ConfigError(`${envName('webmasterTxtName')}=${cfg.webmasterTxtName}: expected lower-case letters, digits and inner hyphens (the record is <name>-verify=<token>)`);
  }
  for (const server of cfg.webmasterDnsServers) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[0-9a-zA-Z.:-]+?)(:\d{1,5})?$/.test(server)) {
      throw new ConfigError(`${envName('webmasterDnsServers')}: "${server}" is not an address or address:port`);
    }
  }
  if (cfg.webmasterMaxRequestsPerSecond <= 0) throw new ConfigError(`${envName('webmasterMaxRequestsPerSecond')}: expected a number > 0`);
  return cfg;
}
