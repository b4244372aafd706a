/**
 * CPU time and peak memory of processes, read from /proc (Linux): user + sys of each process
 * the benchmark counts, crawler children and, in Kafka mode, the services.
 */
import { readFileSync } from 'node:fs';
import { growthBetween } from './sustained';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on every Linux we run). */
export const CLOCK_TICKS = 100;

/**
 * The fields of /proc/<pid>/stat after the command name (which may hold spaces and parens):
 * index 0 is field 3 (state), so field n is index n - 3.
 */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The command name from the text of /proc/<pid>/stat, or a thread's name from /proc/<pid>/task/<tid>/stat ("rocksdb:low", "libuv-worker"): what lies between the first '(' and the last ')'. */
export function parseStatName(stat: string): string {
  return stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
}

/** utime + stime in ms from the text of /proc/<pid>/stat. */
export function parseStatCpuMs(stat: string): number {
  const fields = statFields(stat);
  // utime and stime are fields 14 and 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / CLOCK_TICKS;
}

/** stime in ms (CPU in the kernel: system calls, page faults) and major page faults (pages read from disk) from /proc/<pid>/stat. */
export function parseStatKernel(stat: string): { systemMs: number; majorFaults: number } {
  const fields = statFields(stat);
  // fields[9] is field 12 (majflt), fields[12] field 15 (stime).
  return { systemMs: (Number(fields[12]) * 1000) / CLOCK_TICKS, majorFaults: Number(fields[9]) };
}

/** cutime + cstime in ms: CPU of the children this process has waited for (reaped). */
export function parseStatChildrenCpuMs(stat: string): number {
  const fields = statFields(stat);
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

/**
 * CPU of this process's reaped children so far. Exact for a crawler child: take it before the
 * spawn and after its exit (the web server child, still running, is not in it).
 */
export function reapedChildrenCpuMs(): number {
  return parseStatChildrenCpuMs(readFileSync('/proc/self/stat', 'utf8'));
}

/** VmHWM (peak resident set) in bytes from the text of /proc/<pid>/status. */
export function parsePeakRssBytes(status: string): number {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * The machine's steal time in ms, summed over its CPUs, from the text of /proc/stat: time the
 * hypervisor ran something else while this guest had work (the `cpu` line's 8th number). On a
 * virtual machine it is CPU the crawl could not have, whatever it did.
 */
export function parseStealMs(procStat: string): number {
  const fields = procStat.slice(0, procStat.indexOf('\n')).trim().split(/\s+/);
  if (fields[0] !== 'cpu') return 0;
  return (Number(fields[8] ?? 0) * 1000) / CLOCK_TICKS;
}

function readStealMs(): number {
  try {
    return parseStealMs(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return 0;
  }
}

/** The resident set by kind, in bytes, from the text of /proc/<pid>/status (Linux 4.5+). */
export interface RssParts {
  /** VmRSS: all of it. */
  rss: number;
  /** RssFile: pages of mapped files (LevelDB maps its table files for reads). */
  file: number;
  /** RssAnon: the V8 heap, the C heap (malloc) and other anonymous maps. */
  anon: number;
}

export function parseRssParts(status: string): RssParts {
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), file: kb('RssFile'), anon: kb('RssAnon') };
}

export interface ProcSample {
  cpuMs: number;
  peakRssBytes: number;
}

/** A live process's CPU and peak RSS, or null once it has gone. */
export function sample(pid: number): ProcSample | null {
  try {
    return {
      cpuMs: parseStatCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8')),
      peakRssBytes: parsePeakRssBytes(readFileSync(`/proc/${pid}/status`, 'utf8')),
    };
  } catch {
    return null;
  }
}

/** CPU used so far (ms, from when it was added) by each watched process, at one poll. */
export interface CpuPoint {
  at: number;
  cpuMs: ReadonlyMap<number, number>;
  /** The machine's steal time so far (ms over all CPUs, parseStealMs); absent in older series. */
  stealMs?: number;
}

/**
 * CPU the given processes used between two moments, read off a series of polls by linear
 * interpolation (polls 100 ms apart). Moments outside the series are clamped to its ends; a
 * process absent from some polls (added later) counts from the polls that have it.
 */
export function cpuMsBetween(series: readonly CpuPoint[], pids: readonly number[], from: number, to: number): number {
  let sum = 0;
  for (const pid of pids) sum += growthOf(series, (p) => p.cpuMs.get(pid), from, to);
  return sum;
}

/** Growth between two moments of one value of the polls, from the polls that have it. */
function growthOf(series: readonly CpuPoint[], value: (p: CpuPoint) => number | undefined, from: number, to: number): number {
  const points: Array<{ at: number; value: number }> = [];
  for (const p of series) {
    const v = value(p);
    if (v !== undefined) points.push({ at: p.at, value: v });
  }
  return growthBetween(points, from, to);
}

/** The machine's steal time between two moments, off the same polls (0 where none has it). */
export function stealMsBetween(series: readonly CpuPoint[], from: number, to: number): number {
  return growthOf(series, (p) => p.stealMs, from, to);
}

/**
 * Follows processes while they run, keeping each one's last sample (a process's numbers
 * vanish with it, so the last poll before exit is the figure; polls are 100 ms apart), and
 * the CPU series of every poll (for CPU within a part of the run: cpuMsBetween).
 */
export class ProcWatch {
  private readonly last = new Map<number, ProcSample>();
  private readonly base = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  readonly series: CpuPoint[] = [];

  /** Count a process from now on; `fromNow` subtracts the CPU it has already used (services). */
  add(pid: number, fromNow = false): void {
    // A just-spawned process may not be readable yet: count it from zero, polls fill it in.
    const s = sample(pid) ?? { cpuMs: 0, peakRssBytes: 0 };
    this.last.set(pid, s);
    this.base.set(pid, fromNow ? s.cpuMs : 0);
    if (!this.timer) this.timer = setInterval(() => this.poll(), 100);
  }

  poll(): void {
    for (const pid of this.last.keys()) {
      const s = sample(pid);
      // An exiting process (a zombie) shows no VmHWM: keep the peak seen while it lived.
      if (s) this.last.set(pid, { cpuMs: Math.max(s.cpuMs, this.last.get(pid)!.cpuMs), peakRssBytes: Math.max(s.peakRssBytes, this.last.get(pid)!.peakRssBytes) });
    }
    this.series.push({ at: Date.now(), cpuMs: new Map([...this.last].map(([pid, s]) => [pid, s.cpuMs - this.base.get(pid)!])), stealMs: readStealMs() });
  }

  /** The machine's steal time between two moments (Date.now() times) of the watch. */
  stealMsBetween(from: number, to: number): number {
    return stealMsBetween(this.series, from, to);
  }

  /** CPU the given processes used between two moments (Date.now() times) of the watch. */
  cpuMsBetween(pids: readonly number[], from: number, to: number): number {
    return cpuMsBetween(this.series, pids, from, to);
  }

  stop(): void {
    this.poll();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  cpuMs(pids?: readonly number[]): number {
    let sum = 0;
    for (const [pid, s] of this.last) if (!pids || pids.includes(pid)) sum += s.cpuMs - this.base.get(pid)!;
    return sum;
  }

  peakRssBytes(pids?: readonly number[]): number {
    let sum = 0;
    for (const [pid, s] of this.last) if (!pids || pids.includes(pid)) sum += s.peakRssBytes;
    return sum;
  }
}
