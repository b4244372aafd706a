/**
 * InflightOffsets (runtime/inflight-offsets.ts), the commit rule both runners share: a
 * partition's commit advances only over the contiguous run of finished records at its head.
 */
import { InflightOffsets } from '../../runtime/inflight-offsets';

describe('InflightOffsets', () => {
  it('commits only past the contiguous finished head, per partition', () => {
    const o = new InflightOffsets();
    const [a, b, c] = [5, 6, 7].map((off) => o.start('crawl.fetch', 0, off));
    const other = o.start('crawl.fetch', 1, 40);
    expect(o.running).toBe(4);
    expect(c!.finish()).toBe(-1); // 5 and 6 still running
    expect(other.finish()).toBe(41); // another partition is not held back
    expect(a!.finish()).toBe(6); // 5 done; 6 still running
    expect(b!.finish()).toBe(8); // 6 done, and 7 was already: both committed
    expect(o.running).toBe(0);
  });

  it('an abandoned record stops counting as running but is never committed past', () => {
    const o = new InflightOffsets();
    const first = o.start('crawl.parse', 2, 0);
    const second = o.start('crawl.parse', 2, 1);
    first.abandon();
    expect(o.running).toBe(1);
    expect(second.finish()).toBe(-1);
    expect(o.running).toBe(0);
  });
  it('has: a record finished, or started and not abandoned, is one this process already has', () => {
    const o = new InflightOffsets();
    const [a, b, c] = [10, 11, 12].map((off) => o.start('crawl.fetch', 0, off));
    a!.finish();
    c!.abandon();
    expect([9, 10, 11, 12, 13].map((off) => o.has('crawl.fetch', 0, off))).toEqual([true, true, true, false, false]);
    expect(o.has('crawl.fetch', 1, 10)).toBe(false);
    expect(b!.finish()).toBe(12);
    expect(o.has('crawl.fetch', 0, 11)).toBe(true);
  });

  it('forget: a partition that moved away starts afresh when it comes back, not behind an abandoned record', () => {
    const o = new InflightOffsets();
    o.start('crawl.fetch', 0, 5).abandon(); // failed after the partition moved
    o.forget('crawl.fetch', 0);
    expect(o.has('crawl.fetch', 0, 5)).toBe(false);
    expect(o.start('crawl.fetch', 0, 5).finish()).toBe(6); // read again from its commit: commits again
  });
});
