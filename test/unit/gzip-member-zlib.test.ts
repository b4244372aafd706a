/**
 * CRAWL_WARC_DEFLATE=zlib (docs/configuration.md): the WARC members are made by node:zlib even
 * where libdeflate loads, the same bytes as zlib.gzipSync at the configured level. Its own file:
 * the engine is chosen once per process (a module loaded with the setting in place).
 */
import { gzipSync } from 'node:zlib';

process.env.CRAWL_WARC_DEFLATE = 'zlib';
const { GZIP_MEM_LEVEL, gzipEngine, gzipMember } = require('../../lib/warc/gzip-member') as typeof import('../../lib/warc/gzip-member');

test('CRAWL_WARC_DEFLATE=zlib: zlib makes the members, byte for byte what gzipSync makes', () => {
  expect(gzipEngine(3)).toBe('zlib');
  const page = Buffer.from('<html><body>' + 'Grüße, “quotes” — 漢字 '.repeat(2000) + '</body></html>');
  for (const level of [1, 3, 6]) {
    expect(gzipMember([page.subarray(0, 1000), page.subarray(1000)], level).equals(gzipSync(page, { level, memLevel: GZIP_MEM_LEVEL }))).toBe(true);
  }
});
