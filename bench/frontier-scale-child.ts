/**
 * The frontier process of bench/frontier-scale.ts: seen-test and the frontier over the embedded
 * journal in `dir`, one partition, its store under `dir/state/frontier`; and a stand-in fetcher
 * that answers every lease at once (stored, 200), so the frontier's own work is what is
 * measured. Prints one JSON line per event on stdout:
 *   {"event":"restored","ms":…,"threadCpuMs":[…],"threads":{…},"processCpuMs":…}   the store is current (after a tail replay or a
 *                                          rebuild); CPU of each thread so far, the main thread first
 *   {"event":"intake","urls":…,"secs":…,"heapBytes":…,"bufferBytes":…}   every 5 s while URLs are fed
 *   {"event":"intake-done","urls":…,"secs":…,"threads":{…},"processCpuMs":…,"processSystemMs":…,"majorFaults":…}
 *                                          CPU by thread id and of the whole process (threads that ended too; of it
 *                                          in the kernel), and the process's major page faults, at the intake's end
 *   {"event":"first-lease","msSinceStart":…,"threadCpuMs":[…],"processCpuMs":…}
 *   {"event":"leases","perSec":…}          every second of the lease phase
 *
 *   node dist/bench/frontier-scale-child.js <dir> <urls to feed (0: none)> <lease secs> [partitions (1)] [hosts (0: min(1M, urls/50))]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../lib/config';
import { MemoryBloom } from '../lib/bloom/memory';
import { bloomParams } from '../lib/bloom/sizing';
import type { FetchRequestMsg, FetchStatusMsg, LinkMsg } from '../lib/messages';
import { frontierRecords, frontierStage } from '../processors/frontier';
import { UrlStore } from '../processors/frontier-store';
import { seenTestStage } from '../processors/seen-test';
import { EmbeddedRunner } from '../runtime/embedded-runner';
import { FileLog } from '../runtime/file-log';
import type { OutRecord, Stage } from '../runtime/stage';
import { ScaleWeb } from './frontier-scale-web';
import { parseStatCpuMs, parseStatKernel } from './proc-stat';

const started = Date.now();
const [dir, feedArg, leaseArg, partsArg, hostsArg] = process.argv.slice(2);
const FEED = Number(feedArg ?? 0);
const LEASE_SECS = Number(leaseArg ?? 30);
/** Partitions the frontier owns (each a store of its own), as `crawl run` (8 by default) and Kafka mode split the table. */
const PARTITIONS = Math.max(1, Number(partsArg ?? 1));
/** Hosts of the web fed (0 or absent: min(1M, urls/50)). */
const HOSTS = Number(hostsArg ?? 0) || undefined;
/** Links records waiting for seen-test before the feeder waits. */
const FEED_AHEAD = 4000;

/**
 * CPU (ms) of each live thread by id (libuv's pool runs LevelDB's reads and writes, LevelDB's own
 * thread its flushes and compaction), and of the whole process (threads that ended included: the
 * journal cleaner's passes).
 */
const cpuByThread = (): { threads: Record<number, number>; processCpuMs: number; processSystemMs: number; majorFaults: number } => {
  const threads: Record<number, number> = {};
  for (const t of readdirSync('/proc/self/task')) {
    try {
      threads[Number(t)] = parseStatCpuMs(readFileSync(`/proc/self/task/${t}/stat`, 'utf8'));
    } catch {
      // the thread ended
    }
  }
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const k = parseStatKernel(stat);
  return { threads, processCpuMs: parseStatCpuMs(stat), processSystemMs: k.systemMs, majorFaults: k.majorFaults };
};
/** CPU (ms) of each thread, the main thread first, the rest by thread id. */
const threadCpuMs = (threads: Record<number, number>): number[] =>
  Object.keys(threads).map(Number).sort((a, b) => (a === process.pid ? -1 : b === process.pid ? 1 : a - b)).map((t) => threads[t]);
const say = (o: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(o)}\n`);
/** V8's share of the process's memory: its heap, and the bytes of Buffers and ArrayBuffers it tracks (malloc'd outside the heap). */
const heap = (): { heapBytes: number; bufferBytes: number } => {
  const m = process.memoryUsage();
  return { heapBytes: m.heapTotal, bufferBytes: m.arrayBuffers };
};

async function main(): Promise<void> {
  const log = pino({ level: process.env.CRAWL_LOG_LEVEL ?? 'info' }, pino.destination(2));
  const config = loadConfig(process.env, { partitions: PARTITIONS, allowPrivateNetwork: true, minHostDelayMs: 1000 });
  const fileLog = new FileLog({ dir: join(dir, 'state'), partitions: PARTITIONS });
  const web = new ScaleWeb(Math.max(FEED, 1), HOSTS);
  let leasing = FEED === 0;
  /** URLs are being fed (the intake measured). */
  let feeding = false;
  const frontier = frontierStage(config, { partitions: PARTITIONS, stateDir: join(dir, 'state', 'frontier') });
  // Bench-only hook (not a product setting; read here and nowhere else): FRONTIER_SCALE_SKIP_ROW_READS=1
  // answers the intake's exact seen check (UrlStore.rows) without reading the stores, every URL
  // absent, which is true of this benchmark's web (each URL fed once, seen-test's filter before it).
  // Only while URLs are fed (no lease is out then, and the restore's read of leased rows came before):
  // the ceiling of the intake without those reads (docs/frontier-store.md, branch i50defer).
  if (process.env.FRONTIER_SCALE_SKIP_ROW_READS === '1') {
    const rows = UrlStore.prototype.rows;
    UrlStore.prototype.rows = function (this: UrlStore, urls: readonly string[]) {
      return !feeding ? rows.call(this, urls) : Promise.resolve(new Array<undefined>(urls.length).fill(undefined));
    };
  }
  // While URLs are fed, ticks release nothing (intake is measured alone); then they do.
  const gated: Stage = {
    ...frontier,
    tick: async () => (leasing ? frontier.tick!({ now: Date.now, log }) : frontierRecords(await frontier.state.tick(Date.now(), 0))),
  };
  const seen = seenTestStage(new MemoryBloom(bloomParams(Math.max(FEED, 1_000_000) * 1.2, 0.01, config.bloomMaxShardBytes)), { maxDepth: 16, scope: new Set() });
  let fetched = 0;
  let firstLease = false;
  const fetcher: Stage = {
    id: 'null-fetch',
    inputs: ['fetch'],
    outputs: ['fetchStatus'],
    concurrency: 4096,
    handle(rec) {
      const f = rec.value as FetchRequestMsg;
      fetched++;
      if (!firstLease) {
        firstLease = true;
        const cpu = cpuByThread();
        say({ event: 'first-lease', msSinceStart: Date.now() - started, threadCpuMs: threadCpuMs(cpu.threads), processCpuMs: cpu.processCpuMs });
      }
      const now = Date.now();
      const s: FetchStatusMsg = {
        url: f.url, host: f.host, lease_id: f.lease_id, stored: true, outcome: 'FETCHED', http_status: 200, reason: null, started_at: now, finished_at: now,
        response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null,
      };
      return [{ topic: 'fetchStatus', key: f.host, host: f.host, value: s }] as OutRecord[];
    },
  };
  const runner = new EmbeddedRunner(fileLog, [seen, gated, fetcher], log, {
    holdWhile: { 'seen-test': () => fileLog.lag('crawl.frontier', 'frontier') > 2000 },
  });
  await runner.start();
  const cpu = cpuByThread();
  say({ event: 'restored', ms: Date.now() - started, urls: frontier.state.stats().urls, threadCpuMs: threadCpuMs(cpu.threads), ...cpu });

  if (FEED > 0) {
    const t0 = Date.now();
    feeding = true;
    let lastSay = t0;
    for (const group of web.links()) {
      while (fileLog.lag('crawl.seen-test', 'links') > FEED_AHEAD) await new Promise((r) => setTimeout(r, 5));
      fileLog.append([{ topic: 'links', key: group.host, host: group.host, value: group.link as LinkMsg }]);
      if (Date.now() - lastSay >= 5000) {
        lastSay = Date.now();
        say({ event: 'intake', urls: frontier.state.stats().urls, secs: (lastSay - t0) / 1000, ...heap() });
        await new Promise((r) => setImmediate(r));
      }
    }
    // Done when seen-test and the frontier have taken every record (a Bloom false positive drops a URL as seen).
    while (fileLog.lag('crawl.seen-test', 'links') > 0 || fileLog.lag('crawl.frontier', 'frontier') > 0) await new Promise((r) => setTimeout(r, 100));
    say({ event: 'intake-done', urls: frontier.state.stats().urls, fed: FEED, secs: (Date.now() - t0) / 1000, hosts: frontier.state.stats().hosts, ...cpuByThread() });
    feeding = false;
    leasing = true;
  }
  let last = fetched;
  for (let s = 0; s < LEASE_SECS; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    say({ event: 'leases', perSec: fetched - last, urls: frontier.state.stats().urls, ...heap() });
    last = fetched;
  }
  await runner.stop();
  fileLog.close();
  say({ event: 'stopped' });
}

main().catch((err: unknown) => {
  process.stderr.write(`frontier-scale child: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
