/**
 * One host in the frontier's memory: how many URLs wait in its queue (which is on disk, in the
 * partition's store: processors/frontier-store.ts) and the first few of them, the one request
 * it may have in flight, when it may next be asked, and its adapted pace. Pure helpers;
 * FrontierState (frontier-state.ts) owns the hosts and the heap.
 */
import type { FetchStatusMsg, HostPolicyMsg } from '../lib/messages';
import type { QueuedRef } from './frontier-store';
import { backoffRecord, gapInForceAtMost, loadSignal, nextBackoff, NO_BACKOFF, sameBackoff, type AimdPolicy, type HostBackoff } from './frontier-aimd';

export interface HostState {
  host: string;
  domain: string;
  /** Last address a fetch of this host connected to (per-IP cap); null until known. */
  ip: string | null;
  /** URLs in the host's queue on disk (slots: priority class, then priority level; processors/priority-class.ts queueSlot). */
  size: number;
  /** The first of them, read from the store and not yet leased; null when not read (or no longer the queue's start). */
  head: QueuedRef[] | null;
  /** The one request in flight to this host, if any (politeness: never two at once). */
  inflight: { id: string; url: string; domain: string; ip: string | null } | null;
  nextAt: number;
  /** When the last request this frontier saw an answer to ended (its finished_at); null = none seen. */
  lastContactAt: number | null;
  /** Whether the host is in the ready heap (it is at most once, but for wake-ups). */
  scheduled: boolean;
  /** Crawl-delay last reported by the fetcher. */
  crawlDelayMs: number;
  backoff: HostBackoff;
  /** The gap last written to crawl.host-policy (minHostDelayMs until one is); the gap in force is at most gapInForceAtMost of it. */
  persistedGap: number;
  /** Fetches released this cycle, against hostBudgetPerCycle. */
  fetches: number;
  /** Its summary (size, fetches) changed since last written to the store. */
  dirty: boolean;
}

export function newHost(host: string, domain: string, now: number, minHostDelayMs: number): HostState {
  return {
    host, domain, ip: null, size: 0, head: null, inflight: null, nextAt: now, lastContactAt: null, scheduled: false, crawlDelayMs: 0, backoff: NO_BACKOFF,
    persistedGap: minHostDelayMs, fetches: 0, dirty: false,
  };
}

export interface PacePolicy extends AimdPolicy {
  minHostDelayMs: number;
  maxCrawlDelayMs: number;
  responseTimeFactor: number;
}

/**
 * Apply a fetch answer to the host's pace: the next allowed time is the last request's end +
 * gap, gap = max(least gap, Crawl-delay, factor x response time, the adapted AIMD gap), and
 * never inside a Retry-After/pause window or an operator block. An answer whose lease sent no
 * request (`contacted` false: a robots.txt verdict from the cached answer, a refusal) does not
 * start a gap of its own: the host stays due when the last request's end allows. Counting one
 * from such an answer's finish asked Crawl-delay 2 hosts every 4 s in a crawl whose pages each
 * link a disallowed path (a lease for it came between two pages; bench/politeness-gaps.ts). The least gap is the host's
 * (HostPolicyTable.leastGapMs): minHostDelayMs, or a webmaster's rate in its place, and at least
 * an operator's ceiling. Returns the crawl.host-policy `backoff` row to write when the back-off changed or the gap grew past what
 * the last row written allows (gapInForceAtMost: a frontier or fetcher taking the host over
 * waits that long). A gap that shrinks is not written: a restart then waits longer than needed
 * once. On a busy machine the 10x-response rule moved most hosts' gaps up and down by more than
 * 20% from one page to the next, and every such row went to every stage's copy of the table.
 */
export function applyAnswer(
  h: HostState, s: FetchStatusMsg, now: number, p: PacePolicy, leastGapMs: number, blockUntil: number | null,
): HostPolicyMsg | null {
  if (s.ip) h.ip = s.ip;
  h.crawlDelayMs = Math.min(s.crawl_delay_ms, p.maxCrawlDelayMs);
  const base = Math.max(leastGapMs, h.crawlDelayMs, p.responseTimeFactor * s.response_ms);
  const backoff = nextBackoff(h.backoff, loadSignal(s), base, s.finished_at, p);
  // The gap is the host's steady pace; a Retry-After is a one-off window on top of it.
  const gap = Math.max(base, backoff.delayMs);
  if (s.contacted !== false) h.lastContactAt = Math.max(h.lastContactAt ?? s.finished_at, s.finished_at);
  const gapFrom = s.contacted !== false ? s.finished_at : h.lastContactAt;
  h.nextAt = Math.max(h.nextAt, gapFrom !== null ? gapFrom + gap : 0, s.finished_at + (s.retry_after_ms ?? 0), backoff.notBefore, blockUntil ?? 0, now);
  const changed = !sameBackoff(backoff, h.backoff) || gap > gapInForceAtMost(h.persistedGap);
  h.backoff = backoff;
  if (!changed) return null;
  h.persistedGap = gap;
  return backoffRecord(h.host, backoff, gap, now);
}
