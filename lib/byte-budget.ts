/**
 * Holds at most `budget` bytes at once, handed out first come, first served. A request larger
 * than the whole budget still goes, alone, once nothing else is held: a big item waits its turn
 * but is never refused.
 */
export class ByteBudget {
  private held = 0;
  private holders = 0;
  private readonly waiting: Array<{ bytes: number; go: () => void }> = [];

  constructor(readonly budget: number) {
    if (!(budget > 0)) throw new RangeError(`byte budget must be positive (got ${budget})`);
  }

  /** Takes `bytes` now if nobody waits and they fit; false (nothing taken) otherwise. */
  tryAcquire(bytes: number): boolean {
    if (this.waiting.length > 0 || !this.fits(bytes)) return false;
    this.take(bytes);
    return true;
  }

  /** Resolves once `bytes` are held for the caller; give them back with release(bytes). */
  acquire(bytes: number): Promise<void> {
    if (this.tryAcquire(bytes)) return Promise.resolve();
    return new Promise<void>((go) => this.waiting.push({ bytes, go }));
  }

  release(bytes: number): void {
    this.held -= bytes;
    this.holders--;
    // In order: a waiter that does not fit yet keeps the ones behind it waiting too.
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const next = this.waiting.shift()!;
      this.take(next.bytes);
      next.go();
    }
  }

  get heldBytes(): number {
    return this.held;
  }

  get queued(): number {
    return this.waiting.length;
  }

  private fits(bytes: number): boolean {
    return this.holders === 0 || this.held + bytes <= this.budget;
  }

  private take(bytes: number): void {
    this.held += bytes;
    this.holders++;
  }
}
