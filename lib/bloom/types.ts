/**
 * The seen set as seen-test uses it. Contract: `check` never answers "seen" for a URL that
 * was never added (save the designed false-positive rate); `add` is called only after the
 * URLs are durably produced to the frontier, so a crash in between costs a duplicate
 * candidate, never a hidden URL. An implementation that cannot answer (its store is down)
 * answers "not seen": the frontier's exact check against its URL table is the guarantee.
 */
export interface SeenSet {
  check(urls: readonly string[]): Promise<boolean[]>;
  add(urls: readonly string[]): Promise<void>;
  close?(): Promise<void>;
}

/** What a filter reports about its load, for metrics and `crawl bloom stats`. */
export interface BloomStats {
  generation: string;
  /** URLs added that set at least one new bit (≈ distinct URLs). */
  added: number;
  capacity: number;
  fillRatio: number;
  estimatedFpRate: number;
}
