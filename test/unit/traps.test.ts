import { HostPolicyTable, hostPolicyKey } from '../../lib/host-policy';
import type { HostPolicyMsg } from '../../lib/messages';
import { DEFAULT_TRAP_OPTIONS, QueryGrowthDetector, repeatedSegment, TrapScreen, trapRulePrefix, underPrefix } from '../../lib/traps';

describe('repeatedSegment (3 or more times)', () => {
  it.each<[string, boolean]>([
    ['/a/b/c', false],
    ['/a/b/a/b', false],
    ['/a/b/a/b/a/b', true],
    ['/foo/foo/foo', true],
    ['/x/foo/y/foo/z/foo/', true],
    ['//////', false],
    ['/2026/10/10/10', true],
    ['/p/1', false],
    ['a/a/a', true],
    ['a/a', false],
    ['/a/a', false],
    ['', false],
  ])('%s -> %s', (path, expected) => {
    expect(repeatedSegment(path)).toBe(expected);
  });

  it('other limits, the counting shortcut included', () => {
    expect(repeatedSegment('/a', 1)).toBe(true);
    expect(repeatedSegment('/', 1)).toBe(false);
    expect(repeatedSegment('/a/a', 2)).toBe(true);
    expect(repeatedSegment('a/a', 2)).toBe(true);
    expect(repeatedSegment('/a/b', 2)).toBe(false);
    expect(repeatedSegment('/a/b/a/b/a', 4)).toBe(false);
    expect(repeatedSegment('/a/b/a/b/a/c/a', 4)).toBe(true);
  });

  it('agrees with a count of split segments on random paths, short and past 16 segments', () => {
    const reference = (path: string, max: number): boolean => {
      const counts = new Map<string, number>();
      for (const seg of path.split('/').filter(Boolean)) {
        counts.set(seg, (counts.get(seg) ?? 0) + 1);
        if (counts.get(seg)! >= max) return true;
      }
      return false;
    };
    let seed = 7;
    const rand = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
    const pieces = ['', 'a', 'b', 'ab', 'ba', 'abc', 'x'];
    let repeated = 0;
    for (let t = 0; t < 3000; t++) {
      const parts = Array.from({ length: rand(30) }, () => pieces[rand(pieces.length)]);
      const path = (rand(2) ? '/' : '') + parts.join('/');
      const max = 1 + rand(5);
      const want = reference(path, max);
      if (want) repeated++;
      expect([path, max, repeatedSegment(path, max)]).toEqual([path, max, want]);
    }
    expect(repeated).toBeGreaterThan(300);
    expect(repeated).toBeLessThan(2700);
  });
});

describe('trap rule fields and prefixes', () => {
  it.each<[string, string | null]>([
    ['trap:/calendar', '/calendar'],
    ['trap:/', '/'],
    ['trap:calendar', null],
    ['block', null],
  ])('%s -> %s', (field, prefix) => {
    expect(trapRulePrefix(field)).toBe(prefix);
  });

  it.each<[string, string, boolean]>([
    ['/calendar', '/calendar', true],
    ['/calendar/2027/01', '/calendar', true],
    ['/calendars', '/calendar', false],
    ['/cal', '/calendar', false],
    ['/calendar/x', '/calendar/', true],
    ['/anything', '/', true],
  ])('%s under %s -> %s', (path, prefix, expected) => {
    expect(underPrefix(path, prefix)).toBe(expected);
  });
});

describe('QueryGrowthDetector', () => {
  it('flags a query that keeps growing on one path, after N growths in a row', () => {
    const d = new QueryGrowthDetector();
    const q = (n: number): string => '?' + Array.from({ length: n }, () => 'a=1').join('&');
    const flags = [1, 2, 3, 4, 5].map((n) => d.observe('h.test', '/p', q(n)));
    // growths: 2nd, 3rd, 4th…; the 3rd growth in a row (4th URL) is the trap.
    expect(flags).toEqual([false, false, false, true, true]);
  });

  it('does not flag pagination, other paths, or growth broken by a shorter query', () => {
    const d = new QueryGrowthDetector();
    const pages = Array.from({ length: 120 }, (_, i) => d.observe('h.test', '/list', `?page=${i + 1}`));
    expect(pages.some(Boolean)).toBe(false);
    expect(['?a=1', '?a=1&b=22', '?a=1&b=22&c=333', '?a=1', '?a=1&b=22&c=333&d=4444'].map((s) => d.observe('h.test', '/q', s))).toEqual([
      false, false, false, false, false,
    ]);
    expect(d.observe('other.test', '/q', '?a=1&b=22&c=333&d=4444&e=55555')).toBe(false);
  });

  it('forgets the oldest paths beyond its bound', () => {
    const d = new QueryGrowthDetector({ ...DEFAULT_TRAP_OPTIONS, maxTrackedPaths: 10 });
    for (let i = 0; i < 100; i++) d.observe('h.test', `/p${i}`, '?x=1');
    expect(d.tracked).toBe(10);
  });
});

describe('TrapScreen', () => {
  const row = (host: string, field: string, blockedUntil: number | null = null): HostPolicyMsg => ({
    host, field, updated_at: 1, blocked_until: blockedUntil, reason: 'near-duplicates', min_delay_ms: null,
  });

  it('applies learned rules from host policy, lifts them on a tombstone, and honours expiry', () => {
    const policy = new HostPolicyTable();
    const screen = new TrapScreen(policy);
    const url = 'https://events.example/calendar?month=2027-01';
    expect(screen.screen(url, 1000)).toBeNull();
    policy.apply(hostPolicyKey('events.example', 'trap:/calendar'), row('events.example', 'trap:/calendar'));
    expect(screen.screen(url, 1000)).toBe('trap-rule');
    expect(screen.screen('https://events.example/calendars', 1000)).toBeNull();
    expect(screen.screen('https://other.example/calendar', 1000)).toBeNull();
    policy.apply(hostPolicyKey('events.example', 'trap:/calendar'), null);
    expect(screen.screen(url, 1000)).toBeNull();
    policy.apply(hostPolicyKey('events.example', 'trap:/calendar'), row('events.example', 'trap:/calendar', 500));
    expect(screen.screen(url, 1000)).toBeNull();
    expect(screen.screen(url, 400)).toBe('trap-rule');
  });

  it('names the reason for repeated segments and growing queries', () => {
    const screen = new TrapScreen(null);
    expect(screen.screen('https://a.example/x/y/x/y/x/', 0)).toBe('trap-repeated-segment');
    const got = ['?s=a', '?s=aaaaa', '?s=aaaaaaaaa', '?s=aaaaaaaaaaaaa'].map((q) => screen.screen(`https://a.example/search${q}`, 0));
    expect(got).toEqual([null, null, null, 'trap-growing-query']);
  });
});
