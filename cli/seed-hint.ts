/**
 * A hint for a seed the SSRF guard will refuse: a loopback, private or other closed address
 * written as an IP literal (or `localhost`). The crawl takes such a seed, and fetch then refuses it
 * with a warning that names no flag; a first crawl of a local test site ended "0 pages stored,
 * 1 failures" with nothing on the terminal that said how to allow it.
 */
import { classifyAddress, isAddressAllowed, parseHostLiteral, PRIVATE_CLASSES, type AddressPolicy } from '../lib/net/ssrf';

/** The line to show for a seed at `host` that `policy` refuses, or null (a name to resolve later, or an allowed address). */
export function refusedSeedHint(url: string, host: string, policy: AddressPolicy): string | null {
  const name = host.toLowerCase();
  const ip = name === 'localhost' || name.endsWith('.localhost') ? '127.0.0.1' : parseHostLiteral(name);
  if (ip === null || isAddressAllowed(ip, policy)) return null;
  const cls = classifyAddress(ip);
  const cidr = ip.includes(':') ? `${ip}/128` : `${ip}/32`;
  const how = PRIVATE_CLASSES.has(cls) ? `--allow-private-network (or --allow-cidr ${cidr})` : `--allow-cidr ${cidr}`;
  return `seed ${url} is a ${cls} address (${ip}): the crawler refuses it unless given ${how}`;
}
