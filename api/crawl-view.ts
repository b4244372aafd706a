/**
 * What `crawl serve` (and `crawl run --status-port`) knows of the crawl, fed from the log by
 * the wiring: the feeds table (crawl.feeds), the host-policy and opt-out tables, the webmaster
 * accounts and sites, every process's applied registry version (crawl.optout-applied), and the
 * stream of fetch statuses (with a per-host summary of the last day, api/host-day.ts). URL rows
 * and the frontier's numbers come from a store (api/url-table.ts), never from a map of every URL.
 */
import { createHash } from 'node:crypto';
import { HostPolicyTable } from '../lib/host-policy';
import { DEFAULTS } from '../lib/config';
import type { FeedStateMsg, FetchStatusMsg, HostPolicyMsg, OptOutAppliedMsg, OptOutMsg, UrlStateMsg, UrlStatus, WebmasterAccountMsg, WebmasterSiteMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import { WebmasterState } from '../lib/webmaster';
import type { OutRecord } from '../runtime/stage';
import type { TopicId } from '../topologies/crawl';
import { HostDays } from './host-day';
import { AppliedReports, type RegistryLag } from './registry-lag';
import type { FrontierNumbers, UrlTableView } from './url-table';

/** How many seconds of pages/s history /stats returns. */
export const TIMELINE_SECONDS = 300;
/** Window for the headline pages/s figure. */
export const RATE_WINDOW_SECONDS = 10;
const RECENT_MAX = 50;

export interface Incident {
  at: number;
  host: string;
  url: string | null;
  kind: string;
  detail: string | null;
}

interface HostCounters {
  fetched: number;
  errors: number;
  incidents: number;
  lastAt: number;
}

export interface Stats {
  now: number;
  pages_total: number;
  pages_per_second: number;
  /** Pages fetched per second, oldest first, one entry per second up to now. */
  timeline: Array<{ t: number; pages: number }>;
  outcomes: Record<string, number>;
  http_status: Record<string, number>;
  queues: {
    urls: number;
    by_state: Partial<Record<UrlStatus, number>>;
    hosts_in_rotation: number;
    oldest_due_age_s: number | null;
    /** Records waiting per topic (consumer lag), where the runtime measures it. */
    lag: Record<string, number>;
  };
  top_hosts: Array<{ host: string; fetched: number; errors: number; incidents: number }>;
  politeness: Incident[];
  errors: Incident[];
  blocks: Array<{ host: string; until: number; reason: string | null }>;
  /** The opt-out registry version and how far behind it each process is. */
  optout_registry: RegistryLag;
}

export interface CrawlViewOptions {
  /** Where URL rows and the frontier's numbers are read (api/url-table.ts). */
  urls?: UrlTableView | null;
  /** A process more than this behind the opt-out registry raises the alarm. */
  registryLagAlarmMs?: number;
  /** How often processes report their applied version (a process three intervals quiet is silent). */
  registryReportMs?: number;
  /** A host-policy table shared with the crawl's stages (`crawl run`); a view of its own when absent. */
  policy?: HostPolicyTable;
}

export function urlHash(url: string): string {
  return createHash('sha256').update(url).digest('hex');
}

export class CrawlView {
  readonly policy: HostPolicyTable;
  readonly optouts = new OptOutRegistry();
  readonly webmaster = new WebmasterState();
  /** What was fetched from each host over the last day. */
  readonly hostDays = new HostDays();
  private readonly applied = new AppliedReports();
  private readonly lagOptions: { alarmMs: number; reportMs: number };
  /** The URL table (none: rows and frontier numbers are unknown). */
  private readonly table: UrlTableView | null;
  /** The feeds the frontiers poll (at most CRAWL_FEED_MAX_PER_HOST a host). */
  private readonly feedRows = new Map<string, FeedStateMsg>();
  private readonly hosts = new Map<string, HostCounters>();
  private readonly perSecond = new Map<number, number>();
  private readonly outcomes: Record<string, number> = {};
  private readonly httpStatus: Record<string, number> = {};
  private readonly politeness: Incident[] = [];
  private readonly errors: Incident[] = [];
  private pagesTotal = 0;
  private issuedVersion = 0;

  constructor(o: CrawlViewOptions = {}) {
    this.lagOptions = { alarmMs: o.registryLagAlarmMs ?? DEFAULTS.optoutLagAlarmMs, reportMs: o.registryReportMs ?? DEFAULTS.optoutReportMs };
    this.table = o.urls ?? null;
    this.policy = o.policy ?? new HostPolicyTable();
  }

  applyFeed(key: string, value: FeedStateMsg | null): void {
    if (value === null) this.feedRows.delete(key);
    else this.feedRows.set(key, value);
  }

  feed(url: string): FeedStateMsg | undefined {
    return this.feedRows.get(url);
  }

  /** Feeds in URL order, of one host when given, from the first URL after `after`, at most `limit`; and how many match. */
  feeds(o: { host?: string; after?: string; limit: number }): { total: number; feeds: FeedStateMsg[] } {
    const all = [...this.feedRows.values()].filter((f) => !o.host || f.host === o.host).sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
    const from = o.after === undefined ? 0 : all.findIndex((f) => f.url > o.after!);
    return { total: all.length, feeds: from < 0 ? [] : all.slice(from, from + o.limit) };
  }

  applyPolicy(key: string, value: HostPolicyMsg | null): void {
    this.policy.apply(key, value);
  }

  applyOptOut(key: string, value: OptOutMsg | null): void {
    this.optouts.apply(key, value);
  }

  applyOptOutApplied(key: string, value: OptOutAppliedMsg | null): void {
    this.applied.apply(key, value);
  }

  applyWebmasterAccount(key: string, value: WebmasterAccountMsg | null): void {
    this.webmaster.applyAccount(key, value);
  }

  applyWebmasterSite(key: string, value: WebmasterSiteMsg | null): void {
    this.webmaster.applySite(key, value);
  }

  /**
   * The registry version for the next opt-out this server writes: one more than the registry
   * has, and than this server last issued (two writes may come before the first is read back).
   */
  issueOptOutVersion(): number {
    this.issuedVersion = Math.max(this.issuedVersion + 1, this.optouts.nextVersion());
    return this.issuedVersion;
  }

  /**
   * Apply rows this server has just written, before they come back from the log, so the next
   * request sees them (a site added, then verified at once). Applying them again later is harmless.
   */
  applyOwn(outs: readonly OutRecord[]): void {
    for (const o of outs) this.applyRow(o.topic, o.key, o.value);
  }

  /**
   * One record of a topic the view follows (a table row, or a fetch status), however it was
   * read: the embedded log, a Kafka follower, or this server's own writes. Other topics are ignored.
   */
  applyRow(topic: TopicId, key: string, value: unknown): void {
    switch (topic) {
      case 'hostPolicy': return this.applyPolicy(key, value as HostPolicyMsg | null);
      case 'optout': return this.applyOptOut(key, value as OptOutMsg | null);
      case 'optoutApplied': return this.applyOptOutApplied(key, value as OptOutAppliedMsg | null);
      case 'webmasterAccounts': return this.applyWebmasterAccount(key, value as WebmasterAccountMsg | null);
      case 'webmasterSites': return this.applyWebmasterSite(key, value as WebmasterSiteMsg | null);
      case 'feeds': return this.applyFeed(key, value as FeedStateMsg | null);
      case 'fetchStatus': if (value) this.applyStatus(value as FetchStatusMsg); return;
      default: return;
    }
  }

  /** Every process's lag behind the opt-out registry, and whether the alarm is raised. */
  registryLag(now: number): RegistryLag {
    return this.applied.view(now, this.optouts, this.lagOptions);
  }

  /** One fetch status; only final ones (stored = true) count, so no fetch counts twice. */
  applyStatus(s: FetchStatusMsg): void {
    if (!s.stored) return;
    this.hostDays.apply(s);
    const h = this.host(s.host, s.finished_at);
    this.outcomes[s.outcome] = (this.outcomes[s.outcome] ?? 0) + 1;
    if (s.http_status !== null) {
      this.pagesTotal++;
      h.fetched++;
      this.httpStatus[s.http_status] = (this.httpStatus[s.http_status] ?? 0) + 1;
      const sec = Math.floor(s.finished_at / 1000);
      this.perSecond.set(sec, (this.perSecond.get(sec) ?? 0) + 1);
    }
    const incident = politenessIncident(s);
    if (incident) {
      h.incidents++;
      push(this.politeness, { at: s.finished_at, host: s.host, url: s.url, ...incident });
    }
    if (s.outcome === 'FAILED' || s.outcome === 'REFUSED' || (s.http_status !== null && s.http_status >= 500)) {
      h.errors++;
      push(this.errors, { at: s.finished_at, host: s.host, url: s.url, kind: s.outcome, detail: s.reason ?? (s.http_status !== null ? `HTTP ${s.http_status}` : null) });
    }
  }

  /** A URL's row by its normalised URL (with its host) or by the SHA-256 (hex) of the URL, where the table indexes it. */
  async url(urlOrHash: string, host: string | null): Promise<UrlStateMsg | undefined> {
    if (!this.table) return undefined;
    if (host !== null) {
      const byUrl = await this.table.row(urlOrHash, host);
      if (byUrl) return byUrl;
    }
    if (!/^[0-9a-f]{64}$/i.test(urlOrHash)) return undefined;
    const url = await this.table.urlOfHash(urlOrHash.toLowerCase());
    return url === undefined ? undefined : this.table.row(url, new URL(url).hostname);
  }

  /** A host is known once it has a URL row, a fetch status or a policy row. */
  async hostKnown(host: string): Promise<boolean> {
    if (this.hosts.has(host) || this.policy.fields(host).length > 0) return true;
    return (await this.table?.hostKnown(host)) ?? false;
  }

  /** URLs by state, hosts with work in the frontier and how long the most overdue has waited, for gauges. */
  frontierNumbers(now: number): FrontierNumbers {
    return this.table?.numbers(now) ?? { urls: 0, byState: {}, hostsInRotation: 0, oldestDueAgeMs: null };
  }

  snapshot(now: number, lag: Record<string, number> = {}): Stats {
    const nowSec = Math.floor(now / 1000);
    for (const sec of this.perSecond.keys()) if (sec <= nowSec - TIMELINE_SECONDS) this.perSecond.delete(sec);
    const timeline: Stats['timeline'] = [];
    for (let sec = nowSec - TIMELINE_SECONDS + 1; sec <= nowSec; sec++) timeline.push({ t: sec * 1000, pages: this.perSecond.get(sec) ?? 0 });
    // The current second is still filling, so the rate uses the last complete seconds.
    const window = timeline.slice(-RATE_WINDOW_SECONDS - 1, -1);
    const f = this.frontierNumbers(now);
    const blocks: Stats['blocks'] = [];
    for (const host of this.policyHosts()) {
      const b = this.policy.block(host, now);
      if (b) blocks.push({ host, until: b.until, reason: b.reason });
    }
    return {
      now,
      pages_total: this.pagesTotal,
      pages_per_second: window.reduce((n, s) => n + s.pages, 0) / RATE_WINDOW_SECONDS,
      timeline,
      outcomes: { ...this.outcomes },
      http_status: { ...this.httpStatus },
      queues: { urls: f.urls, by_state: f.byState, hosts_in_rotation: f.hostsInRotation, oldest_due_age_s: f.oldestDueAgeMs === null ? null : f.oldestDueAgeMs / 1000, lag },
      top_hosts: [...this.hosts]
        .sort((a, b) => b[1].fetched - a[1].fetched || b[1].lastAt - a[1].lastAt)
        .slice(0, 10)
        .map(([host, c]) => ({ host, fetched: c.fetched, errors: c.errors, incidents: c.incidents })),
      politeness: [...this.politeness].reverse(),
      errors: [...this.errors].reverse(),
      blocks,
      optout_registry: this.registryLag(now),
    };
  }

  /** Hosts with a policy row (blocks), among those the view has seen statuses of or has policy for. */
  private policyHosts(): Set<string> {
    return new Set([...this.hosts.keys(), ...this.policy.hosts()].filter((h) => this.policy.fields(h).length > 0));
  }

  private host(host: string, at: number): HostCounters {
    let h = this.hosts.get(host);
    if (!h) this.hosts.set(host, (h = { fetched: 0, errors: 0, incidents: 0, lastAt: at }));
    h.lastAt = Math.max(h.lastAt, at);
    return h;
  }
}

/** What makes a status a politeness incident: the host asked us to slow down or could not say. */
function politenessIncident(s: FetchStatusMsg): { kind: string; detail: string | null } | null {
  if (s.http_status === 429 || s.http_status === 503) {
    return { kind: `HTTP ${s.http_status}`, detail: s.retry_after_ms !== null ? `Retry-After ${Math.round(s.retry_after_ms / 1000)} s` : null };
  }
  if (s.retry_after_ms !== null && s.retry_after_ms > 0) return { kind: 'Retry-After', detail: `${Math.round(s.retry_after_ms / 1000)} s` };
  if (s.outcome === 'ROBOTS_UNAVAILABLE') return { kind: 'robots.txt unavailable', detail: s.reason };
  if (s.outcome === 'ROBOTS_DISALLOWED') return { kind: 'robots.txt disallows', detail: null };
  return null;
}

function push(ring: Incident[], item: Incident): void {
  ring.push(item);
  if (ring.length > RECENT_MAX) ring.shift();
}
