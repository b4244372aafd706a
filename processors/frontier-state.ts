/**
 * The frontier's state for the partitions it owns. The URL table (the exact "seen" truth) and
 * each host's queue, split into priority levels (the front queues), live on disk in one store
 * per partition (processors/frontier-store.ts); memory holds only what the scheduler needs now:
 * per host with work, its queue's length and first few URLs, its pace and the one request it
 * may have in flight; the heap of hosts keyed by the time they may next be fetched; the leases
 * out to fetchers. Memory grows with hosts that have work, not with URLs known
 * (docs/frontier-store.md).
 *
 * No clock and no emits of its own: every operation takes `now` and returns the URL-table rows,
 * fetch requests and host-policy rows to emit. Each operation reads what it needs from the
 * stores, decides, and writes its changes to the stores before it returns its emits, so the
 * store never lags the changelog the runtime then writes. Operations decide one at a time and
 * write in the order they decided; candidates (the intake) are pipelined: one batch reads and
 * decides while the batch before it is still being written, seeing that batch's rows through
 * `pending` (rows decided and not yet known to be readable from the store). Every other
 * operation waits for all writes before it (`serial`).
 *
 * Fetchers' answers and the tick go ahead of the intake (`ahead`): each starts at the next
 * boundary between operations (once every operation begun before it has written, before the
 * next one reads), not behind every candidate batch queued before it. Answers and ticks keep
 * their order among themselves; the intake's batches keep theirs. With hundreds of candidate
 * batches queued, a tick waited 3-5 s for its turn while hundreds of hosts were due and fetch
 * had nothing to do, and answers as long while their hosts counted as in flight
 * (docs/performance.md, "The frontier's answers and ticks ahead of its intake").
 *
 * Politeness, in layers, all of which must allow a request:
 * - host: at most one request in flight, the next no sooner than finish + the host's gap,
 *   gap = max(the host's least gap (minHostDelayMs, or a webmaster's rate in its place, at least
 *   an operator's crawl-rate ceiling), Crawl-delay, responseTimeFactor x response time, the
 *   adapted AIMD gap), and never inside a Retry-After/pause window;
 * - an operator block (crawl.host-policy field `block`) holds the host until it expires, and an
 *   opt-out from crawling (crawl.optout, crawl=deny) while it stands: no lease (frontier-holds.ts);
 * - registered domain and resolved IP: processors/frontier-layers.ts;
 * - at most hostBudgetPerCycle fetches per host per cycle (this process's lifetime).
 *
 * Priority classes and the fetch budget (processors/priority-class.ts, frontier-budget.ts): each
 * new row gets a class, a host's queue on disk is ordered by class and then level (the queue
 * key's slot), and a host's URL is released only when its class has budget: the head's when its
 * class has, else the first URL of a later class that has (read from the store); a host whose
 * classes have none waits for it. Feeds (frontier-feeds.ts) are rows polled at their own interval.
 * The call sites are marked [class], [budget] and [feeds].
 */
import { randomUUID } from 'node:crypto';
import { MinHeap } from '../lib/heap';
import { HostPolicyTable } from '../lib/host-policy';
import { OptOutRegistry } from '../lib/optout-registry';
import type { CandidateMsg, FeedStateMsg, FetchRequestMsg, FetchStatusMsg, HostPolicyMsg, UrlStateMsg } from '../lib/messages';
import { DEFAULTS, type CrawlConfig } from '../lib/config';
import { partitionForHost } from '../lib/partitioner';
import { redirectField } from '../lib/redirect-hops';
import { AIMD_DEFAULTS, backoffFromRecord, handOverWaitMs, type AimdPolicy, type HostBackoff } from './frontier-aimd';
import { applyAnswer, HostState } from './frontier-hosts';
import { ClassBudget, type BudgetPolicy, type ClassBudgetView } from './frontier-budget';
import { FeedTable, type FeedPolicy } from './frontier-feeds';
import { heldUntil } from './frontier-holds';
import { LayerGroups } from './frontier-layers';
import { FrontierOp } from './frontier-op';
import { queueSlotOf, recrawlIntervalMs, type RecrawlPolicy } from './frontier-schedule';
import { FEED_DUE, indexEntry, queueKey, queuedAtFront } from './frontier-keys';
import type { QueuedRef, UrlStore } from './frontier-store';
import { PRIORITY_CLASSES, priorityClassOf, type ClassPolicy, type PriorityClass } from './priority-class';

/** The settings the frontier needs (documented in lib/config.ts). */
export type FrontierPolicy = Pick<CrawlConfig, 'minHostDelayMs' | 'maxCrawlDelayMs' | 'responseTimeFactor' | 'leaseMs' | 'retryBackoffMs' | 'maxAttempts'>;

/** The newer knobs (documented in lib/config.ts); any left out take TUNING_DEFAULTS. */
export type FrontierTuning = AimdPolicy &
  RecrawlPolicy &
  ClassPolicy &
  BudgetPolicy &
  FeedPolicy &
  Pick<CrawlConfig, 'domainMaxInflight' | 'domainMinGapMs' | 'ipMaxInflight' | 'ipMinGapMs' | 'priorityLevels' | 'hostBudgetPerCycle' | 'urlTtlMs'>;

export const TUNING_DEFAULTS: FrontierTuning = {
  ...AIMD_DEFAULTS,
  domainMaxInflight: DEFAULTS.domainMaxInflight, domainMinGapMs: DEFAULTS.domainMinGapMs,
  ipMaxInflight: DEFAULTS.ipMaxInflight, ipMinGapMs: DEFAULTS.ipMinGapMs,
  priorityLevels: DEFAULTS.priorityLevels, hostBudgetPerCycle: DEFAULTS.hostBudgetPerCycle,
  recrawlInitialMs: DEFAULTS.recrawlInitialMs, recrawlMinMs: DEFAULTS.recrawlMinMs, recrawlMaxMs: DEFAULTS.recrawlMaxMs,
  urlTtlMs: DEFAULTS.urlTtlMs,
  priorityClassTailDepth: DEFAULTS.priorityClassTailDepth, priorityClassHighMin: DEFAULTS.priorityClassHighMin,
  priorityClassLowBelow: DEFAULTS.priorityClassLowBelow,
  budgetPagesPerDay: DEFAULTS.budgetPagesPerDay, budgetClassShares: DEFAULTS.budgetClassShares, budgetLendUnused: DEFAULTS.budgetLendUnused,
  budgetBurstSecs: DEFAULTS.budgetBurstSecs,
  feedPollMs: DEFAULTS.feedPollMs, feedMinPollMs: DEFAULTS.feedMinPollMs, feedMaxPollMs: DEFAULTS.feedMaxPollMs, feedMaxItems: DEFAULTS.feedMaxItems,
  feedMaxPerHost: DEFAULTS.feedMaxPerHost,
};

/** URLs read into a host's head at a time, and the most kept in all heads together. */
const HEAD_READ = 8;
const HEAD_BUDGET = 50_000;
/**
 * Hosts released per tick at most (20 ticks a second: 40,960 leases a second), and hosts whose
 * queue is read from the store at once. A frontier with 40,000 hosts due at once (all of a
 * rebuilt store's) read every queue in one go: 1.5 GiB of RSS and no lease for 30 s.
 */
const RELEASES_PER_TICK = 2048;
const HEAD_READS_AT_ONCE = 64;
/** Due retries and recrawls requeued per partition per tick. */
const DUE_PER_TICK = 5000;
/** Rows looked at per partition per tick by the expiry sweep, and how often it steps. */
const SWEEP_ROWS = 2000;
const SWEEP_EVERY_MS = 1000;
/** A known, never-tried URL found again is written to the changelog again when its row was written this long before its partition was restored (mayBeUnjournaled). */
const REASSERT_BEFORE_RESTORE_MS = 5 * 60_000;
/** Hosts looked at per tick for eviction (nothing queued, nothing in flight, free to go). */
const EVICT_PER_TICK = 2000;
/**
 * Leases in flight that keep the LEASED row they wrote, so the fetcher's final answer settles it
 * without reading it back from the store: one random read less a lease, a third of a lease's
 * reads with a table of 10M rows (docs/frontier-store.md). Bounded (about 1 KiB a row): past it
 * a lease keeps no row and its answer reads the store as before.
 */
const LEASE_ROWS_KEPT = 20_000;
/** Answered leases' entries the lease-expiry heap may hold beyond twice the leases in flight. */
const LEASE_HEAP_SLACK = 4096;

/** `{ priority }` only when known, so rows and requests of unscored URLs stay as they were. */
function priorityField(priority: number | null | undefined): { priority?: number } {
  return priority !== null && priority !== undefined ? { priority } : {};
}

export interface FrontierEmits {
  rows: UrlStateMsg[];
  fetches: FetchRequestMsg[];
  /** crawl.host-policy rows (field `backoff`); absent when none. */
  policies?: HostPolicyMsg[];
  /** URLs dropped from the table (unfetched past urlTtlMs): tombstones in crawl.urls. */
  expired?: Array<{ url: string; host: string }>;
  /** crawl.feeds rows (value null: a tombstone); absent when none. */
  feeds?: Array<{ url: string; host: string; value: FeedStateMsg | null }>;
}

/** Per priority class, for metrics and the status page. */
export interface ClassStats extends ClassBudgetView {
  /** Pages fetched (a final status with an HTTP status) of the class since this process started. */
  fetched: number;
}

/** What the frontier knows of a host, for `crawl explain`. */
export interface HostView {
  nextAt: number;
  inflight: boolean;
  queued: number;
  backoff: HostBackoff;
  fetchesThisCycle: number;
  ip: string | null;
}

export interface FrontierStats {
  urls: number;
  queued: number;
  leased: number;
  /** Hosts held in memory (with work, in flight or still waiting out their gap). */
  hosts: number;
  retrying: number;
  recrawls: number;
  byState: Partial<Record<UrlStateMsg['state'], number>>;
}

export class FrontierState {
  private readonly stores = new Map<number, UrlStore>();
  /** When each partition was restored: hosts first seen soon after wait a full delay from then. */
  private readonly restoredAt = new Map<number, number>();
  /** Earliest retry or recrawl time per store (0: not known, look). */
  private readonly nextDue = new Map<UrlStore, number>();
  /** Where each partition's expiry sweep is, and when it last stepped. */
  private readonly sweep = new Map<number, { after: string; at: number }>();
  private readonly hosts = new Map<string, HostState>();
  private readonly ready = new MinHeap<HostState>();
  /** URLs out to a fetcher and not yet final (stored or failed): url -> lease. */
  private readonly urlLeases = new Map<string, { id: string; expiresAt: number; host: string; row?: UrlStateMsg }>();
  /** Leases that keep their LEASED row (at most LEASE_ROWS_KEPT): their final status reads no row from the store. */
  private leaseRows = 0;
  /** Lease expiry times; entries for leases already answered are skipped (and dropped: lease). */
  private leases = new MinHeap<{ url: string; id: string }>();
  private readonly domains: LayerGroups;
  private readonly ips: LayerGroups;
  private readonly tuning: FrontierTuning;
  /** URLs queued at hosts still under their budget (the work left this cycle). */
  private queued = 0;
  /** URLs held in hosts' heads. */
  private headRefs = 0;
  private evictCursor: IterableIterator<HostState> | null = null;
  /** The last operation's decision, and its write: the next decides after the one, writes after the other. */
  private decided: Promise<unknown> = Promise.resolve();
  private written: Promise<unknown> = Promise.resolve();
  /** Operations numbered as they decide; how many have written. */
  private opSeq = 0;
  private opsWritten = 0;
  /**
   * Operations decided whose writes a store read started since may not have seen, oldest first:
   * their staged rows are read from the operations themselves (`pendingRow`), and an operation
   * leaves whole once every reader sees its write. One Map of rows for all of them, with an
   * entry set per row decided and deleted per row forgotten (and the whole Map iterated after
   * every write), reallocated its hash tables as it grew and shrank: ~150 B a URL of garbage that
   * went to the old generation (docs/frontier-store.md, "What the intake promotes").
   */
  private readonly pending: Array<{ seq: number; op: FrontierOp }> = [];
  /** Operations reading now, by the number of writes done when they began. */
  private readonly reading = new Set<number>();
  /** This cycle (a frontier process's life): fetches counted against hostBudgetPerCycle. */
  readonly cycle: number;
  /** [budget] The fetch budget by class; hosts waiting for it. */
  private readonly budget: ClassBudget<HostState>;
  /** [class] Pages fetched by class. */
  private readonly fetchedByClass = [0, 0, 0];
  /**
   * [feeds] The feeds of this frontier's partitions (at most feedMaxPerHost a host, restored from
   * crawl.feeds): per feed, not per URL known.
   */
  readonly feeds: FeedTable;
  /**
   * What applyAnswer needs, built once: spreading the policy and tuning into a new object on
   * every status was most of the frontier's time and most of its garbage.
   */
  private readonly pace: FrontierPolicy & FrontierTuning;

  constructor(
    private readonly policy: FrontierPolicy & Partial<FrontierTuning>,
    private readonly newLeaseId: () => string = randomUUID,
    /** Operator blocks and crawl-rate ceilings (fed from crawl.host-policy by the stage). */
    readonly table: HostPolicyTable = new HostPolicyTable(),
    /** The opt-out registry (fed from crawl.optout by the stage): crawl=deny holds a host. */
    readonly optout: OptOutRegistry = new OptOutRegistry(),
    readonly opts: { partitions: number; cycle?: number } = { partitions: 1 },
  ) {
    const pick = <K extends keyof FrontierTuning>(k: K): FrontierTuning[K] => (policy[k] ?? TUNING_DEFAULTS[k]) as FrontierTuning[K];
    this.tuning = Object.fromEntries((Object.keys(TUNING_DEFAULTS) as Array<keyof FrontierTuning>).map((k) => [k, pick(k)])) as unknown as FrontierTuning;
    this.domains = new LayerGroups({ maxInflight: Math.max(1, this.tuning.domainMaxInflight), minGapMs: this.tuning.domainMinGapMs });
    this.ips = new LayerGroups({ maxInflight: Math.max(1, this.tuning.ipMaxInflight), minGapMs: this.tuning.ipMinGapMs });
    this.cycle = opts.cycle ?? Date.now();
    this.budget = new ClassBudget(this.tuning);
    this.feeds = new FeedTable(this.tuning);
    this.pace = { ...policy, ...this.tuning };
  }

  /**
   * The row's slot in its host's queue (the queue key's first byte after the host): [class] its
   * class first, then its level: by the importance a scorer gave it (Candidate.priority) until
   * the URL is first fetched, by depth after that (a recrawl) or when it has none.
   */
  readonly levelOf = (row: UrlStateMsg): number => queueSlotOf(row, this.tuning);

  /** [budget] This process's part of the crawl (Kafka mode: owned partitions / all partitions). */
  setBudgetFraction(f: number, now: number): void {
    this.budget.setFraction(f, now);
  }

  /** [class] Leases, pages fetched and budget by class. */
  classStats(now: number): ClassStats[] {
    return this.budget.view(now).map((v) => ({ ...v, fetched: this.fetchedByClass[v.priority_class - 1] }));
  }

  /** [class] A row's class: as written, or derived for rows written before classes existed. */
  classOf(row: UrlStateMsg): PriorityClass {
    return priorityClassOf(row, this.tuning);
  }

  /** [feeds] Rebuild a feed from its crawl.feeds row (null: a tombstone). */
  restoreFeed(url: string, value: FeedStateMsg | null): void {
    this.feeds.restore(url, value);
  }

  /** Run one operation after every operation before it has decided and written. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = Promise.all([this.decided, this.written]).then(() => this.runAhead()).then(fn);
    this.decided = this.written = run.catch(() => undefined);
    return run;
  }

  /** Operations to start at the next boundary between operations (`serialAhead`), oldest first. */
  private readonly ahead: Array<() => Promise<unknown>> = [];

  /**
   * Run an operation as `serial` does, but ahead of operations queued before it that have not
   * begun: it starts at the next boundary (every operation begun before it written, the next
   * not yet reading) or at its own place in the queue, whichever comes first, and runs once.
   * Its result is handed back as soon as it has run; its place in the queue stays (as a no-op
   * once it has run), so what is queued after it still follows it.
   */
  serialAhead<T>(fn: () => Promise<T>): Promise<T> {
    let run: Promise<T> | null = null;
    let settle!: (run: Promise<T>) => void;
    const result = new Promise<T>((resolve) => (settle = resolve));
    const start = (): Promise<T> => {
      if (!run) settle((run = fn()));
      return run;
    };
    this.ahead.push(() => start().catch(() => undefined));
    this.serial(start).catch(() => undefined); // its error goes to `result`
    return result;
  }

  /**
   * Start the operations waiting to go ahead, one after another: those waiting now, not those
   * queued while they run (the intake's next batch then has its turn). Called at a boundary,
   * where an operation that is not ahead would begin: what came before is written and its
   * emits handed back first, as for any operation that follows it.
   */
  private async runAhead(): Promise<void> {
    if (this.ahead.length === 0) return;
    for (const start of this.ahead.splice(0)) await start();
  }

  /** Operations waiting to go ahead of the intake (for tests and metrics). */
  get waitingAhead(): number {
    return this.ahead.length;
  }

  /**
   * Run an operation that only reads rows and host summaries before it decides (the intake):
   * it reads and decides once the one before has decided, while that one may still be writing,
   * and writes after it.
   */
  private pipelined(decide: (op: FrontierOp) => Promise<void>): Promise<FrontierEmits> {
    const seq = ++this.opSeq;
    let snapshot = 0;
    const before = this.written;
    const decided = this.decided.then(async () => {
      // Operations waiting to go ahead run here, once every write before this one is done.
      if (this.ahead.length > 0) {
        await before;
        await this.runAhead();
      }
      snapshot = this.opsWritten;
      this.reading.add(snapshot);
      const op = this.newOp();
      try {
        await decide(op);
        this.pending.push({ seq, op });
        return op;
      } catch (err) {
        await op.discard().catch(() => undefined);
        throw err;
      } finally {
        this.reading.delete(snapshot);
      }
    });
    const written = Promise.all([decided, this.written]).then(async ([op]) => {
      const out = await this.commit(op);
      this.opsWritten = seq;
      this.forgetPending();
      return out;
    });
    this.decided = decided.catch(() => undefined);
    this.written = written.catch(() => undefined);
    return written;
  }

  /** Drop pending operations every reader now sees in the store: written before the oldest read began. */
  private forgetPending(): void {
    let oldest = this.opsWritten;
    for (const r of this.reading) oldest = Math.min(oldest, r);
    let n = 0;
    while (n < this.pending.length && this.pending[n].seq <= oldest) n++;
    if (n > 0) this.pending.splice(0, n);
  }

  /** A URL's row as the latest pending operation that staged it left it (null: removed); undefined if none did. */
  private readonly pendingRow = (url: string): UrlStateMsg | null | undefined => {
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const row = this.pending[i].op.stagedRow(url);
      if (row !== undefined) return row;
    }
    return undefined;
  };

  private lastHost = '';
  private lastPartition = 0;

  /** The host's partition (the last answer is kept: a batch's URLs come in runs of one host). */
  partitionOf(host: string): number {
    if (this.opts.partitions === 1) return 0;
    if (host !== this.lastHost) {
      this.lastPartition = partitionForHost(host, this.opts.partitions);
      this.lastHost = host;
    }
    return this.lastPartition;
  }

  storeFor(host: string): UrlStore | undefined {
    return this.stores.get(this.partitionOf(host));
  }

  owned(): number[] {
    return [...this.stores.keys()];
  }

  store(partition: number): UrlStore | undefined {
    return this.stores.get(partition);
  }

  // ---- partitions ------------------------------------------------------------------------

  /**
   * Take a restored partition's store: its hosts with queued URLs and its leases come into
   * memory. Every host of the partition waits one full delay from `now` (when it was last
   * fetched is not known here: the longest gap it can have been given without a row in
   * crawl.host-policy, or that of its persisted gap), and a LEASED row keeps its lease and counts
   * as a request in flight: a live fetcher may still be working on it.
   */
  attach(partition: number, store: UrlStore, now: number): Promise<void> {
    return this.serial(async () => {
      this.dropPartition(partition);
      this.stores.set(partition, store);
      // A partition with no rows was never fetched from: its hosts need not wait.
      if (store.size > 0) this.restoredAt.set(partition, now);
      else this.restoredAt.delete(partition);
      this.nextDue.set(store, 0);
      this.sweep.set(partition, { after: '', at: now });
      // The partition is known: no routing key (a Public Suffix List lookup) and hash per host,
      // 2.1 of the restart's 7.6 s of main-thread CPU at a million hosts. The names are the
      // store's own strings (decoded from its keys), not slices of anything: not copied again.
      await store.eachHost((chunk) => {
        for (const [host, s] of chunk) if (s.queued > 0) this.hostState(host, now, s, partition, true);
      });
      const rows = await store.rows((await store.leased()).map((r) => r.url));
      for (const row of rows) {
        if (!row || row.state !== 'LEASED' || !row.lease_id) continue;
        this.lease(row.url, row.host, row.lease_id, row.lease_expires_at ?? now);
        const h = this.hostState(row.host, now);
        if (!h.inflight) {
          h.inflight = { id: row.lease_id, url: row.url, domain: h.domain, ip: null };
          this.domains.acquire(h.domain, now);
        }
      }
    });
  }

  /**
   * Forget partitions this instance no longer owns (after a rebalance), so it never releases a
   * fetch for a host whose politeness now lives elsewhere. Returns their stores (to close).
   */
  detach(keep: (partition: number) => boolean): Promise<Map<number, UrlStore>> {
    return this.serial(async () => {
      const gone = new Map<number, UrlStore>();
      for (const [p, store] of [...this.stores]) {
        if (keep(p)) continue;
        gone.set(p, store);
        this.dropPartition(p);
      }
      if (gone.size) this.feeds.retain((host) => keep(this.partitionOf(host))); // [feeds]
      return gone;
    });
  }

  private dropPartition(partition: number): void {
    const store = this.stores.get(partition);
    if (!store) return;
    this.stores.delete(partition);
    this.nextDue.delete(store);
    for (const [host, h] of this.hosts) {
      if (this.partitionOf(host) !== partition) continue;
      if (this.underBudget(h)) this.queued -= h.size;
      this.dropHead(h);
      this.hosts.delete(host);
    }
    for (const [url, l] of this.urlLeases) if (this.partitionOf(l.host) === partition) this.unlease(url);
    this.domains.clear();
    this.ips.clear();
    for (const h of this.hosts.values()) {
      if (!h.inflight) continue;
      this.domains.acquire(h.inflight.domain, 0);
      if (h.inflight.ip) this.ips.acquire(h.inflight.ip, 0);
    }
    this.budget.retain((h) => this.hosts.get(h.host) === h); // [budget]
    // Hosts parked on a domain or IP group lost their place with the groups: look again.
    for (const h of this.hosts.values()) this.schedule(h);
  }

  // ---- reads -----------------------------------------------------------------------------

  /** Leases issued and not yet answered or expired. */
  leasesInFlight(): number {
    return this.urlLeases.size;
  }

  stats(): FrontierStats {
    const byState: FrontierStats['byState'] = {};
    let urls = 0;
    for (const s of this.stores.values()) {
      for (const [k, n] of Object.entries(s.counts)) {
        byState[k as UrlStateMsg['state']] = (byState[k as UrlStateMsg['state']] ?? 0) + n;
        urls += n;
      }
    }
    return {
      urls, queued: this.queued, leased: this.urlLeases.size, hosts: this.hosts.size, retrying: byState.FAILED ?? 0, recrawls: byState.FETCHED ?? 0, byState,
    };
  }

  /**
   * True when nothing is out to a fetcher and nothing is due soon. URLs parked until a retry or
   * recrawl time, past their host's budget, or queued behind a host that may not be contacted
   * for more than `parkAfterMs` (a Retry-After, a 503 pause, a block) do not count: a bounded
   * crawl may stop and leave them journaled for the next run. Without `now`, any queued URL
   * counts as work.
   */
  idle(now?: number, parkAfterMs = 60_000): boolean {
    if (this.urlLeases.size > 0) return false;
    if (this.queued === 0) return true;
    if (now === undefined) return false;
    for (const h of this.hosts.values()) if (h.size > 0 && h.nextAt <= now + parkAfterMs) return false;
    return true;
  }

  /** Queued URLs whose host may not be contacted within `parkAfterMs`. */
  parked(now: number, parkAfterMs = 60_000): number {
    let n = 0;
    for (const h of this.hosts.values()) if (h.nextAt > now + parkAfterMs) n += h.size;
    return n;
  }

  /**
   * Hosts with work (queued or in flight), and how long the longest-waiting of those free to
   * go has been due: the scheduler's backlog, for /stats and /metrics.
   */
  dueHosts(now: number): { withWork: number; oldestDueAgeMs: number | null } {
    let withWork = 0;
    let oldest = Infinity;
    for (const h of this.hosts.values()) {
      if (h.size === 0 && !h.inflight) continue;
      withWork++;
      if (!h.inflight && h.size > 0 && this.underBudget(h) && h.nextAt <= now) oldest = Math.min(oldest, h.nextAt);
    }
    return { withWork, oldestDueAgeMs: oldest === Infinity ? null : now - oldest };
  }

  /** A URL's row, from its partition's store. */
  async row(url: string, host = hostOf(url)): Promise<UrlStateMsg | undefined> {
    const store = host === null ? undefined : this.storeFor(host);
    return store ? (await store.rows([url]))[0] : undefined;
  }

  host(host: string): HostView | undefined {
    const h = this.hosts.get(host);
    if (!h) return undefined;
    return { nextAt: h.nextAt, inflight: h.inflight !== null, queued: h.size, backoff: h.backoff, fetchesThisCycle: h.fetches, ip: h.ip };
  }

  // ---- hosts -----------------------------------------------------------------------------

  /**
   * The host's state, made when it is not in memory: from its summary in the store (queued
   * URLs, fetches this cycle), its back-off row in crawl.host-policy, and its partition's restore
   * time (a host first seen within its gap after a restart waits that gap from the restart).
   */
  private hostState(
    host: string, now: number, summary?: { queued: number; fetches: number; cycle: number }, partition = this.partitionOf(host), owned = false,
  ): HostState {
    let h = this.hosts.get(host);
    if (h) return h;
    h = new HostState(host, now, owned);
    if (summary && summary.cycle === this.cycle) h.fetches = summary.fetches;
    // Queued URLs on disk (a host with work is never evicted; this is a restore).
    if (summary) h.size = summary.queued;
    const since = this.restoredAt.get(partition);
    const row = this.table.get(host, 'backoff');
    let gap = 0;
    if (row) {
      const b = backoffFromRecord(row);
      h.backoff = b.backoff;
      h.persistedGap = b.gapMs || this.policy.minHostDelayMs;
      gap = b.gapMs;
      h.nextAt = Math.max(h.nextAt, b.backoff.notBefore);
    }
    if (since !== undefined) h.nextAt = Math.max(h.nextAt, since + handOverWaitMs(this.policy.minHostDelayMs, gap));
    // Keyed by the host's own copy of its name: `host` may be a slice of a candidate's URL.
    this.hosts.set(h.host, h);
    if (h.size > 0 && this.underBudget(h)) this.queued += h.size;
    this.schedule(h);
    return h;
  }

  private underBudget(h: HostState): boolean {
    return h.fetches < this.tuning.hostBudgetPerCycle;
  }

  private schedule(h: HostState): void {
    if (h.scheduled || h.inflight || h.size === 0 || !this.underBudget(h)) return;
    h.scheduled = true;
    this.ready.push(h.nextAt, h);
  }

  /** Look at the host again at `at` (a block's end, a domain or IP gap), without moving its own time. */
  private recheckAt(h: HostState, at: number): void {
    h.scheduled = true;
    this.ready.push(Math.max(at, h.nextAt), h);
  }

  private dropHead(h: HostState): void {
    if (h.head) this.headRefs -= h.head.length;
    h.head = null;
  }

  /** A row joins its host's queue (the row is already staged as QUEUED in the op). */
  private enqueue(h: HostState, row: UrlStateMsg): void {
    h.size++;
    h.dirty = true;
    if (this.underBudget(h)) this.queued++;
    // The head must stay the start of the queue: a URL sorting before its last entry spoils it.
    const last = h.head?.[h.head.length - 1];
    if (last && Buffer.compare(queueKey(row.host, this.levelOf(row), queuedAtFront(row), row.updated_at, row.url), last.key) < 0) this.dropHead(h);
    this.schedule(h);
  }

  /**
   * Rebuild a host's back-off from its crawl.host-policy row (field `backoff`): the host waits
   * out any Retry-After/pause window and, from now, the longest gap it may last have been given.
   * The row is also kept in the table, where a host coming into memory later finds it.
   */
  restoreBackoff(rec: HostPolicyMsg, now: number): void {
    this.table.apply(`${rec.host}|${rec.field}`, rec);
    const { backoff, gapMs } = backoffFromRecord(rec);
    const h = this.hostState(rec.host, now);
    h.backoff = backoff;
    h.persistedGap = gapMs;
    h.nextAt = Math.max(h.nextAt, backoff.notBefore, now + handOverWaitMs(this.policy.minHostDelayMs, gapMs));
  }

  /** A host-policy row changed (block lifted, new ceiling): look at the host again now. */
  onPolicyChange(host: string, now: number): void {
    const h = this.hosts.get(host);
    if (h && !h.inflight && h.size > 0 && this.underBudget(h)) this.recheckAt(h, now);
  }

  private lease(url: string, host: string, id: string, expiresAt: number, row?: UrlStateMsg): void {
    this.unlease(url);
    const keep = row !== undefined && this.leaseRows < LEASE_ROWS_KEPT;
    if (keep) this.leaseRows++;
    this.urlLeases.set(url, keep ? { id, expiresAt, host, row } : { id, expiresAt, host });
    this.leases.push(expiresAt, { url, id });
    // An answered lease leaves its entry (its URL and id) until its expiry time: lease rate x
    // leaseMs of them, 2.4M at 8,000 leases a second. Rebuilt from the leases in flight once the
    // answered ones outnumber those: the same entries expire, the rest were skipped anyway.
    if (this.leases.size > 2 * this.urlLeases.size + LEASE_HEAP_SLACK) {
      this.leases = new MinHeap();
      for (const [u, l] of this.urlLeases) this.leases.push(l.expiresAt, { url: u, id: l.id });
    }
  }

  /** Entries in the lease-expiry heap (for tests). */
  get leaseEntries(): number {
    return this.leases.size;
  }

  /** The URL is no longer out to a fetcher. */
  private unlease(url: string): void {
    if (this.urlLeases.get(url)?.row) this.leaseRows--;
    this.urlLeases.delete(url);
  }

  /** Free the host's (and its domain's and IP's) slot, and wake hosts parked on those. */
  private free(h: HostState): void {
    const inf = h.inflight!;
    h.inflight = null;
    const woken = [...this.domains.release(inf.domain), ...(inf.ip ? this.ips.release(inf.ip) : [])];
    for (const name of woken) {
      const w = this.hosts.get(name);
      if (w && w !== h) this.schedule(w);
    }
  }

  private newOp(): FrontierOp {
    return new FrontierOp((host) => this.storeFor(host), this.pendingRow);
  }

  /**
   * Run `fn` on a new operation after every operation before it (serial; `ahead`: serialAhead);
   * if it fails, the batches it staged and did not write are closed before the error goes on.
   */
  private serialOp<T>(fn: (op: FrontierOp) => Promise<T>, ahead = false): Promise<T> {
    const run = async (): Promise<T> => {
      const op = this.newOp();
      try {
        return await fn(op);
      } catch (err) {
        await op.discard().catch(() => undefined);
        throw err;
      }
    };
    return ahead ? this.serialAhead(run) : this.serial(run);
  }

  /** Write the op's changes (rows, indexes, touched hosts' summaries) and return its emits. */
  private async commit(op: FrontierOp): Promise<FrontierEmits> {
    for (const h of op.touched) {
      if (!h.dirty) continue;
      const store = this.storeFor(h.host);
      if (store) store.stageHost(op.batch(store), h.host, { queued: h.size, fetches: h.fetches, cycle: this.cycle });
      h.dirty = false;
    }
    await op.write();
    for (const [store, due] of op.dueAt) {
      const known = this.nextDue.get(store) ?? 0;
      if (known !== 0 && due < known) this.nextDue.set(store, due);
    }
    return op.out;
  }

  // ---- operations ------------------------------------------------------------------------

  /**
   * Candidates from seen-test: queue each URL the table does not know. `unjournaled` names rows
   * the caller emitted and has not yet seen written to the log: a candidate for one of those
   * (its input replayed after a failed produce) emits the row again.
   */
  onCandidates(cands: readonly CandidateMsg[], now: number, unjournaled?: (url: string) => boolean): Promise<FrontierEmits> {
    return this.pipelined(async (op) => {
      const fresh = cands.filter((c) => this.storeFor(c.host));
      await op.load(fresh);
      const absent = [...new Set(fresh.filter((c) => !this.hosts.has(c.host)).map((c) => c.host))];
      const summaries = await op.summaries(absent);
      for (const c of fresh) {
        if (op.known(c.url)) {
          const known = op.current(c.url)!;
          if (unjournaled?.(c.url) || this.mayBeUnjournaled(known)) op.out.rows.push(known);
          continue;
        }
        const row: UrlStateMsg = {
          url: c.url, host: c.host, state: 'QUEUED', depth: c.depth, discovered_at: c.discovered_at, updated_at: now,
          lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
          sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
          ...redirectField(c.redirects), ...priorityField(c.priority),
          priority_class: priorityClassOf(c, this.tuning), // [class]
        };
        const h = this.hostState(c.host, now, summaries.get(c.host));
        op.set(row);
        op.touch(h);
        this.enqueue(h, row);
        op.out.rows.push(row);
      }
    });
  }

  /**
   * Whether a row the store holds may be missing from the changelog after a crash: the store is
   * written before the runtime appends the same rows, so a crash in between leaves a new URL
   * known to the store only, and its candidate comes again. Such a candidate writes the row to
   * the changelog again when the row is a never-tried QUEUED one written shortly before its
   * partition was restored.
   */
  private mayBeUnjournaled(row: UrlStateMsg): boolean {
    if (row.state !== 'QUEUED' || row.attempts !== 0 || row.fetched_at !== null) return false;
    const restored = this.restoredAt.get(this.partitionOf(row.host));
    return restored !== undefined && row.updated_at <= restored && restored - row.updated_at <= REASSERT_BEFORE_RESTORE_MS;
  }

  onCandidate(c: CandidateMsg, now: number): Promise<FrontierEmits> {
    return this.onCandidates([c], now);
  }

  /**
   * Fetchers' answers. The first status of a lease frees the host, starts its politeness clock
   * and adapts its pace; the final one (stored) settles the URL-table row.
   */
  onStatuses(ss: readonly FetchStatusMsg[], now: number): Promise<FrontierEmits> {
    return this.serialOp(async (op) => {
      const held = ss.filter((s) => this.urlLeases.get(s.url)?.id === s.lease_id);
      // A lease that kept its row: nothing else changes a LEASED row while its lease stands.
      for (const s of held) {
        const row = this.urlLeases.get(s.url)!.row;
        if (row) op.seed(row);
      }
      await op.load(held);
      for (const s of ss) this.applyStatus(s, now, op);
      return this.commit(op);
    }, true);
  }

  onStatus(s: FetchStatusMsg, now: number): Promise<FrontierEmits> {
    return this.onStatuses([s], now);
  }

  private applyStatus(s: FetchStatusMsg, now: number, op: FrontierOp): void {
    const lease = this.urlLeases.get(s.url);
    const row = op.current(s.url);
    if (!lease || !row || lease.id !== s.lease_id) return; // stale or duplicate
    const h = this.hostState(s.host, now);
    op.touch(h);
    if (h.inflight?.id === s.lease_id) {
      const leastGap = this.table.leastGapMs(s.host, now, this.policy.minHostDelayMs);
      const policy = applyAnswer(h, s, now, this.pace, leastGap, this.table.block(s.host, now)?.until ?? null);
      if (policy) (op.out.policies ??= []).push(policy);
      this.free(h);
      this.schedule(h);
    }
    if (!s.stored) return;
    this.unlease(s.url);
    if (s.http_status !== null) this.fetchedByClass[this.classOf(row) - 1]++; // [class]
    // [feeds] A feed's next poll, and its crawl.feeds row.
    const feed = this.feeds.onStatus(s, now);
    if (feed.write) (op.out.feeds ??= []).push(feed.write);
    const next: UrlStateMsg = { ...row, updated_at: now, lease_id: null, lease_expires_at: null, http_status: s.http_status, reason: s.reason };
    switch (s.outcome) {
      case 'FETCHED':
      case 'NOT_HTML': {
        const interval = feed.intervalMs ?? recrawlIntervalMs(row, s.sha256 ?? row.sha256, this.tuning);
        // A 304 need not repeat the validators: keep the ones it answered, for the next conditional GET.
        const notModified = s.http_status === 304;
        Object.assign(next, {
          state: 'FETCHED', attempts: 0, fetched_at: s.finished_at, sha256: s.sha256 ?? row.sha256,
          etag: s.etag ?? (notModified ? row.etag : null), last_modified: s.last_modified ?? (notModified ? row.last_modified : null),
          warc_uri: s.warc_uri, warc_offset: s.warc_offset, warc_length: s.warc_length, next_due_at: s.finished_at + interval,
        });
        break;
      }
      case 'ROBOTS_DISALLOWED':
        next.state = 'DISALLOWED';
        break;
      case 'REFUSED':
        // Refused because of an operator block or the host's back-off window: not the URL's
        // fault, and both end. Queued again at the front of its level; the host waits.
        next.state = s.reason === 'blocked' || s.reason === 'backoff' ? 'QUEUED' : 'DEAD';
        break;
      case 'FAILED':
      case 'ROBOTS_UNAVAILABLE':
        this.fail(next, now, s.retry_after_ms);
        break;
    }
    op.set(next);
    if (next.state === 'QUEUED') this.enqueue(h, next);
    op.out.rows.push(next);
  }

  private fail(row: UrlStateMsg, now: number, retryAfterMs: number | null): void {
    row.attempts += 1;
    if (row.attempts >= this.policy.maxAttempts && this.feeds.has(row.url)) {
      // [feeds] A feed is not given up for an outage: asked again after its longest interval.
      row.attempts = 0;
      row.state = 'FAILED';
      row.next_due_at = now + this.tuning.feedMaxPollMs;
      return;
    }
    if (row.attempts >= this.policy.maxAttempts) {
      row.state = 'DEAD';
      row.next_due_at = null;
      return;
    }
    const backoff = this.policy.retryBackoffMs[Math.min(row.attempts - 1, this.policy.retryBackoffMs.length - 1)];
    row.state = 'FAILED';
    row.next_due_at = now + Math.max(backoff, retryAfterMs ?? 0);
  }

  /** Requeue due retries and recrawls, re-issue expired leases, expire old unfetched URLs, release due hosts. */
  tick(now: number, maxFetches = Infinity): Promise<FrontierEmits> {
    return this.serialOp(async (op) => {
      await this.requeueDue(now, op);
      await this.expireLeases(now, op);
      await this.sweepExpired(now, op);
      // Written before hosts' queues are read: what was requeued above may be released now.
      await op.write();
      for (const h of this.budget.wake(now)) if (this.hosts.get(h.host) === h) this.schedule(h); // [budget] hosts whose class has budget again
      await this.releaseDue(now, maxFetches, op);
      this.evictIdle(now);
      return this.commit(op);
    }, true);
  }

  private async requeueDue(now: number, op: FrontierOp): Promise<void> {
    for (const store of this.stores.values()) {
      const known = this.nextDue.get(store) ?? 0;
      if (known > now) continue;
      const refs = await store.due(now, DUE_PER_TICK);
      if (refs.length === 0) {
        this.nextDue.set(store, (await store.nextDue()) ?? Infinity);
        continue;
      }
      // Look again next tick: more may be due, and what this tick requeues is written after it.
      this.nextDue.set(store, 0);
      await op.load(refs);
      const summaries = await op.summaries([...new Set(refs.map((r) => r.host).filter((h) => !this.hosts.has(h)))]);
      for (const ref of refs) {
        const row = op.current(ref.url);
        if (!row || (row.state !== 'FAILED' && row.state !== 'FETCHED') || row.next_due_at === null || row.next_due_at > now) {
          // An entry its row no longer has (staged over by this operation, or left by a crash).
          if (!row || !ref.key.equals(indexEntry(row, this.levelOf)?.[0] ?? Buffer.alloc(0))) op.dropEntry(store, ref.key);
          continue;
        }
        const queuedRow: UrlStateMsg = { ...row, state: 'QUEUED', updated_at: now };
        // [feeds] A due feed poll goes before its host's other URLs of its class (frontier-keys queuedAtFront).
        if (this.feeds.has(row.url)) queuedRow.reason = FEED_DUE;
        const h = this.hostState(row.host, now, summaries.get(row.host));
        op.set(queuedRow);
        op.touch(h);
        this.enqueue(h, queuedRow);
        op.out.rows.push(queuedRow);
      }
    }
  }

  /** A lost fetch (fetcher died) counts as an attempt; the host waits a full delay first. */
  private async expireLeases(now: number, op: FrontierOp): Promise<void> {
    const expired: Array<{ url: string; id: string; host: string }> = [];
    while ((this.leases.peekKey() ?? Infinity) <= now) {
      const l = this.leases.pop()!;
      const held = this.urlLeases.get(l.url);
      if (held?.id === l.id) expired.push({ ...l, host: held.host });
    }
    if (expired.length === 0) return;
    await op.load(expired);
    for (const { url, id } of expired) {
      this.unlease(url);
      const row = op.current(url);
      if (!row) continue;
      const h = this.hostState(row.host, now);
      op.touch(h);
      if (h.inflight?.id === id) {
        this.free(h);
        h.nextAt = Math.max(h.nextAt, now + Math.max(this.policy.minHostDelayMs, h.crawlDelayMs, h.persistedGap ?? 0, h.backoff.delayMs));
      }
      const next: UrlStateMsg = { ...row, lease_id: null, lease_expires_at: null, updated_at: now, reason: 'lease-expired', attempts: row.attempts + 1 };
      // Re-issue a lost fetch as soon as politeness allows (front of its level), not after the failure back-off.
      next.state = next.attempts >= this.policy.maxAttempts ? 'DEAD' : 'QUEUED';
      op.set(next);
      if (next.state === 'QUEUED') this.enqueue(h, next);
      op.out.rows.push(next);
      this.schedule(h);
    }
  }

  /**
   * Unfetched URLs older than urlTtlMs (from discovery) leave the table: a tombstone in the
   * changelog, so the table does not keep dead links for ever. A sweep walks each partition's
   * rows a slice at a time; a URL in flight is left for its answer.
   */
  private async sweepExpired(now: number, op: FrontierOp): Promise<void> {
    const ttl = this.tuning.urlTtlMs;
    if (!ttl) return;
    for (const [p, store] of this.stores) {
      const s = this.sweep.get(p)!;
      if (now - s.at < SWEEP_EVERY_MS) continue;
      s.at = now;
      const rows = await store.rowsAfter(s.after, SWEEP_ROWS);
      s.after = rows.length < SWEEP_ROWS ? '' : rows[rows.length - 1].url;
      for (const stored of rows) {
        // This operation may have changed the row already (a lease that expired this tick).
        const r = op.has(stored.url) ? op.current(stored.url) : stored;
        if (!r || r.fetched_at !== null || r.state === 'LEASED' || r.discovered_at + ttl > now || this.urlLeases.has(r.url)) continue;
        op.seed(r);
        if (r.state === 'QUEUED') {
          const h = this.hosts.get(r.host);
          if (h) {
            h.size = Math.max(0, h.size - 1);
            if (this.underBudget(h)) this.queued--;
            h.dirty = true;
            op.touch(h);
            this.dropHead(h);
          }
        }
        op.remove(r);
        (op.out.expired ??= []).push({ url: r.url, host: r.host });
      }
    }
  }

  /** Release one URL of every due host that politeness allows, up to maxFetches. */
  private async releaseDue(now: number, maxFetches: number, op: FrontierOp): Promise<void> {
    const picked: HostState[] = [];
    const most = Math.min(maxFetches, RELEASES_PER_TICK);
    while (picked.length < most && (this.ready.peekKey() ?? Infinity) <= now) {
      const h = this.ready.pop()!;
      h.scheduled = false;
      if (this.hosts.get(h.host) !== h) continue; // dropped with its partition, or evicted
      if (h.inflight || h.size === 0 || !this.underBudget(h)) continue;
      if (h.nextAt > now) {
        this.schedule(h); // its time moved since it was pushed
        continue;
      }
      // An operator block or an opt-out from crawling holds the host: no lease (frontier-holds.ts).
      const held = heldUntil(h.host, now, this.table, this.optout);
      if (held !== null) {
        this.recheckAt(h, held);
        continue;
      }
      if (!this.layersAllow(h, now)) continue;
      // The slot is taken now, so the next host of the same domain or IP sees it.
      h.inflight = { id: '', url: '', domain: h.domain, ip: h.ip };
      this.domains.acquire(h.domain, now, h.host);
      if (h.ip) this.ips.acquire(h.ip, now, h.host);
      picked.push(h);
    }
    if (picked.length === 0) return;
    const unread = picked.filter((h) => !h.head?.length);
    for (let i = 0; i < unread.length; i += HEAD_READS_AT_ONCE) await Promise.all(unread.slice(i, i + HEAD_READS_AT_ONCE).map((h) => this.fillHead(h)));
    await op.load(picked.flatMap((h) => (h.head?.length ? [{ url: h.head[0].url, host: h.host }] : [])));
    for (const h of picked) {
      op.touch(h);
      const ref = h.head?.[0];
      const row = ref ? op.current(ref.url) : undefined;
      if (!ref || !row || row.state !== 'QUEUED') {
        // The queue on disk disagrees (nothing there, or an entry whose row moved on): trust it.
        if (ref) {
          h.head!.shift();
          this.headRefs--;
          op.dropEntry(this.storeFor(h.host)!, ref.key);
        } else {
          if (this.underBudget(h)) this.queued -= h.size;
          h.size = 0;
          h.dirty = true;
        }
        this.free(h);
        this.schedule(h);
        continue;
      }
      // [budget] The head's class may have no budget now: the first URL of a later class that has.
      const cls = this.classOf(row);
      const pick = this.budget.mayLease(cls, now) ? { ref, row, cls } : await this.budgetPick(h, cls, now, op);
      if (!pick) {
        this.free(h); // parked until a class it has queued has budget (tick: budget.wake)
        continue;
      }
      if (pick.ref === ref) {
        h.head!.shift();
        this.headRefs--;
      } else if (h.head) {
        // Not in the head (a later class than all of it) or in it: either way the head stays the queue's start.
        const i = h.head.indexOf(pick.ref);
        if (i >= 0) {
          h.head.splice(i, 1);
          this.headRefs--;
        }
      }
      this.release(h, pick.row, pick.cls, now, op);
    }
  }

  /**
   * [budget] The first queued URL of the host in a class after `headClass` (its queue's first
   * class, which has no budget now) whose class has budget, read from the store; null when none
   * has, and the host is parked on each class it has queued until one has.
   */
  private async budgetPick(
    h: HostState, headClass: PriorityClass, now: number, op: FrontierOp,
  ): Promise<{ ref: QueuedRef; row: UrlStateMsg; cls: PriorityClass } | null> {
    const store = this.storeFor(h.host)!;
    const waiting: PriorityClass[] = [headClass];
    for (const cls of PRIORITY_CLASSES) {
      if (cls <= headClass) continue;
      const [ref] = await store.classHead(h.host, cls, this.tuning.priorityLevels, 1);
      if (!ref) continue;
      if (!this.budget.mayLease(cls, now)) {
        waiting.push(cls);
        continue;
      }
      await op.load([{ url: ref.url, host: h.host }]);
      const row = op.current(ref.url);
      if (row?.state === 'QUEUED') return { ref: h.head?.find((r) => r.url === ref.url) ?? ref, row, cls };
      op.dropEntry(store, ref.key); // an entry whose row moved on; the class is looked at again when woken
      waiting.push(cls);
    }
    for (const cls of waiting) this.budget.park(cls, h);
    return null;
  }

  private async fillHead(h: HostState): Promise<void> {
    const store = this.storeFor(h.host);
    if (!store) return;
    this.dropHead(h);
    h.head = await store.head(h.host, HEAD_READ);
    this.headRefs += h.head.length;
  }

  /** Domain and IP caps: parks or re-times the host when either is full or inside its gap. */
  private layersAllow(h: HostState, now: number): boolean {
    const domainAt = this.domains.readyAt(h.domain, h.host);
    if (domainAt === Infinity) {
      this.domains.park(h.domain, h.host);
      return false;
    }
    const ipAt = h.ip ? this.ips.readyAt(h.ip, h.host) : 0;
    if (ipAt === Infinity) {
      this.ips.park(h.ip!, h.host);
      return false;
    }
    const at = Math.max(domainAt, ipAt);
    if (at > now) {
      this.recheckAt(h, at);
      return false;
    }
    return true;
  }

  private release(h: HostState, row: UrlStateMsg, cls: PriorityClass, now: number, op: FrontierOp): void {
    const url = row.url;
    this.budget.take(cls); // [class] [budget]
    const lease = { id: this.newLeaseId(), expiresAt: now + this.policy.leaseMs };
    h.inflight = { id: lease.id, url, domain: h.domain, ip: h.ip };
    h.size--;
    this.queued--;
    h.fetches++;
    h.dirty = true;
    if (!this.underBudget(h)) this.queued -= h.size; // the rest waits for the next cycle
    // Heads are kept while they fit the budget; past it a host reads its queue again next time.
    if (this.headRefs > HEAD_BUDGET) this.dropHead(h);
    const leased: UrlStateMsg = { ...row, state: 'LEASED', lease_id: lease.id, lease_expires_at: lease.expiresAt, updated_at: now };
    this.lease(url, h.host, lease.id, lease.expiresAt, leased);
    op.set(leased);
    op.out.rows.push(leased);
    op.out.fetches.push({
      url, host: h.host, depth: row.depth, lease_id: lease.id, lease_expires_at: lease.expiresAt, attempt: row.attempts + 1,
      prev_sha256: row.sha256, etag: row.etag, last_modified: row.last_modified, ...redirectField(row.redirects),
      // The row keeps the importance after the fetch, so a recrawl still hands it on.
      ...priorityField(row.priority), priority_class: cls,
    });
  }

  /**
   * Let go of hosts with nothing left to do: nothing queued, nothing in flight, their gap over.
   * Their summary (fetches this cycle) is in the store and their back-off in crawl.host-policy,
   * where hostState finds both if the host has work again. Domain and IP groups go the same way
   * (LayerGroups.forgetIdle).
   */
  private evictIdle(now: number): void {
    this.domains.forgetIdle(now, EVICT_PER_TICK);
    this.ips.forgetIdle(now, EVICT_PER_TICK);
    for (let i = 0; i < EVICT_PER_TICK; i++) {
      this.evictCursor ??= this.hosts.values();
      const n = this.evictCursor.next();
      if (n.done) {
        this.evictCursor = null;
        return;
      }
      const h = n.value;
      if (h.size === 0 && !h.inflight && !h.dirty && h.nextAt <= now && h.backoff.notBefore <= now) {
        this.dropHead(h);
        this.hosts.delete(h.host);
      }
    }
  }
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}
