/**
 * The benchmark's synthetic web as a child process (bench/web-server.ts), from the parent's
 * side: start it and wait until every address listens, read and reset the servers' politeness
 * counts over IPC, and write the seed list of its hosts' root pages.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostAddress, hostName, type PolitenessSummary } from './synthetic-web';
import type { WebKind } from './web-server';

export interface Web {
  child: ChildProcess;
  port: number;
  stats(): Promise<Record<string, PolitenessSummary>>;
  reset(): void;
}

/** `script`: the compiled web server (tests running from sources pass dist's); `kind`: real pages or lorem ipsum. */
export async function startWeb(hosts: number, latencyMs: number, script = join(__dirname, 'web-server.js'), kind: WebKind = 'real'): Promise<Web> {
  const child = fork(script, [String(hosts), String(latencyMs), kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { ready?: boolean; port?: number }) => (m.ready ? resolve(m.port!) : reject(new Error('web server failed'))));
    child.once('exit', (code) => reject(new Error(`web server exited with ${code}`)));
  });
  return {
    child, port,
    stats: () => new Promise((resolve) => {
      child.once('message', (m: { stats: Record<string, PolitenessSummary> }) => resolve(m.stats));
      child.send({ cmd: 'stats' });
    }),
    reset: () => child.send({ cmd: 'reset' }),
  };
}

export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (c) => resolve(c))));
}

/** Root pages of every host, by address (kcrawl) or by name (the peer: see peer-crawlee.ts). */
export function seedsFile(dir: string, hosts: number, port: number, byName = false): string {
  const file = join(dir, byName ? 'seeds-by-name.txt' : 'seeds.txt');
  writeFileSync(file, Array.from({ length: hosts }, (_, h) => `http://${byName ? hostName(h) : hostAddress(h)}:${port}/`).join('\n') + '\n');
  return file;
}
