// Conformance tests for lib/robots.ts.
// Sources:
//   - RFC 9309 "Robots Exclusion Protocol" (https://www.rfc-editor.org/rfc/rfc9309), examples
//     quoted from §2.2.1, §2.2.2, §2.2.3, §2.3.1, §2.5, §5.1 and §5.2.
//   - google/robotstxt robots_test.cc (https://github.com/google/robotstxt/blob/master/robots_test.cc),
//     test names given as `robots_test.cc TEST(RobotsUnittest, <name>)`.
// Where Google's behaviour and the RFC differ, the RFC wins and the test name says "RFC wins".
// Where our API deliberately differs from Google's (a full User-Agent string is accepted),
// the test name says "our API".

import {
  ALLOW_ALL,
  DISALLOW_ALL,
  crawlDelayMs,
  isAllowed,
  parseRobots,
  productToken,
  robotsFromFetch,
  sitemaps,
} from '../../lib/robots';
import { canonicalOctets, pathForMatching } from '../../lib/robots/match';
import { normalizeUrl } from '../../lib/url-normalize';

const allowed = (robotstxt: string | Buffer, ua: string, url: string): boolean =>
  isAllowed(parseRobots(robotstxt), url, ua).allowed;

describe('RFC 9309 §2.2.1 user-agent line', () => {
  it('product token from the RFC User-Agent header example: ExampleBot', () => {
    // "User-Agent: Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)"
    expect(productToken('Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)')).toBe('examplebot');
    expect(productToken('KCrawl/0.1 (+https://example.com/bot)')).toBe('kcrawl');
  });

  it('merges two groups that match the same product token', () => {
    const robotstxt = 'user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n';
    for (const p of ['/foo', '/bar', '/baz']) expect(allowed(robotstxt, 'ExampleBot', p)).toBe(false);
    expect(allowed(robotstxt, 'ExampleBot', '/qux')).toBe(true);
  });

  it('uses the "*" group when no group matches', () => {
    const robotstxt = 'user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n';
    expect(allowed(robotstxt, 'ExampleBot', '/foo')).toBe(false);
    expect(allowed(robotstxt, 'ExampleBot', '/bar')).toBe(false);
    expect(allowed(robotstxt, 'ExampleBot', '/baz')).toBe(true);
  });

  it('no matching group and no "*" group: no rules apply', () => {
    expect(allowed('user-agent: BazBot\ndisallow: /\n', 'ExampleBot', '/x')).toBe(true);
  });
});

describe('RFC 9309 §2.2.2 allow and disallow lines', () => {
  // Table "Examples of matching percent-encoded URI components": Path | Encoded Path | Path to Match
  it.each([
    ['/foo/bar?baz=quz', '/foo/bar?baz=quz'],
    ['/foo/bar?baz=https://foo.bar', '/foo/bar?baz=https%3A%2F%2Ffoo.bar'],
    ['/foo/bar/ツ', '/foo/bar/%E3%83%84'], // "/foo/bar/U+E38384"
    ['/foo/bar/%E3%83%84', '/foo/bar/%E3%83%84'],
    ['/foo/bar/%62%61%7A', '/foo/bar/baz'],
  ])('rule %s matches %s', (rulePath, urlPath) => {
    const robotstxt = `user-agent: FooBot\ndisallow: /\nallow: ${rulePath}\n`;
    expect(isAllowed(parseRobots(robotstxt), `https://example.com${urlPath}`, 'FooBot')).toEqual({
      allowed: true,
      rule: { directive: 'allow', pattern: rulePath, line: 3 },
    });
  });

  it('%-escapes match regardless of hex case: /a%3cd and /a%3Cd', () => {
    const rules = parseRobots('user-agent: *\ndisallow: /a%3cd\n');
    expect(isAllowed(rules, '/a%3Cd', 'x').allowed).toBe(false);
    expect(isAllowed(rules, '/a%3cd', 'x').allowed).toBe(false);
    expect(isAllowed(rules, '/a<d', 'x').allowed).toBe(false);
  });

  it('a stray "%" in a rule covers the URL as normalised ("%" becomes "%25", lib/url-normalize.ts)', () => {
    const rules = parseRobots('user-agent: *\ndisallow: /p%zz\ndisallow: /90%+of\ndisallow: /search?q=foobar%$\n');
    for (const link of ['https://example.com/p%zz', 'https://example.com/90%+of+My+Mind', 'https://example.com/search?q=foobar%']) {
      const n = normalizeUrl(link);
      if (!n.ok) throw new Error(link);
      expect([n.url, isAllowed(rules, n.url, 'x').allowed]).toEqual([n.url, false]);
      expect([link, isAllowed(rules, link, 'x').allowed]).toEqual([link, false]);
    }
    // And a rule written "%25" covers the same.
    expect(isAllowed(parseRobots('user-agent: *\ndisallow: /p%25zz\n'), '/p%zz', 'x').allowed).toBe(false);
  });

  it('"If an allow rule and a disallow rule are equivalent, then the allow rule SHOULD be used"', () => {
    expect(allowed('user-agent: *\ndisallow: /a\nallow: /a\n', 'x', '/a')).toBe(true);
  });

  it('"The /robots.txt URI is implicitly allowed"', () => {
    const r = isAllowed(parseRobots('user-agent: *\ndisallow: /\n'), 'https://example.com/robots.txt', 'x');
    expect(r).toEqual({ allowed: true, rule: null });
    expect(isAllowed(DISALLOW_ALL, '/robots.txt', 'x').allowed).toBe(true);
  });

  it('rules that precede the first user-agent line are ignored', () => {
    expect(allowed('disallow: /\nuser-agent: *\nallow: /x\n', 'x', '/y')).toBe(true);
  });

  it('empty disallow means allow; a group without rules allows everything', () => {
    expect(isAllowed(parseRobots('user-agent: *\ndisallow:\n'), '/x', 'x')).toEqual({ allowed: true, rule: null });
    expect(allowed('user-agent: *\n', 'x', '/x')).toBe(true);
  });
});

describe('RFC 9309 §2.2.3 special characters', () => {
  it('"#" comment: "allow: / # comment in line"', () => {
    const rules = parseRobots('# comment on its own line\nuser-agent: *\ndisallow: /x\nallow: / # comment in line\n');
    expect(isAllowed(rules, '/y', 'a')).toEqual({ allowed: true, rule: { directive: 'allow', pattern: '/', line: 4 } });
  });

  it('"$" end of pattern: "allow: /this/path/exactly$"', () => {
    const robotstxt = 'user-agent: *\ndisallow: /\nallow: /this/path/exactly$\n';
    expect(allowed(robotstxt, 'a', '/this/path/exactly')).toBe(true);
    expect(allowed(robotstxt, 'a', '/this/path/exactly/')).toBe(false);
  });

  it('"*" any characters: "allow: /this/*/exactly"', () => {
    const robotstxt = 'user-agent: *\ndisallow: /\nallow: /this/*/exactly\n';
    expect(allowed(robotstxt, 'a', '/this/a/b/exactly')).toBe(true);
    expect(allowed(robotstxt, 'a', '/this/exactly')).toBe(false);
  });

  it('percent-encoded special characters match them verbatim in the URI', () => {
    // "/path/file-with-a-%2A.html" | "https://www.example.com/path/file-with-a-*.html"
    // "/path/foo-%24"              | "https://www.example.com/path/foo-$"
    const robotstxt = 'user-agent: *\ndisallow: /path/file-with-a-%2A.html\ndisallow: /path/foo-%24\n';
    expect(allowed(robotstxt, 'a', 'https://www.example.com/path/file-with-a-*.html')).toBe(false);
    expect(allowed(robotstxt, 'a', 'https://www.example.com/path/file-with-a-b.html')).toBe(true);
    expect(allowed(robotstxt, 'a', 'https://www.example.com/path/foo-$')).toBe(false);
  });
});

describe('RFC 9309 §5.1 simple example', () => {
  const robotstxt = [
    'User-Agent: *',
    'Disallow: *.gif$',
    'Disallow: /example/',
    'Allow: /publications/',
    '',
    'User-Agent: foobot',
    'Disallow:/',
    'Allow:/example/page.html',
    'Allow:/example/allowed.gif',
    '',
    'User-Agent: barbot',
    'User-Agent: bazbot',
    'Disallow: /example/page.html',
    '',
    'User-Agent: quxbot',
    '',
  ].join('\n');
  const rules = parseRobots(robotstxt);
  const ok = (ua: string, path: string) => isAllowed(rules, `https://example.com${path}`, ua).allowed;

  it('"*": /publications/ allowed, /example/ and *.gif disallowed', () => {
    expect(ok('OtherBot', '/publications/a.html')).toBe(true);
    expect(ok('OtherBot', '/example/a.html')).toBe(false);
    expect(ok('OtherBot', '/images/a.gif')).toBe(false);
    expect(ok('OtherBot', '/images/a.gif?x')).toBe(true); // "$" anchors the end
    expect(ok('OtherBot', '/')).toBe(true);
  });

  it('foobot: only /example/page.html and /example/allowed.gif', () => {
    expect(ok('foobot', '/example/page.html')).toBe(true);
    expect(ok('foobot', '/example/allowed.gif')).toBe(true);
    expect(ok('foobot', '/example/other.html')).toBe(false);
    expect(ok('foobot', '/publications/')).toBe(false);
    expect(ok('FooBot/1.0', '/')).toBe(false);
  });

  it('barbot and bazbot: /example/page.html disallowed, everything else allowed', () => {
    for (const ua of ['barbot', 'bazbot']) {
      expect(ok(ua, '/example/page.html')).toBe(false);
      expect(ok(ua, '/example/other.html')).toBe(true);
      expect(ok(ua, '/a.gif')).toBe(true);
    }
  });

  it('quxbot: empty group at the end of the file, unrestricted', () => {
    expect(ok('quxbot', '/example/page.html')).toBe(true);
    expect(ok('quxbot', '/a.gif')).toBe(true);
  });
});

describe('RFC 9309 §5.2 longest match', () => {
  it('/example/page/disallowed.gif wins over /example/page/', () => {
    const rules = parseRobots('User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n');
    expect(isAllowed(rules, 'https://example.com/example/page/disallowed.gif', 'foobot')).toEqual({
      allowed: false,
      rule: { directive: 'disallow', pattern: '/example/page/disallowed.gif', line: 3 },
    });
    expect(isAllowed(rules, 'https://example.com/example/page/other.gif', 'foobot').allowed).toBe(true);
  });
});

describe('RFC 9309 §2.5 limits', () => {
  const pad = '#'.padEnd(1023, 'x') + '\n'; // 1 KiB comment line

  it('parses at least 500 KiB; content past the limit is ignored', () => {
    const body = 'user-agent: *\n' + pad.repeat(498) + 'disallow: /early\n' + pad.repeat(10) + 'disallow: /late\n';
    const rules = parseRobots(Buffer.from(body));
    expect(isAllowed(rules, '/early', 'a').allowed).toBe(false);
    expect(isAllowed(rules, '/late', 'a').allowed).toBe(true);
  });

  it('maxBytes option; a line cut by the limit is dropped, not shortened', () => {
    const body = 'user-agent: *\ndisallow: /a\nallow: /public-files\n';
    const cut = body.indexOf('/public-files') + 4; // would read "allow: /pub"
    const rules = parseRobots(body, { maxBytes: cut });
    expect(isAllowed(rules, '/a', 'x').allowed).toBe(false);
    expect(isAllowed(rules, '/pub', 'x').rule).toBeNull();
  });
});

describe('RFC 9309 §2.3.1 access results: robotsFromFetch', () => {
  const body = Buffer.from('user-agent: *\ndisallow: /private\n');
  it.each([
    [200, 'parsed', false],
    [203, 'parsed', false],
    [301, 'allow-all-4xx', false], // §2.3.1.2 unresolved redirects "MAY assume unavailable"
    [400, 'allow-all-4xx', false],
    [401, 'allow-all-4xx', false], // §2.3.1.3: the whole 400-499 range is "unavailable"
    [403, 'allow-all-4xx', false],
    [404, 'allow-all-4xx', false],
    [410, 'allow-all-4xx', false],
    [429, 'disallow-all-5xx', true], // deliberate: 429 asks us to back off
    [500, 'disallow-all-5xx', true], // §2.3.1.4 "unreachable": complete disallow
    [503, 'disallow-all-5xx', true],
    [599, 'disallow-all-5xx', true],
    [999, 'disallow-all-unreachable', true],
  ] as const)('status %i -> %s (retryLater %s)', (status, kind, retryLater) => {
    const r = robotsFromFetch({ status, body });
    expect(r.kind).toBe(kind);
    expect(r.retryLater).toBe(retryLater);
    const ok = isAllowed(r.rules, '/page', 'kcrawl').allowed;
    expect(ok).toBe(!kind.startsWith('disallow'));
    if (kind === 'parsed') expect(isAllowed(r.rules, '/private', 'kcrawl').allowed).toBe(false);
  });

  it('network error -> disallow-all-unreachable, retry later', () => {
    const r = robotsFromFetch({ error: 'ECONNREFUSED' });
    expect(r).toMatchObject({ kind: 'disallow-all-unreachable', retryLater: true });
    expect(isAllowed(r.rules, '/', 'kcrawl')).toEqual({
      allowed: false,
      rule: { directive: 'disallow', pattern: '/', line: 0 },
    });
  });

  it('ALLOW_ALL and DISALLOW_ALL', () => {
    expect(isAllowed(ALLOW_ALL, '/x', 'a')).toEqual({ allowed: true, rule: null });
    expect(isAllowed(DISALLOW_ALL, '/x', 'a').allowed).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// google/robotstxt robots_test.cc
// ---------------------------------------------------------------------------------------------
describe('google/robotstxt robots_test.cc', () => {
  it('GoogleOnly_SystemTest', () => {
    const robotstxt = 'user-agent: FooBot\ndisallow: /\n';
    expect(allowed('', 'FooBot', '')).toBe(true);
    expect(allowed(robotstxt, '', '')).toBe(true);
    expect(allowed(robotstxt, 'FooBot', '')).toBe(false);
    expect(allowed('', '', '')).toBe(true);
  });

  it('ID_LineSyntax_Line (missing colon accepted, as documented)', () => {
    const url = 'http://foo.bar/x/y';
    expect(allowed('user-agent: FooBot\ndisallow: /\n', 'FooBot', url)).toBe(false);
    expect(allowed('foo: FooBot\nbar: /\n', 'FooBot', url)).toBe(true);
    expect(allowed('user-agent FooBot\ndisallow /\n', 'FooBot', url)).toBe(false);
  });

  it('ID_LineSyntax_Groups', () => {
    const robotstxt =
      'allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\n' +
      'allow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n';
    expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/x/b')).toBe(true);
    expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/z/d')).toBe(true);
    expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/y/c')).toBe(false);
    expect(allowed(robotstxt, 'BarBot', 'http://foo.bar/y/c')).toBe(true);
    expect(allowed(robotstxt, 'BarBot', 'http://foo.bar/w/a')).toBe(true);
    expect(allowed(robotstxt, 'BarBot', 'http://foo.bar/z/d')).toBe(false);
    expect(allowed(robotstxt, 'BazBot', 'http://foo.bar/z/d')).toBe(true);
    for (const ua of ['FooBot', 'BarBot', 'BazBot']) expect(allowed(robotstxt, ua, 'http://foo.bar/foo/bar/')).toBe(false);
  });

  it('ID_REPLineNamesCaseInsensitive', () => {
    for (const [ua, al, dis] of [['USER-AGENT', 'ALLOW', 'DISALLOW'], ['user-agent', 'allow', 'disallow'], ['uSeR-aGeNt', 'AlLoW', 'dIsAlLoW']]) {
      const robotstxt = `${ua}: FooBot\n${al}: /x/\n${dis}: /\n`;
      expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/x/y')).toBe(true);
      expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/a/b')).toBe(false);
    }
  });

  it('ID_VerifyValidUserAgentsToObey (our API: productToken derives the token)', () => {
    expect(productToken('Foobot')).toBe('foobot');
    expect(productToken('Foobot-Bar')).toBe('foobot-bar');
    expect(productToken('Foo_Bar')).toBe('foo_bar');
    expect(productToken('')).toBe('');
    expect(productToken('ツ')).toBe('');
    // Google rejects these as tokens; we accept a User-Agent string and take its token.
    expect(productToken('Foobot/2.1')).toBe('foobot');
    expect(productToken('Foobot*')).toBe('foobot');
  });

  it('ID_UserAgentValueCaseInsensitive', () => {
    for (const v of ['FOO BAR', 'foo bar', 'FoO bAr']) {
      const robotstxt = `User-Agent: ${v}\nAllow: /x/\nDisallow: /\n`;
      for (const ua of ['Foo', 'foo']) {
        expect(allowed(robotstxt, ua, 'http://foo.bar/x/y')).toBe(true);
        expect(allowed(robotstxt, ua, 'http://foo.bar/a/b')).toBe(false);
      }
    }
  });

  it('GoogleOnly_AcceptUserAgentUpToFirstSpace (our API: "Foo Bar" is a UA string with token "foo")', () => {
    const robotstxt = 'User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n';
    expect(allowed(robotstxt, 'Foo', 'http://foo.bar/x/y')).toBe(true);
    // Google: false, since "Foo Bar" is not a valid token to obey. We derive "foo" from it.
    expect(allowed(robotstxt, 'Foo Bar', 'http://foo.bar/x/y')).toBe(true);
  });

  it('ID_GlobalGroups_Secondary', () => {
    const url = 'http://foo.bar/x/y';
    const global = 'user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n';
    const onlySpecific = 'user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n';
    expect(allowed('', 'FooBot', url)).toBe(true);
    expect(allowed(global, 'FooBot', url)).toBe(false);
    expect(allowed(global, 'BarBot', url)).toBe(true);
    expect(allowed(onlySpecific, 'QuxBot', url)).toBe(true);
  });

  it('ID_AllowDisallow_Value_CaseSensitive', () => {
    expect(allowed('user-agent: FooBot\ndisallow: /x/\n', 'FooBot', 'http://foo.bar/x/y')).toBe(false);
    expect(allowed('user-agent: FooBot\ndisallow: /X/\n', 'FooBot', 'http://foo.bar/x/y')).toBe(true);
  });

  it('ID_LongestMatch', () => {
    const url = 'http://foo.bar/x/page.html';
    expect(allowed('user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n', 'FooBot', url)).toBe(false);
    const r2 = 'user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n';
    expect(allowed(r2, 'FooBot', url)).toBe(true);
    expect(allowed(r2, 'FooBot', 'http://foo.bar/x/')).toBe(false);
    expect(allowed('user-agent: FooBot\ndisallow: \nallow: \n', 'FooBot', url)).toBe(true);
    expect(allowed('user-agent: FooBot\ndisallow: /\nallow: /\n', 'FooBot', url)).toBe(true);
    const r5 = 'user-agent: FooBot\ndisallow: /x\nallow: /x/\n';
    expect(allowed(r5, 'FooBot', 'http://foo.bar/x')).toBe(false);
    expect(allowed(r5, 'FooBot', 'http://foo.bar/x/')).toBe(true);
    expect(allowed('user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n', 'FooBot', url)).toBe(true);
    const r7 = 'user-agent: FooBot\nallow: /page\ndisallow: /*.html\n';
    expect(allowed(r7, 'FooBot', 'http://foo.bar/page.html')).toBe(false);
    expect(allowed(r7, 'FooBot', 'http://foo.bar/page')).toBe(true);
    const r8 = 'user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n';
    expect(allowed(r8, 'FooBot', url)).toBe(true);
    expect(allowed(r8, 'FooBot', 'http://foo.bar/x/y.html')).toBe(false);
    const r9 = 'User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n';
    expect(allowed(r9, 'FooBot', 'http://foo.bar/x/page')).toBe(true);
    expect(allowed(r9, 'FooBot', 'http://foo.bar/y/page')).toBe(false);
  });

  describe('ID_Encoding', () => {
    it('/foo/bar?baz=http://foo.bar stays unencoded', () => {
      const robotstxt = 'User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n';
      expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par')).toBe(true);
    });

    it('3 byte character: /foo/bar/ツ -> /foo/bar/%E3%83%84 (RFC wins for the unencoded URL)', () => {
      for (const rule of ['/foo/bar/ツ', '/foo/bar/%E3%83%84']) {
        const robotstxt = `User-agent: FooBot\nDisallow: /\nAllow: ${rule}\n`;
        expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/foo/bar/%E3%83%84')).toBe(true);
        // Google: false (the caller must encode the URL). RFC 9309 §2.2.2: non-ASCII octets
        // "MUST be percent-encoded ... prior to comparison", so we encode the URL ourselves.
        expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/foo/bar/ツ')).toBe(true);
      }
    });

    it('percent-encoded unreserved US-ASCII: /foo/bar/%62%61%7A (RFC wins: matches /foo/bar/baz)', () => {
      const robotstxt = 'User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n';
      // Google: false. RFC 9309 §2.2.2 table: "/foo/bar/%62%61%7A" is matched against "/foo/bar/baz".
      expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/foo/bar/baz')).toBe(true);
      expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/foo/bar/%62%61%7A')).toBe(true);
    });
  });

  it('ID_SpecialCharacters', () => {
    const r1 = 'User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n';
    expect(allowed(r1, 'FooBot', 'http://foo.bar/foo/bar/quz')).toBe(false);
    expect(allowed(r1, 'FooBot', 'http://foo.bar/foo/quz')).toBe(true);
    expect(allowed(r1, 'FooBot', 'http://foo.bar/foo//quz')).toBe(true);
    expect(allowed(r1, 'FooBot', 'http://foo.bar/foo/bax/quz')).toBe(true);
    const r2 = 'User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n';
    expect(allowed(r2, 'FooBot', 'http://foo.bar/foo/bar')).toBe(false);
    expect(allowed(r2, 'FooBot', 'http://foo.bar/foo/bar/qux')).toBe(true);
    expect(allowed(r2, 'FooBot', 'http://foo.bar/foo/bar/')).toBe(true);
    expect(allowed(r2, 'FooBot', 'http://foo.bar/foo/bar/baz')).toBe(true);
    const r3 = 'User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n';
    expect(allowed(r3, 'FooBot', 'http://foo.bar/foo/bar')).toBe(true);
    expect(allowed(r3, 'FooBot', 'http://foo.bar/foo/quz')).toBe(false);
  });

  it('GoogleOnly_IndexHTMLisDirectory (not implemented: RFC 9309 has no such rule)', () => {
    const robotstxt = 'User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n';
    // Google: true. Per RFC 9309 only "/" matches "/allowed-slash/".
    expect(allowed(robotstxt, 'foobot', 'http://foo.com/allowed-slash/')).toBe(false);
    expect(allowed(robotstxt, 'foobot', 'http://foo.com/allowed-slash/index.htm')).toBe(false);
    expect(allowed(robotstxt, 'foobot', 'http://foo.com/allowed-slash/index.html')).toBe(true);
    expect(allowed(robotstxt, 'foobot', 'http://foo.com/anyother-url')).toBe(false);
  });

  it('GoogleOnly_LineTooLong (not implemented: lines are not cut at 8 * 2083 bytes)', () => {
    const longline = '/x/' + 'a'.repeat(8 * 2083);
    const robotstxt = `user-agent: FooBot\ndisallow: ${longline}/qux\n`;
    expect(allowed(robotstxt, 'FooBot', 'http://foo.bar/fux')).toBe(true);
    // Google: false (the rule is cut before "/qux"). We match the whole rule.
    expect(allowed(robotstxt, 'FooBot', `http://foo.bar${longline}/fux`)).toBe(true);
    expect(allowed(robotstxt, 'FooBot', `http://foo.bar${longline}/qux`)).toBe(false);
  });

  describe('GoogleOnly_DocumentationChecks', () => {
    const check = (rule: string, yes: string[], no: string[]) => {
      const robotstxt = `user-agent: FooBot\ndisallow: /\nallow: ${rule}\n`;
      for (const p of yes) expect([p, allowed(robotstxt, 'FooBot', `http://foo.bar${p}`)]).toEqual([p, true]);
      for (const p of no) expect([p, allowed(robotstxt, 'FooBot', `http://foo.bar${p}`)]).toEqual([p, false]);
    };
    it('/fish', () =>
      check('/fish', ['/fish', '/fish.html', '/fish/salmon.html', '/fishheads', '/fishheads/yummy.html', '/fish.html?id=anything'],
        ['/bar', '/Fish.asp', '/catfish', '/?id=fish']));
    it('"/fish*" equals "/fish"', () =>
      check('/fish*', ['/fish', '/fish.html', '/fish/salmon.html', '/fishheads', '/fishheads/yummy.html', '/fish.html?id=anything'],
        ['/bar', '/Fish.bar', '/catfish', '/?id=fish']));
    it('"/fish/" does not equal "/fish"', () =>
      check('/fish/', ['/fish/', '/fish/salmon', '/fish/?salmon', '/fish/salmon.html', '/fish/?id=anything'],
        ['/bar', '/fish', '/fish.html', '/Fish/Salmon.html']));
    it('/*.php', () =>
      check('/*.php', ['/filename.php', '/folder/filename.php', '/folder/filename.php?parameters', '//folder/any.php.file.html',
        '/filename.php/', '/index?f=filename.php/'], ['/bar', '/php/', '/index?php', '/windows.PHP']));
    it('/*.php$', () =>
      check('/*.php$', ['/filename.php', '/folder/filename.php'],
        ['/bar', '/filename.php?parameters', '/filename.php/', '/filename.php5', '/php/', '/filename?php', '/aaaphpaaa', '//windows.PHP']));
    it('/fish*.php', () => check('/fish*.php', ['/fish.php', '/fishheads/catfish.php?parameters'], ['/bar', '/Fish.PHP']));
    it('order of precedence for group-member records', () => {
      expect(allowed('user-agent: FooBot\nallow: /p\ndisallow: /\n', 'FooBot', 'http://example.com/page')).toBe(true);
      expect(allowed('user-agent: FooBot\nallow: /folder\ndisallow: /folder\n', 'FooBot', 'http://example.com/folder/page')).toBe(true);
      expect(allowed('user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n', 'FooBot', 'http://example.com/page.htm')).toBe(false);
      const r = 'user-agent: FooBot\nallow: /$\ndisallow: /\n';
      expect(allowed(r, 'FooBot', 'http://example.com/')).toBe(true);
      expect(allowed(r, 'FooBot', 'http://example.com/page.html')).toBe(false);
    });
  });

  it('ID_LinesNumbersAreCountedCorrectly (\\n, \\r\\n, \\r, no final newline, mixed)', () => {
    const files = [
      'User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n',
      'User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n',
      'User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r',
      'User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /',
      'User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /',
    ];
    for (const f of files) {
      const rules = parseRobots(f);
      expect(isAllowed(rules, '/x', 'bar').rule).toEqual({ directive: 'disallow', pattern: '/', line: 6 });
      expect(isAllowed(rules, '/some/path', 'foo').rule).toEqual({ directive: 'allow', pattern: '/some/path', line: 2 });
    }
  });

  it('ID_UTF8ByteOrderMarkIsSkipped', () => {
    const rest = Buffer.from('User-Agent: foo\nAllow: /AnyValue\nDisallow: /\n');
    const bom = (...b: number[]) => Buffer.concat([Buffer.from(b), rest]);
    // full and partial BOMs are skipped: the group is parsed
    for (const b of [bom(0xef, 0xbb, 0xbf), bom(0xef, 0xbb), bom(0xef)]) {
      expect(isAllowed(parseRobots(b), '/x', 'foo').allowed).toBe(false);
    }
    expect(allowed('\uFEFFUser-Agent: foo\nDisallow: /\n', 'foo', '/x')).toBe(false);
    // a broken BOM makes the first line garbage: no group, so everything is allowed
    expect(isAllowed(parseRobots(bom(0xef, 0x11, 0xbf)), '/x', 'foo').allowed).toBe(true);
    // a BOM is only a BOM at the start of the file
    const middle = Buffer.concat([Buffer.from('User-Agent: foo\n'), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Disallow: /\n')]);
    expect(isAllowed(parseRobots(middle), '/x', 'foo').allowed).toBe(true);
  });

  it('ID_NonStandardLineExample_Sitemap (a sitemap line may appear anywhere)', () => {
    const groups = 'User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n';
    expect(sitemaps(parseRobots(groups + 'Sitemap: http://foo.bar/sitemap.xml\n'))).toEqual(['http://foo.bar/sitemap.xml']);
    expect(sitemaps(parseRobots('Sitemap: http://foo.bar/sitemap.xml\n' + groups))).toEqual(['http://foo.bar/sitemap.xml']);
  });

  it('TestGetPathParamsQuery', () => {
    const cases: [string, string][] = [
      ['', '/'], ['http://www.example.com', '/'], ['http://www.example.com/', '/'], ['http://www.example.com/a', '/a'],
      ['http://www.example.com/a/', '/a/'], ['http://www.example.com/a/b?c=http://d.e/', '/a/b?c=http://d.e/'],
      ['http://www.example.com/a/b?c=d&e=f#fragment', '/a/b?c=d&e=f'], ['example.com', '/'], ['example.com/', '/'],
      ['example.com/a', '/a'], ['example.com/a/', '/a/'], ['example.com/a/b?c=d&e=f#fragment', '/a/b?c=d&e=f'],
      ['a', '/'], ['a/', '/'], ['/a', '/a'], ['a/b', '/b'], ['example.com?a', '/?a'], ['example.com/a;b#c', '/a;b'],
      ['//a/b/c', '/b/c'],
    ];
    for (const [url, path] of cases) expect([url, pathForMatching(url)]).toEqual([url, path]);
  });

  it('TestMaybeEscapePattern', () => {
    expect(canonicalOctets('http://www.example.com', true)).toBe('http://www.example.com');
    expect(canonicalOctets('/a/b/c', true)).toBe('/a/b/c');
    expect(canonicalOctets('á', true)).toBe('%C3%A1');
    expect(canonicalOctets('%aa', true)).toBe('%AA');
  });
});

describe('parser details', () => {
  it('keeps the line of every rule and reports the deciding one', () => {
    const rules = parseRobots('# header\nUser-agent: *\n\nDisallow: /private # secret\nAllow: /private/public\n');
    expect(isAllowed(rules, 'https://e.com/private/x', 'kcrawl').rule).toEqual({ directive: 'disallow', pattern: '/private', line: 4 });
    expect(isAllowed(rules, 'https://e.com/private/public/a', 'kcrawl').rule).toEqual({
      directive: 'allow',
      pattern: '/private/public',
      line: 5,
    });
  });

  it('Crawl-delay of the matching group, fractional seconds, null when absent', () => {
    const rules = parseRobots('User-agent: *\nCrawl-delay: 10\nDisallow: /x\n\nUser-agent: KCrawl\nCrawl-delay: 0.5\n\nUser-agent: other\nDisallow: /\n');
    expect(crawlDelayMs(rules, 'KCrawl/0.1 (+https://example.com)')).toBe(500);
    expect(crawlDelayMs(rules, 'unknown')).toBe(10000);
    expect(crawlDelayMs(rules, 'other')).toBeNull();
    expect(crawlDelayMs(parseRobots('User-agent: *\nCrawl-delay: soon\n'), 'a')).toBeNull();
    expect(crawlDelayMs(ALLOW_ALL, 'a')).toBeNull();
  });

  it('a sitemap line does not end a group; sitemaps are de-duplicated', () => {
    const rules = parseRobots('User-agent: a\nSitemap: https://e.com/s1.xml\nUser-agent: b\nDisallow: /\nSitemap: https://e.com/s1.xml\nsitemap: https://e.com/s2.xml\n');
    expect(allowed('User-agent: a\nSitemap: https://e.com/s.xml\nUser-agent: b\nDisallow: /\n', 'a', '/x')).toBe(false);
    expect(sitemaps(rules)).toEqual(['https://e.com/s1.xml', 'https://e.com/s2.xml']);
  });

  it('accepts common misspellings of directives (documented leniency)', () => {
    expect(allowed('useragent: a\ndissallow: /\n', 'a', '/x')).toBe(false);
  });

  it('a "*" in a user-agent value other than alone is not the global group', () => {
    expect(allowed('User-agent: *bot\nDisallow: /\n', 'x', '/a')).toBe(true);
    expect(allowed('User-agent: * # all\nDisallow: /\n', 'x', '/a')).toBe(false);
  });

  it('handles Buffer bodies as UTF-8', () => {
    expect(allowed(Buffer.from('User-agent: *\nDisallow: /café\n'), 'a', '/caf%C3%A9')).toBe(false);
  });
});
