/**
 * frontier: owns the URL table and the per-host politeness of its partitions.
 * In: crawl.frontier (candidates), crawl.fetch-status (answers). Out: crawl.fetch (leases),
 * crawl.urls (table rows; tombstones for expired URLs), crawl.host-policy (field `backoff`: each
 * owned host's adapted pace), crawl.feeds (the feeds it polls).
 *
 * The URL table lives on disk, one store per owned partition under `stateDir`
 * (processors/frontier-store.ts), its changelog crawl.urls. A newly owned partition's store is
 * brought up to the changelog's end (processors/frontier-restore.ts) before any of its records
 * are handled or its hosts leased; every CHECKPOINT_MS (5 s) the stores are made durable and their
 * changelog offsets recorded, so a restart replays only the tail. The owned hosts' `backoff`
 * rows and the owned feeds (crawl.feeds) are also restored before any fetch is released; operator blocks, crawl-rate ceilings and
 * webmasters' rates come from the whole crawl.host-policy table, and opt-outs from crawling from
 * the whole crawl.optout registry (a denied host gets no lease).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { HostPolicyTable, hostPolicyKey } from '../lib/host-policy';
import type { CandidateMsg, FeedStateMsg, FetchStatusMsg, HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import type { FollowsOptOuts } from '../runtime/registry-report';
import type { InRecord, OutRecord, Stage, StageContext, TableRecord } from '../runtime/stage';
import { expandCandidate } from '../lib/link-groups';
import { FrontierState, type FrontierEmits, type FrontierPolicy, type FrontierTuning, TUNING_DEFAULTS } from './frontier-state';
import type { ChangelogSource } from '../runtime/changelog';
import { checkpoint, restoreStores } from './frontier-restore';
import { queueLayout } from './frontier-schedule';
import type { UrlStore } from './frontier-store';
import { MIN_OPEN_TABLES } from '../connectors/kv-store';

/**
 * LevelDB's memory for each partition's store, shared by all partitions a process may own so
 * that owning 8 costs what owning one does (docs/frontier-store.md, Figures):
 *  - block cache and memtable: 48 MiB of each (4 MiB each at least);
 *  - the mapped table files: LevelDB maps every open table file and the pages it reads stay
 *    resident, so 256 MiB worth of open tables: its smallest table cache (64 files) of files
 *    of 256 MiB / 64 / partitions (at least 1 MiB). With 32 MiB files and a cache of 990 this
 *    part grew with the table (1.9 GiB at 50M URLs).
 *  - no Snappy compression: LevelDB reads an uncompressed block in place from the mapped file,
 *    where it decompressed every block it read (the seen check's misses, compactions) into a
 *    malloc'd copy for the block cache, the open tables' index and filter blocks, or an
 *    iterator. `node dist/bench/run.js --only frontier-scale --urls 10000000 --partitions 8`
 *    (docs/frontier-store.md, "The C heap outside V8"): C heap and other 145-166 MiB at 10M rows
 *    instead of 241-273, peak RSS 683 MiB instead of 876, intake no slower; the store takes
 *    about 3.4 times the disk (204 B a URL instead of 59).
 */
export function storeBudget(partitions: number): { cacheBytes: number; writeBufferBytes: number; openTables: number; fileBytes: number; compression: boolean } {
  const p = Math.max(1, partitions);
  const each = Math.max(4 << 20, Math.floor((48 << 20) / p));
  const fileBytes = Math.max(1 << 20, Math.floor((256 << 20) / MIN_OPEN_TABLES / p));
  return { cacheBytes: each, writeBufferBytes: each, openTables: MIN_OPEN_TABLES, fileBytes, compression: false };
}

/** How often owned stores are made durable and their changelog offsets recorded. */
export const CHECKPOINT_MS = 5_000;

/** A frontier operation's emits as log records, in the order they must be written. */
export function frontierRecords(e: FrontierEmits): OutRecord[] {
  const out: OutRecord[] = [];
  // The table row goes first: a crash between the two leaves a LEASED row whose lease
  // expires and is re-issued, never a fetch the table does not know about.
  for (const r of e.rows) out.push({ topic: 'urls', key: r.url, host: r.host, value: r });
  for (const x of e.expired ?? []) out.push({ topic: 'urls', key: x.url, host: x.host, value: null });
  // Back-off before any further fetch, so a restart never forgets a Retry-After window.
  for (const p of e.policies ?? []) out.push({ topic: 'hostPolicy', key: hostPolicyKey(p.host, p.field), host: p.host, value: p });
  for (const f of e.feeds ?? []) out.push({ topic: 'feeds', key: f.url, host: f.host, value: f.value });
  for (const f of e.fetches) out.push({ topic: 'fetch', key: f.host, host: f.host, value: f });
  return out;
}

/**
 * One intake batch's rows emitted and not yet in the log, known by the array of records its
 * handleBatch returned. One Map for all batches, with an entry set and deleted per row, cost
 * ~117 B a URL of hash tables that went to the old generation (docs/frontier-store.md, "What
 * the intake promotes"). A candidate for a URL the table knows is rare at the frontier
 * (seen-test sends on only what its filter has not seen), so a batch's rows are searched in
 * place, and indexed only once looked up often or changed.
 */
export class Unjournaled {
  private index: Set<string> | null = null;
  private scans = 0;

  constructor(
    readonly outs: readonly OutRecord[],
    private readonly rows: readonly UrlStateMsg[],
  ) {}

  has(url: string): boolean {
    if (this.index) return this.index.has(url);
    if (++this.scans > Unjournaled.SCANS) return this.indexed().has(url);
    for (const r of this.rows) if (r.url === url) return true;
    return false;
  }

  /** The URL's row is a later batch's now; whether none is left. */
  drop(url: string): boolean {
    const index = this.indexed();
    index.delete(url);
    return index.size === 0;
  }

  private indexed(): Set<string> {
    if (!this.index) this.index = new Set(this.rows.map((r) => r.url));
    return this.index;
  }

  /** Look-ups a batch's rows are searched in place for before they are indexed. */
  static readonly SCANS = 8;
}

export interface FrontierStage extends Stage, FollowsOptOuts {
  readonly state: FrontierState;
  idle(): boolean;
}

export interface FrontierStageOptions {
  partitions: number;
  /** Folder of the partitions' stores (`<stateDir>/urls-<partition>`). */
  stateDir: string;
  tickMs?: number;
  now?: () => number;
  /** How long a newly owned partition waits for its previous owner on this machine to close the store. */
  lockWaitMs?: number;
  checkpointMs?: number;
  /** The host-policy view, when stages of one process share it (runtime/build-stages.ts); else one of its own. */
  policy?: HostPolicyTable;
  /** This frontier's name in its lease ids (default `<hostname>:<pid>`). */
  instance?: string;
  /**
   * Leases in flight at most (CRAWL_FRONTIER_MAX_LEASES; 0 or absent: no limit): a tick
   * releases no more than the room left under it. Every lease is a crawl.fetch record until
   * fetch takes it and a crawl.fetch-status record until the frontier does.
   */
  maxLeases?: number;
}

export function frontierStage(policy: FrontierPolicy & Partial<FrontierTuning>, opts: FrontierStageOptions): FrontierStage {
  const table = opts.policy ?? new HostPolicyTable();
  const optout = new OptOutRegistry();
  // A lease id names the frontier that issued it (`crawl explain`, logs, the partition-move test).
  const instance = opts.instance ?? `${hostname()}:${process.pid}`;
  const state = new FrontierState(policy, () => `${instance}/${randomUUID()}`, table, optout, { partitions: opts.partitions });
  const now = opts.now ?? Date.now;
  /** The queue layout the stores' keys are derived with (classes x levels), as checkpoints record it. */
  const levels = queueLayout(policy.priorityLevels ?? TUNING_DEFAULTS.priorityLevels);
  const dirOf = (p: number): string => join(opts.stateDir, `urls-${p}`);
  let source: ChangelogSource | null = null;
  let log: Logger | null = null;
  let checkpointAt = now();
  /**
   * New rows emitted and not yet written to the log (produced), a batch's together: a candidate
   * for one of them (its record replayed after a failed produce) emits the row again
   * (FrontierState.onCandidates), and the row is then the later batch's.
   */
  const unjournaled: Unjournaled[] = [];
  const isUnjournaled = (url: string, moved: Array<[Unjournaled, string]>): boolean => {
    for (let i = unjournaled.length - 1; i >= 0; i--) {
      if (unjournaled[i].has(url)) {
        moved.push([unjournaled[i], url]);
        return true;
      }
    }
    return false;
  };

  /** Record each store's changelog offset (read before the store is made durable). */
  const checkpointAll = async (stores: ReadonlyMap<number, UrlStore>): Promise<void> => {
    if (!source || stores.size === 0) return;
    const ends = await source.ends([...stores.keys()]);
    for (const [p, store] of stores) await checkpoint(dirOf(p), store, ends.get(p) ?? 0, levels);
  };
  const owned = (): Map<number, UrlStore> => new Map(state.owned().map((p) => [p, state.store(p)!]));
  /** Checkpoint and close stores no longer owned (a handover on this machine then replays only the tail). */
  const letGo = async (stores: Map<number, UrlStore>): Promise<void> => {
    await checkpointAll(stores).catch((err: unknown) => log?.warn({ err }, 'frontier checkpoint not written'));
    for (const s of stores.values()) await s.close();
  };
  const handleBatch = async (recs: readonly InRecord[]): Promise<OutRecord[]> => {
    const at = now();
    // A record holds a group of URLs of one host (lib/link-groups).
    const cands: CandidateMsg[] = [];
    const statuses: FetchStatusMsg[] = [];
    for (const r of recs) {
      if (r.topic === 'frontier') cands.push(...expandCandidate(r.value as CandidateMsg));
      else if (r.value) statuses.push(r.value as FetchStatusMsg);
    }
    const out: OutRecord[] = [];
    if (statuses.length) out.push(...frontierRecords(await state.onStatuses(statuses, at)));
    if (cands.length) {
      const moved: Array<[Unjournaled, string]> = [];
      const e = await state.onCandidates(cands, at, (url) => isUnjournaled(url, moved));
      // Rows emitted again are this batch's now; a batch whose rows all went leaves.
      for (const [u, url] of moved) {
        const i = u.drop(url) ? unjournaled.indexOf(u) : -1;
        if (i >= 0) unjournaled.splice(i, 1);
      }
      if (e.rows.length) unjournaled.push(new Unjournaled(out, e.rows));
      out.push(...frontierRecords(e));
    }
    return out;
  };

  return {
    id: 'frontier',
    inputs: ['frontier', 'fetchStatus'],
    outputs: ['fetch', 'urls', 'hostPolicy', 'feeds'],
    restoreFrom: ['hostPolicy', 'feeds'],
    changelog: 'urls',
    globalTables: ['hostPolicy', 'optout'],
    tickMs: opts.tickMs ?? 50,
    state,
    optoutRegistry: optout,
    async restoreChangelog(partitions: readonly number[], changelog: ChangelogSource, ctx: StageContext) {
      source = changelog;
      log = ctx.log;
      const restored = await restoreStores(partitions, changelog, {
        dirOf, levelOf: state.levelOf, levels, log: ctx.log, lockWaitMs: opts.lockWaitMs ?? 30_000, kv: storeBudget(opts.partitions),
      });
      for (const r of restored) await state.attach(r.partition, r.store, now());
    },
    restore(rec: TableRecord, topic) {
      if (!rec.value) return;
      if (topic === 'feeds') state.restoreFeed(rec.key, rec.value as FeedStateMsg);
      else if (topic === 'hostPolicy' && (rec.value as HostPolicyMsg).field === 'backoff') state.restoreBackoff(rec.value as HostPolicyMsg, now());
    },
    onGlobal(rec: TableRecord, topic) {
      const bar = rec.key.indexOf('|');
      if (topic === 'optout') {
        optout.apply(rec.key, rec.value as OptOutMsg | null);
        // A subject's hosts are looked at again: a lifted opt-out of the host itself wakes it now.
        state.onPolicyChange(bar < 0 ? rec.key : rec.key.slice(0, bar), now());
        return;
      }
      // Our own `backoff` rows come back here too; they only feed `crawl explain`-style reads.
      table.apply(rec.key, rec.value as HostPolicyMsg | null);
      if (bar > 0) state.onPolicyChange(rec.key.slice(0, bar), now());
    },
    handle: (rec) => handleBatch([rec]),
    handleBatch,
    produced(outs) {
      // The runtimes hand over the array handleBatch returned (runtime/stage.ts): its batch leaves whole.
      const i = unjournaled.findIndex((u) => u.outs === outs);
      if (i >= 0) unjournaled.splice(i, 1);
    },
    async tick() {
      const cap = opts.maxLeases ?? 0;
      const out = frontierRecords(await state.tick(now(), cap > 0 ? Math.max(0, cap - state.leasesInFlight()) : Infinity));
      if (now() - checkpointAt >= (opts.checkpointMs ?? CHECKPOINT_MS)) {
        checkpointAt = now();
        await checkpointAll(owned()).catch((err: unknown) => log?.warn({ err }, 'frontier checkpoint not written'));
      }
      return out;
    },
    assigned(partitions) {
      const keep = new Set(partitions);
      // Lost partitions leave memory first (no lease for their hosts from here on), then are let go.
      if (state.owned().some((p) => !keep.has(p))) {
        void state.detach((p) => keep.has(p)).then(letGo).catch((err: unknown) => log?.error({ err }, 'closing a lost partition failed'));
      }
      // Each frontier spends its partitions' share of the crawl's budget (processors/frontier-budget.ts).
      state.setBudgetFraction(keep.size / opts.partitions, now());
    },
    async close() {
      await letGo(await state.detach(() => false));
    },
    idle: () => state.idle(now()),
  };
}
