/**
 * Heap bytes (and typed-array bytes, outside the heap) the frontier keeps in memory per URL it
 * knows and per host with work, now that the URL table is on disk (processors/frontier-store.ts):
 *   many URLs, few hosts — N URLs over 5,000 hosts: what memory grows by per URL known;
 *   many hosts           — 2 URLs per host: what a host with work costs (N/2 hosts: 2,000,000
 *                          URLs give the million hosts of the 50M frontier-scale run).
 * Candidates look like the benchmark web's (a host cut from the candidate's URL, a priority,
 * depth 1-3), fed through FrontierState.onCandidates in batches of 1,000, as the stage does. In
 * the many-hosts case each host is a site of its own, named as bench/frontier-scale-web.ts names
 * them (`www.<word>-<n>-site.com`, its own registered domain); in the other, 250 hosts share one.
 * Before the table moved to disk this bench measured 182 heap + 47 typed-array bytes per queued
 * URL (docs/frontier-store.md).
 *
 *   npx tsc -p tsconfig.json && node --expose-gc dist/bench/frontier-memory.js [urls] [urls|hosts|both] [rounds]
 * (both cases by default, each twice: a second round is the one to read).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { CandidateMsg } from '../lib/messages';
import { hostOf } from '../lib/url-normalize';
import { FrontierState, TUNING_DEFAULTS } from '../processors/frontier-state';
import { restoreStores } from '../processors/frontier-restore';
import type { ChangelogSource } from '../runtime/changelog';

const URLS = Number(process.argv[2] ?? 500_000);
const CASES = process.argv[3] ?? 'both';
const ROUNDS = Number(process.argv[4] ?? 2);
if (!['urls', 'hosts', 'both'].includes(CASES)) throw new Error(`case: urls, hosts or both, not ${CASES}`);
const WORDS = ['news', 'article', 'category', 'products', 'blog', 'archive', 'item', 'view', 'tag', 'docs', 'forum', 'wiki', 'shop', 'event', 'story', 'guide'];

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  g();
  g();
}

function candidate(i: number, hosts: number, now: number, ownSites: boolean): CandidateMsg {
  const h = i % hosts;
  // Built afresh, as a decoded message's strings are; the host cut from the URL, as seen-test's
  // normaliser gives it (a slice of the URL in V8: lib/own-string.ts).
  const name = ownSites ? `www.${WORDS[h % WORDS.length]}-${h.toString(36)}-site.com` : `h${h}.site-${Math.floor(h / 250)}.test`;
  const url = `http://${name}:40123/p/${i}`;
  return { url, host: hostOf(url), depth: 1 + (i % 3), discovered_at: now - (i % 1000), source_url: null, priority: ((i * 7) % 100) / 100 };
}

const EMPTY: ChangelogSource = { ends: async (ps) => new Map(ps.map((p) => [p, 0])), read: async () => undefined };

async function measure(label: string, hosts: number, ownSites: boolean): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'frontier-memory-'));
  const f = new FrontierState({ minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 60_000, retryBackoffMs: [5000], maxAttempts: 3 }, undefined, undefined, undefined, { partitions: 1 });
  const [r] = await restoreStores([0], EMPTY, { dirOf: () => join(dir, 'urls-0'), levelOf: f.levelOf, levels: TUNING_DEFAULTS.priorityLevels, log: pino({ level: 'silent' }) });
  await f.attach(0, r.store, Date.now());
  gc();
  const before = process.memoryUsage();
  const t0 = process.hrtime.bigint();
  const now = Date.now();
  for (let i = 0; i < URLS; i += 1000) {
    const batch: CandidateMsg[] = [];
    for (let j = i; j < Math.min(URLS, i + 1000); j++) batch.push(candidate(j, hosts, now, ownSites));
    await f.onCandidates(batch, now);
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  gc();
  const after = process.memoryUsage();
  const heap = after.heapUsed - before.heapUsed;
  const arrays = after.arrayBuffers - before.arrayBuffers;
  const held = Math.min(hosts, URLS);
  process.stdout.write(
    `| ${label} | ${URLS} | ${held} | ${(heap / URLS).toFixed(1)} | ${(heap / held).toFixed(0)} | ${(arrays / URLS).toFixed(1)} | ${((heap + arrays) / 1048576).toFixed(1)} | ${((ms * 1000) / URLS).toFixed(2)} |\n`,
  );
  for (const s of (await f.detach(() => false)).values()) await s.close();
  rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  process.stdout.write('| case | URLs | hosts | heap bytes per URL | heap bytes per host | typed-array bytes per URL | MiB in all | µs per URL |\n|---|---:|---:|---:|---:|---:|---:|---:|\n');
  for (let round = 0; round < ROUNDS; round++) {
    if (CASES !== 'hosts') await measure('many URLs, few hosts', 5000, false);
    if (CASES !== 'urls') await measure('many hosts, 2 URLs each', Math.floor(URLS / 2), true);
  }
}

void main();
