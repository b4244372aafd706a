/**
 * Sustained throughput: pages done and CPU used in the part of a run after its warm-up, up to
 * the stop. A whole-window figure also counts the crawl's start (hosts' robots.txt first, the
 * pipeline filling) and leaves out the pages in the pipeline at the stop (fetched and not yet
 * parsed: a WARC file waiting to be stored, parse's backlog), a few seconds of work at any rate.
 * Pure, so it is unit-tested.
 */

/** A running count (pages parsed, CPU ms) at a moment (Date.now() time). */
export interface Point {
  at: number;
  value: number;
}

/**
 * The count at moment t, by linear interpolation between the points around it (sorted by
 * time); before the first point its value, after the last the last value. No points: 0.
 */
export function valueAt(points: readonly Point[], t: number): number {
  if (points.length === 0) return 0;
  if (t <= points[0].at) return points[0].value;
  for (let i = 1; i < points.length; i++) {
    const b = points[i];
    if (b.at < t) continue;
    const a = points[i - 1];
    return b.at === a.at ? b.value : a.value + ((b.value - a.value) * (t - a.at)) / (b.at - a.at);
  }
  return points[points.length - 1].value;
}

/** Growth of a running count between two moments. */
export const growthBetween = (points: readonly Point[], from: number, to: number): number => valueAt(points, to) - valueAt(points, from);

/**
 * Pages counted per whole second (second i = [i, i+1) s after the first page) between two
 * offsets in seconds, a partly covered second counted in proportion: pages are taken as spread
 * evenly within their second.
 */
export function pagesBetweenSeconds(bySecond: readonly number[], fromSec: number, toSec: number): number {
  let sum = 0;
  for (let i = Math.max(0, Math.floor(fromSec)); i < bySecond.length && i < toSec; i++) {
    const covered = Math.min(i + 1, toSec) - Math.max(i, fromSec);
    if (covered > 0) sum += bySecond[i] * covered;
  }
  return sum;
}

/** The sustained part of a run and what happened in it. */
export interface SustainedWindow {
  /** Start of the window, seconds after the first page was served. */
  fromSec: number;
  /** Its length in seconds (to the last page served, when the crawl was told to stop). */
  secs: number;
  /** Pages done in it: parse completions for kcrawl, pages served for the peer (which parses as it fetches). */
  pages: number;
  /**
   * `crawl run`'s pages fetched in it (its progress lines), when known. Above `pages` when fetch
   * ran ahead of parse: the window's CPU then includes fetching, hashing and gzipping pages that
   * are parsed after it (docs/performance.md, "Why 0 ms showed more CPU a page than 200 ms").
   */
  fetched?: number;
  /** CPU of the counted processes in it (the services' included in Kafka mode). */
  cpuMs: number;
  /** The synthetic web server's CPU in it. */
  webCpuMs: number;
  /** The machine's steal time in it, over all CPUs (/proc/stat); absent in older results. */
  stealMs?: number;
  /** min(CPU limit, politeness limit) at this window's CPU per page. */
  limitPagesPerSec?: number | null;
  /** The same limit with the CPU the hypervisor took (stealMs) left out of the cores' time. */
  limitNetOfStealPagesPerSec?: number | null;
}

/**
 * The window after `warmupSecs` from the first page served to the last, or null when the run
 * is too short to have one: under twice the warm-up (the warm-up would be most of it).
 */
export function sustainedBounds(firstPageAt: number, lastPageAt: number, warmupSecs: number): { from: number; to: number } | null {
  if (firstPageAt <= 0 || lastPageAt - firstPageAt < 2 * warmupSecs * 1000) return null;
  return { from: firstPageAt + warmupSecs * 1000, to: lastPageAt };
}

export const sustainedPagesPerSec = (w: SustainedWindow): number => (w.secs > 0 ? w.pages / w.secs : 0);
export const sustainedCpuMsPerPage = (w: SustainedWindow): number => (w.pages > 0 ? w.cpuMs / w.pages : 0);
/** The share of the cores' time in the window that the hypervisor took; null where not measured. */
export const stealShare = (w: SustainedWindow, cores: number): number | null =>
  w.stealMs !== undefined && w.secs > 0 ? Math.min(1, w.stealMs / (cores * w.secs * 1000)) : null;
