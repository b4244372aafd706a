import { ByteRing } from '../../lib/warc/byte-ring';

describe('ByteRing (the WARC record thread\'s shared bytes)', () => {
  test('spans are taken in order, wrap to the start, and never overlap one in use', () => {
    const ring = new ByteRing(100);
    expect(ring.take(40)).toEqual({ offset: 0, length: 40 });
    expect(ring.take(40)).toEqual({ offset: 40, length: 40 });
    // 20 left at the end is too little for 30, and the start is in use.
    expect(ring.take(30)).toBeNull();
    ring.release(); // [0, 40) free
    expect(ring.take(30)).toEqual({ offset: 0, length: 30 });
    // Wrapped: [30, 40) is free, but a span must stay strictly below the oldest (40).
    expect(ring.take(10)).toBeNull();
    expect(ring.take(9)).toEqual({ offset: 30, length: 9 });
    ring.release();
    ring.release();
    ring.release();
    expect(ring.inUse).toBe(0);
    expect(ring.take(100)).toEqual({ offset: 0, length: 100 });
    expect(ring.take(1)).toBeNull();
  });

  test('a span larger than the ring gets none; releasing what was not taken throws', () => {
    const ring = new ByteRing(10);
    expect(ring.take(11)).toBeNull();
    expect(() => ring.release()).toThrow(/nothing to release/);
  });

  test('against a model: 20,000 random takes and in-order releases, no two live spans share a byte', () => {
    const cap = 1000;
    const ring = new ByteRing(cap);
    const live: Array<{ offset: number; length: number }> = [];
    let seed = 7;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    let taken = 0;
    for (let i = 0; i < 20_000; i++) {
      if (live.length > 0 && rand(3) === 0) {
        ring.release();
        live.shift();
        continue;
      }
      const n = 1 + rand(300);
      const s = ring.take(n);
      if (!s) {
        // Refused only when the model has no room for it either (contiguous, no wrap within a span).
        const used = new Uint8Array(cap);
        for (const l of live) used.fill(1, l.offset, l.offset + Math.max(1, l.length));
        let run = 0;
        let best = 0;
        for (let b = 0; b < cap; b++) best = Math.max(best, (run = used[b] ? 0 : run + 1));
        expect(live.length > 0 || n > cap).toBe(true);
        if (live.length === 0) expect(best).toBeLessThan(n);
        continue;
      }
      taken++;
      expect(s.offset + n).toBeLessThanOrEqual(cap);
      for (const l of live) expect(s.offset + n <= l.offset || l.offset + l.length <= s.offset).toBe(true);
      live.push(s);
      expect(ring.inUse).toBe(live.length);
    }
    expect(taken).toBeGreaterThan(5000);
  });
});
