/**
 * Spider-trap evidence from duplicates: a calendar, a session id in the path or an endless
 * faceted listing produce page after page that says the same thing. When `threshold` (5)
 * duplicates in a row are parsed under one path prefix of a host, that prefix is reported
 * once, and parse writes a crawl.host-policy row `trap:<prefix>` that seen-test uses to stop
 * following links into it. Any distinct page under the prefix resets its run.
 *
 * The counters are deliberately not persisted: "in a row" is recent evidence, and after a
 * restart five more duplicates are cheap to observe.
 */

export const TRAP_RUN_LENGTH = 5;

/**
 * The path prefix a page is judged under: its directory (`/cal/2026/` for `/cal/2026/11`), or
 * for a page at the top level its path without the query (`/cal` for `/cal?d=1`), so a
 * query-string trap at the root does not condemn the whole site.
 */
export function pathPrefix(url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return '/';
  }
  const dir = path.slice(0, path.lastIndexOf('/') + 1);
  return dir.length > 1 ? dir : path;
}

export class TrapDetector {
  /** `${host}|${prefix}` -> duplicates in a row (-1 once reported, so it is reported once). */
  private readonly runs = new Map<string, number>();

  constructor(private readonly threshold = TRAP_RUN_LENGTH, private readonly maxTracked = 100_000) {}

  /** Observe one parsed page; returns the prefix when this page completes a run. */
  observe(host: string, url: string, duplicate: boolean): string | null {
    const prefix = pathPrefix(url);
    const key = `${host}|${prefix}`;
    const run = this.runs.get(key) ?? 0;
    if (!duplicate) {
      if (run > 0) this.runs.delete(key);
      return null;
    }
    if (run < 0) return null;
    if (this.runs.size >= this.maxTracked && !this.runs.has(key)) this.runs.clear(); // bounded memory
    if (run + 1 >= this.threshold) {
      this.runs.set(key, -1);
      return prefix;
    }
    this.runs.set(key, run + 1);
    return null;
  }
}
