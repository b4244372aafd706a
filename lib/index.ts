/**
 * The package's public library API (package.json "main"): the pieces of the crawler that are
 * useful on their own.
 *
 *   import { parseRobots, isAllowed, crawlDelayMs, normalizeUrl } from 'kcrawl';
 *   const rules = parseRobots(body);                              // parse a robots.txt body once
 *   isAllowed(rules, 'https://example.com/a?b', 'KCrawl/0.1');    // { allowed, rule: { directive, pattern, line } | null }
 *   crawlDelayMs(rules, 'KCrawl/0.1');                            // ms, or null when the group sets none
 *   normalizeUrl('HTTP://Example.com:80/a/../b?utm_source=x#f'); // { ok: true, url: 'http://example.com/b', host, registeredDomain, path: '/b', query: '' }
 */
export * from './robots';
export { normalizeUrl, hostOf, registeredDomain, DEFAULT_STRIP_PARAMS, DEFAULT_MAX_LENGTH } from './url-normalize';
export type { NormalizeOptions, NormalizeResult } from './url-normalize';
export { simhash64, hammingDistance, SIMHASH_VERSION } from './simhash';
export { simhash64V1 } from './simhash-v1';
