/**
 * Adaptive politeness for one host (AIMD), pure: what a fetch answer does to the host's pace.
 *
 * - 429 and 503 are "you are too fast": the host's least gap is multiplied (its rate divided)
 *   by backoffFactor, and a Retry-After is a hard window with no request at all inside it.
 * - pauseAfter503 consecutive 503s pause the host for hostPauseMs (a circuit breaker).
 * - Timeouts back off exponentially: timeoutBackoffMs, x2 per consecutive timeout.
 * - Recovery is slow and additive *in rate*: every good answer adds aimdRecoveryRatePerSec
 *   requests/s to the adapted rate until it is back at the normal gap.
 *
 * The state is small, so the frontier persists it in crawl.host-policy (field `backoff`) and a
 * restarted frontier resumes it before releasing any fetch (no Retry-After window is forgotten).
 */
import { DEFAULTS, type CrawlConfig } from '../lib/config';
import type { HostPolicyMsg } from '../lib/messages';

/** The adaptive-politeness settings (documented in lib/config.ts). */
export type AimdPolicy = Pick<CrawlConfig, 'aimdBackoffFactor' | 'aimdMaxDelayMs' | 'aimdRecoveryRatePerSec' | 'pauseAfter503' | 'hostPauseMs' | 'timeoutBackoffMs'>;

/** The defaults of lib/config.ts (one table for every setting). */
export const AIMD_DEFAULTS: AimdPolicy = {
  aimdBackoffFactor: DEFAULTS.aimdBackoffFactor,
  aimdMaxDelayMs: DEFAULTS.aimdMaxDelayMs,
  aimdRecoveryRatePerSec: DEFAULTS.aimdRecoveryRatePerSec,
  pauseAfter503: DEFAULTS.pauseAfter503,
  hostPauseMs: DEFAULTS.hostPauseMs,
  timeoutBackoffMs: DEFAULTS.timeoutBackoffMs,
};

export interface HostBackoff {
  /** Adapted least gap between requests, ms; 0 = not slowed. */
  delayMs: number;
  /** No request to the host before this (Retry-After, pause, timeout back-off); 0 = none. */
  notBefore: number;
  /** Consecutive 429/503 answers. */
  failures: number;
  /** Consecutive timeouts. */
  timeouts: number;
  /** Why the host is slowed or waiting, for logs and `crawl explain`. */
  cause: string | null;
}

export const NO_BACKOFF: HostBackoff = Object.freeze({ delayMs: 0, notBefore: 0, failures: 0, timeouts: 0, cause: null });

/** What one fetch answer says about the host's load. */
export type LoadSignal =
  | { kind: 'ok' }
  | { kind: 'overload'; status: number; retryAfterMs: number | null }
  | { kind: 'timeout' }
  | { kind: 'neutral' };

const TIMEOUT_CODES = new Set(['CONNECT_TIMEOUT', 'DEADLINE_EXCEEDED']);

/** Classify a fetch status. Answers that say nothing about load (robots verdicts, refusals) are neutral. */
export function loadSignal(s: {
  outcome: string; http_status: number | null; reason: string | null; retry_after_ms: number | null;
}): LoadSignal {
  if (s.http_status === 429 || s.http_status === 503) return { kind: 'overload', status: s.http_status, retryAfterMs: s.retry_after_ms };
  // robots.txt answering 5xx: the server is struggling; count it like a 503 (without a window).
  if (s.outcome === 'ROBOTS_UNAVAILABLE' && s.reason === 'disallow-all-5xx') return { kind: 'overload', status: 503, retryAfterMs: s.retry_after_ms };
  if (s.reason !== null && TIMEOUT_CODES.has(s.reason)) return { kind: 'timeout' };
  if (s.http_status !== null && s.http_status < 500) return { kind: 'ok' };
  return { kind: 'neutral' };
}

/**
 * The host's back-off after an answer that finished at `finishedAt`. `gapMs` is the gap the
 * host would get without adaptation (min delay, Crawl-delay, 10x response time): the first
 * slow-down multiplies that, not zero.
 */
export function nextBackoff(b: HostBackoff, sig: LoadSignal, gapMs: number, finishedAt: number, p: AimdPolicy): HostBackoff {
  switch (sig.kind) {
    case 'overload': {
      const failures = b.failures + 1;
      const delayMs = Math.min(p.aimdMaxDelayMs, Math.max(b.delayMs, gapMs) * p.aimdBackoffFactor);
      let notBefore = b.notBefore;
      let cause = `http-${sig.status}`;
      if (sig.retryAfterMs !== null) {
        notBefore = Math.max(notBefore, finishedAt + sig.retryAfterMs);
        cause += ' retry-after';
      }
      if (sig.status === 503 && failures >= p.pauseAfter503) {
        notBefore = Math.max(notBefore, finishedAt + p.hostPauseMs);
        cause = `paused: ${failures} consecutive 503`;
      }
      return { delayMs, notBefore, failures, timeouts: 0, cause };
    }
    case 'timeout': {
      const timeouts = b.timeouts + 1;
      const wait = Math.min(p.aimdMaxDelayMs, p.timeoutBackoffMs * 2 ** Math.min(timeouts - 1, 30));
      return { ...b, timeouts, notBefore: Math.max(b.notBefore, finishedAt + wait), cause: `timeout x${timeouts}` };
    }
    case 'ok': {
      if (b.delayMs === 0 && b.failures === 0 && b.timeouts === 0) return b;
      let delayMs = 0;
      if (b.delayMs > 0) {
        const rate = 1000 / b.delayMs + p.aimdRecoveryRatePerSec;
        delayMs = Math.round(1000 / rate);
        if (delayMs <= gapMs) delayMs = 0; // back to the normal pace
      }
      return { delayMs, notBefore: b.notBefore, failures: 0, timeouts: 0, cause: delayMs > 0 ? 'recovering' : null };
    }
    default:
      return b;
  }
}

export function sameBackoff(a: HostBackoff, b: HostBackoff): boolean {
  return a.delayMs === b.delayMs && a.notBefore === b.notBefore && a.failures === b.failures && a.timeouts === b.timeouts;
}

/**
 * A host's gap is written to crawl.host-policy again only when it grows past the last value
 * written by more than this share (frontier-hosts.ts applyAnswer), so the gap in force may be up
 * to this much longer than `gap_ms`, or than minHostDelayMs before any row is written.
 */
export const GAP_REWRITE_SHARE = 0.2;

/**
 * The longest gap a host can have been given since `gap_ms` was written: what a frontier or
 * fetcher taking the host over must wait. Waiting only `gap_ms` let a request through 2,521 ms
 * after a slow response that called for 2,530 (kill -9 and restart, test/e2e/kafka-politeness).
 */
export function gapInForceAtMost(gapMs: number): number {
  return Math.ceil(gapMs * (1 + GAP_REWRITE_SHARE));
}

/**
 * How long a frontier restoring a host, or a fetcher taking its partition, waits before its
 * first request: the longest gap the host can have been given, from its `gap_ms` row, or from
 * minHostDelayMs while it has none (`gapMs` 0).
 */
export function handOverWaitMs(minHostDelayMs: number, gapMs = 0): number {
  return gapInForceAtMost(Math.max(minHostDelayMs, gapMs));
}

/**
 * The frontier's row for a host in crawl.host-policy (field `backoff`, written only by the
 * host's owning frontier): the adapted gap, the no-request window, and `gap_ms`, the host's
 * whole current gap, so a restarted frontier waits that long before its first request.
 */
export function backoffRecord(host: string, b: HostBackoff, gapMs: number, now: number): HostPolicyMsg {
  return {
    host, field: 'backoff', updated_at: now, blocked_until: b.notBefore > 0 ? b.notBefore : null, reason: b.cause,
    min_delay_ms: b.delayMs > 0 ? b.delayMs : null, failures: b.failures, timeouts: b.timeouts, gap_ms: gapMs,
  };
}

export function backoffFromRecord(r: HostPolicyMsg): { backoff: HostBackoff; gapMs: number } {
  return {
    backoff: {
      delayMs: r.min_delay_ms ?? 0, notBefore: r.blocked_until ?? 0, failures: r.failures ?? 0, timeouts: r.timeouts ?? 0, cause: r.reason,
    },
    gapMs: r.gap_ms ?? 0,
  };
}
