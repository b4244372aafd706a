import { DEFAULTS } from '../../lib/config';
import { priorityClassOf, queueSlot, slotClass } from '../../processors/priority-class';

const P = { priorityClassTailDepth: DEFAULTS.priorityClassTailDepth, priorityClassHighMin: DEFAULTS.priorityClassHighMin, priorityClassLowBelow: DEFAULTS.priorityClassLowBelow };

describe('priorityClassOf (the default rule)', () => {
  test.each<[string, { priority_class?: number | null; priority?: number | null; depth: number }, number]>([
    ['a feed or a feed item (class given) at any depth', { priority_class: 1, priority: null, depth: 9 }, 1],
    ['a class given as 3 stays 3 however important', { priority_class: 3, priority: 1, depth: 0 }, 3],
    ['a class that is not 1-3 is ignored', { priority_class: 7, priority: 1, depth: 0 }, 1],
    ['a seed (importance 1)', { priority: 1, depth: 0 }, 1],
    ['the only link of a page (importance 1), one hop from a seed', { priority: 1, depth: 1 }, 1],
    ['a link of a focused page (importance 0.5)', { priority: 0.5, depth: 1 }, 2],
    ['a link of a listing page (importance 0.3, the floor)', { priority: 0.3, depth: 2 }, 2],
    ['a link of a duplicate page (importance 0.03)', { priority: 0.03, depth: 1 }, 3],
    ['three hops from a seed: the tail', { priority: 1, depth: 3 }, 3],
    ['unscored at depth 0 (robots.txt sitemap)', { priority: null, depth: 0 }, 1],
    ['unscored sitemap entry', { priority: null, depth: 1 }, 2],
    ['unscored and deep', { depth: 5 }, 3],
    ['a NaN importance counts as unscored', { priority: NaN, depth: 1 }, 2],
  ])('%s', (_name, u, cls) => {
    expect(priorityClassOf(u, P)).toBe(cls);
  });
});

describe('queue slots: class first, then level', () => {
  it('orders every class-1 slot before every class-2 slot, and back', () => {
    const slots = [];
    for (const c of [1, 2, 3] as const) for (let level = 0; level < 4; level++) slots.push(queueSlot(c, level, 4));
    expect(slots).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(slots.map((s) => slotClass(s, 4))).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
    // A level past the last is the class's last slot; one level means one slot a class.
    expect(queueSlot(2, 9, 4)).toBe(7);
    expect([1, 2, 3].map((c) => queueSlot(c as 1 | 2 | 3, 0, 1))).toEqual([0, 1, 2]);
  });
});
