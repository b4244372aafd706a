/**
 * Feeds in Kafka mode on the real local stack: `crawl init`, `crawl process all` and
 * `crawl serve` as child processes, `crawl seed --feed`. The feed is polled at its interval
 * (3 s here) with conditional GETs through the frontier, an item added to it reaches
 * crawl.handoff.v3 (read as an indexer would) within the poll interval plus 10 s, and the
 * operator sees it: GET /feeds and /feeds/{url}, priority_class in GET /urls/{url} and in
 * `crawl explain --kafka`, bad POST /feeds requests refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { FixtureWeb, page } from '../fixtures/web';
import { CLI } from '../support/cli';
import { cliAsync, CrawlProcess, HandoffReader, stackEnv, uniquePrefix } from '../support/kafka-stack';

const prefix = uniquePrefix('e2e-feeds');
const TOKEN = 'feeds-test-token-0123456789';
const POLL_MS = 3000;
const env = stackEnv(prefix, {
  CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_ALLOW_PRIVATE_NETWORK: 'true', CRAWL_API_TOKEN: TOKEN,
  CRAWL_FEED_POLL_MS: String(POLL_MS), CRAWL_FEED_MIN_POLL_MS: '1000', CRAWL_FEED_MAX_POLL_MS: String(POLL_MS),
});
const IP = '127.39.4.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const cli = (args: string[]): Promise<string> => cliAsync(args, env);

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (await cond()) return true;
  return false;
}

describe('feeds, Kafka mode', () => {
  let web: FixtureWeb;
  let proc: CrawlProcess;
  let serve: ChildProcess;
  let serveOut = '';
  const handoff = new HandoffReader(prefix);
  const items = ['k1'];
  const feedRequests: Array<{ at: number; status: number }> = [];
  const etag = (): string => `"${items.join('.')}"`;
  const feedUrl = (): string => `${web.origin(IP)}/feed.xml`;

  beforeAll(async () => {
    web = await FixtureWeb.start([{
      ip: IP,
      pages: {
        '/feed.xml': (req, res, site) => {
          const notModified = req.headers['if-none-match'] === etag();
          feedRequests.push({ at: Date.now(), status: notModified ? 304 : 200 });
          if (notModified) return void res.writeHead(304, { etag: etag() }).end();
          res.writeHead(200, { 'content-type': 'application/atom+xml', etag: etag() }).end(
            '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>K</title>' +
              items.map((i) => `<entry><id>urn:k:${i}</id><link rel="alternate" href="${site.origin}/k/${i}"/></entry>`).join('') + '</feed>',
          );
        },
        ...Object.fromEntries(['k1', 'k2'].map((k) => [`/k/${k}`, page(`Story ${k}`, [], `The story called ${k}, told in plain English words for the language check.`)])),
      },
    }]);
    await cli(['init']);
    proc = new CrawlProcess(['all'], env);
    serve = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    serve.stdout!.on('data', (d: Buffer) => (serveOut += d.toString()));
    await handoff.start();
  });

  afterAll(async () => {
    serve?.kill('SIGTERM');
    await proc?.stop();
    await handoff.stop();
    await web?.stop();
  });

  const servePort = (): number | null => Number(/crawl serve: http:\/\/[^:]+:(\d+)\//.exec(serveOut)?.[1] ?? NaN) || null;
  async function api(method: string, path: string, body?: unknown, token: string | null = TOKEN): Promise<{ status: number; json: any }> {
    const r = await fetch(`http://127.0.0.1:${servePort()}${path}`, {
      method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  }

  test('an item added to a seeded feed is handed off within the poll interval plus 10 s; the operator sees the feed and the class', async () => {
    expect(await until(() => proc.logged('processors running'), 60_000)).toBe(true);
    await cli(['seed', '--feed', feedUrl()]);
    const handed = (k: string): boolean => handoff.urls().has(`${web.origin(IP)}/k/${k}`);
    if (!(await until(() => handed('k1'), 120_000))) throw new Error(`k1 never handed off; processor log:\n${proc.stderr.slice(-4000)}`);
    expect(await until(() => feedRequests.filter((r) => r.status === 304).length >= 2, 30_000)).toBe(true);
    items.unshift('k2');
    const added = Date.now();
    expect(await until(() => handed('k2'), 60_000)).toBe(true);
    expect(Date.now() - added).toBeLessThanOrEqual(POLL_MS + 10_000);
    // Polled at its interval: never two polls closer than it.
    for (let i = 1; i < feedRequests.length; i++) expect(feedRequests[i].at - feedRequests[i - 1].at).toBeGreaterThanOrEqual(POLL_MS - 50);

    // crawl serve follows crawl.feeds and crawl.urls.
    expect(await until(() => servePort() !== null, 30_000)).toBe(true);
    expect(await until(async () => (await api('GET', '/feeds')).json.total === 1, 30_000)).toBe(true);
    const list = await api('GET', '/feeds');
    expect(list.json.feeds[0]).toMatchObject({ url: feedUrl(), host: IP, kind: 'atom', interval_ms: POLL_MS });
    expect(list.json.feeds[0].polls).toBeGreaterThanOrEqual(3);
    expect((await api('GET', `/feeds/${encodeURIComponent(feedUrl())}`)).json).toMatchObject({ url: feedUrl(), kind: 'atom' });
    expect((await api('GET', `/feeds/${encodeURIComponent(`${web.origin(IP)}/k/k1`)}`)).status).toBe(404);
    const item = await api('GET', `/urls/${encodeURIComponent(`${web.origin(IP)}/k/k2`)}`);
    expect(item.json).toMatchObject({ state: 'FETCHED', priority_class: 1, feed: null });
    expect((await api('GET', `/urls/${encodeURIComponent(feedUrl())}`)).json).toMatchObject({ priority_class: 1, feed: `/feeds/${encodeURIComponent(feedUrl())}` });
    // Bad POST /feeds requests change nothing; a good one is accepted.
    expect((await api('POST', '/feeds', { urls: [feedUrl()] }, 'wrong-token-wrong-token')).status).toBe(403);
    expect((await api('POST', '/feeds', { urls: [feedUrl()] }, null)).status).toBe(401);
    expect((await api('POST', '/feeds', { urls: ['notaurl'] })).json).toMatchObject({ error: 'invalid_url' });
    expect((await api('POST', '/feeds', { urls: [] })).status).toBe(400);
    expect((await api('POST', '/feeds', { urls: [feedUrl()] })).status).toBe(202);
    const doc = await api('GET', '/openapi.json');
    expect(Object.keys(doc.json.paths)).toEqual(expect.arrayContaining(['/feeds', '/feeds/{url}']));

    const explained = JSON.parse(await cli(['explain', '--kafka', '--json', '--no-robots', feedUrl()])) as { priority_class: number; feed: { kind: string } };
    expect(explained).toMatchObject({ priority_class: 1, feed: { kind: 'atom' } });
    // The metrics of the processors' own port are covered by the embedded budget test; here the processors' log names the feed.
    expect(proc.log().some((l) => l.msg === 'feed read' && l.url === feedUrl())).toBe(true);
  });
});
