/**
 * The robots.txt cache per RFC 9309: at most 24 h (§2.4), 4xx = allow all, 5xx/unreachable =
 * disallow all and retry later (§2.3.1.3-4), and a cached good copy kept in force while the
 * file is unreachable, up to staleMaxMs (§2.4 "unless the robots.txt file is unreachable",
 * §2.3.1.4 "for example, 30 days").
 */
import { isAllowed, type RobotsFetchResult } from '../../lib/robots';
import { RobotsCache } from '../../processors/robots-cache';

const UA = 'KCrawl/0.1';
const HOUR = 3600_000;
const DAY = 24 * HOUR;

function cacheWith(answers: RobotsFetchResult[], staleMaxMs = 30 * DAY) {
  let clock = 0;
  const calls: number[] = [];
  const cache = new RobotsCache(
    async () => {
      calls.push(clock);
      return answers[Math.min(calls.length - 1, answers.length - 1)];
    },
    { cacheMs: DAY, retryMs: 60_000, maxEntries: 10, staleMaxMs },
    () => clock,
  );
  return { cache, calls, at: (t: number) => (clock = t) };
}

const body = (text: string): RobotsFetchResult => ({ status: 200, body: Buffer.from(text) });
const GOOD = body('User-agent: *\nDisallow: /private\n');

describe('RobotsCache', () => {
  it('fetches once, serves from cache for 24 h, then fetches again', async () => {
    const { cache, calls, at } = cacheWith([GOOD]);
    expect((await cache.get('http://a.test')).fresh).toBe(true);
    at(DAY - 1);
    expect((await cache.get('http://a.test')).fresh).toBe(false);
    at(DAY);
    expect((await cache.get('http://a.test')).fresh).toBe(true);
    expect(calls).toEqual([0, DAY]);
  });

  it('shares one fetch between concurrent asks', async () => {
    const { cache, calls } = cacheWith([GOOD]);
    await Promise.all([cache.get('http://a.test'), cache.get('http://a.test'), cache.get('http://a.test')]);
    expect(calls).toHaveLength(1);
  });

  it.each<[string, RobotsFetchResult, boolean, boolean]>([
    ['404: allow all, cached 24 h', { status: 404, body: Buffer.alloc(0) }, true, false],
    ['503: disallow all, retried after retryMs', { status: 503, body: Buffer.alloc(0) }, false, true],
    ['unreachable: disallow all, retried after retryMs', { error: 'CONNECT_FAILED: refused' }, false, true],
  ])('%s', async (_n, answer, allowed, retryLater) => {
    const { cache, calls, at } = cacheWith([answer]);
    const e = await cache.get('http://a.test');
    expect(isAllowed(e.rules, 'http://a.test/page', UA).allowed).toBe(allowed);
    expect(e.retryLater).toBe(retryLater);
    at(60_000);
    await cache.get('http://a.test');
    expect(calls).toHaveLength(retryLater ? 2 : 1);
  });

  it('an unreachable refresh keeps the cached good copy in force (and retries every retryMs)', async () => {
    const { cache, calls, at } = cacheWith([GOOD, { status: 503, body: Buffer.alloc(0) }]);
    await cache.get('http://a.test');
    at(DAY);
    const e = await cache.get('http://a.test');
    expect(e).toMatchObject({ stale: true, retryLater: false, kind: 'parsed', fetchedAt: 0 });
    expect(isAllowed(e.rules, 'http://a.test/page', UA).allowed).toBe(true);
    expect(isAllowed(e.rules, 'http://a.test/private', UA).allowed).toBe(false);
    at(DAY + 59_999);
    await cache.get('http://a.test');
    at(DAY + 60_000);
    await cache.get('http://a.test');
    expect(calls).toEqual([0, DAY, DAY + 60_000]);
  });

  it('past staleMaxMs of being unreachable, complete disallow', async () => {
    const { cache, at } = cacheWith([GOOD, { error: 'CONNECT_TIMEOUT: t' }], 2 * DAY);
    await cache.get('http://a.test');
    at(2 * DAY);
    const e = await cache.get('http://a.test');
    expect(e).toMatchObject({ stale: false, retryLater: true, kind: 'disallow-all-unreachable' });
    expect(isAllowed(e.rules, 'http://a.test/page', UA).allowed).toBe(false);
  });

  it('without staleMaxMs an unreachable refresh disallows at once', async () => {
    const { cache, at } = cacheWith([GOOD, { status: 500, body: Buffer.alloc(0) }], 0);
    await cache.get('http://a.test');
    at(DAY);
    expect((await cache.get('http://a.test')).retryLater).toBe(true);
  });

  it('a 503 never makes a cached 503 "good": a host whose robots.txt has always failed stays disallowed', async () => {
    const { cache, at } = cacheWith([{ status: 503, body: Buffer.alloc(0) }]);
    await cache.get('http://a.test');
    at(10 * 60_000);
    const e = await cache.get('http://a.test');
    expect(isAllowed(e.rules, 'http://a.test/page', UA).allowed).toBe(false);
  });
  it('seed takes an answer fetched earlier while it is fresh, never over a later one', async () => {
    const { cache, calls, at } = cacheWith([body('User-agent: *\nDisallow: /\n')]);
    at(10 * HOUR);
    expect(cache.seed('http://a.test', GOOD, 0)).toBe(true);
    const e = await cache.get('http://a.test');
    expect(e).toMatchObject({ fresh: false, fetchedAt: 0, kind: 'parsed' });
    expect(isAllowed(e.rules, 'http://a.test/private', UA).allowed).toBe(false);
    expect(isAllowed(e.rules, 'http://a.test/page', UA).allowed).toBe(true);
    expect(cache.seed('http://a.test', body('User-agent: *\nAllow: /\n'), -HOUR)).toBe(false); // older than what is held
    expect(cache.seed('http://b.test', GOOD, -15 * HOUR)).toBe(false); // 25 h old: stale
    // A 503 is kept only retryMs (60 s), as when fetched.
    expect(cache.seed('http://c.test', { status: 503, body: Buffer.alloc(0) }, 10 * HOUR - 30_000)).toBe(true);
    expect(cache.seed('http://d.test', { status: 503, body: Buffer.alloc(0) }, 10 * HOUR - 60_000)).toBe(false);
    expect(calls).toEqual([]);
    at(DAY);
    expect((await cache.get('http://a.test')).fresh).toBe(true);
    expect(calls).toEqual([DAY]);
  });

  it('a fresh answer carries what was fetched (for crawl.host-policy); a stale copy in force does not', async () => {
    const { cache, at } = cacheWith([GOOD, { status: 503, body: Buffer.alloc(0) }]);
    expect((await cache.get('http://a.test')).answer).toEqual(GOOD);
    at(DAY);
    const stale = await cache.get('http://a.test');
    expect(stale).toMatchObject({ fresh: true, stale: true });
    expect(stale.answer).toBeUndefined();
  });

  it('drops failures once expired: hosts that never answer do not fill the cache', async () => {
    let clock = 0;
    const cache = new RobotsCache(
      async (origin) => (origin.startsWith('http://good') ? GOOD : { error: 'CONNECT_FAILED: refused' }),
      { cacheMs: DAY, retryMs: 60_000, maxEntries: 100_000, staleMaxMs: 30 * DAY },
      () => clock,
    );
    await cache.get('http://good.test');
    for (let minute = 0; minute < 10; minute++) {
      clock = minute * 60_000;
      for (let i = 0; i < 100; i++) await cache.get(`http://down-${minute}-${i}.test`);
    }
    // The good copy and the last minute's failures (those of the minute before expired as these were put).
    expect(cache.size).toBe(101);
    expect(cache.peek('http://down-0-0.test')).toBeUndefined();
    expect(cache.peek('http://good.test')?.kind).toBe('parsed');
    // A failure still in force is served from the cache; once expired it is fetched again.
    const t = clock;
    expect((await cache.get('http://down-9-0.test')).fresh).toBe(false);
    clock = t + 60_000;
    expect(await cache.get('http://down-9-0.test')).toMatchObject({ fresh: true, retryLater: true });
  });

  it('a good copy kept in force over an unreachable refresh is not dropped with the failures', async () => {
    const { cache, at } = cacheWith([GOOD, { error: 'CONNECT_FAILED: refused' }]);
    await cache.get('http://a.test');
    at(DAY);
    expect(await cache.get('http://a.test')).toMatchObject({ stale: true });
    at(DAY + 10 * 60_000);
    await cache.seed('http://b.test', GOOD, DAY + 10 * 60_000);
    expect(cache.peek('http://a.test')).toMatchObject({ stale: true, kind: 'parsed' });
  });
});
