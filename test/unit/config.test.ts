import { ConfigError, DEFAULTS, envName, loadConfig, type CrawlConfig } from '../../lib/config';

describe('loadConfig', () => {
  it('returns the defaults for an empty environment, with fresh arrays', () => {
    const cfg = loadConfig({});
    expect(cfg).toEqual(DEFAULTS);
    const before = structuredClone(DEFAULTS);
    // Every array the config holds is its own: changing one leaves DEFAULTS as they were.
    const arrays = Object.values(cfg).filter((v): v is unknown[] => Array.isArray(v));
    expect(arrays.length).toBeGreaterThanOrEqual(4);
    for (const a of arrays) a.push(1);
    expect(DEFAULTS).toEqual(before);
    expect(DEFAULTS.retryBackoffMs).toEqual([60_000, 120_000, 240_000, 480_000]);
    expect(DEFAULTS.budgetClassShares).toEqual([60, 30, 10]);
  });

  it.each<[keyof CrawlConfig, string]>([
    ['minHostDelayMs', 'CRAWL_MIN_HOST_DELAY_MS'],
    ['retryBackoffMs', 'CRAWL_RETRY_BACKOFF_MS'],
    ['allowPrivateNetwork', 'CRAWL_ALLOW_PRIVATE_NETWORK'],
    ['userAgent', 'CRAWL_USER_AGENT'],
    ['partitions', 'CRAWL_PARTITIONS'],
  ])('envName(%s) = %s', (key, name) => {
    expect(envName(key)).toBe(name);
  });

  it.each<[Record<string, string>, Partial<CrawlConfig>]>([
    [{ CRAWL_MIN_HOST_DELAY_MS: '2500' }, { minHostDelayMs: 2500 }],
    [{ CRAWL_RESPONSE_TIME_FACTOR: '2.5' }, { responseTimeFactor: 2.5 }],
    [{ CRAWL_PARTITIONS: '3' }, { partitions: 3 }],
    [{ CRAWL_ALLOW_PRIVATE_NETWORK: 'true' }, { allowPrivateNetwork: true }],
    [{ CRAWL_ALLOW_PRIVATE_NETWORK: '1' }, { allowPrivateNetwork: true }],
    [{ CRAWL_ALLOW_PRIVATE_NETWORK: 'false' }, { allowPrivateNetwork: false }],
    [{ CRAWL_ALLOW_PRIVATE_NETWORK: '0' }, { allowPrivateNetwork: false }],
    [{ CRAWL_RETRY_BACKOFF_MS: '10, 20 ,30' }, { retryBackoffMs: [10, 20, 30] }],
    [{ CRAWL_ALLOW_CIDRS: '10.0.0.0/8, 192.168.1.0/24,' }, { allowCidrs: ['10.0.0.0/8', '192.168.1.0/24'] }],
    [{ CRAWL_USER_AGENT: 'Test/1.0 (+http://x)' }, { userAgent: 'Test/1.0 (+http://x)' }],
    [{ CRAWL_WARC_PREFIX: 'p' }, { warcPrefix: 'p' }],
    [{ CRAWL_MAX_DEPTH: '' }, { maxDepth: DEFAULTS.maxDepth }],
  ])('env %j overrides', (env, expected) => {
    expect(loadConfig(env)).toEqual({ ...DEFAULTS, ...expected });
  });

  it('explicit overrides win over the environment; undefined overrides are ignored', () => {
    const cfg = loadConfig({ CRAWL_MAX_DEPTH: '3', CRAWL_MAX_ATTEMPTS: '9' }, { maxDepth: 7, maxAttempts: undefined });
    expect(cfg.maxDepth).toBe(7);
    expect(cfg.maxAttempts).toBe(9);
  });

  it.each<[Record<string, string>, string]>([
    [{ CRAWL_MIN_HOST_DELAY_MS: 'soon' }, 'CRAWL_MIN_HOST_DELAY_MS'],
    [{ CRAWL_MAX_DEPTH: '-1' }, 'CRAWL_MAX_DEPTH'],
    [{ CRAWL_LEASE_MS: 'Infinity' }, 'CRAWL_LEASE_MS'],
    [{ CRAWL_ALLOW_PRIVATE_NETWORK: 'yes' }, 'CRAWL_ALLOW_PRIVATE_NETWORK'],
    [{ CRAWL_RETRY_BACKOFF_MS: '10,x,30' }, 'CRAWL_RETRY_BACKOFF_MS'],
    [{ CRAWL_RETRY_BACKOFF_MS: '10,-5' }, 'CRAWL_RETRY_BACKOFF_MS'],
    // An empty back-off list would make every retry time NaN (the URL never retried, never dead).
    [{ CRAWL_RETRY_BACKOFF_MS: ',' }, 'CRAWL_RETRY_BACKOFF_MS'],
    [{ CRAWL_PARTITIONS: '0' }, 'CRAWL_PARTITIONS'],
    [{ CRAWL_PARTITIONS: '2.5' }, 'CRAWL_PARTITIONS'],
  ])('bad value %j throws a ConfigError naming %s', (env, name) => {
    let err: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(name);
  });

  it('refuses minHostDelayMs < 1000 unless allowPrivateNetwork', () => {
    expect(() => loadConfig({ CRAWL_MIN_HOST_DELAY_MS: '999' })).toThrow(ConfigError);
    expect(() => loadConfig({ CRAWL_MIN_HOST_DELAY_MS: '999' })).toThrow(/CRAWL_MIN_HOST_DELAY_MS/);
    expect(() => loadConfig({}, { minHostDelayMs: 10 })).toThrow(ConfigError);
    expect(loadConfig({ CRAWL_MIN_HOST_DELAY_MS: '1000' }).minHostDelayMs).toBe(1000);
    expect(loadConfig({ CRAWL_MIN_HOST_DELAY_MS: '50', CRAWL_ALLOW_PRIVATE_NETWORK: 'true' }).minHostDelayMs).toBe(50);
    expect(loadConfig({}, { minHostDelayMs: 0, allowPrivateNetwork: true }).minHostDelayMs).toBe(0);
  });

  it('webmaster settings: DNS servers as a list, a DNS-safe TXT name, a positive rate cap', () => {
    const c = loadConfig({ CRAWL_WEBMASTER_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,10.0.0.2', CRAWL_WEBMASTER_TXT_NAME: 'example-search' });
    expect(c.webmasterDnsServers).toEqual(['127.0.0.1:5353', '[::1]:53', '10.0.0.2']);
    expect(c.webmasterTxtName).toBe('example-search');
    expect(loadConfig({}).webmasterDnsServers).toEqual([]);
    expect(() => loadConfig({ CRAWL_WEBMASTER_TXT_NAME: 'Bad Name' })).toThrow(/CRAWL_WEBMASTER_TXT_NAME/);
    expect(() => loadConfig({ CRAWL_WEBMASTER_DNS_SERVERS: 'dns://1.1.1.1' })).toThrow(/CRAWL_WEBMASTER_DNS_SERVERS/);
    expect(() => loadConfig({ CRAWL_WEBMASTER_MAX_REQUESTS_PER_SECOND: '0' })).toThrow(/CRAWL_WEBMASTER_MAX_REQUESTS_PER_SECOND/);
  });
});
