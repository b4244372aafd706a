/**
 * The seen set of Kafka mode: Bloom generations in Redis (connectors/redis-bloom.ts), with the
 * generation pointer re-read every refreshMs so a `crawl bloom rebuild` switch reaches every
 * seen-test within about a second.
 *
 * Degradation: while Redis is unreachable, check() answers "not seen" for every URL, so all
 * of them go on to the frontier's exact check (slower, correct), and add() drops its URLs
 * (they are already in the frontier's table); a warning is logged at most every warnEveryMs.
 * Reconnection is ioredis's; the first good refresh after it resumes normal answers.
 */
import type { Logger } from 'pino';
import { EMPTY_POINTER, type GenPointer } from '../lib/bloom/generations';
import { estimatedFpRate, fillRatio, type BloomParams } from '../lib/bloom/sizing';
import type { BloomStats, SeenSet } from '../lib/bloom/types';
import { metrics } from '../lib/metrics';
import { connectRedis, RedisBloom, type Generation } from './redis-bloom';

export interface RedisSeenOptions {
  url: string;
  /** Key prefix, e.g. `crawl:bloom:` (tests: a unique one). */
  prefix: string;
  /** Params of generation 1 when Redis holds none (first start, or flushed). */
  params: BloomParams;
  refreshMs?: number;
  warnEveryMs?: number;
  log: Logger;
}

/** Capacity share at which the filter warns: past it the false-positive rate climbs fast. */
export const CAPACITY_WARNING = 0.8;

export class RedisSeenSet implements SeenSet {
  readonly bloom: RedisBloom;
  private pointer: GenPointer = EMPTY_POINTER;
  private current: Generation | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastWarn = 0;
  private lastCapacityWarn = 0;
  private ok = false;
  private closed = false;

  constructor(private readonly o: RedisSeenOptions) {
    this.bloom = new RedisBloom(connectRedis(o.url), o.prefix);
  }

  /** Connect and read the pointer; never throws (an unreachable Redis means degraded mode). */
  async start(): Promise<void> {
    await this.bloom.redis.connect().catch((err: unknown) => this.degraded(err, 'connect'));
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.o.refreshMs ?? 1_000);
    this.timer.unref();
  }

  /** True while answers come from Redis (false: degraded, everything forwarded). */
  get healthy(): boolean {
    return this.ok && this.current !== null;
  }

  get generations(): GenPointer {
    return this.pointer;
  }

  async refresh(): Promise<void> {
    try {
      let p = await this.bloom.pointer();
      if (!p.current) {
        // First start, or a flushed Redis: an empty generation; `crawl bloom rebuild` refills it.
        const id = await this.bloom.ensureCurrent(this.o.params);
        this.o.log.warn({ generation: id, prefix: this.o.prefix }, 'no Bloom generation in Redis: started an empty one (run `crawl bloom rebuild` to refill it from crawl.urls)');
        p = await this.bloom.pointer();
      }
      for (const id of [p.current, p.previous, p.building]) if (id) await this.bloom.generation(id);
      if (p.current !== this.pointer.current || p.building !== this.pointer.building || p.previous !== this.pointer.previous) {
        this.o.log.info({ ...p }, 'Bloom generations');
      }
      this.current = p.current ? await this.bloom.generation(p.current) : null;
      this.pointer = p;
      if (!this.ok) this.o.log.info({ prefix: this.o.prefix }, 'Redis seen set available');
      this.ok = true;
      this.report();
    } catch (err) {
      this.degraded(err, 'refresh');
    }
  }

  async check(urls: readonly string[]): Promise<boolean[]> {
    if (this.healthy) {
      try {
        return await this.bloom.check(this.pointer, urls);
      } catch (err) {
        this.degraded(err, 'check');
      }
    }
    metrics.bloomDegradedLinks.inc(urls.length);
    return urls.map(() => false);
  }

  async add(urls: readonly string[]): Promise<void> {
    if (!this.healthy) return;
    try {
      await this.bloom.add(this.pointer, urls);
    } catch (err) {
      this.degraded(err, 'add');
    }
  }

  stats(): BloomStats | null {
    const g = this.current;
    if (!g) return null;
    return { generation: g.id, added: g.added, capacity: g.n, fillRatio: fillRatio(g, g.added), estimatedFpRate: estimatedFpRate(g, g.added) };
  }

  private report(): void {
    const s = this.stats();
    if (!s) return;
    metrics.bloomFillRatio.set(s.fillRatio);
    metrics.bloomEstimatedFpRate.set(s.estimatedFpRate);
    const now = Date.now();
    if (s.fillRatio >= CAPACITY_WARNING && now - this.lastCapacityWarn > 60_000) {
      this.lastCapacityWarn = now;
      this.o.log.warn({ ...s }, 'Bloom filter past 80% of its designed capacity: rebuild with a larger CRAWL_BLOOM_EXPECTED_URLS');
    }
  }

  private degraded(err: unknown, op: string): void {
    this.ok = false;
    if (this.closed) return;
    const now = Date.now();
    if (now - this.lastWarn < (this.o.warnEveryMs ?? 10_000)) return;
    this.lastWarn = now;
    this.o.log.warn({ op, err: err instanceof Error ? err.message : String(err) }, 'Redis seen set unavailable: forwarding every link to the frontier\'s exact check');
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.bloom.redis.disconnect();
  }
}
