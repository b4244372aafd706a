/**
 * The shape every processor has: a pure-ish handler over typed input records that returns
 * what to emit, plus optional timer work and state restore. The runtimes (embedded log or
 * Kafka) do all I/O on the log: they produce a batch's emits durably *before* committing the
 * input offsets, which makes every stage at-least-once.
 */
import type { Logger } from 'pino';
import type { TopicId } from '../topologies/crawl';
import { LittleConcurrency, type AutoConcurrencyOptions } from '../lib/concurrency';
import type { ChangelogSource } from './changelog';
import { TimeSlice } from './time-slice';

export interface InRecord<V = unknown> {
  topic: TopicId;
  partition: number;
  offset: number;
  key: string;
  value: V;
  timestamp: number;
}

export interface OutRecord {
  topic: TopicId;
  key: string;
  /** The host: decides the partition (lib/partitioner.ts). */
  host: string;
  value: unknown;
}

/** A row of a compacted table; value null is a tombstone. */
export interface TableRecord<V = unknown> {
  partition: number;
  key: string;
  value: V | null;
}

/**
 * What a handler returns: the emits, or `early` emits to produce at once plus `pending` ones
 * that wait on something slower. The record counts as done (its offset may be committed) only
 * when both are produced.
 */
export type HandleResult = OutRecord[] | { early?: OutRecord[]; pending: Promise<OutRecord[]> };

export interface StageContext {
  now(): number;
  log: Logger;
}

export interface Stage {
  readonly id: string;
  readonly inputs: readonly TopicId[];
  readonly outputs: readonly TopicId[];
  /** How many handle() calls may be in flight at once (async stages such as fetch). */
  readonly concurrency?: number;
  /**
   * Size the concurrency limit at run time by Little's law (lib/concurrency.ts) from the
   * observed arrival rate and slot-holding time, within [min, max]; `concurrency` is then only
   * the starting limit.
   */
  readonly autoConcurrency?: AutoConcurrencyOptions;
  /**
   * Handle one record and say what to emit. Throwing fails the record's batch (it is retried).
   * A handler may return `{ pending }` to free its concurrency slot while the emits wait on
   * something slower (fetch waits for its WARC file to be stored).
   */
  handle(rec: InRecord, ctx: StageContext): HandleResult | Promise<HandleResult>;
  /** Periodic work (the frontier releasing due hosts), every tickMs; never two at once. */
  readonly tickMs?: number;
  tick?(ctx: StageContext): OutRecord[] | Promise<OutRecord[]>;
  /** Compacted tables to replay for the owned partitions before consuming any input. */
  readonly restoreFrom?: readonly TopicId[];
  restore?(rec: TableRecord, topic: TopicId): void;
  /**
   * The compacted topic a stage's local store is a copy of (the frontier's URL table:
   * crawl.urls). Newly owned partitions are handed to restoreChangelog, which brings the store
   * up to the topic's end, before any of their records are handled or restoreFrom is read.
   */
  readonly changelog?: TopicId;
  restoreChangelog?(partitions: readonly number[], source: ChangelogSource, ctx: StageContext): Promise<void>;
  /** The partitions this instance owns changed (after any restore of newly owned ones). */
  assigned?(partitions: readonly number[]): void;
  /**
   * Handle a whole batch at once, for stages that talk to an external store (one round trip
   * per batch instead of per record). When present, the runtimes call it instead of handle().
   */
  handleBatch?(recs: readonly InRecord[], ctx: StageContext): OutRecord[] | Promise<OutRecord[]>;
  /**
   * Told of a batch's emits once they are durably in the log, before its offsets are
   * committed. seen-test marks URLs seen only here, so a crash between the two costs a
   * duplicate candidate, never a hidden URL. `outs` is the very array handle, handleBatch or
   * tick returned (not a copy): the frontier knows its batch's unjournaled rows by it.
   */
  produced?(outs: readonly OutRecord[]): void | Promise<void>;
  /**
   * Compacted tables every instance reads whole (all partitions) and keeps following: host
   * policy (blocks, crawl rates) and the opt-out registry. Rows arrive through onGlobal.
   */
  readonly globalTables?: readonly TopicId[];
  onGlobal?(rec: TableRecord, topic: TopicId): void;
  /** Stop: flush buffers (e.g. the WARC writer) so pending handle() calls resolve. */
  close?(): Promise<void>;
}

/** A record that was waiting for a slot when the stage stopped: not handled, not to be committed. */
export class AbandonedError extends Error {
  override name = 'AbandonedError';
}

/**
 * Runs a stage's handler with its concurrency limit. A slot is held while handle() runs and
 * released early when the handler returns `{ pending }`.
 */
export class Dispatcher {
  private inflight = 0;
  /** Waiting records; called with true when handed a slot, false when abandoned. */
  private readonly waiters: Array<(granted: boolean) => void> = [];
  private abandoned = false;
  private limit: number;
  private readonly auto: LittleConcurrency | null;
  /** This stage's share of each turn of the event loop (runtime/time-slice.ts). */
  private readonly slice = new TimeSlice();

  constructor(private readonly stage: Stage, private readonly ctx: StageContext) {
    this.limit = Math.max(1, stage.concurrency ?? 1);
    this.auto = stage.autoConcurrency ? new LittleConcurrency(stage.autoConcurrency) : null;
    if (this.auto) this.limit = Math.max(this.auto.min, Math.min(this.auto.max, this.limit));
  }

  get concurrencyLimit(): number {
    return this.limit;
  }

  /** Change the limit at run time; a raised limit starts waiting records at once. */
  setLimit(n: number): void {
    this.limit = Math.max(1, Math.floor(n));
    // A woken waiter is handed its slot (counted here), so it never races a newcomer for it.
    // A waiter woken once this stage has had its slice of the turn starts in the next turn,
    // after sockets are read (runtime/time-slice.ts): a chain of CPU-heavy records must not
    // hold the event loop.
    while (this.inflight < this.limit && this.waiters.length > 0) {
      this.inflight++;
      const grant = this.waiters.shift()!;
      if (this.slice.spent()) setImmediate(grant, true);
      else grant(true);
    }
  }

  /**
   * Stopping: records still waiting for a slot fail with AbandonedError instead of running
   * (a stop need not work through a whole read-ahead; at-least-once replays them), and so does
   * any record run() is given from now on. Records already running finish.
   */
  abandonWaiting(): void {
    this.abandoned = true;
    for (const w of this.waiters.splice(0)) w(false);
  }

  /** Records running in the handler (a `pending` no longer counts). */
  get busy(): number {
    return this.inflight;
  }

  /** Records waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  get hasFreeSlot(): boolean {
    return this.inflight < this.limit;
  }

  /**
   * Run one record; `onEarly` receives early emits as soon as the handler returns them, and
   * `onHandled` is called once the handler has returned (before any `pending` it returned).
   */
  async run(rec: InRecord, onEarly?: (outs: OutRecord[]) => void, onHandled?: () => void): Promise<OutRecord[]> {
    this.auto?.arrive(this.ctx.now());
    // Awaited only when it must wait: a free slot starts the handler in this same turn.
    const wait = this.acquire();
    if (wait && !(await wait)) throw new AbandonedError(`${this.stage.id}: stopped before this record started`);
    const holdFrom = this.auto ? this.ctx.now() : 0;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.inflight--;
      if (this.auto) {
        const now = this.ctx.now();
        this.auto.complete(now - holdFrom);
        this.limit = this.auto.limit(now);
      }
      this.setLimit(this.limit);
    };
    try {
      const result = await this.stage.handle(rec, this.ctx);
      onHandled?.();
      if (Array.isArray(result)) return result;
      release();
      if (result.early?.length) {
        if (onEarly) onEarly(result.early);
        else return [...result.early, ...(await result.pending)];
      }
      return await result.pending;
    } finally {
      release();
    }
  }

  /** Take a slot, or wait to be handed one (setLimit counts it for the waiter). */
  private acquire(): Promise<boolean> | void {
    if (this.abandoned) return Promise.resolve(false);
    if (this.inflight < this.limit && this.waiters.length === 0) {
      this.inflight++;
      return;
    }
    return new Promise<boolean>((r) => this.waiters.push(r));
  }
}
