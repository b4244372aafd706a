/**
 * One host in the frontier's memory: how many URLs wait in its queue (which is on disk, in the
 * partition's store: processors/frontier-store.ts) and the first few of them, the one request
 * it may have in flight, when it may next be asked, and its adapted pace. Pure helpers;
 * FrontierState (frontier-state.ts) owns the hosts and the heap.
 */
import type { FetchStatusMsg, HostPolicyMsg } from '../lib/messages';
import type { QueuedRef } from './frontier-store';
import { ownString } from '../lib/own-string';
import { routingKey } from '../lib/partitioner';
import { backoffRecord, gapInForceAtMost, loadSignal, nextBackoff, NO_BACKOFF, sameBackoff, type AimdPolicy, type HostBackoff } from './frontier-aimd';

/** The one request in flight to a host. */
export interface Inflight {
  id: string;
  url: string;
  domain: string;
  ip: string | null;
}

/**
 * What a host has only once it is leased or answered, or came back with a back-off or fetches
 * this cycle: a host that waits with work and was never asked (most of a broad crawl's hosts)
 * has none of it, and its HostState is five fields.
 */
interface HostPace {
  ip: string | null;
  head: QueuedRef[] | null;
  inflight: Inflight | null;
  lastContactAt: number | null;
  crawlDelayMs: number;
  backoff: HostBackoff;
  persistedGap: number | null;
  fetches: number;
}

const SCHEDULED = 1;
const DIRTY = 2;

/**
 * One host with work in memory. A million of them must fit beside the store (the 50M
 * frontier-scale run has a million hosts), so the object holds five fields: the host, its queue
 * length, its next allowed time, two flags in one small integer, and its pace, made only when a
 * field of it leaves its default. The registered domain is not kept: it is the host's routing
 * key, cached by lib/partitioner.ts, and the host's name is a copy of its own (a slice of the
 * URL it was cut from kept the URL). With a million hosts of two URLs each, 157 heap bytes a host
 * with work in all (bench/frontier-memory.ts, docs/frontier-store.md).
 */
export class HostState {
  /** URLs in the host's queue on disk (slots: priority class, then priority level; processors/priority-class.ts queueSlot). */
  size = 0;
  nextAt: number;
  private bits = 0;
  private more: HostPace | null = null;
  /** The host's name, a string of its own (lib/own-string.ts): the one given may be a slice of a URL. */
  readonly host: string;

  /** `owned`: `host` is a string of its own already (decoded from a store key, not cut from a URL). */
  constructor(host: string, now: number, owned = false) {
    this.host = owned ? host : ownString(host);
    this.nextAt = now;
  }

  /** The registered domain (the domain cap's group): the host's routing key. */
  get domain(): string {
    return routingKey(this.host);
  }

  /** Whether the host carries its pace: false while every field of it is at its default. */
  get paced(): boolean {
    return this.more !== null;
  }

  private pace(): HostPace {
    return (this.more ??= { ip: null, head: null, inflight: null, lastContactAt: null, crawlDelayMs: 0, backoff: NO_BACKOFF, persistedGap: null, fetches: 0 });
  }

  /** Whether the host is in the ready heap (it is at most once, but for wake-ups). */
  get scheduled(): boolean {
    return (this.bits & SCHEDULED) !== 0;
  }

  set scheduled(v: boolean) {
    this.bits = v ? this.bits | SCHEDULED : this.bits & ~SCHEDULED;
  }

  /** Its summary (size, fetches) changed since last written to the store. */
  get dirty(): boolean {
    return (this.bits & DIRTY) !== 0;
  }

  set dirty(v: boolean) {
    this.bits = v ? this.bits | DIRTY : this.bits & ~DIRTY;
  }

  /** Last address a fetch of this host connected to (per-IP cap); null until known. */
  get ip(): string | null {
    return this.more?.ip ?? null;
  }

  set ip(v: string | null) {
    if (v !== null || this.more) this.pace().ip = v;
  }

  /** The first of its queued URLs, read from the store and not yet leased; null when not read (or no longer the queue's start). */
  get head(): QueuedRef[] | null {
    return this.more?.head ?? null;
  }

  set head(v: QueuedRef[] | null) {
    if (v !== null || this.more) this.pace().head = v;
  }

  /** The one request in flight to this host, if any (politeness: never two at once). */
  get inflight(): Inflight | null {
    return this.more?.inflight ?? null;
  }

  set inflight(v: Inflight | null) {
    if (v !== null || this.more) this.pace().inflight = v;
  }

  /** When the last request this frontier saw an answer to ended (its finished_at); null = none seen. */
  get lastContactAt(): number | null {
    return this.more?.lastContactAt ?? null;
  }

  set lastContactAt(v: number | null) {
    if (v !== null || this.more) this.pace().lastContactAt = v;
  }

  /** Crawl-delay last reported by the fetcher. */
  get crawlDelayMs(): number {
    return this.more?.crawlDelayMs ?? 0;
  }

  set crawlDelayMs(v: number) {
    if (v !== 0 || this.more) this.pace().crawlDelayMs = v;
  }

  get backoff(): HostBackoff {
    return this.more?.backoff ?? NO_BACKOFF;
  }

  set backoff(v: HostBackoff) {
    if (v !== NO_BACKOFF || this.more) this.pace().backoff = v;
  }

  /** The gap last written to crawl.host-policy; null until one is (minHostDelayMs then). The gap in force is at most gapInForceAtMost of it. */
  get persistedGap(): number | null {
    return this.more?.persistedGap ?? null;
  }

  set persistedGap(v: number | null) {
    if (v !== null || this.more) this.pace().persistedGap = v;
  }

  /** Fetches released this cycle, against hostBudgetPerCycle. */
  get fetches(): number {
    return this.more?.fetches ?? 0;
  }

  set fetches(v: number) {
    if (v !== 0 || this.more) this.pace().fetches = v;
  }
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
  const changed = !sameBackoff(backoff, h.backoff) || gap > gapInForceAtMost(h.persistedGap ?? p.minHostDelayMs);
  h.backoff = backoff;
  if (!changed) return null;
  h.persistedGap = gap;
  return backoffRecord(h.host, backoff, gap, now);
}
