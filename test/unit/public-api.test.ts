/**
 * The package entry point (package.json "main" → lib/index.ts) exports the documented robots
 * and URL-normalisation API, and it behaves as documented there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from '../../lib/index';

describe('public API', () => {
  it('package.json main and types point at the compiled entry point', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { main: string; types: string };
    expect(pkg.main).toBe('dist/lib/index.js');
    expect(pkg.types).toBe('dist/lib/index.d.ts');
  });

  it('parses a robots.txt body once, then answers allow and crawl-delay questions for a user agent', () => {
    const rules = api.parseRobots('User-agent: kcrawl\nDisallow: /private\nAllow: /private/ok\nCrawl-delay: 2.5\n\nUser-agent: *\nDisallow: /\n');
    expect(api.isAllowed(rules, 'https://example.com/private/x', 'KCrawl/0.1 (+https://x)')).toEqual({
      allowed: false,
      rule: { directive: 'disallow', pattern: '/private', line: 2 },
    });
    expect(api.isAllowed(rules, 'https://example.com/private/ok', 'KCrawl/0.1').allowed).toBe(true);
    expect(api.isAllowed(rules, 'https://example.com/private/x', 'OtherBot/1.0').allowed).toBe(false);
    expect(api.crawlDelayMs(rules, 'KCrawl/0.1')).toBe(2500);
    expect(api.crawlDelayMs(rules, 'OtherBot/1.0')).toBeNull();
  });

  it('normalises URLs and says why one is rejected', () => {
    expect(api.normalizeUrl('HTTP://Example.com:80/a/../b?utm_source=x#f')).toMatchObject({ ok: true, url: 'http://example.com/b', host: 'example.com' });
    expect(api.normalizeUrl('ftp://example.com/')).toMatchObject({ ok: false, reason: 'unsupported-scheme' });
    expect(api.registeredDomain('a.b.example.co.uk')).toBe('example.co.uk');
  });

  it('computes 64-bit SimHash fingerprints', () => {
    const a = api.simhash64('the quick brown fox jumps over the lazy dog '.repeat(20));
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(api.hammingDistance(a, a)).toBe(0);
    // Version 2 (what parse writes and handoff events carry as simhash_version); version 1 for old values.
    expect(api.SIMHASH_VERSION).toBe(2);
    expect(api.simhash64V1('How are you? I AM fine. Thanks. And you?', 2)).toBe('5b0bd83debb844eb');
  });
});
