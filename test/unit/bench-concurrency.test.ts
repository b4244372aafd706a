/**
 * Fetch concurrency by Little's law (lib/concurrency.ts) and the Dispatcher's run-time limit
 * (runtime/stage.ts), with a hand-driven clock: no timing is asserted.
 */
import pino from 'pino';
import { LittleConcurrency } from '../../lib/concurrency';
import { AbandonedError, Dispatcher, type InRecord, type OutRecord, type Stage } from '../../runtime/stage';

describe('LittleConcurrency', () => {
  it('starts at min and then sizes the limit to headroom x rate x hold time, clamped', () => {
    const c = new LittleConcurrency({ min: 4, max: 1000, headroom: 2, windowMs: 10_000 });
    expect(c.limit(0)).toBe(4);
    // 100 arrivals per second, each holding its slot 200 ms: L = 20 slots, 40 with headroom.
    let t = 0;
    for (let i = 0; i < 5000; i++) {
      c.arrive(t);
      t += 10;
    }
    for (let i = 0; i < 200; i++) c.complete(200);
    expect(c.limit(t)).toBeGreaterThanOrEqual(36);
    expect(c.limit(t)).toBeLessThanOrEqual(44);
    // Slower responses need more slots; the cap holds.
    for (let i = 0; i < 2000; i++) c.complete(60_000);
    expect(c.limit(t)).toBe(1000);
  });

  it('falls back towards min when arrivals stop', () => {
    const c = new LittleConcurrency({ min: 2, max: 100, windowMs: 1000 });
    for (let t = 0; t < 1000; t++) c.arrive(t);
    c.complete(500);
    expect(c.limit(1000)).toBeGreaterThan(2);
    expect(c.limit(60_000)).toBe(2);
  });

  it('rejects a max below 1', () => {
    expect(() => new LittleConcurrency({ max: 0 })).toThrow(/max/);
  });
});

describe('Dispatcher', () => {
  const ctx = { now: () => 0, log: pino({ level: 'silent' }) };
  const rec = (offset: number): InRecord => ({ topic: 'fetch', partition: 0, offset, key: 'k', value: offset, timestamp: 0 });

  /** A stage whose handler waits until the test lets it finish; counts how many run at once. */
  function gatedStage(concurrency: number): { stage: Stage; running: () => number; finishAll: () => void } {
    const gates: Array<() => void> = [];
    let running = 0;
    const stage: Stage = {
      id: 'gated', inputs: ['fetch'], outputs: [], concurrency,
      handle: async () => {
        running++;
        await new Promise<void>((r) => gates.push(r));
        running--;
        return [] as OutRecord[];
      },
    };
    return { stage, running: () => running, finishAll: () => gates.splice(0).forEach((g) => g()) };
  }

  /**
   * Microtasks, then a turn of the event loop, three times: a slot handed on late in a long turn
   * starts in the next turn (runtime/time-slice.ts), and on a slow machine this whole test is
   * one long turn unless it lets the loop come round.
   */
  const settle = async (): Promise<void> => {
    for (let turn = 0; turn < 3; turn++) {
      for (let i = 0; i < 10; i++) await Promise.resolve();
      await new Promise<void>((r) => setImmediate(r));
    }
  };

  it('holds at most the limit in flight, and a raised limit starts waiting records at once', async () => {
    const g = gatedStage(2);
    const d = new Dispatcher(g.stage, ctx);
    const all = Promise.all([0, 1, 2, 3, 4].map((i) => d.run(rec(i))));
    await settle();
    expect(g.running()).toBe(2);
    d.setLimit(4);
    await settle();
    expect(g.running()).toBe(4);
    expect(d.busy).toBe(4);
    g.finishAll();
    await settle();
    expect(g.running()).toBe(1);
    g.finishAll();
    await all;
    expect(d.busy).toBe(0);
  });

  it('a lowered limit lets running records finish and starts no new one above it', async () => {
    const g = gatedStage(3);
    const d = new Dispatcher(g.stage, ctx);
    const all = Promise.all([0, 1, 2, 3, 4, 5].map((i) => d.run(rec(i))));
    await settle();
    expect(g.running()).toBe(3);
    d.setLimit(1);
    g.finishAll();
    await settle();
    expect(g.running()).toBe(1);
    g.finishAll();
    await settle();
    expect(g.running()).toBe(1);
    while (g.running() > 0) {
      g.finishAll();
      await settle();
    }
    await all;
  });

  it('with autoConcurrency, the limit follows the observed rate and hold time', async () => {
    let now = 0;
    const gates: Array<() => void> = [];
    const stage: Stage = {
      id: 'auto', inputs: ['fetch'], outputs: [], concurrency: 1,
      autoConcurrency: { min: 1, max: 64, headroom: 1, windowMs: 1000 },
      handle: async () => {
        await new Promise<void>((r) => gates.push(r));
        return [] as OutRecord[];
      },
    };
    const d = new Dispatcher(stage, { now: () => now, log: ctx.log });
    expect(d.concurrencyLimit).toBe(1);
    // One arrival per ms, each fetch holding its slot 500 ms: L = 1/ms x 500 ms, far above 1.
    const runs: Array<Promise<OutRecord[]>> = [];
    for (let i = 0; i < 200; i++) {
      now += 1;
      runs.push(d.run(rec(i)));
    }
    await settle();
    expect(gates).toHaveLength(1);
    now += 500;
    gates.splice(0).forEach((g) => g());
    await settle();
    expect(d.concurrencyLimit).toBeGreaterThan(20);
    expect(d.concurrencyLimit).toBeLessThanOrEqual(64);
    expect(gates.length).toBe(d.concurrencyLimit);
    while (gates.length > 0) {
      now += 500;
      gates.splice(0).forEach((g) => g());
      await settle();
    }
    await Promise.all(runs);
  });
});

describe('Dispatcher.abandonWaiting', () => {
  it('fails waiting records with AbandonedError, lets running ones finish, and starts none after', async () => {
    const gates: Array<() => void> = [];
    const stage: Stage = {
      id: 'stopping', inputs: ['fetch'], outputs: [], concurrency: 1,
      handle: async (r) => {
        await new Promise<void>((res) => gates.push(res));
        return [{ topic: 'fetchStatus', key: String(r.offset), host: 'h', value: r.offset }];
      },
    };
    const d = new Dispatcher(stage, { now: () => 0, log: pino({ level: 'silent' }) });
    const rec = (offset: number): InRecord => ({ topic: 'fetch', partition: 0, offset, key: 'k', value: offset, timestamp: 0 });
    const first = d.run(rec(0));
    const waiting = d.run(rec(1));
    d.abandonWaiting();
    await expect(waiting).rejects.toBeInstanceOf(AbandonedError);
    await expect(d.run(rec(2))).rejects.toBeInstanceOf(AbandonedError);
    gates.splice(0).forEach((g) => g());
    expect((await first).map((o) => o.key)).toEqual(['0']);
    expect(d.busy).toBe(0);
  });
});
