/**
 * The URL table as the API reads it (GET /urls/{url}, /stats, /metrics): from a store, never
 * from a map in memory.
 * - `crawl run --status-port`: the frontier's own stores (frontierTable, here).
 * - `crawl serve` (Kafka mode): a copy of crawl.urls in stores of its own (api/serve-url-table.ts).
 */
import type { UrlStateMsg, UrlStatus } from '../lib/messages';
import type { FrontierState } from '../processors/frontier-state';

export interface FrontierNumbers {
  urls: number;
  byState: Partial<Record<UrlStatus, number>>;
  hostsInRotation: number;
  /** How long the longest-waiting host with work has been due (null: not known, or none due). */
  oldestDueAgeMs: number | null;
}

export interface UrlTableView {
  row(url: string, host: string): Promise<UrlStateMsg | undefined>;
  /** The URL whose SHA-256 (hex) this is; undefined when unknown or when this table keeps no such index. */
  urlOfHash(hex: string): Promise<string | undefined>;
  hostKnown(host: string): Promise<boolean>;
  numbers(now: number): FrontierNumbers;
}

/** `crawl run`'s frontier, read in place. */
export function frontierTable(state: FrontierState): UrlTableView {
  return {
    row: (url, host) => state.row(url, host),
    urlOfHash: async () => undefined,
    async hostKnown(host) {
      if (state.host(host)) return true;
      return (await state.storeFor(host)?.hasHost(host)) ?? false;
    },
    numbers(now) {
      const s = state.stats();
      const due = state.dueHosts(now);
      return { urls: s.urls, byState: s.byState, hostsInRotation: due.withWork, oldestDueAgeMs: due.oldestDueAgeMs };
    },
  };
}

