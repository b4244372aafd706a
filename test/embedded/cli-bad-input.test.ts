/**
 * A new user's mistakes with the built CLI: each gets one clear line on stderr and exit status 1,
 * not a stack trace. Before, every error `crawl run` met before its log file was open (no valid
 * seed, a seeds file that is not there) was followed by pino's "sonic boom is not ready yet"
 * stack trace. A loopback seed without --allow-private-network is crawled as nothing; the run
 * now says which flag allows it (the SSRF guard refuses it before any connection).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../support/cli';

const crawl = (args: string[]): { status: number | null; stderr: string; stdout: string } =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRAWL_LOG_LEVEL: 'info' } });

describe('crawl run and explain with bad input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-bad-'));

  it.each([
    ['a malformed seed', ['run', '--seed', 'http://exa mple.test/', '--out', join(dir, 'a')], 'crawl: no valid seed URL (0 accepted, 1 refused (invalid-url 1))'],
    ['a seeds file that is not there', ['run', '--seeds-file', join(dir, 'missing.txt'), '--out', join(dir, 'b')], `crawl: ENOENT: no such file or directory, open '${join(dir, 'missing.txt')}'`],
    ['a file as --out', ['run', '--seed', 'http://127.0.10.61:9/', '--out', join(dir, 'afile')], `crawl: --out ${join(dir, 'afile')}: cannot keep the crawl there: a file is in the way`],
    ['explain with a folder no crawl wrote', ['explain', 'http://a.test/', '--no-robots', '--out', join(dir, 'typo')], `crawl: --out ${join(dir, 'typo')}: no crawl there`],
  ])('%s: one line on stderr, status 1', (_name, args, line) => {
    writeFileSync(join(dir, 'afile'), 'x');
    const r = crawl(args);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(line);
    expect(r.stderr).not.toMatch(/sonic boom|\n\s+at /);
  });

  it('a loopback seed without --allow-private-network: the run says which flag allows it', () => {
    const r = crawl(['run', '--seed', 'http://127.0.10.61:9/', '--out', join(dir, 'c'), '--max-secs', '5']);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('crawl run: seed http://127.0.10.61:9/ is a loopback address (127.0.10.61): the crawler refuses it unless given --allow-private-network (or --allow-cidr 127.0.10.61/32)');
    expect(r.stdout).toContain('0 pages stored');
  });
});
