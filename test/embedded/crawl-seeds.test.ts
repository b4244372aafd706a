/**
 * `crawl run --seeds-file -`: the seed list read from standard input through the same streaming
 * reader as `crawl seed --file` (lib/seed-source.ts), with the --seed arguments first. Refused
 * lines are told with their line number and counted by reason in the summary; a URL without a
 * scheme is taken as https://, and the crawler says so.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixtureWeb, page } from '../fixtures/web';
import { CLI } from '../support/cli';

const IPS = ['127.0.11.10', '127.0.11.11'];

describe('crawl run --seeds-file - (standard input)', () => {
  let web: FixtureWeb;
  const out = mkdtempSync(join(tmpdir(), 'crawl-seeds-'));
  let result: { code: number | null; stdout: string; stderr: string };

  beforeAll(async () => {
    web = await FixtureWeb.start(IPS.map((ip) => ({ ip, pages: { '/': page(`Home ${ip}`, ['/a']), '/a': page(`A of ${ip}`, []) } })));
    const list = ['# seeds from stdin', `${web.origin(IPS[1])}/`, '', 'ftp://files.example/x', 'ht tp://broken.example/', `${web.origin(IPS[1])}/a`].join('\n');
    const child = spawn(process.execPath, [CLI, 'run', '--seed', `${web.origin(IPS[0])}/`, '--seeds-file', '-', '--out', out, '--allow-private-network', '--scope', 'host', '--max-secs', '30'], {
      env: { ...process.env, CRAWL_MIN_HOST_DELAY_MS: '100' }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin!.end(list);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    result = { code, stdout, stderr };
  });

  afterAll(async () => {
    await web?.stop();
    rmSync(out, { recursive: true, force: true });
  });

  test('crawls the argument and the listed seeds, within their hosts', () => {
    expect(result.code).toBe(0);
    for (const ip of IPS) {
      const paths = web.requestsTo(web.origin(ip)).map((r) => r.path);
      expect(paths).toEqual(expect.arrayContaining(['/', '/a']));
    }
    expect(result.stdout).toMatch(/crawl done: 4 pages stored/);
  });

  test('counts refused lines by reason, and tells each with its line', () => {
    expect(result.stdout).toContain('  seeds: 3 accepted, 2 refused (unsupported-scheme 1, invalid-url 1)\n');
    expect(result.stderr).toContain('crawl run: line 4: refused "ftp://files.example/x": unsupported-scheme (ftp)');
    expect(result.stderr).toContain('crawl run: line 5: refused "ht tp://broken.example/": invalid-url');
    const log = readFileSync(join(out, 'crawl.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(log.filter((l) => l.msg === 'invalid seed URL: skipped').map((l) => l.line)).toEqual([4, 5]);
  });
});

describe('crawl run --seed without a scheme', () => {
  test('takes https:// and says so', async () => {
    const out = mkdtempSync(join(tmpdir(), 'crawl-seeds-https-'));
    try {
      // A loopback port nothing listens on: one refused connection, and the crawl ends.
      const child = spawn(process.execPath, [CLI, 'run', '--seed', '127.0.11.12:1/x', '--allow-private-network', '--out', out, '--max-secs', '20'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0);
      expect(stderr).toContain('crawl run: no scheme in "127.0.11.12:1/x": taken as https://127.0.11.12:1/x');
      expect(stdout).toContain('  seeds: 1 accepted, 0 refused; 1 without a scheme taken as https://\n');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
