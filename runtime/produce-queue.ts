/**
 * A stage's records on their way to the brokers, coalesced: what is sent while a produce is in
 * flight waits and goes with everything else sent meanwhile in the next one, so a busy stage
 * makes few large produce requests instead of one per turn of the event loop (each request is a
 * record batch per partition, a CRC, an LZ4 frame, a socket write, and the broker's append and
 * acks for it). An idle stage still sends at the end of the turn its records arrived in.
 *
 * Each `send` resolves once its records are produced (acknowledged), and rejects with that
 * produce's error if it failed: the caller commits its input only after that, so at-least-once
 * holds as with one request per call. Records go in the order they were sent.
 */
export class ProduceQueue<T> {
  private queued: T[] = [];
  private waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  private running = false;
  /** Produce calls made, and records they carried (for tests and metrics). */
  flushes = 0;
  records = 0;

  constructor(private readonly flush: (items: T[]) => Promise<void>) {}

  send(items: readonly T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    for (const i of items) this.queued.push(i);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.running) {
      this.running = true;
      // The rest of this turn's records go with these.
      setImmediate(() => void this.drain());
    }
    return done;
  }

  /** Records waiting for the next produce. */
  get waiting(): number {
    return this.queued.length;
  }

  private async drain(): Promise<void> {
    while (this.queued.length > 0) {
      const items = this.queued;
      const waiters = this.waiters;
      this.queued = [];
      this.waiters = [];
      this.flushes++;
      this.records += items.length;
      try {
        await this.flush(items);
        for (const w of waiters) w.resolve();
      } catch (err) {
        for (const w of waiters) w.reject(err);
      }
    }
    this.running = false;
  }
}
