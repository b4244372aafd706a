/**
 * A token bucket per key (a webmaster account): `perMinute` requests in a burst, refilled at
 * `perMinute` a minute. Pure: the caller passes the clock. Keys untouched for an hour are
 * forgotten once the map passes `maxKeys`, so it stays bounded.
 */
const FORGET_MS = 3600_000;

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number, private readonly maxKeys = 100_000) {}

  /** Take one request for `key`: 0 when allowed, else the seconds until one is. */
  take(key: string, now: number): number {
    const rate = this.perMinute / 60_000;
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.forget(now);
      this.buckets.set(key, (b = { tokens: this.perMinute, at: now }));
    }
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000));
  }

  private forget(now: number): void {
    for (const [k, b] of this.buckets) if (now - b.at > FORGET_MS) this.buckets.delete(k);
  }
}
