/**
 * The webmaster API's wiring from the settings (lib/config.ts), shared by `crawl serve` and
 * `crawl run --status-port`: DNS for verification through CRAWL_WEBMASTER_DNS_SERVERS, the
 * per-account rate limit, and the writer each gives.
 */
import { txtLookup } from '../connectors/dns-txt';
import type { CrawlConfig } from '../lib/config';
import type { OutRecord } from '../runtime/stage';
import { RateLimiter } from './rate-limit';
import type { ApiBackend } from './server';

export function webmasterBackend(config: CrawlConfig, send: (outs: OutRecord[]) => Promise<void>): NonNullable<ApiBackend['webmaster']> {
  return {
    send,
    lookupTxt: txtLookup(config.webmasterDnsServers, config.webmasterDnsTimeoutMs),
    txtName: config.webmasterTxtName,
    defaultGapMs: config.minHostDelayMs,
    maxRequestsPerSecond: config.webmasterMaxRequestsPerSecond,
    limiter: new RateLimiter(config.webmasterRequestsPerMinute),
  };
}
