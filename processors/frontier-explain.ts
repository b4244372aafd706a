/**
 * `crawl explain URL`, pure: whether and when a URL would be fetched and, if not, why. Every
 * input is handed in (robots.txt as fetched, the host-policy and opt-out tables, the URL-table
 * row, the clock), so the verdict is table-testable; cli/explain.ts does the I/O.
 *
 * Checks run in the order the crawl applies them: URL normalisation, opt-out, operator block,
 * trap rules (seen-test), robots.txt (fetch stage), then the host's back-off and the URL's own
 * state (frontier). Every check that applies is listed; the verdict is the first that decides.
 */
import type { HostPolicyTable } from '../lib/host-policy';
import { DEFAULTS } from '../lib/config';
import type { FeedStateMsg, UrlStateMsg } from '../lib/messages';
import type { OptOutRegistry } from '../lib/optout-registry';
import { isAllowed, ROBOTS_MAX_BYTES, type RobotsFromFetch } from '../lib/robots';
import { repeatedSegment, trapRulePrefix, underPrefix } from '../lib/traps';
import { normalizeUrl } from '../lib/url-normalize';
import { backoffFromRecord } from './frontier-aimd';
import { priorityClassOf, type ClassPolicy, type PriorityClass } from './priority-class';

export type Verdict = 'fetch-now' | 'fetch-later' | 'never' | 'fetched';

export interface Finding {
  code: string;
  detail: string;
  /** When this stops holding (epoch ms), if it expires. */
  until?: number;
}

export interface Explanation {
  url: string;
  host: string | null;
  verdict: Verdict;
  /** Earliest time the URL could be fetched (verdict fetch-now/fetch-later/fetched with a recrawl). */
  at: number | null;
  findings: Finding[];
  robots: { kind: string; allowed: boolean; rule: { directive: string; pattern: string; line: number } | null; stale?: boolean; cut_from_bytes?: number } | null;
  state: UrlStateMsg | null;
  /** The URL's priority class (1 high, 2, 3 low; processors/priority-class.ts), null when the crawl does not know the URL. */
  priority_class: PriorityClass | null;
  /** The URL's crawl.feeds row when the crawl polls it as a feed. */
  feed: FeedStateMsg | null;
}

export interface ExplainInput {
  url: string;
  now: number;
  userAgent: string;
  /** robots.txt of the URL's origin as fetched, or null when it could not be asked. */
  robots: (RobotsFromFetch & { stale?: boolean }) | null;
  policy: HostPolicyTable;
  optout: OptOutRegistry;
  /** The URL-table row, when the crawl's state is at hand. */
  row: UrlStateMsg | null;
  /** Its crawl.feeds row, when the crawl polls it as a feed. */
  feed?: FeedStateMsg | null;
  /** How rows written before classes existed get theirs (the crawl's settings; defaults when absent). */
  classPolicy?: ClassPolicy;
  maxSegmentRepeats?: number;
  /** The robots.txt fetch error, when it could not be asked at all (e.g. `SSRF_BLOCKED: …`). */
  robotsError?: string | null;
  /** The body cap robots.txt was fetched under (fetch.ts ROBOTS_BODY_CAP_BYTES): a body this long may be longer still. */
  maxBodyBytes?: number;
}

export function explain(i: ExplainInput): Explanation {
  const n = normalizeUrl(i.url);
  if (!n.ok) {
    return { url: i.url, host: null, verdict: 'never', at: null, findings: [{ code: n.reason, detail: n.detail }], robots: null, state: null, priority_class: null, feed: null };
  }
  const priorityClass = i.row ? priorityClassOf(i.row, i.classPolicy ?? DEFAULTS) : null;
  const out: Explanation = {
    url: n.url, host: n.host, verdict: 'fetch-now', at: i.now, findings: [], robots: null, state: i.row, priority_class: priorityClass, feed: i.feed ?? null,
  };
  const never = (f: Finding): void => {
    out.findings.push(f);
    if (out.verdict !== 'never') Object.assign(out, { verdict: 'never', at: null });
  };
  const later = (f: Finding & { until: number }): void => {
    out.findings.push(f);
    if (out.verdict === 'never') return;
    out.verdict = 'fetch-later';
    out.at = Math.max(out.at ?? i.now, f.until);
  };
  const host = n.host;
  const path = new URL(n.url).pathname;

  if (!i.optout.allows(host, 'crawl')) never({ code: 'opted-out', detail: `the opt-out registry denies crawling ${host}` });
  const block = i.policy.block(host, i.now);
  if (block) later({ code: 'blocked', detail: `operator block${block.reason ? `: ${block.reason}` : ''}`, until: block.until });
  if (repeatedSegment(path, i.maxSegmentRepeats)) never({ code: 'trap-repeated-segment', detail: `a path segment repeats in ${path}` });
  for (const row of i.policy.fields(host)) {
    const prefix = trapRulePrefix(row.field);
    if (prefix === null || (row.blocked_until !== null && row.blocked_until <= i.now) || !underPrefix(path, prefix)) continue;
    never({ code: 'trap-rule', detail: `learned trap rule ${row.field}${row.reason ? ` (${row.reason})` : ''}`, ...(row.blocked_until ? { until: row.blocked_until } : {}) });
  }

  if (i.robotsError?.startsWith('SSRF_BLOCKED')) {
    never({ code: 'refused-target', detail: `the crawler never contacts this address unless allowed (--allow-private-network or --allow-cidr; give explain the same flags as the crawl) (${i.robotsError})` });
  } else if (i.robots) {
    const a = isAllowed(i.robots.rules, n.url, i.userAgent);
    out.robots = {
      kind: i.robots.kind, allowed: a.allowed && !i.robots.retryLater, rule: a.rule, ...(i.robots.stale ? { stale: true } : {}),
      ...(i.robots.cutFromBytes !== undefined ? { cut_from_bytes: i.robots.cutFromBytes } : {}),
    };
    if (i.robots.cutFromBytes !== undefined) {
      out.findings.push({
        code: 'robots-cut',
        detail: `robots.txt is ${i.robots.cutFromBytes.toLocaleString('en')} bytes${i.maxBodyBytes !== undefined && i.robots.cutFromBytes >= i.maxBodyBytes ? ' or more' : ''}: ` +
          `only its first ${ROBOTS_MAX_BYTES.toLocaleString('en')} bytes (500 KiB, RFC 9309 §2.5) were read; rules after that are ignored`,
      });
    }
    if (i.robots.retryLater) {
      later({ code: 'robots-unavailable', detail: `robots.txt ${i.robots.kind}: everything disallowed until it answers`, until: i.now + 60_000 });
    } else if (!a.allowed) {
      const r = a.rule!;
      never({ code: 'robots-disallowed', detail: `robots.txt line ${r.line}: ${r.directive === 'allow' ? 'Allow' : 'Disallow'}: ${r.pattern}` });
    }
  } else out.findings.push({ code: 'robots-unknown', detail: 'robots.txt was not fetched' });

  const backoff = i.policy.get(host, 'backoff');
  if (backoff) {
    const b = backoffFromRecord(backoff).backoff;
    if (b.notBefore > i.now) later({ code: 'backoff', detail: `host backing off${b.cause ? ` (${b.cause})` : ''}`, until: b.notBefore });
    else if (b.delayMs > 0) out.findings.push({ code: 'slowed', detail: `host slowed to one request per ${b.delayMs} ms${b.cause ? ` (${b.cause})` : ''}` });
  }
  const seen = i.policy.get(host, 'robots');
  if (seen) {
    const cd = seen.min_delay_ms ? `, Crawl-delay ${seen.min_delay_ms} ms` : '';
    out.findings.push({ code: 'robots-recorded', detail: `the crawl read robots.txt ${new Date(seen.updated_at).toISOString()}: ${seen.reason ?? '?'}${cd}` });
  }
  const rate = i.policy.minDelayMs(host);
  if (rate !== null) out.findings.push({ code: 'crawl-rate', detail: `crawl-rate ceiling: one request per ${rate} ms` });
  const wm = i.policy.webmasterRate(host, i.now);
  if (wm) {
    out.findings.push({
      code: 'webmaster-rate', detail: `a verified webmaster's rate: at most ${wm.maxRequestsPerSecond} requests/s (one per ${wm.gapMs} ms)`, ...(wm.until !== null ? { until: wm.until } : {}),
    });
  }

  if (i.row) rowFindings(i.row, i.now, out, never, later);
  if (i.feed) {
    const f = i.feed;
    out.findings.push({
      code: 'feed',
      detail: `polled as a feed (${f.kind}) every ${Math.round(f.interval_ms / 1000)} s; last poll ${new Date(f.last_polled_at).toISOString()}` +
        ` (HTTP ${f.last_status ?? 'none'}, ${f.new_items} new items), ${f.polls} polls, ${f.items_total} items since ${new Date(f.added_at).toISOString()}`,
    });
  }
  return out;
}

function rowFindings(
  row: UrlStateMsg, now: number, out: Explanation, never: (f: Finding) => void, later: (f: Finding & { until: number }) => void,
): void {
  switch (row.state) {
    case 'FETCHED':
      out.findings.push({ code: 'fetched', detail: `fetched ${new Date(row.fetched_at ?? 0).toISOString()} (HTTP ${row.http_status})` });
      if (out.verdict !== 'never') {
        out.verdict = 'fetched';
        out.at = row.next_due_at;
      }
      break;
    case 'FAILED':
      later({ code: 'retry', detail: `attempt ${row.attempts} failed (${row.reason ?? 'error'})`, until: row.next_due_at ?? now });
      break;
    case 'DEAD':
      never({ code: 'dead', detail: `given up this cycle after ${row.attempts} attempts (${row.reason ?? 'error'})` });
      break;
    case 'DISALLOWED':
      out.findings.push({ code: 'was-disallowed', detail: 'robots.txt disallowed it when last leased' });
      break;
    case 'LEASED':
      out.findings.push({ code: 'leased', detail: `out to a fetcher until ${new Date(row.lease_expires_at ?? 0).toISOString()}` });
      break;
    case 'QUEUED':
      out.findings.push({ code: 'queued', detail: 'queued at its host; released when the host is next due' });
      break;
  }
}

const CLASS_NAMES: Record<PriorityClass, string> = { 1: 'high: feeds, news, seeds and the head', 2: 'normal', 3: 'low: the tail' };

/** Human-readable lines for the text output. */
export function explanationText(e: Explanation, now: number): string {
  const when = (t: number | null): string => (t === null ? '' : t <= now ? ' now' : ` at ${new Date(t).toISOString()}`);
  const head: Record<Verdict, string> = {
    'fetch-now': `would be fetched${when(e.at)}`,
    'fetch-later': `would be fetched${when(e.at)}`,
    never: 'would not be fetched',
    fetched: `already fetched${e.at ? `; recrawl due${when(e.at)}` : ''}`,
  };
  const lines = [`${e.url}: ${head[e.verdict]}`];
  if (e.priority_class !== null) lines.push(`  priority class: ${e.priority_class} (${CLASS_NAMES[e.priority_class]})`);
  if (e.robots) {
    const r = e.robots.rule;
    lines.push(`  robots.txt (${e.robots.kind}${e.robots.stale ? ', cached copy' : ''}): ${e.robots.allowed ? 'allowed' : 'disallowed'}` +
      (r ? ` by line ${r.line}: ${r.directive === 'allow' ? 'Allow' : 'Disallow'}: ${r.pattern}` : ' (no rule matched)'));
  }
  for (const f of e.findings) lines.push(`  ${f.code}: ${f.detail}${f.until ? ` (until ${new Date(f.until).toISOString()})` : ''}`);
  return lines.join('\n') + '\n';
}
