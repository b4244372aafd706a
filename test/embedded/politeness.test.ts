/**
 * #3 acceptance, embedded default: `crawl run` (the built CLI) against the politeness web of
 * test/fixtures/politeness-web.ts — Crawl-delay hosts, a 429 host with Retry-After, 503-robots
 * and 404-robots hosts, a slow host, disallowed paths, on 127.0.6.10-19. Judged only from the
 * servers' own request logs. The run is stopped and started again half-way (`crawl run` resumes
 * from its journal), so the journaled host state is exercised too.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acceptanceHosts, pagesServed, PolitenessWeb } from '../fixtures/politeness-web';
import { runCli, waitFor, type CliResult } from '../support/cli';

const ENV = {
  // Short retry back-off so a 429'd or robots-503 URL comes back within the run.
  CRAWL_RETRY_BACKOFF_MS: '2000,4000',
  // A resumed run treats the stopped run's open leases as still in flight until they expire.
  CRAWL_LEASE_MS: '15000',
  CRAWL_LOG_LEVEL: 'info',
};

describe('politeness by the servers\' own logs, embedded default (#3)', () => {
  let web: PolitenessWeb;
  let first: CliResult;
  let second: CliResult;

  beforeAll(async () => {
    web = await PolitenessWeb.start(acceptanceHosts(10, 4));
    const out = mkdtempSync(join(tmpdir(), 'crawl-polite-'));
    const args = ['run', ...web.seeds().flatMap((s) => ['--seed', s]), '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '60'];
    // Stop the first run with SIGTERM once a few pages are in, then resume with the same command.
    // The resumed run is bounded by --max-secs: hosts whose robots.txt keeps answering 503 stay
    // queued (paused, not failed), so the crawl does not go idle on its own while they wait.
    const run1 = runCli(args, ENV);
    await waitFor(() => pagesServed(web.log).length >= 8, 600);
    run1.child.kill('SIGTERM');
    first = await run1.done;
    second = await runCli(args, ENV).done;
  }, 200_000);

  afterAll(async () => {
    await web?.stop();
  });

  test('both runs exit cleanly', () => {
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/crawl signal:/);
    expect(second.code).toBe(0);
  });

  test('0 breaches: gaps, Retry-After windows, 503-robots hosts, disallowed paths, concurrency', () => {
    const v = web.violations();
    if (v.length) process.stdout.write(`politeness violations:\n${v.join('\n')}\n`);
    expect(v).toEqual([]);
  });

  test('the crawl still got everything it was allowed to get', () => {
    for (const spec of web.specs()) {
      const served = new Set(pagesServed(web.requestsTo(spec.ip)).map((e) => e.path));
      const all = ['/', ...Array.from({ length: spec.pages }, (_v, i) => `/p/${i}`)];
      if (spec.kind === 'robots-503') {
        expect([spec.ip, served.size]).toEqual([spec.ip, 0]);
        expect(web.requestsTo(spec.ip).some((e) => e.path === '/robots.txt')).toBe(true);
      } else if (spec.kind === 'retry-after') {
        // The 429'd URL may still be parked for its retry when the crawl goes idle.
        expect(all.filter((p) => !served.has(p)).length).toBeLessThanOrEqual(1);
        expect(web.requestsTo(spec.ip).some((e) => e.status === 429)).toBe(true);
      } else {
        expect([spec.ip, [...served].sort()]).toEqual([spec.ip, all.sort()]);
      }
    }
  });
});
