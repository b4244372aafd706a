/**
 * What the crawl fetched from each host over the last day, for the webmaster API: requests,
 * errors, responses by status class, and the time between consecutive requests, from the
 * final fetch statuses on crawl.fetch-status (the same stream the status page counts). Pure.
 *
 * Bounded: per host at most 24 hourly buckets, and at most `maxHosts` hosts, the least
 * recently active dropped first. A host's requests are counted by the status of each leased
 * fetch that reached it (a response, or a network failure); fetches refused before any request
 * (blocked, opted out, SSRF guard) are not requests. robots.txt requests are not in
 * crawl.fetch-status and are not counted.
 */
import type { FetchStatusMsg } from '../lib/messages';

const HOUR_MS = 3600_000;
export const DAY_MS = 24 * HOUR_MS;
export const DEFAULT_MAX_HOSTS = 100_000;
/** Refusals made before any request reached the host. */
const NOT_A_REQUEST = new Set(['blocked', 'opted-out', 'SSRF_BLOCKED', 'bad-url']);

interface Bucket {
  hour: number;
  requests: number;
  errors: number;
  byClass: Record<string, number>;
  gapSumMs: number;
  gaps: number;
  minGapMs: number;
  firstAt: number;
  lastAt: number;
}

interface HostDay {
  buckets: Bucket[];
  lastStart: number;
}

export interface HostDaySummary {
  /** The window: the last 24 hours up to `to`. */
  from: number;
  to: number;
  requests: number;
  /** Network failures, 429 and 5xx answers. */
  errors: number;
  by_status_class: Record<string, number>;
  /** Mean and least time between the starts of two consecutive requests (null below two requests). */
  mean_gap_ms: number | null;
  min_gap_ms: number | null;
  first_request_at: number | null;
  last_request_at: number | null;
}

/** Whether a final status stands for a request that reached the host. */
export function reachedHost(s: FetchStatusMsg): boolean {
  if (s.http_status !== null) return true;
  if (s.outcome === 'FAILED') return true;
  return s.outcome === 'REFUSED' && s.reason !== null && !NOT_A_REQUEST.has(s.reason);
}

export function isError(s: FetchStatusMsg): boolean {
  return s.http_status === null || s.http_status === 429 || s.http_status >= 500;
}

export class HostDays {
  private readonly hosts = new Map<string, HostDay>();

  constructor(private readonly maxHosts = DEFAULT_MAX_HOSTS) {}

  get size(): number {
    return this.hosts.size;
  }

  /** One final fetch status (stored = true); early ones and refusals before any request are skipped. */
  apply(s: FetchStatusMsg): void {
    if (!s.stored || !reachedHost(s)) return;
    let h = this.hosts.get(s.host);
    if (h) this.hosts.delete(s.host); // re-inserted below: the map's order is recency
    else {
      if (this.hosts.size >= this.maxHosts) this.hosts.delete(this.hosts.keys().next().value!);
      h = { buckets: [], lastStart: -Infinity };
    }
    this.hosts.set(s.host, h);
    const hour = Math.floor(s.started_at / HOUR_MS) * HOUR_MS;
    let b = h.buckets.find((x) => x.hour === hour);
    if (!b) {
      b = { hour, requests: 0, errors: 0, byClass: {}, gapSumMs: 0, gaps: 0, minGapMs: Infinity, firstAt: s.started_at, lastAt: s.started_at };
      h.buckets.push(b);
      // Keep a day: the newest hour seen minus 24 hours.
      const newest = Math.max(...h.buckets.map((x) => x.hour));
      h.buckets = h.buckets.filter((x) => x.hour > newest - DAY_MS);
    }
    b.requests++;
    if (isError(s)) b.errors++;
    const cls = s.http_status === null ? 'none' : `${Math.floor(s.http_status / 100)}xx`;
    b.byClass[cls] = (b.byClass[cls] ?? 0) + 1;
    b.firstAt = Math.min(b.firstAt, s.started_at);
    b.lastAt = Math.max(b.lastAt, s.started_at);
    // Statuses of one host come in order (one partition), but a replayed one may not: no gap then.
    if (s.started_at >= h.lastStart && h.lastStart > s.started_at - DAY_MS) {
      const gap = s.started_at - h.lastStart;
      b.gapSumMs += gap;
      b.gaps++;
      b.minGapMs = Math.min(b.minGapMs, gap);
    }
    h.lastStart = Math.max(h.lastStart, s.started_at);
  }

  summary(host: string, now: number): HostDaySummary {
    const out: HostDaySummary = {
      from: now - DAY_MS, to: now, requests: 0, errors: 0, by_status_class: {}, mean_gap_ms: null, min_gap_ms: null, first_request_at: null, last_request_at: null,
    };
    let gapSum = 0;
    let gaps = 0;
    let minGap = Infinity;
    for (const b of this.hosts.get(host)?.buckets ?? []) {
      if (b.hour + HOUR_MS <= now - DAY_MS || b.hour > now) continue;
      out.requests += b.requests;
      out.errors += b.errors;
      for (const [k, n] of Object.entries(b.byClass)) out.by_status_class[k] = (out.by_status_class[k] ?? 0) + n;
      gapSum += b.gapSumMs;
      gaps += b.gaps;
      minGap = Math.min(minGap, b.minGapMs);
      out.first_request_at = out.first_request_at === null ? b.firstAt : Math.min(out.first_request_at, b.firstAt);
      out.last_request_at = out.last_request_at === null ? b.lastAt : Math.max(out.last_request_at, b.lastAt);
    }
    if (gaps > 0) {
      out.mean_gap_ms = Math.round(gapSum / gaps);
      out.min_gap_ms = minGap;
    }
    return out;
  }
}
