/**
 * `npm run bench -- --only crawl-run-scale --seeds N --hosts H --secs S`: `crawl run
 * --seeds-file` with N seed URLs over H hosts (docs/frontier-store.md). Measured: peak RSS of the
 * crawl process, when the first request reaches a server, and after a kill -9 of the crawl,
 * when the same command's first request does.
 *
 * The servers: one small page for any path, on as many loopback addresses as this process may
 * open sockets for (bench/crawl-run-scale-web.ts; 18,000 with the 20,000 descriptors allowed
 * here); the seeds' other hosts refuse connections, which the crawl records as failures and
 * retries later. Seeds are `http://127.x.y.z:<port>/s/<n>-<filler>`, 60-90 characters.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launcherEnv, launcherNodeFlags } from './args';
import { parseRssParts, sample, type RssParts } from './proc-stat';
import { hostAddress } from './synthetic-web';
import { exited } from './web-process';

export interface CrawlRunScaleArgs {
  seeds: number;
  hosts: number;
  /** Seconds the first run crawls before its kill -9. */
  secs: number;
}

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'crawl.js');

interface ScaleWebHandle {
  child: ChildProcess;
  port: number;
  listening: number;
  /** Requests since the last mark, and when the first of them arrived. */
  since(): Promise<{ requests: number; firstAt: number | null }>;
  mark(): Promise<void>;
}

async function startServers(hosts: number): Promise<ScaleWebHandle> {
  const child = fork(join(__dirname, 'crawl-run-scale-web.js'), [String(hosts)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<{ port: number; listening: number }>((resolve, reject) => {
    child.once('message', (m: { port: number; listening: number }) => resolve(m));
    child.once('exit', (code) => reject(new Error(`servers exited with ${code}`)));
  });
  const ask = <T>(cmd: string): Promise<T> => new Promise((resolve) => {
    child.once('message', (m: T) => resolve(m));
    child.send({ cmd });
  });
  return { child, ...ready, since: () => ask('since'), mark: async () => void (await ask('mark')) };
}

async function writeSeeds(file: string, n: number, hosts: number, port: number): Promise<void> {
  const out = createWriteStream(file);
  const filler = 'abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz';
  let chunk = '';
  for (let i = 0; i < n; i++) {
    const h = i % hosts;
    chunk += `http://${hostAddress(h)}:${port}/s/${(i / hosts) | 0}-${filler.slice(0, 10 + (i % 31))}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
      chunk = '';
    }
  }
  out.end(chunk);
  await new Promise<void>((r) => out.once('finish', () => r()));
}

function crawl(seeds: string, out: string): { child: ChildProcess; peak: () => number; startedAt: number } {
  // With the launcher's node flags and environment: what `crawl run` gets (bin/crawl.js).
  const child = spawn(process.execPath, [...launcherNodeFlags(CLI), CLI, 'run', '--seeds-file', seeds, '--out', out, '--scope', 'any', '--allow-private-network'], {
    env: { ...process.env, ...launcherEnv(CLI), CRAWL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'ignore'],
  });
  let peak = 0;
  // The launcher execs node, so the pid is the crawler's own (null once it has exited).
  const poll = setInterval(() => (peak = Math.max(peak, sample(child.pid!)?.peakRssBytes ?? 0)), 250);
  void exited(child).then(() => clearInterval(poll));
  return { child, peak: () => peak, startedAt: Date.now() };
}

async function firstRequestAfter(web: ScaleWebHandle, limitMs: number): Promise<number | null> {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    const s = await web.since();
    if (s.firstAt !== null) return s.firstAt;
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

function rssParts(pid: number): RssParts | null {
  try {
    return parseRssParts(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return null;
  }
}

const mib = (b: number): string => `${(b / 1048576).toFixed(0)} MiB`;

export async function runCrawlRunScale(a: CrawlRunScaleArgs): Promise<string> {
  const dir = join(tmpdir(), `kcrawl-crawl-run-scale-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const web = await startServers(a.hosts);
  const rows: Array<[string, string]> = [];
  try {
    const seeds = join(dir, 'seeds.txt');
    process.stderr.write(`crawl-run-scale: writing ${a.seeds} seeds over ${a.hosts} hosts (${web.listening} listening)…\n`);
    await writeSeeds(seeds, a.seeds, a.hosts, web.port);
    rows.push(['seeds', `${a.seeds.toLocaleString('en')} over ${a.hosts.toLocaleString('en')} hosts (${web.listening.toLocaleString('en')} answering, the rest refuse connections)`]);
    const out = join(dir, 'out');
    await web.mark();
    const first = crawl(seeds, out);
    const firstAt = await firstRequestAfter(web, 120_000);
    rows.push(['first request after start', firstAt === null ? 'none within 120 s' : `${((firstAt - first.startedAt) / 1000).toFixed(1)} s`]);
    // The resident set every minute of the first run: whether it levels off or keeps growing.
    const minutes: string[] = [];
    for (let t = 60; t <= a.secs; t += 60) {
      await new Promise((r) => setTimeout(r, Math.max(0, first.startedAt + t * 1000 - Date.now())));
      const parts = rssParts(first.child.pid!);
      if (parts) minutes.push(`${t} s ${mib(parts.rss)}`);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, first.startedAt + a.secs * 1000 - Date.now())));
    const served = await web.since();
    first.child.kill('SIGKILL');
    await exited(first.child);
    rows.push([`requests in the first ${a.secs} s`, served.requests.toLocaleString('en')]);
    rows.push(['peak RSS, first run', mib(first.peak())]);
    if (minutes.length) rows.push(['RSS, first run', minutes.join('; ')]);

    await web.mark();
    const second = crawl(seeds, out);
    const againAt = await firstRequestAfter(web, 120_000);
    rows.push(['after kill -9, the same command: first request', againAt === null ? 'none within 120 s' : `${((againAt - second.startedAt) / 1000).toFixed(1)} s after start`]);
    await new Promise((r) => setTimeout(r, 20_000));
    second.child.kill('SIGTERM');
    setTimeout(() => second.child.kill('SIGKILL'), 30_000).unref();
    await exited(second.child);
    rows.push(['peak RSS, second run', mib(second.peak())]);
  } finally {
    web.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  const table = `| crawl-run-scale | |\n|---|---|\n${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}\n`;
  process.stdout.write(`\n${table}\nnode ${process.version}; reproduce: \`npm run bench -- --only crawl-run-scale --seeds ${a.seeds} --hosts ${a.hosts} --secs ${a.secs}\`\n`);
  return table;
}
