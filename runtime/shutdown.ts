/**
 * Stopping a process within a bound, whatever its clients are doing. On SIGTERM (or SIGINT) a
 * `crawl process` stores what it holds, produces and commits what is finished, and leaves its
 * groups, each step waited for only as long as the bound leaves, then exits; a second signal,
 * or the bound itself, exits at once. What is cut short stays uncommitted, so the partition's
 * next owner reads it again (at-least-once): a stop costs duplicate work, never a page.
 *
 * Before, a process waited for its clients to finish on their own: after a broker restart
 * kafkajs keeps a consumer's coordinator connection open after disconnect() (KafkaHealth
 * .closeLeftovers), and the process, its own work done, never exited; with the broker down or
 * hung, a produce or a commit waited out kafkajs's retries (minutes).
 */
import type { Logger } from 'pino';

/** A point in time steps are bounded by. */
export class Deadline {
  constructor(readonly at: number, private readonly now: () => number = Date.now) {}

  static in(ms: number, now: () => number = Date.now): Deadline {
    return new Deadline(now() + ms, now);
  }

  /** Milliseconds left, less `reserveMs` kept for the steps after this one. */
  left(reserveMs = 0): number {
    return Math.max(0, this.at - reserveMs - this.now());
  }

  /**
   * Wait for `work` at most until the deadline less `reserveMs`: true when it finished (or
   * failed: logged), false when the time ran out (logged; the work goes on in the background
   * until the process exits).
   */
  async step(what: string, work: () => Promise<unknown>, log: Logger, reserveMs = 0): Promise<boolean> {
    const ms = this.left(reserveMs);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.resolve()
        .then(work)
        .then(() => 'done' as const, (err: unknown) => {
          log.warn({ step: what, err: err instanceof Error ? err.message : String(err) }, 'stop step failed');
          return 'done' as const;
        }),
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms))),
    ]);
    clearTimeout(timer);
    if (outcome === 'late') log.warn({ step: what, waitedMs: ms }, 'stop step cut short by the stop bound');
    return outcome === 'done';
  }
}

export interface StopSignals {
  /** Resolves on the first SIGTERM or SIGINT; from then on the bound runs. */
  readonly requested: Promise<NodeJS.Signals>;
  /** The orderly stop is over: exit with 0, or 1 if anything was cut short. */
  finish(complete: boolean): void;
}

/**
 * The process's stop signals. The bound starts at the first signal, whatever the process is
 * doing then (still starting, with the brokers away, included): when it runs out, or on a
 * second signal, `exit(1)` at once. `exit` is process.exit outside tests: a process whose own
 * work is done exits even if a client library left a socket or timer behind.
 */
export function stopSignals(
  log: Logger, boundMs: number, exit: (code: number) => void = (c) => process.exit(c), proc: NodeJS.EventEmitter = process,
): StopSignals {
  let first!: (s: NodeJS.Signals) => void;
  const requested = new Promise<NodeJS.Signals>((r) => (first = r));
  let signals = 0;
  let bound: NodeJS.Timeout | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++;
    if (signals === 1) {
      bound = setTimeout(() => {
        log.error({ boundMs }, 'stop bound reached: exiting now; unfinished records stay uncommitted for the next owner');
        exit(1);
      }, boundMs);
      first(signal);
      return;
    }
    log.warn({ signal }, 'second stop signal: exiting now');
    exit(1);
  };
  proc.on('SIGTERM', onSignal);
  proc.on('SIGINT', onSignal);
  return {
    requested,
    finish(complete) {
      if (bound) clearTimeout(bound);
      log.info({ complete }, complete ? 'stopped' : 'stopped; some steps were cut short (their records stay uncommitted for the next owner)');
      exit(complete ? 0 : 1);
    },
  };
}
