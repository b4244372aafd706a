// Tests for lib/url-normalize.ts.
// Sources:
//   - crawler-commons BasicURLNormalizerTest
//     (https://github.com/crawler-commons/crawler-commons/blob/master/src/test/java/crawlercommons/filters/basic/BasicURLNormalizerTest.java),
//     methods testNUTCH1098, testNUTCH2064, testNormalizer, and its successor, the case list
//     src/test/resources/normalizer/weirdToNormalizedUrls.csv (crawler-commons commit 115cc591:
//     "normalizing percent escapes #263", "escape percent sign if it's initial to an invalid
//     escape sequence", "boundary test: percent sign close to the end of string", "removal of
//     trailing dot in hostname"). Cases where our documented rules deliberately differ are
//     marked "DIFFERS" with the reason.
//   - RFC 3986 §6.2.2 (syntax-based: case, percent-encoding, dot segments), §6.2.3 (scheme-based)
//     and the §5.4.1 reference resolution examples (dot segments relative to a base).

import { hostOf, normalizeUrl, registeredDomain, type NormalizeResult } from '../../lib/url-normalize';

function norm(input: string, base?: string): string {
  const r = normalizeUrl(input, base);
  if (!r.ok) throw new Error(`${input}: ${r.reason} (${r.detail})`);
  return r.url;
}

const reason = (r: NormalizeResult): string | null => (r.ok ? null : r.reason);

describe('crawler-commons BasicURLNormalizerTest', () => {
  it.each([
    // testNUTCH1098
    ['http://foo.com/%66oo.html', 'http://foo.com/foo.html'], // % encoding is normalised
    ['http://foo.com/%66oo.htm%6c', 'http://foo.com/foo.html'], // at the end of the URL
    ['http://foo.com/%66oo.ht%6dl', 'http://foo.com/foo.html'],
    ['http://foo.com/%66oo.ht%6d%6c', 'http://foo.com/foo.html'], // escapes do not overlap
    ['http://foo.com/%66oo.htm%C0', 'http://foo.com/foo.htm%C0'], // high-bit escapes kept
    ['http://foo.com/%66oo.htm%1A', 'http://foo.com/foo.htm%1A'], // control escapes kept
    ['http://foo.com/%66oo.htm%c0', 'http://foo.com/foo.htm%C0'], // hex upper-cased
    ['http://foo.com/you%20too.html', 'http://foo.com/you%20too.html'], // encoded space kept
    ['http://foo.com/you too.html', 'http://foo.com/you%20too.html'], // space encoded as %20
    ['http://foo.com/file.html%23cz', 'http://foo.com/file.html%23cz'], // encoded "#" kept
    ['http://foo.com/fast/dir%2fcz', 'http://foo.com/fast/dir%2Fcz'], // encoded "/" kept
    ['http://foo.com/\u001a!', 'http://foo.com/%1A!'], // control chars encoded
    ['http://foo.com/\u0001!', 'http://foo.com/%01!'], // ... with 2 hex digits
    ['http://mydomain.com/en Espa\u00F1ol.aspx', 'http://mydomain.com/en%20Espa%C3%B1ol.aspx'],
    // testNUTCH2064
    ['http://x.com/show?http%3A%2F%2Fx.com%2Fb', 'http://x.com/show?http%3A%2F%2Fx.com%2Fb'],
    ['http://google.com/search?q=c%2B%2B', 'http://google.com/search?q=c%2B%2B'],
    ['http://x.com/s?q=a+b', 'http://x.com/s?q=a+b'], // "+" not touched in the query
    ['http://x.com/./a/../%66.html', 'http://x.com/f.html'],
    ['http://x.com/?x[y]=1', 'http://x.com/?x%5By%5D=1'], // "[" and "]" escaped
    ['http://x.com/foo\u0080', 'http://x.com/foo%C2%80'],
    ['http://x.com/foo%c2%80', 'http://x.com/foo%C2%80'],
    // testNormalizer
    [' http://foo.com/ ', 'http://foo.com/'],
    ['HTTP://foo.com/', 'http://foo.com/'],
    ['http://Foo.Com/index.html', 'http://foo.com/index.html'],
    ['http://foo.com:80/index.html', 'http://foo.com/index.html'],
    ['http://foo.com:81/', 'http://foo.com:81/'],
    ['http://example.com:/', 'http://example.com/'],
    ['https://example.com:/foobar.html', 'https://example.com/foobar.html'],
    ['http://foo.com', 'http://foo.com/'],
    ['http://foo.com/foo.html#ref', 'http://foo.com/foo.html'],
    ['http://foo.com/aa/./foo.html', 'http://foo.com/aa/foo.html'],
    ['http://foo.com/aa/../', 'http://foo.com/'],
    ['http://foo.com/aa/bb/../', 'http://foo.com/aa/'],
    ['http://foo.com/aa/..', 'http://foo.com/'],
    ['http://foo.com/aa/bb/cc/../../foo.html', 'http://foo.com/aa/foo.html'],
    ['http://foo.com/aa/bb/../cc/dd/../ee/foo.html', 'http://foo.com/aa/cc/ee/foo.html'],
    ['http://foo.com/../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/../../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/../aa/../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/aa/../../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/aa/../bb/../foo.html/../../', 'http://foo.com/'],
    ['http://foo.com/../aa/foo.html', 'http://foo.com/aa/foo.html'],
    ['http://foo.com/a..a/foo.html', 'http://foo.com/a..a/foo.html'],
    ['http://foo.com/a..a/../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/foo.foo/../foo.html', 'http://foo.com/foo.html'],
    ['http://foo.com/aa?referer=http://bar.com', 'http://foo.com/aa?referer=http://bar.com'],
    // weirdToNormalizedUrls.csv: a "%" not followed by two hex digits is encoded as "%25"
    ['https://www.last.fm/music/Prefuse+73/_/90%+of+My+Mind+Is+With+You', 'https://www.last.fm/music/Prefuse+73/_/90%25+of+My+Mind+Is+With+You'],
    ['http://www.example.com/a/c/../b/search?q=foobar%', 'http://www.example.com/a/b/search?q=foobar%25'],
    ['http://www.example.com/p%zz%77%v', 'http://www.example.com/p%25zzw%25v'],
    ['http://www.example.com/search?q=foobar%', 'http://www.example.com/search?q=foobar%25'],
    ['http://www.example.com/search?q=foobar%2', 'http://www.example.com/search?q=foobar%252'],
    ['http://www.example.com/search?q=foobar%25', 'http://www.example.com/search?q=foobar%25'],
    ['http://www.example.com/search?q=foobar%252', 'http://www.example.com/search?q=foobar%252'],
    // weirdToNormalizedUrls.csv: the trailing dot of a host name is removed
    ['https://www.example.org./', 'https://www.example.org/'],
  ])('%s -> %s', (input, expected) => {
    expect(norm(input)).toBe(expected);
  });

  it('DIFFERS: query pairs are sorted (testNUTCH2064 "q=a%26b&m=10")', () => {
    // crawler-commons keeps the order; we sort pairs so that reordered queries de-duplicate.
    expect(norm('http://x.com/s?q=a%26b&m=10')).toBe('http://x.com/s?m=10&q=a%26b');
  });

  it('DIFFERS: IDN host to punycode (testNUTCH2064 "bücher.de")', () => {
    // crawler-commons keeps the Unicode host; our rule is punycode (what DNS and HTTP use).
    expect(norm('http://b\u00fccher.de/')).toBe('http://xn--bcher-kva.de/');
  });

  it.each([
    ['http://foo.com//aa/bb/foo.html'],
    ['http://foo.com/aa//bb/foo.html'],
    ['http://foo.com/aa/bb//foo.html'],
    ['http://foo.com//aa//bb//foo.html'],
    ['http://foo.com////aa////bb////foo.html'],
  ])('DIFFERS: duplicate slashes are kept: %s (crawler-commons collapses them)', (input) => {
    // RFC 3986 does not make "//" equivalent to "/", and servers do route them differently.
    expect(norm(input)).toBe(input);
  });

  it.each([
    ['file:///foo/bar.txt', 'unsupported-scheme'],
    ['ftp:/', 'invalid-url'],
    ['http:', 'invalid-url'],
    ['http:////', 'invalid-url'],
    ['http:///////', 'invalid-url'],
  ])('DIFFERS: URL without host %s is rejected as %s (crawler-commons keeps it)', (input, why) => {
    expect(reason(normalizeUrl(input))).toBe(why);
  });
});

describe('RFC 3986 §6.2.2 syntax-based normalisation', () => {
  it('§6.2.2 example: "example://a/b/c/%7Bfoo%7D" ≡ "eXAMPLE://a/./b/../b/%63/%7bfoo%7d" (as http)', () => {
    expect(norm('hTTp://a/./b/../b/%63/%7bfoo%7d')).toBe('http://a/b/c/%7Bfoo%7D');
    expect(norm('http://a/b/c/%7Bfoo%7D')).toBe('http://a/b/c/%7Bfoo%7D');
  });

  it('§6.2.2.1 case: scheme and host lower-cased, hex digits upper-cased, path case kept', () => {
    expect(norm('HTTP://www.EXAMPLE.com/')).toBe('http://www.example.com/');
    expect(norm('http://example.com/a%3ab/Path')).toBe('http://example.com/a%3Ab/Path');
  });

  it('§6.2.2.2 percent-encoding: unreserved characters decoded (%41 = "A", %7E = "~")', () => {
    expect(norm('http://example.com/%7Esmith/%41%2d%2E%5f%30')).toBe('http://example.com/~smith/A-._0');
    expect(norm('http://example.com/?%7Ea=%41')).toBe('http://example.com/?~a=A');
  });

  it('§6.2.2.3 path segment normalisation (remove_dot_segments, §5.2.4 examples)', () => {
    expect(norm('http://example.com/a/b/c/./../../g')).toBe('http://example.com/a/g');
    expect(norm('mid/content=5/../6', 'http://example.com/')).toBe('http://example.com/mid/6');
  });

  it('§5.4.1 reference resolution examples against base "http://a/b/c/d;p?q"', () => {
    const base = 'http://a/b/c/d;p?q';
    const cases: [string, string][] = [
      ['g', 'http://a/b/c/g'],
      ['./g', 'http://a/b/c/g'],
      ['g/', 'http://a/b/c/g/'],
      ['/g', 'http://a/g'],
      ['//g', 'http://g/'],
      ['?y', 'http://a/b/c/d;p?y'],
      ['g?y', 'http://a/b/c/g?y'],
      ['#s', 'http://a/b/c/d;p?q'], // fragment dropped
      ['g;x?y#s', 'http://a/b/c/g;x?y'],
      ['', 'http://a/b/c/d;p?q'],
      ['.', 'http://a/b/c/'],
      ['..', 'http://a/b/'],
      ['../g', 'http://a/b/g'],
      ['../..', 'http://a/'],
      ['../../g', 'http://a/g'],
      ['../../../g', 'http://a/g'], // §5.4.2 abnormal
      ['g;x=1/../y', 'http://a/b/c/y'],
    ];
    for (const [ref, expected] of cases) expect([ref, norm(ref, base)]).toEqual([ref, expected]);
  });
});

describe('RFC 3986 §6.2.3 scheme-based normalisation', () => {
  it('"http://example.com", ".../", "...:/" and "...:80/" are one URL', () => {
    for (const u of ['http://example.com', 'http://example.com/', 'http://example.com:/', 'http://example.com:80/']) {
      expect(norm(u)).toBe('http://example.com/');
    }
    expect(norm('https://example.com:443')).toBe('https://example.com/');
    expect(norm('https://example.com:80/')).toBe('https://example.com:80/');
  });
});

describe('query and path parameters', () => {
  it('strips utm_* and the default tracking/session parameters, case-insensitively', () => {
    expect(
      norm('https://e.com/p?utm_source=x&UTM_Medium=y&id=3&fbclid=1&gclid=2&dclid=3&msclkid=4&mc_cid=5&mc_eid=6&yclid=7&_ga=8&igshid=9'),
    ).toBe('https://e.com/p?id=3');
    expect(norm('https://e.com/p?SID=1&jsessionid=2&PHPSESSID=3&sessionid=4&page=2')).toBe('https://e.com/p?page=2');
    expect(norm('https://e.com/p?utm%5Fsource=x&a=1')).toBe('https://e.com/p?a=1'); // "%5F" is "_"
  });

  it('keeps names that only resemble stripped ones', () => {
    expect(norm('https://e.com/p?sidebar=1&utm=2&xutm_source=3')).toBe('https://e.com/p?sidebar=1&utm=2&xutm_source=3');
  });

  it('removes ;jsessionid=… style path parameters, keeps other path parameters', () => {
    expect(norm('https://e.com/a/b.jsp;jsessionid=0A1B2C?x=1')).toBe('https://e.com/a/b.jsp?x=1');
    expect(norm('https://e.com/a;JSESSIONID=1;v=2/b;phpsessid=3')).toBe('https://e.com/a;v=2/b');
    expect(norm('https://e.com/a;v=2')).toBe('https://e.com/a;v=2');
  });

  it('sorts pairs by name then value, stably, keeping each pair encoding', () => {
    expect(norm('http://e.com/?z=bb&y=cc&z=aa')).toBe('http://e.com/?y=cc&z=aa&z=bb');
    expect(norm('http://e.com/display?lang=en&article=fred')).toBe('http://e.com/display?article=fred&lang=en');
    expect(norm('http://e.com/s?b=a%20b&a=x+y&c=%2b')).toBe('http://e.com/s?a=x+y&b=a%20b&c=%2B');
    expect(norm('http://e.com/s?a&a=')).toBe('http://e.com/s?a&a=');
  });

  it('drops an empty query and empty pairs', () => {
    expect(norm('http://e.com/a?')).toBe('http://e.com/a');
    expect(norm('http://e.com/a?&&')).toBe('http://e.com/a');
    expect(norm('http://e.com/a?utm_source=x')).toBe('http://e.com/a');
    expect(norm('http://e.com/a?b=1&&c=2&')).toBe('http://e.com/a?b=1&c=2');
  });

  it('custom stripParams: strings (with "*" prefix) and RegExps replace the defaults', () => {
    const opts = { stripParams: ['ref', 'x_*', /^track/] };
    expect(normalizeUrl('http://e.com/?ref=1&x_a=2&Tracking=3&utm_source=4', undefined, opts)).toMatchObject({
      ok: true,
      url: 'http://e.com/?utm_source=4',
    });
    const global = { stripParams: [/^a$/g] }; // a stateful /g RegExp must still match every time
    expect(normalizeUrl('http://e.com/?a=1', undefined, global)).toMatchObject({ url: 'http://e.com/' });
    expect(normalizeUrl('http://e.com/?a=1', undefined, global)).toMatchObject({ url: 'http://e.com/' });
  });

  it('a stray "%" becomes "%25" in the path and the query, so the two spellings are one URL', () => {
    expect(norm('http://e.com/100%?q=%zz')).toBe('http://e.com/100%25?q=%25zz');
    expect(norm('http://e.com/p%zz')).toBe(norm('http://e.com/p%25zz'));
    expect(norm('http://e.com/a%2')).toBe('http://e.com/a%252'); // one hex digit before the end
    expect(norm('http://e.com/%u00e9')).toBe('http://e.com/%25u00e9'); // IIS's %u form is no escape
    // Normalising twice changes nothing.
    for (const u of ['http://e.com/100%?q=%zz', 'http://e.com/90%+of', 'http://e.com/?q=foobar%']) expect(norm(norm(u))).toBe(norm(u));
  });
});

describe('result fields', () => {
  it('host and registered domain', () => {
    expect(normalizeUrl('https://WWW.BBC.co.uk:8443/news')).toEqual({
      ok: true,
      url: 'https://www.bbc.co.uk:8443/news',
      host: 'www.bbc.co.uk',
      registeredDomain: 'bbc.co.uk',
      path: '/news',
      query: '',
    });
    expect(normalizeUrl('http://e.com?b=2&a=1&utm_source=x#f')).toMatchObject({ url: 'http://e.com/?a=1&b=2', path: '/', query: '?a=1&b=2' });
    expect(normalizeUrl('http://127.0.0.1:8080/')).toMatchObject({ host: '127.0.0.1', registeredDomain: null });
    expect(normalizeUrl('http://[::1]/')).toMatchObject({ url: 'http://[::1]/', host: '[::1]', registeredDomain: null });
  });

  it('host, path and query are what parsing the normalised URL again gives (seen-test screens traps on them)', () => {
    const inputs = [
      'http://E.com/a/b?q=1', 'https://e.com:8443/%7Euser/%41%62?x=%7e&y=a%2fb', 'http://e.com/a;jsessionid=1/b;k=v?utm_source=x&z=1',
      'http://e.com/über/straße?ä=ö', 'http://e.com/a b/"c"?d e=<f>', 'http://e.com/a/./b/../c', 'http://e.com//x//y/?', 'http://e.com/%25/%zz?%',
      'http://[::1]:80/p?q', 'http://E.COM.:81/#x', 'http://e.com/a\\b', 'http://e.com/%2F%3F%23?%26=%3D', 'http://e.com/x/.well-known/y',
      'http://e.com/x/%2E%2E/y', 'http://e.com/x/.%2e/y', 'http://e.com/x/%2e./y/%2E', 'http://e.com/x/%2E%2E%2E/y', 'http://e.com/%2E/a?%2E%2E',
    ];
    for (const input of inputs) {
      const n = normalizeUrl(input);
      if (!n.ok) throw new Error(`${input}: ${n.reason}`);
      const again = new URL(n.url);
      expect([input, n.host, n.path, n.query]).toEqual([input, again.hostname, again.pathname, again.search]);
    }
    expect(normalizeUrl('http://e.com/x/%2E%2E/y')).toMatchObject({ url: 'http://e.com/y', path: '/y', query: '' });
    expect(normalizeUrl('http://e.com/x/%2E%2E%2E/y')).toMatchObject({ url: 'http://e.com/x/.../y', path: '/x/.../y' });
  });

  it('hostOf', () => {
    expect(hostOf('https://www.example.com:8080/a?b')).toBe('www.example.com');
    expect(hostOf('http://example.com')).toBe('example.com');
    expect(hostOf('http://example.com?x=1')).toBe('example.com');
    expect(hostOf('http://[::1]:8080/')).toBe('[::1]');
  });

  it('hostOf of a URL as WHATWG URL serialises it is its hostname (parse groups links by it)', () => {
    const hrefs = [
      'HTTP://User:P%40ss@WWW.Example.COM:8080/a?b#c', 'http://a@b@c.example/x', 'https://user:pa:ss@h.example', 'http://[::FFFF:127.0.0.1]:80/',
      'http://[2001:DB8::1]/p', 'http://0x7f.1/', 'http://127.1:81?x', 'http://bücher.de/ü', 'http:\\\\evil.example\\p', 'https://e.example./#f',
      'http://e.example?q=@x/y', 'http://e.example#@other', 'http://%65.example/', 'https://xn--bcher-kva.de:443/',
    ];
    for (const input of hrefs) {
      const u = new URL(input, 'http://base.example/dir/');
      expect([input, hostOf(u.href)]).toEqual([input, u.hostname]);
    }
  });

  it('registeredDomain uses the PSL, including private suffixes', () => {
    expect(registeredDomain('a.b.example.com')).toBe('example.com');
    expect(registeredDomain('www.bbc.co.uk')).toBe('bbc.co.uk');
    expect(registeredDomain('alice.github.io')).toBe('alice.github.io'); // github.io is a (private) suffix
    expect(registeredDomain('co.uk')).toBeNull();
    expect(registeredDomain('192.168.0.1')).toBeNull();
    expect(registeredDomain('[2001:db8::1]')).toBeNull();
  });

  it('registeredDomain answers each host on its own when asked again and in turns (it keeps its last answer)', () => {
    const hosts = ['a.example.com', 'a.example.com', 'co.uk', 'co.uk', 'x.bbc.co.uk', '', 'a.example.com', '[::1]', 'x.bbc.co.uk'];
    expect(hosts.map(registeredDomain)).toEqual(['example.com', 'example.com', null, null, 'bbc.co.uk', null, 'example.com', null, 'bbc.co.uk']);
  });
});

describe('host trailing dot and empty base', () => {
  it('"www.example.org." and "www.example.org" are one host, port and path kept', () => {
    expect(normalizeUrl('HTTP://WWW.Example.ORG.:8080/a?b=1')).toEqual({
      ok: true, url: 'http://www.example.org:8080/a?b=1', host: 'www.example.org', registeredDomain: 'example.org', path: '/a', query: '?b=1',
    });
    expect(norm('http://127.0.0.1./x')).toBe('http://127.0.0.1/x');
    // What parsing the result again gives: the same host (partitioning and politeness key by it).
    expect(new URL(norm('https://www.example.org./')).hostname).toBe('www.example.org');
  });

  it('an empty base is no base', () => {
    expect(norm('https://example.org/a/../b', '')).toBe('https://example.org/b');
    expect(normalizeUrl('https://example.org/', '')).toEqual(normalizeUrl('https://example.org/'));
    expect(reason(normalizeUrl('/relative', ''))).toBe('invalid-url');
  });
});

describe('rejections', () => {
  it.each([
    ['javascript:alert(1)', undefined, 'unsupported-scheme'],
    ['mailto:a@example.com', undefined, 'unsupported-scheme'],
    ['ftp://example.com/file', undefined, 'unsupported-scheme'],
    ['data:text/plain,hi', undefined, 'unsupported-scheme'],
    ['ws://example.com/', undefined, 'unsupported-scheme'],
    ['http://user@example.com/', undefined, 'credentials'],
    ['http://user:pw@example.com/', undefined, 'credentials'],
    ['http://:pw@example.com/', undefined, 'credentials'],
    ['not a url', undefined, 'invalid-url'],
    ['/relative/without/base', undefined, 'invalid-url'],
    ['/a', 'not a base', 'invalid-url'],
    ['http://[::1/', undefined, 'invalid-url'],
    ['http://exa mple.com/', undefined, 'invalid-url'],
    ['http://example.com:99999/', undefined, 'invalid-url'],
  ] as [string, string | undefined, string][])('%s (base %s) -> %s', (input, base, why) => {
    const r = normalizeUrl(input, base);
    expect(reason(r)).toBe(why);
    if (!r.ok) expect(r.detail).not.toBe('');
  });

  it('resolves relative references and rejects scheme changes through them', () => {
    expect(normalizeUrl('../x?b=2&a=1#f', 'https://example.com/a/b/c')).toMatchObject({ url: 'https://example.com/a/x?a=1&b=2' });
    expect(reason(normalizeUrl('mailto:x@y.z', 'https://example.com/'))).toBe('unsupported-scheme');
  });

  it('too-long is measured after normalisation', () => {
    // "http://e.com/" is 13 characters
    expect(reason(normalizeUrl('http://e.com/' + 'a'.repeat(2040), undefined, { maxLength: 2048 }))).toBe('too-long');
    expect(normalizeUrl('http://e.com/' + 'a'.repeat(2040), undefined, { maxLength: 4096 })).toMatchObject({ ok: true });
    expect(reason(normalizeUrl('http://e.com/' + 'a'.repeat(2035)))).toBeNull(); // exactly 2048
    expect(reason(normalizeUrl('http://e.com/' + 'a'.repeat(2036)))).toBe('too-long');
    // stripped parameters and the fragment do not count
    expect(reason(normalizeUrl('http://e.com/?utm_source=' + 'x'.repeat(3000) + '#' + 'y'.repeat(3000)))).toBeNull();
    expect(reason(normalizeUrl('http://e.com/abcdef', undefined, { maxLength: 10 }))).toBe('too-long');
  });
});
