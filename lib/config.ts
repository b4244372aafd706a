/**
 * Every setting, with its default and unit, in one table. Read once at start-up: from the
 * environment (Kafka mode, `CRAWL_*`) and then from CLI flags, which win. A bad value fails at
 * start-up with a message naming the variable and what it accepts.
 */

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
  maxDepth: number;
  connectTimeoutMs: number;
  fetchTimeoutMs: number;
  maxHeaderBytes: number;
  maxBodyBytes: number;
  maxDecompressionRatio: number;
  /** Fetches in flight per fetch process (different hosts; one per host is the frontier's rule). */
  fetchConcurrency: number;
  allowPrivateNetwork: boolean;
  allowCidrs: string[];
  /** WARC rotation. */
  warcMaxRecords: number;
  warcMaxBytes: number;
  warcMaxAgeMs: number;
  warcPrefix: string;
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
  maxDepth: 16,
  connectTimeoutMs: 5_000,
  fetchTimeoutMs: 30_000,
  maxHeaderBytes: 64 * 1024,
  maxBodyBytes: 2 * 1024 * 1024,
  maxDecompressionRatio: 100,
  fetchConcurrency: 256,
  allowPrivateNetwork: false,
  allowCidrs: [],
  // WARC records, not pages: a page is a request and a response record, so about 2,000 pages.
  warcMaxRecords: 4000,
  warcMaxBytes: 100 * 1024 * 1024,
  warcMaxAgeMs: 30_000,
  warcPrefix: 'kcrawl',
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
    if (typeof def[0] === 'number' || key === 'retryBackoffMs') {
      const nums = parts.map(Number);
      if (nums.length === 0 || nums.some((n) => !Number.isFinite(n) || n < 0)) throw new ConfigError(`${envName(key)}=${raw}: expected comma-separated numbers`);
      return nums as never;
    }
    return parts as never;
  }
  return raw;
}

/** Defaults, overridden by CRAWL_* variables, overridden by `overrides`. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<CrawlConfig> = {}): CrawlConfig {
  const cfg: CrawlConfig = { ...DEFAULTS, retryBackoffMs: [...DEFAULTS.retryBackoffMs], allowCidrs: [] };
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
  return cfg;
}
