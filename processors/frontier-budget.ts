/**
 * The fetch budget, spent by priority class. Pure: no clock of its own (every call takes `now`),
 * no I/O; the frontier asks "may I lease a URL of class c now?" (mayLease), records the lease
 * (take), parks a host that has only classes out of budget (park) and looks at parked hosts again
 * when their class has budget (wake).
 *
 * A budget of B pages a day, shares s1:s2:s3. Each class has a bucket of tokens filled at its
 * rate, B x f x share / 86,400 s (f: this process's part of the crawl, below), up to
 * budgetBurstSecs of that rate; a lease takes one token. What a full bucket would take beyond its
 * size is the class's unused share: with budgetLendUnused (the default) it goes to the other
 * classes' buckets, the highest class first, so a class with nothing to fetch never leaves pages
 * unfetched while another waits; without it, it is lost and every class stays within its share.
 *
 * Hence when the budget is below demand each class gets at least its share, and when the budget
 * is cut the first fetches to go are those a class could only make with another class's unused
 * share, the lowest class's first (class 3's tail recrawls and low-importance new URLs), while a
 * class whose demand stays within its share of the cut budget (feeds and the head) keeps it all.
 * With every class asking for more than its share, each gets its share of what is left.
 *
 * Kafka mode: the frontier is partitioned by host across processes, so each process spends
 * f = (partitions it owns) / (all partitions) of the budget, changed on every rebalance. Hosts
 * spread evenly over partitions, so the shares match demand in a large crawl; a process's unused
 * budget is not lent to another process (the budget may be under-spent, never over-spent, save
 * the duplicate fetches a crash can cause).
 */
import type { CrawlConfig } from '../lib/config';
import { PRIORITY_CLASSES, type PriorityClass } from './priority-class';

export type BudgetPolicy = Pick<CrawlConfig, 'budgetPagesPerDay' | 'budgetClassShares' | 'budgetLendUnused' | 'budgetBurstSecs'>;

const DAY_MS = 24 * 3600_000;
/** Rates are fractions of a token a millisecond: a sum that should be whole may fall short by rounding. */
const EPS = 1e-9;
export const MIN_BUCKET = 2;

/** Per class, for metrics and `crawl explain`. */
export interface ClassBudgetView {
  priority_class: PriorityClass;
  /** This process's part of the budget for the class, pages a day (null: no budget). */
  pages_per_day: number | null;
  /** Leases the class may start now (null: no budget). */
  left: number | null;
  /** Hosts waiting for the class's budget. */
  waiting_hosts: number;
  /** Leases of the class since this process started. */
  leased: number;
}

export class ClassBudget<T> {
  private readonly tokens = [0, 0, 0];
  private readonly leasedBy = [0, 0, 0];
  private readonly waiting: Array<Set<T>> = [new Set(), new Set(), new Set()];
  private readonly shares: number[];
  private fraction = 1;
  /** When tokens were last added; null until the first call that gives a time. */
  private last: number | null;

  constructor(private readonly policy: BudgetPolicy, now: number | null = null) {
    const s = policy.budgetClassShares.map((x) => Math.max(0, x));
    const sum = s.reduce((a, b) => a + b, 0) || 1;
    this.shares = [0, 1, 2].map((i) => (s[i] ?? 0) / sum);
    this.last = now;
    this.fill();
  }

  /** Whether there is a budget at all (budgetPagesPerDay > 0). */
  get limited(): boolean {
    return this.policy.budgetPagesPerDay > 0;
  }

  /** Tokens a millisecond for class index i. */
  private rate(i: number): number {
    return (this.policy.budgetPagesPerDay * this.fraction * this.shares[i]) / DAY_MS;
  }

  /**
   * At least two tokens: a class that spends each token as it comes holds less than one, so it
   * always has room for what another class lends (with room for one only, part of every loan
   * that arrived as a token was completing went on to the next class).
   */
  private capacity(i: number): number {
    return Math.max(MIN_BUCKET, this.rate(i) * this.policy.budgetBurstSecs * 1000);
  }

  /** Every bucket full (at start): a class with a share may start at once. */
  private fill(): void {
    for (let i = 0; i < 3; i++) this.tokens[i] = this.rate(i) > 0 ? this.capacity(i) : 0;
  }

  /** This process's part of the crawl (Kafka mode: owned partitions / all partitions). */
  setFraction(f: number, now: number): void {
    this.refill(now);
    this.fraction = Math.max(0, Math.min(1, f));
    for (let i = 0; i < 3; i++) this.tokens[i] = Math.min(this.tokens[i], this.capacity(i));
  }

  /** Add what the time since the last call earned; a full bucket's excess goes to the others (highest first) when lending. */
  refill(now: number): void {
    if (this.last === null) this.last = now;
    const dt = now - this.last;
    if (dt <= 0 || !this.limited) return;
    this.last = now;
    let spare = 0;
    for (let i = 0; i < 3; i++) {
      const t = this.tokens[i] + this.rate(i) * dt;
      const cap = this.capacity(i);
      if (t > cap) spare += t - cap;
      this.tokens[i] = Math.min(t, cap);
    }
    if (!this.policy.budgetLendUnused) return;
    for (let i = 0; i < 3 && spare > 0; i++) {
      const give = Math.min(spare, this.capacity(i) - this.tokens[i]);
      if (give <= 0) continue;
      this.tokens[i] += give;
      spare -= give;
    }
  }

  /** May a URL of this class be leased now? */
  mayLease(cls: PriorityClass, now: number): boolean {
    if (!this.limited) return true;
    this.refill(now);
    return this.tokens[cls - 1] >= 1 - EPS;
  }

  /** A lease of this class was made. */
  take(cls: PriorityClass): void {
    this.leasedBy[cls - 1]++;
    if (this.limited) this.tokens[cls - 1] = Math.max(0, this.tokens[cls - 1] - 1);
  }

  /** `item` has work of this class only out of budget: look at it again when the class has some. */
  park(cls: PriorityClass, item: T): void {
    this.waiting[cls - 1].add(item);
  }

  /**
   * Parked items whose class has budget now, oldest first: as many per class as it has whole
   * tokens (an item woken may still spend another class's token, or none; it parks again).
   */
  wake(now: number): T[] {
    if (!this.limited) return this.drainAll();
    this.refill(now);
    const out: T[] = [];
    for (let i = 0; i < 3; i++) {
      let n = Math.floor(this.tokens[i] + EPS);
      for (const item of this.waiting[i]) {
        if (n-- <= 0) break;
        out.push(item);
      }
    }
    for (const item of out) for (const w of this.waiting) w.delete(item);
    return out;
  }

  private drainAll(): T[] {
    if (this.waiting.every((w) => w.size === 0)) return [];
    const all = new Set<T>();
    for (const w of this.waiting) for (const item of w) all.add(item);
    for (const w of this.waiting) w.clear();
    return [...all];
  }

  /** Forget parked items `keep` says no to (hosts no longer owned). */
  retain(keep: (item: T) => boolean): void {
    for (const w of this.waiting) for (const item of w) if (!keep(item)) w.delete(item);
  }

  view(now: number): ClassBudgetView[] {
    this.refill(now);
    return PRIORITY_CLASSES.map((c) => ({
      priority_class: c,
      pages_per_day: this.limited ? Math.round(this.rate(c - 1) * DAY_MS * 1000) / 1000 : null,
      left: this.limited ? Math.floor(this.tokens[c - 1] + EPS) : null,
      waiting_hosts: this.waiting[c - 1].size,
      leased: this.leasedBy[c - 1],
    }));
  }
}
