/**
 * What parse hands its worker (processors/parse-pool.ts ownBytes): structured clone copies a
 * view's whole ArrayBuffer, so a view into a larger buffer is copied out at its own size first.
 */
import { ownBytes, SPARE_CLOSE_ABOVE, SPARE_OPEN_BELOW, SpareWorkers } from '../../processors/parse-pool';

describe('ownBytes', () => {
  test('a view into a larger buffer becomes a copy of just its bytes', () => {
    const batch = Buffer.alloc(1 << 20);
    batch.write('hello page', 4096, 'latin1');
    const view = batch.subarray(4096, 4106);
    const own = ownBytes(view);
    expect(own.buffer.byteLength).toBe(10);
    expect(Buffer.from(own).toString('latin1')).toBe('hello page');
    expect(own.buffer).not.toBe(batch.buffer);
  });

  test('a small Buffer from Node\'s shared pool is copied out too', () => {
    const pooled = Buffer.from('tiny');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length); // a slice of the 8 KiB pool
    expect(ownBytes(pooled).buffer.byteLength).toBe(4);
  });

  test('bytes that fill their own buffer go as they are', () => {
    const whole = Buffer.allocUnsafeSlow(50_000);
    expect(ownBytes(whole)).toBe(whole);
    const empty = new Uint8Array(0);
    expect(ownBytes(empty)).toBe(empty);
  });
});

describe('SpareWorkers (which parse worker takes a page)', () => {
  test('the first worker takes every page until the event loop has room', () => {
    const w = new SpareWorkers(2);
    expect([w.take(), w.take(), w.take()]).toEqual([0, 0, 0]);
    w.observe(0.9);
    expect(w.take()).toBe(0);
    expect(w.spareOpen).toBe(false);
  });

  test('with room, the worker with fewer pages in flight; closed again once the loop is busy (hysteresis)', () => {
    const w = new SpareWorkers(2);
    w.take();
    w.take();
    w.observe(SPARE_OPEN_BELOW - 0.01);
    expect(w.spareOpen).toBe(true);
    expect([w.take(), w.take(), w.take()]).toEqual([1, 1, 0]);
    expect(w.inFlight).toEqual([3, 2]);
    w.done(0);
    w.done(0);
    expect(w.take()).toBe(0);
    // Between the two thresholds nothing changes; past the upper one the spare worker closes.
    w.observe((SPARE_OPEN_BELOW + SPARE_CLOSE_ABOVE) / 2);
    expect(w.spareOpen).toBe(true);
    w.observe(SPARE_CLOSE_ABOVE + 0.01);
    expect(w.spareOpen).toBe(false);
    expect([w.take(), w.take()]).toEqual([0, 0]);
    w.observe((SPARE_OPEN_BELOW + SPARE_CLOSE_ABOVE) / 2);
    expect(w.spareOpen).toBe(false);
  });

  test('one worker: always the first', () => {
    const w = new SpareWorkers(1);
    w.observe(0);
    expect([w.take(), w.take()]).toEqual([0, 0]);
  });
});
