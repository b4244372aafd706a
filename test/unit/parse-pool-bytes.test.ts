/**
 * What parse hands its worker (processors/parse-pool.ts ownBytes): structured clone copies a
 * view's whole ArrayBuffer, so a view into a larger buffer is copied out at its own size first.
 */
import { ownBytes } from '../../processors/parse-pool';

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
