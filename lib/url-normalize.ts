// URL normalisation for the frontier: one canonical string per resource, so that de-duplication
// and politeness keys work. Pure logic; runs for every extracted link, so it avoids per-call
// regex compilation and URLSearchParams (which re-serialises "%20" as "+").

import { hexVal, pct } from './percent';
import { getDomain } from 'tldts';

export interface NormalizeOptions {
  /**
   * Query parameter names to remove (case-insensitive), also removed as ";name=value" path
   * parameters (e.g. ";jsessionid=…"). A string ending in "*" is a prefix ("utm_*"); a RegExp
   * is tested against the lower-cased name. Default: DEFAULT_STRIP_PARAMS.
   */
  stripParams?: (string | RegExp)[];
  /** Maximum length of the normalised URL; longer URLs are rejected ("too-long"). Default 2048. */
  maxLength?: number;
}

export type NormalizeResult =
  | {
      ok: true;
      url: string;
      host: string;
      registeredDomain: string | null;
      /**
       * The path of `url` ("/" at least) and its query ("" or "?…"): what parsing `url` again
       * gives as pathname and search (WHATWG URL has resolved every dot segment, "%2E" forms
       * included, before "%2E" is decoded here).
       */
      path: string;
      query: string;
    }
  | { ok: false; reason: 'invalid-url' | 'unsupported-scheme' | 'credentials' | 'too-long' | 'empty-host'; detail: string };

/** Tracking and session parameters removed by default. */
export const DEFAULT_STRIP_PARAMS: readonly string[] = Object.freeze([
  'utm_*', 'sid', 'jsessionid', 'phpsessid', 'sessionid', 'fbclid', 'gclid', 'dclid', 'msclkid',
  'mc_cid', 'mc_eid', 'yclid', '_ga', 'igshid',
]);

export const DEFAULT_MAX_LENGTH = 2048;

interface NameMatcher {
  exact: Set<string>;
  prefixes: string[];
  regexes: RegExp[];
}

function compileMatcher(list: readonly (string | RegExp)[]): NameMatcher {
  const m: NameMatcher = { exact: new Set(), prefixes: [], regexes: [] };
  for (const p of list) {
    if (typeof p !== 'string') m.regexes.push(p);
    else if (p.endsWith('*')) m.prefixes.push(p.slice(0, -1).toLowerCase());
    else m.exact.add(p.toLowerCase());
  }
  return m;
}

const DEFAULT_MATCHER = compileMatcher(DEFAULT_STRIP_PARAMS);
// Callers normally pass the same options array every time: compile it once.
const matcherCache = new WeakMap<readonly (string | RegExp)[], NameMatcher>();

function matcherFor(list: (string | RegExp)[] | undefined): NameMatcher {
  if (list === undefined) return DEFAULT_MATCHER;
  let m = matcherCache.get(list);
  if (m === undefined) {
    m = compileMatcher(list);
    matcherCache.set(list, m);
  }
  return m;
}

function isStripped(m: NameMatcher, rawName: string): boolean {
  if (rawName === '') return false;
  const name = rawName.toLowerCase();
  if (m.exact.has(name)) return true;
  for (const p of m.prefixes) if (name.startsWith(p)) return true;
  for (const r of m.regexes) {
    r.lastIndex = 0; // a /g or /y RegExp keeps state between test() calls
    if (r.test(name)) return true;
  }
  return false;
}

// Character classes for the percent-encoding pass, built once.
// UNRESERVED: RFC 3986 §2.3; an escape of one of these is decoded (§6.2.2.2).
// ENCODE: characters RFC 3986 does not allow in a path or query but WHATWG URL leaves raw
// ("[", "]", "|", "\", "^", "`", "{", "}" in the query, some of them in the path), plus
// controls, space, '"', "<", ">" in case they survive. Encoding them makes the output a valid
// RFC 3986 URI and makes "x[y]" and "x%5By%5D" one URL.
const UNRESERVED = new Uint8Array(128);
const ENCODE = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z0-9\-._~]/.test(ch)) UNRESERVED[c] = 1;
  if (c <= 0x20 || c === 0x7f || '"<>[]\\^`{|}'.includes(ch)) ENCODE[c] = 1;
}

/**
 * RFC 3986 §6.2.2.2 percent-encoding normalisation: decode escapes of unreserved characters,
 * uppercase the hex digits of the others, encode characters not allowed raw. A "%" not
 * followed by two hex digits becomes "%25", as crawler-commons' normaliser does: the raw form
 * is no valid URI, and left raw "/p%zz" and "/p%25zz" would name one page twice. (A server
 * that reads "%u00e9" as IIS does then sees "%25u00e9"; robots.txt matching encodes a stray
 * "%" the same way, lib/robots/match.ts.) Returns the input itself when nothing changes.
 */
function normalizePercent(s: string): string {
  let out = '';
  let from = 0; // start of the pending unchanged run
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    let rep: string | null = null;
    let skip = 0;
    if (c === 0x25) {
      const h = i + 2 < n ? hexVal(s.charCodeAt(i + 1)) : -1;
      const l = i + 2 < n ? hexVal(s.charCodeAt(i + 2)) : -1;
      if (h >= 0 && l >= 0) {
        const v = (h << 4) | l;
        const canonical = v < 128 && UNRESERVED[v] === 1 ? String.fromCharCode(v) : pct(v);
        skip = 2;
        if (canonical !== s.slice(i, i + 3)) rep = canonical;
      } else rep = '%25';
    } else if (c < 128) {
      if (ENCODE[c] === 1) rep = pct(c);
    } else {
      // WHATWG URL has already UTF-8 encoded non-ASCII; kept for robustness.
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      skip = ch.length - 1;
      try {
        rep = encodeURIComponent(ch);
      } catch {
        rep = '%EF%BF%BD';
      }
    }
    if (rep !== null) {
      out += s.slice(from, i) + rep;
      from = i + skip + 1;
    }
    i += skip;
  }
  return from === 0 ? s : out + s.slice(from);
}

/** Drops ";name=value" path parameters whose name is stripped (";jsessionid=…"). */
function stripPathParams(path: string, m: NameMatcher): string {
  if (path.indexOf(';') < 0) return path;
  const segments = path.split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (seg.indexOf(';') < 0) continue;
    const parts = seg.split(';');
    const kept = [parts[0]];
    for (let k = 1; k < parts.length; k++) {
      const eq = parts[k].indexOf('=');
      if (!isStripped(m, eq < 0 ? parts[k] : parts[k].slice(0, eq))) kept.push(parts[k]);
    }
    segments[i] = kept.join(';');
  }
  return segments.join('/');
}

interface Pair {
  raw: string;
  name: string;
  value: string;
}

/**
 * Query normalisation: percent-encoding normalised per pair, empty pairs and stripped names
 * removed, pairs sorted (stable) by name then value in code-unit order of their encoded form.
 * Each pair keeps its own encoding ("+" stays "+", "%20" stays "%20"). Returns "" or "?…".
 */
function normalizeQuery(search: string, m: NameMatcher): string {
  if (search.length <= 1) return '';
  const rawPairs = search.slice(1).split('&');
  const pairs: Pair[] = [];
  for (const rp of rawPairs) {
    if (rp === '') continue;
    const raw = normalizePercent(rp);
    const eq = raw.indexOf('=');
    const name = eq < 0 ? raw : raw.slice(0, eq);
    if (isStripped(m, name)) continue;
    pairs.push({ raw, name, value: eq < 0 ? '' : raw.slice(eq + 1) });
  }
  if (pairs.length === 0) return '';
  if (pairs.length > 1) {
    pairs.sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0,
    );
  }
  let q = '?' + pairs[0].raw;
  for (let i = 1; i < pairs.length; i++) q += '&' + pairs[i].raw;
  return q;
}

function fail(reason: Extract<NormalizeResult, { ok: false }>['reason'], detail: string): NormalizeResult {
  return { ok: false, reason, detail };
}

/**
 * Normalises an http(s) URL, resolving it against `base` when relative (an empty base is no
 * base): WHATWG parsing (lower-case scheme and host, IDN to punycode, default port dropped,
 * dot segments resolved, empty path -> "/"), a trailing dot of the host dropped
 * ("www.example.org." is "www.example.org": one host, one politeness queue), fragment
 * dropped, credentials rejected, percent-encoding normalised in path and query (RFC 3986
 * §6.2.2.2; a stray "%" becomes "%25"), stripped names removed from the query and as ";name="
 * path parameters, query pairs sorted, empty query dropped. Duplicate slashes are kept:
 * servers may treat them as different resources.
 */
export function normalizeUrl(input: string, base?: string, opts?: NormalizeOptions): NormalizeResult {
  let u: URL;
  const withBase = base !== undefined && base !== '';
  try {
    u = withBase ? new URL(input, base) : new URL(input);
  } catch {
    return fail('invalid-url', `cannot parse ${JSON.stringify(input.slice(0, 200))}${withBase ? ' against base' : ''}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return fail('unsupported-scheme', u.protocol.slice(0, -1));
  if (u.username !== '' || u.password !== '') return fail('credentials', 'user name or password in URL');
  // "example.org." names the same host as "example.org" (an absolute DNS name); "." alone stays.
  const host = u.hostname.length > 1 && u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname;
  if (host === '') return fail('empty-host', 'URL has no host');

  const m = matcherFor(opts?.stripParams);
  const stripped = stripPathParams(normalizePercent(u.pathname), m);
  const path = stripped === '' ? '/' : stripped;
  const query = normalizeQuery(u.search, m);
  const url = u.protocol + '//' + host + (u.port === '' ? '' : ':' + u.port) + path + query;

  const maxLength = opts?.maxLength ?? DEFAULT_MAX_LENGTH;
  if (url.length > maxLength) return fail('too-long', `${url.length} characters > ${maxLength}`);
  return { ok: true, url, host, registeredDomain: registeredDomain(host), path, query };
}

/** Lower-case host name of an already-normalised absolute URL, without port or credentials. */
export function hostOf(url: string): string {
  const s = url.indexOf('//');
  const start = s < 0 ? 0 : s + 2;
  let end = start;
  while (end < url.length) {
    const c = url.charCodeAt(end);
    if (c === 0x2f || c === 0x3f || c === 0x23) break; // "/", "?", "#"
    end++;
  }
  let authority = url.slice(start, end);
  const at = authority.lastIndexOf('@');
  if (at >= 0) authority = authority.slice(at + 1);
  if (authority.charCodeAt(0) === 0x5b /* [ */) {
    const close = authority.indexOf(']');
    return (close < 0 ? authority : authority.slice(0, close + 1)).toLowerCase();
  }
  const colon = authority.indexOf(':');
  return (colon < 0 ? authority : authority.slice(0, colon)).toLowerCase();
}

/**
 * Registered domain ("eTLD+1") of a host by the Public Suffix List, or null for IP addresses
 * and hosts that are themselves public suffixes. Private PSL entries count as suffixes
 * ("alice.github.io"): their subdomains belong to different owners.
 */
export function registeredDomain(host: string): string | null {
  if (host === lastHost) return lastDomain;
  const domain = host === '' || host.charCodeAt(0) === 0x5b /* IPv6 literal */ ? null : getDomain(host, { allowPrivateDomains: true, extractHostname: false });
  lastHost = host;
  lastDomain = domain;
  return domain;
}

/**
 * The last answer of registeredDomain: links come in runs of one host (a page's links, a
 * link group's URLs: lib/link-groups), and normalizeUrl asks for every URL it normalises.
 */
let lastHost = '';
let lastDomain: string | null = null;
