/**
 * Pure scheduling rules of the frontier: a URL's priority level (front queues) and its
 * recrawl interval (freshness by observed change).
 */
import type { CrawlConfig } from '../lib/config';
import type { UrlStateMsg } from '../lib/messages';
import { PRIORITY_CLASSES, priorityClassOf, queueSlot, type ClassPolicy } from './priority-class';

/** The recrawl settings (documented in lib/config.ts). */
export type RecrawlPolicy = Pick<CrawlConfig, 'recrawlInitialMs' | 'recrawlMinMs' | 'recrawlMaxMs'>;

/**
 * Priority level, 0 = most important: from an explicit importance in [0, 1] when a scorer gave
 * one, else from link depth (seeds first).
 */
export function priorityLevel(priority: number | null | undefined, depth: number, levels: number): number {
  const n = Math.max(1, Math.floor(levels));
  if (priority !== null && priority !== undefined && Number.isFinite(priority)) {
    const p = Math.min(1, Math.max(0, priority));
    return Math.min(n - 1, Math.floor((1 - p) * n));
  }
  return Math.min(n - 1, Math.max(0, depth));
}

/**
 * A row's slot in its host's queue: its priority class first (as written, derived for rows
 * written before classes), then its level: by the importance a scorer gave it until the URL is
 * first fetched, by depth after that (a recrawl) or when it has none.
 */
export function queueSlotOf(row: UrlStateMsg, p: ClassPolicy & Pick<CrawlConfig, 'priorityLevels'>): number {
  const level = priorityLevel(row.fetched_at === null ? row.priority : undefined, row.depth, p.priorityLevels);
  return queueSlot(priorityClassOf(row, p), level, p.priorityLevels);
}

/**
 * What a store's queue keys were derived with, as its checkpoint records it: the number of slots
 * (classes x levels). A store made with another layout (other levels, or before classes) is rebuilt.
 */
export function queueLayout(levels: number): number {
  return PRIORITY_CLASSES.length * Math.max(1, Math.floor(levels));
}

/**
 * Next recrawl interval after a fetch: halved when the content changed (its sha256 differs
 * from the previous copy), doubled when it did not, the initial one after a first fetch;
 * always within [recrawlMinMs, recrawlMaxMs].
 */
export function recrawlIntervalMs(
  prev: { fetched_at: number | null; next_due_at: number | null; sha256: string | null },
  newSha256: string | null,
  p: RecrawlPolicy,
): number {
  const last = prev.fetched_at !== null && prev.next_due_at !== null ? prev.next_due_at - prev.fetched_at : null;
  let interval: number;
  if (last === null || last <= 0 || prev.sha256 === null) interval = p.recrawlInitialMs;
  else if (newSha256 !== null && newSha256 !== prev.sha256) interval = last / 2;
  else interval = last * 2;
  return Math.round(Math.min(p.recrawlMaxMs, Math.max(p.recrawlMinMs, interval)));
}
