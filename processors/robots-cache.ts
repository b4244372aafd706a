/**
 * robots.txt per origin, fetched with our own User-Agent before any page of the origin and
 * kept at most robotsCacheMs (RFC 9309: 24 h). A failed fetch (5xx, unreachable) means
 * "disallow all" and is retried after robotsRetryMs. Concurrent asks for one origin share a
 * single fetch.
 */
import { robotsFromFetch, type RobotsFromFetch, type RobotsFetchResult } from '../lib/robots';

export interface RobotsEntry extends RobotsFromFetch {
  fetchedAt: number;
  /** The fetch error, when robots.txt could not be fetched at all (`CODE: message`). */
  error: string | null;
  /** True when this call fetched it (a request to the host just happened). */
  fresh: boolean;
}

export interface RobotsCacheOptions {
  cacheMs: number;
  retryMs: number;
  maxEntries: number;
}

/** Fetches `<origin>/robots.txt` (following up to 5 redirects) and says what came back. */
export type RobotsFetcher = (origin: string) => Promise<RobotsFetchResult>;

export class RobotsCache {
  private readonly entries = new Map<string, Omit<RobotsEntry, 'fresh'>>();
  private readonly inflight = new Map<string, Promise<RobotsEntry>>();

  constructor(private readonly fetcher: RobotsFetcher, private readonly opts: RobotsCacheOptions, private readonly now: () => number = Date.now) {}

  async get(origin: string): Promise<RobotsEntry> {
    const hit = this.entries.get(origin);
    if (hit) {
      const ttl = hit.retryLater ? this.opts.retryMs : this.opts.cacheMs;
      if (this.now() - hit.fetchedAt < ttl) return { ...hit, fresh: false };
    }
    let p = this.inflight.get(origin);
    if (!p) {
      p = this.load(origin).finally(() => this.inflight.delete(origin));
      this.inflight.set(origin, p);
    }
    return p;
  }

  private async load(origin: string): Promise<RobotsEntry> {
    const raw = await this.fetcher(origin);
    const entry = { ...robotsFromFetch(raw), fetchedAt: this.now(), error: 'error' in raw ? raw.error : null };
    if (this.entries.size >= this.opts.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(origin); // re-insert at the end: oldest first for eviction
    this.entries.set(origin, entry);
    return { ...entry, fresh: true };
  }
}
