/**
 * robots.txt per origin, fetched with our own User-Agent before any page of the origin and
 * kept at most cacheMs (RFC 9309 §2.4: 24 h). A failed fetch (5xx, unreachable) means
 * "disallow all" and is retried after retryMs (RFC 9309 §2.3.1.4). Concurrent asks for one
 * origin share a single fetch.
 *
 * The RFC's rule for an unreachable file after a cached copy (§2.4: a cached copy may be used
 * beyond 24 h "if the robots.txt file is unreachable"; §2.3.1.4: after "a reasonably long
 * period of time (for example, 30 days)" of being unreachable the crawler may stop): when a
 * refresh is unreachable and we hold a good copy fetched less than staleMaxMs ago, that copy
 * stays in force and the refresh is retried every retryMs; past staleMaxMs, disallow all.
 *
 * Answers outlive the process: the fetcher records each one in crawl.host-policy (field
 * `robots`, with the body) and a fetcher that restarts or takes a host over seeds its cache
 * from those rows (`seed`), so it does not fetch robots.txt again before the answer is 24 h old.
 */
import { robotsFromFetch, type RobotsFromFetch, type RobotsFetchResult } from '../lib/robots';

export interface RobotsEntry extends RobotsFromFetch {
  /** When the rules in force were fetched. */
  fetchedAt: number;
  /** The fetch error, when robots.txt could not be fetched at all (`CODE: message`). */
  error: string | null;
  /** True when this call fetched it (a request to the host just happened). */
  fresh: boolean;
  /** True when the last refresh failed and an older good copy is in force (RFC 9309 §2.4). */
  stale: boolean;
  /** What this call fetched, when the rules in force come from it (fresh and not stale): recorded for the next owner. */
  answer?: RobotsFetchResult;
}

export interface RobotsCacheOptions {
  cacheMs: number;
  retryMs: number;
  maxEntries: number;
  /** How long a good copy outlives an unreachable robots.txt; 0 = never (disallow at once). */
  staleMaxMs?: number;
}

/** Fetches `<origin>/robots.txt` (following up to 5 redirects) and says what came back. */
export type RobotsFetcher = (origin: string) => Promise<RobotsFetchResult>;

type Stored = Omit<RobotsEntry, 'fresh'> & { expiresAt: number };

export class RobotsCache {
  private readonly entries = new Map<string, Stored>();
  private readonly inflight = new Map<string, Promise<RobotsEntry>>();
  /**
   * Origins whose entry is a failure to retry (retryLater, no good copy in force), in the order
   * they expire (retryMs after they were put): once expired such an entry says nothing (the
   * next ask fetches again, and only a good copy is kept in force past its time), so it is
   * dropped. A crawl contacts many hosts that never answer: in `crawl run` over 100,000 hosts,
   * 82,000 of them refusing connections, the cache held them all (docs/frontier-store.md).
   */
  private readonly failures = new Map<string, number>();

  constructor(private readonly fetcher: RobotsFetcher, private readonly opts: RobotsCacheOptions, private readonly now: () => number = Date.now) {}

  async get(origin: string): Promise<RobotsEntry> {
    const hit = this.entries.get(origin);
    if (hit && this.now() < hit.expiresAt) return { ...strip(hit), fresh: false };
    let p = this.inflight.get(origin);
    if (!p) {
      p = this.load(origin).finally(() => this.inflight.delete(origin));
      this.inflight.set(origin, p);
    }
    return p;
  }

  /**
   * An answer fetched earlier (by this process before a restart, or by another fetcher), taken
   * while it is fresh: until fetchedAt + cacheMs, or + retryMs for an answer that says to try
   * again later. An entry fetched later than it is kept. True when it was taken.
   */
  seed(origin: string, answer: RobotsFetchResult, fetchedAt: number): boolean {
    const got = robotsFromFetch(answer);
    const expiresAt = fetchedAt + (got.retryLater ? this.opts.retryMs : this.opts.cacheMs);
    const had = this.entries.get(origin);
    if (expiresAt <= this.now() || (had && had.fetchedAt >= fetchedAt)) return false;
    this.put(origin, { ...got, fetchedAt, error: 'error' in answer ? answer.error : null, stale: false, expiresAt });
    return true;
  }

  /** Origins with an entry. */
  get size(): number {
    return this.entries.size;
  }

  /** The entry in force without fetching (for `crawl explain`), or undefined. */
  peek(origin: string): Omit<RobotsEntry, 'fresh'> | undefined {
    const hit = this.entries.get(origin);
    return hit ? strip(hit) : undefined;
  }

  private async load(origin: string): Promise<RobotsEntry> {
    const raw = await this.fetcher(origin);
    const t = this.now();
    const got = robotsFromFetch(raw);
    const prev = this.entries.get(origin);
    let entry: Stored;
    const lastGood = prev && !prev.retryLater ? prev : null;
    if (got.retryLater && lastGood && t - lastGood.fetchedAt < (this.opts.staleMaxMs ?? 0)) {
      entry = { ...lastGood, stale: true, error: 'error' in raw ? raw.error : null, expiresAt: t + this.opts.retryMs };
    } else {
      const ttl = got.retryLater ? this.opts.retryMs : this.opts.cacheMs;
      entry = { ...got, fetchedAt: t, error: 'error' in raw ? raw.error : null, stale: false, expiresAt: t + ttl };
    }
    this.put(origin, entry);
    return { ...strip(entry), fresh: true, ...(entry.stale ? {} : { answer: raw }) };
  }

  private put(origin: string, entry: Stored): void {
    this.dropExpiredFailures();
    if (this.entries.size >= this.opts.maxEntries && !this.entries.has(origin)) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(origin); // re-insert at the end: oldest first for eviction
    // A literal of one shape: spread copies ({ ...got, ... }) of many origins came to have a hidden
    // class each in the crawl's heap (a descriptor array and a map per entry, 300 bytes more).
    this.entries.set(origin, {
      rules: entry.rules, kind: entry.kind, retryLater: entry.retryLater, fetchedAt: entry.fetchedAt, error: entry.error, stale: entry.stale, expiresAt: entry.expiresAt,
    });
    this.failures.delete(origin);
    if (entry.retryLater && !entry.stale) this.failures.set(origin, entry.expiresAt);
  }

  private dropExpiredFailures(): void {
    const t = this.now();
    for (const [origin, expiresAt] of this.failures) {
      if (expiresAt > t) break;
      this.failures.delete(origin);
      this.entries.delete(origin);
    }
  }
}

function strip(s: Stored): Omit<RobotsEntry, 'fresh'> {
  const { expiresAt: _e, ...rest } = s;
  return rest;
}
