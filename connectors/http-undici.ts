/**
 * HttpClient on undici: one GET exchange, hardened for the hostile web.
 *
 * - SSRF: the host is resolved once (or taken as a literal), every address is checked against
 *   lib/net/ssrf, and the socket is opened to that checked address by a custom connector — no
 *   second lookup, so DNS rebinding between check and connect is impossible. The Host header
 *   and TLS SNI/certificate name stay the original hostname.
 * - Reuse: one undici Client (one keep-alive connection) per (origin, checked address), HTTP/1.1,
 *   LRU-bounded: politeness already keeps one request per host at a time, and a Pool's fixed
 *   2,048-slot queue cost 16 KiB per host (63 MB with 5,000 hosts in rotation). One idle past
 *   its keep-alive whose connection is gone is dropped (dropIdle).
 * - Limits: connect timeout; one overall deadline (headers and body, so a slow drip is cut);
 *   header-size cap; decoded-body cap and decompression-ratio cap (lib/net/content-decode,
 *   undici never decompresses here). No redirects are followed.
 */
import { Client, Pool, buildConnector } from 'undici';
import { FetchError, type HttpClient, type HttpFetchOptions } from './types';
import { exchange, type RequestHead } from './http-exchange';
import { classifyAddress, compileCidrs, isAddressAllowed, parseHostLiteral } from '../lib/net/ssrf';
import { DnsCache, type ResolvedAddress, type Resolver } from '../lib/net/dns-cache';

export interface HttpClientDeps {
  /** Name → addresses; default a DnsCache over the system resolver. */
  resolver?: Resolver;
  /** Pools (origin × address) kept open; the least recently used beyond this is closed. */
  maxPools?: number;
  /** Parallel connections per origin × address (1: a Client; more: a Pool). */
  connectionsPerOrigin?: number;
  keepAliveTimeoutMs?: number;
}

/** Addresses tried when connecting fails (several A/AAAA records); bounded, like the rest. */
const MAX_ADDRESS_ATTEMPTS = 3;
const ACCEPT_ENCODING = 'gzip, deflate, br';
/** Request headers the caller may not set: they belong to the connection, not the request. */
const HOP_HEADERS = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'content-length', 'te', 'trailer', 'proxy-connection']);

export { mapError } from './http-exchange';

/**
 * A pool idle past its keep-alive timeout (and this much more) whose connection undici has closed
 * holds only its own state (about 2 KiB): it is closed and forgotten, and the host's next request
 * builds a new one, as it would open a new connection anyway. One a server's Keep-Alive header
 * keeps connected longer stays. At most IDLE_POOL_SCAN such pools are looked at per new pool.
 */
const IDLE_POOL_SLACK_MS = 1000;
const IDLE_POOL_SCAN = 32;

/** A pool and what the LRU needs to know of it. */
interface PoolEntry {
  pool: Client | Pool;
  /** Exchanges running on it. */
  busy: number;
  lastUsedAt: number;
}

/** The client, and how many pools it keeps open (tests). */
export type UndiciHttpClient = HttpClient & { readonly openPools: number };

export function createHttpClient(deps: HttpClientDeps = {}): UndiciHttpClient {
  const resolver = deps.resolver ?? new DnsCache().resolve;
  // Default as lib/config.ts httpMaxPools: the hosts in rotation, so keep-alive gets reused.
  const maxPools = deps.maxPools ?? 8192;
  const keepAliveTimeout = deps.keepAliveTimeoutMs ?? 4000;
  /** Least recently used first. */
  const pools = new Map<string, PoolEntry>();
  let closed = false;

  /**
   * Close the least recently used pools that have been idle past their keep-alive: with hosts
   * in rotation 8,192 pools (mostly without a connection) held 18 MiB of `crawl run`'s heap
   * over 100,000 hosts (docs/frontier-store.md).
   */
  function dropIdle(now: number): void {
    let scanned = 0;
    for (const [key, e] of pools) {
      if (now - e.lastUsedAt < keepAliveTimeout + IDLE_POOL_SLACK_MS || ++scanned > IDLE_POOL_SCAN) break;
      const st = e.pool.stats;
      if (e.busy > 0 || Number(st.connected) > 0 || st.size > 0) continue;
      pools.delete(key);
      e.pool.close().catch(() => undefined);
    }
  }

  function poolFor(url: URL, ip: string, opts: HttpFetchOptions): PoolEntry {
    const key = `${url.origin} ${ip} ${opts.connectTimeoutMs} ${opts.maxHeaderBytes}`;
    const now = Date.now();
    const found = pools.get(key);
    if (found) {
      pools.delete(key); // move to the most-recently-used end
      pools.set(key, found);
      found.lastUsedAt = now;
      return found;
    }
    dropIdle(now);
    const base = buildConnector({ timeout: opts.connectTimeoutMs });
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    // SNI must be a name, never an IP literal (RFC 6066).
    const servername = parseHostLiteral(hostname) === null ? hostname : undefined;
    const options = {
      pipelining: 1,
      keepAliveTimeout,
      maxHeaderSize: opts.maxHeaderBytes,
      // The pinned address replaces the hostname for the TCP connect only.
      connect: ((o, cb) => base({ ...o, hostname: ip, servername }, cb)) as buildConnector.connector,
    };
    const connections = deps.connectionsPerOrigin ?? 1;
    const entry: PoolEntry = { pool: connections > 1 ? new Pool(url.origin, { ...options, connections }) : new Client(url.origin, options), busy: 0, lastUsedAt: now };
    pools.set(key, entry);
    while (pools.size > maxPools) {
      const [oldKey, old] = pools.entries().next().value as [string, PoolEntry];
      pools.delete(oldKey);
      old.pool.close().catch(() => undefined); // lets in-flight exchanges finish
    }
    return entry;
  }

  async function resolveChecked(url: URL, opts: HttpFetchOptions, deadlineAt: number): Promise<string[]> {
    const host = url.hostname;
    const literal = parseHostLiteral(host);
    let addrs: ResolvedAddress[];
    if (literal !== null) {
      addrs = [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
    } else {
      addrs = await withDeadline(resolver(host), deadlineAt).catch((e: unknown) => {
        if (e instanceof FetchError) throw e;
        const code = (e as { code?: string }).code ?? 'EUNKNOWN';
        const permanent = code === 'ENOTFOUND' || code === 'ENODATA';
        throw new FetchError('DNS_FAILED', `cannot resolve ${host}: ${code}`, !permanent);
      });
    }
    try {
      compileCidrs(opts.allowCidrs ?? []);
    } catch (e) {
      throw new FetchError('SSRF_BLOCKED', (e as Error).message, false);
    }
    // Any forbidden answer condemns the name: mixed public/private answers are a rebinding trick.
    for (const a of addrs) {
      if (!isAddressAllowed(a.address, opts)) {
        throw new FetchError('SSRF_BLOCKED', `${host} → ${a.address} (${classifyAddress(a.address)}) is not allowed`, false);
      }
    }
    // IPv4 first: IPv6 reachability is the less reliable of the two from crawler hosts.
    const norm = addrs.map((a) => parseHostLiteral(a.address) ?? a.address);
    return [...new Set([...norm.filter((a) => !a.includes(':')), ...norm.filter((a) => a.includes(':'))])];
  }

  return {
    get openPools() {
      return pools.size;
    },
    async fetch(rawUrl, opts) {
      const startedAt = Date.now();
      const deadlineAt = startedAt + opts.overallTimeoutMs;
      if (closed) throw new FetchError('CONNECT_FAILED', 'http client is closed', false);
      let url: URL;
      try {
        url = new URL(rawUrl);
      } catch {
        throw new FetchError('BAD_URL', `not a URL: ${rawUrl}`, false);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new FetchError('UNSUPPORTED_SCHEME', `unsupported scheme ${url.protocol}`, false);
      }
      url.hash = '';
      const head = buildRequestHead(url, opts);
      const ips = await resolveChecked(url, opts, deadlineAt);
      let last: unknown;
      for (const ip of ips.slice(0, MAX_ADDRESS_ATTEMPTS)) {
        const entry = poolFor(url, ip, opts);
        entry.busy++;
        try {
          return await exchange(entry.pool, url, ip, head, opts, startedAt, deadlineAt);
        } catch (e) {
          last = e;
          const retryNext = e instanceof FetchError && e.retriable && (e.code === 'CONNECT_FAILED' || e.code === 'CONNECT_TIMEOUT');
          if (!retryNext || Date.now() >= deadlineAt) throw e;
        } finally {
          entry.busy--;
          entry.lastUsedAt = Date.now();
        }
      }
      throw last;
    },
    async close() {
      closed = true;
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((e) => e.pool.destroy().catch(() => undefined)));
    },
  };
}

function buildRequestHead(url: URL, opts: HttpFetchOptions): RequestHead {
  const path = `${url.pathname}${url.search}`;
  const fields = new Map<string, [string, string]>([
    ['user-agent', ['User-Agent', opts.userAgent]],
    ['accept-encoding', ['Accept-Encoding', ACCEPT_ENCODING]],
  ]);
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (!HOP_HEADERS.has(k.toLowerCase())) fields.set(k.toLowerCase(), [k, v]);
  }
  const pairs = [...fields.values()];
  for (const [k, v] of pairs) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) || /[\r\n\0]/.test(v)) {
      throw new FetchError('BAD_URL', `invalid request header ${JSON.stringify(k)}`, false);
    }
  }
  // undici writes `host` (lower-case, from our explicit value) then `connection`, then ours.
  const text =
    `GET ${path} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: keep-alive\r\n` +
    pairs.map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    '\r\n';
  return { path, flat: ['host', url.host, ...pairs.flat()], text };
}

function withDeadline<T>(p: Promise<T>, deadlineAt: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new FetchError('DEADLINE_EXCEEDED', 'deadline passed while resolving', true)),
      Math.max(0, deadlineAt - Date.now()),
    );
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
