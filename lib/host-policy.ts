/**
 * The host-policy table (crawl.host-policy) as every processor sees it: operator blocks with
 * expiry, operator crawl-rate ceilings, webmasters' rates with expiry, and whatever other field
 * groups writers add. Pure: fed rows by the runtime's global-table feed (Stage.globalTables /
 * onGlobal), asked by host.
 *
 * Keys are `${host}|${field}`; a null value (tombstone) removes that field group, e.g. an
 * operator lifting a block.
 */
import type { HostPolicyMsg } from './messages';

export function hostPolicyKey(host: string, field: string): string {
  return `${host}|${field}`;
}

const NO_ROWS: readonly HostPolicyMsg[] = [];

export class HostPolicyTable {
  /**
   * Each host's field groups in the order first written. A host has one to three (robots,
   * backoff, a block): an array of them, searched by field, costs about 40 bytes a host where a
   * Map each cost about 220 (14 MiB at 44,500 hosts in `crawl run`; docs/frontier-store.md).
   */
  private readonly rows = new Map<string, HostPolicyMsg[]>();

  /**
   * The row last applied. `crawl run` shares one table among seen-test, the frontier and fetch,
   * and its runner hands each appended row (one object) to every stage in turn: the second and
   * third apply of the same object change nothing, and for a robots row would copy it again.
   */
  private lastKey: string | null = null;
  private lastValue: HostPolicyMsg | null = null;

  /** Apply one row of crawl.host-policy (value null = tombstone of that key). */
  apply(key: string, value: HostPolicyMsg | null): void {
    if (value !== null && value === this.lastValue && key === this.lastKey) return;
    this.lastKey = key;
    this.lastValue = value;
    const bar = key.indexOf('|');
    const host = key.slice(0, bar);
    const field = key.slice(bar + 1);
    const fields = this.rows.get(host);
    const at = fields ? fields.findIndex((r) => r.field === field) : -1;
    if (value === null) {
      if (at < 0) return;
      fields!.splice(at, 1);
      if (fields!.length === 0) this.rows.delete(host);
      return;
    }
    // robots.txt bodies are for the fetcher owning the host (processors/robots-cache.ts), not
    // for every process that follows the whole table. The key names the field.
    const row = value.robots_body || value.field !== field ? { ...value, field, robots_body: null } : value;
    if (!fields) this.rows.set(host, [row]);
    else if (at < 0) fields.push(row);
    else fields[at] = row;
  }

  get(host: string, field: string): HostPolicyMsg | undefined {
    const fields = this.rows.get(host);
    if (!fields) return undefined;
    for (const r of fields) if (r.field === field) return r;
    return undefined;
  }

  /** The block in force on a host at `now`, if any. */
  block(host: string, now: number): { until: number; reason: string | null } | null {
    const b = this.get(host, 'block');
    if (!b || b.blocked_until === null || b.blocked_until <= now) return null;
    return { until: b.blocked_until, reason: b.reason };
  }

  /**
   * The end of the no-request window the host's frontier wrote (field `backoff`: a Retry-After,
   * a 503 pause, a timeout back-off) while it lasts at `now`, else null.
   */
  backoffUntil(host: string, now: number): number | null {
    const until = this.get(host, 'backoff')?.blocked_until ?? null;
    return until !== null && until > now ? until : null;
  }

  /** The operator's ceiling on this host's rate (field `crawl-rate`), as a least gap in ms. */
  minDelayMs(host: string): number | null {
    return this.get(host, 'crawl-rate')?.min_delay_ms ?? null;
  }

  /** A verified webmaster's rate for the host (field `webmaster-rate`) while in force at `now`. */
  webmasterRate(host: string, now: number): { maxRequestsPerSecond: number; gapMs: number; until: number | null } | null {
    const r = this.get(host, 'webmaster-rate');
    if (!r || r.min_delay_ms === null || (r.expires_at != null && r.expires_at <= now)) return null;
    return { maxRequestsPerSecond: r.max_requests_per_second ?? 1000 / r.min_delay_ms, gapMs: r.min_delay_ms, until: r.expires_at ?? null };
  }

  /**
   * The least gap between two requests to a host at `now`: our default (`defaultMs`), or in its
   * place a verified webmaster's rate (which may raise or lower it) until it expires; never
   * below an operator's crawl-rate ceiling. Crawl-delay, response times and back-off only add
   * to it, so no controller ever goes faster.
   */
  leastGapMs(host: string, now: number, defaultMs: number): number {
    return Math.max(this.webmasterRate(host, now)?.gapMs ?? defaultMs, this.minDelayMs(host) ?? 0);
  }

  /** Every field group of a host (for `crawl explain` and the API). */
  fields(host: string): HostPolicyMsg[] {
    return [...this.eachField(host)];
  }

  /** Every host with a row. */
  hosts(): IterableIterator<string> {
    return this.rows.keys();
  }

  /** The same rows without a copy (seen-test asks for every link it screens). */
  eachField(host: string): Iterable<HostPolicyMsg> {
    return this.rows.get(host) ?? NO_ROWS;
  }
}
