/**
 * SURT (Sort-friendly URI Reordering Transform) keys for CDXJ indexes, as pywb writes them:
 * `http://www.Example.com/a?b=1&a=2` -> `com,example)/a?a=2&b=1`. Host labels are reversed so
 * that a host's pages, and a domain's hosts, sort together; the scheme, `www.`, default ports
 * and fragments are dropped because replay treats those URLs as the same page.
 */
import { isIP } from 'node:net';

export function surt(url: string): string {
  let u: URL;
  try {
    u = new URL(url.toLowerCase());
  } catch {
    return url.toLowerCase();
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return url.toLowerCase();

  let host = u.hostname.replace(/\.$/, '');
  const ip = isIP(host.replace(/^\[|\]$/g, '')) !== 0;
  // Like pywb's surt library: IP addresses keep their order, names lose `www.` and are reversed.
  if (!ip) host = host.replace(/^www\d*\./, '').split('.').reverse().join(',');
  // URL drops the scheme's default port itself, so a port left here is significant.
  const port = u.port ? `:${u.port}` : '';
  const query = u.search ? '?' + u.search.slice(1).split('&').sort().join('&') : '';
  return `${host}${port})${u.pathname}${query}`;
}
