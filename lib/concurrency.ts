/**
 * Concurrency sized by Little's law instead of a hand-tuned constant: to serve work arriving
 * at λ records/s when each holds a slot for W seconds on average, L = λ·W slots must be open.
 * Both are measured (exponentially weighted, so the limit follows a changing web), and the
 * limit is λ·W times a headroom factor (bursts; a short queue is cheap, a starved one is not),
 * clamped to [min, max]. Pure: the caller supplies the clock.
 */

export interface AutoConcurrencyOptions {
  /** Lower bound: never fewer slots than this (start-up, idle periods). */
  min?: number;
  /** Upper bound: memory and sockets; the limit never exceeds it. */
  max: number;
  /** Slots per λ·W: above 1 so a burst does not queue behind a limit sized for the average. */
  headroom?: number;
  /** Time constant of the moving averages. */
  windowMs?: number;
}

export class LittleConcurrency {
  readonly min: number;
  readonly max: number;
  private readonly headroom: number;
  private readonly windowMs: number;
  /** Moving averages: arrivals per ms and slot-holding time in ms. */
  private rate = 0;
  private holdMs = 0;
  private lastArrival = -1;
  private samples = 0;

  constructor(opts: AutoConcurrencyOptions) {
    if (!(opts.max >= 1)) throw new RangeError(`auto concurrency: max must be >= 1 (got ${opts.max})`);
    this.max = Math.floor(opts.max);
    this.min = Math.max(1, Math.min(this.max, Math.floor(opts.min ?? 1)));
    this.headroom = opts.headroom ?? 2;
    this.windowMs = opts.windowMs ?? 5_000;
  }

  /** A record asked for a slot at `now` (ms). */
  arrive(now: number): void {
    if (this.lastArrival >= 0) {
      const gap = Math.max(0, now - this.lastArrival);
      // Rate as an exponentially decaying count: each arrival adds 1/window; time decays it.
      this.rate = this.rate * Math.exp(-gap / this.windowMs) + 1 / this.windowMs;
    }
    this.lastArrival = now;
  }

  /** A record held its slot for `ms`. */
  complete(ms: number): void {
    this.samples++;
    // Mean over the first samples, then a moving average of about the last 100.
    const w = Math.max(1 / this.samples, 0.01);
    this.holdMs += (Math.max(0, ms) - this.holdMs) * w;
  }

  /** The limit now: headroom · λ · W, clamped. Before any measurement: min. */
  limit(now: number): number {
    if (this.samples === 0 || this.lastArrival < 0) return this.min;
    const rate = this.rate * Math.exp(-Math.max(0, now - this.lastArrival) / this.windowMs);
    const want = Math.ceil(this.headroom * rate * this.holdMs);
    return Math.max(this.min, Math.min(this.max, want));
  }

  /** For logs and metrics. */
  stats(now: number): { ratePerSec: number; meanHoldMs: number; limit: number } {
    return { ratePerSec: this.rate * 1000, meanHoldMs: this.holdMs, limit: this.limit(now) };
  }
}
