/**
 * The frontier's pure state for the partitions it owns: the URL table (the exact "seen"
 * truth), one queue per host, a heap of hosts keyed by the time they may next be fetched, and
 * the leases out to fetchers. No I/O and no clock: every method takes `now` and returns the
 * URL-table rows and fetch requests to emit.
 *
 * Politeness rule: at most one request in flight per host, and the next one no sooner than
 * finish + max(minHostDelayMs, Crawl-delay, responseTimeFactor x response time).
 */
import { randomUUID } from 'node:crypto';
import { MinHeap } from '../lib/heap';
import type { CandidateMsg, FetchRequestMsg, FetchStatusMsg, UrlStateMsg } from '../lib/messages';

export interface FrontierPolicy {
  minHostDelayMs: number;
  maxCrawlDelayMs: number;
  responseTimeFactor: number;
  leaseMs: number;
  retryBackoffMs: number[];
  maxAttempts: number;
}

interface HostState {
  host: string;
  queue: string[];
  /** The one request in flight to this host, if any (politeness: never two at once). */
  inflight: { id: string; url: string } | null;
  nextAt: number;
  /** Whether the host is in the ready heap (it is at most once). */
  scheduled: boolean;
  /** Crawl-delay last reported by the fetcher. */
  crawlDelayMs: number;
}

export interface FrontierEmits {
  rows: UrlStateMsg[];
  fetches: FetchRequestMsg[];
}

export class FrontierState {
  private readonly rows = new Map<string, UrlStateMsg>();
  private readonly hosts = new Map<string, HostState>();
  private readonly ready = new MinHeap<HostState>();
  /** Failed URLs waiting for their retry time. */
  private readonly retries = new MinHeap<string>();
  /** URLs out to a fetcher and not yet final (stored or failed): url -> lease. */
  private readonly urlLeases = new Map<string, { id: string; expiresAt: number }>();
  /** Lease expiry times; entries for leases already answered are skipped. */
  private readonly leases = new MinHeap<{ url: string; id: string }>();
  private queued = 0;

  constructor(private readonly policy: FrontierPolicy, private readonly newLeaseId: () => string = randomUUID) {}

  /** Counts for progress lines and metrics. */
  stats(): { urls: number; queued: number; leased: number; hosts: number; retrying: number } {
    return { urls: this.rows.size, queued: this.queued, leased: this.urlLeases.size, hosts: this.hosts.size, retrying: this.retries.size };
  }

  /**
   * True when nothing is queued or out to a fetcher. URLs parked until a retry time (minutes
   * away) do not count: a bounded crawl may stop and leave them journaled for the next run.
   */
  idle(): boolean {
    return this.queued === 0 && this.urlLeases.size === 0;
  }

  row(url: string): UrlStateMsg | undefined {
    return this.rows.get(url);
  }

  private hostState(host: string, now: number): HostState {
    let h = this.hosts.get(host);
    if (!h) {
      h = { host, queue: [], inflight: null, nextAt: now, scheduled: false, crawlDelayMs: 0 };
      this.hosts.set(host, h);
    }
    return h;
  }

  private schedule(h: HostState): void {
    if (h.scheduled || h.inflight || h.queue.length === 0) return;
    h.scheduled = true;
    this.ready.push(h.nextAt, h);
  }

  private enqueue(h: HostState, url: string): void {
    h.queue.push(url);
    this.queued++;
    this.schedule(h);
  }

  /**
   * Rebuild from a URL-table row (after a crash or rebalance). A LEASED row keeps its lease and
   * counts as a request in flight: a live fetcher may still be working on it, and re-issuing it
   * now could hit the host twice at once. Restored hosts wait one full delay, since when they
   * were last fetched is unknown here.
   */
  restore(row: UrlStateMsg, now: number): void {
    this.rows.set(row.url, row);
    const h = this.hostState(row.host, now);
    h.nextAt = Math.max(h.nextAt, now + this.policy.minHostDelayMs);
    if (row.state === 'QUEUED') this.enqueue(h, row.url);
    else if (row.state === 'LEASED' && row.lease_id) {
      this.lease(row.url, row.lease_id, row.lease_expires_at ?? now);
      h.inflight ??= { id: row.lease_id, url: row.url };
    } else if (row.state === 'FAILED') this.retries.push(row.next_due_at ?? now, row.url);
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
      this.queued -= h.queue.length;
      this.hosts.delete(host);
    }
    for (const [url, row] of this.rows) {
      if (owns(row.host)) continue;
      this.rows.delete(url);
      this.urlLeases.delete(url);
    }
  }

  /** A candidate from seen-test: queue it unless the URL table knows it. */
  onCandidate(c: CandidateMsg, now: number): FrontierEmits {
    if (this.rows.has(c.url)) return { rows: [], fetches: [] };
    const row: UrlStateMsg = {
      url: c.url, host: c.host, state: 'QUEUED', depth: c.depth, discovered_at: c.discovered_at, updated_at: now,
      lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null,
      sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null,
    };
    this.rows.set(c.url, row);
    this.enqueue(this.hostState(c.host, now), c.url);
    return { rows: [row], fetches: [] };
  }

  /**
   * A fetcher's answer. The first status of a lease frees the host and starts its politeness
   * clock; the final one (stored) settles the URL-table row.
   */
  onStatus(s: FetchStatusMsg, now: number): FrontierEmits {
    const lease = this.urlLeases.get(s.url);
    const row = this.rows.get(s.url);
    if (!lease || !row || lease.id !== s.lease_id) return { rows: [], fetches: [] }; // stale or duplicate
    const h = this.hostState(s.host, now);
    if (h.inflight?.id === s.lease_id) {
      h.inflight = null;
      h.crawlDelayMs = Math.min(s.crawl_delay_ms, this.policy.maxCrawlDelayMs);
      const delay = Math.max(this.policy.minHostDelayMs, h.crawlDelayMs, this.policy.responseTimeFactor * s.response_ms, s.retry_after_ms ?? 0);
      h.nextAt = Math.max(h.nextAt, s.finished_at + delay, now);
      this.schedule(h);
    }
    if (!s.stored) return { rows: [], fetches: [] };
    this.urlLeases.delete(s.url);
    const next: UrlStateMsg = { ...row, updated_at: now, lease_id: null, lease_expires_at: null, http_status: s.http_status, reason: s.reason };
    switch (s.outcome) {
      case 'FETCHED':
      case 'NOT_HTML':
        Object.assign(next, {
          state: 'FETCHED', attempts: 0, fetched_at: s.finished_at, sha256: s.sha256 ?? row.sha256, etag: s.etag, last_modified: s.last_modified,
          warc_uri: s.warc_uri, warc_offset: s.warc_offset, warc_length: s.warc_length, next_due_at: null,
        });
        break;
      case 'ROBOTS_DISALLOWED':
        next.state = 'DISALLOWED';
        break;
      case 'REFUSED':
        next.state = 'DEAD';
        break;
      case 'FAILED':
      case 'ROBOTS_UNAVAILABLE':
        this.fail(next, now, s.retry_after_ms);
        break;
    }
    this.rows.set(s.url, next);
    return { rows: [next], fetches: [] };
  }

  private fail(row: UrlStateMsg, now: number, retryAfterMs: number | null): void {
    row.attempts += 1;
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

  /** Release due hosts, re-issue expired leases, and requeue due retries. */
  tick(now: number, maxFetches = Infinity): FrontierEmits {
    const out: FrontierEmits = { rows: [], fetches: [] };
    this.requeueRetries(now, out);
    this.expireLeases(now, out);
    while (out.fetches.length < maxFetches && (this.ready.peekKey() ?? Infinity) <= now) {
      const h = this.ready.pop()!;
      h.scheduled = false;
      if (this.hosts.get(h.host) !== h) continue; // dropped by retain()
      if (h.inflight || h.queue.length === 0) continue;
      if (h.nextAt > now) {
        this.schedule(h); // its time moved since it was pushed
        continue;
      }
      const url = h.queue.shift()!;
      this.queued--;
      const row = this.rows.get(url)!;
      const lease = { id: this.newLeaseId(), url, expiresAt: now + this.policy.leaseMs };
      h.inflight = { id: lease.id, url };
      this.lease(url, lease.id, lease.expiresAt);
      const leased: UrlStateMsg = { ...row, state: 'LEASED', lease_id: lease.id, lease_expires_at: lease.expiresAt, updated_at: now };
      this.rows.set(url, leased);
      out.rows.push(leased);
      out.fetches.push({
        url, host: h.host, depth: row.depth, lease_id: lease.id, lease_expires_at: lease.expiresAt, attempt: row.attempts + 1,
        prev_sha256: row.sha256, etag: row.etag, last_modified: row.last_modified,
      });
    }
    return out;
  }

  private requeueRetries(now: number, out: FrontierEmits): void {
    while ((this.retries.peekKey() ?? Infinity) <= now) {
      const url = this.retries.pop()!;
      const row = this.rows.get(url);
      if (!row || row.state !== 'FAILED') continue;
      const queuedRow: UrlStateMsg = { ...row, state: 'QUEUED', updated_at: now };
      this.rows.set(url, queuedRow);
      out.rows.push(queuedRow);
      this.enqueue(this.hostState(row.host, now), url);
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
        h.inflight = null;
        h.nextAt = Math.max(h.nextAt, now + Math.max(this.policy.minHostDelayMs, h.crawlDelayMs));
      }
      const next: UrlStateMsg = { ...row, lease_id: null, lease_expires_at: null, updated_at: now, reason: 'lease-expired', attempts: row.attempts + 1 };
      if (next.attempts >= this.policy.maxAttempts) next.state = 'DEAD';
      else {
        // Re-issue a lost fetch as soon as politeness allows, not after the failure back-off.
        next.state = 'QUEUED';
        h.queue.unshift(url);
        this.queued++;
      }
      this.rows.set(url, next);
      out.rows.push(next);
      this.schedule(h);
    }
  }
}
