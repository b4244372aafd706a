/**
 * The jemalloc bin/crawl.js preloads on this machine: the first of the launcher's own candidate
 * paths that exists (read from its `for j in ...` list, so the tests follow the launcher), or
 * undefined where none is installed (the launcher then runs glibc's malloc).
 */
import { existsSync, readFileSync } from 'node:fs';
import { CLI } from './cli';

export function launcherJemallocPaths(cli = CLI): string[] {
  const list = /for j in ([^;]+); do/.exec(readFileSync(cli, 'utf8'));
  if (!list) throw new Error(`${cli}: no jemalloc candidate list in its launcher line`);
  return list[1].trim().split(/\s+/);
}

export const JEMALLOC: string | undefined = launcherJemallocPaths().find((f) => existsSync(f));
