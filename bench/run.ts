/**
 * `npm run bench`: kcrawl (embedded default and Kafka mode) and a peer crawler (Crawlee) on the
 * same web of thousands of loopback hosts, one after another in one invocation, each for a
 * bounded time. The web is made of real pages (bench/real-web.ts: the corpus templates of
 * shared/corpus/realpages, their text made distinct per page) unless `--web lorem` asks for the
 * lorem-ipsum micro-benchmark. Prints the per-stage CPU a page (bench/stage-cpu.ts), the served
 * pages' SimHash distances (bench/web-check.ts), then a markdown table: pages/s, CPU ms per page
 * (user + sys of every process involved), peak RSS, and the politeness the servers saw, with
 * ratios against the peer.
 *
 *   npm run bench -- [--only embedded,kafka,peer] [--web real|lorem] [--hosts 5000] [--latency 0,200]
 *                    [--secs 20] [--max-pages N] [--concurrency 256] [--profile DIR] [--json FILE]
 *                    [--kafka-procs parse,handoff,seen-test/frontier,fetch] [--node-flags "--flag …"]
 *                    [--warmup 15] [--stages 64] [--crawler-stdout DIR] [--help]
 *
 * Besides the whole window (first page served to last), each run is also measured sustained:
 * from --warmup seconds after its first page to its stop (bench/sustained.ts), pages done and
 * CPU used in that part only, printed as a second table.
 *
 * Kafka mode runs as the processes --kafka-procs lists (by default two: `crawl process parse
 * handoff seen-test` and `crawl process frontier fetch`) and needs the local stack
 * (`bash stack/stack.sh up`); without CRAWL_KAFKA_BROKERS (`eval "$(bash stack/stack.sh env)"`)
 * its part is left out with a note printed above the table, and `--only kafka` is an error.
 * kcrawl's processes get the Node flags of bin/crawl.js's launcher line (as on this machine),
 * then --node-flags.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { kafkaPlan, parseBenchArgs, launcherEnv, launcherNodeFlags, USAGE, type BenchArgs } from './args';
import { runCrawlRunScale } from './crawl-run-scale';
import { runFrontierScale } from './frontier-scale';
import { connectKafka, groupBacklog, type Admin } from '../connectors/kafka';
import { topics, type TopicId } from '../topologies/crawl';
import { ProcWatch, reapedChildrenCpuMs, sample } from './proc-stat';
import { cpuMsPerPage, kcrawlHostPeriodMs, markdownTable, sustainedTable, throughputLimit, type RunResult } from './report';
import { growthBetween, pagesBetweenSeconds, sustainedBounds, stealShare, sustainedCpuMsPerPage, type Point, type SustainedWindow } from './sustained';
import { parserFloorMs, parserFloorMsOver } from './parser-floor';
import { templatePages } from './corpus';
import { pageOfTemplate, prepareTemplate } from './real-web';
import { stageCpu, stageTable } from './stage-cpu';
import { fillerHtml, pageHtml, PAGE_BYTES, type PolitenessSummary } from './synthetic-web';
import { distanceLine, servedDistances } from './web-check';
import { exited, seedsFile, startWeb, type Web } from './web-process';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'crawl.js');
/** The crawler runs with its own Node flags, as `npx crawl` runs it (bin/crawl.js's launcher line). */
const CLI_FLAGS = launcherNodeFlags(CLI);
/** And the environment it sets (MALLOC_ARENA_MAX, unless the bench's own environment sets it). */
const CLI_ENV = launcherEnv(CLI);

/** Node's arguments before the script for a kcrawl process: its own flags, --node-flags, and a CPU profile if asked. */
function crawlerNodeArgs(a: BenchArgs): string[] {
  return [...CLI_FLAGS, ...a.nodeFlags, ...(a.profile ? ['--cpu-prof', `--cpu-prof-dir=${a.profile}`] : [])];
}
const CORES = 2;

/** Run a crawler child to its end; its CPU is exact (reaped children's times), its peak RSS polled. */
async function measureChild(child: ChildProcess, cpuBefore: number, watch: ProcWatch, stopAfterMs?: number, beforeStop?: () => Promise<void>): Promise<{ cpuMs: number; peakRssBytes: number; stdout: string }> {
  let stdout = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  watch.add(child.pid!);
  // SIGTERM at the time limit; SIGKILL if stopping takes more than 15 s more (a bounded bench).
  const stop = (): void => void (beforeStop ?? (async () => undefined))().finally(() => child.kill('SIGTERM'));
  const timers = stopAfterMs ? [setTimeout(stop, stopAfterMs), setTimeout(() => child.kill('SIGKILL'), stopAfterMs + 20_000)] : [];
  await exited(child);
  timers.forEach(clearTimeout);
  const peakRssBytes = watch.peakRssBytes([child.pid!]);
  return { cpuMs: reapedChildrenCpuMs() - cpuBefore, peakRssBytes, stdout };
}

function fromStats(s: PolitenessSummary | undefined): Pick<RunResult, 'pages' | 'windowSecs' | 'gapViolations' | 'concurrencyViolations' | 'minGapMs' | 'connections' | 'pagesBySecond'> {
  if (!s) return { pages: 0, windowSecs: 0, gapViolations: 0, concurrencyViolations: 0, minGapMs: null };
  return {
    pages: s.pages, windowSecs: (s.lastPageAt - s.firstPageAt) / 1000, gapViolations: s.gapViolations,
    concurrencyViolations: s.concurrencyViolations, minGapMs: s.minGapMs, connections: s.connections, pagesBySecond: s.pagesBySecond,
  };
}

/** The sustained window's figures: `pages` done in it, CPU of `pids` and of the web server in it. */
function sustainedWindow(bounds: { from: number; to: number }, pages: number, watch: ProcWatch, pids: readonly number[], web: Web, firstPageAt: number): SustainedWindow {
  return {
    fromSec: (bounds.from - firstPageAt) / 1000, secs: (bounds.to - bounds.from) / 1000, pages,
    cpuMs: watch.cpuMsBetween(pids, bounds.from, bounds.to), webCpuMs: watch.cpuMsBetween([web.child.pid!], bounds.from, bounds.to),
    stealMs: watch.stealMsBetween(bounds.from, bounds.to),
  };
}

/** Records of a topic written from `from` to before `to` (by their timestamps: the producer's clock, this machine's). */
async function recordsBetween(admin: Admin, topic: string, from: number, to: number): Promise<number> {
  const [first, end] = await Promise.all([admin.fetchTopicOffsetsByTimestamp(topic, from), admin.fetchTopicOffsetsByTimestamp(topic, to)]);
  return end.reduce((sum, o) => sum + Number(o.offset) - Number(first.find((f) => f.partition === o.partition)?.offset ?? o.offset), 0);
}

async function runEmbedded(a: BenchArgs, web: Web, latencyMs: number, dir: string): Promise<RunResult> {
  const out = join(dir, `embedded-${latencyMs}`);
  const nodeArgs = crawlerNodeArgs(a);
  const args = [...nodeArgs, CLI, 'run', '--seeds-file', seedsFile(dir, a.hosts, web.port), '--out', out, '--scope', 'any', '--allow-private-network', '--max-secs', String(a.secs)];
  if (a.maxPages) args.push('--max-pages', String(a.maxPages));
  web.reset();
  const watch = new ProcWatch();
  watch.add(web.child.pid!, true);
  const before = reapedChildrenCpuMs();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...CLI_ENV, CRAWL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  // `crawl run`'s progress line (stderr, once a second) says how many pages it has parsed.
  const parsedSoFar: Point[] = [];
  const fetchedSoFar: Point[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    const n = /, parsed (\d+),/.exec(line)?.[1];
    if (n !== undefined) parsedSoFar.push({ at: Date.now(), value: Number(n) });
    const f = /, fetched (\d+),/.exec(line)?.[1];
    if (f !== undefined) fetchedSoFar.push({ at: Date.now(), value: Number(f) });
  });
  // The crawl stops itself at --max-secs and then parses what it has fetched: on real pages a
  // backlog of thousands of pages, a minute of work on a loaded machine. SIGTERM only after that.
  const m = await measureChild(child, before, watch, (a.secs + 120) * 1000);
  watch.stop();
  const s = (await web.stats()).kcrawl;
  // The window ends at the last progress line (at most a second before the stop), where the
  // count of pages parsed is known exactly.
  const bounds = s && parsedSoFar.length > 1 ? sustainedBounds(s.firstPageAt, Math.min(s.lastPageAt, parsedSoFar[parsedSoFar.length - 1].at), a.warmupSecs) : null;
  const sustained = bounds ? sustainedWindow(bounds, growthBetween(parsedSoFar, bounds.from, bounds.to), watch, [child.pid!], web, s!.firstPageAt) : undefined;
  if (sustained && bounds) sustained.fetched = growthBetween(fetchedSoFar, bounds.from, bounds.to);
  rmSync(out, { recursive: true, force: true });
  if (a.crawlerStdout) {
    mkdirSync(a.crawlerStdout, { recursive: true });
    writeFileSync(join(a.crawlerStdout, `embedded-${latencyMs}.stdout`), m.stdout);
  }
  const handedOff = Number(/(\d+) handoff events/.exec(m.stdout)?.[1] ?? 0);
  const parsed = Number(/(\d+) parsed/.exec(m.stdout)?.[1] ?? 0);
  // Pages parse finished only while the crawl was stopping do not count in pages/s (as in Kafka mode).
  const byStop = /(\d+) before stopping/.exec(m.stdout)?.[1];
  const parsedInWindow = byStop === undefined ? undefined : Number(byStop);
  return { contender: 'embedded', latencyMs, hosts: a.hosts, ...fromStats(s), handedOff, parsed, parsedInWindow, cpuMs: m.cpuMs, serviceCpuMs: 0, peakRssBytes: m.peakRssBytes, limitPagesPerSec: null, sustained };
}

/** The local stack's services that are running, by name, with their process ids (its pidfiles: CRAWL_STACK_DIR as stack/stack.sh reads it). */
function servicePids(): Array<{ name: string; pid: number }> {
  const pids: Array<{ name: string; pid: number }> = [];
  const stackDir = process.env.CRAWL_STACK_DIR ?? join(ROOT, '.stack');
  for (const name of ['kafka', 'redis', 's3', 'registry']) {
    try {
      pids.push({ name, pid: Number(readFileSync(join(stackDir, 'run', `${name}.pid`), 'utf8').trim()) });
    } catch {
      // a service the stack does not run
    }
  }
  return pids;
}

async function runKafka(a: BenchArgs, web: Web, latencyMs: number, dir: string): Promise<RunResult> {
  const prefix = `bench-${randomBytes(4).toString('hex')}.`;
  // WARC files closed every 2 s as `crawl run` does (the 30 s default would hold every page
  // back from parse for longer than a bench run lasts).
  const env = { ...process.env, ...CLI_ENV, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_LOG_LEVEL: 'warn', CRAWL_WARC_MAX_AGE_MS: process.env.CRAWL_WARC_MAX_AGE_MS ?? '2000' };
  const seeds = readFileSync(seedsFile(dir, a.hosts, web.port), 'utf8').split('\n').filter(Boolean);
  for (const cmd of [['init'], ['seed', ...seeds]]) {
    const r = spawnSync(process.execPath, [CLI, ...cmd], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`crawl ${cmd[0]} failed: ${r.stderr}`);
  }
  web.reset();
  const watch = new ProcWatch();
  watch.add(web.child.pid!, true);
  const named = servicePids();
  const services = named.map((n) => n.pid);
  for (const pid of services) watch.add(pid, true);
  const before = reapedChildrenCpuMs();
  const nodeArgs = crawlerNodeArgs(a);
  // Kafka mode as it is meant to be deployed: several `crawl process` processes, split by
  // --kafka-procs. The one with fetch is stopped at the time limit; the others right after.
  const proc = (names: string[], stdout: 'pipe' | 'ignore'): ChildProcess =>
    spawn(process.execPath, [...nodeArgs, CLI, 'process', ...names, '--allow-private-network'], { env, stdio: ['ignore', stdout, 'inherit'] });
  const fetcherNames = a.kafkaProcs.find((p) => p.includes('fetch'))!;
  const others = a.kafkaProcs.filter((p) => p !== fetcherNames).map((names) => proc(names, 'ignore'));
  const child = proc(fetcherNames, 'pipe');
  for (const o of others) watch.add(o.pid!);
  // Pages parse had finished when the crawl was told to stop: the throughput; parsing that
  // catches up while the processes stop still counts in CPU per page, not in pages/s.
  let parsedInWindow: number | undefined;
  const [m] = await Promise.all([
    measureChild(child, before, watch, a.secs * 1000, async () => {
      parsedInWindow = await withAdmin((admin) => topicRecords(admin, prefix, topics.parsed.name)).catch(() => undefined);
      for (const o of others) {
        o.kill('SIGTERM');
        setTimeout(() => o.kill('SIGKILL'), 20_000).unref();
      }
    }),
    ...others.map(exited),
  ]);
  // Every process has exited and been reaped: the CPU of all of them.
  m.cpuMs = reapedChildrenCpuMs() - before;
  m.peakRssBytes = watch.peakRssBytes([child.pid!, ...others.map((o) => o.pid!)]);
  watch.stop();
  const serviceCpuMs = watch.cpuMs(services);
  process.stderr.write(`  services' CPU: ${named.map((n) => `${n.name} ${(watch.cpuMs([n.pid]) / 1000).toFixed(1)} s`).join(', ')}\n`);
  const s = (await web.stats()).kcrawl;
  const bounds = s ? sustainedBounds(s.firstPageAt, s.lastPageAt, a.warmupSecs) : null;
  // Pages parse finished in the window: crawl.parsed records by their timestamps.
  const parsedIn = bounds
    ? await withAdmin((admin) => recordsBetween(admin, prefix + topics.parsed.name, bounds.from, bounds.to)).catch(() => undefined)
    : undefined;
  const sustained = bounds && parsedIn !== undefined ? sustainedWindow(bounds, parsedIn, watch, [child.pid!, ...others.map((o) => o.pid!), ...services], web, s!.firstPageAt) : undefined;
  return {
    contender: 'kafka', latencyMs, hosts: a.hosts, ...fromStats(s), ...(await topologyCounts(prefix)), parsedInWindow, cpuMs: m.cpuMs + serviceCpuMs, serviceCpuMs,
    peakRssBytes: m.peakRssBytes, limitPagesPerSec: null, note: `services ${(serviceCpuMs / 1000).toFixed(1)} s CPU`, sustained,
  };
}

/** Each stage's consumer group and its main input (what it has left undone at the stop). */
const STAGE_INPUTS: ReadonlyArray<readonly [string, TopicId]> = [['seen-test', 'links'], ['frontier', 'frontier'], ['fetch', 'fetch'], ['parse', 'fetched'], ['handoff', 'parsed']];

/** Records in one of the run's topics now. */
async function topicRecords(admin: Admin, prefix: string, topic: string): Promise<number> {
  return (await admin.fetchTopicOffsets(prefix + topic)).reduce((sum, o) => sum + Number(o.high) - Number(o.low), 0);
}

async function withAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = connectKafka({ brokers: process.env.CRAWL_KAFKA_BROKERS!.split(',') }).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Records in the run's parsed and handoff topics (pages through parse, and through the whole topology); then its topics are deleted. */
async function topologyCounts(prefix: string): Promise<{ parsed: number; handedOff: number }> {
  return withAdmin(async (admin) => {
    // Pages parsed per partition: a runner that favours some partitions starves their hosts' neighbours.
    const perPartition = (await admin.fetchTopicOffsets(prefix + topics.parsed.name)).sort((x, y) => x.partition - y.partition).map((o) => Number(o.high) - Number(o.low));
    const counts = { parsed: perPartition.reduce((a, b) => a + b, 0), handedOff: await topicRecords(admin, prefix, topics.handoff.name) };
    // What each stage had not yet done when the crawl stopped: a stage that falls behind leaves
    // work undone that pages/s does not pay for (the frontier's candidates, above all).
    const behind = await Promise.all(STAGE_INPUTS.map(async ([stage, topic]) => {
      const { lag, end } = await groupBacklog(admin, `${prefix}crawl.${stage}`, prefix + topics[topic].name);
      return `${stage} ${lag} of ${end} ${topics[topic].name}`;
    }));
    process.stderr.write(`  behind at the stop: ${behind.join(', ')}\n`);
    process.stderr.write(`  pages parsed per partition: ${perPartition.join(' ')} (fewest ${Math.min(...perPartition)}, most ${Math.max(...perPartition)})\n`);
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    // Records per topic, per page parsed: what messaging costs a page.
    const per = await Promise.all(mine.sort().map(async (t) => [t.slice(prefix.length), await topicRecords(admin, '', t)] as const));
    const total = per.reduce((sum, [, n]) => sum + n, 0);
    process.stderr.write(`  records per page parsed: ${(total / Math.max(counts.parsed, 1)).toFixed(1)} (${per.map(([t, n]) => `${t} ${(n / Math.max(counts.parsed, 1)).toFixed(1)}`).join(', ')})\n`);
    // The run's topics are of no further use: leave the shared broker as it was.
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    return counts;
  });
}

async function runPeer(a: BenchArgs, web: Web, latencyMs: number, dir: string): Promise<RunResult> {
  web.reset();
  const watch = new ProcWatch();
  watch.add(web.child.pid!, true);
  const before = reapedChildrenCpuMs();
  const args = [join(__dirname, 'peer-crawlee.js'), seedsFile(dir, a.hosts, web.port, true), String(a.concurrency), String(a.secs), String(a.maxPages ?? 1e9)];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, CRAWLEE_STORAGE_DIR: join(dir, 'crawlee'), CRAWLEE_PERSIST_STORAGE: 'false' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const m = await measureChild(child, before, watch, (a.secs + 20) * 1000);
  watch.stop();
  const s = (await web.stats()).peer;
  // Crawlee parses each page inside its request handler: every page fetched is a page processed.
  const bounds = s ? sustainedBounds(s.firstPageAt, s.lastPageAt, a.warmupSecs) : null;
  const sustained = bounds ? sustainedWindow(bounds, pagesBetweenSeconds(s!.pagesBySecond, (bounds.from - s!.firstPageAt) / 1000, (bounds.to - s!.firstPageAt) / 1000), watch, [child.pid!], web, s!.firstPageAt) : undefined;
  return { contender: 'peer', latencyMs, hosts: a.hosts, ...fromStats(s), handedOff: s?.pages ?? 0, cpuMs: m.cpuMs, serviceCpuMs: 0, peakRssBytes: m.peakRssBytes, limitPagesPerSec: null, sustained };
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const a = parseBenchArgs(process.argv.slice(2));
  const kafka = kafkaPlan(a, process.env.CRAWL_KAFKA_BROKERS);
  a.only = kafka.only;
  if (kafka.note) process.stderr.write(`${kafka.note}\n`);
  // The scale runs (docs/frontier-store.md) stand apart from the contenders' table.
  if (a.only.includes('frontier-scale')) await runFrontierScale({ urls: a.urls, leaseSecs: a.leaseSecs, partitions: a.partitions, dir: a.keep, rebuildOnly: a.rebuildOnly, restartOnly: a.restartOnly, hosts: a.hostsGiven ? a.hosts : undefined, profile: a.profile });
  if (a.only.includes('crawl-run-scale')) await runCrawlRunScale({ seeds: a.seeds, hosts: a.hosts, secs: a.secs });
  a.only = a.only.filter((p) => p !== 'frontier-scale' && p !== 'crawl-run-scale');
  if (a.only.length === 0) return;
  const dir = join(tmpdir(), `kcrawl-bench-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  if (a.profile) mkdirSync(a.profile, { recursive: true });
  const results: RunResult[] = [];
  // The parser's floor on one page of this web, right before and right after each contender
  // (their mean divides its CPU per page): this machine's speed moves from day to day and,
  // by up to half, within one invocation of the benchmark.
  // On the real-page web, over one page of each template (the web picks templates evenly).
  const templates = a.web === 'real' ? templatePages().map(prepareTemplate) : [];
  const floorPages = a.web === 'real'
    ? templates.map((_, i) => pageOfTemplate(templates, i, 0, a.hosts, 8080).page.toString('utf8'))
    : [pageHtml(0, 1, a.hosts, 8080, fillerHtml(PAGE_BYTES))];
  const floorOf = (): number => (a.web === 'real' ? parserFloorMsOver(floorPages) : parserFloorMs(floorPages[0]));
  const floorBytes = floorPages.reduce((n, p) => n + Buffer.byteLength(p), 0) / floorPages.length;
  const floors: number[] = [];
  const notes: string[] = kafka.note ? [kafka.note] : [];
  if (a.web === 'real') {
    notes.push(`web: real pages, ${templates.length} templates of shared/corpus/realpages (bench/corpus.ts), ${(templates.reduce((n, t) => n + t.bytes.length, 0) / templates.length / 1024).toFixed(0)} KiB on average, text made distinct per page (bench/real-web.ts)`);
    notes.push(distanceLine(servedDistances(templates, a.hosts, 30, 10)));
  } else {
    notes.push('web: LOREM IPSUM micro-benchmark (--web lorem): 50 KiB pages of one repeated block, not the web a crawler meets');
  }
  for (const latencyMs of a.latencies) {
    process.stderr.write(`starting ${a.hosts} hosts at ${latencyMs} ms latency…\n`);
    const web = await startWeb(a.hosts, latencyMs, undefined, a.web);
    try {
      // Per-stage CPU once, on the first web with 0 ms responses (before any contender: the stats are reset for each).
      if (a.stageHosts > 0 && latencyMs === 0 && !notes.some((n) => n.startsWith('Per stage'))) {
        process.stderr.write(`  per-stage CPU over ${a.stageHosts} hosts…\n`);
        notes.push(stageTable(await stageCpu(web.port, Math.min(a.stageHosts, a.hosts))));
      }
      for (const part of a.only) {
        process.stderr.write(`  ${part}: ${a.secs} s…\n`);
        const floorBefore = floorOf();
        const webBefore = sample(web.child.pid!)?.cpuMs;
        const r = part === 'embedded' ? await runEmbedded(a, web, latencyMs, dir) : part === 'kafka' ? await runKafka(a, web, latencyMs, dir) : await runPeer(a, web, latencyMs, dir);
        const webAfter = sample(web.child.pid!)?.cpuMs;
        if (webBefore !== undefined && webAfter !== undefined) r.webCpuMs = webAfter - webBefore;
        const floorAfter = floorOf();
        r.parserFloorMs = (floorBefore + floorAfter) / 2;
        floors.push(floorBefore, floorAfter);
        // The CPU limit from this run's own CPU per page; the politeness limit from its own rule.
        const period = r.contender === 'peer' ? latencyMs + 1000 : kcrawlHostPeriodMs(latencyMs);
        r.limitPagesPerSec = throughputLimit(cpuMsPerPage(r), CORES, a.hosts, period);
        if (r.sustained) {
          const cpp = sustainedCpuMsPerPage(r.sustained);
          const steal = stealShare(r.sustained, CORES);
          r.sustained.limitPagesPerSec = throughputLimit(cpp, CORES, a.hosts, period);
          if (steal !== null) r.sustained.limitNetOfStealPagesPerSec = throughputLimit(cpp, CORES * (1 - steal), a.hosts, period);
        }
        results.push(r);
        process.stderr.write(`  ${JSON.stringify(r)}\n`);
      }
    } finally {
      web.child.disconnect();
      await exited(web.child);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  if (a.json) writeFileSync(a.json, JSON.stringify(results, null, 2));
  const cmd = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
  const floorLine = floors.length
    ? `parser floor (CPU time of a bare parse5 SAX pass over ${floorPages.length === 1 ? 'one page' : `one page of each of the ${floorPages.length} templates, mean`} of this web, ${(floorBytes / 1024).toFixed(1)} KiB, before and after each contender): ${Math.min(...floors).toFixed(3)}–${Math.max(...floors).toFixed(3)} ms`
    : 'parser floor: not measured (no contender ran)';
  process.stdout.write(`\n${notes.join('\n\n')}\n\n${markdownTable(results, CORES)}\n\nSustained: from ${a.warmupSecs} s after each run's first page to its stop.\n\n${sustainedTable(results, CORES)}\n\n${floorLine}\nnode ${process.version}, ${CORES} cores; reproduce: \`${cmd}\`\n`);
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
