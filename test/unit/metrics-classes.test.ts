/** The per-class metrics read the frontier's counts at scrape time; counters follow running totals. */
import { registry, setMetricSources } from '../../lib/metrics';

describe('priority-class metrics', () => {
  it('exports leases, pages fetched, budget left, pages a day and waiting hosts by class, and the feeds polled', async () => {
    let fetched = 10;
    setMetricSources({
      classes: () => [
        { priority_class: 1, leased: 12, fetched, left: 3, pages_per_day: 600, waiting_hosts: 0 },
        { priority_class: 2, leased: 5, fetched: 5, left: 0, pages_per_day: 300, waiting_hosts: 4 },
        { priority_class: 3, leased: 1, fetched: 1, left: null, pages_per_day: null, waiting_hosts: 9 },
      ],
      feeds: () => 2,
    });
    const first = await registry.metrics();
    expect(first).toContain('crawl_frontier_leases_total{priority_class="1"} 12');
    expect(first).toContain('crawl_pages_fetched_by_class_total{priority_class="1"} 10');
    expect(first).toContain('crawl_pages_fetched_by_class_total{priority_class="3"} 1');
    expect(first).toContain('crawl_budget_left{priority_class="2"} 0');
    expect(first).not.toContain('crawl_budget_left{priority_class="3"}');
    expect(first).toContain('crawl_budget_pages_per_day{priority_class="1"} 600');
    expect(first).toContain('crawl_budget_waiting_hosts{priority_class="3"} 9');
    expect(first).toContain('crawl_feeds 2');
    fetched = 25;
    expect(await registry.metrics()).toContain('crawl_pages_fetched_by_class_total{priority_class="1"} 25');
  });
});
