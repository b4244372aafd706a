// Octet normalisation and pattern matching for robots.txt rules (RFC 9309 §2.2.2, §2.2.3).
//
// Both sides of a comparison go through the same canonical form so that "/a%3cd", "/a%3Cd"
// and "/a<d" are one thing, and "%62%61%7A" equals "baz" (RFC 9309 §2.2.2, table
// "Examples of matching percent-encoded URI components"):
//   - non-ASCII characters are encoded as UTF-8 percent-escapes;
//   - ASCII controls, space, DEL and the ASCII characters RFC 3986 never allows raw in a path
//     or query ('"', "<", ">", "[", "]", "\", "^", "`", "{", "|", "}") are percent-encoded;
//   - %-escapes of unreserved characters (A-Za-z0-9-._~) are decoded, all other escapes
//     keep their encoding with uppercase hex digits; a "%" not followed by two hex digits is
//     "%25";
//   - in URL paths, literal "*" and "$" are encoded as %2A / %24, so that the RFC's
//     "/path/file-with-a-%2A.html" pattern matches ".../file-with-a-*.html" (§2.2.3)
//     while an unescaped "*" / "$" in a pattern stays a wildcard / end anchor;
//   - in the query (after the first "?"), escapes of ":", "/", "?" and "@" are decoded. These
//     have no delimiting role inside a query, and RFC 9309 §2.2.2 (table row 2) wants the rule
//     "/foo/bar?baz=https://foo.bar" to match "/foo/bar?baz=https%3A%2F%2Ffoo.bar", while
//     google/robotstxt ID_Encoding wants it to match the unencoded URL too. "&", "=", "+", ";"
//     and the other sub-delimiters keep their encoding: decoding them would change the query.

import { hexVal, pct } from '../percent';
import type { Rule } from './parse';

const UNRESERVED = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  UNRESERVED[c] = /[A-Za-z0-9\-._~]/.test(ch) ? 1 : 0;
}

const NOT_RAW = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if (c <= 0x20 || c === 0x7f || '"<>[]\\^`{|}'.includes(String.fromCharCode(c))) NOT_RAW[c] = 1;
}

// Reserved characters whose escapes are decoded inside a query (see the header comment).
const QUERY_SAFE = new Uint8Array(128);
for (const ch of ':/?@') QUERY_SAFE[ch.charCodeAt(0)] = 1;


/** UTF-8 percent-encoding of one code point; lone surrogates become U+FFFD like a decoder would. */
function encodeCodePoint(ch: string): string {
  try {
    return encodeURIComponent(ch);
  } catch {
    return '%EF%BF%BD';
  }
}

/**
 * Canonical octet form of a robots.txt pattern (`isPattern`) or of a URL path+query.
 * In a pattern, "*" is kept (wildcard) and "$" only when it is the last character (anchor);
 * a "$" elsewhere is literal, hence encoded, exactly like a "$" in a path.
 */
export function canonicalOctets(s: string, isPattern: boolean): string {
  let out = '';
  const n = s.length;
  let inQuery = false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3f /* ? */) inQuery = true;
    if (c === 0x25 /* % */) {
      const h = i + 2 < n ? hexVal(s.charCodeAt(i + 1)) : -1;
      const l = i + 2 < n ? hexVal(s.charCodeAt(i + 2)) : -1;
      if (h >= 0 && l >= 0) {
        const v = (h << 4) | l;
        const decode = v < 128 && (UNRESERVED[v] === 1 || (inQuery && QUERY_SAFE[v] === 1));
        out += decode ? String.fromCharCode(v) : pct(v);
        i += 2;
        continue;
      }
      // A stray "%" is "%25", as URL normalisation writes it (lib/url-normalize.ts): the
      // crawler requests "/p%25zz" for a link to "/p%zz", and "Disallow: /p%zz" must cover it.
      out += '%25';
      continue;
    }
    if (c >= 0x80) {
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      out += encodeCodePoint(ch);
      i += ch.length - 1;
      continue;
    }
    if (NOT_RAW[c] === 1) {
      out += pct(c);
      continue;
    }
    if (c === 0x2a /* * */ && !isPattern) {
      out += '%2A';
      continue;
    }
    if (c === 0x24 /* $ */ && (!isPattern || i !== n - 1)) {
      out += '%24';
      continue;
    }
    out += s[i];
  }
  return out;
}

/** Splits a canonical pattern into literal parts around "*" and a trailing "$" anchor flag. */
export function compilePattern(canonical: string): { parts: string[]; anchored: boolean } {
  const anchored = canonical.endsWith('$');
  const body = anchored ? canonical.slice(0, -1) : canonical;
  return { parts: body.split('*'), anchored };
}

/**
 * Matches from the first octet of the path (RFC 9309 §2.2.2). With only "*" wildcards,
 * taking the leftmost occurrence of each middle part is sufficient; the last part is
 * checked at the end of the path when the pattern is anchored.
 */
export function patternMatches(rule: Pick<Rule, 'parts' | 'anchored'>, path: string): boolean {
  const parts = rule.parts;
  const first = parts[0];
  if (parts.length === 1) return rule.anchored ? path === first : path.startsWith(first);
  if (!path.startsWith(first)) return false;
  let pos = first.length;
  const last = parts.length - 1;
  for (let k = 1; k < last; k++) {
    const idx = path.indexOf(parts[k], pos);
    if (idx < 0) return false;
    pos = idx + parts[k].length;
  }
  const tail = parts[last];
  if (rule.anchored) return path.length - tail.length >= pos && path.endsWith(tail);
  return tail === '' || path.indexOf(tail, pos) >= 0;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;

/**
 * The path+query a rule is matched against. Accepts an absolute URL, a scheme-relative
 * "//host/path", a path+query, or (like google/robotstxt GetPathParamsQuery) "host/path".
 * The fragment is dropped and an empty path becomes "/".
 */
export function pathForMatching(url: string): string {
  let s = url;
  const hash = s.indexOf('#');
  if (hash >= 0) s = s.slice(0, hash);
  if (s.charCodeAt(0) === 0x2f && s.charCodeAt(1) !== 0x2f) return s;
  let start = 0;
  const schemeEnd = s.indexOf('://');
  if (schemeEnd > 0 && SCHEME.test(s.slice(0, schemeEnd))) start = schemeEnd + 3;
  else if (s.startsWith('//')) start = 2;
  let i = start;
  while (i < s.length && s[i] !== '/' && s[i] !== '?') i++;
  if (i >= s.length) return '/';
  return s[i] === '?' ? '/' + s.slice(i) : s.slice(i);
}
