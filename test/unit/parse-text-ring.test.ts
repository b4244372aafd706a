/**
 * The parse workers' text rings (processors/parse-text-ring.ts), both sides on one thread: what
 * is written can be read back until released, as its UTF-8 bytes, nothing is written over before
 * its release (in write order, whatever the order of the releases), a text that does not fit is
 * refused, and the last one written can be taken back.
 */
import { createTextRings, TextRingReader, TextRingWriter, type TextSpan } from '../../processors/parse-text-ring';

/** A text of n bytes, all the ASCII character `fill` (0-127). */
const text = (n: number, fill: number): string => String.fromCharCode(fill).repeat(n);
const put = (w: TextRingWriter, n: number, fill: number): TextSpan | null => w.putString(text(n, fill))?.span ?? null;
const read = (r: TextRingReader, s: TextSpan): number[] => Array.from(r.view(s));
/** One ring of `size` bytes: its writer (the one worker) and its reader (the event loop). */
function oneRing(size: number): { w: TextRingWriter; r: TextRingReader } {
  const rings = createTextRings(1, size);
  return { w: TextRingWriter.claim(rings)!, r: new TextRingReader(rings) };
}

describe('text rings', () => {
  test('each worker claims its own ring; a worker past the last one gets none', () => {
    const rings = createTextRings(2, 64);
    const a = TextRingWriter.claim(rings)!;
    const b = TextRingWriter.claim(rings)!;
    expect(TextRingWriter.claim(rings)).toBeNull();
    expect(TextRingWriter.claim(undefined)).toBeNull();
    expect(put(a, 4, 1)!.ring).toBe(0);
    expect(put(b, 4, 2)!.ring).toBe(1);
  });

  test('texts read back as written; a full ring refuses until the reader releases', () => {
    const { w, r } = oneRing(64);
    const s1 = put(w, 30, 1)!;
    const s2 = put(w, 30, 2)!;
    expect(put(w, 10, 3)).toBeNull(); // 4 bytes left
    expect(read(r, s1)).toEqual(Array(30).fill(1));
    expect(read(r, s2)).toEqual(Array(30).fill(2));
    r.release(s1);
    // 34 bytes free, but not in one piece at the end: the text starts over at 0, the end skipped.
    const s3 = put(w, 20, 3)!;
    expect(s3.offset).toBe(0);
    expect(read(r, s2)).toEqual(Array(30).fill(2)); // not written over
    expect(read(r, s3)).toEqual(Array(20).fill(3));
    expect(put(w, 11, 4)).toBeNull(); // 10 left before s2
    expect(put(w, 10, 4)!.offset).toBe(20);
  });

  test('a span released before an earlier one frees nothing until the earlier one is released', () => {
    const { w, r } = oneRing(40);
    const s1 = put(w, 10, 1)!;
    const s2 = put(w, 10, 2)!;
    const s3 = put(w, 10, 3)!;
    r.release(s3);
    r.release(s2);
    expect(put(w, 20, 4)).toBeNull(); // only 10 free: s1 still held
    expect(read(r, s1)).toEqual(Array(10).fill(1));
    r.release(s1);
    r.release(s1); // twice: no effect
    // All three freed at once: 30 bytes fit, at the start (the 10 at the end are skipped).
    const s4 = put(w, 30, 4)!;
    expect(s4.offset).toBe(0);
    expect(read(r, s4)).toEqual(Array(30).fill(4));
  });

  test('an empty text or one larger than the ring is refused', () => {
    const { w } = oneRing(16);
    expect(put(w, 0, 0)).toBeNull();
    expect(put(w, 17, 1)).toBeNull();
    expect(put(w, 16, 1)).not.toBeNull();
  });

  test('a text is stored as its UTF-8 bytes, and one that does not fit at the end starts over at 0', () => {
    const { w, r } = oneRing(40);
    const t1 = 'héllo € ☃ \u{1F600} a\ud800b'; // 2-, 3- and 4-byte characters and a lone surrogate (U+FFFD): 25 bytes
    const p1 = w.putString(t1)!;
    expect(Buffer.from(r.view(p1.span))).toEqual(Buffer.from(t1, 'utf8'));
    expect(Buffer.from(p1.bytes)).toEqual(Buffer.from(t1, 'utf8'));
    const p2 = put(w, 5, 1)!;
    r.release(p1.span);
    r.release(p2);
    // 8 characters, 16 bytes: more than the 10 bytes left at the end, so from 0.
    const t3 = 'é'.repeat(8);
    const p3 = w.putString(t3)!;
    expect(p3.span.offset).toBe(0);
    expect(Buffer.from(r.view(p3.span)).toString('utf8')).toBe(t3);
    // 14 bytes free now, from 16: 14 fit, 16 do not.
    expect(w.putString('é'.repeat(8))).toBeNull();
    expect(w.putString('é'.repeat(7))!.span.offset).toBe(16);
  });

  test('the last text written can be taken back: its room is free again', () => {
    const { w, r } = oneRing(32);
    const a = put(w, 10, 1)!;
    const b = put(w, 20, 2)!;
    expect(put(w, 5, 3)).toBeNull();
    w.rollback(a); // not the last: no effect
    expect(put(w, 5, 3)).toBeNull();
    w.rollback(b);
    const c = put(w, 20, 3)!;
    expect(c.offset).toBe(10);
    expect(read(r, a)).toEqual(Array(10).fill(1));
    expect(read(r, c)).toEqual(Array(20).fill(3));
  });

  test('over many laps with random sizes, every held text reads back intact', () => {
    const { w, r } = oneRing(1000);
    let seed = 7;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const held: Array<{ span: TextSpan; fill: number }> = [];
    let written = 0;
    let refused = 0;
    for (let i = 0; i < 5000; i++) {
      const fill = 33 + (i % 90);
      const span = put(w, 1 + rnd(300), fill);
      if (span) {
        held.push({ span, fill });
        written += span.length;
      } else refused++;
      // Release a few, sometimes out of order.
      while (held.length > 0 && rnd(3) === 0) {
        const k = held.length > 1 && rnd(4) === 0 ? 1 : 0;
        const [h] = held.splice(k, 1);
        expect(read(r, h.span)).toEqual(Array(h.span.length).fill(h.fill));
        r.release(h.span);
      }
      for (const h of held) expect(r.view(h.span)[0]).toBe(h.fill);
    }
    expect(written).toBeGreaterThan(50 * 1000);
    expect(refused).toBeGreaterThan(0);
  });
});
