/**
 * `npm run bench -- --only frontier-scale --urls N`: the frontier at scale (docs/frontier-store.md).
 * N distinct URLs of 60-120 characters over min(1M, N/50) hosts of Zipf sizes, the largest a
 * tenth of N (bench/frontier-scale-web.ts), go through seen-test into one frontier process (one
 * partition; bench/frontier-scale-child.ts). Measured, one after another:
 *   1. intake: URLs/s into the table, leases held back; peak RSS of the whole run, and the
 *      resident set by kind (file-backed; V8 heap, Buffers, C heap) as the table grows;
 *   2. lease throughput with the N rows in the table (a stand-in fetcher answers each lease at
 *      once; the politeness code is the crawl's own), then kill -9;
 *   3. restart after kill -9: time from the process's start to its first lease;
 *   4. store deleted: rebuilt from the changelog (the journal's crawl.urls), rows/s, and the
 *      first lease after it.
 * Disk bytes per URL: the store's folder and the changelog's, after the intake.
 * `--keep DIR --rebuild-only` runs step 4 alone on a kept run's journal (an A/B of the rebuild).
 * `--keep DIR --restart-only` runs step 3 alone on a kept run's store and journal: a process
 * restores, leases for a few seconds (so the state killed is a live one: leases in flight,
 * LevelDB's memtable and write-ahead log not flushed), is killed -9, and the next start is the
 * one measured (an A/B of the restart). Both run on a scratch view of DIR, removed at the end
 * (bench/frontier-scale-keep.ts): DIR stays as the full run left it, every run starts from the
 * same state. `--hosts H` sets the web's hosts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launcherEnv, launcherNodeFlags } from './args';
import { dropScratch, makeScratch } from './frontier-scale-keep';
import { parsePeakRssBytes, parseRssParts, type RssParts } from './proc-stat';
import { addLevelDbLog, describeWrites, emptyWrites } from './leveldb-log';

export interface FrontierScaleArgs {
  urls: number;
  /** Seconds of the lease phase before the kill -9. */
  leaseSecs: number;
  /** Partitions the frontier process owns, each with its own store (default 8, as crawl run and Kafka mode; before 2026-12-06 the benchmark's default was 1). */
  partitions?: number;
  /** Keep the run's folder (default: removed). */
  dir?: string;
  /** Only step 4, from the journal a kept run left in `dir`. */
  rebuildOnly?: boolean;
  /** Hosts of the web fed (default min(1M, urls/50)). */
  hosts?: number;
  /** Only restarts after kill -9 on the store and journal a kept run left in `dir`; deletes nothing. */
  restartOnly?: boolean;
  /** Step 4's process (--restart-only: the measured restart's) writes `node --cpu-prof` profiles here (its threads' too) and exits normally instead of being killed. */
  profile?: string;
}

interface Event {
  event: string;
  at: number;
  [k: string]: unknown;
}

/** The child's resident set by kind when it reported `urls` in the table. */
interface MemPoint extends RssParts {
  urls: number;
  /** V8's heap (heapTotal) and the Buffers it tracks (arrayBuffers), from the child. */
  heap: number;
  buffers: number;
}

interface ChildRun {
  child: ChildProcess;
  events: Event[];
  logs: Array<Record<string, unknown>>;
  peakRss: number;
  /** At every intake and lease event of the child. */
  mem: MemPoint[];
  /** The largest file-backed and anonymous parts seen in the polls. */
  peakParts: { file: number; anon: number };
  /** The poll with the largest RSS: when (ms since the epoch) and its parts. */
  peakSample: (RssParts & { at: number }) | null;
  exited: Promise<void>;
  wait(pred: (e: Event) => boolean, ms: number): Promise<Event | null>;
}

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');

const mib = (b: number): string => `${(b / 1048576).toFixed(0)} MiB`;

const du = (path: string): number => {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((n, f) => n + du(join(path, f)), 0);
};

function readParts(pid: number): RssParts | null {
  try {
    return parseRssParts(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Where the resident set went as the table grew: the samples nearest a quarter, half and all
 * of the intake, and the largest of the lease phase. "C heap and other" is the anonymous part
 * less V8's heap and the Buffers V8 tracks: LevelDB's memtables and caches, the binding's
 * allocations, malloc's free lists.
 */
function memRows(run: ChildRun, fed: number): Array<[string, string]> {
  const intake = run.mem.filter((m, i) => i === 0 || m.urls >= run.mem[i - 1].urls);
  const picks: MemPoint[] = [];
  for (const q of [0.25, 0.5, 1]) {
    const m = intake.find((x) => x.urls >= q * fed * 0.99) ?? intake[intake.length - 1];
    if (m && !picks.includes(m)) picks.push(m);
  }
  const last = run.mem[run.mem.length - 1];
  if (last && !picks.includes(last)) picks.push(run.mem.reduce((a, b) => (b.rss > a.rss ? b : a), last));
  return picks.map((m) => [
    `RSS at ${m.urls.toLocaleString('en')} rows`,
    `${mib(m.rss)}: file-backed ${mib(m.file)}, anonymous ${mib(m.anon)} (V8 heap ${mib(m.heap)}, Buffers ${mib(m.buffers)}, C heap and other ${mib(Math.max(0, m.anon - m.heap - m.buffers))})`,
  ]);
}

function startChild(dir: string, feed: number, leaseSecs: number, partitions: number, profile?: string, hosts?: number): ChildRun {
  // As a frontier process started by bin/crawl.js (`crawl process frontier`) runs: its launcher's
  // node flags and environment, and no heap cap of the benchmark's own (a user's process has none).
  const prof = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child = spawn(process.execPath, [...launcherNodeFlags(CLI), ...prof, join(__dirname, 'frontier-scale-child.js'), dir, String(feed), String(leaseSecs), String(partitions), String(hosts ?? 0)], {
    env: { ...process.env, ...launcherEnv(CLI), CRAWL_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: ChildRun = {
    child, events: [], logs: [], peakRss: 0, mem: [], peakParts: { file: 0, anon: 0 }, peakSample: null,
    exited: new Promise((r) => child.on('close', () => r())),
    async wait(pred, ms) {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        const e = run.events.find(pred);
        if (e) return e;
        if (child.exitCode !== null || child.signalCode !== null) return null;
        await new Promise((r) => setTimeout(r, 50));
      }
      return null;
    },
  };
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      const e: Event = { ...(JSON.parse(line) as Event), at: Date.now(), load: loadavg()[0] };
      run.events.push(e);
      if (typeof e.heapBytes === 'number') {
        const parts = readParts(child.pid!);
        if (parts) run.mem.push({ ...parts, urls: Number(e.urls), heap: e.heapBytes, buffers: Number(e.bufferBytes) });
      }
      process.stderr.write(`  ${line}\n`);
    } catch {
      // not an event
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (typeof o.msg === 'string' && o.msg.startsWith('frontier store')) {
        run.logs.push(o);
        process.stderr.write(`  ${o.msg} ${JSON.stringify({ rows: o.rows, rowsPerSec: o.rowsPerSec, seconds: o.seconds })}\n`);
      } else if (o.msg === 'stage state restored') {
        run.logs.push(o);
        process.stderr.write(`  ${o.msg} ${JSON.stringify({ stage: o.stage, changelogMs: o.changelogMs, tablesMs: o.tablesMs, sinceStartMs: o.sinceStartMs })}\n`);
      } else if (o.jemalloc) {
        // jemalloc's statistics (MALLOC_CONF=stats_interval:…,stats_interval_opts:J…), one JSON line each.
        process.stderr.write(`  child: ${line}\n`);
      }
    } catch {
      process.stderr.write(`  child: ${line}\n`);
    }
  });
  const poll = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      run.peakRss = Math.max(run.peakRss, parsePeakRssBytes(status));
      const parts = parseRssParts(status);
      run.peakParts.file = Math.max(run.peakParts.file, parts.file);
      run.peakParts.anon = Math.max(run.peakParts.anon, parts.anon);
      if (run.peakSample === null || parts.rss > run.peakSample.rss) run.peakSample = { ...parts, at: Date.now() };
    } catch {
      // exited
    }
  }, 500);
  void run.exited.then(() => clearInterval(poll));
  return run;
}

/**
 * CPU per URL taken in, by thread, from the store being current to the intake's end: the main
 * thread (seen-test, the frontier, the benchmark's feeder), then the busiest others (every thread
 * of node is named "node": as a rule LevelDB's compaction thread is the busiest, then libuv's pool
 * threads (LevelDB's reads and writes) and V8's GC helpers), then threads that ended in between
 * (the journal cleaner's passes, one worker thread each).
 */
function threadCpuRow(run: ChildRun, urls: number): string | null {
  const from = run.events.find((e) => e.event === 'restored');
  const to = run.events.find((e) => e.event === 'intake-done');
  if (!from?.threads || !to?.threads) return null;
  const a = from.threads as Record<string, number>;
  const b = to.threads as Record<string, number>;
  const pid = String(run.child.pid);
  const us = (ms: number): string => ((ms * 1000) / Math.max(1, urls)).toFixed(1);
  const main = b[pid] - (a[pid] ?? 0);
  const others = Object.keys(b).filter((t) => t !== pid).map((t) => b[t] - (a[t] ?? 0)).sort((x, y) => y - x);
  const all = Number(to.processCpuMs) - Number(from.processCpuMs);
  const ended = all - main - others.reduce((x, y) => x + y, 0);
  // The kernel's share (system calls, page faults: a store larger than the page cache reads its tables from disk).
  const sys = to.processSystemMs !== undefined && from.processSystemMs !== undefined ? Number(to.processSystemMs) - Number(from.processSystemMs) : NaN;
  const faults = to.majorFaults !== undefined && from.majorFaults !== undefined ? Number(to.majorFaults) - Number(from.majorFaults) : NaN;
  const kernel = Number.isNaN(sys) ? '' : `; of all, in the kernel ${us(sys)} µs; major page faults ${faults.toLocaleString('en')}`;
  return `${us(all)} µs: main thread ${us(main)}; others, largest first: ${others.filter((ms) => ms >= 10).map(us).join(', ')}; threads that ended ${us(Math.max(0, ended))} µs${kernel}`;
}

/**
 * What the stores' LevelDB wrote so far (their LOGs, read at the intake's end: write amplification
 * by level, seek compactions, writes that waited), or null when there is no store.
 */
function storeWrites(frontierDir: string): { stores: number; text: string } | null {
  if (!existsSync(frontierDir)) return null;
  const w = emptyWrites();
  let stores = 0;
  for (const name of readdirSync(frontierDir)) {
    const log = join(frontierDir, name, 'LOG');
    if (!existsSync(log)) continue;
    addLevelDbLog(readFileSync(log, 'utf8'), w);
    stores++;
  }
  return stores ? { stores, text: describeWrites(w) } : null;
}

async function kill9(run: ChildRun): Promise<void> {
  run.child.kill('SIGKILL');
  await run.exited;
}

export async function runFrontierScale(a: FrontierScaleArgs): Promise<string> {
  const dir = a.dir ?? join(tmpdir(), `kcrawl-frontier-scale-${process.pid}`);
  const rows: Array<[string, string]> = [];
  const parts = a.partitions ?? 8;
  if (a.rebuildOnly) {
    if (!existsSync(join(dir, 'state', 'topics', 'crawl.urls'))) throw new Error(`--rebuild-only: no journal in ${dir} (run once with --keep ${dir})`);
    // The store is not viewed: the rebuild deletes it, then builds one in the view.
    await inScratch(dir, ['frontier'], (scratch) => rebuildStep(scratch, rows, parts, a.profile));
    return report(a, rows);
  }
  if (a.restartOnly) {
    if (!existsSync(join(dir, 'state', 'topics', 'crawl.urls')) || !existsSync(join(dir, 'state', 'frontier'))) throw new Error(`--restart-only: no journal and store in ${dir} (run once with --keep ${dir})`);
    await inScratch(dir, [], (scratch) => restartStep(scratch, rows, parts, a.profile));
    return report(a, rows);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    // 1-2: intake, then leases with the table full, then kill -9.
    process.stderr.write(`frontier-scale: ${a.urls} URLs into one frontier process (${dir})…\n`);
    const first = startChild(dir, a.urls, 1e6, parts, undefined, a.hosts);
    const done = await first.wait((e) => e.event === 'intake-done', 24 * 3600_000);
    if (!done) throw new Error('the frontier process stopped before taking every URL');
    const intakeSecs = Number(done.secs);
    const taken = Number(done.urls);
    rows.push(['URLs, hosts', `${taken.toLocaleString('en')} in the table of ${a.urls.toLocaleString('en')} fed (the rest dropped by the Bloom filter as seen), ${Number(done.hosts).toLocaleString('en')} hosts with work`]);
    rows.push(['intake', `${Math.round(taken / intakeSecs).toLocaleString('en')} URLs/s (${intakeSecs.toFixed(0)} s)`]);
    const cpu = threadCpuRow(first, taken);
    if (cpu) rows.push(['CPU per URL in the intake', cpu]);
    const writes = storeWrites(join(dir, 'state', 'frontier'));
    if (writes) rows.push([`LevelDB's writes in the intake (${writes.stores} stores' LOGs)`, writes.text]);
    await first.wait((e) => e.event === 'leases' && first.events.filter((x) => x.event === 'leases').length >= a.leaseSecs, (a.leaseSecs + 60) * 1000);
    const perSec = first.events.filter((e) => e.event === 'leases').map((e) => Number(e.perSec));
    const window = perSec.slice(2);
    const mean = window.reduce((x, y) => x + y, 0) / Math.max(1, window.length);
    rows.push(['leases with the table full', `${Math.round(mean).toLocaleString('en')}/s mean over ${window.length} s (min ${Math.min(...window)}, max ${Math.max(...window)})`]);
    const storeBytes = du(join(dir, 'state', 'frontier'));
    const journalBytes = du(join(dir, 'state', 'topics', 'crawl.urls'));
    rows.push(['disk per URL', `store ${(storeBytes / taken).toFixed(1)} B (${mib(storeBytes)}), changelog ${(journalBytes / taken).toFixed(1)} B (${mib(journalBytes)})`]);
    await kill9(first);
    const loads = first.events.map((e) => Number(e.load));
    rows.push(['load average (1 min) through intake and leases', `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`]);
    rows.push(['peak RSS, intake and leases', `${mib(first.peakRss)} (largest parts: file-backed ${mib(first.peakParts.file)}, anonymous ${mib(first.peakParts.anon)})`]);
    rows.push(...memRows(first, a.urls));

    // 3: restart after kill -9.
    const t1 = Date.now();
    const second = startChild(dir, 0, 10, parts);
    await measureRestart('restart after kill -9', second, t1, rows);
    await kill9(second);
    rows.push(['peak RSS, restart', mib(second.peakRss)]);

    await rebuildStep(dir, rows, parts, a.profile);
  } finally {
    if (!a.dir) rmSync(dir, { recursive: true, force: true });
  }
  return report(a, rows);
}

/** Run `step` in a scratch view of the kept `dir` (bench/frontier-scale-keep.ts), then remove the view. */
async function inScratch(dir: string, skip: string[], step: (scratch: string) => Promise<void>): Promise<void> {
  const scratch = makeScratch(dir, skip);
  try {
    await step(scratch);
  } finally {
    dropScratch(dir);
  }
}

const secs1 = (ms: number): string => (ms / 1000).toFixed(1);

/** One restart's figures: first lease and store current after start, main-thread CPU by then, peak RSS. */
async function measureRestart(label: string, run: ChildRun, t0: number, rows: Array<[string, string]>): Promise<void> {
  const lease = await run.wait((e) => e.event === 'first-lease', 180_000);
  const restored = await run.wait((e) => e.event === 'restored', 60_000);
  const cpuAt = (e: Event | null): string => {
    const cpu = (e?.threadCpuMs as number[] | undefined) ?? [];
    if (!cpu.length) return '?';
    const others = cpu.slice(1).filter((ms) => ms >= 100).sort((x, y) => y - x);
    return `main ${secs1(cpu[0])}, others of 0.1 s or more ${others.map(secs1).join(', ') || 'none'}`;
  };
  rows.push([`${label}: first lease`, lease ? `${secs1(lease.at - t0)} s after start (child's clock ${secs1(Number(lease.msSinceStart))} s; thread CPU by then (s): ${cpuAt(lease)})` : 'none within 180 s']);
  rows.push([`${label}: store current`, restored ? `${secs1(Number(restored.ms))} s after start (thread CPU by then (s): ${cpuAt(restored)}; load ${Number(restored.load).toFixed(1)})` : 'not reported']);
}

/**
 * 3 alone, on a kept run (--restart-only): nothing deleted. A process restores and leases for a
 * few seconds, kill -9 while leases are in flight; the next start is measured, leases a few
 * seconds (exits by itself when profiled, so node writes its profile), and is killed too.
 */
async function restartStep(dir: string, rows: Array<[string, string]>, partitions: number, profile?: string): Promise<void> {
  const warmSecs = 5;
  const t0 = Date.now();
  const warm = startChild(dir, 0, 1e6, partitions);
  await measureRestart('warm-up restart (not the figure)', warm, t0, rows);
  await warm.wait((e) => e.event === 'leases' && warm.events.filter((x) => x.event === 'leases').length >= warmSecs, 60_000);
  const leased = warm.events.filter((e) => e.event === 'leases').reduce((n, e) => n + Number(e.perSec), 0);
  await kill9(warm);
  rows.push(['warm-up: leased before its kill -9', `${leased.toLocaleString('en')} in ${warmSecs} s; peak RSS ${mib(warm.peakRss)}`]);
  const t1 = Date.now();
  const run = startChild(dir, 0, 3, partitions, profile);
  await measureRestart('restart after kill -9', run, t1, rows);
  if (profile) await Promise.race([run.exited, new Promise((r) => setTimeout(r, 120_000))]);
  await kill9(run);
  rows.push(['peak RSS, restart', mib(run.peakRss)]);
}

/** 4: store deleted, rebuilt from the changelog. */
async function rebuildStep(dir: string, rows: Array<[string, string]>, partitions: number, profile?: string): Promise<void> {
  rmSync(join(dir, 'state', 'frontier'), { recursive: true, force: true });
  const t2 = Date.now();
  const third = startChild(dir, 0, 5, partitions, profile);
  const lease3 = await third.wait((e) => e.event === 'first-lease', 6 * 3600_000);
  // The first lease may come before the child reports the store current (its CPU by thread).
  await third.wait((e) => e.event === 'restored', 30_000);
  const rebuilt = third.logs.find((l) => l.msg === 'frontier store restored');
  const secs = Number(rebuilt?.seconds ?? NaN);
  const restored = (rebuilt?.partitions as Array<{ rows: number; urls: number }> | undefined) ?? [];
  const records = { rows: restored.reduce((n, r) => n + r.rows, 0), urls: restored.reduce((n, r) => n + r.urls, 0) };
  rows.push(['store deleted: rebuild from the changelog', `${Math.round(Number(rebuilt?.rowsPerSec ?? NaN)).toLocaleString('en')} rows/s (${secs.toFixed(1)} s, ${records.rows.toLocaleString('en')} records, ${records.urls.toLocaleString('en')} URLs${rebuilt?.spilledBytes !== undefined ? `; ${mib(Number(rebuilt.spilledBytes))} of sorted runs written beside the stores` : ''}); first lease ${lease3 ? `${((lease3.at - t2) / 1000).toFixed(1)} s after start` : 'none'}`]);
  // Where the CPU went until the store was current: the main thread, then the busiest others.
  const restoredEvent = third.events.find((e) => e.event === 'restored');
  const cpu = (restoredEvent?.threadCpuMs as number[] | undefined) ?? [];
  if (cpu.length) {
    const others = cpu.slice(1).sort((a, b) => b - a);
    const s = (ms: number): string => (ms / 1000).toFixed(1);
    const live = cpu.reduce((x, y) => x + y, 0);
    // The sort threads have ended by then: their CPU is only in the process's total.
    const proc = Number(restoredEvent?.processCpuMs ?? NaN);
    rows.push(['rebuild CPU by thread (s)', `main ${s(cpu[0])}; others of 0.1 s or more, largest first: ${others.filter((ms) => ms >= 100).map(s).join(', ') || 'none'}; all live ${s(live)}; process (ended threads too: the sort threads) ${s(proc)}`]);
  }
  // The rebuild's progress line with the largest RSS: what held it (this thread's heap, Buffers, the sort thread's heap).
  const memLines = third.logs.filter((l) => typeof l.rssMiB === 'number');
  const top = memLines.reduce<Record<string, unknown> | null>((a, l) => (a === null || Number(l.rssMiB) > Number(a.rssMiB) ? l : a), null);
  // A profile is written when the process exits by itself (after its 5 s of leases).
  if (profile) await Promise.race([third.exited, new Promise((r) => setTimeout(r, 120_000))]);
  await kill9(third);
  const restoredAt = third.events.find((e) => e.event === 'restored')?.at;
  const ps = third.peakSample;
  const when = ps && restoredAt !== undefined ? (ps.at <= restoredAt ? `${((restoredAt - ps.at) / 1000).toFixed(1)} s before the store was current` : `${((ps.at - restoredAt) / 1000).toFixed(1)} s after the store was current`) : '';
  rows.push(['peak RSS, rebuild', `${mib(third.peakRss)}${ps ? ` (largest poll: ${mib(ps.rss)}, file-backed ${mib(ps.file)}, anonymous ${mib(ps.anon)}, ${when}; largest parts: file-backed ${mib(third.peakParts.file)}, anonymous ${mib(third.peakParts.anon)})` : ''}`]);
  if (top) {
    rows.push(['rebuild memory at its largest logged RSS (MiB)', `RSS ${top.rssMiB} (${String(top.msg)}): main thread's V8 heap ${top.heapMiB}, Buffers ${top.arrayBuffersMiB} (external ${top.externalMiB}), the sort thread's heap ${top.sortThreadHeapMiB}`]);
  }
}

function report(a: FrontierScaleArgs, rows: Array<[string, string]>): string {
  const table = `| frontier-scale | ${a.urls.toLocaleString('en')} URLs${(a.partitions ?? 1) > 1 ? `, ${a.partitions} partitions` : ''} |\n|---|---|\n${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}\n`;
  const flags = `${a.hosts !== undefined ? ` --hosts ${a.hosts}` : ''}${a.dir ? ` --keep ${a.dir}` : ''}${a.rebuildOnly ? ' --rebuild-only' : ''}${a.restartOnly ? ' --restart-only' : ''}`;
  process.stdout.write(`\n${table}\nnode ${process.version}; reproduce: \`npm run bench -- --only frontier-scale --urls ${a.urls}${(a.partitions ?? 1) > 1 ? ` --partitions ${a.partitions}` : ''}${flags}\`\n`);
  return table;
}
