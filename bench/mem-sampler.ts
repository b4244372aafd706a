/**
 * A diagnostic preload (`node -r dist/bench/mem-sampler.js ...`), not part of `npm run bench`:
 * every MEM_SAMPLE_MS (1,000) each thread that loads it (the event loop and, as workers inherit
 * the preload, every parse worker) appends one JSON line to MEM_SAMPLE_FILE with its
 * `process.memoryUsage()` and V8 heap spaces; the main thread adds /proc/self/smaps_rollup.
 * bench/crawl-memory.ts reads the lines back beside `crawl run`'s progress.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const file = process.env.MEM_SAMPLE_FILE;
const every = Number(process.env.MEM_SAMPLE_MS ?? 1000);
const MB = 1024 * 1024;

/** The kB fields of /proc/self/smaps_rollup, in MB. */
function rollup(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const line of readFileSync('/proc/self/smaps_rollup', 'utf8').split('\n')) {
      const m = /^(\w+):\s+(\d+) kB/.exec(line);
      if (m) out[m[1]] = Math.round(Number(m[2]) / 1024);
    }
  } catch {
    // not Linux
  }
  return out;
}

function sample(): void {
  const m = process.memoryUsage();
  const spaces: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name] = Math.round(s.space_size / MB);
  const line = {
    t: Date.now(), pid: process.pid, thread: threadId, rss: Math.round(m.rss / MB), heapTotal: Math.round(m.heapTotal / MB), heapUsed: Math.round(m.heapUsed / MB),
    external: Math.round(m.external / MB), arrayBuffers: Math.round(m.arrayBuffers / MB), spaces, ...(isMainThread ? { smaps: rollup() } : {}),
  };
  appendFileSync(file!, `${JSON.stringify(line)}\n`);
}

if (file) setInterval(sample, every).unref();
