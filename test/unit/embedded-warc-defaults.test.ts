/** `crawl run`'s WARC defaults (cli/embedded.ts): its own where the environment sets none, the environment's otherwise. */
import { embeddedWarcDefaults } from '../../cli/embedded';
import { DEFAULTS, loadConfig } from '../../lib/config';

describe('embeddedWarcDefaults', () => {
  it('stores files every 2 s and at 1,000 records when the environment says nothing', () => {
    const cfg = loadConfig({}, embeddedWarcDefaults({}));
    expect(cfg.warcMaxAgeMs).toBe(2000);
    expect(cfg.warcMaxRecords).toBe(1000);
    // A cluster's files (Kafka mode, no such override) keep the general defaults.
    expect(DEFAULTS.warcMaxRecords).toBe(4000);
    expect(DEFAULTS.warcMaxAgeMs).toBe(30_000);
  });

  it('leaves each value the environment sets to the environment', () => {
    const env = { CRAWL_WARC_MAX_RECORDS: '4000', CRAWL_WARC_MAX_AGE_MS: '30000' };
    const cfg = loadConfig(env, embeddedWarcDefaults(env));
    expect(cfg.warcMaxRecords).toBe(4000);
    expect(cfg.warcMaxAgeMs).toBe(30_000);
    const onlyRecords = { CRAWL_WARC_MAX_RECORDS: '250' };
    const mixed = loadConfig(onlyRecords, embeddedWarcDefaults(onlyRecords));
    expect(mixed.warcMaxRecords).toBe(250);
    expect(mixed.warcMaxAgeMs).toBe(2000);
  });
});
