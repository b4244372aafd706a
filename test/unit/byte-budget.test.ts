import { ByteBudget } from '../../lib/byte-budget';

const settled = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('ByteBudget', () => {
  it('holds at most its budget, and lets waiters in first come, first served', async () => {
    const b = new ByteBudget(100);
    const order: string[] = [];
    await b.acquire(60);
    const second = b.acquire(50).then(() => order.push('50'));
    const third = b.acquire(10).then(() => order.push('10')); // fits, but must not pass the 50
    await settled();
    expect(order).toEqual([]);
    expect(b.heldBytes).toBe(60);
    expect(b.queued).toBe(2);
    b.release(60);
    await Promise.all([second, third]);
    expect(order).toEqual(['50', '10']);
    expect(b.heldBytes).toBe(60);
  });

  it('lets an item bigger than the whole budget go alone, once nothing else is held', async () => {
    const b = new ByteBudget(100);
    await b.acquire(30);
    let big = false;
    const p = b.acquire(500).then(() => (big = true));
    await settled();
    expect(big).toBe(false);
    b.release(30);
    await p;
    expect(big).toBe(true);
    expect(b.heldBytes).toBe(500);
    // Nothing more while it is held.
    let small = false;
    const q = b.acquire(1).then(() => (small = true));
    await settled();
    expect(small).toBe(false);
    b.release(500);
    await q;
    expect(b.heldBytes).toBe(1);
  });

  it('takes bytes at once only when nobody waits and they fit', async () => {
    const b = new ByteBudget(100);
    expect(b.tryAcquire(70)).toBe(true);
    expect(b.tryAcquire(40)).toBe(false);
    expect(b.heldBytes).toBe(70);
    const waiter = b.acquire(40);
    expect(b.tryAcquire(10)).toBe(false); // would pass the waiter
    b.release(70);
    await waiter;
    expect(b.tryAcquire(10)).toBe(true);
    expect(b.heldBytes).toBe(50);
  });

  it('refuses a budget that is not positive', () => {
    expect(() => new ByteBudget(0)).toThrow(RangeError);
  });
});
