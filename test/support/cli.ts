/**
 * Running the built CLI (`bin/crawl.js`, from dist/) as a child process, as a user would, and
 * reading what it leaves behind: its JSON log lines, its WARC files (through warcio), its
 * handoff .avro file (through avsc), and its peak memory (VmHWM from /proc, sampled while it runs, since /proc/<pid> is gone at exit).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as avro from 'avsc';
import type { HandoffEvent } from '../../lib/messages';
import { readWarc, type ReadRecord } from './warc-read';

/** bin/crawl.js at the repository's root, from test/support (jest) or dist/test/support (a built bench). */
export const CLI = [join(__dirname, '..', '..', 'bin', 'crawl.js'), join(__dirname, '..', '..', '..', 'bin', 'crawl.js')].find((p) => existsSync(p))!;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Largest VmHWM seen (bytes); 0 if /proc was never readable. */
  peakRssBytes: number;
}

export interface RunningCli {
  child: ChildProcess;
  done: Promise<CliResult>;
  output(): string;
}

/** VmHWM ("high water mark": peak resident set) of a live process, in bytes. */
export function vmHwmBytes(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, sampleEveryMs = 250): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let peak = 0;
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const sampler = setInterval(() => (peak = Math.max(peak, vmHwmBytes(child.pid!))), sampleEveryMs);
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => {
      clearInterval(sampler);
      resolve({ code, signal, stdout, stderr, peakRssBytes: peak });
    }),
  );
  return { child, done, output: () => stdout + stderr };
}

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

export function readJsonLog(file: string): LogLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
}

/** JSON log lines from a process's stderr (Kafka-mode processors log there). */
export function parseJsonLines(text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const l of text.split('\n')) {
    if (!l.startsWith('{')) continue;
    try {
      out.push(JSON.parse(l) as LogLine);
    } catch {
      // a line cut by a kill -9
    }
  }
  return out;
}

export async function readAllWarcs(dir: string): Promise<Array<ReadRecord & { file: string }>> {
  const records: Array<ReadRecord & { file: string }> = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.warc.gz')).sort()) {
    for (const r of await readWarc(readFileSync(join(dir, f)))) records.push({ ...r, file: f });
  }
  return records;
}

/** The events of a handoff .avro container file, read by avsc as an indexer would. */
export async function readHandoff(file: string): Promise<HandoffEvent[]> {
  const events: HandoffEvent[] = [];
  await new Promise<void>((resolve, reject) => {
    avro.createFileDecoder(file).on('data', (e: HandoffEvent) => events.push(e)).on('end', resolve).on('error', reject);
  });
  return events;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every `everyMs` up to `times` times (every wait loop in a test is bounded). */
export async function waitFor(cond: () => boolean | Promise<boolean>, times: number, everyMs = 100): Promise<boolean> {
  for (let i = 0; i < times; i++) {
    if (await cond()) return true;
    await sleep(everyMs);
  }
  return cond();
}
