/**
 * DNS TXT lookups for webmaster verification, through node:dns's resolver (c-ares) pointed at
 * CRAWL_WEBMASTER_DNS_SERVERS, or the system's resolvers when none are set. The crawl's own
 * fetches resolve names elsewhere (lib/net/dns-cache.ts); this is only the verification's view.
 */
import { Resolver } from 'node:dns/promises';

export type TxtLookup = (name: string) => Promise<string[]>;

export class DnsLookupError extends Error {
  override name = 'DnsLookupError';
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** Codes that mean "the name has no TXT record", not "DNS did not answer". */
const NO_RECORDS = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/**
 * A TXT lookup: each record's strings joined (a long record is split into 255-byte strings on
 * the wire). Resolves [] when the name or its TXT records do not exist; rejects with
 * DnsLookupError when no server answered in time or one answered with an error.
 */
export function txtLookup(servers: readonly string[], timeoutMs: number): TxtLookup {
  const resolver = new Resolver({ timeout: Math.max(100, Math.floor(timeoutMs / 2)), tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return async (name) => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_r, reject) => {
      timer = setTimeout(() => reject(new DnsLookupError('ETIMEOUT', `no DNS answer for ${name} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const records = await Promise.race([resolver.resolveTxt(name), deadline]);
      return records.map((chunks) => chunks.join(''));
    } catch (err) {
      if (err instanceof DnsLookupError) throw err;
      const code = (err as { code?: string }).code ?? 'EUNKNOWN';
      if (NO_RECORDS.has(code)) return [];
      throw new DnsLookupError(code, `DNS lookup of TXT ${name} failed: ${code}`);
    } finally {
      clearTimeout(timer);
    }
  };
}
