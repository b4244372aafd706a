/**
 * Cooperative time slicing (runtime/time-slice.ts) and its use by the Dispatcher: a stage that
 * runs one CPU-heavy record at a time lets the event loop come round between slices, so timers
 * and sockets are served while a backlog is worked through, and each stage has a slice of its
 * own, so a busy stage does not starve a cheap one. No timing is asserted: what is checked is
 * the order in which things run.
 */
import pino from 'pino';
import { TimeSlice } from '../../runtime/time-slice';
import { Dispatcher, type InRecord, type OutRecord, type Stage } from '../../runtime/stage';

function cpuStage(id: string, ms: number, onHandled: () => void): Stage {
  return {
    id, inputs: ['fetched'], outputs: [], concurrency: 1,
    handle: (): OutRecord[] => {
      busy(ms);
      onHandled();
      return [];
    },
  };
}

function records(n: number): InRecord[] {
  return Array.from({ length: n }, (_, i) => ({ topic: 'fetched', partition: 0, offset: i, key: 'a', value: null, timestamp: 0 }));
}

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin: a record whose handling costs CPU
  }
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('TimeSlice', () => {
  it('is not spent at the start of a turn, spent once the budget is used, and not spent again next turn', async () => {
    const slice = new TimeSlice(5);
    await nextTurn();
    expect(slice.spent()).toBe(false);
    busy(8);
    expect(slice.spent()).toBe(true);
    await nextTurn();
    await nextTurn();
    expect(slice.spent()).toBe(false);
  });

  it('counts each owner\'s time from its own first call in the turn', async () => {
    const a = new TimeSlice(5);
    const b = new TimeSlice(5);
    await nextTurn();
    expect(a.spent()).toBe(false);
    busy(8);
    expect(a.spent()).toBe(true);
    // b's slice begins now, however long the turn has already run for a.
    expect(b.spent()).toBe(false);
    busy(8);
    expect(b.spent()).toBe(true);
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

describe('Dispatchers of two stages', () => {
  it('give a cheap stage its own slice while a CPU-heavy stage works through a backlog', async () => {
    // With one budget shared by the whole turn, the heavy stage's chain spent it every turn and
    // the cheap stage then ran one record a turn: its 300 records would wait for most of the
    // heavy stage's 200 (checked against the shared budget: 200 of 200).
    let heavy = 0;
    let cheap = 0;
    const ctx = { now: Date.now, log: pino({ level: 'silent' }) };
    const a = new Dispatcher(cpuStage('heavy', 1, () => heavy++), ctx);
    const b = new Dispatcher(cpuStage('cheap', 0, () => cheap++), ctx);
    let heavyWhenCheapDone = -1;
    const heavyAll = Promise.all(records(200).map((r) => a.run(r)));
    await Promise.all(records(300).map((r) => b.run(r)));
    heavyWhenCheapDone = heavy;
    await heavyAll;
    expect(cheap).toBe(300);
    expect(heavy).toBe(200);
    // Each turn the heavy stage runs about five 1 ms records; the cheap one all of its own.
    expect(heavyWhenCheapDone).toBeLessThan(100);
  });
});
