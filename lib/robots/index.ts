// Public robots.txt API (RFC 9309). See lib/robots/parse.ts and lib/robots/match.ts.

import { canonicalOctets, pathForMatching, patternMatches } from './match';
import { DEFAULT_MAX_BYTES, parseRobotsText, type Group, type Rule, type RobotsRules } from './parse';

export type { RobotsRules } from './parse';

export interface MatchedRule {
  directive: 'allow' | 'disallow';
  /** The pattern as written in robots.txt. */
  pattern: string;
  /** 1-based line number in robots.txt; 0 for the synthetic rule of DISALLOW_ALL. */
  line: number;
}

export interface AllowResult {
  allowed: boolean;
  /** The deciding rule, or null when no rule matched (allowed by default). */
  rule: MatchedRule | null;
}

export type RobotsFetchResult = { status: number; body: Buffer } | { error: string };

export interface RobotsFromFetch {
  rules: RobotsRules;
  kind: 'parsed' | 'allow-all-4xx' | 'disallow-all-5xx' | 'disallow-all-unreachable';
  /** True when the result is a transient failure and robots.txt should be fetched again soon. */
  retryLater: boolean;
  /** The body's size when it was longer than the parsing limit (500 KiB): only that much was read (RFC 9309 §2.5). */
  cutFromBytes?: number;
}

/**
 * Parses a robots.txt body. Never throws: unparseable lines are skipped (RFC 9309 §2.3.1.5).
 * Content past `maxBytes` (default 500 KiB, the RFC 9309 §2.5 minimum) is ignored.
 *
 * Leniency, documented: a missing colon after a known directive is accepted when the value is
 * one word ("Disallow /x" = "Disallow: /x"), as google/robotstxt does; common misspellings of
 * user-agent/disallow are accepted; Sitemap and Crawl-delay records are read.
 */
export function parseRobots(body: string | Buffer, opts?: { maxBytes?: number }): RobotsRules {
  return parseRobotsText(body, opts?.maxBytes ?? DEFAULT_MAX_BYTES);
}

/** Robots rules that allow everything (no groups). */
export const ALLOW_ALL: RobotsRules = Object.freeze({ groups: Object.freeze([]), sitemaps: Object.freeze([]) });

/** Robots rules that disallow everything but /robots.txt, for every crawler. */
export const DISALLOW_ALL: RobotsRules = Object.freeze({
  groups: Object.freeze([
    {
      agents: ['*'],
      rules: [{ directive: 'disallow', pattern: '/', line: 0, canonical: '/', parts: ['/'], anchored: false }],
      crawlDelaySec: null,
    } satisfies Group,
  ]),
  sitemaps: Object.freeze([]),
});

const MOZILLA = /^mozilla\//i;
const COMPATIBLE = /\(compatible;\s*([A-Za-z_-]+)/i;
const TOKEN_PREFIX = /^[A-Za-z_-]+/;

/**
 * The product token (RFC 9309 §2.2.1: letters, "_" and "-") a crawler matches user-agent
 * lines with, lower-cased: "KCrawl/0.1 (+https://…)" -> "kcrawl". For the browser-style
 * "Mozilla/5.0 (compatible; ExampleBot/0.1; …)" of RFC 9309 §2.2.1 it is the name after
 * "compatible;" ("examplebot"). Returns "" when there is none; "" matches only "*" groups.
 */
export function productToken(userAgent: string): string {
  const ua = userAgent.trim();
  if (MOZILLA.test(ua)) {
    const m = COMPATIBLE.exec(ua);
    if (m) return m[1].toLowerCase();
  }
  const m = TOKEN_PREFIX.exec(ua);
  return m ? m[0].toLowerCase() : '';
}

interface AgentView {
  /** Rules of all matching groups, most specific first, allow before disallow on ties. */
  rules: Rule[];
  crawlDelaySec: number | null;
}

// Per-rules, per-token view, so that the per-URL check is one scan of a sorted list.
const views = new WeakMap<RobotsRules, Map<string, AgentView>>();

function viewFor(rules: RobotsRules, token: string): AgentView {
  let byToken = views.get(rules);
  if (byToken === undefined) {
    byToken = new Map();
    views.set(rules, byToken);
  }
  const cached = byToken.get(token);
  if (cached !== undefined) return cached;

  // RFC 9309 §2.2.1: groups matching the product token are combined; if there are none, the
  // "*" group(s) apply; if there is neither, no rules apply.
  let groups = token === '' ? [] : rules.groups.filter((g) => g.agents.includes(token));
  if (groups.length === 0) groups = rules.groups.filter((g) => g.agents.includes('*'));

  const combined: Rule[] = [];
  let crawlDelaySec: number | null = null;
  for (const g of groups) {
    combined.push(...g.rules);
    if (crawlDelaySec === null) crawlDelaySec = g.crawlDelaySec;
  }
  // Longest match wins (by octets of the canonical pattern); "allow" wins a tie (RFC 9309
  // §2.2.2); among equals the earliest line is reported. Array#sort is stable.
  combined.sort(
    (a, b) =>
      b.canonical.length - a.canonical.length ||
      (a.directive === b.directive ? 0 : a.directive === 'allow' ? -1 : 1) ||
      a.line - b.line,
  );
  const view = { rules: combined, crawlDelaySec };
  byToken.set(token, view);
  return view;
}

/**
 * Whether `url` (absolute, or path+query) may be fetched by the crawler identified by
 * `userAgent` (a full User-Agent string or a bare product token), with the deciding rule.
 */
export function isAllowed(rules: RobotsRules, url: string, userAgent: string): AllowResult {
  const path = pathForMatching(url);
  // RFC 9309 §2.2.2: "The /robots.txt URI is implicitly allowed."
  const q = path.indexOf('?');
  if ((q < 0 ? path : path.slice(0, q)) === '/robots.txt') return { allowed: true, rule: null };

  const view = viewFor(rules, productToken(userAgent));
  if (view.rules.length === 0) return { allowed: true, rule: null };
  const target = canonicalOctets(path, false);
  for (const r of view.rules) {
    if (patternMatches(r, target)) {
      return { allowed: r.directive === 'allow', rule: { directive: r.directive, pattern: r.pattern, line: r.line } };
    }
  }
  return { allowed: true, rule: null };
}

/**
 * Crawl-delay of the group that applies to `userAgent`, in milliseconds (fractional seconds
 * allowed), or null. Not part of RFC 9309; the caller applies it as politeness policy.
 */
export function crawlDelayMs(rules: RobotsRules, userAgent: string): number | null {
  const sec = viewFor(rules, productToken(userAgent)).crawlDelaySec;
  return sec === null ? null : Math.round(sec * 1000);
}

/** Sitemap URLs listed anywhere in robots.txt, in file order, without duplicates. */
export function sitemaps(rules: RobotsRules): string[] {
  return [...rules.sitemaps];
}

/** Bytes of robots.txt read (RFC 9309 §2.5's minimum, 500 KiB); what follows is ignored. */
export const ROBOTS_MAX_BYTES = DEFAULT_MAX_BYTES;

/**
 * Maps a robots.txt fetch outcome (after redirects) to rules, per RFC 9309 §2.3.1:
 * - 2xx: the body is parsed (§2.3.1.1);
 * - 3xx (redirects not resolved, e.g. more than five): "MAY assume unavailable" (§2.3.1.2);
 * - 4xx, including 401 and 403: "unavailable", everything allowed (§2.3.1.3). Exception,
 *   deliberate: 429 Too Many Requests is a request to back off, not an absence of robots.txt,
 *   so it is handled like a server error (as Google documents for its crawler);
 * - 5xx: "unreachable", complete disallow, retry later (§2.3.1.4);
 * - network error (or a status outside 200..599): unreachable, complete disallow, retry later.
 */
export function robotsFromFetch(result: RobotsFetchResult): RobotsFromFetch {
  if ('error' in result) return { rules: DISALLOW_ALL, kind: 'disallow-all-unreachable', retryLater: true };
  const s = result.status;
  if (s >= 200 && s < 300) {
    return { rules: parseRobots(result.body), kind: 'parsed', retryLater: false, ...(result.body.length > DEFAULT_MAX_BYTES ? { cutFromBytes: result.body.length } : {}) };
  }
  if (s === 429) return { rules: DISALLOW_ALL, kind: 'disallow-all-5xx', retryLater: true };
  if (s >= 300 && s < 500) return { rules: ALLOW_ALL, kind: 'allow-all-4xx', retryLater: false };
  if (s >= 500 && s < 600) return { rules: DISALLOW_ALL, kind: 'disallow-all-5xx', retryLater: true };
  return { rules: DISALLOW_ALL, kind: 'disallow-all-unreachable', retryLater: true };
}
