import { getSurt } from 'warcio';
import { surt } from '../../lib/warc/surt';

describe('surt', () => {
  test.each([
    ['http://www.Example.com/Path/Page.html?b=2&a=1', 'com,example)/path/page.html?a=1&b=2'],
    ['https://example.com', 'com,example)/'],
    ['https://example.com/?', 'com,example)/'],
    ['http://www2.shop.example.co.uk/a#frag', 'uk,co,example,shop)/a'],
    ['http://example.com:80/a', 'com,example)/a'],
    ['https://example.com:443/a', 'com,example)/a'],
    ['http://example.com:8080/a', 'com,example:8080)/a'],
    ['http://wwwexample.com/', 'com,wwwexample)/'],
    ['http://example.com./x', 'com,example)/x'],
    ['http://192.168.1.20/x', '192.168.1.20)/x'],
    ['http://bücher.example/', 'example,xn--bcher-kva)/'],
    ['mailto:Someone@Example.com', 'mailto:someone@example.com'],
  ])('%s -> %s', (url, key) => {
    expect(surt(url)).toBe(key);
  });

  // warcio's indexer is the reference for host names; it differs on IP addresses, which pywb's
  // own surt library (and so we) leave unreversed.
  test.each([
    'http://www.Example.com/Path/Page.html?b=2&a=1',
    'https://sub.example.org:8443/x/y?z=&a=b',
    'http://example.com/%7Euser/',
  ])('agrees with warcio for %s', (url) => {
    expect(surt(url)).toBe(getSurt(url));
  });
});
