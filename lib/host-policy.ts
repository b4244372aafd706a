/**
 * The host-policy table (crawl.host-policy) as every processor sees it: operator blocks with
 * expiry, crawl-rate ceilings, and whatever other field groups writers add. Pure: fed rows by
 * the runtime's global-table feed (Stage.globalTables / onGlobal), asked by host.
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
  private readonly rows = new Map<string, Map<string, HostPolicyMsg>>();

  /** Apply one row of crawl.host-policy (value null = tombstone of that key). */
  apply(key: string, value: HostPolicyMsg | null): void {
    const bar = key.indexOf('|');
    const host = key.slice(0, bar);
    const field = key.slice(bar + 1);
    if (value === null) {
      this.rows.get(host)?.delete(field);
      return;
    }
    let fields = this.rows.get(host);
    if (!fields) this.rows.set(host, (fields = new Map()));
    fields.set(field, value);
  }

  get(host: string, field: string): HostPolicyMsg | undefined {
    return this.rows.get(host)?.get(field);
  }

  /** The block in force on a host at `now`, if any. */
  block(host: string, now: number): { until: number; reason: string | null } | null {
    const b = this.get(host, 'block');
    if (!b || b.blocked_until === null || b.blocked_until <= now) return null;
    return { until: b.blocked_until, reason: b.reason };
  }

  /** The operator's or webmaster's ceiling on this host's rate, as a least gap in ms. */
  minDelayMs(host: string): number | null {
    return this.get(host, 'crawl-rate')?.min_delay_ms ?? null;
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
    return this.rows.get(host)?.values() ?? NO_ROWS;
  }
}
