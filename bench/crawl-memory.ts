/**
 * What `crawl run`'s resident set is made of, over a run on the real-page web (a diagnostic, not
 * part of `npm run bench`):
 *
 *   node dist/bench/crawl-memory.js [--hosts 2000] [--latency 0] [--secs 40] [--every 2]
 *   node dist/bench/crawl-memory.js --samples FILE [--every 2]
 *
 * Starts the benchmark's web, runs `crawl run` over its hosts with bin/crawl.js's flags and
 * environment and bench/mem-sampler.js preloaded, and prints, every `--every` seconds: the
 * process's RSS; the event loop's V8 heap, ArrayBuffers (page bytes: parse's backlog, WARC files,
 * the text rings) and other external memory; the parse workers' heaps together; the pages
 * fetched, stored (in stored WARC files, so readable by parse) and parsed from the progress line.
 * Extra environment (CRAWL_PARSE_BACKLOG_MAX=..., say) passes through to the crawl. With
 * --samples, only reads back the samples of an earlier run (`npm run bench -- --node-flags
 * "--require=dist/bench/mem-sampler.js"` with MEM_SAMPLE_FILE set), which has no progress lines.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launcherEnv, launcherNodeFlags, numberFlag } from './args';
import { exited, seedsFile, startWeb } from './web-process';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'crawl.js');

interface Sample {
  t: number; pid: number; thread: number; rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number;
  smaps?: Record<string, number>;
}
interface Progress { t: number; fetched: number; stored: number; parsed: number }

async function main(): Promise<void> {
  const given = process.argv.indexOf('--samples');
  if (given >= 0) return report(readFileSync(process.argv[given + 1], 'utf8'), [], null, numberFlag('every', 2) * 1000, '');
  const hosts = numberFlag('hosts', 2000);
  const latency = numberFlag('latency', 0);
  const secs = numberFlag('secs', 40);
  const every = numberFlag('every', 2) * 1000;
  const dir = mkdtempSync(join(tmpdir(), 'crawl-memory-'));
  const samples = join(dir, 'samples.jsonl');
  const web = await startWeb(hosts, latency);
  const args = [
    ...launcherNodeFlags(CLI), '-r', join(__dirname, 'mem-sampler.js'), CLI, 'run', '--seeds-file', seedsFile(dir, hosts, web.port),
    '--out', join(dir, 'out'), '--scope', 'any', '--allow-private-network', '--max-secs', String(secs),
  ];
  const start = Date.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...launcherEnv(CLI), CRAWL_LOG_LEVEL: 'warn', MEM_SAMPLE_FILE: samples },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const progress: Progress[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    const m = /fetched (\d+), stored (\d+), parsed (\d+),/.exec(line);
    if (m) progress.push({ t: Date.now(), fetched: Number(m[1]), stored: Number(m[2]), parsed: Number(m[3]) });
    else if (line.trim()) process.stderr.write(`crawl: ${line}\n`);
  });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  await exited(child);
  web.child.kill();
  report(readFileSync(samples, 'utf8'), progress, start, every, stdout);
  rmSync(dir, { recursive: true, force: true });
}

/** The table, from the samples (JSON lines) and the progress lines; `start`: when the crawl was started (null: its first sample). */
function report(lines: string, progress: readonly Progress[], started: number | null, every: number, stdout: string): void {
  const all = lines.trim().split('\n').map((l) => JSON.parse(l) as Sample);
  const main = all.filter((s) => s.thread === 0);
  const start = started ?? main[0].t;
  const stopAt = progress.length ? progress[progress.length - 1].t : Infinity;
  process.stdout.write('  s  | rss  | anon | loop heap (used) | loop AB | loop ext-AB | workers heap | fetched stored parsed | stored-parsed\n');
  let next = start;
  let peak = main[0];
  for (const s of main) {
    if (s.rss > peak.rss) peak = s;
    if (s.t < next && s !== main[main.length - 1]) continue;
    next = s.t + every;
    process.stdout.write(`${row(s, all, progress, start)}${s.t > stopAt ? '  (stopping)' : ''}\n`);
  }
  process.stdout.write(`peak:\n${row(peak, all, progress, start)}${peak.t > stopAt ? '  (stopping)' : ''}\n`);
  if (stdout) process.stdout.write(stdout.split('\n').slice(0, 3).join('\n') + '\n');
}

/** One sample of the event loop with the workers' latest samples before it and the progress line before it. */
function row(s: Sample, all: readonly Sample[], progress: readonly Progress[], start: number): string {
  const workers = new Map<number, number>();
  for (const w of all) if (w.thread !== 0 && w.t <= s.t && w.t > s.t - 2500) workers.set(w.thread, w.heapTotal);
  const p = [...progress].reverse().find((x) => x.t <= s.t) ?? { fetched: 0, stored: 0, parsed: 0 };
  const wsum = [...workers.values()].reduce((a, b) => a + b, 0);
  return `${String(Math.round((s.t - start) / 1000)).padStart(4)} | ${String(s.rss).padStart(4)} | ${String(s.smaps?.Anonymous ?? 0).padStart(4)} | ${String(s.heapTotal).padStart(5)} (${String(s.heapUsed).padStart(4)})     | ${String(s.arrayBuffers).padStart(7)} | ${String(s.external - s.arrayBuffers).padStart(11)} | ${String(wsum).padStart(5)} (${workers.size})    | ${String(p.fetched).padStart(7)} ${String(p.stored).padStart(6)} ${String(p.parsed).padStart(6)} | ${String(p.stored - p.parsed).padStart(6)}`;
}

void main();
