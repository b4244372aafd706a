/**
 * `crawl run`'s summary: what it stored and why parsed pages were not handed off, counted from
 * the records as the embedded log receives them (a result that never reached the log, one let go
 * of at a stop by runtime/embedded-runner.ts, is not counted, as it is not announced either), and
 * the lines printed at the end.
 */
import { join } from 'node:path';
import type { FetchedPageMsg, FetchOutcome, FetchStatusMsg, ParsedPageMsg } from '../lib/messages';
import type { InRecord } from '../runtime/stage';
import type { RunSummary } from './embedded';

export interface NotHandedOff {
  /** Recrawled pages whose content did not change. */
  unchanged: number;
  /** Pages that asked not to be indexed (meta robots or X-Robots-Tag noindex). */
  noindex: number;
  /** Exact or near duplicates of another page of their host. */
  duplicates: number;
}

/**
 * The reason of a failed or refused fetch, as the summary counts it: the fetch's error code,
 * HTTP status or refusal put in words a user knows. Pure.
 */
export function failureReason(outcome: FetchOutcome, status: number | null, reason: string | null): string {
  if (outcome === 'ROBOTS_UNAVAILABLE') return 'robots.txt unavailable';
  if (status !== null && status === 429) return 'HTTP 429';
  if (status !== null && status >= 500) return 'HTTP 5xx';
  switch (reason) {
    case 'CONNECT_TIMEOUT': return 'connect timeout';
    case 'DEADLINE_EXCEEDED': return 'timeout (30 s deadline)';
    case 'DNS_FAILED': return 'DNS';
    case 'CONNECT_FAILED': return 'connection refused';
    case 'CONNECTION_RESET': return 'connection reset';
    case 'HEADERS_TOO_LARGE': return 'headers too large';
    case 'PROTOCOL_ERROR': return 'protocol error';
    case 'SSRF_BLOCKED': return 'private address refused';
    case 'BAD_URL': case 'bad-url': case 'UNSUPPORTED_SCHEME': return 'bad URL';
    case 'blocked': return 'operator block';
    case 'opted-out': return 'opted out';
    case 'backoff': return 'host back-off';
    case 'store-failed': return 'WARC store failed';
    default: return reason ?? outcome.toLowerCase();
  }
}

/** "timeout (30 s deadline) 3, DNS 1" (most first); empty when none. */
export function countsText(counts: ReadonlyMap<string, number> | Readonly<Record<string, number>>): string {
  const entries = counts instanceof Map ? [...counts] : Object.entries(counts);
  return entries.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([why, n]) => `${why} ${n}`).join(', ');
}

export class RunTally {
  /**
   * Responses stored in WARC files and announced, pages or not: HTML pages, redirects, 4xx
   * pages, not-modified revisits, non-HTML (its metadata record). A 5xx or 429, stored too, is a
   * failure (outcome FAILED); robots.txt is not counted.
   */
  storedResponses = 0;
  readonly notHandedOff: NotHandedOff = { unchanged: 0, noindex: 0, duplicates: 0 };
  /** Pages cut at the body cap (CRAWL_MAX_BODY_BYTES), stored marked WARC-Truncated. */
  truncated = 0;
  /** Failed and refused fetches by reason (failureReason), from fetch's outcomes. */
  readonly failures = new Map<string, number>();

  /** Count a fetch's outcome (fetch's onOutcome); true when it is a failure. */
  outcome(outcome: FetchOutcome, status: number | null, reason: string | null): boolean {
    if (outcome !== 'FAILED' && outcome !== 'REFUSED' && outcome !== 'ROBOTS_UNAVAILABLE') return false;
    const why = failureReason(outcome, status, reason);
    this.failures.set(why, (this.failures.get(why) ?? 0) + 1);
    return true;
  }

  /** Count appended records (FileLog's 'append' event). */
  readonly add = (recs: readonly InRecord[]): void => {
    for (const r of recs) {
      if (r.topic === 'fetchStatus') {
        const s = r.value as FetchStatusMsg;
        if (s.stored && s.http_status !== null && (s.outcome === 'FETCHED' || s.outcome === 'NOT_HTML')) this.storedResponses++;
      } else if (r.topic === 'fetched') {
        if ((r.value as FetchedPageMsg).truncated) this.truncated++;
      } else if (r.topic === 'parsed') {
        // The reasons in the order processors/handoff.ts toHandoff tests them.
        const p = r.value as ParsedPageMsg;
        if (p.change === 'UNCHANGED') this.notHandedOff.unchanged++;
        else if (p.noindex) this.notHandedOff.noindex++;
        else if (p.near_duplicate_of) this.notHandedOff.duplicates++;
      }
    }
  };
}

/** "duplicate 100, noindex 2" (reasons with none left out, as the seeds line counts refusals); empty when none. */
export function notHandedOffText(n: NotHandedOff): string {
  const reasons: Array<[string, number]> = [['duplicate', n.duplicates], ['unchanged', n.unchanged], ['noindex', n.noindex]];
  return reasons.filter(([, count]) => count > 0).map(([why, count]) => `${why} ${count}`).join(', ');
}

/** What `crawl run` prints when it ends; lines with nothing to say are left out. */
export function summaryText(s: RunSummary, out: string): string {
  const lines = [
    `crawl ${s.stoppedBy}: ${s.pagesStored} pages stored, ${s.pagesParsed} parsed (${s.pagesParsedBeforeStop} before stopping), ${s.failures} failures, ${s.handoffEvents} handoff events, ` +
      `${s.warcFiles} WARC files, ${s.seconds.toFixed(1)} s (${s.pagesPerSecond.toFixed(2)} pages/s)`,
  ];
  const failures = countsText(s.failuresByReason);
  if (failures) lines.push(`  failures by reason: ${failures} (each URL's reason: ${join(out, 'crawl.log')}, or crawl explain URL --out ${out})`);
  if (s.truncated > 0) lines.push(`  ${s.truncated} page(s) cut at the body cap (CRAWL_MAX_BODY_BYTES), stored marked WARC-Truncated`);
  if (s.otherResponsesStored > 0) lines.push(`  also stored: ${s.otherResponsesStored} other responses (redirects, 4xx pages, not modified, non-HTML as metadata)`);
  const skipped = notHandedOffText(s.notHandedOff);
  if (skipped) lines.push(`  not handed off: ${skipped}`);
  const { unparsed, notHandedOff } = s.leftForNextRun;
  if (unparsed + notHandedOff > 0) {
    lines.push(`  left for the next run with the same --out: ${unparsed} stored pages not parsed, ${notHandedOff} parsed pages not through handoff yet`);
  }
  lines.push(`  seeds: ${s.seeds}`);
  if (s.waitingRetry) lines.push(`  ${s.waitingRetry} URL(s) wait for a retry or a host's back-off; run the same command again later to take them up`);
  lines.push(`  WARC: ${join(out, 'warc')}`, `  handoff: ${s.handoffFile}`, `  log: ${join(out, 'crawl.log')}`);
  return lines.join('\n') + '\n';
}
