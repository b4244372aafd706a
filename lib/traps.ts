/**
 * Crawler-trap defences applied by seen-test to a normalised URL (pure; state is in memory,
 * bounded, and owned by the caller). Depth and length limits live in seen-test and
 * lib/url-normalize.ts; per-host page budgets are the frontier's.
 *
 *  - a path segment repeated `maxSegmentRepeats` (3) or more times: /a/b/a/b/a/b, relative-link loops;
 *  - steadily growing query strings: on one host and path, a query longer than the longest of
 *    the last few by at least `queryGrowthMarginChars`, `queryGrowthRuns` times in a row
 *    (?a=1 -> ?a=1&a=1 -> …; pagination such as ?page=9 -> ?page=10 grows once, not steadily);
 *  - learned rules: crawl.host-policy rows whose field is `trap:<path-prefix>`, written by
 *    parse after 5 near-duplicate pages in a row under that prefix.
 */
import type { HostPolicyTable } from './host-policy';

export type TrapReason = 'trap-repeated-segment' | 'trap-growing-query' | 'trap-rule';

export interface TrapOptions {
  maxSegmentRepeats: number;
  queryGrowthMarginChars: number;
  queryGrowthRuns: number;
  /** How many query lengths per host+path are compared against. */
  queryGrowthWindow: number;
  /** Host+path entries remembered for growth detection (oldest forgotten first). */
  maxTrackedPaths: number;
}

export const DEFAULT_TRAP_OPTIONS: TrapOptions = {
  maxSegmentRepeats: 3,
  queryGrowthMarginChars: 4,
  queryGrowthRuns: 3,
  queryGrowthWindow: 3,
  maxTrackedPaths: 100_000,
};

export const TRAP_FIELD_PREFIX = 'trap:';

/** Non-empty segments compared pairwise in place; a path with more takes the split and a Map. */
const FEW_SEGMENTS = 16;
const segStart = new Int32Array(FEW_SEGMENTS);
const segEnd = new Int32Array(FEW_SEGMENTS);

/**
 * True when some non-empty path segment occurs `maxRepeats` or more times. seen-test asks for
 * every URL: a path of up to FEW_SEGMENTS segments is checked where it lies (segment bounds in
 * two scratch arrays, equal-length segments compared character by character), with no split
 * array, substrings or Map made for it.
 */
export function repeatedSegment(path: string, maxRepeats = DEFAULT_TRAP_OPTIONS.maxSegmentRepeats): boolean {
  let n = 0;
  for (let from = 0; from < path.length; ) {
    let to = path.indexOf('/', from);
    if (to < 0) to = path.length;
    if (to > from) {
      if (n === FEW_SEGMENTS) return repeatedSegmentMap(path, maxRepeats);
      segStart[n] = from;
      segEnd[n] = to;
      n++;
    }
    from = to + 1;
  }
  // Fewer non-empty segments than maxRepeats cannot repeat one that often (most links end here).
  for (let i = 0; i < n && n - i >= maxRepeats; i++) {
    let c = 1;
    if (c >= maxRepeats) return true;
    const a = segStart[i];
    const len = segEnd[i] - a;
    for (let j = i + 1; j < n; j++) {
      if (segEnd[j] - segStart[j] !== len || !sameChars(path, a, segStart[j], len)) continue;
      if (++c >= maxRepeats) return true;
    }
  }
  return false;
}

function sameChars(s: string, a: number, b: number, len: number): boolean {
  for (let k = 0; k < len; k++) if (s.charCodeAt(a + k) !== s.charCodeAt(b + k)) return false;
  return true;
}

/** repeatedSegment for paths of many segments: a count per distinct segment. */
function repeatedSegmentMap(path: string, maxRepeats: number): boolean {
  const counts = new Map<string, number>();
  for (const seg of path.split('/')) {
    if (!seg) continue;
    const c = (counts.get(seg) ?? 0) + 1;
    if (c >= maxRepeats) return true;
    counts.set(seg, c);
  }
  return false;
}

/** The path prefix of a `trap:<prefix>` host-policy field, or null for other fields. */
export function trapRulePrefix(field: string): string | null {
  if (!field.startsWith(TRAP_FIELD_PREFIX)) return null;
  const prefix = field.slice(TRAP_FIELD_PREFIX.length);
  return prefix.startsWith('/') ? prefix : null;
}

/** Prefix match on segment boundaries: /calendar covers /calendar and /calendar/x, not /calendars. */
export function underPrefix(path: string, prefix: string): boolean {
  if (prefix === '/' || path === prefix) return true;
  if (!path.startsWith(prefix)) return false;
  return prefix.endsWith('/') || path[prefix.length] === '/';
}

interface Growth {
  recent: number[];
  runs: number;
}

/** Per host+path memory of query lengths; LRU-bounded so a huge crawl cannot grow it without end. */
export class QueryGrowthDetector {
  private readonly paths = new Map<string, Growth>();

  constructor(private readonly o: TrapOptions = DEFAULT_TRAP_OPTIONS) {}

  /** Record this URL's query; true when it continues a steady growth of `queryGrowthRuns`. */
  observe(host: string, path: string, query: string): boolean {
    const key = `${host}${path}`;
    let g = this.paths.get(key);
    if (g) this.paths.delete(key);
    else g = { recent: [], runs: 0 };
    this.paths.set(key, g);
    if (this.paths.size > this.o.maxTrackedPaths) this.paths.delete(this.paths.keys().next().value!);
    const grew = g.recent.length > 0 && query.length >= Math.max(...g.recent) + this.o.queryGrowthMarginChars;
    g.runs = grew ? g.runs + 1 : 0;
    g.recent.push(query.length);
    if (g.recent.length > this.o.queryGrowthWindow) g.recent.shift();
    return g.runs >= this.o.queryGrowthRuns;
  }

  get tracked(): number {
    return this.paths.size;
  }
}

/** All trap checks for one normalised URL; null when it passes. */
export class TrapScreen {
  private readonly growth: QueryGrowthDetector;

  constructor(
    private readonly policy: HostPolicyTable | null,
    private readonly o: TrapOptions = DEFAULT_TRAP_OPTIONS,
  ) {
    this.growth = new QueryGrowthDetector(o);
  }

  screen(url: string, now: number): TrapReason | null {
    const u = new URL(url);
    return this.screenParts(u.hostname, u.pathname, u.search, now);
  }

  /**
   * The same checks on a URL already taken apart: its host name, path and query ("" or "?…")
   * as WHATWG URL gives them for it. seen-test passes normalizeUrl's parts: the URL is not
   * parsed once more for every link.
   */
  screenParts(host: string, path: string, query: string, now: number): TrapReason | null {
    if (repeatedSegment(path, this.o.maxSegmentRepeats)) return 'trap-repeated-segment';
    if (this.learnedRule(host, path, now) !== null) return 'trap-rule';
    if (query && this.growth.observe(host, path, query)) return 'trap-growing-query';
    return null;
  }

  /** The learned rule covering this path, if any (a rule with blocked_until in the past has expired). */
  learnedRule(host: string, path: string, now: number): string | null {
    if (!this.policy) return null;
    for (const row of this.policy.eachField(host)) {
      const prefix = trapRulePrefix(row.field);
      if (prefix === null) continue;
      if (row.blocked_until !== null && row.blocked_until <= now) continue;
      if (underPrefix(path, prefix)) return prefix;
    }
    return null;
  }
}

/** The trap settings of lib/config.ts (CRAWL_TRAP_*), over the defaults. */
export function trapOptionsFrom(c: { trapMaxSegmentRepeats: number; trapQueryGrowthMarginChars: number; trapQueryGrowthRuns: number }): TrapOptions {
  return {
    ...DEFAULT_TRAP_OPTIONS,
    maxSegmentRepeats: c.trapMaxSegmentRepeats,
    queryGrowthMarginChars: c.trapQueryGrowthMarginChars,
    queryGrowthRuns: c.trapQueryGrowthRuns,
  };
}
