/**
 * `crawl run` end to end, as a user runs it (the built CLI in a child process), against a
 * fixture web of three hosts on distinct 127.x addresses with named bad routes. Judged from
 * the outside: the servers' own request logs, the WARC files read back by warcio, and the
 * handoff .avro file read by avsc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixtureWeb, page } from '../fixtures/web';
import { readAllWarcs, readHandoff } from '../support/cli';
import { readOneRecord } from '../support/warc-read';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');

function runCli(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

describe('crawl run (embedded default)', () => {
  let web: FixtureWeb;
  let out: string;
  let result: { code: number | null; stdout: string; stderr: string };

  beforeAll(async () => {
    web = await FixtureWeb.start([
      {
        ip: '127.0.0.21',
        robots: 'User-agent: *\nDisallow: /private\nCrawl-delay: 1.5\n',
        pages: {
          '/': page('Alpha home', ['/a1', '/a2', '/private/secret', '/data.json', '/cut']),
          '/a1': page('Alpha one', ['/', '/a2', '{origin:127.0.0.22}/']),
          '/a2': page('Alpha two', ['/a1']),
          '/private/secret': page('Secret', []),
          '/data.json': (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"not":"html"}'),
          // Closes the connection mid-body: recorded as truncated, the crawl goes on.
          '/cut': (_q, res) => {
            res.writeHead(200, { 'content-type': 'text/html', 'content-length': '1000' });
            res.write('<html><body>only the start');
            setTimeout(() => res.socket?.destroy(), 20);
          },
        },
      },
      { ip: '127.0.0.22', pages: { '/': page('Beta home', ['/b1', 'http://127.0.0.24:1/unreachable']), '/b1': page('Beta one', ['/']) } },
      // A garbage robots.txt: no valid rules, so everything is allowed.
      { ip: '127.0.0.23', robots: '\u0000\u0001<html>this is not robots</html>\nDisallow /x y z\n:::\n', pages: { '/': page('Gamma home', ['/c1']), '/c1': page('Gamma one', []) } },
    ]);
    out = mkdtempSync(join(tmpdir(), 'crawl-run-'));
    const seeds = ['127.0.0.21', '127.0.0.22', '127.0.0.23'].flatMap((ip) => ['--seed', `${web.origin(ip)}/`]);
    const run = runCli(['run', ...seeds, '--seed', 'http://exa mple.com/bad seed', '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '60']);
    result = await run.done;
  });

  afterAll(async () => {
    await web?.stop();
  });

  test('exits 0 and prints a summary', () => {
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/crawl done: \d+ pages stored/);
    // A crawl that ran out of work parsed every page before stopping: nothing was left to drain.
    const [, parsed, beforeStop] = /(\d+) parsed \((\d+) before stopping\)/.exec(result.stdout) ?? [];
    expect(Number(parsed)).toBeGreaterThan(0);
    expect(beforeStop).toBe(parsed);
    // 127.0.0.24:1 refuses connections: the summary says so by reason, not only as a count.
    expect(result.stdout).toMatch(/\n  failures by reason: [^\n]*(robots\.txt unavailable|connection refused) \d+/);
  });

  test('is polite by the servers\' own logs: robots.txt first, one request at a time, gaps honoured, disallowed never fetched', () => {
    for (const site of web.sites) {
      const reqs = web.requestsTo(site.origin);
      expect(reqs.length).toBeGreaterThan(0);
      if (site.ip !== '127.0.0.22' || reqs.some((r) => r.path === '/robots.txt')) expect(reqs[0]!.path).toBe('/robots.txt');
      for (const r of reqs) expect(r.concurrent).toBe(1);
      for (const r of reqs) expect(r.userAgent).toMatch(/^KCrawl\/\S+ \(\+https?:\/\/\S+\)$/);
      const minGap = site.ip === '127.0.0.21' ? 1500 : 1000;
      for (let i = 1; i < reqs.length; i++) expect(reqs[i]!.at - reqs[i - 1]!.at).toBeGreaterThanOrEqual(minGap - 5);
    }
    expect(web.log.some((e) => e.path.startsWith('/private'))).toBe(false);
  });

  test('WARC files pass an independent reader, with every HTML page the servers sent', async () => {
    const records = await readAllWarcs(join(out, 'warc'));
    expect(records[0]!.type).toBe('warcinfo');
    const responses = records.filter((r) => r.type === 'response');
    const html = ['127.0.0.21/', '127.0.0.21/a1', '127.0.0.21/a2', '127.0.0.22/', '127.0.0.22/b1', '127.0.0.23/', '127.0.0.23/c1'];
    for (const h of html) {
      const [ip, path] = [h.split('/')[0]!, '/' + h.split('/').slice(1).join('/')];
      const url = `${web.origin(ip)}${path}`;
      const r = responses.find((x) => x.targetUri === url);
      expect(r).toBeDefined();
      expect(r!.payload.toString()).toContain('<title>');
    }
    const cut = responses.find((r) => r.targetUri?.endsWith('/cut'));
    expect(cut?.headers.get('warc-truncated')).toBe('disconnect');
    const meta = records.find((r) => r.type === 'metadata' && r.targetUri?.endsWith('/data.json'));
    expect(meta).toBeDefined();
    expect(readdirSync(join(out, 'warc')).some((f) => f.endsWith('.cdxj'))).toBe(true);
  });

  test('the .avro handoff file has one event per new HTML page, each pointing at its bytes', async () => {
    const events = await readHandoff(join(out, 'handoff', 'crawl.handoff.v3.avro'));
    const urls = events.map((e) => e.url).sort();
    expect(new Set(urls).size).toBe(urls.length);
    const expected = [
      `${web.origin('127.0.0.21')}/`, `${web.origin('127.0.0.21')}/a1`, `${web.origin('127.0.0.21')}/a2`, `${web.origin('127.0.0.21')}/cut`,
      `${web.origin('127.0.0.22')}/`, `${web.origin('127.0.0.22')}/b1`, `${web.origin('127.0.0.23')}/`, `${web.origin('127.0.0.23')}/c1`,
    ].sort();
    expect(urls).toEqual(expected);
    for (const e of events) {
      expect(e.change).toBe('NEW');
      expect(e.event_id).toMatch(/^[0-9a-f]{32}$/);
      const file = readFileSync(new URL(e.warc.uri));
      const rec = await readOneRecord(file, e.warc.offset, e.warc.length);
      expect(rec.type).toBe('response');
      expect(rec.targetUri).toBe(e.url);
    }
    const home = events.find((e) => e.url === `${web.origin('127.0.0.22')}/`)!;
    const body = (await readOneRecord(readFileSync(new URL(home.warc.uri)), home.warc.offset, home.warc.length)).payload.toString();
    expect(body).toBe(page('Beta home', ['/b1', 'http://127.0.0.24:1/unreachable']));
  });

  test('bad input gets one clear log line each and the crawl goes on', () => {
    const log = readFileSync(join(out, 'crawl.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const msg = (m: string): Array<Record<string, unknown>> => log.filter((l) => l.msg === m);
    expect(msg('invalid seed URL: skipped').length).toBe(1);
    expect(msg('not HTML: metadata only').some((l) => String(l.url).endsWith('/data.json'))).toBe(true);
    expect(msg('body truncated').some((l) => String(l.url).endsWith('/cut'))).toBe(true);
    expect(log.some((l) => String(l.url ?? '').includes('127.0.0.24') && /failed|robots/.test(String(l.msg)))).toBe(true);
    expect(existsSync(join(out, 'state'))).toBe(true);
  });
});
