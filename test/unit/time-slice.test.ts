/**
 * Cooperative time slicing (runtime/time-slice.ts) and its use by the Dispatcher: a stage that
 * runs one CPU-heavy record at a time lets the event loop come round between slices, so timers
 * and sockets are served while a backlog is worked through. No timing is asserted: what is
 * checked is the order in which things run.
 */
import pino from 'pino';
import { sliceSpent } from '../../runtime/time-slice';
import { Dispatcher, type InRecord, type OutRecord, type Stage } from '../../runtime/stage';

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin: a record whose handling costs CPU
  }
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('sliceSpent', () => {
  it('is false at the start of a turn, true once the budget is used, and false again next turn', async () => {
    await nextTurn();
    expect(sliceSpent(5)).toBe(false);
    busy(8);
    expect(sliceSpent(5)).toBe(true);
    await nextTurn();
    await nextTurn();
    expect(sliceSpent(5)).toBe(false);
  });
});

describe('Dispatcher with one slot', () => {
  it('lets the event loop run between records once a slice is spent', async () => {
    let handled = 0;
    const stage: Stage = {
      id: 'cpu', inputs: ['fetched'], outputs: [], concurrency: 1,
      handle: (): OutRecord[] => {
        busy(2);
        handled++;
        return [];
      },
    };
    const d = new Dispatcher(stage, { now: Date.now, log: pino({ level: 'silent' }) });
    const recs: InRecord[] = Array.from({ length: 60 }, (_, i) => ({ topic: 'fetched', partition: 0, offset: i, key: 'a', value: null, timestamp: 0 }));
    // A timer set now fires at the first turn boundary: with slicing, long before the 60th record.
    let handledWhenTimerRan = -1;
    const timer = new Promise<void>((r) => setTimeout(() => ((handledWhenTimerRan = handled), r()), 0));
    const all = Promise.all(recs.map((r) => d.run(r)));
    await timer;
    await all;
    expect(handled).toBe(60);
    expect(handledWhenTimerRan).toBeGreaterThan(0);
    // Each record costs 2 ms and a slice 5 ms: the timer ran after a few records, not after all 60.
    expect(handledWhenTimerRan).toBeLessThan(20);
  });
});
