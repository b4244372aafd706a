/**
 * A small TTL-respecting DNS cache for the fetcher.
 *
 * The fetcher resolves each host once, checks every address against the SSRF policy and then
 * connects to a checked address; caching here keeps a crawl from hammering the resolver, and
 * honouring TTLs keeps it from pinning a site to a stale address for hours.
 *
 * Resolution order: names in /etc/hosts (read once) → resolve4/resolve6 with TTLs → the
 * system resolver (`dns.lookup`, which also sees search domains and NSS) with a short default
 * TTL. Concurrent lookups of the same name share one query.
 */
import { promises as dnsp } from 'node:dns';
import { readFileSync } from 'node:fs';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** What the fetcher needs: a name in, every address out (throws on failure, `.code` set). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The DNS operations the cache uses; replaceable in tests. */
export interface DnsBackend {
  resolve4(host: string): Promise<Array<{ address: string; ttl: number }>>;
  resolve6(host: string): Promise<Array<{ address: string; ttl: number }>>;
  lookup(host: string): Promise<ResolvedAddress[]>;
  /** Lower-cased name → addresses from the hosts file. */
  hosts(): Map<string, ResolvedAddress[]>;
}

export interface DnsCacheOptions {
  maxEntries?: number;
  /** TTL for answers without one (hosts file, system resolver). */
  defaultTtlMs?: number;
  /** Upper bound on any TTL, so a 1-week TTL cannot pin a stale address for a week. */
  maxTtlMs?: number;
  backend?: DnsBackend;
  now?: () => number;
}

interface Entry {
  addresses: ResolvedAddress[];
  expiresAt: number;
}

export class DnsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<ResolvedAddress[]>>();
  private readonly maxEntries: number;
  private readonly defaultTtlMs: number;
  private readonly maxTtlMs: number;
  private readonly backend: DnsBackend;
  private readonly now: () => number;

  constructor(opts: DnsCacheOptions = {}) {
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.defaultTtlMs = opts.defaultTtlMs ?? 30_000;
    this.maxTtlMs = opts.maxTtlMs ?? 3_600_000;
    this.backend = opts.backend ?? systemBackend();
    this.now = opts.now ?? Date.now;
  }

  /** Bound as a `Resolver` so it can be handed to the fetcher directly. */
  readonly resolve: Resolver = async (hostname) => {
    const key = hostname.toLowerCase().replace(/\.$/, '');
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) {
      // Re-insert to keep Map order approximately least-recently-used first.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.addresses;
    }
    if (hit) this.entries.delete(key);
    let p = this.inflight.get(key);
    if (!p) {
      p = this.query(key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  };

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  private async query(name: string): Promise<ResolvedAddress[]> {
    const fromHosts = this.backend.hosts().get(name);
    if (fromHosts && fromHosts.length > 0) return this.store(name, fromHosts, this.defaultTtlMs);

    const [v4, v6] = await Promise.allSettled([this.backend.resolve4(name), this.backend.resolve6(name)]);
    const records = [
      ...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 as const })) : []),
    ];
    if (records.length > 0) {
      const ttlMs = Math.min(...records.map((r) => r.ttl)) * 1000;
      return this.store(
        name,
        records.map(({ address, family }) => ({ address, family })),
        ttlMs,
      );
    }
    // No answer from DNS proper (NXDOMAIN, no server, a search-domain name): ask the system.
    const sys = await this.backend.lookup(name);
    if (sys.length === 0) throw Object.assign(new Error(`no addresses for ${name}`), { code: 'ENOTFOUND' });
    return this.store(name, sys, this.defaultTtlMs);
  }

  private store(name: string, addresses: ResolvedAddress[], ttlMs: number): ResolvedAddress[] {
    const ttl = Math.min(Math.max(ttlMs, 0), this.maxTtlMs);
    if (ttl > 0) {
      this.entries.set(name, { addresses, expiresAt: this.now() + ttl });
      while (this.entries.size > this.maxEntries) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
    }
    return addresses;
  }
}

/** Parse a hosts(5) file: `address name [aliases…]`, `#` comments. */
export function parseHostsFile(text: string): Map<string, ResolvedAddress[]> {
  const map = new Map<string, ResolvedAddress[]>();
  for (const raw of text.split('\n')) {
    const fields = raw.replace(/#.*/, '').trim().split(/\s+/);
    if (fields.length < 2) continue;
    const [address, ...names] = fields;
    const family = address.includes(':') ? 6 : 4;
    for (const n of names) {
      const key = n.toLowerCase();
      const list = map.get(key) ?? [];
      if (!list.some((a) => a.address === address)) list.push({ address, family });
      map.set(key, list);
    }
  }
  return map;
}

function systemBackend(): DnsBackend {
  // Short timeouts: a crawler must not stall 20 s on an unresponsive authoritative server.
  const resolver = new dnsp.Resolver({ timeout: 2000, tries: 2 });
  let hosts: Map<string, ResolvedAddress[]> | null = null;
  return {
    resolve4: (h) => resolver.resolve4(h, { ttl: true }),
    resolve6: (h) => resolver.resolve6(h, { ttl: true }),
    lookup: async (h) =>
      (await dnsp.lookup(h, { all: true, verbatim: true })).map((a) => ({
        address: a.address,
        family: a.family === 6 ? 6 : 4,
      })),
    hosts: () => {
      if (hosts === null) {
        try {
          hosts = parseHostsFile(readFileSync('/etc/hosts', 'utf8'));
        } catch {
          hosts = new Map();
        }
      }
      return hosts;
    },
  };
}
