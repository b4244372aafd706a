/**
 * Throughput against the politeness limit (#3): when CPU is not the bottleneck, a crawl should
 * reach at least 90% of what politeness allows — the sum over eligible hosts of 1 / delay.
 * Starts the politeness web (test/fixtures/politeness-web.ts: plain 1 s hosts and Crawl-delay
 * 2 s hosts, plus 503-robots hosts that are not eligible) on 127.0.6.100+, runs `crawl run` (the
 * built CLI, embedded default) over it, and measures from the servers' logs:
 *   - steady rate: page requests per second while every eligible host still had work
 *     (from the first page request to the first host's last one);
 *   - per-host rate: sum over hosts of (requests - 1) / (last - first request).
 * and checks the same log for politeness breaches (there must be none: fast but impolite is a fail).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/politeness-bench.js [--plain 12] [--delayed 4] [--pages 25]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pagesServed, PolitenessWeb, type PoliteHostSpec } from '../test/fixtures/politeness-web';
import { numberFlag } from './args';

function hosts(plain: number, delayed: number, pages: number): PoliteHostSpec[] {
  const out: PoliteHostSpec[] = [];
  let n = 100;
  for (let i = 0; i < plain; i++) out.push({ ip: `127.0.6.${n++}`, kind: 'plain', pages });
  for (let i = 0; i < delayed; i++) out.push({ ip: `127.0.6.${n++}`, kind: 'crawl-delay', crawlDelayS: 2, pages });
  out.push({ ip: `127.0.6.${n++}`, kind: 'robots-503', pages });
  return out;
}

async function main(): Promise<void> {
  const web = await PolitenessWeb.start(hosts(numberFlag('plain', 12), numberFlag('delayed', 4), numberFlag('pages', 25)));
  const out = mkdtempSync(join(tmpdir(), 'politeness-bench-'));
  const cli = join(__dirname, '..', '..', 'bin', 'crawl.js');
  const args = ['run', ...web.seeds().flatMap((s) => ['--seed', s]), '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '300'];
  const started = Date.now();
  const code = await new Promise<number | null>((resolve) => spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'inherit'] }).on('close', resolve));
  const wall = (Date.now() - started) / 1000;

  const limit = web.eligibleDelaysMs().reduce((a, d) => a + 1000 / d, 0);
  const pages = pagesServed(web.log).sort((a, b) => a.start - b.start);
  const eligible = web.specs().filter((s) => s.kind !== 'robots-503');
  const lastPerHost = eligible.map((s) => Math.max(...pages.filter((p) => p.ip === s.ip).map((p) => p.start)));
  const t0 = pages[0].start;
  const t1 = Math.min(...lastPerHost);
  const steady = pages.filter((p) => p.start >= t0 && p.start <= t1).length - 1;
  const steadyRate = steady / ((t1 - t0) / 1000);
  let perHost = 0;
  for (const s of eligible) {
    const r = pages.filter((p) => p.ip === s.ip);
    if (r.length > 1) perHost += (r.length - 1) / ((r[r.length - 1].start - r[0].start) / 1000);
  }
  const breaches = web.violations();
  await web.stop();
  const pct = (x: number): string => `${((100 * x) / limit).toFixed(1)}%`;
  process.stdout.write(
    `politeness bench: ${eligible.length} eligible hosts (${web.specs().length} in all), ${pages.length} pages in ${wall.toFixed(1)} s (exit ${code})\n` +
      `  politeness limit (sum of 1/delay): ${limit.toFixed(2)} pages/s\n` +
      `  steady rate (all hosts busy, ${((t1 - t0) / 1000).toFixed(1)} s): ${steadyRate.toFixed(2)} pages/s = ${pct(steadyRate)} of the limit\n` +
      `  per-host rate sum: ${perHost.toFixed(2)} pages/s = ${pct(perHost)} of the limit\n` +
      `  politeness breaches: ${breaches.length}${breaches.length ? '\n    ' + breaches.slice(0, 20).join('\n    ') : ''}\n`,
  );
  if (breaches.length || code !== 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
