/**
 * CPU per lease through FrontierState alone: 5,000 hosts, 300,000 queued URLs, leased by tick()
 * and answered at once (one final status each), until 200,000 leases. No budget, no feeds: the
 * path every crawl takes. Process CPU time (the store's LevelDB threads included: the URL table
 * is on disk, in a temporary folder); compare two builds in the same run by pointing KCRAWL_ROOT
 * at another checkout's dist/ (one with the same FrontierState API: the store-backed one).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/frontier-release.js [leases]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { CandidateMsg, FetchStatusMsg } from '../lib/messages';
import type { FrontierState as FrontierStateType } from '../processors/frontier-state';
import type { restoreStores as RestoreStores } from '../processors/frontier-restore';
import type { queueLayout as QueueLayout } from '../processors/frontier-schedule';

const root = process.env.KCRAWL_ROOT ? join(process.env.KCRAWL_ROOT, 'dist') : join(__dirname, '..');
const { FrontierState, TUNING_DEFAULTS } = require(join(root, 'processors', 'frontier-state.js')) as { FrontierState: typeof FrontierStateType; TUNING_DEFAULTS: { priorityLevels: number } };
const { restoreStores } = require(join(root, 'processors', 'frontier-restore.js')) as { restoreStores: typeof RestoreStores };
const { queueLayout } = require(join(root, 'processors', 'frontier-schedule.js')) as { queueLayout: typeof QueueLayout };

const HOSTS = 5000;
const URLS = 300_000;
const LEASES = Number(process.argv[2] ?? 200_000);

async function main(): Promise<void> {
  let n = 0;
  const fs = new FrontierState(
    { minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10, leaseMs: 600_000, retryBackoffMs: [5000], maxAttempts: 5, domainMinGapMs: 0, ipMinGapMs: 0 },
    () => `L${++n}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'frontier-release-'));
  const empty = { ends: async (ps: readonly number[]) => new Map(ps.map((p) => [p, 0])), read: async () => undefined };
  const [r] = await restoreStores([0], empty, { dirOf: () => join(dir, 'urls-0'), levelOf: fs.levelOf, levels: queueLayout(TUNING_DEFAULTS.priorityLevels), log: pino({ level: 'silent' }) });
  await fs.attach(0, r.store, 0);
  const batch: CandidateMsg[] = [];
  for (let i = 0; i < URLS; i++) {
    const h = i % HOSTS;
    const host = `127.1.${Math.floor(h / 250)}.${1 + (h % 250)}`;
    batch.push({ url: `http://${host}/p/${i}`, host, depth: 1 + (i % 3), discovered_at: 0, source_url: null, priority: ((i * 7) % 100) / 100 });
    if (batch.length === 1000 || i === URLS - 1) await fs.onCandidates(batch.splice(0), 0);
  }
  let leases = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let t = 0; leases < LEASES; t += 50) {
    const statuses: FetchStatusMsg[] = [];
    for (const f of (await fs.tick(t)).fetches) {
      leases++;
      const s: FetchStatusMsg = {
        url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: t, finished_at: t,
        response_ms: 1, crawl_delay_ms: 0, retry_after_ms: null, sha256: 'x', etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null,
      };
      statuses.push(s);
    }
    await fs.onStatuses(statuses, t);
  }
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(cpu0);
  const cpuMs = (c.user + c.system) / 1000;
  process.stdout.write(`${root}: ${leases} leases, wall ${wallMs.toFixed(0)} ms, CPU ${cpuMs.toFixed(0)} ms = ${((cpuMs * 1000) / leases).toFixed(1)} us of CPU a lease\n`);
  for (const st of (await fs.detach(() => false)).values()) await st.close();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
