/**
 * Where the next body goes in a ring of bytes shared with the WARC record thread
 * (lib/warc/record-thread.ts), and what is still in use. Pure bookkeeping, no memory of its own.
 *
 * One producer (the event loop) takes spans; the thread finishes them in the order they were
 * taken (it works through its queue in order), so they are given back in that order: the oldest
 * span first. A span never wraps: one that does not fit before the ring's end starts at 0, if
 * the oldest span in use begins after it.
 */
export interface RingSpan {
  offset: number;
  length: number;
}

export class ByteRing {
  /** Spans in use, oldest first: [offset, end) each. */
  private readonly live: Array<{ offset: number; end: number }> = [];
  private head = 0;
  private writeAt = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) throw new Error(`ByteRing: capacity must be a positive integer, got ${capacity}`);
  }

  /** Spans taken and not yet given back. */
  get inUse(): number {
    return this.live.length - this.head;
  }

  /** A span of `length` bytes (at least 1), or null when there is no room for it now. */
  take(length: number): RingSpan | null {
    const n = Math.max(1, length);
    if (n > this.capacity) return null;
    if (this.inUse === 0) {
      this.writeAt = 0;
      this.live.length = 0;
      this.head = 0;
    }
    let offset: number;
    if (this.inUse === 0) offset = 0;
    else {
      const oldest = this.live[this.head].offset;
      if (this.writeAt > oldest) {
        // In use: [oldest, writeAt). Room after writeAt, else before oldest (strictly, so that
        // writeAt never meets oldest from below and "full" is never taken for "empty").
        if (this.writeAt + n <= this.capacity) offset = this.writeAt;
        else if (n < oldest) offset = 0;
        else return null;
      } else {
        // Wrapped: in use [oldest, capacity) and [0, writeAt).
        if (this.writeAt + n < oldest) offset = this.writeAt;
        else return null;
      }
    }
    this.live.push({ offset, end: offset + n });
    this.writeAt = offset + n;
    return { offset, length };
  }

  /** The oldest span in use is free again. */
  release(): void {
    if (this.inUse === 0) throw new Error('ByteRing: nothing to release');
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.live.length) {
      this.live.splice(0, this.head);
      this.head = 0;
    }
  }
}
