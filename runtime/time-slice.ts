/**
 * Cooperative time slicing for work chained through promises. A stage that runs one record at
 * a time hands its slot to the next record in a microtask, so without a break a read-ahead of
 * 2,000 pages could be parsed in one turn of the event loop, up to seconds in which no socket
 * is read. Fetches in flight then look slow (a median of 300-600 ms was measured against a
 * server answering at once), and since a host's gap is 10 x its response time, the crawl paced
 * itself partly by its own backlog.
 *
 * Each stage's Dispatcher keeps its own TimeSlice: `spent()` says whether this owner has
 * already run for `budgetMs` in the current turn, and a caller that gets true continues in
 * setImmediate, after the event loop has polled I/O. The budget is per owner, not one for the
 * whole turn: with one shared budget, the stage whose deferred record ran first in a turn took
 * all of it and every other waiting stage ran one record a turn. Under a busy crawl (turns of
 * tens of milliseconds) handoff then handed off about 20 pages a second while parse produced
 * 900, and the difference piled up in memory.
 */
import { performance } from 'node:perf_hooks';

/** A turn of about this long keeps socket reads timely and costs little in scheduling. */
export const SLICE_BUDGET_MS = 5;

export class TimeSlice {
  /** When this owner's slice in the current turn began; -1: no slice begun in this turn. */
  private start = -1;
  private readonly end = (): void => {
    this.start = -1;
  };

  constructor(private readonly budgetMs = SLICE_BUDGET_MS) {}

  /** True once this owner has run for budgetMs since its first call in the current turn. */
  spent(): boolean {
    const now = performance.now();
    if (this.start < 0) {
      this.start = now;
      // Runs once the event loop comes round, which is when the next slice may begin.
      setImmediate(this.end);
      return false;
    }
    return now - this.start >= this.budgetMs;
  }
}
