/**
 * Cooperative time slicing for work chained through promises. A stage that runs one record at
 * a time hands its slot to the next record in a microtask, so without a break a read-ahead of
 * 2,000 pages could be parsed in one turn of the event loop, up to seconds in which no socket
 * is read. Fetches in flight then look slow (a median of 300-600 ms was measured against a
 * server answering at once), and since a host's gap is 10 x its response time, the crawl paced
 * itself partly by its own backlog.
 *
 * sliceSpent() says whether the current turn has already run for `budgetMs`; a caller that gets
 * true continues in setImmediate, after the event loop has polled I/O.
 */
import { performance } from 'node:perf_hooks';

/** A turn of about this long keeps socket reads timely and costs little in scheduling. */
export const SLICE_BUDGET_MS = 5;

let sliceStart = -1;

function endSlice(): void {
  sliceStart = -1;
}

/** True once this turn of the event loop has run for budgetMs since the first call in it. */
export function sliceSpent(budgetMs = SLICE_BUDGET_MS): boolean {
  const now = performance.now();
  if (sliceStart < 0) {
    sliceStart = now;
    // Runs once the event loop comes round, which is when the next slice may begin.
    setImmediate(endSlice);
    return false;
  }
  return now - sliceStart >= budgetMs;
}
