/**
 * Per-host request gaps against the policy, from the servers' own logs (PolitenessWeb), in
 * Kafka mode (`crawl process seen-test parse handoff` + `crawl process frontier` + `crawl
 * process fetch` on the stack the environment names, a topic prefix of its own) or the embedded
 * default (`crawl run`). The web: Crawl-delay 2 s hosts and plain (1 s) hosts on 127.0.7.100+,
 * each a home page linking its pages. A gap is the next page request's arrival minus the
 * previous page's end (the policy's measure); the home page and robots.txt are left out, so the
 * figures are the steady pace, not link discovery.
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json
 *   node dist/bench/politeness-gaps.js --mode kafka|embedded [--delayed 5] [--plain 5] [--pages 15]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pagesServed, PolitenessWeb, type PoliteHostSpec, type PoliteLogEntry } from '../test/fixtures/politeness-web';
import { CLI, sleep, waitFor } from '../test/support/cli';
import { cliSync, CrawlProcess, stackEnv, uniquePrefix } from '../test/support/kafka-stack';
import { numberFlag } from './args';

function hosts(delayed: number, plain: number, pages: number): PoliteHostSpec[] {
  const out: PoliteHostSpec[] = [];
  let n = 100;
  for (let i = 0; i < delayed; i++) out.push({ ip: `127.0.7.${n++}`, kind: 'crawl-delay', crawlDelayS: 2, pages });
  for (let i = 0; i < plain; i++) out.push({ ip: `127.0.7.${n++}`, kind: 'plain', pages });
  return out;
}

/** Page-to-page gaps (arrival - previous end) of one host, in arrival order. */
export function pageGaps(reqs: readonly PoliteLogEntry[]): number[] {
  const pages = reqs.filter((r) => r.path.startsWith('/p/')).sort((a, b) => a.start - b.start);
  return pages.slice(1).map((r, i) => r.start - pages[i].end);
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(gaps: number[]): string {
  const s = [...gaps].sort((a, b) => a - b);
  if (s.length === 0) return 'no gaps';
  return `n=${s.length} min ${s[0]} p10 ${pct(s, 10)} median ${pct(s, 50)} p90 ${pct(s, 90)} max ${s[s.length - 1]} ms`;
}

async function crawlKafka(web: PolitenessWeb, expected: number): Promise<void> {
  const env = stackEnv(uniquePrefix('gaps'), { CRAWL_WARC_MAX_AGE_MS: '2000' });
  cliSync(['init'], env);
  const procs = [new CrawlProcess(['seen-test', 'parse', 'handoff'], env), new CrawlProcess(['frontier'], env), new CrawlProcess(['fetch'], env)];
  try {
    if (!(await waitFor(() => procs.every((p) => p.logged('processors running')), 1800))) throw new Error('processes did not start');
    cliSync(['seed', ...web.seeds()], env);
    if (!(await waitFor(() => pagesServed(web.log).length >= expected, 3000))) process.stderr.write('crawl did not finish in 300 s\n');
    await sleep(1000);
  } finally {
    for (const p of procs) await p.stop();
    const logs = process.env.GAPS_LOG_DIR;
    if (logs) procs.forEach((p, i) => writeFileSync(join(logs, `proc-${i}.log`), p.stderr));
  }
}

async function crawlEmbedded(web: PolitenessWeb): Promise<void> {
  const out = mkdtempSync(join(tmpdir(), 'politeness-gaps-'));
  const args = ['run', ...web.seeds().flatMap((s) => ['--seed', s]), '--out', out, '--allow-private-network', '--scope', 'any', '--max-secs', '300'];
  await new Promise((resolve) => spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'inherit'] }).on('close', resolve));
}

async function main(): Promise<void> {
  const mode = process.argv.includes('--mode') ? process.argv[process.argv.indexOf('--mode') + 1] : 'kafka';
  const pages = numberFlag('pages', 15);
  const web = await PolitenessWeb.start(hosts(numberFlag('delayed', 5), numberFlag('plain', 5), pages));
  const expected = web.specs().length * (pages + 1);
  const started = Date.now();
  try {
    if (mode === 'embedded') await crawlEmbedded(web);
    else await crawlKafka(web, expected);
  } finally {
    await web.stop();
  }
  const wall = (Date.now() - started) / 1000;
  process.stdout.write(`politeness gaps (${mode}): ${pagesServed(web.log).length}/${expected} pages in ${wall.toFixed(1)} s, ${web.violations().length} breaches\n`);
  for (const kind of ['crawl-delay', 'plain'] as const) {
    const specs = web.specs().filter((s) => s.kind === kind);
    const gaps = specs.flatMap((s) => pageGaps(web.requestsTo(s.ip)));
    process.stdout.write(`  ${kind} (${specs.length} hosts): ${summary(gaps)}\n`);
  }
  if (process.argv.includes('--raw')) {
    for (const s of web.specs()) process.stdout.write(`  ${s.ip} ${s.kind}: ${pageGaps(web.requestsTo(s.ip)).join(' ')}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
