/**
 * A page's text from a parse worker to the event loop through shared memory rather than in a
 * buffer of its own. Transferred, each page's text (about 45 KB on the benchmark's web) became
 * an ArrayBuffer on the event loop's isolate, and V8 starts a full collection whenever such
 * external memory grows by 64 MB: in `crawl run` over 5,000 hosts, 26-27 full collections in
 * 23 s with the texts against 18-19 without them (--trace-gc-nvp). Yet the event loop needs a
 * page's text only for the text record of a page it hands off, which a near-duplicate, an
 * unchanged page or a noindex page is not.
 *
 * So each worker owns a ring in a SharedArrayBuffer and encodes the text into it; the event loop
 * reads it there, copies out only the texts it stores, and gives each span back once the page
 * is decided. A worker's results reach the event loop in the order it finished them, so each
 * ring is freed in order: the event loop records how far it has consumed, the worker writes
 * only below that. A text that does not fit (the ring full, or larger than it) travels in its
 * own buffer as before.
 */

const encoder = new TextEncoder();

/** Bytes of each worker's ring: about 700 pages of the benchmark's web. */
export const TEXT_RING_BYTES = 32 * 1024 * 1024;

/** What the pool hands its workers (piscina workerData): the rings and their bookkeeping. */
export interface TextRings {
  /** Int32: the next ring index a starting worker takes. */
  claim: SharedArrayBuffer;
  /** BigInt64 per ring: bytes the event loop has consumed (monotonic). */
  consumed: SharedArrayBuffer;
  rings: SharedArrayBuffer[];
}

/**
 * Where a text sits: ring, offset and length; `start` and `end` are the ring's write positions
 * before and after it (monotonic byte counts, a skipped end of the ring included).
 */
export interface TextSpan {
  ring: number;
  offset: number;
  length: number;
  start: number;
  end: number;
}

export function createTextRings(count: number, bytes = TEXT_RING_BYTES): TextRings {
  return {
    claim: new SharedArrayBuffer(4),
    consumed: new SharedArrayBuffer(8 * count),
    rings: Array.from({ length: count }, () => new SharedArrayBuffer(bytes)),
  };
}

/** A worker's side: its ring, or none when every ring is taken (a replaced worker). */
export class TextRingWriter {
  /** Bytes written since the start, the skipped end of the ring included (monotonic). */
  private written = 0;
  private readonly bytes: Uint8Array;
  private readonly consumed: BigInt64Array;

  private constructor(rings: TextRings, private readonly index: number) {
    this.bytes = new Uint8Array(rings.rings[index]);
    this.consumed = new BigInt64Array(rings.consumed);
  }

  static claim(rings: TextRings | undefined): TextRingWriter | null {
    if (!rings) return null;
    const index = Atomics.add(new Int32Array(rings.claim), 0, 1);
    return index < rings.rings.length ? new TextRingWriter(rings, index) : null;
  }

  /**
   * Encode `text` as UTF-8 straight into the ring (no buffer of its own, no copy: encoding
   * elsewhere first and copying the bytes in was 2.7% of the parse worker's busy time): the span
   * and a view of its bytes, or null when they do not fit (the caller encodes the text elsewhere).
   */
  putString(text: string): { span: TextSpan; bytes: Uint8Array } | null {
    const size = this.bytes.length;
    if (text.length === 0) return null;
    const free = size - (this.written - Number(Atomics.load(this.consumed, this.index)));
    const at = this.written % size;
    // At the write position; failing that (the ring's end too short), from 0. A text is never split.
    for (const skip of at === 0 ? [0] : [0, size - at]) {
      const offset = skip ? 0 : at;
      const room = Math.min(free - skip, size - offset);
      if (room <= 0) continue;
      const { read, written } = encoder.encodeInto(text, this.bytes.subarray(offset, offset + room));
      if (read < text.length) continue;
      const start = this.written;
      this.written += skip + written;
      return { span: { ring: this.index, offset, length: written, start, end: this.written }, bytes: this.bytes.subarray(offset, offset + written) };
    }
    return null;
  }

  /** Take back the last span written (its page failed before the span left this worker). */
  rollback(span: TextSpan): void {
    if (span.end === this.written) this.written = span.start;
  }
}

/**
 * The event loop's side: a span's bytes (a view, valid until released) and its release. Spans
 * are freed in the order they were written; one released early waits until those before it
 * are, so an earlier one is never written over while it is still read. A span never released
 * leaves its ring full from then on: later texts travel in their own buffers.
 */
export class TextRingReader {
  private readonly consumed: BigInt64Array;
  /** Per ring: released spans waiting for earlier ones (start -> end). */
  private readonly early: Array<Map<number, number>>;

  constructor(private readonly rings: TextRings) {
    this.consumed = new BigInt64Array(rings.consumed);
    this.early = rings.rings.map(() => new Map());
  }

  view(span: TextSpan): Uint8Array {
    return new Uint8Array(this.rings.rings[span.ring], span.offset, span.length);
  }

  /** Done with the span: once every earlier span of its ring is too, the worker may write over it. */
  release(span: TextSpan): void {
    const r = span.ring;
    // Only this thread writes `consumed`: it is where the ring is freed up to.
    const upTo = Number(Atomics.load(this.consumed, r));
    if (span.start !== upTo) {
      if (span.start > upTo) this.early[r].set(span.start, span.end);
      return;
    }
    let end = span.end;
    for (let next = this.early[r].get(end); next !== undefined; next = this.early[r].get(end)) {
      this.early[r].delete(end);
      end = next;
    }
    Atomics.store(this.consumed, r, BigInt(end));
  }
}
