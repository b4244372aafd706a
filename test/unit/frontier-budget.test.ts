import { DEFAULTS } from '../../lib/config';
import { ClassBudget, type BudgetPolicy } from '../../processors/frontier-budget';
import type { PriorityClass } from '../../processors/priority-class';

const DAY = 24 * 3600_000;

function policy(p: Partial<BudgetPolicy> = {}): BudgetPolicy {
  return {
    budgetPagesPerDay: DEFAULTS.budgetPagesPerDay, budgetClassShares: DEFAULTS.budgetClassShares,
    budgetLendUnused: DEFAULTS.budgetLendUnused, budgetBurstSecs: DEFAULTS.budgetBurstSecs, ...p,
  };
}

/**
 * Leases per class over `secs` simulated seconds (100 ms steps) when URLs of each class arrive at
 * `demand` per second (Infinity: always some waiting). The first budgetBurstSecs are left out, so
 * the full buckets of the start do not count.
 */
function simulate(b: ClassBudget<string>, demand: [number, number, number], secs: number, warmupSecs: number): [number, number, number] {
  const backlog = [0, 0, 0];
  const counts: [number, number, number] = [0, 0, 0];
  for (let t = 0; t <= (warmupSecs + secs) * 1000; t += 100) {
    for (let i = 0; i < 3; i++) backlog[i] = Math.min(backlog[i] + demand[i] / 10, 1e9);
    for (let i = 0; i < 3; i++) {
      const cls = (i + 1) as PriorityClass;
      while (backlog[i] >= 1 && b.mayLease(cls, t)) {
        b.take(cls);
        backlog[i] -= 1;
        if (t >= warmupSecs * 1000) counts[i]++;
      }
    }
  }
  return counts;
}

describe('ClassBudget', () => {
  it('without a budget every class may always lease, and leases are still counted per class', () => {
    const b = new ClassBudget<string>(policy(), 0);
    expect(b.limited).toBe(false);
    for (let i = 0; i < 1000; i++) {
      expect(b.mayLease(3, 0)).toBe(true);
      b.take(3);
    }
    expect(b.view(0).map((v) => [v.priority_class, v.leased, v.left])).toEqual([[1, 0, null], [2, 0, null], [3, 1000, null]]);
  });

  // 8,640 pages a day is 0.1 a second: 360 an hour.
  test.each<[string, Partial<BudgetPolicy>, [number, number, number], [number, number, number]]>([
    ['every class asks for more than its share: 60/30/10', {}, [Infinity, Infinity, Infinity], [216, 108, 36]],
    ['class 1 asks for nothing: its share goes to class 2 first', {}, [0, Infinity, Infinity], [0, 324, 36]],
    ['class 1 and 2 ask for nothing: class 3 gets it all', {}, [0, 0, Infinity], [0, 0, 360]],
    ['class 1 asks for a little: it gets all of it, the rest of its share goes on', {}, [0.02, Infinity, Infinity], [72, 252, 36]],
    ['without lending an unused share is lost', { budgetLendUnused: false }, [0, Infinity, Infinity], [0, 108, 36]],
    ['shares 1:1:0: class 3 only gets what the others leave', { budgetClassShares: [1, 1, 0] }, [0.03, 0.01, Infinity], [108, 36, 216]],
  ])('%s', (_name, p, demand, expected) => {
    const b = new ClassBudget<string>(policy({ budgetPagesPerDay: 8640, budgetBurstSecs: 10, ...p }), 0);
    const got = simulate(b, demand, 3600, 60);
    if (got.some((n, i) => Math.abs(n - expected[i]) > 2)) throw new Error(`got ${got.join(",")}`);
  });

  it('a budget cut by half is taken from class 3 first: feeds and the head keep what they fetched', () => {
    // Class 1 (feeds, seeds) and class 2 (the head) ask for fixed amounts within their shares of
    // the cut budget; class 3 (the tail) for ever more.
    const demand: [number, number, number] = [0.025, 0.012, Infinity];
    const full = simulate(new ClassBudget<string>(policy({ budgetPagesPerDay: 8640, budgetBurstSecs: 10 }), 0), demand, 3600, 60);
    const cut = simulate(new ClassBudget<string>(policy({ budgetPagesPerDay: 4320, budgetBurstSecs: 10 }), 0), demand, 3600, 60);
    expect(full).toEqual([90, expect.any(Number), expect.any(Number)]);
    expect(Math.abs(full[1] - 43)).toBeLessThanOrEqual(1);
    expect(Math.abs(full[0] + full[1] + full[2] - 360)).toBeLessThanOrEqual(2);
    // Halved: classes 1 and 2 fetch the same, class 3 loses the whole cut.
    expect(cut[0]).toBe(full[0]);
    expect(Math.abs(cut[1] - full[1])).toBeLessThanOrEqual(1);
    expect(Math.abs(full[2] - cut[2] - 180)).toBeLessThanOrEqual(3);
    expect(cut[2] / full[2]).toBeLessThan(0.25);
  });

  it('with every class asking for more, a cut halves each class (its share of what is left)', () => {
    const demand: [number, number, number] = [Infinity, Infinity, Infinity];
    const cut = simulate(new ClassBudget<string>(policy({ budgetPagesPerDay: 4320, budgetBurstSecs: 10 }), 0), demand, 3600, 60);
    expect(cut.map((n) => Math.round(n / 6) * 6)).toEqual([108, 54, 18]);
  });

  it('a process owning half the partitions spends half the budget', () => {
    const b = new ClassBudget<string>(policy({ budgetPagesPerDay: 8640, budgetBurstSecs: 10 }), 0);
    b.setFraction(0.5, 0);
    const got = simulate(b, [Infinity, Infinity, Infinity], 3600, 60);
    expect(got.reduce((a, n) => a + n, 0)).toBeGreaterThanOrEqual(178);
    expect(got.reduce((a, n) => a + n, 0)).toBeLessThanOrEqual(182);
    expect(b.view(0).map((v) => v.pages_per_day)).toEqual([2592, 1296, 432]);
  });

  it('starts with full buckets of budgetBurstSecs, at least two leases each', () => {
    const b = new ClassBudget<string>(policy({ budgetPagesPerDay: 86_400, budgetBurstSecs: 10, budgetLendUnused: false }), 0);
    expect(b.view(0).map((v) => v.left)).toEqual([6, 3, 2]);
    for (let i = 0; i < 6; i++) {
      expect(b.mayLease(1, 0)).toBe(true);
      b.take(1);
    }
    expect(b.mayLease(1, 0)).toBe(false);
    // 0.6 a second for class 1: its next token after 1667 ms.
    expect(b.mayLease(1, 1600)).toBe(false);
    expect(b.mayLease(1, 1700)).toBe(true);
  });

  it('wakes parked hosts when their class has budget, as many as it has tokens, oldest first', () => {
    const b = new ClassBudget<string>(policy({ budgetPagesPerDay: 86_400, budgetBurstSecs: 1, budgetLendUnused: false }), 0);
    // Spend class 3's two tokens.
    b.take(3);
    b.take(3);
    for (const h of ['a', 'b', 'c']) b.park(3, h);
    b.park(1, 'a');
    expect(b.wake(0)).toEqual(['a']); // class 1 has a token; 'a' leaves every list
    expect(b.wake(0)).toEqual([]);
    expect(b.view(0)[2].waiting_hosts).toBe(2);
    expect(b.wake(10_000)).toEqual(['b']); // class 3 earns 0.1 a second: one token
    expect(b.wake(20_000)).toEqual(['c']);
    b.park(3, 'c');
    b.retain((h) => h !== 'c');
    expect(b.view(10_000)[2].waiting_hosts).toBe(0);
  });

  it('without a budget, wake returns every parked host', () => {
    const b = new ClassBudget<string>(policy(), 0);
    b.park(1, 'a');
    b.park(3, 'a');
    b.park(2, 'b');
    expect(b.wake(0).sort()).toEqual(['a', 'b']);
  });

  it('a day at the default shares spends the day\'s budget', () => {
    const b = new ClassBudget<string>(policy({ budgetPagesPerDay: 1000, budgetBurstSecs: 60 }), 0);
    let n = 0;
    for (let t = 0; t <= DAY; t += 1000) {
      for (const c of [1, 2, 3] as const) {
        while (b.mayLease(c, t)) {
          b.take(c);
          n++;
        }
      }
    }
    // The day's 1,000 plus the full buckets of the start (60 s of each class's rate, at least two).
    expect(n).toBeGreaterThanOrEqual(1000);
    expect(n).toBeLessThanOrEqual(1006);
  });
});
