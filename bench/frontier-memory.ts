/**
 * Heap bytes (and typed-array bytes, outside the heap) per URL the frontier keeps for a
 * discovered, not yet fetched URL, side by side in one run:
 *   full rows   — a Map of whole UrlStateMsg rows plus the importance Map (the frontier before
 *                 processors/frontier-urls.ts);
 *   UrlTable    — processors/frontier-urls.ts;
 *   frontier    — FrontierState.onCandidate as a whole (table, host queues, hosts).
 * Candidates look like the benchmark web's: 5,000 hosts, each candidate decoded with a host
 * string of its own, a priority, depth 1-3.
 *
 *   npx tsc -p tsconfig.json && node --expose-gc dist/bench/frontier-memory.js [urls]
 */
import type { CandidateMsg, UrlStateMsg } from '../lib/messages';
import { FrontierState } from '../processors/frontier-state';
import { UrlTable } from '../processors/frontier-urls';

const URLS = Number(process.argv[2] ?? 500_000);
const HOSTS = 5000;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  g();
  g();
}

function candidate(i: number, now: number): CandidateMsg {
  const h = i % HOSTS;
  // Built afresh, as a decoded message's strings are.
  const host = `127.1.${Math.floor(h / 250)}.${1 + (h % 250)}`;
  return { url: `http://${host}:40123/p/${i}`, host, depth: 1 + (i % 3), discovered_at: now - (i % 1000), source_url: null, priority: ((i * 7) % 100) / 100 };
}

function fullRow(c: CandidateMsg, now: number): UrlStateMsg {
  return {
    url: c.url, host: c.host, state: 'QUEUED', depth: c.depth, discovered_at: c.discovered_at, updated_at: now, lease_id: null,
    lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null, priority: c.priority,
  };
}

/** Heap and typed-array bytes per URL that `build`'s result keeps alive, URL strings included. */
function measure(label: string, build: () => unknown): void {
  gc();
  const before = process.memoryUsage();
  const t0 = process.hrtime.bigint();
  let kept: unknown = build();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  gc();
  const after = process.memoryUsage();
  const heap = after.heapUsed - before.heapUsed;
  const arrays = after.arrayBuffers - before.arrayBuffers;
  const bytes = heap + arrays;
  process.stdout.write(
    `| ${label} | ${URLS} | ${(heap / URLS).toFixed(0)} | ${(arrays / URLS).toFixed(0)} | ${(bytes / 1048576).toFixed(1)} | ${((ms * 1000) / URLS).toFixed(2)} |\n`,
  );
  kept = null;
  void kept;
}

function main(): void {
  process.stdout.write('| table | URLs | heap bytes per URL | typed-array bytes per URL | MiB in all | µs per URL |\n|---|---:|---:|---:|---:|---:|\n');
  for (let round = 0; round < 2; round++) {
    measure('full rows + importance Map', () => {
      const rows = new Map<string, UrlStateMsg>();
      const importance = new Map<string, number>();
      const now = Date.now();
      for (let i = 0; i < URLS; i++) {
        const c = candidate(i, now);
        rows.set(c.url, fullRow(c, now));
        if (c.priority !== undefined && c.priority !== null) importance.set(c.url, c.priority);
      }
      return [rows, importance];
    });
    measure('UrlTable', () => {
      const t = new UrlTable();
      const hosts = new Map<string, string>();
      const now = Date.now();
      for (let i = 0; i < URLS; i++) {
        const c = candidate(i, now);
        // The frontier passes the host's own name, kept by its HostState anyway.
        let shared = hosts.get(c.host);
        if (shared === undefined) hosts.set(c.host, (shared = c.host));
        t.set(fullRow(c, now), shared);
      }
      return [t, hosts];
    });
    measure('FrontierState.onCandidate (table, queues, hosts)', () => {
      const f = new FrontierState({ minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 60_000, retryBackoffMs: [5000], maxAttempts: 3 });
      const now = Date.now();
      for (let i = 0; i < URLS; i++) f.onCandidate(candidate(i, now), now);
      return f;
    });
  }
}

main();
