/**
 * Layered politeness above the host: a cap per registered domain (a farm of subdomains) and per
 * resolved IP address (many hosts behind one server). Each group allows at most `maxInflight`
 * requests at once and starts requests to *different* hosts at least `minGapMs` apart (a
 * domain of one host is paced by the host's own gap only). Pure; the frontier asks before
 * releasing a host's URL and tells it when a request is answered.
 *
 * Records are partitioned by registered domain, so one frontier instance owns every host of a
 * domain and the domain cap is exact. An IP can serve hosts of many domains, hence of many
 * partitions and frontier instances: the IP cap holds per frontier instance, so N instances
 * may together send up to N x ipMaxInflight requests to one IP.
 */

export interface GroupCaps {
  maxInflight: number;
  minGapMs: number;
}

interface Group {
  inflight: number;
  /** Earliest start of the group's next request to another host than `lastHost`. */
  nextAt: number;
  lastHost: string | null;
  /** Hosts parked until a request of the group is answered. */
  waiting: Set<string>;
}

export class LayerGroups {
  private readonly groups = new Map<string, Group>();
  private cursor: IterableIterator<[string, Group]> | null = null;

  constructor(private readonly caps: GroupCaps) {}

  private group(key: string): Group {
    let g = this.groups.get(key);
    if (!g) this.groups.set(key, (g = { inflight: 0, nextAt: 0, lastHost: null, waiting: new Set() }));
    return g;
  }

  /** Earliest time a request of this group to `host` may start; Infinity while the group is at its concurrency cap. */
  readyAt(key: string, host: string): number {
    const g = this.groups.get(key);
    if (!g) return 0;
    if (g.inflight >= this.caps.maxInflight) return Infinity;
    return g.lastHost === host ? 0 : g.nextAt;
  }

  /** A request of the group to `host` starts now. */
  acquire(key: string, now: number, host: string | null = null): void {
    const g = this.group(key);
    g.inflight++;
    g.nextAt = Math.max(g.nextAt, now + this.caps.minGapMs);
    g.lastHost = host;
  }

  /** Park a host until the group has a free slot. */
  park(key: string, host: string): void {
    this.group(key).waiting.add(host);
  }

  /** A request of the group was answered (or lost): returns the hosts parked on it. */
  release(key: string): string[] {
    const g = this.groups.get(key);
    if (!g) return [];
    g.inflight = Math.max(0, g.inflight - 1);
    const woken = [...g.waiting];
    g.waiting.clear();
    if (g.inflight === 0 && woken.length === 0 && g.nextAt === 0) this.groups.delete(key);
    return woken;
  }

  inflight(key: string): number {
    return this.groups.get(key)?.inflight ?? 0;
  }

  /** Forget all counts (after a rebalance the frontier re-acquires for the leases it kept). */
  clear(): void {
    this.groups.clear();
    this.cursor = null;
  }

  /**
   * Look at up to `max` groups (the walk goes on where the last call stopped) and forget those
   * with nothing in flight, no host parked and their gap over: such a group allows what no group
   * allows, a request now. Without it every domain and IP ever fetched kept a group (about 200
   * heap bytes) for the process's life.
   */
  forgetIdle(now: number, max: number): void {
    for (let i = 0; i < max; i++) {
      this.cursor ??= this.groups.entries();
      const n = this.cursor.next();
      if (n.done) {
        this.cursor = null;
        return;
      }
      const [key, g] = n.value;
      if (g.inflight === 0 && g.waiting.size === 0 && g.nextAt <= now) this.groups.delete(key);
    }
  }

  /** Groups held (for tests). */
  get size(): number {
    return this.groups.size;
  }
}
