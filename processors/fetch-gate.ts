/**
 * The fetch stage's last word before any request to a host (robots.txt included): an operator
 * block or an opt-out from crawling refuses the lease. The frontier holds blocked hosts too,
 * but leases already out, or released by a frontier whose table lags, meet this check, so a
 * block holds on every fetch process as soon as its crawl.host-policy row reaches it.
 */
import type { HostPolicyTable } from '../lib/host-policy';
import type { OptOutRegistry } from '../lib/optout-registry';
import { handOverWaitMs } from './frontier-aimd';

export type GateRefusal = 'blocked' | 'opted-out';

/** The longest a fetch waits out a host's back-off window before handing its lease back. */
export const BACKOFF_WAIT_MAX_MS = 10_000;

/**
 * When a request may go to a host inside the back-off window its frontier wrote (a Retry-After,
 * a 503 pause): the window's end, if the lease lasts that long and the wait is short; 'backoff'
 * (hand the lease back: the frontier queues the URL again) if not; null when there is no window.
 * The frontier never leases inside its own window, so what meets one is a lease replayed after
 * a rebalance or a restart, which the process that read the 429 may have answered moments ago
 * (test/e2e/kafka-faults.test.ts: a request 2.8 s into a 3 s Retry-After after a rebalance).
 */
export function backoffWait(host: string, now: number, leaseExpiresAt: number, policy: HostPolicyTable): number | 'backoff' | null {
  const until = policy.backoffUntil(host, now);
  if (until === null) return null;
  return until - now <= BACKOFF_WAIT_MAX_MS && until < leaseExpiresAt ? until : 'backoff';
}

export function gate(host: string, now: number, policy: HostPolicyTable, optout: OptOutRegistry): GateRefusal | null {
  if (policy.block(host, now)) return 'blocked';
  if (!optout.allows(host, 'crawl')) return 'opted-out';
  return null;
}

/**
 * When a fetch process may first contact a host. A fetcher that starts, or takes over a
 * partition from a fetcher that died, replays leases whose request the dead process may just
 * have sent, so it waits one full gap of the host (the longest its frontier-written
 * `backoff.gap_ms` allows, or minHostDelayMs allows while none is written) from the moment it
 * got the host's partition (`since`).
 */
export function firstContactAt(host: string, since: number, minHostDelayMs: number, policy: HostPolicyTable): number {
  return since + handOverWaitMs(minHostDelayMs, policy.get(host, 'backoff')?.gap_ms ?? 0);
}

/** When each partition was taken on by this process (for firstContactAt). */
export class PartitionGains {
  private owned = new Map<number, number>();

  constructor(private readonly startedAt: number) {}

  assigned(partitions: readonly number[], now: number): void {
    const next = new Map<number, number>();
    for (const p of partitions) next.set(p, this.owned.get(p) ?? now);
    this.owned = next;
  }

  since(partition: number): number {
    return this.owned.get(partition) ?? this.startedAt;
  }
}

/** One host's turn in this fetch process (see HostPacer). */
export interface HostSlot {
  /** Earliest start of this turn's first request: the previous turn's end + its gap. */
  readonly readyAt: number;
  /** The gap this turn's requests ask of the next one (set once Crawl-delay etc. are known). */
  gapMs: number;
  /** Set when this turn sent a request to the host (robots.txt or the page). */
  contacted: boolean;
  release(at: number): void;
}

/**
 * Per-process defence in depth under the frontier's rule: within one fetch process, requests
 * to a host are serialised and spaced by the host's gap. The frontier never leases a host
 * twice at once, but a fetch record replayed after a fetcher died (its offset not committed,
 * its early status already sent) can meet the host's next lease in the process that took
 * over the partition; without this both would reach the host back to back.
 */
export class HostPacer {
  private readonly hosts = new Map<string, { tail: Promise<void>; endAt: number; gapMs: number }>();

  constructor(private readonly maxHosts = 100_000) {}

  async acquire(host: string, minGapMs: number): Promise<HostSlot> {
    let h = this.hosts.get(host);
    if (!h) {
      if (this.hosts.size >= this.maxHosts) this.prune();
      this.hosts.set(host, (h = { tail: Promise.resolve(), endAt: 0, gapMs: minGapMs }));
    }
    const prev = h.tail;
    let done!: () => void;
    h.tail = new Promise<void>((r) => (done = r));
    await prev;
    const state = h;
    const slot: HostSlot = {
      readyAt: state.endAt > 0 ? state.endAt + Math.max(minGapMs, state.gapMs) : 0,
      gapMs: minGapMs,
      contacted: false,
      release(at: number) {
        if (slot.contacted) {
          state.endAt = at;
          state.gapMs = slot.gapMs;
        }
        done();
      },
    };
    return slot;
  }

  /** Forget the oldest half (their gaps have long passed in any realistic crawl). */
  private prune(): void {
    let n = 0;
    for (const key of this.hosts.keys()) {
      if (n++ >= this.maxHosts / 2) break;
      this.hosts.delete(key);
    }
  }
}
