/**
 * Priority classes, pure: 1 (high), 2, 3 (low). A class is what the fetch budget is shared by
 * (processors/frontier-budget.ts) and the first key of a host's back queue (the priority levels
 * of processors/frontier-schedule.ts order URLs within a class).
 *
 * How a URL gets its class, first rule that applies:
 *   1. the class its discoverer gave it: feeds, their items on the feed's own site, news-sitemap
 *      entries and `crawl seed --feed` give 1;
 *   2. at priorityClassTailDepth links from a seed or deeper: 3 (the tail);
 *   3. by importance (OPIC-style, processors/parse-dedup.ts): from priorityClassHighMin up
 *      (seeds score 1): 1; below priorityClassLowBelow (links of duplicate pages): 3; else 2;
 *   4. unscored (sitemap entries, robots.txt's sitemaps): 1 at depth 0, else 2.
 * A URL keeps its class for its recrawls (crawl.urls `priority_class`).
 */
import type { CrawlConfig } from '../lib/config';

export type PriorityClass = 1 | 2 | 3;
export const PRIORITY_CLASSES: readonly PriorityClass[] = [1, 2, 3];

export type ClassPolicy = Pick<CrawlConfig, 'priorityClassTailDepth' | 'priorityClassHighMin' | 'priorityClassLowBelow'>;

/** A class given on a message, or null when it is absent or not 1, 2 or 3. */
export function givenClass(c: number | null | undefined): PriorityClass | null {
  return c === 1 || c === 2 || c === 3 ? c : null;
}

export function priorityClassOf(
  u: { priority_class?: number | null; priority?: number | null; depth: number },
  p: ClassPolicy,
): PriorityClass {
  const given = givenClass(u.priority_class);
  if (given !== null) return given;
  if (u.depth >= p.priorityClassTailDepth) return 3;
  const importance = u.priority;
  if (importance !== null && importance !== undefined && Number.isFinite(importance)) {
    if (importance >= p.priorityClassHighMin) return 1;
    return importance < p.priorityClassLowBelow ? 3 : 2;
  }
  return u.depth <= 0 ? 1 : 2;
}

/**
 * A host's back-queue slot for a URL: classes first, then the priority level within the class,
 * so a host always offers its class-1 URLs first and the budget can ask for a class's first URL.
 */
export function queueSlot(cls: PriorityClass, level: number, levels: number): number {
  const n = Math.max(1, Math.floor(levels));
  return (cls - 1) * n + Math.min(n - 1, Math.max(0, level));
}

/** The class of a back-queue slot (queueSlot's inverse on its first argument). */
export function slotClass(slot: number, levels: number): PriorityClass {
  return (Math.floor(slot / Math.max(1, Math.floor(levels))) + 1) as PriorityClass;
}
