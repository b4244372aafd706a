/**
 * Address policy for outgoing fetches (SSRF guard). Pure: no I/O.
 *
 * A crawler follows links written by strangers, so every address it connects to is checked
 * against this policy after DNS resolution. Only globally routable unicast is allowed by
 * default; private networks are an explicit opt-in, and cloud metadata endpoints, unspecified,
 * multicast and reserved ranges are only reachable through an explicit CIDR allow-list.
 */
import ipaddr from 'ipaddr.js';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'metadata'
  | 'reserved'
  | 'invalid';

export interface AddressPolicy {
  allowPrivateNetwork: boolean;
  /** CIDRs permitted regardless of class, e.g. `['10.1.0.0/16', 'fd00::/8']`. */
  allowCidrs?: readonly string[];
}

/** Classes `allowPrivateNetwork` opens. Metadata/unspecified/multicast/reserved stay closed. */
export const PRIVATE_CLASSES: ReadonlySet<AddressClass> = new Set(['loopback', 'private', 'link-local', 'cgnat']);

/** Cloud instance-metadata endpoints: credentials live there, so never reachable by default. */
const METADATA = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, Oracle
  '169.254.170.2', // AWS ECS task metadata
  '100.100.100.200', // Alibaba Cloud
  'fd00:ec2::254', // AWS IMDS over IPv6
]);

/**
 * Recognise an IP literal the way a WHATWG URL parser (and inet_aton) would: dotted quads,
 * decimal/octal/hex and short forms (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`), and IPv6
 * with or without brackets. Returns the canonical address, with IPv4-mapped IPv6
 * (`::ffff:127.0.0.1`) unwrapped to IPv4 since that is where a connection would go; null when
 * `host` is not an IP literal (i.e. a name to resolve).
 */
export function parseHostLiteral(host: string): string | null {
  return cached(literals, host, parseHostLiteralUncached);
}

/*
 * Every fetch checks its host and address: several parses of the same string, with splits,
 * regular expressions and ipaddr objects each time (about 1.4% of the crawl's event-loop CPU
 * in a profile of the benchmark, whose hosts are all IP literals). The answers depend on the
 * string alone, so they are kept per string, in maps emptied when full.
 */
const CACHE_MAX = 10_000;
const literals = new Map<string, string | null>();
const classes = new Map<string, AddressClass>();

function cached<T>(map: Map<string, T>, key: string, compute: (key: string) => T): T {
  let v = map.get(key);
  if (v === undefined && !map.has(key)) {
    v = compute(key);
    if (map.size >= CACHE_MAX) map.clear();
    map.set(key, v);
  }
  return v as T;
}

function parseHostLiteralUncached(host: string): string | null {
  let h = host.trim();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.includes(':')) {
    if (!ipaddr.IPv6.isValid(h)) return null;
    const v6 = ipaddr.IPv6.parse(h);
    return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString();
  }
  return parseIPv4Loose(h);
}

function parseIPv4Loose(host: string): string | null {
  const parts = host.split('.');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop(); // trailing dot
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]+$/.test(p)) n = parseInt(p.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(p)) n = Number(p);
    else return null; // not numeric: a domain name
    nums.push(n);
  }
  const last = nums.pop() as number;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  let value = last;
  nums.forEach((n, i) => (value += n * 256 ** (3 - i)));
  return [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join('.');
}

function parseAny(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const canon = parseHostLiteral(ip);
  return canon === null ? null : ipaddr.parse(canon);
}

/** The class of an address (any spelling parseHostLiteral accepts); 'invalid' if not an IP. */
export function classifyAddress(ip: string): AddressClass {
  return cached(classes, ip, classifyUncached);
}

function classifyUncached(ip: string): AddressClass {
  const addr = parseAny(ip);
  if (addr === null) return 'invalid';
  return addr.kind() === 'ipv4' ? classifyV4(addr as ipaddr.IPv4) : classifyV6(addr as ipaddr.IPv6);
}

function classifyV4(a: ipaddr.IPv4): AddressClass {
  if (METADATA.has(a.toString())) return 'metadata';
  switch (a.range()) {
    case 'unicast':
    case 'as112': // anycast DNS sinks, publicly routed
    case 'amt':
      return 'public';
    case 'unspecified':
      return 'unspecified'; // 0.0.0.0/8: Linux connects 0.0.0.0 to the local host
    case 'loopback':
      return 'loopback';
    case 'private':
      return 'private';
    case 'linkLocal':
      return 'link-local';
    case 'carrierGradeNat':
      return 'cgnat';
    case 'multicast':
      return 'multicast';
    default:
      return 'reserved'; // broadcast, TEST-NETs, benchmarking, 240/4, 192.0.0/24
  }
}

function embeddedV4(a: ipaddr.IPv6, byteOffset: number): ipaddr.IPv4 {
  const b = a.toByteArray();
  return new ipaddr.IPv4(b.slice(byteOffset, byteOffset + 4));
}

function classifyV6(a: ipaddr.IPv6): AddressClass {
  if (METADATA.has(a.toString())) return 'metadata';
  const p = a.parts;
  // IPv4-compatible ::a.b.c.d (deprecated) is not public whatever the embedded address.
  if (p.slice(0, 6).every((x) => x === 0)) {
    if (p[6] === 0 && p[7] === 0) return 'unspecified';
    if (p[6] === 0 && p[7] === 1) return 'loopback';
    return 'reserved';
  }
  // As string: the typings lag the ranges the library actually reports.
  switch (a.range() as string) {
    // Translation prefixes reach the embedded IPv4 host, so it decides.
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return classifyV4(embeddedV4(a, 12));
    case '6to4':
      return classifyV4(embeddedV4(a, 2));
    case 'linkLocal':
      return 'link-local';
    case 'multicast':
      return 'multicast';
    case 'uniqueLocal':
    case 'deprecatedSiteLocal':
      return 'private';
    case 'unicast':
    case 'amt':
    case 'as112v6':
      // Only 2000::/3 is allocated global unicast.
      return (p[0] & 0xe000) === 0x2000 ? 'public' : 'reserved';
    default:
      return 'reserved'; // teredo, documentation, discard, ORCHID, benchmarking, …
  }
}

/** Parse CIDRs once; throws TypeError on a malformed entry (a configuration error). */
export function compileCidrs(cidrs: readonly string[]): Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> {
  return cidrs.map((c) => {
    try {
      return ipaddr.parseCIDR(c.trim());
    } catch {
      throw new TypeError(`invalid CIDR in allowCidrs: ${JSON.stringify(c)}`);
    }
  });
}

function inCidr(addr: ipaddr.IPv4 | ipaddr.IPv6, net: ipaddr.IPv4 | ipaddr.IPv6, bits: number): boolean {
  if (addr.kind() !== net.kind()) return false;
  return addr.kind() === 'ipv4'
    ? (addr as ipaddr.IPv4).match(net as ipaddr.IPv4, bits)
    : (addr as ipaddr.IPv6).match(net as ipaddr.IPv6, bits);
}

/** True if the policy permits connecting to `ip`. */
export function isAddressAllowed(ip: string, policy: AddressPolicy): boolean {
  // Without an allow-list the class decides ('invalid' for a string that is no address).
  if (!policy.allowCidrs || policy.allowCidrs.length === 0) return classAllowed(classifyAddress(ip), policy);
  const addr = parseAny(ip);
  if (addr === null) return false;
  for (const [net, bits] of compileCidrs(policy.allowCidrs ?? [])) {
    if (inCidr(addr, net, bits)) return true;
  }
  return classAllowed(classifyAddress(addr.toString()), policy);
}

function classAllowed(cls: AddressClass, policy: AddressPolicy): boolean {
  return cls === 'public' || (policy.allowPrivateNetwork && PRIVATE_CLASSES.has(cls));
}
