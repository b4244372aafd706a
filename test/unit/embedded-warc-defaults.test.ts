/** `crawl run`'s WARC defaults (cli/embedded.ts): its own where the environment sets none, the environment's otherwise. */
import { EMBEDDED_LEASE_DEFAULTS, EMBEDDED_WARC_DEFAULTS } from '../../cli/embedded';
import { DEFAULTS, loadConfig } from '../../lib/config';

describe('EMBEDDED_WARC_DEFAULTS', () => {
  it('stores files every 2 s and at 1,000 records when the environment says nothing', () => {
    const cfg = loadConfig({}, {}, EMBEDDED_WARC_DEFAULTS);
    expect(cfg.warcMaxAgeMs).toBe(2000);
    expect(cfg.warcMaxRecords).toBe(1000);
    // A cluster's files (Kafka mode, no such override) keep the general defaults.
    expect(DEFAULTS.warcMaxRecords).toBe(4000);
    expect(DEFAULTS.warcMaxAgeMs).toBe(30_000);
  });

  it('leaves each value the environment sets to the environment', () => {
    const env = { CRAWL_WARC_MAX_RECORDS: '4000', CRAWL_WARC_MAX_AGE_MS: '30000' };
    const cfg = loadConfig(env, {}, EMBEDDED_WARC_DEFAULTS);
    expect(cfg.warcMaxRecords).toBe(4000);
    expect(cfg.warcMaxAgeMs).toBe(30_000);
    const onlyRecords = { CRAWL_WARC_MAX_RECORDS: '250' };
    const mixed = loadConfig(onlyRecords, {}, EMBEDDED_WARC_DEFAULTS);
    expect(mixed.warcMaxRecords).toBe(250);
    expect(mixed.warcMaxAgeMs).toBe(2000);
  });
});

describe('EMBEDDED_LEASE_DEFAULTS', () => {
  it('caps the leases in flight of crawl run at 8,192 unless the environment says otherwise; Kafka mode has no cap', () => {
    expect(loadConfig({}, {}, { ...EMBEDDED_WARC_DEFAULTS, ...EMBEDDED_LEASE_DEFAULTS }).frontierMaxLeases).toBe(8192);
    expect(loadConfig({ CRAWL_FRONTIER_MAX_LEASES: '0' }, {}, EMBEDDED_LEASE_DEFAULTS).frontierMaxLeases).toBe(0);
    expect(loadConfig({ CRAWL_FRONTIER_MAX_LEASES: '500' }, {}, EMBEDDED_LEASE_DEFAULTS).frontierMaxLeases).toBe(500);
    expect(DEFAULTS.frontierMaxLeases).toBe(0);
  });
});
