/**
 * The frontier's pure state for the partitions it owns: the URL table (the exact "seen"
 * truth), per host a back queue split into priority levels (the front queues), a heap of hosts
 * keyed by the time they may next be fetched, and the leases out to fetchers. No I/O and no
 * clock: every method takes `now` and returns the URL-table rows, fetch requests and
 * host-policy rows to emit.
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
 * new row gets a class, a host's back queue is ordered by class and then level, and a host's URL
 * is released only when its class has budget; a host whose classes have none waits for it. Feeds
 * (frontier-feeds.ts) are rows polled at their own interval. The call sites are marked [class],
 * [budget] and [feeds].
 */
import { randomUUID } from 'node:crypto';
import { MinHeap } from '../lib/heap';
import { HostPolicyTable } from '../lib/host-policy';
import { OptOutRegistry } from '../lib/optout-registry';
import type { CandidateMsg, FeedStateMsg, FetchRequestMsg, FetchStatusMsg, HostPolicyMsg, UrlStateMsg } from '../lib/messages';
import { DEFAULTS, type CrawlConfig } from '../lib/config';
import { routingKey } from '../lib/partitioner';
import { redirectField } from '../lib/redirect-hops';
import { AIMD_DEFAULTS, backoffFromRecord, handOverWaitMs, type AimdPolicy, type HostBackoff } from './frontier-aimd';
import { applyAnswer, newHost, pushUrl, takeUrl, type HostState } from './frontier-hosts';
import { ClassBudget, type BudgetPolicy, type ClassBudgetView } from './frontier-budget';
import { FeedTable, type FeedPolicy } from './frontier-feeds';
import { heldUntil } from './frontier-holds';
import { LayerGroups } from './frontier-layers';
import { givenClass, priorityClassOf, queueSlot, slotClass, type ClassPolicy, type PriorityClass } from './priority-class';
import { UrlTable } from './frontier-urls';
import { priorityLevel, recrawlIntervalMs, type RecrawlPolicy } from './frontier-schedule';

/** The settings the frontier needs (documented in lib/config.ts). */
export type FrontierPolicy = Pick<CrawlConfig, 'minHostDelayMs' | 'maxCrawlDelayMs' | 'responseTimeFactor' | 'leaseMs' | 'retryBackoffMs' | 'maxAttempts'>;

/** The newer knobs (documented in lib/config.ts); any left out take TUNING_DEFAULTS. */
export type FrontierTuning = AimdPolicy &
  RecrawlPolicy &
  ClassPolicy &
  BudgetPolicy &
  FeedPolicy &
  Pick<CrawlConfig, 'domainMaxInflight' | 'domainMinGapMs' | 'ipMaxInflight' | 'ipMinGapMs' | 'priorityLevels' | 'hostBudgetPerCycle'>;

export const TUNING_DEFAULTS: FrontierTuning = {
  ...AIMD_DEFAULTS,
  domainMaxInflight: DEFAULTS.domainMaxInflight, domainMinGapMs: DEFAULTS.domainMinGapMs,
  ipMaxInflight: DEFAULTS.ipMaxInflight, ipMinGapMs: DEFAULTS.ipMinGapMs,
  priorityLevels: DEFAULTS.priorityLevels, hostBudgetPerCycle: DEFAULTS.hostBudgetPerCycle,
  recrawlInitialMs: DEFAULTS.recrawlInitialMs, recrawlMinMs: DEFAULTS.recrawlMinMs, recrawlMaxMs: DEFAULTS.recrawlMaxMs,
  priorityClassTailDepth: DEFAULTS.priorityClassTailDepth, priorityClassHighMin: DEFAULTS.priorityClassHighMin,
  priorityClassLowBelow: DEFAULTS.priorityClassLowBelow,
  budgetPagesPerDay: DEFAULTS.budgetPagesPerDay, budgetClassShares: DEFAULTS.budgetClassShares, budgetLendUnused: DEFAULTS.budgetLendUnused,
  budgetBurstSecs: DEFAULTS.budgetBurstSecs,
  feedPollMs: DEFAULTS.feedPollMs, feedMinPollMs: DEFAULTS.feedMinPollMs, feedMaxPollMs: DEFAULTS.feedMaxPollMs, feedMaxItems: DEFAULTS.feedMaxItems,
  feedMaxPerHost: DEFAULTS.feedMaxPerHost,
};

/** `{ priority }` only when known, so rows and requests of unscored URLs stay as they were. */
function priorityField(priority: number | null | undefined): { priority?: number } {
  return priority !== null && priority !== undefined ? { priority } : {};
}

export interface FrontierEmits {
  rows: UrlStateMsg[];
  fetches: FetchRequestMsg[];
  /** crawl.host-policy rows (field `backoff`); absent when none. */
  policies?: HostPolicyMsg[];
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

export class FrontierState {
  private readonly rows = new UrlTable();
  private readonly hosts = new Map<string, HostState>();
  private readonly ready = new MinHeap<HostState>();
  /** Failed URLs waiting for their retry time. */
  private readonly retries = new MinHeap<string>();
  /** Fetched URLs waiting for their recrawl time. */
  private readonly recrawls = new MinHeap<string>();
  /** URLs out to a fetcher and not yet final (stored or failed): url -> lease. */
  private readonly urlLeases = new Map<string, { id: string; expiresAt: number }>();
  /** Lease expiry times; entries for leases already answered are skipped. */
  private readonly leases = new MinHeap<{ url: string; id: string }>();
  private readonly domains: LayerGroups;
  private readonly ips: LayerGroups;
  private readonly tuning: FrontierTuning;
  /** URLs queued at hosts still under their budget (the work left this cycle). */
  private queued = 0;
  /** [budget] The fetch budget by class; hosts waiting for it. */
  private readonly budget: ClassBudget<HostState>;
  /** [class] Pages fetched by class. */
  private readonly fetchedByClass = [0, 0, 0];
  /** [feeds] The feeds of this frontier's partitions. */
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
  ) {
    const pick = <K extends keyof FrontierTuning>(k: K): FrontierTuning[K] => (policy[k] ?? TUNING_DEFAULTS[k]) as FrontierTuning[K];
    this.tuning = Object.fromEntries((Object.keys(TUNING_DEFAULTS) as Array<keyof FrontierTuning>).map((k) => [k, pick(k)])) as unknown as FrontierTuning;
    this.domains = new LayerGroups({ maxInflight: Math.max(1, this.tuning.domainMaxInflight), minGapMs: this.tuning.domainMinGapMs });
    this.ips = new LayerGroups({ maxInflight: Math.max(1, this.tuning.ipMaxInflight), minGapMs: this.tuning.ipMinGapMs });
    this.budget = new ClassBudget(this.tuning);
    this.feeds = new FeedTable(this.tuning);
    this.pace = { ...policy, ...this.tuning };
  }

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
    return givenClass(row.priority_class) ?? priorityClassOf(row, this.tuning);
  }

  /** Counts for progress lines and metrics. */
  stats(): { urls: number; queued: number; leased: number; hosts: number; retrying: number; recrawls: number } {
    return {
      urls: this.rows.size, queued: this.queued, leased: this.urlLeases.size, hosts: this.hosts.size, retrying: this.retries.size,
      recrawls: this.recrawls.size,
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

  row(url: string): UrlStateMsg | undefined {
    return this.rows.get(url);
  }

  host(host: string): HostView | undefined {
    const h = this.hosts.get(host);
    if (!h) return undefined;
    return { nextAt: h.nextAt, inflight: h.inflight !== null, queued: h.size, backoff: h.backoff, fetchesThisCycle: h.fetches, ip: h.ip };
  }

  private hostState(host: string, now: number): HostState {
    let h = this.hosts.get(host);
    if (!h) {
      h = newHost(host, routingKey(host), now, this.policy.minHostDelayMs);
      this.hosts.set(host, h);
    }
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

  /**
   * The row's front queue: [class] its class first, then its level: by the importance a scorer
   * gave it (Candidate.priority) until the URL is first fetched, by depth after that (a recrawl)
   * or when it has none.
   */
  private slotOf(row: UrlStateMsg): number {
    const level = priorityLevel(row.fetched_at === null ? row.priority : undefined, row.depth, this.tuning.priorityLevels);
    return queueSlot(this.classOf(row), level, this.tuning.priorityLevels);
  }

  private enqueue(h: HostState, row: UrlStateMsg, front = false): void {
    pushUrl(h, row.url, this.slotOf(row), front);
    if (this.underBudget(h)) this.queued++;
    this.schedule(h);
  }

  /**
   * Rebuild from a URL-table row (after a crash or rebalance). A LEASED row keeps its lease and
   * counts as a request in flight: a live fetcher may still be working on it, and re-issuing it
   * now could hit the host twice at once. Restored hosts wait one full delay, since when they
   * were last fetched is unknown here: the longest gap they can have been given without a row in
   * crawl.host-policy (handOverWaitMs; restoreBackoff makes it that of the host's persisted gap).
   */
  restore(row: UrlStateMsg, now: number): void {
    const h = this.hostState(row.host, now);
    this.rows.set(row, h.host);
    h.nextAt = Math.max(h.nextAt, now + handOverWaitMs(this.policy.minHostDelayMs));
    if (row.state === 'QUEUED') this.enqueue(h, row);
    else if (row.state === 'LEASED' && row.lease_id) {
      this.lease(row.url, row.lease_id, row.lease_expires_at ?? now);
      if (!h.inflight) {
        h.inflight = { id: row.lease_id, url: row.url, domain: h.domain, ip: null };
        this.domains.acquire(h.domain, now);
      }
    } else if (row.state === 'FAILED') this.retries.push(row.next_due_at ?? now, row.url);
    else if (row.state === 'FETCHED' && row.next_due_at !== null) this.recrawls.push(row.next_due_at, row.url);
  }

  /**
   * Rebuild a host's back-off from its crawl.host-policy row (field `backoff`): the host waits
   * out any Retry-After/pause window and, from now, the longest gap it may last have been given.
   */
  restoreBackoff(rec: HostPolicyMsg, now: number): void {
    const { backoff, gapMs } = backoffFromRecord(rec);
    const h = this.hostState(rec.host, now);
    h.backoff = backoff;
    h.persistedGap = gapMs;
    h.nextAt = Math.max(h.nextAt, backoff.notBefore, now + handOverWaitMs(this.policy.minHostDelayMs, gapMs));
  }

  /** [feeds] Rebuild a feed from its crawl.feeds row (null: a tombstone). */
  restoreFeed(url: string, value: FeedStateMsg | null): void {
    this.feeds.restore(url, value);
  }

  private lease(url: string, id: string, expiresAt: number): void {
    this.urlLeases.set(url, { id, expiresAt });
    this.leases.push(expiresAt, { url, id });
  }

  /**
   * Forget hosts this instance no longer owns (after a rebalance), so it never releases a
   * fetch for a host whose politeness now lives elsewhere.
   */
  retain(owns: (host: string) => boolean): void {
    for (const [host, h] of this.hosts) {
      if (owns(host)) continue;
      if (this.underBudget(h)) this.queued -= h.size;
      this.hosts.delete(host);
    }
    for (const [url, host] of this.rows.hosts()) {
      if (owns(host)) continue;
      this.rows.delete(url);
      this.urlLeases.delete(url);
    }
    this.feeds.retain(owns); // [feeds]
    this.budget.retain((h) => this.hosts.get(h.host) === h); // [budget]
    this.domains.clear();
    this.ips.clear();
    for (const h of this.hosts.values()) {
      if (!h.inflight) continue;
      this.domains.acquire(h.inflight.domain, 0);
      if (h.inflight.ip) this.ips.acquire(h.inflight.ip, 0);
    }
    // Hosts parked on a domain or IP group lost their place with the groups: look again.
    for (const h of this.hosts.values()) this.schedule(h);
  }

  /** A candidate from seen-test: queue it unless the URL table knows it. */
  onCandidate(c: CandidateMsg, now: number): FrontierEmits {
    if (this.rows.has(c.url)) return { rows: [], fetches: [] };
    const row: UrlStateMsg = {
      url: c.url, host: c.host, state: 'QUEUED', depth: c.depth, discovered_at: c.discovered_at, updated_at: now,
      lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
      sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
      ...redirectField(c.redirects), ...priorityField(c.priority),
      priority_class: priorityClassOf(c, this.tuning), // [class]
    };
    const h = this.hostState(c.host, now);
    this.rows.set(row, h.host);
    this.enqueue(h, row);
    return { rows: [row], fetches: [] };
  }

  /** A host-policy row changed (block lifted, new ceiling): look at the host again now. */
  onPolicyChange(host: string, now: number): void {
    const h = this.hosts.get(host);
    if (h && !h.inflight && h.size > 0 && this.underBudget(h)) this.recheckAt(h, now);
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

  /**
   * A fetcher's answer. The first status of a lease frees the host, starts its politeness
   * clock and adapts its pace; the final one (stored) settles the URL-table row.
   */
  onStatus(s: FetchStatusMsg, now: number): FrontierEmits {
    const lease = this.urlLeases.get(s.url);
    const row = this.rows.get(s.url);
    if (!lease || !row || lease.id !== s.lease_id) return { rows: [], fetches: [] }; // stale or duplicate
    const h = this.hostState(s.host, now);
    const out: FrontierEmits = { rows: [], fetches: [] };
    if (h.inflight?.id === s.lease_id) {
      const leastGap = this.table.leastGapMs(s.host, now, this.policy.minHostDelayMs);
      const policy = applyAnswer(h, s, now, this.pace, leastGap, this.table.block(s.host, now)?.until ?? null);
      if (policy) out.policies = [policy];
      this.free(h);
      this.schedule(h);
    }
    if (!s.stored) return out;
    this.urlLeases.delete(s.url);
    if (s.http_status !== null) this.fetchedByClass[this.classOf(row) - 1]++; // [class]
    // [feeds] A feed's next poll, and its crawl.feeds row.
    const feed = this.feeds.onStatus(s, now);
    if (feed.write) out.feeds = [feed.write];
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
        this.recrawls.push(next.next_due_at!, s.url);
        break;
      }
      case 'ROBOTS_DISALLOWED':
        next.state = 'DISALLOWED';
        break;
      case 'REFUSED':
        if (s.reason === 'blocked') {
          // The fetcher refused because of an operator block: not the URL's fault, and the
          // block expires. Queue it again; the host waits for the block's end.
          next.state = 'QUEUED';
          this.enqueue(h, next, true);
        } else next.state = 'DEAD';
        break;
      case 'FAILED':
      case 'ROBOTS_UNAVAILABLE':
        this.fail(next, now, s.retry_after_ms);
        break;
    }
    this.rows.set(next);
    out.rows.push(next);
    return out;
  }

  private fail(row: UrlStateMsg, now: number, retryAfterMs: number | null): void {
    row.attempts += 1;
    if (row.attempts >= this.policy.maxAttempts && this.feeds.has(row.url)) {
      // [feeds] A feed is not given up for an outage: asked again after its longest interval.
      row.attempts = 0;
      row.state = 'FAILED';
      row.next_due_at = now + this.tuning.feedMaxPollMs;
      this.retries.push(row.next_due_at, row.url);
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
    this.retries.push(row.next_due_at, row.url);
  }

  /** Release due hosts, re-issue expired leases, and requeue due retries and recrawls. */
  tick(now: number, maxFetches = Infinity): FrontierEmits {
    const out: FrontierEmits = { rows: [], fetches: [] };
    this.requeueDue(this.retries, 'FAILED', now, out);
    this.requeueDue(this.recrawls, 'FETCHED', now, out);
    this.expireLeases(now, out);
    for (const h of this.budget.wake(now)) this.schedule(h); // [budget] hosts whose class has budget again
    while (out.fetches.length < maxFetches && (this.ready.peekKey() ?? Infinity) <= now) {
      const h = this.ready.pop()!;
      h.scheduled = false;
      if (this.hosts.get(h.host) !== h) continue; // dropped by retain()
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
      const slot = this.budgetSlot(h, now); // [budget]
      if (slot === null) continue;
      this.release(h, now, out, slot);
    }
    return out;
  }

  /**
   * [budget] The host's first back-queue slot whose class has budget now; null when none has,
   * and the host waits (parked on each of its classes) until one has.
   */
  private budgetSlot(h: HostState, now: number): number | null {
    const levels = this.tuning.priorityLevels;
    let waiting: PriorityClass[] | null = null;
    for (let slot = 0; slot < h.levels.length; slot++) {
      if (!h.levels[slot]?.length) continue;
      const cls = slotClass(slot, levels);
      if (this.budget.mayLease(cls, now)) return slot;
      if (!waiting?.includes(cls)) (waiting ??= []).push(cls);
    }
    for (const cls of waiting ?? []) this.budget.park(cls, h);
    return null;
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

  private release(h: HostState, now: number, out: FrontierEmits, slot: number): void {
    const url = takeUrl(h, slot);
    this.queued--;
    const row = this.rows.get(url)!;
    const cls = this.classOf(row); // [class] [budget]
    this.budget.take(cls);
    const lease = { id: this.newLeaseId(), url, expiresAt: now + this.policy.leaseMs };
    h.inflight = { id: lease.id, url, domain: h.domain, ip: h.ip };
    this.domains.acquire(h.domain, now, h.host);
    if (h.ip) this.ips.acquire(h.ip, now, h.host);
    h.fetches++;
    if (!this.underBudget(h)) this.queued -= h.size; // the rest waits for the next cycle
    this.lease(url, lease.id, lease.expiresAt);
    const leased: UrlStateMsg = { ...row, state: 'LEASED', lease_id: lease.id, lease_expires_at: lease.expiresAt, updated_at: now };
    this.rows.set(leased);
    out.rows.push(leased);
    out.fetches.push({
      url, host: h.host, depth: row.depth, lease_id: lease.id, lease_expires_at: lease.expiresAt, attempt: row.attempts + 1,
      prev_sha256: row.sha256, etag: row.etag, last_modified: row.last_modified, ...redirectField(row.redirects),
      // The row keeps the importance after the fetch, so a recrawl still hands it on.
      ...priorityField(row.priority), priority_class: cls,
    });
  }

  private requeueDue(heap: MinHeap<string>, state: 'FAILED' | 'FETCHED', now: number, out: FrontierEmits): void {
    while ((heap.peekKey() ?? Infinity) <= now) {
      const url = heap.pop()!;
      const row = this.rows.get(url);
      if (!row || row.state !== state || (row.next_due_at ?? 0) > now) continue;
      const queuedRow: UrlStateMsg = { ...row, state: 'QUEUED', updated_at: now };
      this.rows.set(queuedRow);
      out.rows.push(queuedRow);
      // [feeds] A due feed poll goes before its host's other URLs of its class.
      this.enqueue(this.hostState(row.host, now), queuedRow, this.feeds.has(url));
    }
  }

  /** A lost fetch (fetcher died) counts as an attempt; the host waits a full delay first. */
  private expireLeases(now: number, out: FrontierEmits): void {
    while ((this.leases.peekKey() ?? Infinity) <= now) {
      const { url, id } = this.leases.pop()!;
      if (this.urlLeases.get(url)?.id !== id) continue; // answered in time
      this.urlLeases.delete(url);
      const row = this.rows.get(url)!;
      const h = this.hostState(row.host, now);
      if (h.inflight?.id === id) {
        this.free(h);
        h.nextAt = Math.max(h.nextAt, now + Math.max(this.policy.minHostDelayMs, h.crawlDelayMs, h.persistedGap, h.backoff.delayMs));
      }
      const next: UrlStateMsg = { ...row, lease_id: null, lease_expires_at: null, updated_at: now, reason: 'lease-expired', attempts: row.attempts + 1 };
      if (next.attempts >= this.policy.maxAttempts) next.state = 'DEAD';
      else {
        // Re-issue a lost fetch as soon as politeness allows, not after the failure back-off.
        next.state = 'QUEUED';
        this.enqueue(h, next, true);
      }
      this.rows.set(next);
      out.rows.push(next);
      this.schedule(h);
    }
  }
}
